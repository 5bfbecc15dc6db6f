package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// memberTrace is what the history says of one member's membership up to
// the description judged.
type memberTrace struct {
	id, inst string // member id of the coordinator's last answer that took it in; static id
	last     int    // position of its last membership event, -1 if none
	lastErr  string // error of the last membership call that failed after the last that succeeded
	errPos   int
	stopped  int // position of its FStopped after the last call that succeeded, -1 if none
	// moves are the positions of the answers that told it the coordinator
	// moved or was loading (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
	// COORDINATOR_LOAD_IN_PROGRESS).
	moves []int
	// supervised is the position of the stop since which its supervisor
	// has been restarting it (FRestart) without the group taking it in, -1
	// if none; backoff is the longest wait of those restarts; restarts
	// counts every restart of the member.
	supervised int
	backoff    time.Duration
	restarts   int
	// streak is the position of the first of the refusals with one error
	// (streakErr, not a coordinator move) the member's calls have had
	// since it was last taken in, started or restarted, -1 if none: a
	// member refused the same way again and again is out of the group
	// since the first of them, not since the latest (seen:
	// INCONSISTENT_GROUP_PROTOCOL for a whole run, each refused join
	// restarting the clock, so the member was never judged).
	streak    int
	streakErr string
}

// traceMember follows member name through the events before position upto.
func traceMember(f *facts, name string, upto int) memberTrace {
	tr := memberTrace{last: -1, errPos: -1, stopped: -1, supervised: -1, streak: -1}
	ok := func(id string, i int) {
		if id != "" {
			tr.id = id
		}
		tr.lastErr, tr.errPos, tr.stopped = "", -1, -1
		tr.supervised, tr.backoff = -1, 0
		tr.last, tr.streak = i, -1
	}
	failed := func(err string, i int) {
		tr.last = i
		switch {
		case CoordinatorMoved(err):
			tr.moves = append(tr.moves, i)
			tr.streak = -1
		case err == "":
			tr.streak = -1
		default:
			tr.lastErr, tr.errPos = err, i
			if tr.streak < 0 || tr.streakErr != err {
				tr.streak, tr.streakErr = i, err
			}
		}
	}
	for i := 0; i < upto && i < len(f.ev); i++ {
		e := f.ev[i]
		if e.Type == history.Info && CoordinatorMoved(callError(f.vals[i])) && callMember(f.vals[i], e.Process) == name {
			// A write answered after it timed out: unknown, but the
			// coordinator said it moved.
			tr.moves = append(tr.moves, i)
			tr.last = i
			continue
		}
		switch v := f.vals[i].(type) {
		case history.Join:
			if memberName(v.Member, e.Process) != name {
				continue
			}
			if v.InstanceID != "" {
				tr.inst = v.InstanceID
			}
			switch {
			case e.Type == history.OK && v.Generation >= 0:
				ok(v.MemberID, i)
			case e.Type == history.Fail:
				failed(v.Error, i)
			}
		case history.Sync:
			if memberName(v.Member, e.Process) != name {
				continue
			}
			switch e.Type {
			case history.OK:
				ok(v.MemberID, i)
			case history.Fail:
				failed(v.Error, i)
			}
		case history.Heartbeat:
			if memberName(v.Member, e.Process) != name {
				continue
			}
			switch {
			case e.Type == history.OK && (v.Protocol != history.ProtocolConsumer || v.ResultEpoch > 0):
				ok(v.MemberID, i)
			case e.Type == history.Fail:
				failed(v.Error, i)
			}
		case history.Membership:
			switch {
			case e.Type == history.Invoke || memberName(v.Member, e.Process) != name:
			case e.F == history.FStopped:
				tr.stopped, tr.last = i, i
			case tr.errPos >= 0:
				// The member telling what the failed call before meant
				// (JoinGroup: fatal FENCED_INSTANCE_ID): the call is the cause.
				tr.last = i
			default:
				failed(v.Error, i)
			}
		case history.Leave:
			if e.Type != history.Invoke && memberName(v.Member, e.Process) == name {
				failed(v.Error, i)
			}
		case history.Restart:
			if memberName(v.Member, e.Process) != name {
				continue
			}
			tr.last, tr.streak = i, -1
			switch v.Action {
			case history.RestartScheduled:
				// Not stopped for good: its supervisor brings it back.
				if tr.supervised < 0 {
					tr.supervised = tr.stopped
				}
				if tr.supervised < 0 {
					tr.supervised = i
				}
				tr.stopped = -1
				tr.backoff = max(tr.backoff, v.Backoff)
			case history.RestartStarted:
				tr.restarts++
			case history.RestartCancelled:
				tr.supervised, tr.backoff = -1, 0 // the harness took it over
			}
		}
	}
	return tr
}

