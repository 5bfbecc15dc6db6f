// Package chaos runs seeded fault scenarios against real Kafka clusters
// and requires every checker to hold: members cut off from the brokers
// through their own links, brokers stopped, killed and paused.
package chaos

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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
		s = strings.TrimSpace(s)
		if s == "random" {
			out = append(out, campaign.RandomSeed())
			continue
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("-chaos.seeds: %q is not a seed", s)
		}
		out = append(out, n)
	}
	return out
}

// TestMemberLinks cuts and slows single members' links, at times past
// their session, on a 1-node cluster: fenced members must not commit,
// nothing acknowledged may be lost, and the group must settle after the heal.
func TestMemberLinks(t *testing.T) {
	for _, seed := range seeds(t) {
		t.Run("seed-"+strconv.FormatUint(seed, 10), func(t *testing.T) {
			campaign.Run(t, seed, run.Options{Scenario: run.ScenarioMemberLinks, Nodes: 1, Duration: 30 * time.Second}, 10*time.Minute)
		})
	}
}

// TestBrokerFaults stops, kills and pauses brokers of a 3-node cluster,
// one at a time: the coordinator fails over, and acknowledged commits and
// records survive.
func TestBrokerFaults(t *testing.T) {
	for _, seed := range seeds(t) {
		t.Run("seed-"+strconv.FormatUint(seed, 10), func(t *testing.T) {
			campaign.Run(t, seed, run.Options{Scenario: run.ScenarioBrokerFaults, Nodes: 3, Duration: 30 * time.Second}, 15*time.Minute)
		})
	}
}

// TestEmbedded runs both scenarios against the embedded cluster (the
// reference coordinator served in this process) with groupquake's members
// and kgo's, one protocol per group and both protocols in one group (the
// online migration path: classic members inside a consumer group, the
// upgrade and downgrade of the group): the coordinator model must hold up
// under the same faults as a broker.
func TestEmbedded(t *testing.T) {
	for _, kinds := range [][]string{{"classic", "kgo-classic"}, {"consumer", "kgo-consumer"}, {"mixed", "consumer", "classic", "kgo-classic"}} {
		for _, scenario := range []string{run.ScenarioMemberLinks, run.ScenarioBrokerFaults} {
			for _, seed := range seeds(t) {
				t.Run(fmt.Sprintf("%s/%s/seed-%d", kinds[0], scenario, seed), func(t *testing.T) {
					ks := kinds
					if ks[0] == "mixed" {
						ks = ks[1:]
					}
					campaign.Run(t, seed, run.Options{Scenario: scenario, Embedded: true, Kinds: ks, Members: 3, Duration: 20 * time.Second}, 5*time.Minute)
				})
			}
		}
	}
}
