// Package upgrade validates a rolling Kafka upgrade end to end: a 3-node
// cluster of the old release, a group mixing both protocols and several
// member kinds, every node replaced in turn by the new release on its data
// while the group works, then metadata.version and group.version finalized;
// every checker must hold, none skipped. Each rebalance the upgrade caused
// is listed with how long each partition stopped, beside the same workload
// on the old release without an upgrade (upgrade.txt in the run directory).
package upgrade

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/results"
	"github.com/groupquake/groupquake/suites/internal/campaign"
)

var (
	fromFlag = flag.String("upgrade.from", "", "release the cluster starts on (default: the oldest of $GROUPQUAKE_KAFKA_VERSIONS, else "+ciFrom+")")
	toFlag   = flag.String("upgrade.to", "", "release the cluster is upgraded to (default: the newest of $GROUPQUAKE_KAFKA_VERSIONS and "+cluster.DefaultKafkaVersion+")")
	seedFlag = flag.String("upgrade.seed", "13", `seed of the workload's plan, or "random" for a fresh one (logged with the flag that reruns it)`)
	longFlag = flag.Bool("upgrade.long", false, "the nightly length: a 3-minute workload for the upgrade and for its baseline (CI runs the upgrade as planned and a 20s baseline)")
	downFlag = flag.String("upgrade.downgrade", "", "roll the binaries back to -upgrade.from after the upgrade: before-finalize or after-finalize (run.Downgrade*)")
	scenFlag = flag.String("upgrade.scenario", run.ScenarioBaseline, "faults of the nemesis in both runs besides the upgrade (the nightly workflow runs broker-faults too)")
)

// ciFrom is the release CI upgrades from when the tested versions name no
// older one: the oldest of the Makefile's VERSIONS, whose image CI builds.
const ciFrom = "4.1.2"

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(clustertest.Main(m))
}

// pair is the upgrade the test runs: the flags, else the oldest and the
// newest of the tested versions (the Makefile's VERSIONS), with the
// default release as the newest when only one older is tested.
func pair(t *testing.T) (string, string) {
	vs := append(clustertest.Versions(), cluster.DefaultKafkaVersion)
	slices.SortFunc(vs, func(a, b string) int { return int(version.MustParse(a)) - int(version.MustParse(b)) })
	from, to := vs[0], vs[len(vs)-1]
	if from == to {
		from = ciFrom
	}
	if *fromFlag != "" {
		from = *fromFlag
	}
	if *toFlag != "" {
		to = *toFlag
	}
	if _, _, err := version.CheckUpgrade(from, to); err != nil {
		t.Fatalf("-upgrade.from/-upgrade.to: %v", err)
	}
	return from, to
}

// mixed is the group: both protocols, groupquake's members and kgo's.
var mixed = []string{"classic", "consumer", "kgo-classic", "kgo-consumer"}

