package faults

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// Space says which faults fit a cluster and a workload: what a schedule may
// pick from. Faults that do not fit are filtered out before one is picked,
// so a schedule never asks a cluster for something it cannot do.
type Space struct {
	// Nodes are the nodes node faults may act on (empty: no node faults,
	// as on an external cluster without node control).
	Nodes []NodeID
	// Brokers are the nodes clients connect to; link faults cut a client
	// from one of them or from all.
	Brokers []NodeID
	// Clients are the clients whose links may be faulted.
	Clients []string
	// Kinds are the fault kinds allowed; empty allows every kind that fits.
	Kinds []Kind
	// MaxNodesDown bounds how many nodes may be faulted at once, so that a
	// 3-node quorum survives (1 for three nodes); 0 means 1.
	MaxNodesDown int
	// Horizon is the length of the workload phase: every fault starts and
	// heals inside it.
	Horizon time.Duration
	// MinDuration and MaxDuration bound how long one fault lasts.
	MinDuration, MaxDuration time.Duration
	// MaxLatency bounds injected latency; 0 means 500 ms.
	MaxLatency time.Duration
}

func (s Space) allowed(k Kind) bool { return len(s.Kinds) == 0 || slices.Contains(s.Kinds, k) }

// candidates lists the kinds that fit s.
func (s Space) candidates() []Kind {
	var out []Kind
	if len(s.Nodes) > 0 {
		for _, k := range []Kind{NodeStop, NodeKill, NodePause, NodeIsolate} {
			if s.allowed(k) {
				out = append(out, k)
			}
		}
	}
	if len(s.Clients) > 0 && len(s.Brokers) > 0 {
		for _, k := range []Kind{LinkCut, LinkLatency, LinkSlow, LinkHole, LinkReset} {
			if s.allowed(k) {
				out = append(out, k)
			}
		}
	}
	return out
}

func (s Space) validate() error {
	if s.Horizon <= 0 {
		return fmt.Errorf("fault space: horizon must be positive, got %s", s.Horizon)
	}
	if s.MinDuration <= 0 || s.MaxDuration < s.MinDuration {
		return fmt.Errorf("fault space: durations must satisfy 0 < min (%s) ≤ max (%s)", s.MinDuration, s.MaxDuration)
	}
	if s.MinDuration > s.Horizon {
		return fmt.Errorf("fault space: the shortest fault (%s) does not fit the horizon (%s)", s.MinDuration, s.Horizon)
	}
	for _, k := range s.Kinds {
		if !k.Known() {
			return fmt.Errorf("fault space: unknown fault kind %q", k)
		}
	}
	if len(s.candidates()) == 0 {
		return errors.New("fault space: no fault fits (no nodes for node faults, no clients or brokers for link faults, or no allowed kind among them)")
	}
	return nil
}

// Generate picks n faults from s with rng: each starts inside the horizon
// and heals before it ends; node faults never take more than MaxNodesDown
// nodes at once and never hit a node that is already faulted; link faults
// on one client's link to one broker do not overlap. The result is sorted
// by start time. The same rng state gives the same schedule.
func Generate(rng *rand.Rand, s Space, n int) ([]Fault, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if s.MaxNodesDown == 0 {
		s.MaxNodesDown = 1
	}
	if s.MaxLatency == 0 {
		s.MaxLatency = 500 * time.Millisecond
	}
	kinds := s.candidates()
	var out []Fault
	// Tries are bounded: a crowded space yields fewer faults, never a hang.
	for tries := 0; len(out) < n && tries < 50*n; tries++ {
		k := kinds[rng.IntN(len(kinds))]
		d := s.MinDuration + time.Duration(rng.Int64N(int64(s.MaxDuration-s.MinDuration)+1))
		if d > s.Horizon {
			d = s.Horizon
		}
		at := time.Duration(rng.Int64N(int64(s.Horizon-d) + 1))
		f := Fault{Kind: k, At: at, For: d}
		if f.IsLinkFault() {
			f.Client = s.Clients[rng.IntN(len(s.Clients))]
			f.Node = AllNodes
			if rng.IntN(2) == 0 {
				f.Node = s.Brokers[rng.IntN(len(s.Brokers))]
			}
			switch k {
			case LinkLatency:
				f.Latency = time.Duration(rng.Int64N(int64(s.MaxLatency))) + time.Millisecond
				f.Jitter = f.Latency / 4
			case LinkSlow:
				f.KBPerSec = 16 + rng.Int64N(1024)
			}
		} else {
			f.Node = s.Nodes[rng.IntN(len(s.Nodes))]
		}
		if !fits(out, f, s.MaxNodesDown) {
			continue
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out, nil
}

func overlaps(a, b Fault) bool { return a.At < b.At+b.For && b.At < a.At+a.For }

// fits reports whether f can join the schedule.
func fits(sched []Fault, f Fault, maxDown int) bool {
	if f.IsLinkFault() {
		for _, g := range sched {
			if g.IsLinkFault() && g.Client == f.Client && overlaps(f, g) &&
				(g.Node == f.Node || g.Node == AllNodes || f.Node == AllNodes) {
				return false
			}
		}
		return true
	}
	// Node faults: check every instant where the number of faulted nodes
	// could rise, that is, the start of f and of every fault starting in it.
	points := []time.Duration{f.At}
	for _, g := range sched {
		if !g.IsLinkFault() && overlaps(f, g) {
			if g.Node == f.Node {
				return false
			}
			if g.At > f.At {
				points = append(points, g.At)
			}
		}
	}
	for _, p := range points {
		down := 1
		for _, g := range sched {
			if !g.IsLinkFault() && g.At <= p && p < g.At+g.For {
				down++
			}
		}
		if down > maxDown {
			return false
		}
	}
	return true
}

// Active returns the faults of sched in force at time t.
func Active(sched []Fault, t time.Duration) []Fault {
	var out []Fault
	for _, f := range sched {
		if f.At <= t && t < f.At+f.For {
			out = append(out, f)
		}
	}
	return out
}
