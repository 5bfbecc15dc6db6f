package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// Bound is the time a group may take to converge after the faults heal, and how it was computed.
type Bound struct {
	Limit  time.Duration `json:"limit"`
	Reason string        `json:"reason"`
}

// ConvergenceBound computes the bound from the plan's timers. The worst case it covers: a member
// that died or was cut off keeps its partitions until its session expires (session timeout); the
// rebalance then waits for revocations, or in classic groups for every member to rejoin (rebalance
// timeout); the new assignment reaches members on their next heartbeat, is acknowledged on the one
// after, and partitions released meanwhile are picked up on a third (3 heartbeat intervals:
// kafka-group-protocol.md §3.2, "convergence is paced by the heartbeat interval"). The slack covers
// what timers do not: coordinator failover, log load, leader election.
func ConvergenceBound(p history.Plan) (Bound, error) {
	if p.ConvergenceBound > 0 {
		return Bound{p.ConvergenceBound, "convergence_bound " + dur(p.ConvergenceBound) + " set in the plan"}, nil
	}
	if p.SessionTimeout <= 0 || p.HeartbeatInterval <= 0 || p.RebalanceTimeout <= 0 {
		return Bound{}, fmt.Errorf("the plan gives no timers (session %v, heartbeat %v, rebalance %v): set them, or convergence_bound, in the plan", p.SessionTimeout, p.HeartbeatInterval, p.RebalanceTimeout)
	}
	limit := p.SessionTimeout + p.RebalanceTimeout + 3*p.HeartbeatInterval + p.ConvergenceSlack
	return Bound{limit, fmt.Sprintf("session %s + rebalance %s + 3×heartbeat %s + slack %s = %s",
		dur(p.SessionTimeout), dur(p.RebalanceTimeout), dur(p.HeartbeatInterval), dur(p.ConvergenceSlack), dur(limit))}, nil
}

// EventuallyConverges checks that after the heal (the last "heal" phase marker, else the last fault
// stop, else the first assignment) the group reaches, within the bound of ConvergenceBound and before the "final" phase marker
// (else the end of the history), a state where every planned partition is owned by exactly one
// member and stays so; and that the group is Stable in the last description the observer took (the
// describe events after the heal and the final observation) and has been since a time within the
// bound. The harness's own stalls (history.FStall) are not charged to the group: a long one after
// the heal starts the measure at its end, a short one adds its length to the bound (stall.go). The
// verdict says which bound was exceeded and by how much.
func EventuallyConverges(events []history.Event, obs *history.Observations, plan history.Plan) Verdict {
	return eventuallyConverges(build(events, obs), obs, plan)
}

const NameEventuallyConverges = "EventuallyConverges"

var _ = register(Checker{Name: NameEventuallyConverges, Place: 90, Groups: ConsumerGroups,
	Asserts: "after the heal, every partition is owned by exactly one member, the group is Stable within a bound computed from its timers, and every member the harness runs is in it",
	judge:   func(in *judging) Verdict { return eventuallyConverges(in.f, in.obs, in.plan) }})

func eventuallyConverges(f *facts, obs *history.Observations, plan history.Plan) Verdict {
	const name = NameEventuallyConverges
	bound, err := ConvergenceBound(plan)
	if err != nil {
		return skipped(name, err.Error())
	}
	v := newVerdict(name)
	if len(f.ev) == 0 {
		return skipped(name, "empty history")
	}
	refused := judgeSelfRefusals(v, f, len(f.ev))
	heal, end := convergeWindow(v, f)
	healT := f.ev[heal].Time
	v.note("bound %s", bound.Reason)
	stalls := newStallRule(f, plan)
	stalls.note(v, f, healT)
	judgeOwnership(v, f, ownershipUniverse(v, f, plan), heal, end, bound, stalls)
	descs := stableDescs(f, obs, heal, end)
	if len(descs) == 0 {
		v.note("group stability not observed: no description after the heal")
		return v.done()
	}
	lastD := descs[len(descs)-1]
	if !judgeStability(v, f, descs, heal, bound, stalls) {
		return v.done()
	}

	// Membership: a Stable group can still be short of a member that gave
	// up; every member that runs must be in it.
	upto := lastD.pos
	if upto >= len(f.ev) {
		upto = sort.Search(len(f.ev), func(i int) bool { return f.ev[i].Time > lastD.t })
	}
	// The final observation is no event of the history: it is cited by the final phase marker
	// that it follows, not by whatever event came last (a member's leave in the teardown, which
	// would say the violation concerns that member).
	cite := min(lastD.pos, len(f.ev)-1)
	if fin := f.lastPhase(history.PhaseFinal); lastD.pos >= len(f.ev) && fin >= 0 {
		cite = fin
	}
	judgeMembership(v, f, lastD.g, upto, lastD.t, healT, lastD.label, cite, bound, refused, stalls)
	return v.done()
}

