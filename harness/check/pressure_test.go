package check

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check/checktest"
	"github.com/groupquake/groupquake/harness/history"
)

// mev is one event of a hand-written history.
var mev = checktest.Event

// In checktest.Sample(), the workload runs from 0 to the heal at 10s (the
// final phase stands in for it); the pause is in force 4s–6s; t-1 has no
// owner 2s–3s, t-0 none from 8s on, and neither before 1s; the group saw
// epochs 1 and 2.
func TestMeasurePressure(t *testing.T) {
	evs := checktest.Sample()
	evs[len(evs)-1].Value = history.Phase{Name: history.PhaseHeal}
	// A churn fault that was not applied counts for nothing.
	evs = append(evs[:9:9],
		mev(20, 9*time.Second, history.Invoke, "nemesis/1", history.FFaultStart, history.Fault{What: "member-crash"}),
		mev(21, 9*time.Second, history.Fail, "nemesis/1", history.FFaultStart, history.Fault{What: "member-crash", Error: "not applied"}),
		// a's coordinator moved once (as read back from history.jsonl).
		mev(22, 9*time.Second, history.Info, "a/hb", "found-coordinator", json.RawMessage(`{"member":"a","node":1}`)),
		mev(23, 9*time.Second, history.Info, "a/hb", "found-coordinator", json.RawMessage(`{"member":"a","node":1}`)),
		mev(24, 9*time.Second, history.Info, "a/hb", "found-coordinator", json.RawMessage(`{"member":"a","node":3}`)),
		evs[9])
	p := MeasurePressure("combined", evs)
	want := Pressure{Scenario: "combined", Workload: 10 * time.Second, Faults: 1, UnderFault: 0.2, MidRebalance: 0.4, Busy: 0.6, Rebalances: 1, CoordinatorMoves: 1}
	if p != want {
		t.Errorf("MeasurePressure =\n%+v, want\n%+v", p, want)
	}
	// A history with no workload phase was under no pressure.
	if p := MeasurePressure("none", evs[1:]); p != (Pressure{Scenario: "none"}) {
		t.Errorf("MeasurePressure without a workload = %+v", p)
	}
}

// Pressure and EpochSeen have no tags: their JSON is their field names,
// which a reader of a marshalled value depends on.
func TestPressureJSON(t *testing.T) {
	p := Pressure{Scenario: "combined", Workload: 10 * time.Second, Faults: 1, UnderFault: 0.2, MidRebalance: 0.4, Busy: 0.6, Rebalances: 1, CoordinatorMoves: 1}
	mustJSON(t, p, `{"Scenario":"combined","Workload":10000000000,"Faults":1,"Churn":0,"UnderFault":0.2,"MidRebalance":0.4,"Busy":0.6,"Rebalances":1,"CoordinatorMoves":1}`)
	mustJSON(t, Epochs(checktest.Sample()), `[{"Epoch":1,"At":1000000000,"Event":1},{"Epoch":2,"At":3000000000,"Event":3}]`)
}

func mustJSON(t *testing.T, v any, want string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("JSON of %T:\n%s\nwant\n%s", v, b, want)
	}
}
