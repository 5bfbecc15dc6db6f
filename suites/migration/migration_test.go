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
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/faults"
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
	staticFlag = flag.Bool("migration.static", false, "static members: each replacement is a rolling bounce of one group.instance.id into the other protocol (the nightly's); CI runs dynamic members")
	scenFlag   = flag.String("migration.scenario", run.ScenarioBaseline, "faults of the nemesis during the migration: "+strings.Join(slices.Sorted(maps.Keys(scenarioFaults)), ", ")+" (the nightly workflow runs broker-faults too)")
	kafkaFlag  = flag.String("migration.kafka", "", "releases to run without -migration.all, comma-separated (default: the newest tested release)")
	nodesFlag  = flag.Int("migration.nodes", 1, "nodes of each real cluster: 1, or 3 for broker faults that move the coordinator instead of stopping the whole cluster")
)

// scenarioFaults are the fault kinds the nemesis draws beside a
// migration's steps, per -migration.scenario: the kinds of run's scenario
// of that name (run.Options.Faults; the migration's plan keeps its own
// steps and draws these on the same workload).
var scenarioFaults = map[string][]faults.Kind{
	run.ScenarioBaseline:     nil,
	run.ScenarioBrokerFaults: {faults.NodeStop, faults.NodeKill, faults.NodePause},
	run.ScenarioMemberLinks:  {faults.LinkCut, faults.LinkLatency, faults.LinkHole, faults.LinkReset},
}

// variant is what the flags add to every migration of a run of the suite.
type variant struct {
	static   bool
	scenario string
	nodes    int
}

// flagged is the variant the flags ask for.
func flagged(t *testing.T) variant {
	if _, ok := scenarioFaults[*scenFlag]; !ok {
		t.Fatalf("-migration.scenario %q: want one of %s", *scenFlag, strings.Join(slices.Sorted(maps.Keys(scenarioFaults)), ", "))
	}
	if *nodesFlag != 1 && *nodesFlag != 3 {
		t.Fatalf("-migration.nodes %d: a cluster of 1 or 3 nodes", *nodesFlag)
	}
	return variant{static: *staticFlag, scenario: *scenFlag, nodes: *nodesFlag}
}

// name is the variant's part of a subtest's name ("" for CI's).
func (v variant) name() string {
	var parts []string
	if v.static {
		parts = append(parts, "static")
	}
	if v.scenario != run.ScenarioBaseline {
		parts = append(parts, v.scenario)
	}
	if v.nodes > 1 {
		parts = append(parts, strconv.Itoa(v.nodes)+"-nodes")
	}
	if len(parts) == 0 {
		return ""
	}
	return "/" + strings.Join(parts, "-")
}

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
func options(kafka, policy, from string, members int, v variant) run.Options {
	return run.Options{Scenario: run.ScenarioMigration, Kafka: kafka, Nodes: max(1, v.nodes), MigrationPolicy: policy, MigrationFrom: from, Members: members, Partitions: 6, Rate: 30,
		MigrationStatic: v.static, Faults: slices.Clone(scenarioFaults[v.scenario])}
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
	va := flagged(t)
	clustertest.NeedEngine(t)
	versions := clustertest.Versions()
	policies := run.MigrationPolicies()
	if !*allFlag {
		versions, policies = []string{newest(versions)}, []string{*policyFlag}
		if *kafkaFlag != "" {
			versions = strings.Split(*kafkaFlag, ",")
			for _, v := range versions {
				if _, err := version.Parse(v); err != nil {
					t.Fatalf("-migration.kafka: %v", err)
				}
			}
		}
	}
	for _, v := range versions {
		for _, pol := range policies {
			t.Run(v+"/"+pol+va.name(), func(t *testing.T) {
				c := clustertest.Start(t, cluster.Config{Version: v, Nodes: va.nodes, Settings: map[string]string{"group.consumer.migration.policy": pol}})
				for _, from := range froms {
					t.Run("from-"+from, func(t *testing.T) {
						res := campaign.RunOn(t, c, *seedFlag, options(v, pol, from, *legFlag, va), 5*time.Minute)
						judge(t, res, v, pol, from, *legFlag, va.static)
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
	va := flagged(t)
	va.nodes = 1
	for _, pv := range version.Pinned() {
		v := pv.String()
		for _, pol := range run.MigrationPolicies() {
			for _, from := range froms {
				t.Run(v+"/"+pol+va.name()+"/from-"+from, func(t *testing.T) {
					t.Parallel()
					o := options(v, pol, from, *legFlag, va)
					o.Embedded = true
					res := campaign.Run(t, *seedFlag, o, 3*time.Minute)
					judge(t, res, v, pol, from, *legFlag, va.static)
				})
			}
		}
	}
}

// judge fails t unless every checker held and none was skipped, and the
// run's replacements and the group's type at the end are what Kafka does
// under the policy.
func judge(t *testing.T, res run.Result, kafka, policy, from string, legSize int, static bool) {
	t.Helper()
	if !campaign.AllJudged(t, res.Report) {
		t.Fatalf("the run has no verdicts")
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
	if static {
		// Each step was a bounce: a newcomer taken in took the place of
		// the static member it replaced, and the group's members at the
		// end are static.
		for i, s := range steps {
			if s.Done && s.Refused == "" && !strings.Contains(s.Effect, "took the place of static member ") {
				t.Errorf("step %d (%s by %s) was not a static member's bounce: %s", i+1, s.Out, s.In, s.Effect)
			}
		}
		if g := obs.Final.Group; g != nil {
			for _, m := range g.Members {
				if m.InstanceID == "" {
					t.Errorf("member %s of the group at the end has no instance id: a static migration's members are static", m.MemberID)
				}
			}
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
