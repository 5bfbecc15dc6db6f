package results

import (
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

func ev(i int64, t time.Duration, typ history.Type, proc, f string, v any) history.Event {
	return history.Event{Index: i, Time: t, Type: typ, Process: proc, F: f, Value: v}
}

// sample: member a owns t-0 and t-1; b joins, a revokes t-1 and b gets it;
// broker 1 is paused for a while; a loses t-0 at the end.
func sample() []history.Event {
	s := time.Second
	return []history.Event{
		ev(0, 0, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseWorkload}),
		ev(1, 1*s, history.Info, "a", history.FAssigned, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0, 1)}),
		ev(2, 2*s, history.Info, "a", history.FRevoked, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 1)}),
		ev(3, 3*s, history.Info, "b", history.FAssigned, history.Assignment{Member: "b", Epoch: 2, Partitions: history.TPs("t", 1)}),
		ev(4, 4*s, history.Invoke, "nemesis", history.FFaultStart, history.Fault{What: "pause", Target: []string{"broker-1"}}),
		ev(5, 4*s, history.OK, "nemesis", history.FFaultStart, history.Fault{What: "pause", Target: []string{"broker-1"}}),
		ev(6, 6*s, history.Invoke, "nemesis", history.FFaultStop, history.Fault{What: "pause", Target: []string{"broker-1"}}),
		ev(7, 6*s, history.OK, "nemesis", history.FFaultStop, history.Fault{What: "pause", Target: []string{"broker-1"}}),
		ev(8, 8*s, history.Info, "a", history.FLost, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0)}),
		ev(9, 10*s, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseFinal}),
	}
}

func verdicts() []check.Verdict {
	return []check.Verdict{
		{Name: "NoDoubleOwnership", Holds: true, Notes: []string{"checked 2 partitions"}},
		{Name: "NoLostRecords", Holds: false, Violations: []check.Violation{{Message: "record 7 of t-0 never consumed", EventIndexes: []int64{3, 8}}}},
		{Name: "RecoveredStateMatchesLog", Holds: true, Skipped: "no replay function"},
	}
}