func stoppedWhy(f *facts, pos int) string {
	if m, ok := f.vals[pos].(history.Membership); ok && m.Error != "" {
		return m.Error
	}
	return "no reason given"
}

func memberName(member, process string) string {
	if member != "" {
		return member
	}
	name, _, _ := strings.Cut(process, "/")
	return name
}

// judgeMembership is EventuallyConverges' last part: a Stable group can
// still be short of a member that gave up (a fatal error, a fence it never
// came back from) or that the coordinator dropped unnoticed, every
// partition owned by the others and the application a consumer short.
// Every member the harness ran at the final observation (the final phase
// marker names them) must be in the group at the last description, unless
// it was out for less than the bound: measured from its last membership
// event, or from the heal when that came later (the harness's stalls
// counted as stall.go says).
func judgeMembership(v *verdict, f *facts, g *history.GroupDescription, upto int, at, healT time.Duration, label string, pos int, bound Bound, refused map[int]bool, stalls stallRule) {
	fin := f.lastPhase(history.PhaseFinal)
	var running []string
	if fin >= 0 {
		if ph, ok := f.vals[fin].(history.Phase); ok {
			running = ph.Members
		}
	}
	if len(running) == 0 {
		v.note("membership not judged: the final phase marker does not name the members that ran (a history written before it did)")
		return
	}
	ids := map[string]bool{}
	insts := map[string]bool{}
	for _, m := range g.Members {
		ids[m.MemberID] = true
		if m.InstanceID != "" {
			insts[m.InstanceID] = true
		}
	}
	lost := lossShare{f: f, at: at, members: len(running), from: f.workloadStart()}
	in := 0
	for _, name := range running {
		tr := traceMember(f, name, upto)
		if (tr.id != "" && ids[tr.id]) || (tr.inst != "" && insts[tr.inst]) || g.ListsClientOf(name) {
			in++
			if tr.restarts > 0 {
				v.note("member %s is in the group at the %s after its supervisor restarted it %d time(s) (it had stopped for good)", name, label, tr.restarts)
			}
			continue
		}
		since, what, limit := healT, "the heal", bound
		switch {
		case tr.supervised >= 0:
			// Restarted by its supervisor since it stopped: each restart
			// is a membership event, so it is measured from the stop, and
			// given the longest backoff its supervisor waited on top.
			if f.ev[tr.supervised].Time > healT {
				since, what = f.ev[tr.supervised].Time, "its stop at event "+itoa(f.idx(tr.supervised))+", since which its supervisor restarts it"
			}
			limit.Limit += tr.backoff
			limit.Reason += " + the longest backoff of its supervisor's restarts " + dur(tr.backoff)
		case tr.streak >= 0 && tr.streak < tr.last:
			// Refused the same way since the streak began: out since then.
			if t := f.ev[tr.streak].Time; t > healT {
				since, what = t, "the first of its calls refused "+tr.streakErr+" (event "+itoa(f.idx(tr.streak))+"), every one since refused the same way"
			}
		case tr.last >= 0 && f.ev[tr.last].Time > healT:
			since, what = f.ev[tr.last].Time, "its last membership event (event "+itoa(f.idx(tr.last))+")"
		}
		last := "no membership event at all"
		if tr.last >= 0 {
			last = "its last membership event is event " + itoa(f.idx(tr.last))
			if tr.errPos >= 0 {
				last += ", after " + tr.lastErr + " at event " + itoa(f.idx(tr.errPos))
			}
		}
		if tr.errPos >= 0 && refused[tr.errPos] {
			x, _ := FindingByID(FindingStaticRejoinOwnInstance)
			lost.judge(v, x, name, tr, fmt.Sprintf("member %s is not in the group at the %s since %s at event %d (failed above)", name, label, tr.lastErr, f.idx(tr.errPos)), nil)
			continue
		}
		if tr.stopped >= 0 {
			// It stopped for good: no time would bring it back.
			if x, ok := matchLoss(f, tr); ok {
				lost.judge(v, x, name, tr, fmt.Sprintf("member %s stopped for good at event %d after %s at event %d and is not in the group at the %s", name, f.idx(tr.stopped), tr.lastErr, f.idx(tr.errPos), label),
					[]int64{f.idx(tr.errPos), f.idx(tr.stopped), f.idx(pos)})
				continue
			}
			idx := []int64{f.idx(tr.stopped), f.idx(pos)}
			if tr.errPos >= 0 {
				idx = append([]int64{f.idx(tr.errPos)}, idx...)
			}
			v.fail(idx, "member %s stopped for good at event %d (%s) and is not in the group at the %s: %s", name, f.idx(tr.stopped), stoppedWhy(f, tr.stopped), label, last)
			continue
		}
		m := stalls.measure(f, since, at, limit)
		if s := m.since(stalls, f); s != "" {
			since, what = m.start, s
		}
		limit = m.bound
		waited := at - since
		if waited < limit.Limit {
			v.note("member %s not in the group at the %s, only %s after %s: not judged, under the bound (%s)", name, label, dur(waited), what, limit.Reason)
			continue
		}
		if x, ok := matchLoss(f, tr); ok {
			lost.judge(v, x, name, tr, fmt.Sprintf("member %s not in the group at the %s since %s at event %d", name, label, tr.lastErr, f.idx(tr.errPos)),
				[]int64{f.idx(tr.errPos), f.idx(pos)})
			continue
		}
		idx := append([]int64{f.idx(pos)}, m.cite...)
		if tr.last >= 0 {
			idx = append([]int64{f.idx(tr.last)}, idx...)
		}
		if tr.supervised >= 0 && tr.supervised != tr.last {
			idx = append([]int64{f.idx(tr.supervised)}, idx...)
		}
		v.fail(idx, "member %s runs but is not in the group at the %s (member id %q): %s; %s after %s, %s over the bound (%s)",
			name, label, tr.id, last, dur(waited), what, dur(waited-limit.Limit), limit.Reason)
	}
	v.note("membership: %d of the %d running member(s) in the group at the %s", in, len(running), label)
}

