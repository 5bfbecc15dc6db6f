package results

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
)

// A node upgrade in force 2s–5s, during which t-1 moves from a to b at
// epoch 2 after a 1s stop, as check.MeasureImpact reads it
// (check.TestMeasureImpact), beside a baseline with no rebalance.
func TestWriteUpgrade(t *testing.T) {
	s := time.Second
	step := check.UpgradeStep{Process: "nemesis/0", What: "node-upgrade", Target: "node-1", Params: map[string]string{"version": "4.4.0"},
		Start: 2 * s, Applied: 4 * s, End: 5 * s, OK: true, Effect: "node 1 serves as Kafka 4.4.0"}
	stop := check.Stop{Partition: "t-1", From: 3 * s, To: 4 * s, Duration: s, Epoch: 2, EventIndexes: []int64{3, 4}}
	im := check.Impact{
		Workload:       7 * s,
		Steps:          []check.UpgradeStep{step},
		Rebalances:     []check.Rebalance{{Epoch: 2, At: 4 * s, Event: 4, Step: step.String(), Stops: []check.Stop{stop}}},
		PartitionStops: check.StatsOf([]time.Duration{s}),
	}
	var b bytes.Buffer
	if err := WriteUpgrade(&b, im, check.Impact{Workload: 7 * s}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ok       node-upgrade node-1 → 4.4.0: began 2s, took effect 4s, ended 5s (took 2s)", "epoch 2 first seen at 4s (event 4), during node-upgrade node-1 → 4.4.0: partitions stopped t-1 1s", "baseline (no upgrade): 0 rebalances"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
