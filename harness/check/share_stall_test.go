package check

import (
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// stallSharePlan has a share run's timers: the plan's heartbeat of 1 s
// makes the slack after a lapse 2 s + 2×1 s = 4 s; the share group's
// session of 6 s and heartbeat of 500 ms make a stall of 5.5 s or more
// long enough for a share member's session to expire.
var stallSharePlan = history.Plan{Group: "g", Topics: []history.TopicPlan{{Name: "t", Partitions: 1}},
	SessionTimeout: 6 * time.Second, HeartbeatInterval: time.Second,
	Share: &history.SharePlan{DeliveryCountLimit: 3, RecordLockMs: 5000, SessionTimeoutMs: 6000, HeartbeatIntervalMs: 500}}

// stall records that the harness did not run from from to to
// (milliseconds): its pulse records it at to.
func (h *shareHist) stall(from, to int) {
	h.add(to, history.Info, "harness", history.FStall, history.Stall{From: ms(from), To: ms(to), Every: 100 * time.Millisecond})
}

// starvedShare is a share run's end with a starved harness: t-0@0 is
// produced and acquired by a at 100–200 ms under a 5 s lock, so its lock
// lapses by 5.2 s; a never acknowledges it (it did not run), and nobody
// fetches it again before the final phase at finalAt. stall, when
// to > 0, is the harness's recorded stall; fetchAt moves a's fetch.
type starvedShare struct {
	finalAt            int
	stallFrom, stallTo int
	fetchAt            int
}

func (s starvedShare) build() *shareHist {
	h := &shareHist{}
	h.produce(0, 0)
	at := max(s.fetchAt, 100)
	h.fetch("a", at, at+100, history.OK, nil, acq("t", 0, 0, 1))
	if s.stallTo > 0 {
		h.stall(s.stallFrom, s.stallTo)
	}
	h.final(s.finalAt)
	return h
}

func settleUnder(t *testing.T, s starvedShare) (Verdict, int64) {
	t.Helper()
	return verdictUnder(t, s.build(), "ShareRecordsSettle", stallSharePlan)
}

// TestShareRecordsSettleStarvedHarness: a record whose lock lapsed with
// no delivery since is not charged to the broker for the time the harness
// did not run after the lapse: a long stall restarts the slack at its end,
// a short one adds its length to it. A stall too short for the overrun,
// one that ended while the record was still locked, one after the final
// phase, and an overrun counted from a long stall's end still fail; so
// does the same history without the stall recorded.
func TestShareRecordsSettleStarvedHarness(t *testing.T) {
	t.Parallel()
	// The seed's shape: the harness stops 2.8 s before the lapse and runs
	// again 8 s later; the final phase comes 2 s after that, 7.8 s after
	// the lapse (over the 4 s slack).
	seed := starvedShare{finalAt: 13000, stallFrom: 3000, stallTo: 11000}
	t.Run("a long stall across the lapse restarts the slack at its end: holds", func(t *testing.T) {
		v, stall := settleUnder(t, seed)
		mustHold(t, v)
		mustNote(t, v, "the harness did not run for 8s (3s–11s, event 4, the share members' requests with it): long enough for a share member's session to expire (session 6s − heartbeat 500ms = 5.5s)")
		mustNote(t, v, "t-0@0: its lock lapsed 7.8s before the final phase with no delivery since, over the slack (2s + 2×heartbeat 1s = 4s), but the harness did not run for part of that time: counted from the end of the harness's stall at event 4, 2s")
		mustNote(t, v, "1 records whose lock lapsed more than the slack")
		if stall != 4 {
			t.Fatalf("the stall is event %d, want 4", stall)
		}
	})
	t.Run("the same history without the stall recorded fails", func(t *testing.T) {
		s := seed
		s.stallTo = 0
		v, _ := settleUnder(t, s)
		mustFailSaying(t, v, "its lock lapsed 7.8s before the final phase without another delivery")
		if strings.Contains(v.Violations[0].Message, "harness") {
			t.Fatalf("message %q speaks of a stall the history does not record", v.Violations[0].Message)
		}
	})
	t.Run("a short stall after the lapse adds its length to the slack: holds", func(t *testing.T) {
		// Lapse 5.2 s, stall 6–9 s, final 12 s: 6.8 s, within 4 + 3 = 7 s.
		v, _ := settleUnder(t, starvedShare{finalAt: 12000, stallFrom: 6000, stallTo: 9000})
		mustHold(t, v)
		mustNote(t, v, "too short for a share member's session to expire")
		mustNote(t, v, "counted from the lapse, within the slack (2s + 2×heartbeat 1s = 4s + the harness's stalls 3s (1) = 7s)")
	})
	// Stalls counted, each in full or in part, that do not cover the overrun: the violation cites
	// the stall and says how the bound was counted.
	for _, c := range []struct {
		name string
		run  starvedShare
		say  string
	}{
		// The same 3 s stall from 4 s: only 1.8 s of it after the lapse.
		{"a short stall is counted only for its part after the lapse: fails",
			starvedShare{finalAt: 12000, stallFrom: 4000, stallTo: 7000},
			"its lock lapsed 6.8s before the final phase without another delivery, 1s over the slack for a delivery again (2s + 2×heartbeat 1s = 4s + the harness's stalls 1.8s (1) = 5.8s)"},
		{"a stall too short for the overrun fails",
			starvedShare{finalAt: 12000, stallFrom: 7000, stallTo: 8000},
			"1.8s over the slack for a delivery again (2s + 2×heartbeat 1s = 4s + the harness's stalls 1s (1) = 5s)"},
		{"a long stall after the lapse, then no delivery for 5 s after its end, fails",
			starvedShare{finalAt: 17000, stallFrom: 6000, stallTo: 12000},
			"its lock lapsed 11.8s before the final phase without another delivery and 5s after the end of the harness's stall at event 4 (it did not run from 6s to 12s, 6s: long enough for a session to expire), from which the bound counts, 1s over the slack for a delivery again (2s + 2×heartbeat 1s = 4s)"},
		// Lapse 5.2 s, stall 6–11.2 s, final 15 s: 9.8 s against
		// 4 + 5.2 = 9.2 s. Taken as long (the plan's 6 s − 1 s = 5 s) it
		// would restart the slack at 11.2 s and hold.
		{"a 5.2 s stall is short for a share session of 6 s and heartbeat 500 ms: fails",
			starvedShare{finalAt: 15000, stallFrom: 6000, stallTo: 11200},
			"600ms over the slack for a delivery again (2s + 2×heartbeat 1s = 4s + the harness's stalls 5.2s (1) = 9.2s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, stall := settleUnder(t, c.run)
			mustSay(t, mustCite(t, v, stall), c.say)
		})
	}
	// Stalls that end before the lapse or come after the final phase are not counted: each fails
	// as if it had not been.
	for _, c := range []struct {
		name, lapsed, when string
		run                starvedShare
	}{
		// a fetches at 8–8.1 s (lapse 13.1 s) after a 6 s stall from 1 s.
		{"a long stall that ended while the record was locked moves nothing: fails", "6.9s", "before the lapse",
			starvedShare{finalAt: 20000, stallFrom: 1000, stallTo: 7000, fetchAt: 8000}},
		{"a short stall that ended at the lapse moves nothing: fails", "6.8s", "before the lapse",
			starvedShare{finalAt: 12000, stallFrom: 1000, stallTo: 5200}},
		{"a long stall after the final phase excuses nothing: fails", "6.8s", "after the final phase",
			starvedShare{finalAt: 12000, stallFrom: 13000, stallTo: 20000}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, _ := settleUnder(t, c.run)
			mustFailSaying(t, v, "its lock lapsed "+c.lapsed+" before the final phase without another delivery")
			if strings.Contains(v.Violations[0].Message, "harness") {
				t.Fatalf("a stall %s was counted: %q", c.when, v.Violations[0].Message)
			}
		})
	}
	t.Run("a plan without the share timers takes the plan's: the same 5.2 s stall is long, and holds", func(t *testing.T) {
		plan := stallSharePlan
		plan.Share = &history.SharePlan{DeliveryCountLimit: 3, RecordLockMs: 5000}
		v, _ := verdictUnder(t, starvedShare{finalAt: 15000, stallFrom: 6000, stallTo: 11200}.build(), "ShareRecordsSettle", plan)
		mustHold(t, v)
		mustNote(t, v, "long enough for a share member's session to expire (session 6s − heartbeat 1s = 5s)")
		mustNote(t, v, "counted from the end of the harness's stall at event 4, 3.8s")
	})
}

// TestShareLockExclusiveStarvedHarness: a stall of the harness excuses no
// acquisition within another's lock (the holder that did not run could
// not acknowledge or renew, but its lock holds until it lapses); an
// acquisition after the lapse holds with or without one.
func TestShareLockExclusiveStarvedHarness(t *testing.T) {
	t.Parallel()
	h := &shareHist{}
	h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 4, 1))
	h.stall(200, 3200)
	h.fetch("b", 3500, 3600, history.OK, nil, acq("t", 0, 0, 2))
	v, _ := verdictUnder(t, h, "ShareLockExclusive", stallSharePlan)
	mustFailSaying(t, v, "while a still held it")
	mustNote(t, v, "1 harness stall(s) recorded (the longest 3s): they excuse no acquisition within a lock")

	h = &shareHist{}
	h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 4, 1))
	h.stall(200, 6200)
	h.fetch("b", 6300, 6400, history.OK, nil, acq("t", 0, 0, 2))
	v, _ = verdictUnder(t, h, "ShareLockExclusive", stallSharePlan)
	mustHold(t, v)
}
