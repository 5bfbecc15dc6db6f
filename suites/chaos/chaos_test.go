// Package chaos runs seeded fault scenarios against real Kafka clusters
// and requires every checker to hold: members cut off from the brokers
// through their own links, brokers stopped, killed and paused.
package chaos

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/suites/internal/campaign"
)

// The seed CI runs is fixed so that a red build reruns exactly (7 draws
// groupquake's consumer members and a coordinator kill); -chaos.seeds
// picks others, and "random" draws a fresh one (logged with its rerun command).
var seedsFlag = flag.String("chaos.seeds", "7", `seeds to run each scenario with, comma-separated, or "random"`)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(clustertest.Main(m))
}

func seeds(t *testing.T) []uint64 {
	var out []uint64
	for _, s := range strings.Split(*seedsFlag, ",") {
		out = append(out, campaign.Seed(t, "-chaos.seeds", s))
	}
	return out
}

// freshFlag asks TestFresh for that many fresh seeds per version (the
// nightly workflow's hunt; CI runs the fixed matrix instead).
var freshFlag = flag.Int("chaos.fresh", 0, "TestFresh: runs with fresh seeds per tested version, rotating the scenario families; the seed chooses the members")

// freshFromFlag numbers TestFresh's runs from K instead of 0, so that a
// hunt made of several short invocations goes on with the rotation of
// freshRun (the Java mix reaches every family only over 16 runs) instead of
// repeating its first runs.
var freshFromFlag = flag.Int("chaos.fresh-from", 0, "TestFresh: number the runs from K (the rotation of families, high intensity and Java mix goes on from run K)")

// mixFlag makes every TestFresh run use one protocol mix (a name of
// campaign.Mixes, or "java"), e.g. -chaos.mix=mixed to hunt in groups that
// hold both protocols; by default the seed chooses the members.
var mixFlag = flag.String("chaos.mix", "", "TestFresh: run every fresh seed with this protocol mix ("+mixNames()+") instead of the seed's choice")

