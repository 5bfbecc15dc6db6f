package faults

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// recorder is a Target and Link that records calls: the logic under test is
// the dispatch from fault values to actions, not any cluster.
type recorder struct{ calls []string }

func (r *recorder) NodeIDs() []NodeID { return []NodeID{1, 2, 3} }
func (r *recorder) add(s string, a ...any) error {
	r.calls = append(r.calls, fmt.Sprintf(s, a...))
	return nil
}
func (r *recorder) StopNode(_ context.Context, id NodeID) error    { return r.add("stop %d", id) }
func (r *recorder) StartNode(_ context.Context, id NodeID) error   { return r.add("start %d", id) }
func (r *recorder) KillNode(_ context.Context, id NodeID) error    { return r.add("kill %d", id) }
func (r *recorder) PauseNode(_ context.Context, id NodeID) error   { return r.add("pause %d", id) }
func (r *recorder) UnpauseNode(_ context.Context, id NodeID) error { return r.add("unpause %d", id) }
func (r *recorder) IsolateNode(_ context.Context, id NodeID) error { return r.add("isolate %d", id) }
func (r *recorder) HealNode(_ context.Context, id NodeID) error    { return r.add("heal %d", id) }
func (r *recorder) Cut(n NodeID) error                             { return r.add("cut %d", n) }
func (r *recorder) Latency(n NodeID, d, j time.Duration) error {
	return r.add("latency %d %s %s", n, d, j)
}
func (r *recorder) Bandwidth(n NodeID, kb int64) error { return r.add("bandwidth %d %d", n, kb) }
func (r *recorder) Blackhole(n NodeID) error           { return r.add("blackhole %d", n) }
func (r *recorder) ResetPeer(n NodeID, after time.Duration) error {
	return r.add("reset %d %s", n, after)
}
func (r *recorder) Heal(n NodeID) error { return r.add("linkheal %d", n) }
func (r *recorder) Join(_ context.Context, m string) (string, error) {
	return "joined", r.add("join %s", m)
}
func (r *recorder) Leave(_ context.Context, m string) (string, error) {
	return "left", r.add("leave %s", m)
}
func (r *recorder) Crash(_ context.Context, m string) (string, error) {
	return "crashed", r.add("crash %s", m)
}
func (r *recorder) Stall(_ context.Context, m string, freeze bool, d time.Duration) (string, error) {
	return "stalled", r.add("stall %s freeze=%t %s", m, freeze, d)
}
func (r *recorder) Restore(_ context.Context, m string) (string, error) {
	return "restored", r.add("restore %s", m)
}
func (r *recorder) Coordinator(context.Context) (NodeID, error) { return 2, nil }
func (r *recorder) Rebalancing() bool                           { return false }

// The leaders of a share run: partition p is led by node p%3+1, its share
// coordinator is node (p+1)%3+1.
func (r *recorder) PartitionLeader(_ context.Context, p int32) (NodeID, error) { return p%3 + 1, nil }
func (r *recorder) ShareCoordinator(_ context.Context, p int32) (NodeID, error) {
	return (p+1)%3 + 1, nil
}

func env(r *recorder, links map[string]*recorder) Env {
	return Env{Target: r, Members: r, Group: r, Leaders: r, Links: func(c string) (Link, error) {
		if links[c] == nil {
			links[c] = &recorder{}
		}
		return links[c], nil
	}}
}

