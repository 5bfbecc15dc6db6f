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
		Members: []string{"m1", "m2", "m3"},
		Horizon: time.Minute, MinDuration: 2 * time.Second, MaxDuration: 20 * time.Second,
		SessionTimeout: 6 * time.Second, HeartbeatInterval: time.Second, PollInterval: 8 * time.Second,
		CoordinatorAware: true,
	}
}

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6661756c7473)) }

// checkSchedule asserts every rule Generate promises.
func checkSchedule(t *testing.T, s Space, sched []Fault) {
	t.Helper()
	maxDown := max(s.MaxNodesDown, 1)
	maxAway := s.MaxMembersAway
	if maxAway == 0 {
		maxAway = len(s.Members) - 1
	}
	for i, f := range sched {
		if err := f.Validate(); err != nil {
			t.Fatalf("fault %d invalid: %v", i, err)
		}
		if f.At < 0 || f.At+f.For > s.Horizon {
			t.Errorf("fault %v leaves the horizon %s", f, s.Horizon)
		}
		d, _ := Lookup(f.Kind)
		lo, hi := d.durations(s)
		if f.For < lo || f.For > hi {
			t.Errorf("fault %v lasts outside [%s, %s]", f, lo, hi)
		}
		if len(s.Kinds) > 0 && !slices.Contains(s.Kinds, f.Kind) {
			t.Errorf("fault %v of a kind not allowed", f)
		}
		if i > 0 && sched[i-1].At > f.At {
			t.Errorf("schedule not sorted at %d", i)
		}
		if f.Trigger == OnRebalance && (f.Family() != FamilyNode || f.Node != Coordinator) {
			t.Errorf("fault %v waits for a rebalance but is not on the coordinator", f)
		}
		inForce := map[Family]int{}
		for j, g := range sched {
			if g.At <= f.At && f.At < g.At+g.For {
				inForce[g.Family()]++
			}
			if j != i && overlaps(f, g) && clash(f, g) {
				t.Errorf("faults on one target overlap: %v and %v", f, g)
			}
		}
		if inForce[FamilyNode] > maxDown {
			t.Errorf("%d nodes down at %s, bound %d", inForce[FamilyNode], f.At, maxDown)
		}
		if inForce[FamilyChurn] > maxAway {
			t.Errorf("%d members away at %s, bound %d", inForce[FamilyChurn], f.At, maxAway)
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
		if f.Family() == FamilyNode {
			t.Errorf("node fault %v without nodes", f)
		}
	}
	// Nothing fits: a clear error.
	s.Clients, s.Members = nil, nil
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
	one, two := Space{MaxNodesDown: 1}, Space{MaxNodesDown: 2}
	if fits(sched, Fault{Kind: NodePause, Node: 2, At: 5 * time.Second, For: time.Second}, one) {
		t.Errorf("a second node fault while node 1 is down was accepted with MaxNodesDown 1")
	}
	if !fits(sched, Fault{Kind: NodePause, Node: 2, At: 10 * time.Second, For: time.Second}, one) {
		t.Errorf("a node fault after node 1 healed was refused")
	}
	if fits(sched, Fault{Kind: NodePause, Node: 1, At: 5 * time.Second, For: time.Second}, two) {
		t.Errorf("node 1 faulted twice at once")
	}
	if fits(sched, Fault{Kind: NodePause, Node: Coordinator, At: 5 * time.Second, For: time.Second}, two) {
		t.Errorf("a fault on the coordinator's node (which may be node 1) overlaps node 1's")
	}
	if got := Active(sched, 3*time.Second); len(got) != 1 {
		t.Errorf("Active at 3s: %v", got)
	}
}

func TestFitsKeepsMembersAndTargetsApart(t *testing.T) {
	s := Space{MaxMembersAway: 1}
	sched := []Fault{{Kind: MemberCrash, Member: "m1", At: 0, For: 10 * time.Second}}
	for name, f := range map[string]Fault{
		"a second member away":             {Kind: MemberLeave, Member: "m2", At: 5 * time.Second, For: time.Second},
		"a link fault on a crashed member": {Kind: LinkLatency, Client: "m1", Node: AllNodes, Latency: time.Millisecond, At: 2 * time.Second, For: time.Second},
	} {
		if fits(sched, f, s) {
			t.Errorf("%s was accepted: %v", name, f)
		}
	}
	for name, f := range map[string]Fault{
		"a link fault on another member": {Kind: LinkCut, Client: "m2", Node: 1, At: 2 * time.Second, For: time.Second},
		"a node fault during churn":      {Kind: NodeKill, Node: 1, At: 2 * time.Second, For: time.Second},
		"churn after the heal":           {Kind: MemberLeave, Member: "m2", At: 10 * time.Second, For: time.Second},
	} {
		if !fits(sched, f, s) {
			t.Errorf("%s was refused: %v", name, f)
		}
	}
}

// Churn needs two members: a lone member that leaves takes the group with it.
func TestChurnNeedsTwoMembers(t *testing.T) {
	s := space()
	s.Members = []string{"m1"}
	s.Kinds = []Kind{MemberCrash}
	_, err := Generate(rng(1), s, 3)
	if err == nil || !strings.Contains(err.Error(), "two members") {
		t.Errorf("churn on a one-member group: %v", err)
	}
}

// Every family and the special shapes (late joiners, bursts, coordinator
// faults started by a churn event's rebalance) come out of the default
// space, and overlapping faults of different targets are drawn.
func TestGenerateReachesEveryShape(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(200) {
		s := space()
		sched, err := Generate(rng(seed), s, Normal.Count(s.Horizon))
		if err != nil {
			t.Fatal(err)
		}
		checkSchedule(t, s, sched)
		for i, f := range sched {
			seen[string(f.Kind)]++
			if f.Trigger == OnRebalance {
				seen["on-rebalance"]++
			}
			if f.Node == Coordinator && f.Trigger == AtTime {
				seen["coordinator"]++
			}
			for _, g := range sched[i+1:] {
				if overlaps(f, g) {
					seen["overlap "+string(f.Family())+"+"+string(g.Family())]++
				}
				if f.Family() == FamilyChurn && g.Family() == FamilyChurn && f.Kind != MemberJoin && g.At-f.At < s.HeartbeatInterval {
					seen["burst"]++
				}
			}
		}
	}
	for _, k := range Kinds() {
		if seen[string(k)] == 0 {
			t.Errorf("kind %s never drawn in 200 seeds", k)
		}
	}
	for _, shape := range []string{"on-rebalance", "coordinator", "burst", "overlap churn+link", "overlap node+churn"} {
		if seen[shape] == 0 {
			t.Errorf("no %s in 200 seeds (seen %v)", shape, seen)
		}
	}
}

// The normal intensity keeps the group under a fault or a membership change
// for most of the workload: the planned coverage over many seeds.
func TestNormalIntensityCoversMostOfTheWorkload(t *testing.T) {
	var sum float64
	const n = 100
	for seed := range uint64(n) {
		s := space()
		s.Horizon = 30 * time.Second
		sched, err := Generate(rng(seed), s, Normal.Count(s.Horizon))
		if err != nil {
			t.Fatal(err)
		}
		sum += Coverage(sched, s.Horizon)
	}
	if mean := sum / n; mean < 0.6 {
		t.Errorf("normal intensity covers %.0f%% of a 30s workload on average, want most of it (≥ 60%%)", 100*mean)
	}
}

func TestCoverage(t *testing.T) {
	sched := []Fault{
		{Kind: NodeKill, Node: 1, At: 0, For: 10 * time.Second},
		{Kind: LinkCut, Client: "m1", Node: 1, At: 5 * time.Second, For: 10 * time.Second},
		{Kind: LinkCut, Client: "m2", Node: 1, At: 30 * time.Second, For: 10 * time.Second},
	}
	if got := Coverage(sched, time.Minute); got != 25.0/60 {
		t.Errorf("Coverage = %v, want %v", got, 25.0/60)
	}
}

func TestParseIntensity(t *testing.T) {
	for in, want := range map[string]Intensity{"low": Low, "normal": Normal, "": Normal, "high": High, "12": 12, "7.5/min": 7.5} {
		got, err := ParseIntensity(in)
		if err != nil || got != want {
			t.Errorf("ParseIntensity(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"extreme", "-3", "0", "12/h", "NaN", "1e9"} {
		if _, err := ParseIntensity(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseIntensity(%q): %v", bad, err)
		}
	}
	if got := Normal.Count(30 * time.Second); got != 5 {
		t.Errorf("Normal.Count(30s) = %d, want 5", got)
	}
	if got := Low.Count(time.Second); got != 1 {
		t.Errorf("Low.Count(1s) = %d, want at least one fault", got)
	}
}

// A share run's node faults hit each role (the group coordinator, a
// partition's share coordinator, a partition's leader) and fixed nodes,
// over every partition, and its schedules keep every rule: two faults on
// roles never overlap, since both may land on one node.
func TestGenerateShareAwareReachesEveryRole(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(200) {
		s := space()
		s.CoordinatorAware, s.ShareAware, s.Partitions = false, true, 3
		s.Kinds = []Kind{NodeStop, NodeKill, NodePause}
		sched, err := Generate(rng(seed), s, Normal.Count(s.Horizon))
		if err != nil {
			t.Fatal(err)
		}
		checkSchedule(t, s, sched)
		for _, f := range sched {
			switch {
			case f.Node == Coordinator:
				seen["coordinator"]++
			case f.Node == ShareCoordinator:
				seen["share-coordinator p"+string(rune('0'+f.Partition))]++
			case f.Node == PartitionLeader:
				seen["leader p"+string(rune('0'+f.Partition))]++
			case f.Node > 0:
				seen["node"]++
			}
			if f.Partition < 0 || f.Partition >= s.Partitions {
				t.Errorf("fault %v aims at a partition the topic does not have", f)
			}
		}
	}
	for _, role := range []string{"coordinator", "node", "share-coordinator p0", "share-coordinator p2", "leader p0", "leader p2"} {
		if seen[role] == 0 {
			t.Errorf("no node fault on %s in 200 seeds (seen %v)", role, seen)
		}
	}
	a := Fault{Kind: NodeStop, Node: PartitionLeader, Partition: 1, For: 5 * time.Second}
	b := Fault{Kind: NodeKill, Node: ShareCoordinator, Partition: 0, At: time.Second, For: 5 * time.Second}
	if !clash(a, b) {
		t.Errorf("two overlapping faults on roles do not clash: %v, %v", a, b)
	}
}
