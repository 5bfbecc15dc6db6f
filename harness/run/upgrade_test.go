package run_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// An upgrade plan puts every node's replacement and the finalization on the
// schedule, at the new release's feature levels, sized into the workload,
// and its rerun command asks for the same upgrade.
func TestUpgradePlan(t *testing.T) {
	o := run.Options{Scenario: run.ScenarioBrokerFaults, Kafka: "4.1.2", Nodes: 3, Kinds: []string{"classic", "consumer"}, UpgradeTo: "4.4.0"}
	p := mustPlan(t, 7, o)
	steps := p.UpgradeSteps()
	var got []string
	for _, s := range steps {
		got = append(got, string(s.Kind)+" "+s.Version+s.Features)
		if s.At+s.For > p.Workload {
			t.Errorf("step %s ends after the workload (%s)", s, p.Workload)
		}
	}
	want := []string{"node-upgrade 4.4.0", "node-upgrade 4.4.0", "node-upgrade 4.4.0", "feature-update group.version=1,metadata.version=33"}
	if !slices.Equal(got, want) {
		t.Errorf("steps %q, want %q", got, want)
	}
	if len(p.Faults) <= len(steps) {
		t.Errorf("the scenario's own faults are gone: %v", p.Faults)
	}
	if !slices.IsSortedFunc(p.Faults, func(a, b faults.Fault) int { return int(a.At - b.At) }) {
		t.Errorf("schedule not sorted by time")
	}
	if p.FinalKafka() != "4.4.0" || mustPlan(t, 7, run.Options{Kafka: "4.1.2"}).FinalKafka() != "4.1.2" {
		t.Errorf("FinalKafka = %s", p.FinalKafka())
	}
	if cmd := p.Command(); !strings.Contains(cmd, "--kafka 4.1.2") || !strings.Contains(cmd, "--upgrade-to 4.4.0") {
		t.Errorf("rerun command %q does not ask for the upgrade", cmd)
	}
	for _, bad := range []struct {
		o    run.Options
		says string
	}{
		{run.Options{Kafka: "4.4.0", Nodes: 3, UpgradeTo: "4.1.2"}, "--upgrade-to 4.1.2 is older than --kafka 4.4.0"},
		{run.Options{Kafka: "4.1.2", Nodes: 3, UpgradeTo: "4.9.0"}, "unknown Kafka version"},
		{run.Options{Kafka: "4.1.2", Embedded: true, UpgradeTo: "4.4.0"}, "embedded"},
		{run.Options{Bootstrap: []string{"h:9092"}, Kafka: "4.1.2", UpgradeTo: "4.4.0"}, "external"},
		{run.Options{Kafka: "4.1.2", Nodes: 3, UpgradeTo: "4.4.0", Duration: 30e9}, "too short"},
		{run.Options{Kafka: "4.1.2", Nodes: 3, UpgradeTo: "4.4.0", Downgrade: run.DowngradeAfterFinalize}, "Kafka refuses to downgrade from 4.4.0 to 4.1.2 once metadata.version is finalized"},
		{run.Options{Kafka: "4.1.2", Nodes: 3, UpgradeTo: "4.4.0", Downgrade: "sideways"}, `unknown downgrade "sideways"`},
		{run.Options{Kafka: "4.1.2", Nodes: 3, Downgrade: run.DowngradeBeforeFinalize}, "needs --upgrade-to"},
	} {
		if _, err := run.NewPlan(1, bad.o, kinds.Default().Kinds()); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("NewPlan(%+v) = %v, want an error saying %q", bad.o, err, bad.says)
		}
	}
}

// A downgrade before finalizing rolls every node up and back without
// touching the features; after finalizing, only within a release line (the
// levels are the same), else it is refused.
func TestDowngradePlan(t *testing.T) {
	steps := func(o run.Options) []string {
		var out []string
		for _, s := range mustPlan(t, 3, o).UpgradeSteps() {
			out = append(out, string(s.Kind)+" "+s.Version+s.Features)
		}
		return out
	}
	got := steps(run.Options{Kafka: "4.1.2", Nodes: 3, UpgradeTo: "4.4.0", Downgrade: run.DowngradeBeforeFinalize})
	want := []string{"node-upgrade 4.4.0", "node-upgrade 4.4.0", "node-upgrade 4.4.0", "node-upgrade 4.1.2", "node-upgrade 4.1.2", "node-upgrade 4.1.2"}
	if !slices.Equal(got, want) {
		t.Errorf("before finalizing: %q, want %q", got, want)
	}
	got = steps(run.Options{Kafka: "4.1.0", Nodes: 3, UpgradeTo: "4.1.2", Downgrade: run.DowngradeAfterFinalize})
	want = []string{"node-upgrade 4.1.2", "node-upgrade 4.1.2", "node-upgrade 4.1.2", "feature-update group.version=1,metadata.version=27",
		"node-upgrade 4.1.0", "node-upgrade 4.1.0", "node-upgrade 4.1.0"}
	if !slices.Equal(got, want) {
		t.Errorf("after finalizing: %q, want %q", got, want)
	}
	if _, err := run.NewPlan(3, run.Options{Kafka: "4.1.2", Nodes: 3, UpgradeTo: "4.2.1", Downgrade: run.DowngradeAfterFinalize}, kinds.Default().Kinds()); err == nil || !strings.Contains(err.Error(), "snapshot past the downgrade") {
		t.Errorf("4.2.1 back to 4.1.2 after finalizing: %v", err)
	}
	p := mustPlan(t, 3, run.Options{Kafka: "4.1.2", Nodes: 3, UpgradeTo: "4.4.0", Downgrade: run.DowngradeBeforeFinalize})
	if p.FinalKafka() != "4.1.2" || !strings.Contains(p.Command(), "--downgrade before-finalize") {
		t.Errorf("final %s, command %s", p.FinalKafka(), p.Command())
	}
	if f := p.FinalFeatures(); f["metadata.version"] != 27 || f["group.version"] != 1 {
		t.Errorf("features after a downgrade before finalizing: %v", f)
	}
	if f := mustPlan(t, 3, run.Options{Kafka: "4.1.2", Nodes: 3, UpgradeTo: "4.4.0"}).FinalFeatures(); f["metadata.version"] != 33 {
		t.Errorf("features after the upgrade: %v", f)
	}
}
