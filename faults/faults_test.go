package faults

import (
	"context"
	"fmt"
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
	}
	for _, tc := range cases {
		t.Run(string(tc.f.Kind), func(t *testing.T) {
			r := &recorder{}
			links := map[string]*recorder{}
			linkOf := func(c string) (Link, error) {
				if links[c] == nil {
					links[c] = &recorder{}
				}
				return links[c], nil
			}
			ctx := context.Background()
			if err := Apply(ctx, tc.f, r, linkOf); err != nil {
				t.Fatal(err)
			}
			if err := Heal(ctx, tc.f, r, linkOf); err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(r.calls)
			for c, l := range links {
				for _, call := range l.calls {
					got = append(got, c+": "+call)
				}
			}
			want := []string{tc.apply, tc.heal}
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
	}
	for name, f := range bad {
		t.Run(name, func(t *testing.T) {
			err := Apply(context.Background(), f, &recorder{}, func(string) (Link, error) { return &recorder{}, nil })
			if err == nil {
				t.Fatalf("fault %+v was accepted", f)
			}
			if !strings.Contains(err.Error(), string(f.Kind)) {
				t.Errorf("error %q does not name the fault kind %q", err, f.Kind)
			}
		})
	}
}
