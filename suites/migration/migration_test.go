// Package migration validates an online migration of a live group between
// the group protocols: a group of classic members (groupquake's eager and
// cooperative members, kgo's) has its members replaced one at a time by
// consumer-protocol members (groupquake's, kgo's), so that it turns mixed,
// then a consumer group, and then has those replaced by classic members
// again, while records are produced and consumed; and the other way round
// (consumer → classic → consumer), which meets the refusals a policy makes
// of classic members; under each group.consumer.migration.policy. What the policy refuses must be refused
// (with the error Kafka gives, run.ExpectMigration), what it allows must
// happen, and every checker must hold, none skipped,
// RecoveredStateMatchesLog included.
//
// The policy is a static broker setting, so each policy needs a cluster of
// its own; both ways round run on it, one after the other, each with its own
// group. CI's cluster tier runs one: -migration.policy (bidirectional: every
// conversion both ways) on the newest tested release; -migration.all (the
// nightly's) runs every policy on every tested release
// ($GROUPQUAKE_KAFKA_VERSIONS, else coordinator/version's pinned pair). The
// unit tier (-short) runs every policy on both pinned releases against the
// embedded cluster.
package migration

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/suites/internal/campaign"
)

var (
	allFlag    = flag.Bool("migration.all", false, "every migration policy on every tested release, each on a cluster of its own (the nightly's matrix); CI runs -migration.policy on the newest tested release")
	policyFlag = flag.String("migration.policy", "bidirectional", "the policy CI's cluster tier runs without -migration.all")
	seedFlag   = flag.Uint64("migration.seed", 13, "seed of the migration's plan")
	legFlag    = flag.Int("migration.members", 2, "members of the group (each replaced twice); 2 already bring in every classic and consumer kind of groupquake and kgo")
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The embedded runs wait on the group's timers and use little CPU (16
	// runs took 7s of CPU in 190s one or two at a time): run them 8 at a
	// time unless -test.parallel says otherwise.
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", "8"); err != nil {
			panic(err)
		}
	}
	os.Exit(clustertest.Main(m))
}

// froms are the protocols a migration starts from and returns to.
var froms = []string{history.ProtocolClassic, history.ProtocolConsumer}

// options is the plan of one migration on release kafka under policy.
func options(kafka, policy, from string, members int) run.Options {
	return run.Options{Scenario: run.ScenarioMigration, Kafka: kafka, Nodes: 1, MigrationPolicy: policy, MigrationFrom: from, Members: members, Partitions: 6, Rate: 30}
}

// TestMigration runs the migration on real Kafka: one cluster per (release,
// policy).
func TestMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real-cluster test not run (TestMigrationEmbedded runs the same plans against the embedded cluster)")
	}
	if !*allFlag && !slices.Contains(run.MigrationPolicies(), *policyFlag) {
		t.Fatalf("-migration.policy %q: want one of %v", *policyFlag, run.MigrationPolicies())
	}
	clustertest.NeedEngine(t)
	versions := clustertest.Versions()
	policies := run.MigrationPolicies()
	if !*allFlag {
		versions, policies = []string{newest(versions)}, []string{*policyFlag}
	}
	for _, v := range versions {
		for _, pol := range policies {
			t.Run(v+"/"+pol, func(t *testing.T) {
				c := clustertest.Start(t, cluster.Config{Version: v, Nodes: 1, Settings: map[string]string{"group.consumer.migration.policy": pol}})
				for _, from := range froms {
					t.Run("from-"+from, func(t *testing.T) {
						res := campaign.RunOn(t, c, *seedFlag, options(v, pol, from, *legFlag), 5*time.Minute)
						judge(t, res, v, pol, from, *legFlag)
					})
				}
			})
		}
	}
}

// TestMigrationEmbedded runs the same plans against the embedded cluster,
// every policy on both pinned releases: the unit tier's.
func TestMigrationEmbedded(t *testing.T) {
	if !testing.Short() {
		t.Skip("the embedded runs belong to the unit tier (go test -short), which needs no Docker; the cluster tier runs real Kafka")
	}
	for _, pv := range version.Pinned() {
		v := pv.String()
		for _, pol := range run.MigrationPolicies() {
			for _, from := range froms {
				t.Run(v+"/"+pol+"/from-"+from, func(t *testing.T) {
					t.Parallel()
					o := options(v, pol, from, *legFlag)
					o.Embedded = true
					res := campaign.Run(t, *seedFlag, o, 3*time.Minute)
					judge(t, res, v, pol, from, *legFlag)
				})
			}
		}
	}
}

// judge fails t unless every checker held and none was skipped, and the
// run's replacements and the group's type at the end are what Kafka does
// under the policy.
func judge(t *testing.T, res run.Result, kafka, policy, from string, legSize int) {
	t.Helper()
	if len(res.Report.Verdicts) == 0 {
		t.Fatalf("the run has no verdicts")
	}
	for _, v := range res.Report.Verdicts {
		if v.Skipped != "" {
			t.Errorf("checker %s was skipped: %s", v.Name, v.Skipped)
		}
	}
	want, err := run.ExpectMigration(policy, kafka, from, legSize)
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.Load(filepath.Join(res.Dir, run.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	obs, err := history.LoadObservations(filepath.Join(res.Dir, run.ObservationsFile))
	if err != nil {
		t.Fatal(err)
	}
	steps := run.MigrationSteps(h.Events)
	for i, s := range steps {
		t.Logf("step %d: %s by %s: %s", i+1, s.Out, s.In, s.Effect)
	}
	// Every step ends with a checkpoint that RecoveredStateMatchesLog
	// judges: the replay of the records against the group described beside
	// them, after every step and not only at the end.
	var labels []string
	for _, c := range obs.Checkpoints {
		labels = append(labels, c.Label)
	}
	for _, s := range steps {
		if !slices.Contains(labels, "after-"+s.In) {
			t.Errorf("step %s by %s left no checkpoint (checkpoints %v): %s", s.Out, s.In, labels, s.Effect)
		}
	}
	for _, d := range run.CheckMigration(steps, want, obs.Final.Group) {
		t.Errorf("policy %s on Kafka %s, from %s: %s", policy, kafka, from, d)
	}
	if t.Failed() {
		t.Logf("expected: refusals %q, a %s group at the end (%s)", want.Steps, want.Final, want.Why)
	}
}

// newest is the latest of vs and the default release.
func newest(vs []string) string {
	all := append(slices.Clone(vs), cluster.DefaultKafkaVersion)
	slices.SortFunc(all, func(a, b string) int { return int(version.MustParse(a)) - int(version.MustParse(b)) })
	return all[len(all)-1]
}