// judgeSelfRefusals fails the verdict for every static member the history
// shows refused its own instance id before position upto (finding
// kafka-static-rejoin-own-instance), whether or not it came back later (a
// supervisor may restart it under a new member id, or time may expire its
// old self): Kafka kept a member out of the group that had every right to
// be in it. It returns the refused answers' positions.
func judgeSelfRefusals(v *verdict, f *facts, upto int) map[int]bool {
	x, _ := FindingByID(FindingStaticRejoinOwnInstance)
	refused := map[int]bool{}
	for _, s := range selfRefusedRejoins(f) {
		last := s.Events[len(s.Events)-1]
		pos := f.pos(last)
		if pos < 0 || pos >= upto {
			continue
		}
		refused[pos] = true
		v.failKnown(x, Known{Member: s.Member, Events: s.Events}, s.Events, "%s: Kafka refused the static member its own place in the group (%s)", s.What, x.Upstream)
	}
	return refused
}

// lossShare measures how much of a run was judged without the members lost
// for good to a known finding: from the loss (the failed call) to the
// judged description, over every running member's workload.
type lossShare struct {
	f       *facts
	at      time.Duration // the judged description
	from    time.Duration // the workload's start
	members int
}

// judge notes (or, for a bug that fails, fails) member name's loss after
// tr.errPos as finding x, saying how long the workload went on without it
// and its share of the run's member-seconds.
func (l lossShare) judge(v *verdict, x Finding, name string, tr memberTrace, head string, idx []int64) {
	lossT := max(l.f.ev[tr.errPos].Time, l.from)
	without := max(l.at-lossT, 0)
	total := time.Duration(l.members) * max(l.at-l.from, 0)
	share := 0.0
	if total > 0 {
		share = float64(without) / float64(total)
	}
	k := Known{Member: name, Events: idx, Without: without, Share: share}
	what := "a known Kafka behaviour"
	if x.Kind == Bug {
		what = "a known bug"
	}
	tail := fmt.Sprintf("the workload went on without it for %s, %.1f%% of the run's member-seconds (%d member(s) × %s from the workload's start)",
		dur(without), 100*share, l.members, dur(max(l.at-l.from, 0)))
	switch {
	case x.Fails() && idx == nil:
		// Failed already, by the sighting that lost it: only measured.
		k.Finding, k.Failed = x.ID, true
		v.Known = append(v.Known, k)
		v.note("%s: %s; %s", head, x.ID, tail)
		return
	case x.Fails():
		v.failKnown(x, k, idx, "%s: %s; %s", head, x.Title, tail)
		return
	}
	msg := fmt.Sprintf("%s: %s (%s, %s): %s; %s", head, what, x.ID, x.Disposition(), x.Title, tail)
	v.noteKnown(x, k, "%s", msg)
}
