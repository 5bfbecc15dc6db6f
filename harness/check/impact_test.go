package check

import (
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// upgradeSample: a node upgrade in force 2s–5s, during which t-1 moves from
// a to b at epoch 2 after a 1s stop; the warm-up's epoch 1 is not a
// rebalance of the workload, and nothing after the final phase counts.
func upgradeSample() []history.Event {
	s := time.Second
	up := history.Fault{What: "node-upgrade", Target: []string{"node-1"}, Params: map[string]string{"version": "4.4.0"}}
	started := up
	started.Effect = "node 1 serves as Kafka 4.4.0"
	return []history.Event{
		mev(0, 0, history.Info, "a", history.FAssigned, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0, 1)}),
		mev(1, 1*s, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseWorkload}),
		mev(2, 2*s, history.Invoke, "nemesis/0", history.FFaultStart, up),
		mev(3, 3*s, history.Info, "a", history.FRevoked, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 1)}),
		mev(4, 4*s, history.Info, "b", history.FAssigned, history.Assignment{Member: "b", Epoch: 2, Partitions: history.TPs("t", 1)}),
		mev(5, 4*s, history.OK, "nemesis/0", history.FFaultStart, started),
		mev(6, 5*s, history.Invoke, "nemesis/0", history.FFaultStop, up),
		mev(7, 5*s, history.OK, "nemesis/0", history.FFaultStop, up),
		mev(8, 8*s, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseHeal}),
		mev(9, 9*s, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseFinal}),
		mev(10, 10*s, history.Info, "b", history.FAssigned, history.Assignment{Member: "b", Epoch: 3, Partitions: history.TPs("t", 0)}),
	}
}

func TestMeasureImpact(t *testing.T) {
	s := time.Second
	im := MeasureImpact(upgradeSample())
	if len(im.Steps) != 1 || !im.Steps[0].OK || im.Steps[0].Start != 2*s || im.Steps[0].Applied != 4*s || im.Steps[0].End != 5*s {
		t.Fatalf("steps %+v", im.Steps)
	}
	if im.Workload != 7*s {
		t.Errorf("workload %s, want 7s", im.Workload)
	}
	if len(im.Rebalances) != 1 {
		t.Fatalf("rebalances %+v, want epoch 2 only", im.Rebalances)
	}
	r := im.Rebalances[0]
	if r.Epoch != 2 || r.At != 4*s || r.Step != "node-upgrade node-1 → 4.4.0" || len(r.Stops) != 1 || r.Stops[0].Duration != s {
		t.Errorf("rebalance %+v", r)
	}
	if im.PartitionStops.Count != 1 || im.PartitionStops.Max != s {
		t.Errorf("partition stops %+v", im.PartitionStops)
	}
	// A history with no workload phase has no impact to measure.
	if im := MeasureImpact(upgradeSample()[2:]); im.Workload != 0 || im.Steps != nil || im.Rebalances != nil {
		t.Errorf("MeasureImpact without a workload = %+v", im)
	}
}

// Impact is upgrade.json's "upgrade" and "baseline": its JSON is pinned
// byte for byte.
func TestImpactJSON(t *testing.T) {
	mustJSON(t, MeasureImpact(upgradeSample()), `{"workload":7000000000,"steps":[{"process":"nemesis/0","what":"node-upgrade","target":"node-1","params":{"version":"4.4.0"},"start":2000000000,"applied":4000000000,"end":5000000000,"ok":true,"effect":"node 1 serves as Kafka 4.4.0"}],"rebalances":[{"epoch":2,"at":4000000000,"event":4,"step":"node-upgrade node-1 → 4.4.0","stops":[{"partition":"t-1","from":3000000000,"to":4000000000,"duration":1000000000,"epoch":2,"event_indexes":[3,4]}]}],"partition_stops":{"count":1,"total":1000000000,"mean":1000000000,"p50":1000000000,"p99":1000000000,"max":1000000000}}`)
	mustJSON(t, Impact{}, `{"workload":0,"rebalances":null,"partition_stops":{"count":0,"total":0,"mean":0,"p50":0,"p99":0,"max":0}}`)
}
