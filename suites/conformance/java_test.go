package conformance

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/suites/internal/campaign"
)

// javaGroups are the groups TestJavaMembers runs: the official Java
// KafkaConsumer (clients/java, kafka-clients of the cluster's version)
// beside groupquake's members and kgo's, in one group, in each rebalance
// protocol and mixed. every: also on the other tested versions; ci: in
// the CI tier, on the default version (the mixed group holds the
// cooperative and the consumer-protocol Java kinds, and the chaos matrix
// runs both under faults); -java.all runs every group everywhere.
var javaGroups = []struct {
	name      string
	kinds     []string
	every, ci bool
}{
	{"classic-eager", []string{"java-classic", "classic", "java-classic"}, false, true},
	{"classic-cooperative", []string{"java-classic-cooperative", "classic-cooperative", "kgo-classic"}, false, false},
	{"consumer", []string{"java-consumer", "consumer", "kgo-consumer", "java-consumer"}, false, false},
	{"mixed", []string{"java-classic-cooperative", "java-consumer", "classic-cooperative", "consumer"}, true, true},
}

var javaAll = flag.Bool("java.all", false, "TestJavaMembers: run every Java group on every tested version (CI runs a covering subset)")

// TestJavaMembers runs the seed's baseline workload with Java members in
// the group on a real one-node cluster of every tested version: every
// checker must hold, none may be skipped, and every Java member must have
// owned partitions, consumed records and had a commit accepted, so the
// checkers judged it rather than passed over it.
func TestJavaMembers(t *testing.T) {
	for vi, version := range clustertest.Versions() {
		t.Run(version, func(t *testing.T) {
			c := sharedCluster(t, version)
			for _, g := range javaGroups {
				if !*javaAll && ((vi > 0 && !g.every) || !g.ci) {
					continue
				}
				t.Run(g.name, func(t *testing.T) {
					res := campaign.RunOn(t, c, 1, run.Options{
						Scenario: run.ScenarioBaseline, Kafka: version, Nodes: 1, Kinds: g.kinds, Partitions: 6,
						Duration: 12 * time.Second,
					}, 5*time.Minute)
					for _, v := range res.Report.Verdicts {
						if v.Skipped != "" {
							t.Errorf("%s was skipped (%s): a Java member's run must be judged by every checker", v.Name, v.Skipped)
						}
					}
					javaMembersTookPart(t, res.Dir)
				})
			}
		})
	}
}

// javaMembersTookPart checks that each Java member of the run in dir owned
// partitions, consumed, and had a commit answered without error.
func javaMembersTookPart(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, run.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	var p run.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	loaded, err := history.Load(filepath.Join(dir, run.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ assigned, consumed, committed int }
	by := map[string]*seen{}
	for _, m := range p.Members {
		if kinds.IsJavaKind(m.Kind) {
			by[m.Name] = &seen{}
		}
	}
	if len(by) == 0 {
		t.Fatalf("the plan has no Java member: %+v", p.Members)
	}
	for _, e := range loaded.Events {
		switch v := e.Value.(type) {
		case history.Assignment:
			if s := by[v.Member]; s != nil && e.F == history.FAssigned {
				s.assigned++
			}
		case history.Consume:
			if s := by[v.Member]; s != nil {
				s.consumed++
			}
		case history.Commit:
			if s := by[v.Member]; s != nil && e.Type == history.OK && v.Error == "" {
				s.committed++
			}
		}
	}
	for name, s := range by {
		if s.assigned == 0 || s.consumed == 0 || s.committed == 0 {
			t.Errorf("Java member %s: %d assignments, %d records consumed, %d commits accepted; it must have taken part", name, s.assigned, s.consumed, s.committed)
		} else {
			t.Logf("Java member %s: %d assignments, %d records consumed, %d commits accepted", name, s.assigned, s.consumed, s.committed)
		}
	}
}
