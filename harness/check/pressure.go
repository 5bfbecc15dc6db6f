package check

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// Pressure is what one run's history says about how hard its nemesis
// pushed the group during the workload phase: how many faults and
// membership changes it applied, how much of the time the group was under a
// fault or mid-rebalance, how often it rebalanced and how often its
// coordinator moved. It is measured from what happened (fault starts that
// took effect, ownership as the members reported it), not from the plan.
type Pressure struct {
	Scenario string
	Workload time.Duration
	// Faults started (not counting those recorded as not applied); Churn
	// is the part of them that changed the membership (member-* kinds).
	Faults, Churn int
	// UnderFault is the fraction of the workload phase with a fault in
	// force; MidRebalance the fraction with some partition owned by no
	// member or by more than one; Busy the fraction with either.
	UnderFault, MidRebalance, Busy float64
	// Rebalances counts the generations or epochs the group went through
	// after it first formed.
	Rebalances int
	// CoordinatorMoves is the most coordinator changes one member saw.
	CoordinatorMoves int
}

// timeSpan is a stretch of a run, from a to b.
type timeSpan struct{ a, b time.Duration }

// union returns the total length of spans clipped to [lo, hi).
func union(spans []timeSpan, lo, hi time.Duration) time.Duration {
	sort.Slice(spans, func(i, j int) bool { return spans[i].a < spans[j].a })
	var total, end time.Duration
	end = lo
	for _, s := range spans {
		a, b := max(s.a, end), min(s.b, hi)
		if b > a {
			total += b - a
			end = b
		}
	}
	return total
}

// MeasurePressure reads one run's history.
func MeasurePressure(scenario string, events []history.Event) Pressure {
	p := Pressure{Scenario: scenario}
	lo, hi := workloadWindow(events)
	if lo < 0 {
		return p
	}
	p.Workload = hi - lo
	faults := faultSpans(events, hi, &p)
	rebal := rebalanceSpans(events, hi)
	if p.Workload > 0 {
		w := float64(p.Workload)
		p.UnderFault = float64(union(slices.Clone(faults), lo, hi)) / w
		p.MidRebalance = float64(union(slices.Clone(rebal), lo, hi)) / w
		p.Busy = float64(union(append(faults, rebal...), lo, hi)) / w
	}
	// Rebalances: the distinct generations (classic) and epochs (consumer
	// protocol) that members joined or were assigned at, after the first.
	p.Rebalances = max(0, len(Epochs(events))-1)
	p.CoordinatorMoves = coordinatorMoves(events)
	return p
}

// workloadWindow is the workload's span, from its phase marker to the
// heal's (or the last event); lo is -1 when the history has no workload.
func workloadWindow(events []history.Event) (lo, hi time.Duration) {
	lo, hi = -1, -1
	var last time.Duration
	for _, e := range events {
		last = max(last, e.Time)
	}
	ms := Phases(events)
	lo, hi = ms.Last(history.PhaseWorkload), ms.Last(history.PhaseHeal)
	if lo >= 0 && hi < lo {
		hi = last
	}
	return lo, hi
}

// faultSpans are the faults in force: from a start that took effect to its
// stop (or hi); it counts them, and the churn among them, into p.
func faultSpans(events []history.Event, hi time.Duration, p *Pressure) []timeSpan {
	var faults []timeSpan
	open := map[string]int{}
	for _, e := range events {
		if (e.F != history.FFaultStart && e.F != history.FFaultStop) || e.Type == history.Invoke {
			continue
		}
		f, err := history.ValueAs[history.Fault](e)
		if err != nil {
			continue
		}
		if e.F == history.FFaultStart {
			if e.Type == history.Fail {
				continue // recorded as not applied
			}
			p.Faults++
			if strings.HasPrefix(f.What, "member-") {
				p.Churn++
			}
			open[e.Process] = len(faults)
			faults = append(faults, timeSpan{e.Time, hi})
			continue
		}
		if i, ok := open[e.Process]; ok {
			faults[i].b = e.Time
			delete(open, e.Process)
		}
	}
	return faults
}

// rebalanceSpans are the spans mid-rebalance: some partition with no owner
// or more than one, as the checkers see ownership (a fenced member's ends at
// its fence).
func rebalanceSpans(events []history.Event, hi time.Duration) []timeSpan {
	var rebal []timeSpan
	byTP := map[history.TP][]Ownership{}
	for _, o := range Ownerships(events) {
		byTP[o.Partition] = append(byTP[o.Partition], o)
	}
	for _, os := range byTP {
		type edge struct {
			t time.Duration
			d int
		}
		var edges []edge
		for _, o := range os {
			edges = append(edges, edge{o.Start, +1})
			if !o.Open() {
				edges = append(edges, edge{o.End, -1})
			}
		}
		sort.SliceStable(edges, func(i, j int) bool {
			if edges[i].t != edges[j].t {
				return edges[i].t < edges[j].t
			}
			return edges[i].d > edges[j].d // a hand-over at one instant is not a gap
		})
		n, since := 0, time.Duration(0)
		for _, e := range edges {
			if n != 1 {
				rebal = append(rebal, timeSpan{since, e.t})
			}
			n += e.d
			since = e.t
		}
		if n != 1 {
			rebal = append(rebal, timeSpan{since, hi})
		}
	}
	return rebal
}

// coordinatorMoves is the most times one member found its coordinator on
// another node.
func coordinatorMoves(events []history.Event) int {
	coord := map[string][]int32{}
	for _, e := range events {
		if e.Type == history.Invoke || e.F != "found-coordinator" {
			continue
		}
		v, err := history.ValueAs[struct {
			Node *int32 `json:"node"`
		}](e)
		if err != nil || v.Node == nil {
			continue
		}
		who, _, _ := strings.Cut(e.Process, "/")
		if s := coord[who]; len(s) == 0 || s[len(s)-1] != *v.Node {
			coord[who] = append(s, *v.Node)
		}
	}
	moves := 0
	for _, s := range coord {
		moves = max(moves, len(s)-1)
	}
	return moves
}

// EpochSeen is a generation (classic) or epoch (consumer protocol) of the
// group, when and where a member first reported it.
type EpochSeen struct {
	Epoch int32
	At    time.Duration
	Event int64
}

// Epochs lists the distinct generations and epochs that members joined or
// were assigned at, in the order they were first seen: each one after the
// first is a rebalance.
func Epochs(events []history.Event) []EpochSeen {
	seen := map[int32]bool{}
	var out []EpochSeen
	for _, e := range events {
		if e.Type == history.Invoke {
			continue
		}
		var ep int32
		switch e.F {
		case history.FAssigned:
			if a, err := history.ValueAs[history.Assignment](e); err == nil {
				ep = a.Epoch
			}
		case history.FJoin:
			if j, err := history.ValueAs[history.Join](e); err == nil && e.Type == history.OK {
				ep = j.Generation
			}
		case history.FHeartbeat:
			if h, err := history.ValueAs[history.Heartbeat](e); err == nil && e.Type == history.OK && h.Protocol == history.ProtocolConsumer {
				ep = h.ResultEpoch
			}
		}
		if ep > 0 && !seen[ep] {
			seen[ep] = true
			out = append(out, EpochSeen{Epoch: ep, At: e.Time, Event: e.Index})
		}
	}
	return out
}
