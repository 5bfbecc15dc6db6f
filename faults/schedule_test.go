package faults

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func space() Space {
	return Space{
		Nodes: []NodeID{1, 2, 3}, Brokers: []NodeID{1, 2, 3}, Clients: []string{"m1", "m2", "m3"},
		Horizon: time.Minute, MinDuration: 2 * time.Second, MaxDuration: 20 * time.Second,
	}
}

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6661756c7473)) }

// checkSchedule asserts every rule Generate promises.
func checkSchedule(t *testing.T, s Space, sched []Fault) {
	t.Helper()
	maxDown := max(s.MaxNodesDown, 1)
	for i, f := range sched {
		if err := f.Validate(); err != nil {
			t.Fatalf("fault %d invalid: %v", i, err)
		}
		if f.At < 0 || f.At+f.For > s.Horizon {
			t.Errorf("fault %v leaves the horizon %s", f, s.Horizon)
		}
		if f.For < s.MinDuration || f.For > s.MaxDuration {
			t.Errorf("fault %v lasts outside [%s, %s]", f, s.MinDuration, s.MaxDuration)
		}
		if len(s.Kinds) > 0 && !slices.Contains(s.Kinds, f.Kind) {
			t.Errorf("fault %v of a kind not allowed", f)
		}
		if i > 0 && sched[i-1].At > f.At {
			t.Errorf("schedule not sorted at %d", i)
		}
		if !f.IsLinkFault() {
			down := 0
			for _, g := range sched {
				if !g.IsLinkFault() && g.At <= f.At && f.At < g.At+g.For {
					down++
					if g != f && g.Node == f.Node {
						t.Errorf("node %d faulted twice at once: %v and %v", f.Node, f, g)
					}
				}
			}
			if down > maxDown {
				t.Errorf("%d nodes down at %s, bound %d", down, f.At, maxDown)
			}
		}
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, err := Generate(rng(7), space(), 12)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(rng(7), space(), 12)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different schedules:\n%v\n%v", a, b)
	}
	c, _ := Generate(rng(8), space(), 12)
	if reflect.DeepEqual(a, c) {
		t.Errorf("seeds 7 and 8 gave the same schedule")
	}
}

func TestGenerateKeepsItsRules(t *testing.T) {
	for seed := range uint64(300) {
		s := space()
		switch seed % 3 {
		case 1:
			s.Kinds = []Kind{NodeKill, NodePause, LinkLatency}
		case 2:
			s.MaxNodesDown = 2
		}
		sched, err := Generate(rng(seed), s, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(sched) == 0 {
			t.Fatalf("seed %d: empty schedule", seed)
		}
		checkSchedule(t, s, sched)
	}
}

func TestGenerateFiltersWhatDoesNotFit(t *testing.T) {
	// An external cluster without node control: only link faults.
	s := space()
	s.Nodes = nil
	sched, err := Generate(rng(1), s, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sched {
		if !f.IsLinkFault() {
			t.Errorf("node fault %v without nodes", f)
		}
	}
	// Nothing fits: a clear error.
	s.Clients = nil
	if _, err := Generate(rng(1), s, 3); err == nil || !strings.Contains(err.Error(), "no fault fits") {
		t.Errorf("empty space: %v", err)
	}
	for name, bad := range map[string]Space{
		"no horizon":    {Nodes: []NodeID{1}, MinDuration: time.Second, MaxDuration: time.Second},
		"min above max": {Nodes: []NodeID{1}, Horizon: time.Minute, MinDuration: 2 * time.Second, MaxDuration: time.Second},
		"unknown kind":  {Nodes: []NodeID{1}, Horizon: time.Minute, MinDuration: time.Second, MaxDuration: time.Second, Kinds: []Kind{"node-melt"}},
	} {
		if _, err := Generate(rng(1), bad, 1); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestFitsRejectsTooManyNodesDown(t *testing.T) {
	sched := []Fault{{Kind: NodeKill, Node: 1, At: 0, For: 10 * time.Second}}
	if fits(sched, Fault{Kind: NodePause, Node: 2, At: 5 * time.Second, For: time.Second}, 1) {
		t.Errorf("a second node fault while node 1 is down was accepted with MaxNodesDown 1")
	}
	if !fits(sched, Fault{Kind: NodePause, Node: 2, At: 10 * time.Second, For: time.Second}, 1) {
		t.Errorf("a node fault after node 1 healed was refused")
	}
	if fits(sched, Fault{Kind: NodePause, Node: 1, At: 5 * time.Second, For: time.Second}, 2) {
		t.Errorf("node 1 faulted twice at once")
	}
	if got := Active(sched, 3*time.Second); len(got) != 1 {
		t.Errorf("Active at 3s: %v", got)
	}
}
