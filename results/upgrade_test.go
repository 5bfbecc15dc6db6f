package results

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// A node upgrade in force 2s–5s, during which t-1 moves from a to b at
// epoch 2 after a 1s stop; the warm-up's epoch 1 is not a rebalance of the
// workload, and nothing after the final phase counts.
func TestMeasureImpact(t *testing.T) {
	s := time.Second
	up := history.Fault{What: "node-upgrade", Target: []string{"node-1"}, Params: map[string]string{"version": "4.4.0"}}
	started := up
	started.Effect = "node 1 serves as Kafka 4.4.0"
	evs := []history.Event{
		ev(0, 0, history.Info, "a", history.FAssigned, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0, 1)}),
		ev(1, 1*s, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseWorkload}),
		ev(2, 2*s, history.Invoke, "nemesis/0", history.FFaultStart, up),
		ev(3, 3*s, history.Info, "a", history.FRevoked, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 1)}),
		ev(4, 4*s, history.Info, "b", history.FAssigned, history.Assignment{Member: "b", Epoch: 2, Partitions: history.TPs("t", 1)}),
		ev(5, 4*s, history.OK, "nemesis/0", history.FFaultStart, started),
		ev(6, 5*s, history.Invoke, "nemesis/0", history.FFaultStop, up),
		ev(7, 5*s, history.OK, "nemesis/0", history.FFaultStop, up),
		ev(8, 8*s, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseHeal}),
		ev(9, 9*s, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseFinal}),
		ev(10, 10*s, history.Info, "b", history.FAssigned, history.Assignment{Member: "b", Epoch: 3, Partitions: history.TPs("t", 0)}),
	}
	im := MeasureImpact(evs)
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
	var b bytes.Buffer
	if err := WriteUpgrade(&b, im, Impact{Workload: 7 * s}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ok       node-upgrade node-1 → 4.4.0: began 2s, took effect 4s, ended 5s (took 2s)", "epoch 2 first seen at 4s (event 4), during node-upgrade node-1 → 4.4.0: partitions stopped t-1 1s", "baseline (no upgrade): 0 rebalances"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
