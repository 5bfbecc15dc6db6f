// Package checktest holds what the tests of harness/check and of the
// package that lays out its results (results/) share: a hand-written
// history both judge and present, and the reading of a recorded run's plan.
package checktest

import (
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// Event is one event of a hand-written history.
func Event(i int64, t time.Duration, typ history.Type, proc, f string, v any) history.Event {
	return history.Event{Index: i, Time: t, Type: typ, Process: proc, F: f, Value: v}
}

// Sample is a short run: member a owns t-0 and t-1; b joins, a revokes t-1
// and b gets it; broker 1 is paused for a while; a loses t-0 at the end.
//
// The workload runs from 0 to the final phase at 10s; the pause is in force
// 4s–6s; t-1 has no owner 2s–3s, t-0 none from 8s on, and neither before 1s;
// the group sees epochs 1 and 2.
func Sample() []history.Event {
	s := time.Second
	pause := history.Fault{What: "pause", Target: []string{"broker-1"}}
	return []history.Event{
		Event(0, 0, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseWorkload}),
		Event(1, 1*s, history.Info, "a", history.FAssigned, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0, 1)}),
		Event(2, 2*s, history.Info, "a", history.FRevoked, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 1)}),
		Event(3, 3*s, history.Info, "b", history.FAssigned, history.Assignment{Member: "b", Epoch: 2, Partitions: history.TPs("t", 1)}),
		Event(4, 4*s, history.Invoke, "nemesis", history.FFaultStart, pause),
		Event(5, 4*s, history.OK, "nemesis", history.FFaultStart, pause),
		Event(6, 6*s, history.Invoke, "nemesis", history.FFaultStop, pause),
		Event(7, 6*s, history.OK, "nemesis", history.FFaultStop, pause),
		Event(8, 8*s, history.Info, "a", history.FLost, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0)}),
		Event(9, 10*s, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseFinal}),
	}
}