// convergeWindow is where convergence is measured from (the last heal
// marker, else the last fault stop, else the first assignment) and where it
// is judged (the final marker after the heal, else the end of the history).
func convergeWindow(v *verdict, f *facts) (heal, end int) {
	heal = f.lastPhase(history.PhaseHeal)
	switch {
	case heal >= 0:
	case len(f.faultStops) > 0:
		heal = f.faultStops[len(f.faultStops)-1]
		v.note("no %q phase marker: measured from the last fault stop at event %d", history.PhaseHeal, f.idx(heal))
	default:
		// No faults: measure from when the group started forming, not from cluster setup.
		heal = 0
		if len(f.intervals) > 0 {
			heal = f.intervals[0].start
		}
		v.note("no %q phase marker and no fault: measured from the first assignment (event %d)", history.PhaseHeal, f.idx(heal))
	}
	end = len(f.ev)
	if fin := f.lastPhase(history.PhaseFinal); fin > heal {
		end = fin
	} else {
		v.note("no %q phase marker after the heal: judged at the end of the history (event %d)", history.PhaseFinal, f.idx(len(f.ev)-1))
	}
	return heal, end
}

// ownershipUniverse is the partitions that must each have one owner: the
// plan's, or every partition ever assigned when the plan lists no topic.
func ownershipUniverse(v *verdict, f *facts, plan history.Plan) map[int]bool {
	universe := map[int]bool{}
	for _, t := range plan.Partitions() {
		universe[f.tp(t)] = true
	}
	if len(universe) == 0 {
		for tp := range f.tps {
			if len(f.byTP[tp]) > 0 {
				universe[tp] = true
			}
		}
		v.note("the plan lists no topics: judged over the %d partitions that were ever assigned", len(universe))
	}
	return universe
}

// judgeOwnership fails v unless every partition of universe has exactly
// one owner at end, from a point within the bound after the heal (the
// harness's stalls counted as stall.go says).
func judgeOwnership(v *verdict, f *facts, universe map[int]bool, heal, end int, bound Bound, stalls stallRule) {
	healT := f.ev[heal].Time
	type delta struct{ pos, tp, d int }
	var ds []delta
	for _, iv := range f.intervals {
		if !universe[iv.tp] {
			continue
		}
		ds = append(ds, delta{iv.start, iv.tp, +1})
		if iv.end < len(f.ev) {
			ds = append(ds, delta{iv.end, iv.tp, -1})
		}
	}
	sort.SliceStable(ds, func(a, b int) bool { return ds[a].pos < ds[b].pos })
	count := map[int]int{}
	good := 0
	since := -1 // position from which every partition has had exactly one owner
	lastChange := map[int]int{}
	for _, d := range ds {
		if d.pos > end {
			break
		}
		before := count[d.tp] == 1
		count[d.tp] += d.d
		after := count[d.tp] == 1
		lastChange[d.tp] = d.pos
		switch {
		case before && !after:
			good--
			since = -1
		case !before && after:
			good++
		}
		if good == len(universe) && since < 0 {
			since = d.pos
		}
	}
	if good != len(universe) {
		var bad []string
		var idx []int64
		tps := make([]int, 0, len(universe))
		for tp := range universe {
			tps = append(tps, tp)
		}
		sort.Slice(tps, func(a, b int) bool { return f.tps[tps[a]].String() < f.tps[tps[b]].String() })
		orphans := orphanTails(f)
		judged := min(end, len(f.ev)-1)
		bounded := stalls.against(f, heal, f.ev[judged].Time, bound)
		for _, tp := range tps {
			if count[tp] == 1 {
				continue
			}
			if o, ok := orphans[f.tps[tp]]; ok && count[tp] == 0 {
				// Nobody may own it: the coordinator holds it as an
				// orphaned classic member's target.
				x, _ := FindingByID(FindingClassicJoinOrphan)
				v.failKnown(x, Known{Member: o.Member, Events: o.Events}, o.Events, "never converged: at event %d, %s has 0 owners: the coordinator holds it as the target of %s, orphaned by its JoinGroup; %s",
					f.idx(judged), f.tps[tp], o.Member, bounded)
				continue
			}
			bad = append(bad, fmt.Sprintf("%s has %d owners", f.tps[tp], count[tp]))
			if p, ok := lastChange[tp]; ok {
				idx = append(idx, f.idx(p))
			}
			// Two owners or more: cite where each of them began to own it, so the violation
			// names every member that holds the partition, not only the last to arrive.
			for _, id := range f.byTP[tp] {
				if iv := f.intervals[id]; count[tp] > 1 && iv.start <= end && (iv.end > end || iv.end >= len(f.ev)) {
					idx = append(idx, f.idx(iv.start))
				}
			}
		}
		if len(bad) > 0 {
			v.fail(append([]int64{f.idx(heal), f.idx(judged)}, idx...), "never converged: at event %d, %s; %s",
				f.idx(judged), strings.Join(bad, ", "), bounded)
		}
		return
	}
	if since < 0 {
		since = heal // nothing to own
	}
	took := max(0, f.ev[since].Time-healT)
	if since < heal {
		took = 0
	}
	v.note("every partition owned by exactly one member %s after the heal (event %d)", dur(took), f.idx(since))
	if over, m, from := stalls.excess(v, f, "every partition owned by exactly one member", healT, healT+took, bound); over > 0 {
		v.fail(append([]int64{f.idx(heal), f.idx(since)}, m.cite...), "ownership bound exceeded: every partition had exactly one owner only %s after the heal (event %d → event %d)%s, %s over the bound (%s)",
			dur(took), f.idx(heal), f.idx(since), from, dur(over), m.bound.Reason)
	}
}

