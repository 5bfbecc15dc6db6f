package check

import (
	"slices"
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
}

// traceMember follows member name through the events before position upto.
func traceMember(f *facts, name string, upto int) memberTrace {
	tr := memberTrace{last: -1, errPos: -1, stopped: -1, supervised: -1}
	ok := func(id string, i int) {
		if id != "" {
			tr.id = id
		}
		tr.lastErr, tr.errPos, tr.stopped = "", -1, -1
		tr.supervised, tr.backoff = -1, 0
		tr.last = i
	}
	failed := func(err string, i int) {
		tr.last = i
		switch err {
		case "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS":
			tr.moves = append(tr.moves, i)
		case "":
		default:
			tr.lastErr, tr.errPos = err, i
		}
	}
	for i := 0; i < upto && i < len(f.ev); i++ {
		e := f.ev[i]
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
			tr.last = i
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

// moveWindow is how close to a coordinator move a static member's fatal
// answer must come to be the behaviour knownGiveUp names.
const moveWindow = 15 * time.Second

// knownGiveUp says whether member tr dropped out of the group, after its
// failed membership call at tr.errPos, by a Kafka behaviour the project
// knows (README, Findings), and which. KafkaConsumer treats every one of
// these answers as fatal (AbstractHeartbeatRequestManager.onErrorResponse
// and AbstractCoordinator's join handlers), and so do groupquake's
// members, as Java.
func knownGiveUp(f *facts, tr memberTrace) (string, bool) {
	at := f.ev[tr.errPos].Time
	moved := slices.ContainsFunc(tr.moves, func(p int) bool { return p < tr.errPos && at-f.ev[p].Time <= moveWindow })
	switch v := f.vals[tr.errPos].(type) {
	case history.Heartbeat:
		if v.Protocol != history.ProtocolConsumer {
			break
		}
		switch {
		case v.Error == "GROUP_ID_NOT_FOUND":
			return "a coordinator that has lost its log answers ConsumerGroupHeartbeat from state it never wrote with GROUP_ID_NOT_FOUND (README, Findings)", true
		case v.Error == "UNKNOWN_SERVER_ERROR" && v.Epoch == 0:
			return "a consumer-protocol member joining a classic group while a rebalance is in flight whose members do not all support the group's protocol makes the online upgrade throw (ClassicGroupMember.metadata), answered UNKNOWN_SERVER_ERROR (README, Findings; vector consumer/mixed_upgrade_refused.txt)", true
		case v.Error == "UNRELEASED_INSTANCE_ID" && moved:
			return "a static member told UNKNOWN_MEMBER_ID by a coordinator answering from state it never wrote rejoins at epoch 0, and the next coordinator, which still holds it at its epoch from the log, refuses its instance id (README, Findings)", true
		}
	case history.Join:
		if v.Error == "FENCED_INSTANCE_ID" && moved {
			return "a static member given a new member id by a coordinator answering from state it never wrote rejoins with it, and the next coordinator, which holds the instance id under the member id in the log, fences it (README, Findings)", true
		}
	}
	return "", false
}

// judgeMembership is EventuallyConverges' last part: a Stable group can
// still be short of a member that gave up (a fatal error, a fence it never
// came back from) or that the coordinator dropped unnoticed, every
// partition owned by the others and the application a consumer short.
// Every member the harness ran at the final observation (the final phase
// marker names them) must be in the group at the last description, unless
// it was out for less than the bound: measured from its last membership
// event, or from the heal when that came later.
func judgeMembership(v *verdict, f *facts, g *history.GroupDescription, upto int, at, healT time.Duration, label string, pos int, bound Bound) {
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
		if tr.stopped >= 0 {
			// It stopped for good: no time would bring it back.
			if tr.errPos >= 0 {
				if why, ok := knownGiveUp(f, tr); ok {
					v.note("member %s stopped for good at event %d after %s at event %d and is not in the group at the %s: a known Kafka behaviour: %s", name, f.idx(tr.stopped), tr.lastErr, f.idx(tr.errPos), label, why)
					continue
				}
			}
			idx := []int64{f.idx(tr.stopped), f.idx(pos)}
			if tr.errPos >= 0 {
				idx = append([]int64{f.idx(tr.errPos)}, idx...)
			}
			v.fail(idx, "member %s stopped for good at event %d (%s) and is not in the group at the %s: %s", name, f.idx(tr.stopped), stoppedWhy(f, tr.stopped), label, last)
			continue
		}
		waited := at - since
		if waited < limit.Limit {
			v.note("member %s not in the group at the %s, only %s after %s: not judged, under the bound (%s)", name, label, dur(waited), what, limit.Reason)
			continue
		}
		if tr.errPos >= 0 {
			if why, ok := knownGiveUp(f, tr); ok {
				v.note("member %s not in the group at the %s since %s at event %d: a known Kafka behaviour: %s", name, label, tr.lastErr, f.idx(tr.errPos), why)
				continue
			}
		}
		idx := []int64{f.idx(pos)}
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
