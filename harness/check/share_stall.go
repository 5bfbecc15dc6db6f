package check

import (
	"fmt"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// The share checkers and the harness's stalls (history.FStall, stall.go).
// Every share member's requests go through the harness's process: the
// in-process members (share, kgo-share) send them, and java-share's JVM
// reaches the brokers only through the member's gateway, which runs there.
// While the harness did not run, no member sent an acknowledgement, a lock
// renewal, a heartbeat or a fetch. How that bears on each judgement that
// compares times:
//
//   - ShareLockExclusive compares an acquisition's answer with the earliest
//     end of an earlier lock (its fetch's invoke plus the lock). A stall
//     excuses nothing there: the lock runs on the broker's clock, and a
//     call is recorded before it leaves the harness's process (the share
//     member reports it sent before sending, wiretap before writing it)
//     and answered once the answer is in it, so a stall can only make a
//     lock's recorded start earlier and an answer's recorded time later
//     than they were, which hides breaches and invents none. A holder that
//     could not acknowledge or renew during a stall keeps its lock until
//     it lapses: that is the lapse the checker already allows.
//   - ShareRecordsSettle fails a record whose lock lapsed more than a slack
//     before the final phase with no delivery since: after the lapse the
//     record is available, and a member fetching its partition gets it
//     again. A member that did not run did not fetch, so the time from the
//     lapse to the final phase is corrected as a convergence is (stall.go's
//     measure, the window being the lapse to the final phase, the bound the
//     slack): a long stall, during which a share member's session could
//     have expired, restarts the window at its end; a short one adds the
//     part of it after the lapse to the slack. A stall that ended by the
//     lapse (while the record was still locked) moves nothing.
//
// The other share judgements compare positions in the history, not times:
// what a stall does to when an event is recorded cannot reorder a call's
// invoke after its send or its answer before its receipt.

// shareStallRule is the stall rule of a share run: long stalls from the
// share group's session timeout less its heartbeat interval when the plan
// records them (SharePlan), else from the plan's timers.
func shareStallRule(f *facts, plan history.Plan) stallRule {
	p := plan
	if s := plan.Share; s != nil && s.SessionTimeoutMs > 0 {
		p.SessionTimeout = time.Duration(s.SessionTimeoutMs) * time.Millisecond
		p.HeartbeatInterval = time.Duration(s.HeartbeatIntervalMs) * time.Millisecond
	}
	return newStallRule(f, p)
}

// said is how a note names stall s.
func (s stallAt) said(f *facts) string {
	return fmt.Sprintf("the harness did not run for %s (%s–%s, event %d, the share members' requests with it)", dur(s.len()), dur(s.from), dur(s.to), f.idx(s.pos))
}

// noteSettle says, in v's notes, what each stall does to ShareRecordsSettle.
func (r stallRule) noteSettle(v *verdict, f *facts) {
	for i, s := range r.stalls {
		if i == maxStallNotes {
			v.note("and %d more harness stalls, counted the same way", len(r.stalls)-maxStallNotes)
			break
		}
		if r.isLong(s) {
			v.note("%s: long enough for a share member's session to expire (%s), so a record whose lock lapsed before its end gets the whole slack from its end to be delivered again", s.said(f), r.longWhy)
		} else {
			v.note("%s: too short for a share member's session to expire, so a record whose lock lapsed before its end gets the part of it after the lapse added to the slack", s.said(f))
		}
	}
}

// noteLocks says, in v's notes, that the stalls excuse no acquisition
// within a lock.
func (r stallRule) noteLocks(v *verdict) {
	if len(r.stalls) == 0 {
		return
	}
	longest := time.Duration(0)
	for _, s := range r.stalls {
		longest = max(longest, s.len())
	}
	v.note("%d harness stall(s) recorded (the longest %s): they excuse no acquisition within a lock, which runs on the broker's clock: a stall only makes a fetch's recorded send earlier, and its answer's recorded time later, than they were", len(r.stalls), dur(longest))
}

// lapseWait judges the time from lapse (a lock's latest end) to finalAt
// against slack, corrected for the stalls: how far it is over (≤ 0:
// within), the measure, and the words that say where it was counted from
// when a long stall moved it. When the stalls excuse an overrun of the
// plain slack, it says so in v's notes for the first few records.
func (r stallRule) lapseWait(v *verdict, f *facts, k shareKey, lapse, finalAt time.Duration, slack Bound, excused *int) (time.Duration, measure, string) {
	m := r.measure(f, lapse, finalAt, slack)
	over, from := m.overrun(r, f, finalAt)
	if took := finalAt - lapse; took >= slack.Limit && over < 0 {
		if *excused++; *excused <= maxStallNotes {
			v.note("%s: its lock lapsed %s before the final phase with no delivery since, over the slack (%s), but the harness did not run for part of that time: %s, within the slack (%s)", k, dur(took), slack.Reason, m.countedFrom(r, f, finalAt, "the lapse"), m.bound.Reason)
		}
	}
	return over, m, from
}