func TestApplyAndHeal(t *testing.T) {
	cases := []struct {
		f           Fault
		apply, heal string
	}{
		{Fault{Kind: NodeStop, Node: 2}, "stop 2", "start 2"},
		{Fault{Kind: NodeKill, Node: 1}, "kill 1", "start 1"},
		{Fault{Kind: NodePause, Node: 3}, "pause 3", "unpause 3"},
		{Fault{Kind: NodeIsolate, Node: 3}, "isolate 3", "heal 3"},
		{Fault{Kind: LinkCut, Client: "m1", Node: AllNodes}, "m1: cut -1", "m1: linkheal -1"},
		{Fault{Kind: LinkLatency, Client: "m2", Node: 1, Latency: 200 * time.Millisecond, Jitter: 10 * time.Millisecond}, "m2: latency 1 200ms 10ms", "m2: linkheal 1"},
		{Fault{Kind: LinkSlow, Client: "m1", Node: 2, KBPerSec: 64}, "m1: bandwidth 2 64", "m1: linkheal 2"},
		{Fault{Kind: LinkHole, Client: "m1", Node: 2}, "m1: blackhole 2", "m1: linkheal 2"},
		{Fault{Kind: LinkReset, Client: "m1", Node: 2}, "m1: reset 2 0s", "m1: linkheal 2"},
		{Fault{Kind: MemberJoin, Member: "m3", For: 5 * time.Second}, "", "join m3"},
		{Fault{Kind: MemberLeave, Member: "m1", At: time.Second, For: 5 * time.Second}, "leave m1", "restore m1"},
		{Fault{Kind: MemberCrash, Member: "m2", For: 9 * time.Second}, "crash m2", "restore m2"},
		{Fault{Kind: MemberRestart, Member: "m2", For: time.Second}, "crash m2", "restore m2"},
		{Fault{Kind: MemberStall, Member: "m1", For: 4 * time.Second}, "stall m1 freeze=false 4s", "restore m1"},
		{Fault{Kind: MemberFreeze, Member: "m1", For: 3 * time.Second}, "stall m1 freeze=true 3s", "restore m1"},
	}
	for _, tc := range cases {
		t.Run(string(tc.f.Kind), func(t *testing.T) {
			r := &recorder{}
			links := map[string]*recorder{}
			ctx := context.Background()
			if _, err := Apply(ctx, tc.f, env(r, links)); err != nil {
				t.Fatal(err)
			}
			if _, err := Heal(ctx, tc.f, env(r, links)); err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(r.calls)
			for c, l := range links {
				for _, call := range l.calls {
					got = append(got, c+": "+call)
				}
			}
			want := slices.DeleteFunc([]string{tc.apply, tc.heal}, func(s string) bool { return s == "" })
			if !slices.Equal(got, want) {
				t.Errorf("calls %q, want %q", got, want)
			}
			if tc.f.IsLinkFault() && len(r.calls) != 0 {
				t.Errorf("link fault touched nodes: %q", r.calls)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	bad := map[string]Fault{
		"unknown kind":              {Kind: "node-melt", Node: 1},
		"node fault on a client":    {Kind: NodeKill, Node: 1, Client: "m1"},
		"node fault without node":   {Kind: NodePause, Node: -1},
		"link fault without client": {Kind: LinkCut, Node: 1},
		"latency without latency":   {Kind: LinkLatency, Client: "m1", Node: 1},
		"bandwidth without rate":    {Kind: LinkSlow, Client: "m1", Node: 1},
		"negative start":            {Kind: NodeKill, Node: 1, At: -time.Second},
		"churn without member":      {Kind: MemberCrash, For: time.Second},
		"churn on a link":           {Kind: MemberCrash, Member: "m1", Client: "m1", For: time.Second},
		"churn without duration":    {Kind: MemberLeave, Member: "m1"},
		"late join not from start":  {Kind: MemberJoin, Member: "m1", At: time.Second, For: time.Second},
		"link fault on a member":    {Kind: LinkCut, Client: "m1", Member: "m1", Node: 1},
		"unknown trigger":           {Kind: NodeKill, Node: 1, Trigger: "full-moon"},
		"unknown role":              {Kind: NodeKill, Node: -5},
		"partition of a fixed node": {Kind: NodeKill, Node: 1, Partition: 2},
		"negative partition":        {Kind: NodeStop, Node: PartitionLeader, Partition: -1},
	}
	for name, f := range bad {
		t.Run(name, func(t *testing.T) {
			r := &recorder{}
			_, err := Apply(context.Background(), f, env(r, map[string]*recorder{}))
			if err == nil {
				t.Fatalf("fault %+v was accepted", f)
			}
			if !strings.Contains(err.Error(), string(f.Kind)) {
				t.Errorf("error %q does not name the fault kind %q", err, f.Kind)
			}
		})
	}
}

// A fault on the coordinator is resolved to the node that coordinates the
// group when it starts; applying it unresolved is refused, not guessed.
func TestResolveCoordinator(t *testing.T) {
	r := &recorder{}
	f := Fault{Kind: NodeKill, Node: Coordinator, For: time.Second}
	if _, err := Apply(context.Background(), f, env(r, nil)); err == nil || !strings.Contains(err.Error(), "resolved") {
		t.Fatalf("unresolved coordinator fault applied: %v (calls %q)", err, r.calls)
	}
	g, why, err := Resolve(context.Background(), f, env(r, nil))
	if err != nil {
		t.Fatal(err)
	}
	if g.Node != 2 || !strings.Contains(why, "node 2") {
		t.Errorf("resolved to node %d (%q), want the coordinator's node 2", g.Node, why)
	}
	if _, _, err := Resolve(context.Background(), f, Env{}); err == nil {
		t.Errorf("resolved without a way to find the coordinator")
	}
	link := Fault{Kind: LinkCut, Client: "m1", Node: AllNodes}
	if h, _, _ := Resolve(context.Background(), link, env(r, nil)); h != link {
		t.Errorf("a link fault changed on Resolve: %v", h)
	}
}

// Faults on a partition's leader or its share coordinator are resolved
// to the node in that role for that partition when they start, and say so;
// unresolved they are refused, and without a view of the leaders they do
// not resolve.
func TestResolveLeaders(t *testing.T) {
	r := &recorder{}
	for _, tc := range []struct {
		f    Fault
		node NodeID
		says string
	}{
		{Fault{Kind: NodeStop, Node: PartitionLeader, Partition: 1, For: time.Second}, 2, "the leader of partition 1 was node 2"},
		{Fault{Kind: NodeKill, Node: ShareCoordinator, Partition: 1, For: time.Second}, 3, "the share coordinator of partition 1 was node 3"},
		{Fault{Kind: NodePause, Node: PartitionLeader, For: time.Second}, 1, "the leader of partition 0 was node 1"},
	} {
		if _, err := Apply(context.Background(), tc.f, env(r, nil)); err == nil || !strings.Contains(err.Error(), "resolved") {
			t.Fatalf("unresolved %v applied: %v", tc.f, err)
		}
		g, why, err := Resolve(context.Background(), tc.f, env(r, nil))
		if err != nil {
			t.Fatal(err)
		}
		if g.Node != tc.node || g.Partition != 0 || why != tc.says {
			t.Errorf("%v resolved to node %d partition %d (%q), want node %d (%q)", tc.f, g.Node, g.Partition, why, tc.node, tc.says)
		}
		if err := g.Validate(); err != nil {
			t.Errorf("resolved %v does not validate: %v", g, err)
		}
		if _, _, err := Resolve(context.Background(), tc.f, Env{Group: r}); err == nil || !strings.Contains(err.Error(), string(tc.f.Kind)) {
			t.Errorf("%v resolved without a view of the leaders: %v", tc.f, err)
		}
	}
}

// A run without a part a family needs (no node control, no member control)
// gets an error that names the fault, not a panic.
func TestApplyWithoutThePart(t *testing.T) {
	for _, f := range []Fault{
		{Kind: NodeStop, Node: 1},
		{Kind: MemberLeave, Member: "m1", For: time.Second},
		{Kind: LinkCut, Client: "m1", Node: 1},
	} {
		_, err := Apply(context.Background(), f, Env{})
		if err == nil || !strings.Contains(err.Error(), string(f.Kind)) {
			t.Errorf("%v in an empty env: %v", f, err)
		}
	}
}

func TestParseKinds(t *testing.T) {
	got, err := ParseKinds("churn, node-kill")
	if err != nil {
		t.Fatal(err)
	}
	want := append(KindsOf(FamilyChurn), NodeKill)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ParseKinds = %v, want %v", got, want)
	}
	for _, bad := range []string{"node-melt", "", " , "} {
		if _, err := ParseKinds(bad); err == nil {
			t.Errorf("ParseKinds(%q) accepted", bad)
		} else if bad == "node-melt" && !strings.Contains(err.Error(), "node-melt") {
			t.Errorf("error %q does not name the bad kind", err)
		}
	}
	for _, k := range Kinds() {
		d, _ := Lookup(k)
		if d.Doc() == "" {
			t.Errorf("kind %s has no doc", k)
		}
	}
}

// TestTraits: the kinds that may close a member's connections without a
// call of its own showing it (EndsSessions) are exactly the crash, restart
// and leave of a member and the cut, flapping, reset and black-holed link
// (the share checkers excuse a session ended under them, and no other). A
// leave, a crash and a restart end a member's incarnation (StartsAnew); a
// late join, a stall, a freeze and every link or node fault do not. Neither
// holds for an unknown kind.
func TestTraits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trait func(Kind) bool
		want  []Kind
	}{
		{"EndsSessions", EndsSessions, []Kind{LinkCut, LinkFlap, LinkHole, LinkReset, MemberCrash, MemberLeave, MemberRestart}},
		{"StartsAnew", StartsAnew, []Kind{MemberCrash, MemberLeave, MemberRestart}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Kind
			for _, k := range allKinds() {
				if tc.trait(k) {
					got = append(got, k)
				}
			}
			want := slices.Clone(tc.want)
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s holds for %v, want %v", tc.name, got, want)
			}
			if tc.trait("no-such-kind") {
				t.Errorf("%s of an unknown kind", tc.name)
			}
		})
	}
}

