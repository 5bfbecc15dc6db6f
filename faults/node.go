package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// The node kinds: one broker node stopped, killed, frozen or cut off from
// the network, and brought back by the heal. Node is a node id, or
// Coordinator for the group coordinator's node at the moment of the fault
// (the harness resolves it, see Resolve).
const (
	NodeStop    Kind = "node-stop"    // graceful stop; healed by a start
	NodeKill    Kind = "node-kill"    // SIGKILL; healed by a start
	NodePause   Kind = "node-pause"   // freeze; healed by unpause
	NodeIsolate Kind = "node-isolate" // network partition of one node; healed by reconnecting
)

type nodeKind struct {
	kind  Kind
	doc   string
	apply func(Target, context.Context, NodeID) error
	heal  func(Target, context.Context, NodeID) error
}

func init() {
	register(nodeKind{NodeStop, "stop a broker node gracefully (controlled shutdown), start it at the heal", Target.StopNode, Target.StartNode})
	register(nodeKind{NodeKill, "kill -9 a broker node, start it on the same data at the heal", Target.KillNode, Target.StartNode})
	register(nodeKind{NodePause, "freeze a broker node's processes (SIGSTOP), unpause at the heal", Target.PauseNode, Target.UnpauseNode})
	register(nodeKind{NodeIsolate, "take a broker node off the network (clients and other nodes), reconnect at the heal", Target.IsolateNode, Target.HealNode})
}

func (k nodeKind) Kind() Kind     { return k.kind }
func (k nodeKind) Family() Family { return FamilyNode }
func (k nodeKind) Doc() string    { return k.doc }

func (k nodeKind) unfit(s Space) string {
	if len(s.Nodes) == 0 {
		return "no node the run may stop (an external cluster without --node-control, or the scenario allows none)"
	}
	return ""
}

func (k nodeKind) durations(s Space) (time.Duration, time.Duration) {
	return s.MinDuration, s.MaxDuration
}

func (k nodeKind) draw(rng *rand.Rand, s Space, f *Fault) {
	// Half of the node faults, when the space asks for it, hit whichever node
	// coordinates the group when the fault starts: that is where a group's
	// state lives, and what moves it.
	if s.CoordinatorAware && rng.IntN(2) == 0 {
		f.Node = Coordinator
		return
	}
	f.Node = s.Nodes[rng.IntN(len(s.Nodes))]
}

func (k nodeKind) validate(f Fault) error {
	if f.Node < 0 && f.Node != Coordinator {
		return fmt.Errorf("fault %s needs a node id or the coordinator (%d), got %d", f.Kind, Coordinator, f.Node)
	}
	if f.Client != "" || f.Member != "" {
		return fmt.Errorf("fault %s acts on a node, not on client %q or member %q", f.Kind, f.Client, f.Member)
	}
	return nil
}

func (k nodeKind) Apply(ctx context.Context, env Env, f Fault) (string, error) {
	if env.Target == nil {
		return "", errNoPart(f, "node control")
	}
	if f.Node == Coordinator {
		return "", fmt.Errorf("fault %s: the coordinator's node must be resolved before the fault starts (faults.Resolve)", f)
	}
	return "", k.apply(env.Target, ctx, f.Node)
}

func (k nodeKind) Heal(ctx context.Context, env Env, f Fault) (string, error) {
	if env.Target == nil {
		return "", errNoPart(f, "node control")
	}
	if f.Node == Coordinator {
		return "", fmt.Errorf("fault %s: heal the node it was resolved to", f)
	}
	return "", k.heal(env.Target, ctx, f.Node)
}

// Resolve turns a fault on the Coordinator into a fault on the node that
// coordinates the group now, and says which; other faults come back as
// they are.
func Resolve(ctx context.Context, f Fault, env Env) (Fault, string, error) {
	if f.Node != Coordinator || f.Family() != FamilyNode {
		return f, "", nil
	}
	if env.Group == nil {
		return f, "", errNoPart(f, "a way to find the group's coordinator")
	}
	n, err := env.Group.Coordinator(ctx)
	if err != nil {
		return f, "", fmt.Errorf("finding the group's coordinator for %s: %w", f, err)
	}
	f.Node = n
	return f, fmt.Sprintf("the group's coordinator was node %d", n), nil
}
