package run_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/faults"
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
		{run.Options{Kafka: "4.4.0", Nodes: 3, UpgradeTo: "4.1.2"}, "older than --from"},
		{run.Options{Kafka: "4.1.2", Nodes: 3, UpgradeTo: "4.9.0"}, "unknown Kafka version"},
		{run.Options{Kafka: "4.1.2", Embedded: true, UpgradeTo: "4.4.0"}, "embedded"},
		{run.Options{Bootstrap: []string{"h:9092"}, Kafka: "4.1.2", UpgradeTo: "4.4.0"}, "external"},
		{run.Options{Kafka: "4.1.2", Nodes: 3, UpgradeTo: "4.4.0", Duration: 30e9}, "too short"},
	} {
		if _, err := run.NewPlan(1, bad.o, run.DefaultRegistry().Kinds()); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("NewPlan(%+v) = %v, want an error saying %q", bad.o, err, bad.says)
		}
	}
}