// TestInScenarios: the scenarios draw the link and node kinds each says it
// is drawn, in the order the seeds' draws depend on.
func TestInScenarios(t *testing.T) {
	for fam, want := range map[Family][]Kind{
		FamilyLink:  {LinkCut, LinkLatency, LinkHole, LinkReset},
		FamilyNode:  {NodeStop, NodeKill, NodePause},
		FamilyChurn: nil,
	} {
		if got := InScenarios(fam); !slices.Equal(got, want) {
			t.Errorf("InScenarios(%s) = %v, want %v", fam, got, want)
		}
	}
}

// Params are what the history records beside a fault's target: every
// parameter set, by its name in the plan, and nothing that names the kind,
// the target or the start.
func TestParams(t *testing.T) {
	for _, tc := range []struct {
		f    Fault
		want map[string]string
	}{
		{Fault{Kind: LinkLatency, Client: "m2", Node: 1, At: time.Second, For: 5 * time.Second, Latency: 200 * time.Millisecond, Jitter: 50 * time.Millisecond},
			map[string]string{"for": "5s", "latency": "200ms", "jitter": "50ms"}},
		{Fault{Kind: LinkSlow, Client: "m1", Node: AllNodes, For: time.Second, KBPerSec: 64}, map[string]string{"for": "1s", "kb_per_sec": "64"}},
		{Fault{Kind: NodePause, Node: Coordinator, For: time.Second, Trigger: OnRebalance}, map[string]string{"for": "1s", "trigger": "rebalance"}},
		{Fault{Kind: NodeStop, Node: ShareCoordinator, Partition: 1, For: time.Second}, map[string]string{"for": "1s"}},
		{Fault{Kind: MemberJoin, Member: "m3"}, nil},
	} {
		if got := tc.f.Params(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%v: Params = %v, want %v", tc.f, got, tc.want)
		}
	}
	// Every field but the kind, the target and the start is a parameter:
	// one a new kind adds to Fault is recorded as it is named in the plan.
	var f Fault
	v := reflect.ValueOf(&f).Elem()
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if name == "" {
			t.Errorf("field %s of Fault has no name in the plan", v.Type().Field(i).Name)
			continue
		}
		g := Fault{}
		x := reflect.ValueOf(&g).Elem().Field(i)
		switch x.Kind() {
		case reflect.String:
			x.SetString("x")
		case reflect.Int32, reflect.Int64:
			x.SetInt(3)
		default:
			t.Fatalf("field %s of Fault is a %s: teach this test (and Params) how it is written", v.Type().Field(i).Name, x.Kind())
		}
		_, recorded := g.Params()[name]
		if recorded == notParams[name] {
			t.Errorf("field %s (%q): recorded as a parameter %t, want %t", v.Type().Field(i).Name, name, recorded, !notParams[name])
		}
	}
}