// groupDesc is a description of the group the observer took after the
// heal: where it stands in the history, when, and how to cite it.
type groupDesc struct {
	pos   int
	t     time.Duration
	g     *history.GroupDescription
	label string
}

// stableDescs is the group's descriptions after the heal and up to end,
// then the final observation's.
func stableDescs(f *facts, obs *history.Observations, heal, end int) []groupDesc {
	var descs []groupDesc
	for _, pos := range f.describes {
		if pos <= heal || pos > end {
			continue
		}
		d := f.vals[pos].(history.Describe)
		if d.Group == nil {
			continue
		}
		at := pos
		if p := f.partner[pos]; p >= 0 {
			at = p
		}
		descs = append(descs, groupDesc{pos, f.ev[at].Time, d.Group, "describe at event " + itoa(f.idx(pos))})
	}
	if obs != nil && obs.Final.Group != nil {
		t := obs.Final.Time
		if t == 0 {
			t = f.ev[len(f.ev)-1].Time
		}
		descs = append(descs, groupDesc{len(f.ev), t, obs.Final.Group, "final observation"})
	}
	return descs
}

// judgeStability fails v unless the last description is Stable, and Stable
// for good from a point within the bound after the heal (the harness's
// stalls counted as stall.go says). It says whether the last description
// is Stable.
func judgeStability(v *verdict, f *facts, descs []groupDesc, heal int, bound Bound, stalls stallRule) bool {
	healT := f.ev[heal].Time
	lastD := descs[len(descs)-1]
	if !lastD.g.Stable() {
		bounded := stalls.against(f, heal, lastD.t, bound)
		if o, ok := onlyOrphansBehind(f, lastD.g); ok {
			x, _ := FindingByID(FindingClassicJoinOrphan)
			v.failKnown(x, Known{Member: o.Member, Events: o.Events}, append([]int64{f.idx(lastD.pos)}, o.Events...), "group not stable at the %s: %s: the members behind are classic members orphaned by their JoinGroup; %s", lastD.label, DescribeUnstable(lastD.g), bounded)
			return false
		}
		v.fail([]int64{f.idx(heal), f.idx(lastD.pos)}, "group not stable at the %s: %s; %s", lastD.label, DescribeUnstable(lastD.g), bounded)
		return false
	}
	first := len(descs) - 1
	for first > 0 && descs[first-1].g.Stable() {
		first--
	}
	took := max(0, descs[first].t-healT)
	v.note("group Stable from the %s, %s after the heal", descs[first].label, dur(took))
	if over, m, from := stalls.excess(v, f, "group Stable", healT, healT+took, bound); over > 0 {
		v.fail(append([]int64{f.idx(heal), f.idx(descs[first].pos)}, m.cite...), "stability bound exceeded: the group was first seen Stable for good %s after the heal (%s)%s, %s over the bound (%s)",
			dur(took), descs[first].label, from, dur(over), m.bound.Reason)
	}
	return true
}

// onlyOrphansBehind reports whether every member of g behind its
// assignment epoch is a classic member orphaned by its JoinGroup (finding
// kafka-classic-join-timeout-orphan), and one of them.
func onlyOrphansBehind(f *facts, g *history.GroupDescription) (orphan, bool) {
	if g.Protocol != history.ProtocolConsumer {
		return orphan{}, false
	}
	byID := map[string]orphan{}
	for _, o := range classicJoinOrphans(f) {
		byID[o.memberID] = o
	}
	var first orphan
	behind := 0
	for _, m := range g.Members {
		if m.MemberEpoch == g.AssignmentEpoch {
			continue
		}
		o, ok := byID[m.MemberID]
		if !ok {
			return orphan{}, false
		}
		if behind == 0 {
			first = o
		}
		behind++
	}
	return first, behind > 0
}

// DescribeUnstable says what a description of a group not Stable shows:
// its state and, for a consumer group, the members behind its assignment
// epoch. The run's waits for a Stable group say it too.
func DescribeUnstable(g *history.GroupDescription) string {
	if g == nil {
		return "no group"
	}
	s := "state " + g.State
	if g.Protocol == history.ProtocolConsumer {
		var lag []string
		for _, m := range g.Members {
			if m.MemberEpoch != g.AssignmentEpoch {
				lag = append(lag, fmt.Sprintf("%s at epoch %d", m.MemberID, m.MemberEpoch))
			}
		}
		if len(lag) > 0 {
			s += fmt.Sprintf(", assignment epoch %d, members behind: %s", g.AssignmentEpoch, strings.Join(lag, ", "))
		}
	}
	return s
}
