package run_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

func shareKinds() map[string]string {
	return shareRegistry().Kinds()
}

func shareRegistry() kinds.Registry {
	return kinds.Default().WithBroken([]string{"share", "kgo-share", "broken-share-ack-not-sent", "java-share"})
}

// TestSharePlans: --kinds share makes a share group's plan on 4.2+ for
// the baseline, member-links, broker-faults, churn and combined scenarios
// (no static ids, the cluster's share settings recorded for the checkers,
// one producer per partition, a longer workload under faults); it is
// refused, saying why, on 4.1.2 and 4.0.0, on the embedded cluster, mixed
// with consumer-group kinds, in a migration and in an upgrade. A seed
// never draws a share kind.
func TestSharePlans(t *testing.T) {
	for _, sc := range []string{run.ScenarioBaseline, run.ScenarioMemberLinks, run.ScenarioBrokerFaults, run.ScenarioChurn, run.ScenarioCombined} {
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
		if len(p.Producers) != 2 || len(p.Producers[1].Partitions) != 1 || p.Producers[1].Partitions[0] != 1 {
			t.Errorf("%s: producers %+v, want one per partition", sc, p.Producers)
		}
		if sc == run.ScenarioBrokerFaults && p.Workload < time.Minute {
			t.Errorf("%s: a workload of %s leaves node faults no room", sc, p.Workload)
		}
	}
	for _, c := range []struct {
		o    run.Options
		want string
	}{
		{run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.1.2", Kinds: []string{"share"}}, "preview"},
		{run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.1.2", Kinds: []string{"java-share"}}, "share members need Kafka 4.2.0 or later"},
		{run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.4.0", KafkaClients: "4.1.2", Kinds: []string{"share", "java-share"}}, "java-share runs the KafkaShareConsumer of kafka-clients 4.1.2: share members need Kafka 4.2.0 or later"},
		{run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.0.0", Kinds: []string{"share"}}, "early access"},
		{run.Options{Scenario: run.ScenarioBaseline, Embedded: true, Kafka: "4.1.2", Kinds: []string{"share"}}, "preview"},
		{run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.4.0", Kinds: []string{"share", "consumer"}}, "never both"},
		{run.Options{Scenario: run.ScenarioMigration, Kafka: "4.4.0", Kinds: []string{"share"}, Members: 3}, "migration"},
		{run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.1.2", UpgradeTo: "4.4.0", Kinds: []string{"share"}, Members: 3}, "preview"},
	} {
		_, err := run.NewPlan(7, c.o, shareKinds())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one saying %q", c.o, err, c.want)
		}
	}
	// The embedded cluster serves share groups (its share-partition leader
	// is coordinator/wire's) at 4.2+.
	for _, v := range []string{"4.2.1", "4.4.0"} {
		if p, err := run.NewPlan(7, run.Options{Scenario: run.ScenarioMemberLinks, Embedded: true, Kafka: v, Kinds: []string{"share", "kgo-share"}, Members: 3}, shareKinds()); err != nil || !p.IsShare() {
			t.Errorf("embedded share run on %s: %v", v, err)
		}
	}
	// An upgrade of a share group's cluster from 4.2.1 to 4.4.0: every node
	// replaced, then the features finalized, inside a workload long enough.
	up, err := run.NewPlan(7, run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.2.1", UpgradeTo: "4.4.0", Nodes: 3, Kinds: []string{"share", "java-share"}, Members: 4, Partitions: 2}, shareKinds())
	if err != nil {
		t.Fatalf("share upgrade 4.2.1 -> 4.4.0: %v", err)
	}
	if steps := up.UpgradeSteps(); len(steps) != 4 || up.FinalKafka() != "4.4.0" || !up.IsShare() {
		t.Errorf("share upgrade plan: %d steps to %s (share %v), want 3 node upgrades and a feature update to 4.4.0", len(steps), up.FinalKafka(), up.IsShare())
	}
	for seed := range uint64(50) {
		p, err := run.NewPlan(seed, run.Options{Scenario: run.ScenarioBaseline, Kafka: "4.4.0"}, kinds.Default().Kinds())
		if err != nil {
			t.Fatal(err)
		}
		if p.IsShare() {
			t.Fatalf("seed %d drew share members", seed)
		}
	}
}

// TestShareFaultsHitEveryRole: the node faults of share runs on three
// nodes reach the group coordinator, the share coordinator of a partition
// and the leader of a partition, each over the topic's partitions, and
// churn reaches every kind; a share plan's faults all validate.
func TestShareFaultsHitEveryRole(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(40) {
		for _, sc := range []string{run.ScenarioBrokerFaults, run.ScenarioChurn} {
			p, err := run.NewPlan(seed, run.Options{Scenario: sc, Kafka: "4.4.0", Nodes: 3, Kinds: []string{"share"}, Members: 4, Partitions: 2}, shareKinds())
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range p.Faults {
				seen[string(f.Kind)]++
				switch f.Node {
				case faults.Coordinator:
					seen["coordinator"]++
				case faults.ShareCoordinator:
					seen["share-coordinator"]++
				case faults.PartitionLeader:
					seen["leader"]++
				}
				if f.Trigger != faults.AtTime {
					t.Errorf("share fault %v waits for a rebalance a share group never has", f)
				}
			}
		}
	}
	for _, want := range []string{"coordinator", "share-coordinator", "leader", "member-crash", "member-stall", "member-freeze", "member-leave", "member-join", "member-restart"} {
		if seen[want] == 0 {
			t.Errorf("no %s in 40 seeds of share plans (seen %v)", want, seen)
		}
	}
}

// TestEmbeddedShareRun runs share groups on the embedded cluster, whose
// share-partition leader is coordinator/wire's: groupquake's share member
// and kgo's under member-link faults, every share checker holding and none
// skipped; and a member that leaves its accepts out of its requests,
// caught by ShareAckedNotRedelivered (the leader delivers them again).
func TestEmbeddedShareRun(t *testing.T) {
	for _, c := range []struct {
		name     string
		seed     uint64
		scenario string
		kinds    []string
		caught   string
	}{
		{"share+kgo-share", 3, run.ScenarioMemberLinks, []string{"share", "kgo-share"}, ""},
		{"broken-share-ack-not-sent", 7, run.ScenarioBaseline, []string{"share", "broken-share-ack-not-sent"}, "ShareAckedNotRedelivered"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := run.NewPlan(c.seed, run.Options{Scenario: c.scenario, Embedded: true, Kafka: "4.4.0", Kinds: c.kinds,
				Members: 2, Duration: 10 * time.Second}, shareKinds())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := run.Run(ctx, run.Config{Plan: p, Dir: runDir(t, c.name), Registry: shareRegistry(), Logf: t.Logf})
			if err != nil {
				t.Fatalf("run: %v (notes %v)", err, res.Notes)
			}
			n := 0
			for _, v := range res.Report.Verdicts {
				if !strings.HasPrefix(v.Name, "Share") {
					continue
				}
				n++
				switch {
				case v.Skipped != "":
					t.Errorf("%s skipped: %s", v.Name, v.Skipped)
				case v.Name == c.caught && v.Holds:
					t.Errorf("%s holds; the broken member should fail it", v.Name)
				case c.caught == "" && !v.Holds:
					t.Errorf("%s: %d violations, first %+v", v.Name, len(v.Violations), v.Violations[0])
				}
			}
			if n != 6 {
				t.Errorf("%d share checkers judged the run, want 6", n)
			}
		})
	}
}