func TestRollingUpgrade(t *testing.T) {
	from, to := pair(t)
	clustertest.NeedEngine(t)
	// The new release's image is had before the cluster starts, so that a
	// build (minutes, when it is not cached) is not timed as the upgrade.
	if _, err := cluster.EnsureImage(context.Background(), to, cluster.ImageOptions{Logf: t.Logf}); err != nil {
		t.Fatalf("image of Kafka %s: %v", to, err)
	}
	seed := campaign.Seed(t, "-upgrade.seed", *seedFlag)
	c := clustertest.Start(t, cluster.Config{Version: from, Nodes: 3})
	if err := c.UpgradeNode(context.Background(), 1, from); err == nil {
		t.Errorf("upgrading node 1 to the release it runs (%s) was accepted", from)
	}
	o := run.Options{Scenario: *scenFlag, Kafka: from, Nodes: 3, Kinds: mixed, Members: len(mixed), Partitions: 6, Rate: 40}
	baseline := 20 * time.Second
	if *longFlag {
		baseline, o.Duration = 3*time.Minute, 3*time.Minute
	}
	// The impacts are measured inside each subtest: without
	// $GROUPQUAKE_RUNS_DIR a run directory is the subtest's temporary one.
	var bi *check.Impact
	t.Run("baseline-"+from, func(t *testing.T) {
		bo := o
		bo.Duration = baseline
		base := campaign.RunOn(t, c, seed, bo, 5*time.Minute)
		noneSkipped(t, base)
		if base.Dir != "" {
			m := impact(t, base.Dir)
			bi = &m
		}
	})
	name := from + "-to-" + to
	if *downFlag != "" {
		name += "-and-back-" + *downFlag
	}
	t.Run(name, func(t *testing.T) {
		uo := o
		uo.UpgradeTo, uo.Downgrade = to, *downFlag
		upg := campaign.RunOn(t, c, seed, uo, 10*time.Minute)
		noneSkipped(t, upg)
		p, err := run.LoadPlan(filepath.Join(upg.Dir, run.PlanFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range c.Nodes() {
			if n.Version != p.FinalKafka() {
				t.Errorf("node %d runs Kafka %s at the end, want %s", n.ID, n.Version, p.FinalKafka())
			}
			// The broker itself says which release it is: the node was
			// really replaced, not only relabelled.
			logs, err := c.Logs(context.Background(), n.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := "Kafka version: " + p.FinalKafka(); !strings.Contains(logs, want) {
				t.Errorf("node %d did not log %q at the end", n.ID, want)
			}
		}
		fs, err := c.FinalizedFeatures(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for id, levels := range fs {
			for f, want := range p.FinalFeatures() {
				if levels[f] != want {
					t.Errorf("broker %d finalized %s at %d, want %d (all: %v)", id, f, levels[f], want, levels)
				}
			}
		}
		steps := len(p.UpgradeSteps())
		if upg.Dir == "" {
			return
		}
		if bi == nil {
			t.Fatalf("no baseline run to set the upgrade's rebalances beside (the baseline subtest failed before its run directory)")
		}
		ui := impact(t, upg.Dir)
		if len(ui.Steps) != steps || steps == 0 {
			t.Errorf("the upgrade's history holds %d steps, its plan %d: %+v", len(ui.Steps), steps, ui.Steps)
		}
		for _, s := range ui.Steps {
			if !s.OK || s.Applied < 0 || s.End < 0 {
				t.Errorf("upgrade step %s did not complete: %+v", s, s)
			}
		}
		var b strings.Builder
		if err := results.WriteUpgrade(&b, ui, *bi); err != nil {
			t.Fatal(err)
		}
		t.Logf("rolling upgrade %s → %s:\n%s", from, to, b.String())
		if err := os.WriteFile(filepath.Join(upg.Dir, "upgrade.txt"), []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	})
}

// noneSkipped fails t for every checker the run did not judge: an upgrade
// is validated only when every one of them held.
func noneSkipped(t *testing.T, res run.Result) {
	t.Helper()
	if !campaign.AllJudged(t, res.Report) {
		t.Errorf("the run has no verdicts")
	}
}

func impact(t *testing.T, dir string) check.Impact {
	t.Helper()
	h, err := history.Load(filepath.Join(dir, run.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	return check.MeasureImpact(h.Events)
}

var (
	shareFlag     = flag.Bool("upgrade.share", false, "TestShareRollingUpgrade: run a share group through a rolling upgrade (make share-upgrade; needs a JDK and Maven for java-share)")
	shareFromFlag = flag.String("upgrade.share-from", "4.2.1", "TestShareRollingUpgrade: the release the cluster starts on (4.2.0 or later: share groups)")
	shareToFlag   = flag.String("upgrade.share-to", cluster.DefaultKafkaVersion, "TestShareRollingUpgrade: the release the cluster is upgraded to")
)

// TestShareRollingUpgrade runs a share group of the three share member
// kinds (groupquake's, kgo's and Kafka's KafkaShareConsumer, five members
// on two partitions) through a rolling upgrade of a 3-node cluster, by
// default from 4.2.1 to the default release: every node replaced in turn on
// its data while records are acquired and acknowledged, then the features
// finalized. Every share checker must hold, none skipped (the recovery
// oracle replays the share state the old and the new brokers wrote), and
// every node must run the new release at the end.
func TestShareRollingUpgrade(t *testing.T) {
	if !*shareFlag {
		t.Skip("-upgrade.share not given: the share upgrade is make share-upgrade's (several minutes)")
	}
	from, to := *shareFromFlag, *shareToFlag
	clustertest.NeedEngine(t)
	if _, err := cluster.EnsureImage(context.Background(), to, cluster.ImageOptions{Logf: t.Logf}); err != nil {
		t.Fatalf("image of Kafka %s: %v", to, err)
	}
	seed := campaign.Seed(t, "-upgrade.seed", *seedFlag)
	c := clustertest.Start(t, cluster.Config{Version: from, Nodes: 3})
	o := run.Options{Scenario: run.ScenarioBaseline, Kafka: from, UpgradeTo: to, Nodes: 3,
		Kinds: []string{"share", "kgo-share", "java-share"}, Members: 5, Partitions: 2}
	res := campaign.RunOn(t, c, seed, o, 10*time.Minute)
	noneSkipped(t, res)
	n := 0
	for _, v := range res.Report.Verdicts {
		if strings.HasPrefix(v.Name, "Share") {
			n++
		}
	}
	if n < 6 {
		t.Errorf("%d share checkers judged the upgrade, want every one of them", n)
	}
	p, err := run.LoadPlan(filepath.Join(res.Dir, run.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	if p.FinalKafka() != to || len(p.UpgradeSteps()) == 0 {
		t.Fatalf("the plan upgrades to %s in %d steps, want %s", p.FinalKafka(), len(p.UpgradeSteps()), to)
	}
	for _, nd := range c.Nodes() {
		if nd.Version != to {
			t.Errorf("node %d runs Kafka %s at the end, want %s", nd.ID, nd.Version, to)
		}
	}
	ui := impact(t, res.Dir)
	if len(ui.Steps) != len(p.UpgradeSteps()) {
		t.Errorf("the history holds %d upgrade steps, the plan %d", len(ui.Steps), len(p.UpgradeSteps()))
	}
	for _, s := range ui.Steps {
		if !s.OK {
			t.Errorf("upgrade step %s did not complete: %+v", s, s)
		}
	}
}
