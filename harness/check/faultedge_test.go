package check

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// withEdges returns events with fault-edge facts on the process of each fault in force, as the
// nemesis records a flapping link's: cut 1 as the fault's start completes, then up and cut in
// turn every period, and the heal's final up just before the stop completes when the last edge
// was a cut. f is the F the edges carry: history.FFaultEdge, or for the control another F, whose
// edges carry a history.Fault. The
// indexes are renumbered, and so are the places of obs's snapshots in the history (a copy; obs
// may be nil); it also returns how many edges it added.
func withEdges(events []history.Event, obs *history.Observations, period time.Duration, f string) ([]history.Event, *history.Observations, int) {
	type flapping struct {
		v        history.Fault
		next     time.Duration
		cut      int
		down     bool
		stopping bool
	}
	open := map[string]*flapping{}
	var order []string // the processes of open, in the order their faults started
	var out []history.Event
	added := 0
	edge := func(proc string, fl *flapping, at time.Duration, final bool) {
		x := history.FaultEdge{What: fl.v.What, Target: fl.v.Target, Edge: history.EdgeCut, Cut: fl.cut, Final: final}
		if fl.down {
			x.Edge = history.EdgeUp
		} else {
			fl.cut++
			x.Cut = fl.cut
		}
		fl.down = !fl.down
		var v any = x
		if f != history.FFaultEdge { // the control: edges written as that F's facts
			v = history.Fault{What: x.What, Target: x.Target, Effect: x.Edge}
		}
		out = append(out, history.Event{Index: -1, Time: at, Type: history.Info, Process: proc, F: f, Value: v})
		added++
	}
	for _, e := range events {
		// The edges due by e, earliest first.
		for {
			var first string
			for _, p := range order {
				if fl := open[p]; fl != nil && !fl.stopping && fl.next <= e.Time && (first == "" || fl.next < open[first].next) {
					first = p
				}
			}
			if first == "" {
				break
			}
			fl := open[first]
			edge(first, fl, fl.next, false)
			fl.next += period
		}
		if fl := open[e.Process]; fl != nil && e.F == history.FFaultStop && e.Type != history.Invoke {
			if fl.down {
				edge(e.Process, fl, e.Time, true)
			}
			delete(open, e.Process)
		}
		out = append(out, e)
		if e.F == history.FFaultStop && e.Type == history.Invoke && open[e.Process] != nil {
			open[e.Process].stopping = true
		}
		if e.F == history.FFaultStart && (e.Type == history.OK || e.Type == history.Info) {
			if v, ok := e.Value.(history.Fault); ok {
				fl := &flapping{v: v, next: e.Time}
				open[e.Process] = fl
				order = append(order, e.Process)
				edge(e.Process, fl, e.Time, false)
				fl.next += period
			}
		}
	}
	moved := map[int64]int64{int64(len(events)): int64(len(out))}
	for i := range out {
		if out[i].Index >= 0 { // not an edge
			moved[out[i].Index] = int64(i)
		}
	}
	for i := range out {
		out[i].Index = int64(i)
	}
	if obs == nil {
		return out, nil, added
	}
	o := *obs
	place := func(s *history.Snapshot) {
		if s.HistoryLen > 0 {
			s.HistoryLen = moved[s.HistoryLen]
		}
		if s.HistoryEnd > 0 {
			s.HistoryEnd = moved[s.HistoryEnd]
		}
	}
	place(&o.Final)
	o.Checkpoints = append([]history.Snapshot(nil), obs.Checkpoints...)
	for i := range o.Checkpoints {
		place(&o.Checkpoints[i])
	}
	return out, &o, added
}

var (
	digits  = regexp.MustCompile(`[0-9]+`)
	indexes = regexp.MustCompile(`"event_indexes":\[[0-9,]*\]`)
)

// judged is what a run's judgement says, with the numbers in its messages left out (the edges
// shift the event indexes they cite).
func judged(events []history.Event, obs *history.Observations, plan history.Plan) []string {
	rep := Judge(events, obs, plan)
	out := []string{fmt.Sprintf("holds %v, %d findings, notes %q", rep.Holds, len(rep.Findings), digits.ReplaceAllString(fmt.Sprint(rep.Notes), "#"))}
	if c := rep.RebalanceCost; c != nil {
		b, _ := json.Marshal(c)
		out = append(out, "rebalance cost "+indexes.ReplaceAllString(string(b), ""))
	}
	for _, v := range rep.Verdicts {
		s := fmt.Sprintf("%s holds %v skipped %q, %d violations, %d notes:", v.Name, v.Holds, v.Skipped, len(v.Violations), len(v.Notes))
		for _, x := range v.Violations {
			s += " [" + x.Finding + "] " + digits.ReplaceAllString(x.Message, "#")
		}
		out = append(out, s)
	}
	p := MeasurePressure("s", events)
	out = append(out, fmt.Sprintf("pressure %+v", p))
	im := MeasureImpact(events)
	out = append(out, fmt.Sprintf("impact: workload %s, %d steps, %d rebalances, stops %+v", im.Workload, len(im.Steps), len(im.Rebalances), im.PartitionStops))
	return out
}

// The cuts and restores of a flapping link (fault-edge) are facts beside the fault, not faults:
// recorded runs that hold and runs that fail, each with edges every 300ms on the process of every
// fault in force, are judged exactly as without them (verdicts, violations, findings, notes,
// rebalance cost, the nemesis's pressure, the upgrade impact). The control: the same edges
// recorded as fault-start facts change what is judged.
func TestFaultEdgesJudgeTheSame(t *testing.T) {
	t.Parallel()
	held, failed := 0, 0
	for _, name := range []string{"mixed-conversion-seed-7", "kafka-4.4.0-freeze-seed-2058727196645645882",
		"kafka-4.4.0-blind-heartbeat-seed-2910746856353474622", "kafka-4.1.2-reconvert-seed-1021641574564730165",
		"kafka-4.4.0-migration-outage"} {
		t.Run(name, func(t *testing.T) {
			events, obs, plan := loadRun(t, filepath.Join("testdata", name))
			with, withObs, n := withEdges(events, obs, 300*time.Millisecond, history.FFaultEdge)
			if n < 10 {
				t.Fatalf("only %d edges added", n)
			}
			if v := HistoryWellFormed(with); !v.Holds {
				t.Fatalf("the history with edges is not well formed: %+v", v.Violations)
			}
			want, got := judged(events, obs, plan), judged(with, withObs, plan)
			if !reflect.DeepEqual(got, want) {
				for i := range max(len(got), len(want)) {
					if i >= len(got) || i >= len(want) || got[i] != want[i] {
						t.Errorf("with %d edges, judged differently:\n got %v\nwant %v", n, at(got, i), at(want, i))
					}
				}
			}
			if Judge(events, obs, plan).Holds {
				held++
			} else {
				failed++
			}
			control, controlObs, _ := withEdges(events, obs, 300*time.Millisecond, history.FFaultStart)
			if reflect.DeepEqual(judged(control, controlObs, plan), want) {
				t.Errorf("edges recorded as fault-start facts judged the same: the comparison sees nothing")
			}
		})
	}
	t.Logf("%d runs that hold, %d that fail", held, failed)
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(none)"
}