func mixNames() string {
	var names []string
	for _, m := range append(campaign.Mixes, javaMix) {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// freshMix returns the mix -chaos.mix names, or nil for the seed's choice.
func freshMix(t *testing.T) *campaign.Mix {
	if *mixFlag == "" {
		return nil
	}
	for _, m := range append(campaign.Mixes, javaMix) {
		if m.Name == *mixFlag {
			return &m
		}
	}
	t.Fatalf("-chaos.mix=%q: known mixes are %s", *mixFlag, mixNames())
	return nil
}

// families are the scenario families the matrix covers.
var families = []string{run.ScenarioMemberLinks, run.ScenarioBrokerFaults, run.ScenarioChurn, run.ScenarioCombined}

// matrixWorkload is each run's workload phase: long enough for the normal
// intensity to draw several overlapping faults.
const matrixWorkload = 20 * time.Second

// javaFlag adds TestMatrix's Java mix (make java, nightly). CI's cluster
// tier leaves the Java KafkaConsumer under faults to the nightly, where
// every fourth fresh-seed hunt run also puts it in the group; CI still runs
// it in conformance's TestJavaMembers.
var javaFlag = flag.Bool("chaos.java", false, "TestMatrix: also run the Java KafkaConsumer mix in both fault families on the default version (make java, nightly)")

// javaMix puts both protocols of the Java KafkaConsumer in one group with
// groupquake's members.
var javaMix = campaign.Mix{Name: "java", Kinds: []string{"java-classic-cooperative", "java-consumer", "classic-cooperative", "consumer"}}

// TestMatrix runs every scenario family with every protocol mix (classic
// eager, classic cooperative, consumer, mixed) on one 3-node cluster of the
// default version, and a covering subset (each family once, each mix once)
// on the oldest tested version; and the Java members' mix in the two fault
// families on the default version: every checker must hold in every run.
func TestMatrix(t *testing.T) {
	versions := clustertest.Versions()
	for vi, version := range versions {
		if vi > 0 && vi < len(versions)-1 {
			continue // the default and the oldest
		}
		t.Run(version, func(t *testing.T) {
			c := clustertest.Start(t, cluster.Config{Version: version, Nodes: 3})
			for fi, family := range families {
				for mi, mix := range campaign.Mixes {
					if vi > 0 && mi != fi%len(campaign.Mixes) {
						continue
					}
					for _, seed := range seeds(t) {
						t.Run(fmt.Sprintf("%s/%s/seed-%d", family, mix.Name, seed), func(t *testing.T) {
							campaign.RunOn(t, c, seed, run.Options{
								Scenario: family, Kafka: version, Nodes: 3, Kinds: mix.Kinds, Members: max(3, len(mix.Kinds)),
								Duration: matrixWorkload,
							}, 10*time.Minute)
						})
					}
				}
			}
			if vi > 0 || !*javaFlag {
				return
			}
			// The Java KafkaConsumer (clients/java) in both fault families,
			// beside groupquake's members, on the default version.
			for _, family := range []string{run.ScenarioMemberLinks, run.ScenarioBrokerFaults} {
				for _, seed := range seeds(t) {
					t.Run(fmt.Sprintf("%s/%s/seed-%d", family, javaMix.Name, seed), func(t *testing.T) {
						campaign.RunOn(t, c, seed, run.Options{
							Scenario: family, Kafka: version, Nodes: 3, Kinds: javaMix.Kinds, Members: len(javaMix.Kinds),
							Duration: matrixWorkload,
						}, 10*time.Minute)
					})
				}
			}
		})
	}
}

// TestFresh hunts with fresh seeds: -chaos.fresh=N runs on one 3-node
// cluster of every tested version, the families in turn and the member kinds
// chosen by each seed, except every fourth run, which runs javaMix on a family
// that moves on each round (freshRun); every third run draws its faults at
// the high intensity (20 a minute). Every run
// logs the command that reruns it and keeps its run directory under
// $GROUPQUAKE_RUNS_DIR.
func TestFresh(t *testing.T) {
	if *freshFlag <= 0 {
		t.Skip("-chaos.fresh=N not given: the fresh-seed hunt is the nightly workflow's (make hunt); CI runs TestMatrix's fixed seeds")
	}
	only := freshMix(t)
	for _, version := range clustertest.Versions() {
		t.Run(version, func(t *testing.T) {
			c := clustertest.Start(t, cluster.Config{Version: version, Nodes: 3})
			for k := range *freshFlag {
				i := *freshFromFlag + k
				family, high, java := freshRun(i)
				seed := campaign.RandomSeed()
				o := run.Options{Scenario: family, Kafka: version, Nodes: 3, Duration: 30 * time.Second}
				if high {
					o.Intensity = "high"
				}
				mix := "seed"
				switch {
				case only != nil:
					o.Kinds, o.Members, mix = only.Kinds, max(3, len(only.Kinds)), only.Name
				case java:
					// Every fourth run puts the Java KafkaConsumer in the group
					// (a seed never draws the Java kinds).
					o.Kinds, mix = javaMix.Kinds, javaMix.Name
				}
				t.Run(fmt.Sprintf("%02d-%s/%s%s/seed-%d", i, family, mix, map[bool]string{true: "-high"}[o.Intensity == "high"], seed), func(t *testing.T) {
					campaign.RunOn(t, c, seed, o, 10*time.Minute)
				})
			}
		})
	}
}

// freshRun is what TestFresh's i-th run covers: the families in turn, the
// high intensity every third run, and the Java mix every fourth, on a
// family that moves on by one every round of the families (on the same
// family every time, the Java mix would always be the combined scenario's).
func freshRun(i int) (family string, high, java bool) {
	n := len(families)
	return families[i%n], i%3 == 2, (i+i/n)%n == n-1
}

// TestEmbedded runs every family against the embedded cluster (the
// reference coordinator served in this process) with groupquake's members
// and kgo's, each family with two protocol mixes, the mixed one (the online
// migration path: classic members inside a consumer group, the upgrade and
// downgrade of the group) under the node faults and the churn: the
// coordinator model must hold up under the same faults as a broker.
func TestEmbedded(t *testing.T) {
	if !testing.Short() {
		t.Skip("the embedded runs belong to the unit tier (go test -short), which needs no Docker; the cluster tier runs real Kafka")
	}
	// Two mixes a family; mixed three times, classic-eager once. With
	// broker-faults, seed 7, a 9s pause lets every session run out (the
	// embedded coordinator's clock keeps running); the first member back is
	// a classic one, and its JoinGroup turns the empty consumer group into a
	// new classic group at generation 1, which the next consumer-protocol
	// member upgrades at epoch 1. Kafka does the same (GroupMetadataManager.
	// maybeDeleteEmptyConsumerGroup, ConsumerGroup.fromClassicGroup; the
	// vector coordinator/testdata/consumer/mixed_restart.txt scripts it).
	// The checkers judge the new group's epochs apart from the old one's
	// (harness/check's incarnations; that run is kept as
	// harness/check/testdata/mixed-conversion-seed-7).
	pairs := map[string][2]string{
		run.ScenarioMemberLinks:  {"classic-cooperative", "consumer"},
		run.ScenarioBrokerFaults: {"classic-eager", "mixed"},
		run.ScenarioChurn:        {"mixed", "consumer"},
		run.ScenarioCombined:     {"mixed", "classic-cooperative"},
	}
	for _, family := range families {
		for _, mix := range campaign.Mixes {
			if mix.Name != pairs[family][0] && mix.Name != pairs[family][1] {
				continue
			}
			for _, seed := range seeds(t) {
				t.Run(fmt.Sprintf("%s/%s/seed-%d", family, mix.Name, seed), func(t *testing.T) {
					campaign.Run(t, seed, run.Options{Scenario: family, Embedded: true, Kinds: mix.Kinds, Members: max(3, len(mix.Kinds)), Duration: 20 * time.Second}, 5*time.Minute)
				})
			}
		}
	}
}

// goClientsFlag turns on TestGoClients (the nightly workflow's `make
// goclients`): its cells cost more than CI's chaos budget allows.
var goClientsFlag = flag.Bool("chaos.goclients", false, "TestGoClients: run the Go client kinds (Sarama beside groupquake's classic member, kafka-go alone), one scenario family per kind")

// goClientCells covers each Go client kind (kinds.GoClients) once,
// each in a scenario family of its own, so the four families are each run
// once. Sarama's kinds run two members beside groupquake's classic member,
// whose range assignor the group agrees on. kafka-go runs alone: it cannot
// share a group with a member that reads consumer subscriptions as Kafka
// defines them (docs/clients.md, the first finding), so a mixed cell would
// only ever show that.
var goClientCells = []struct {
	family string
	kinds  []string
}{
	{run.ScenarioMemberLinks, []string{"sarama-range", "sarama-range", "classic"}},
	{run.ScenarioBrokerFaults, []string{"sarama-roundrobin", "sarama-roundrobin", "classic"}},
	{run.ScenarioChurn, []string{"sarama-sticky", "sarama-sticky", "classic"}},
	{run.ScenarioCombined, []string{"kafkago", "kafkago", "kafkago"}},
}

// TestGoClients runs goClientCells on one 3-node cluster of the default
// version with the seeds of -chaos.seeds: every checker must hold. It
// measured 22–27 s a cell, 136 s with the cluster's start (docs/clients.md),
// so it is the nightly's, not CI's (whose chaos matrix has under a minute to
// spare for it).
func TestGoClients(t *testing.T) {
	if !*goClientsFlag {
		t.Skip("-chaos.goclients not given: the Go client cells are the nightly workflow's (make goclients)")
	}
	version := clustertest.Versions()[0]
	c := clustertest.Start(t, cluster.Config{Version: version, Nodes: 3})
	for _, cell := range goClientCells {
		for _, seed := range seeds(t) {
			t.Run(fmt.Sprintf("%s/%s/seed-%d", cell.family, cell.kinds[0], seed), func(t *testing.T) {
				campaign.RunOn(t, c, seed, run.Options{
					Scenario: cell.family, Kafka: version, Nodes: 3, Kinds: cell.kinds,
					Duration: matrixWorkload,
				}, 10*time.Minute)
			})
		}
	}
}
