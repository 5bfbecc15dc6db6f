package results

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// In sample(), the workload runs from 0 to the heal at 10s (the final phase
// stands in for it); the pause is in force 4s–6s; t-1 has no owner 2s–3s,
// t-0 none from 8s on, and neither before 1s; the group saw epochs 1 and 2.
func TestMeasurePressure(t *testing.T) {
	evs := sample()
	evs[len(evs)-1].Value = history.Phase{Name: history.PhaseHeal}
	// A churn fault that was not applied counts for nothing.
	evs = append(evs[:9:9],
		ev(20, 9*time.Second, history.Invoke, "nemesis/1", history.FFaultStart, history.Fault{What: "member-crash"}),
		ev(21, 9*time.Second, history.Fail, "nemesis/1", history.FFaultStart, history.Fault{What: "member-crash", Error: "not applied"}),
		// a's coordinator moved once (as read back from history.jsonl).
		ev(22, 9*time.Second, history.Info, "a/hb", "found-coordinator", json.RawMessage(`{"member":"a","node":1}`)),
		ev(23, 9*time.Second, history.Info, "a/hb", "found-coordinator", json.RawMessage(`{"member":"a","node":1}`)),
		ev(24, 9*time.Second, history.Info, "a/hb", "found-coordinator", json.RawMessage(`{"member":"a","node":3}`)),
		evs[9])
	p := MeasurePressure("combined", evs)
	want := Pressure{Scenario: "combined", Workload: 10 * time.Second, Faults: 1, UnderFault: 0.2, MidRebalance: 0.4, Busy: 0.6, Rebalances: 1, CoordinatorMoves: 1}
	if p != want {
		t.Errorf("MeasurePressure =\n%+v, want\n%+v", p, want)
	}
	var b bytes.Buffer
	if err := WritePressure(&b, []Pressure{p, p}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "combined  2     6.0") || !strings.Contains(b.String(), "60%") {
		t.Errorf("table:\n%s", b.String())
	}
}
