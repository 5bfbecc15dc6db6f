package check

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// A run that warmed up, ran its workload twice (a restarted workload
// phase), healed and was stopped in its teardown: the first and the last
// marker of a phase differ, a phase never reached is -1, and a marker whose
// payload does not decode is not one.
func TestPhases(t *testing.T) {
	s := time.Second
	phase := func(i int64, at time.Duration, p history.Phase) history.Event {
		return history.Event{Index: i, Time: at, Type: history.Info, Process: "harness", F: history.FPhase, Value: p}
	}
	evs := []history.Event{
		phase(0, 0, history.Phase{Name: history.PhaseWarmup}),
		{Index: 1, Time: s, Type: history.Info, Process: "a", F: history.FAssigned, Value: history.Assignment{Member: "a", Epoch: 1}},
		phase(2, 2*s, history.Phase{Name: history.PhaseWorkload}),
		phase(3, 3*s, history.Phase{Name: history.PhaseWorkload}),
		{Index: 4, Time: 4 * s, Type: history.Info, Process: "harness", F: history.FPhase, Value: json.RawMessage(`"heal"`)},
		phase(5, 5*s, history.Phase{Name: history.PhaseHeal}),
		phase(6, 6*s, history.Phase{Name: history.PhaseTeardown, Stopped: "interrupted by SIGINT"}),
	}
	ms := Phases(evs)
	if len(ms) != 5 || ms[4].Stopped != "interrupted by SIGINT" || ms[4].Event != 6 || ms[4].At != 6*s {
		t.Fatalf("Phases = %+v", ms)
	}
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"first workload", ms.First(history.PhaseWorkload), 2 * s},
		{"last workload", ms.Last(history.PhaseWorkload), 3 * s},
		{"first of final or teardown", ms.First(history.PhaseFinal, history.PhaseTeardown), 6 * s},
		{"last of warmup or heal", ms.Last(history.PhaseWarmup, history.PhaseHeal), 5 * s},
		{"final, never reached", ms.Last(history.PhaseFinal), -1},
		{"final, never reached (first)", ms.First(history.PhaseFinal), -1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if !ms.Reached(history.PhaseHeal) || ms.Reached(history.PhaseFinal) || PhaseMarks(nil).Reached(history.PhaseSetup) {
		t.Errorf("Reached: heal %v, final %v", ms.Reached(history.PhaseHeal), ms.Reached(history.PhaseFinal))
	}
}
