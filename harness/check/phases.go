package check

import (
	"slices"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// PhaseMark is one phase marker of a history: the phase's payload, when it
// began and the event that says so.
type PhaseMark struct {
	history.Phase
	At    time.Duration
	Event int64
}

// PhaseMarks are a history's phase markers, in order. Every question about
// a run's phases (when its workload began, whether it reached its final
// phase, why it stopped) is asked of them.
type PhaseMarks []PhaseMark

// Phases reads the phase markers of events; a marker whose payload does not
// decode is left out.
func Phases(events []history.Event) PhaseMarks {
	var out PhaseMarks
	for _, e := range events {
		if e.F != history.FPhase {
			continue
		}
		if ph, err := history.ValueAs[history.Phase](e); err == nil {
			out = append(out, PhaseMark{Phase: ph, At: e.Time, Event: e.Index})
		}
	}
	return out
}

// First is when the first marker of one of the phases names began; -1 when
// there is none.
func (ms PhaseMarks) First(names ...string) time.Duration {
	for _, m := range ms {
		if slices.Contains(names, m.Name) {
			return m.At
		}
	}
	return -1
}

// Last is when the last marker of one of the phases names began; -1 when
// there is none.
func (ms PhaseMarks) Last(names ...string) time.Duration {
	for _, m := range slices.Backward(ms) {
		if slices.Contains(names, m.Name) {
			return m.At
		}
	}
	return -1
}

// Reached reports whether the history holds a marker of the phase name.
func (ms PhaseMarks) Reached(name string) bool {
	return slices.ContainsFunc(ms, func(m PhaseMark) bool { return m.Name == name })
}
