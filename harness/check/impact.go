package check

import (
	"sort"
	"strings"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/history"
)

// UpgradeStep is one step of a rolling upgrade as the history recorded it:
// a node replaced by another release, or the features finalized.
type UpgradeStep struct {
	Process string `json:"process"`
	What    string `json:"what"`
	Target  string `json:"target"`
	// Params are the step's version or feature levels.
	Params map[string]string `json:"params,omitempty"`
	// Start is when the step began (its invoke), Applied when it took
	// effect (the new node served, the features were finalized), End when
	// its interval ended (a node's ISR full again); -1 when it did not come.
	Start   time.Duration `json:"start"`
	Applied time.Duration `json:"applied"`
	End     time.Duration `json:"end"`
	OK      bool          `json:"ok"`
	// Effect is what applying it saw and what the group went through
	// while it was in force.
	Effect string `json:"effect,omitempty"`
	Error  string `json:"error,omitempty"`
}

func (s UpgradeStep) String() string {
	name := s.What + " " + s.Target
	if v := s.Params["version"]; v != "" {
		name += " → " + v
	}
	if f := s.Params["features"]; f != "" {
		name += " " + f
	}
	return name
}

// Rebalance is one new generation or epoch of the group, with the upgrade
// step in force when it was first seen and every partition whose
// consumption resumed at it, with how long it had stopped.
type Rebalance struct {
	Epoch int32         `json:"epoch"`
	At    time.Duration `json:"at"`
	Event int64         `json:"event"`
	// Step is the upgrade step in force ("" when none was).
	Step  string `json:"step,omitempty"`
	Stops []Stop `json:"stops,omitempty"`
}

// Impact is what a run's group went through from the start of its workload
// until its final observations: its rebalances with the partition stops
// each caused, and its upgrade steps (none in a baseline).
type Impact struct {
	Workload   time.Duration `json:"workload"`
	Steps      []UpgradeStep `json:"steps,omitempty"`
	Rebalances []Rebalance   `json:"rebalances"`
	// PartitionStops summarises every partition stop in the span.
	PartitionStops Stats `json:"partition_stops"`
}

// MeasureImpact reads one run's history: the rebalances first seen from the
// workload phase on (before the final observations, so the members'
// leaving at teardown is not counted), each with the partition stops whose
// consumption resumed at its epoch (RebalanceCost), and each upgrade
// step with when it started, took effect and ended.
func MeasureImpact(events []history.Event) Impact {
	var im Impact
	ms := Phases(events)
	lo, wend := ms.Last(history.PhaseWorkload), ms.Last(history.PhaseHeal)
	hi := ms.First(history.PhaseFinal, history.PhaseTeardown)
	if lo < 0 {
		return im
	}
	if hi < 0 && len(events) > 0 {
		hi = events[len(events)-1].Time + 1
	}
	if wend > lo {
		im.Workload = wend - lo
	}
	im.Steps = upgradeSteps(events)
	stepAt := func(t time.Duration) string {
		for _, s := range im.Steps {
			end := s.End
			if end < 0 {
				end = hi
			}
			if s.Start <= t && t <= end {
				return s.String()
			}
		}
		return ""
	}
	var stops []time.Duration
	byEpoch := map[int32][]Stop{}
	if cost := RebalanceCost(events); cost != nil {
		for _, pc := range cost.Protocols {
			for _, st := range pc.Stops {
				if st.Partition == "" || st.To < lo || st.To >= hi {
					continue
				}
				byEpoch[st.Epoch] = append(byEpoch[st.Epoch], st)
				stops = append(stops, st.Duration)
			}
		}
	}
	for _, ep := range Epochs(events) {
		// A rebalance begun before the workload counts when partitions
		// resumed at it inside the span.
		if ep.At >= hi || (ep.At < lo && len(byEpoch[ep.Epoch]) == 0) {
			continue
		}
		r := Rebalance{Epoch: ep.Epoch, At: ep.At, Event: ep.Event, Step: stepAt(ep.At), Stops: byEpoch[ep.Epoch]}
		sort.Slice(r.Stops, func(i, j int) bool { return r.Stops[i].Partition < r.Stops[j].Partition })
		im.Rebalances = append(im.Rebalances, r)
	}
	im.PartitionStops = StatsOf(stops)
	return im
}

// upgradeSteps reads the nemesis processes of the upgrade kinds.
func upgradeSteps(events []history.Event) []UpgradeStep {
	var out []UpgradeStep
	at := map[string]int{}
	for _, e := range events {
		if e.F != history.FFaultStart && e.F != history.FFaultStop {
			continue
		}
		f, err := history.ValueAs[history.Fault](e)
		if err != nil || (faults.Kind(f.What) != faults.NodeUpgrade && faults.Kind(f.What) != faults.FeatureUpdate) {
			continue
		}
		i, ok := at[e.Process]
		if !ok {
			at[e.Process] = len(out)
			i = len(out)
			out = append(out, UpgradeStep{Process: e.Process, What: f.What, Target: strings.Join(f.Target, ","), Params: f.Params, Start: e.Time, Applied: -1, End: -1})
		}
		s := &out[i]
		switch {
		case e.Type == history.Invoke:
		case e.F == history.FFaultStart:
			s.Applied, s.OK = e.Time, e.Type == history.OK
			s.Effect, s.Error = f.Effect, f.Error
		default:
			s.End = e.Time
			s.OK = s.OK && e.Type == history.OK
			if f.Effect != "" {
				s.Effect = joinNonEmpty(s.Effect, "in force: "+f.Effect)
			}
			if f.Error != "" {
				s.Error = joinNonEmpty(s.Error, f.Error)
			}
		}
	}
	return out
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
