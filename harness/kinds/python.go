package kinds

import (
	"context"

	"github.com/groupquake/groupquake/clients"
	mproc "github.com/groupquake/groupquake/clients/process"
	"github.com/groupquake/groupquake/clients/process/python"
)

// PythonKinds are the member kinds of confluent-kafka, the Python client on
// librdkafka (clients/process/python: member.py speaking the member
// protocol, one process per member). Like the Java kinds they are never in
// Default, so a seed never draws them (a machine may have no
// confluent-kafka); WithPython adds the ones a user names.
func PythonKinds() []ProcessKind {
	return []ProcessKind{
		{Name: "confluent-python", Protocol: clients.Classic, Offers: []string{assignRange, assignRoundRobin},
			Doc: "confluent-kafka (Python, librdkafka), classic protocol with librdkafka's default assignors (range, roundrobin: EAGER rebalances)"},
		{Name: "confluent-python-cooperative", Protocol: clients.Classic, Assignor: "cooperative-sticky", Offers: []string{assignCoopSticky},
			Doc: "confluent-kafka (Python, librdkafka), classic protocol with the cooperative-sticky assignor (KIP-429 COOPERATIVE rebalances)"},
		{Name: "confluent-python-consumer", Protocol: clients.Consumer, Assignor: "uniform",
			Doc: "confluent-kafka (Python, librdkafka), group.protocol=consumer (KIP-848), server assignor uniform"},
	}
}

// IsPythonKind says whether kind is one of PythonKinds.
func IsPythonKind(kind string) bool {
	return isProcessKind(PythonKinds(), kind)
}

func init() { register(pythonFamily) }

// pythonFamily is the Python kinds as a Family: each runs member.py with
// the python3 on PATH.
var pythonFamily = processFamily("the confluent-kafka (Python) kinds, which need python3 with confluent_kafka", PythonKinds,
	func(ctx context.Context, _ Env) (mproc.Command, error) {
		cmd, _, err := python.Command(ctx)
		return cmd, err
	})

// WithPython returns r plus the Python kinds among named, each running
// member.py with the python3 on PATH. Naming one on a machine whose
// python3 cannot import confluent_kafka is an error that says what to
// install; naming none changes nothing.
func (r Registry) WithPython(ctx context.Context, named []string) (Registry, error) {
	return r.withFamily(ctx, pythonFamily, named, Env{})
}
