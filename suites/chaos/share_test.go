package chaos

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/suites/internal/campaign"
)

// TestShareChurn runs a share group under churn on one 1-node cluster of
// the default release (CI's share run under faults): four of
// groupquake's share members on two partitions while members crash
// holding acquired records (their locks lapse and the records come back at
// a higher delivery count), restart, leave, join late, stall and freeze
// (their acknowledgements arrive after their locks lapsed). Every share
// checker must hold. The fixed seed (-chaos.share-seeds) draws a restart,
// a stall, a crash and a freeze.
func TestShareChurn(t *testing.T) {
	v := version.Default.String()
	c := clustertest.Start(t, cluster.Config{Version: v, Nodes: 1})
	for _, seed := range shareSeeds(t) {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			campaign.RunOn(t, c, seed, run.Options{
				Scenario: run.ScenarioChurn, Kafka: v, Nodes: 1, Kinds: []string{"share"}, Members: 4, Partitions: 2,
				Duration: 25 * time.Second,
			}, 5*time.Minute)
		})
	}
}

var shareSeedsFlag = flag.String("chaos.share-seeds", "20", "TestShareChurn: seeds to run, comma-separated")

func shareSeeds(t *testing.T) []uint64 {
	var out []uint64
	for _, s := range strings.Split(*shareSeedsFlag, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			t.Fatalf("-chaos.share-seeds: %q is not a seed", s)
		}
		out = append(out, n)
	}
	return out
}
