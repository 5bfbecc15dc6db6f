package differential

import (
	"fmt"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/vectors"
)

// buildRequest builds the request of a step through n with the vectors'
// own builder (coordinator/vectors), the one the coordinator's tests use,
// so that both sides and the vector files agree on every default; ok is
// false for commands that are not requests.
func buildRequest(n vectors.Names, st Step) (kmsg.Request, bool, error) {
	req, ok, err := vectors.Request(n, st.Cmd, vecArgs(st.Args))
	if err != nil {
		return nil, true, fmt.Errorf("%s: %v", st.Pos, err)
	}
	return req, ok, nil
}

// vecArgs are datadriven arguments as the vectors package takes them.
func vecArgs(args []datadriven.CmdArg) vectors.Args {
	out := make(vectors.Args, 0, len(args))
	for _, a := range args {
		out = append(out, vectors.Arg{Key: a.Key, Vals: a.Vals})
	}
	return out
}

// clientID is the client.id a step's request carries (client=, default c).
func clientID(st Step) string { return vectors.ClientID(vecArgs(st.Args)) }
