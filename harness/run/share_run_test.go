package run_test

import (
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
)

func shareKinds() map[string]string {
	return run.DefaultRegistry().WithBroken([]string{"share", "broken-share-ack-after-lock"}).Kinds()
}

// TestSharePlans: --kinds share makes a share group's plan on 4.2+ for
// the baseline, member-links and broker-faults scenarios (no static ids,
// the cluster's share settings recorded for the checkers); it is refused,
// saying why, on 4.1.2 and 4.0.0, on the embedded cluster, mixed with
// consumer-group kinds, and with churn. A seed never draws a share kind.
func TestSharePlans(t *testing.T) {
	for _, sc := range []string{run.ScenarioBaseline, run.ScenarioMemberLinks, run.ScenarioBrokerFaults} {
		p, err := run.NewPlan(7, run.Options{Scenario: sc, Kafka: "4.4.0", Nodes: 3, Kinds: []string{"share"}, Members: 5, Partitions: 2}, shareKinds())
		if err != nil {
			t.Fatalf("%s: %v", sc, err)
		}
		if !p.IsShare() || p.Protocol() != history.ProtocolShare || len(p.Members) != 5 {
			t.Errorf("%s: plan is not a share group of 5: %+v", sc, p.Members)
		}
		for _, m := range p.Members {
			if m.InstanceID != "" {
				t.Errorf("%s: share member %s got a static id", sc, m.Name)
			}
		}
		if c := p.Check(); c.Share == nil || c.Share.DeliveryCountLimit < 2 || c.Share.RecordLockMs <= 0 {
			t.Errorf("%s: checkers get no share settings: %+v", sc, c.Share)
		}
		if sc != run.ScenarioBaseline && len(p.Faults) == 0 {
			t.Errorf("%s: no faults drawn", sc)
		}
	}
	for _, c := range []struct {
		o    run.Options
		want string
	}{
		{run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.1.2", Kinds: []string{"share"}}, "preview"},
		{run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.0.0", Kinds: []string{"share"}}, "early access"},
		{run.Options{Scenario: run.ScenarioBaseline, Embedded: true, Kinds: []string{"share"}}, "embedded"},
		{run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.4.0", Kinds: []string{"share", "consumer"}}, "never both"},
		{run.Options{Scenario: run.ScenarioChurn, Kafka: "4.4.0", Kinds: []string{"share"}, Members: 3}, "node and link faults only"},
	} {
		_, err := run.NewPlan(7, c.o, shareKinds())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one saying %q", c.o, err, c.want)
		}
	}
	for seed := range uint64(50) {
		p, err := run.NewPlan(seed, run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.4.0"}, run.DefaultRegistry().Kinds())
		if err != nil {
			t.Fatal(err)
		}
		if p.IsShare() {
			t.Fatalf("seed %d drew share members", seed)
		}
	}
}
