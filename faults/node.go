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
	// scenarios says the broker-faults and combined scenarios draw it (see
	// InScenarios).
	scenarios bool
}

func init() {
	register(nodeKind{NodeStop, "stop a broker node gracefully (controlled shutdown), start it at the heal", Target.StopNode, Target.StartNode, true})
	register(nodeKind{NodeKill, "kill -9 a broker node, start it on the same data at the heal", Target.KillNode, Target.StartNode, true})
	register(nodeKind{NodePause, "freeze a broker node's processes (SIGSTOP), unpause at the heal", Target.PauseNode, Target.UnpauseNode, true})
	register(nodeKind{NodeIsolate, "take a broker node off the network (clients and other nodes), reconnect at the heal", Target.IsolateNode, Target.HealNode, false})
}

func (k nodeKind) Kind() Kind        { return k.kind }
func (k nodeKind) Family() Family    { return FamilyNode }
func (k nodeKind) Doc() string       { return k.doc }
func (k nodeKind) inScenarios() bool { return k.scenarios }

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
	// A share group's state lives in three roles, each a node fault may
	// hit as it starts: the group coordinator (membership), the share
	// coordinator of a partition (the persisted state, __share_group_state)
	// and the partition's leader (the share-partition: locks and counts).
	if s.ShareAware {
		switch rng.IntN(4) {
		case 0:
			f.Node = Coordinator
		case 1:
			f.Node, f.Partition = ShareCoordinator, rng.Int32N(max(s.Partitions, 1))
		case 2:
			f.Node, f.Partition = PartitionLeader, rng.Int32N(max(s.Partitions, 1))
		default:
			f.Node = s.Nodes[rng.IntN(len(s.Nodes))]
		}
		return
	}
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
	if f.Node < 0 && !resolvedAtFault(f.Node) {
		return fmt.Errorf("fault %s needs a node id, the coordinator (%d), a partition's share coordinator (%d) or a partition's leader (%d), got %d", f.Kind, Coordinator, ShareCoordinator, PartitionLeader, f.Node)
	}
	if f.Partition < 0 || (f.Partition != 0 && f.Node != ShareCoordinator && f.Node != PartitionLeader) {
		return fmt.Errorf("fault %s: partition %d names the partition whose leader (%d) or share coordinator (%d) it hits, not a fault on node %d", f.Kind, f.Partition, PartitionLeader, ShareCoordinator, f.Node)
	}
	if f.Client != "" || f.Member != "" {
		return fmt.Errorf("fault %s acts on a node, not on client %q or member %q", f.Kind, f.Client, f.Member)
	}
	return nil
}

func (k nodeKind) Apply(ctx context.Context, env Env, f Fault) (string, error) {
	if err := onResolvedNode(env, f, "its node must be resolved before the fault starts (faults.Resolve)"); err != nil {
		return "", err
	}
	return "", k.apply(env.Target, ctx, f.Node)
}

func (k nodeKind) Heal(ctx context.Context, env Env, f Fault) (string, error) {
	if err := onResolvedNode(env, f, "heal the node it was resolved to"); err != nil {
		return "", err
	}
	return "", k.heal(env.Target, ctx, f.Node)
}

// onResolvedNode says why f cannot act on its node in env: no node control,
// or a node still named by its role (unresolved says what to do).
func onResolvedNode(env Env, f Fault, unresolved string) error {
	if env.Target == nil {
		return errNoPart(f, "node control")
	}
	if resolvedAtFault(f.Node) {
		return fmt.Errorf("fault %s: %s", f, unresolved)
	}
	return nil
}

// Resolve turns a fault on a role (Coordinator, ShareCoordinator,
// PartitionLeader) into a fault on the node in that role now, and says
// which; other faults come back as they are.
func Resolve(ctx context.Context, f Fault, env Env) (Fault, string, error) {
	if !resolvedAtFault(f.Node) || f.Family() != FamilyNode {
		return f, "", nil
	}
	var (
		n   NodeID
		err error
		who string
	)
	switch f.Node {
	case Coordinator:
		if env.Group == nil {
			return f, "", errNoPart(f, "a way to find the group's coordinator")
		}
		n, err = env.Group.Coordinator(ctx)
		who = "the group's coordinator"
	case ShareCoordinator:
		if env.Leaders == nil {
			return f, "", errNoPart(f, "a way to find a partition's share coordinator")
		}
		n, err = env.Leaders.ShareCoordinator(ctx, f.Partition)
		who = fmt.Sprintf("the share coordinator of partition %d", f.Partition)
	case PartitionLeader:
		if env.Leaders == nil {
			return f, "", errNoPart(f, "a way to find a partition's leader")
		}
		n, err = env.Leaders.PartitionLeader(ctx, f.Partition)
		who = fmt.Sprintf("the leader of partition %d", f.Partition)
	}
	if err != nil {
		return f, "", fmt.Errorf("finding %s for %s: %w", who, f, err)
	}
	f.Node, f.Partition = n, 0
	return f, fmt.Sprintf("%s was node %d", who, n), nil
}
