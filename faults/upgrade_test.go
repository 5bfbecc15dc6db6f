package faults

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// upgrader is a recorder that can also upgrade nodes and set features.
type upgrader struct{ recorder }

func (u *upgrader) UpgradeNode(_ context.Context, id NodeID, v string) error {
	return u.add("upgrade %d %s", id, v)
}
func (u *upgrader) WaitFullISR(context.Context) error { return u.add("isr") }
func (u *upgrader) UpdateFeatures(_ context.Context, l map[string]int16) (string, error) {
	return "finalized", u.add("features %s", FormatFeatures(l))
}

func TestRollingUpgradeSchedule(t *testing.T) {
	sched, err := RollingUpgrade([]NodeID{1, 2, 3}, "4.4.0", map[string]int16{"metadata.version": 33, "group.version": 1}, 5*time.Second, 30*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range sched {
		got = append(got, f.String())
		if !f.HoldsNode() || f.Family() != FamilyUpgrade {
			t.Errorf("%s: family %s, holds a node %t", f, f.Family(), f.HoldsNode())
		}
	}
	want := []string{
		"node-upgrade node 1 to Kafka 4.4.0 at 5s for 1s",
		"node-upgrade node 2 to Kafka 4.4.0 at 35s for 1s",
		"node-upgrade node 3 to Kafka 4.4.0 at 1m5s for 1s",
		"feature-update the cluster's features group.version=1,metadata.version=33 at 1m35s for 1s",
	}
	if !slices.Equal(got, want) {
		t.Errorf("schedule\n got %q\nwant %q", got, want)
	}
	u := &upgrader{}
	e := Env{Target: u}
	for _, f := range sched {
		if _, err := Apply(context.Background(), f, e); err != nil {
			t.Fatal(err)
		}
		if _, err := Heal(context.Background(), f, e); err != nil {
			t.Fatal(err)
		}
	}
	calls := []string{"upgrade 1 4.4.0", "isr", "upgrade 2 4.4.0", "isr", "upgrade 3 4.4.0", "isr", "features group.version=1,metadata.version=33"}
	if !slices.Equal(u.calls, calls) {
		t.Errorf("calls %q, want %q", u.calls, calls)
	}
	// A cluster that cannot upgrade (embedded, external) gets an error
	// naming the step, not a panic.
	if _, err := Apply(context.Background(), sched[0], Env{Target: &recorder{}}); err == nil || !strings.Contains(err.Error(), "upgraded") {
		t.Errorf("an upgrade on a cluster without Upgrader: %v", err)
	}
	if _, err := RollingUpgrade(nil, "4.4.0", nil, 0, time.Second, time.Second); err == nil {
		t.Error("a rolling upgrade of no nodes was planned")
	}
}

// Upgrade steps are placed by an upgrade's plan: a schedule never draws
// them, and --faults refuses them with what to use instead.
func TestUpgradeStepsAreNotDrawn(t *testing.T) {
	for _, k := range []Kind{NodeUpgrade, FeatureUpdate} {
		if slices.Contains(Kinds(), k) || !k.Known() {
			t.Errorf("%s: in Kinds %t, known %t", k, slices.Contains(Kinds(), k), k.Known())
		}
		if _, err := ParseKinds(string(k)); err == nil || !strings.Contains(err.Error(), "groupquake upgrade") {
			t.Errorf("ParseKinds(%s) = %v", k, err)
		}
	}
	if got := KindsOf(FamilyUpgrade); !slices.Equal(got, []Kind{FeatureUpdate, NodeUpgrade}) {
		t.Errorf("KindsOf(upgrade) = %v", got)
	}
	s := space()
	s.Kinds = []Kind{NodeUpgrade}
	if _, err := Generate(rng(1), s, 3); err == nil || !strings.Contains(err.Error(), "never drawn") {
		t.Errorf("Generate with node-upgrade: %v", err)
	}
	for _, bad := range []Fault{
		{Kind: NodeUpgrade, Node: 1},
		{Kind: NodeUpgrade, Version: "4.4.0"},
		{Kind: FeatureUpdate},
		{Kind: FeatureUpdate, Features: "metadata.version"},
		{Kind: FeatureUpdate, Features: "metadata.version=-1"},
		{Kind: NodeUpgrade, Node: 1, Version: "4.4.0", Member: "m1"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	if l, err := ParseFeatures(FormatFeatures(map[string]int16{"metadata.version": 33, "group.version": 1})); err != nil || l["metadata.version"] != 33 || l["group.version"] != 1 {
		t.Errorf("ParseFeatures round trip: %v, %v", l, err)
	}
}
