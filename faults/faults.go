// Package faults describes faults as values: what happens, to which node or
// client link, and when. A cluster implements Target; the harness applies a
// fault to it and, at the end of every schedule, heals everything before the
// final observations. This package never imports the harness, so a fault
// plan can be built, saved and read without any cluster.
package faults

import (
	"context"
	"fmt"
	"time"
)

// NodeID is a Kafka node.id.
type NodeID = int32

// AllNodes selects every link of a client.
const AllNodes NodeID = -1

// Target is what faults act on: the nodes of a cluster. Each method returns
// only when the action took effect (a stopped node has exited, a started
// one serves, an isolated one is unreachable).
type Target interface {
	NodeIDs() []NodeID
	StopNode(ctx context.Context, id NodeID) error
	StartNode(ctx context.Context, id NodeID) error
	KillNode(ctx context.Context, id NodeID) error
	PauseNode(ctx context.Context, id NodeID) error
	UnpauseNode(ctx context.Context, id NodeID) error
	IsolateNode(ctx context.Context, id NodeID) error
	HealNode(ctx context.Context, id NodeID) error
}

// Link is one client's path to the brokers, faulted without touching any
// other client.
type Link interface {
	Cut(node NodeID) error
	Latency(node NodeID, d, jitter time.Duration) error
	Bandwidth(node NodeID, kbPerSec int64) error
	Blackhole(node NodeID) error
	ResetPeer(node NodeID, after time.Duration) error
	Heal(node NodeID) error
}

// Kind is what a fault does.
type Kind string

// The fault kinds. Node faults act on a node; link faults on one client's
// links (to one node, or all with AllNodes).
const (
	NodeStop    Kind = "node-stop"    // graceful stop; healed by a start
	NodeKill    Kind = "node-kill"    // SIGKILL; healed by a start
	NodePause   Kind = "node-pause"   // freeze; healed by unpause
	NodeIsolate Kind = "node-isolate" // network partition of one node; healed by reconnecting
	LinkCut     Kind = "link-cut"     // connection refused for one client
	LinkLatency Kind = "link-latency" // added delay both ways
	LinkSlow    Kind = "link-bandwidth"
	LinkHole    Kind = "link-blackhole" // connections stay open, no bytes pass
	LinkReset   Kind = "link-reset"     // connections reset
)

// Kinds lists every fault kind.
var Kinds = []Kind{NodeStop, NodeKill, NodePause, NodeIsolate, LinkCut, LinkLatency, LinkSlow, LinkHole, LinkReset}

// Known reports whether k is a fault kind.
func (k Kind) Known() bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// Fault is one fault of a schedule: a plain value, saved in the plan.
type Fault struct {
	Kind Kind `json:"kind"`
	// Node is the node a node fault acts on, or the broker a link fault
	// cuts the client from (AllNodes for every broker).
	Node NodeID `json:"node"`
	// Client names the client whose links a link fault acts on.
	Client string `json:"client,omitempty"`
	// At is when the fault starts, from the start of the workload phase.
	At time.Duration `json:"at"`
	// For is how long it lasts before it is healed; 0 lasts until the final heal.
	For time.Duration `json:"for"`
	// Latency, Jitter and KBPerSec parameterise link faults.
	Latency  time.Duration `json:"latency,omitempty"`
	Jitter   time.Duration `json:"jitter,omitempty"`
	KBPerSec int64         `json:"kb_per_sec,omitempty"`
}

func (f Fault) String() string {
	if f.Client != "" {
		return fmt.Sprintf("%s %s→node %d at %s for %s", f.Kind, f.Client, f.Node, f.At, f.For)
	}
	return fmt.Sprintf("%s node %d at %s for %s", f.Kind, f.Node, f.At, f.For)
}

// IsLinkFault reports whether f acts on a client's links.
func (f Fault) IsLinkFault() bool {
	switch f.Kind {
	case LinkCut, LinkLatency, LinkSlow, LinkHole, LinkReset:
		return true
	}
	return false
}

// Validate says what is wrong with f, if anything.
func (f Fault) Validate() error {
	switch f.Kind {
	case NodeStop, NodeKill, NodePause, NodeIsolate:
		if f.Node < 0 {
			return fmt.Errorf("fault %s needs a node, got %d", f.Kind, f.Node)
		}
		if f.Client != "" {
			return fmt.Errorf("fault %s acts on a node, not on client %q", f.Kind, f.Client)
		}
	case LinkCut, LinkHole, LinkReset:
		if f.Client == "" {
			return fmt.Errorf("fault %s needs a client", f.Kind)
		}
	case LinkLatency:
		if f.Client == "" || f.Latency <= 0 {
			return fmt.Errorf("fault %s needs a client and a positive latency", f.Kind)
		}
	case LinkSlow:
		if f.Client == "" || f.KBPerSec <= 0 {
			return fmt.Errorf("fault %s needs a client and a positive kb_per_sec", f.Kind)
		}
	default:
		return fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	if f.At < 0 || f.For < 0 {
		return fmt.Errorf("fault %s: at and for must not be negative (at %s, for %s)", f.Kind, f.At, f.For)
	}
	return nil
}

// LinkOf returns a client's links; the harness supplies it.
type LinkOf func(client string) (Link, error)

// Apply starts f on t (node faults) or on the client's links.
func Apply(ctx context.Context, f Fault, t Target, links LinkOf) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if f.IsLinkFault() {
		l, err := links(f.Client)
		if err != nil {
			return err
		}
		switch f.Kind {
		case LinkCut:
			return l.Cut(f.Node)
		case LinkLatency:
			return l.Latency(f.Node, f.Latency, f.Jitter)
		case LinkSlow:
			return l.Bandwidth(f.Node, f.KBPerSec)
		case LinkHole:
			return l.Blackhole(f.Node)
		case LinkReset:
			return l.ResetPeer(f.Node, 0)
		}
	}
	switch f.Kind {
	case NodeStop:
		return t.StopNode(ctx, f.Node)
	case NodeKill:
		return t.KillNode(ctx, f.Node)
	case NodePause:
		return t.PauseNode(ctx, f.Node)
	case NodeIsolate:
		return t.IsolateNode(ctx, f.Node)
	}
	return fmt.Errorf("unknown fault kind %q", f.Kind)
}

// Heal undoes f: a stopped or killed node is started, a paused one
// unpaused, an isolated one reconnected, a client's links healed.
func Heal(ctx context.Context, f Fault, t Target, links LinkOf) error {
	if f.IsLinkFault() {
		l, err := links(f.Client)
		if err != nil {
			return err
		}
		return l.Heal(f.Node)
	}
	switch f.Kind {
	case NodeStop, NodeKill:
		return t.StartNode(ctx, f.Node)
	case NodePause:
		return t.UnpauseNode(ctx, f.Node)
	case NodeIsolate:
		return t.HealNode(ctx, f.Node)
	}
	return fmt.Errorf("unknown fault kind %q", f.Kind)
}
