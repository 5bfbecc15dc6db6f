package kinds

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/clients"
	mproc "github.com/groupquake/groupquake/clients/process"
)

// ProcessKind is a member kind whose members are processes speaking the
// member protocol (clients/process, docs/member-protocol.md): a user's own
// client (--process-kind), or one groupquake ships (confluent-python,
// spring-kafka). Like the Java kinds, a seed never draws one: it runs when
// --kinds names it.
type ProcessKind struct {
	Name     string
	Protocol clients.Protocol
	// Command starts one member (a process of its own each); Host, when
	// set, hosts them all in one process instead (the socket transport).
	Command mproc.Command
	Host    *mproc.Host
	// Assignor and Properties go into hello as they are.
	Assignor   string
	Properties map[string]string
	// Offers is the classic assignors the kind's JoinGroup offers
	// (Factory.Offers; nil when not known).
	Offers []string
	Doc    string
}

// Factory builds the kind's members.
func (k ProcessKind) Factory() Factory {
	return Factory{
		Protocol: k.Protocol,
		Offers:   k.Offers,
		Doc:      k.Doc,
		New: func(s MemberSpec) (clients.Member, error) {
			start := k.Command.Starter()
			if k.Host != nil {
				start = k.Host.Starter()
			}
			opts := []mproc.Opt{
				mproc.Protocol(k.Protocol), mproc.Start(start), mproc.Client(k.Name), mproc.WithHooks(s.Hooks),
				mproc.KgoOpts(s.KgoOpts...), mproc.WithClock(clients.ClockFunc(s.Now)), mproc.Assignor(k.Assignor), mproc.Properties(k.Properties),
				mproc.SessionTimeout(s.SessionTimeout), mproc.HeartbeatInterval(s.HeartbeatInterval),
				mproc.RebalanceTimeout(s.RebalanceTimeout), mproc.MaxPollInterval(s.PollInterval),
			}
			if s.InstanceID != "" {
				opts = append(opts, mproc.InstanceID(s.InstanceID))
			}
			return mproc.New(s.Name, s.Group, s.Topics, opts...)
		},
		// A client groupquake does not know may resend a commit on its own:
		// its failed commits are judged as unknown outcomes, never as
		// rejections that prove nothing was written.
		ResendsCommits: true,
	}
}

// UserKind is a member kind a user defines on the command line
// (--process-kind NAME=PROTOCOL:COMMAND) and the plan keeps
// (harness/run's Options.ProcessKinds), so that a run of it reruns from its seed.
type UserKind struct {
	Protocol string   `json:"protocol"`
	Command  []string `json:"command"`
}

// ParseUserKind reads NAME=PROTOCOL:COMMAND, COMMAND's words separated by
// spaces (no quoting: a command that needs it goes into a script).
func ParseUserKind(s string) (string, UserKind, error) {
	name, rest, ok := strings.Cut(s, "=")
	proto, cmd, ok2 := strings.Cut(rest, ":")
	words := strings.Fields(cmd)
	switch {
	case !ok || !ok2 || name == "" || len(words) == 0:
		return "", UserKind{}, fmt.Errorf("--process-kind %q: want NAME=PROTOCOL:COMMAND, e.g. mine=consumer:python3 my_member.py", s)
	case proto != string(clients.Classic) && proto != string(clients.Consumer):
		return "", UserKind{}, fmt.Errorf("--process-kind %q: protocol %q is not classic or consumer", s, proto)
	case strings.ContainsAny(name, ", =:"):
		return "", UserKind{}, fmt.Errorf("--process-kind %q: a kind name has no comma, space, '=' or ':'", s)
	}
	return name, UserKind{Protocol: proto, Command: words}, nil
}

// Flag is the kind as --process-kind takes it.
func (u UserKind) Flag(name string) string {
	return name + "=" + u.Protocol + ":" + strings.Join(u.Command, " ")
}

// Kind is the user's kind as a ProcessKind.
func (u UserKind) Kind(name string) ProcessKind {
	return ProcessKind{
		Name: name, Protocol: clients.Protocol(u.Protocol),
		Command: mproc.Command{Path: u.Command[0], Args: u.Command[1:]},
		Doc:     "a process speaking the member protocol: " + strings.Join(u.Command, " "),
	}
}

// WithProcessKinds returns r plus kinds.
func (r Registry) WithProcessKinds(kinds ...ProcessKind) Registry {
	out := maps.Clone(r)
	for _, k := range kinds {
		out[k.Name] = k.Factory()
	}
	return out
}

// processFamily is a Family of process kinds (all of kinds()) whose
// members all start with the one command command finds, or fails to find
// saying what the machine lacks. A client that speaks the member protocol
// (docs/member-protocol.md) is a table of its kinds and one processFamily.
func processFamily(help string, kinds func() []ProcessKind, command func(context.Context, Env) (mproc.Command, error)) Family {
	return Family{
		Help:     help,
		Names:    processKindNames(kinds()),
		Registry: func() Registry { return Registry{}.WithProcessKinds(kinds()...) },
		Prepare: func(ctx context.Context, want []string, env Env) (Registry, error) {
			cmd, err := command(ctx, env)
			if err != nil {
				return nil, fmt.Errorf("member kinds %s: %w", strings.Join(want, ", "), err)
			}
			return Registry{}.withCommand(kinds(), want, cmd), nil
		},
	}
}

// processKindNames lists the names of kinds, in their order.
func processKindNames(kinds []ProcessKind) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k.Name)
	}
	return out
}

// isProcessKind says whether kind is the name of one of kinds.
func isProcessKind(kinds []ProcessKind, kind string) bool {
	return slices.ContainsFunc(kinds, func(k ProcessKind) bool { return k.Name == kind })
}

// withCommand returns r plus the kinds of kinds named in want, each
// starting its members with cmd.
func (r Registry) withCommand(kinds []ProcessKind, want []string, cmd mproc.Command) Registry {
	var ks []ProcessKind
	for _, k := range kinds {
		if slices.Contains(want, k.Name) {
			k.Command = cmd
			ks = append(ks, k)
		}
	}
	return r.WithProcessKinds(ks...)
}

// WithUserKinds returns r plus the user's kinds (a plan's
// Options.ProcessKinds), by name.
func (r Registry) WithUserKinds(user map[string]UserKind) Registry {
	var ks []ProcessKind
	for _, n := range slices.Sorted(maps.Keys(user)) {
		ks = append(ks, user[n].Kind(n))
	}
	return r.WithProcessKinds(ks...)
}
