package check

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// shareHist builds share-group histories: each call is an invoke and a
// completion at the times given (milliseconds), on the member's fetch
// process; events are ordered by time and indexed at the end.
type shareHist struct {
	evs []history.Event
	// ids gives a member's calls a member id (its incarnation); without
	// one, the checkers take the member's name for it.
	ids map[string]string
}

// incarnation makes member's later calls carry member id id.
func (h *shareHist) incarnation(member, id string) {
	if h.ids == nil {
		h.ids = map[string]string{}
	}
	h.ids[member] = id
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func (h *shareHist) add(at int, typ history.Type, process, f string, v any) {
	h.evs = append(h.evs, history.Event{Time: ms(at), Type: typ, Process: process, F: f, Value: v})
}

func acq(tp string, first, last int64, count int16) history.ShareAcquired {
	return history.ShareAcquired{ShareRange: history.ShareRange{Topic: tp, Partition: 0, First: first, Last: last}, DeliveryCount: count}
}

func ackOf(typ string, first, last int64) history.ShareAck {
	return history.ShareAck{ShareRange: history.ShareRange{Topic: "t", Partition: 0, First: first, Last: last}, Type: typ}
}

// fetch is a ShareFetch of member to node 1 sent at inv and answered at
// ans with typ, acquiring acquired under a 5 s lock.
func (h *shareHist) fetch(member string, inv, ans int, typ history.Type, acks []history.ShareAck, acquired ...history.ShareAcquired) {
	v := history.ShareFetch{Member: member, MemberID: h.ids[member], Node: 1, SessionEpoch: 1, Fetch: history.TPs("t", 0), Acks: acks}
	h.add(inv, history.Invoke, member+"/fetch", history.FShareFetch, v)
	if typ == history.Invoke {
		return
	}
	done := v
	if typ == history.OK {
		done.LockTimeoutMs, done.Acquired = 5000, acquired
	}
	h.add(ans, typ, member+"/fetch", history.FShareFetch, done)
}

// fetchFrom is fetch from another broker than node 1.
func (h *shareHist) fetchFrom(node int32, member string, inv, ans int, acquired ...history.ShareAcquired) {
	v := history.ShareFetch{Member: member, Node: node, SessionEpoch: 1, Fetch: history.TPs("t", 0)}
	h.add(inv, history.Invoke, member+"/fetch", history.FShareFetch, v)
	done := v
	done.LockTimeoutMs, done.Acquired = 5000, acquired
	h.add(ans, history.OK, member+"/fetch", history.FShareFetch, done)
}

// ack is a ShareAcknowledge of member answered with typ; ackErr, when set,
// is the partition's error in an answered call.
func (h *shareHist) ack(member string, inv, ans int, typ history.Type, ackErr string, acks ...history.ShareAck) {
	v := history.ShareFetch{Member: member, MemberID: h.ids[member], Node: 1, SessionEpoch: 2, Acks: acks}
	h.add(inv, history.Invoke, member+"/fetch", history.FShareAck, v)
	done := v
	if ackErr != "" {
		done.AckErrors = []history.PartitionError{{Topic: "t", Partition: 0, Error: ackErr}}
	}
	h.add(ans, typ, member+"/fetch", history.FShareAck, done)
}

func (h *shareHist) fault(what, target string, start, stop int) {
	p := "nemesis/" + what + target
	v := history.Fault{What: what, Target: []string{target}}
	h.add(start, history.Invoke, p, history.FFaultStart, v)
	h.add(start+1, history.OK, p, history.FFaultStart, v)
	h.add(stop, history.Invoke, p, history.FFaultStop, v)
	h.add(stop+1, history.OK, p, history.FFaultStop, v)
}

func (h *shareHist) produce(at int, off int64) {
	v := history.Produce{Topic: "t", Partition: 0, Seq: off, Offset: -1}
	h.add(at, history.Invoke, "p0", history.FProduce, v)
	v.Offset, v.Acked = off, true
	h.add(at+1, history.OK, "p0", history.FProduce, v)
}

func (h *shareHist) final(at int) {
	h.add(at, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseFinal})
}

func (h *shareHist) events() []history.Event {
	out := append([]history.Event(nil), h.evs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time < out[j].Time })
	for i := range out {
		out[i].Index = int64(i)
	}
	return out
}

var sharePlan = history.Plan{Group: "g", Topics: []history.TopicPlan{{Name: "t", Partitions: 1}},
	Share: &history.SharePlan{DeliveryCountLimit: 3, RecordLockMs: 5000}}

// shareVerdict is the named share verdict of h judged under sharePlan.
func shareVerdict(t *testing.T, h *shareHist, name string) Verdict {
	t.Helper()
	v, _ := verdictUnder(t, h, name, sharePlan)
	return v
}

// verdictUnder is the named share verdict of h judged under plan, and the
// index of h's first stall event (-1 when none).
func verdictUnder(t *testing.T, h *shareHist, name string, plan history.Plan) (Verdict, int64) {
	t.Helper()
	evs := h.events()
	if wf := HistoryWellFormed(evs); !wf.Holds {
		t.Fatalf("test history not well formed: %+v", wf.Violations)
	}
	stall := int64(-1)
	for _, e := range evs {
		if e.F == history.FStall && stall < 0 {
			stall = e.Index
		}
	}
	for _, v := range ShareVerdicts(evs, nil, plan) {
		if v.Name == name {
			return v, stall
		}
	}
	t.Fatalf("no verdict %s", name)
	return Verdict{}, -1
}

func wantHolds(t *testing.T, v Verdict, holds bool, contains string) {
	t.Helper()
	if v.Holds != holds {
		t.Fatalf("%s holds=%v, want %v: %+v", v.Name, v.Holds, holds, v)
	}
	if !holds && !strings.Contains(v.Violations[0].Message, contains) {
		t.Errorf("%s: %q does not say %q", v.Name, v.Violations[0].Message, contains)
	}
}

// TestShareLockExclusive: a second member acquiring a record within the
// first's lock is a violation; a lapsed lock, the holder's release, a
// lost answer on its session, or a node fault in between excuse it, a
// fault on another member's links does not.
func TestShareLockExclusive(t *testing.T) {
	base := func() *shareHist {
		h := &shareHist{}
		h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 4, 1))
		return h
	}
	h := base()
	h.fetch("b", 1000, 1100, history.OK, nil, acq("t", 0, 0, 2))
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), false, "while a still held it")
	// The lock it was within, how it was worked out, and by how much.
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), false, "answered 1.1s after the first fetch was sent, 3.8s before its lock could have lapsed (the lock 5s its fetch was answered with, less 100ms for the broker's timer, = 4.9s)")

	h = base()
	h.fetch("b", 6000, 6100, history.OK, nil, acq("t", 0, 0, 2))
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), true, "")

	h = base()
	h.ack("a", 500, 600, history.OK, "", ackOf(history.AckRelease, 0, 0))
	h.fetch("b", 1000, 1100, history.OK, nil, acq("t", 0, 0, 2))
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), true, "")

	h = base()
	h.fetch("a", 300, 800, history.Info, nil)
	h.fetch("b", 1000, 1100, history.OK, nil, acq("t", 0, 0, 2))
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), true, "")

	h = base()
	h.fault("node-kill", "node-1", 400, 900)
	h.fetch("b", 1000, 1100, history.OK, nil, acq("t", 0, 0, 2))
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), true, "")

	h = base()
	h.fault("link-cut", "c->all-brokers", 400, 900)
	h.fetch("b", 1000, 1100, history.OK, nil, acq("t", 0, 0, 2))
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), false, "while a still held it")

	// Leadership moved without a fault (the second fetch went to another
	// broker): the new leader knows no lock.
	h = base()
	h.fetchFrom(2, "b", 1000, 1100, acq("t", 0, 0, 1))
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), true, "")

	h = base()
	h.fault("link-cut", "a->node-1", 400, 900)
	h.fetch("b", 1000, 1100, history.OK, nil, acq("t", 0, 0, 2))
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), true, "")
}

// heartbeat is a ShareGroupHeartbeat of member answered with errName
// (fail) or without an error (ok).
func (h *shareHist) heartbeat(member string, inv, ans int, errName string) {
	v := history.ShareHeartbeat{Member: member, Epoch: 3}
	h.add(inv, history.Invoke, member+"/hb", history.FShareHeartbeat, v)
	typ := history.OK
	if errName != "" {
		typ, v.Error = history.Fail, errName
	}
	h.add(ans, typ, member+"/hb", history.FShareHeartbeat, v)
}

// TestShareLockExclusiveUnderChurn: what a share member's churn does to
// its locks. Its crash, restart or leave may close its connections (the
// broker then ends its share sessions and releases its records), so a
// second acquisition within its lock is excused; its stall or freeze, a
// slow link, and its being fenced or leaving the group keep its
// connections and its locks (only a share session's end releases records,
// ShareSessionCache's disconnect listener): a second acquisition within
// the lock then is a violation. After the lock lapsed, a redelivery
// holds and is counted as allowed by the lapse alone.
func TestShareLockExclusiveUnderChurn(t *testing.T) {
	base := func() *shareHist {
		h := &shareHist{}
		h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 4, 1))
		return h
	}
	for _, c := range []struct {
		fault string
		holds bool
	}{
		{"member-crash", true},
		{"member-restart", true},
		{"member-leave", true},
		{"link-blackhole", true},
		{"member-stall", false},
		{"member-freeze", false},
		{"link-latency", false},
	} {
		t.Run(c.fault, func(t *testing.T) {
			h := base()
			h.fault(c.fault, "a", 400, 2000)
			h.fetch("b", 1000, 1100, history.OK, nil, acq("t", 0, 0, 2))
			wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), c.holds, "while a still held it")
		})
	}
	t.Run("fenced", func(t *testing.T) {
		h := base()
		h.heartbeat("a", 300, 350, "FENCED_MEMBER_EPOCH")
		h.fetch("b", 1000, 1100, history.OK, nil, acq("t", 0, 0, 2))
		wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), false, "while a still held it")
	})
	t.Run("lapsed during a stall", func(t *testing.T) {
		h := base()
		h.fault("member-stall", "a", 400, 9000)
		h.fetch("b", 5200, 5300, history.OK, nil, acq("t", 0, 0, 2))
		h.ack("a", 9100, 9200, history.OK, "INVALID_RECORD_STATE", ackOf(history.AckAccept, 0, 4))
		v := shareVerdict(t, h, "ShareLockExclusive")
		wantHolds(t, v, true, "")
		if !strings.Contains(strings.Join(v.Notes, " "), "1 came after the earlier lock may have lapsed (1 of them allowed by nothing but the lapse)") {
			t.Errorf("notes %v do not count the redelivery after the lapse", v.Notes)
		}
		wantHolds(t, shareVerdict(t, h, "ShareAckedNotRedelivered"), true, "")
	})
}

// TestShareIncarnations: a member started again is a new member to the
// broker (a new member id): the session end of one incarnation does not
// end the other's locks, and the broker acknowledging the new
// incarnation's acknowledgement of a record only the old one acquired is a
// violation.
func TestShareIncarnations(t *testing.T) {
	h := &shareHist{}
	h.incarnation("a", "id-1")
	h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 4, 1))
	h.incarnation("a", "id-2")
	h.fetch("a", 300, 800, history.Info, nil)
	h.fetch("b", 1000, 1100, history.OK, nil, acq("t", 0, 0, 2))
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), false, "while a still held it")

	h = &shareHist{}
	h.incarnation("a", "id-1")
	h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 4, 1))
	h.incarnation("a", "id-2")
	h.ack("a", 500, 600, history.OK, "", ackOf(history.AckAccept, 0, 0))
	wantHolds(t, shareVerdict(t, h, "ShareAcksOnlyAcquired"), false, "a's accept of t-0@0, which a never acquired")

	h = &shareHist{}
	h.incarnation("a", "id-1")
	h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 4, 1))
	h.ack("a", 500, 600, history.OK, "", ackOf(history.AckAccept, 0, 0))
	wantHolds(t, shareVerdict(t, h, "ShareAcksOnlyAcquired"), true, "")
}

// TestShareAckedNotRedelivered: a redelivery after an acknowledged accept
// is a violation; after a refused or unanswered one it is not.
func TestShareAckedNotRedelivered(t *testing.T) {
	for _, c := range []struct {
		name   string
		typ    history.Type
		ackErr string
		holds  bool
	}{
		{"acknowledged", history.OK, "", false},
		{"refused", history.OK, "INVALID_RECORD_STATE", true},
		{"unanswered", history.Info, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &shareHist{}
			h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 1, 1))
			h.ack("a", 500, 600, c.typ, c.ackErr, ackOf(history.AckAccept, 0, 1))
			h.fetch("b", 7000, 7100, history.OK, nil, acq("t", 1, 1, 2))
			wantHolds(t, shareVerdict(t, h, "ShareAckedNotRedelivered"), c.holds, "delivered again after the broker acknowledged a's accept")
		})
	}
}

// TestShareAckedTwice: two final acknowledgements of one record that the
// broker both acknowledged are a violation (a member reporting an accept
// after its lock lapsed as done, while the record went to another); a
// refused second one is not. Nor is one sent when every offset up to the
// record may have been settled: Kafka skips an acknowledgement below the
// share-partition start offset and answers it without an error
// (SharePartition.acknowledge), as a 4.4.0 churn run showed (seed 201: a
// member stalled past its lock, another rejected the record meanwhile, and
// the stalled member's reject was answered without an error).
func TestShareAckedTwice(t *testing.T) {
	twice := func(ackErr string, settleFirst bool) *shareHist {
		h := &shareHist{}
		h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 1, 1))
		if settleFirst {
			h.ack("a", 200, 300, history.OK, "", ackOf(history.AckAccept, 0, 0))
		}
		h.fetch("b", 5200, 5300, history.OK, nil, acq("t", 1, 1, 2))
		h.ack("b", 5400, 5500, history.OK, "", ackOf(history.AckReject, 1, 1))
		h.ack("a", 6000, 6100, history.OK, ackErr, ackOf(history.AckReject, 1, 1))
		return h
	}
	wantHolds(t, shareVerdict(t, twice("", false), "ShareAckedNotRedelivered"), false, "finally acknowledged twice")
	wantHolds(t, shareVerdict(t, twice("INVALID_RECORD_STATE", false), "ShareAckedNotRedelivered"), true, "")
	v := shareVerdict(t, twice("", true), "ShareAckedNotRedelivered")
	wantHolds(t, v, true, "")
	if !strings.Contains(strings.Join(v.Notes, " "), "1 later final acknowledgements") {
		t.Errorf("notes %v do not count the acknowledgement below the start offset", v.Notes)
	}
	// Settled only after the second acknowledgement was sent: the start
	// offset had not passed the record then.
	h := twice("", false)
	h.ack("a", 6200, 6300, history.OK, "", ackOf(history.AckAccept, 0, 0))
	wantHolds(t, shareVerdict(t, h, "ShareAckedNotRedelivered"), false, "finally acknowledged twice")
	// An offset before it settled by a delivery at the limit, or by an
	// accept whose answer never came, may have moved the start offset too.
	h = &shareHist{}
	h.fetch("a", 0, 100, history.OK, nil, acq("t", 1, 1, 1))
	h.fetch("c", 150, 180, history.OK, nil, acq("t", 0, 0, 3))
	h.fetch("b", 5200, 5300, history.OK, nil, acq("t", 1, 1, 2))
	h.ack("b", 5400, 5500, history.Info, "", ackOf(history.AckReject, 1, 1))
	h.ack("b", 5600, 5700, history.OK, "", ackOf(history.AckReject, 1, 1))
	h.ack("a", 6000, 6100, history.OK, "", ackOf(history.AckReject, 1, 1))
	wantHolds(t, shareVerdict(t, h, "ShareAckedNotRedelivered"), true, "")
}

// TestShareDeliveryCountBounded: counts that rise hold; a count that does
// not rise, one past the limit, and a delivery after one at the limit are
// violations, unless a node fault came between.
func TestShareDeliveryCountBounded(t *testing.T) {
	// deliveries is offset 0 of t-0 acquired with each count in turn, by a
	// and b alternately, 6 s apart.
	deliveries := func(counts ...int16) *shareHist {
		h := &shareHist{}
		for i, n := range counts {
			at := i * 6000
			h.fetch([]string{"a", "b"}[i%2], at, at+100, history.OK, nil, acq("t", 0, 0, n))
		}
		return h
	}
	for _, tc := range []struct {
		counts []int16
		holds  bool
		says   string
	}{
		{[]int16{1, 2, 3}, true, ""},
		{[]int16{2, 2}, false, "went from 2 to 2"},
		{[]int16{4}, false, "outside 1–3: 1 over the plan's limit 3 (group.share.delivery.count.limit)"},
		{[]int16{5}, false, "at count 5, outside 1–3: 2 over the plan's limit 3"},
		{[]int16{0}, false, "at count 0, 1 below 1, where a delivery count starts"},
		{[]int16{3, 1}, false, "after a delivery at the limit 3"},
	} {
		wantHolds(t, shareVerdict(t, deliveries(tc.counts...), "ShareDeliveryCountBounded"), tc.holds, tc.says)
	}

	h := deliveries(2, 2)
	h.fault("node-stop", "node-1", 3000, 4000)
	wantHolds(t, shareVerdict(t, h, "ShareDeliveryCountBounded"), true, "")

	h = &shareHist{}
	h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 0, 2))
	h.fetchFrom(2, "b", 6000, 6100, acq("t", 0, 0, 1))
	wantHolds(t, shareVerdict(t, h, "ShareDeliveryCountBounded"), true, "")
}

// TestShareAcksOnlyAcquired: the broker acknowledging a range the member
// never acquired is a violation.
func TestShareAcksOnlyAcquired(t *testing.T) {
	h := &shareHist{}
	h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 1, 1))
	h.ack("a", 500, 600, history.OK, "", ackOf(history.AckAccept, 0, 1))
	wantHolds(t, shareVerdict(t, h, "ShareAcksOnlyAcquired"), true, "")

	h.ack("a", 700, 800, history.OK, "", ackOf(history.AckAccept, 2, 4))
	wantHolds(t, shareVerdict(t, h, "ShareAcksOnlyAcquired"), false, "never acquired")

	h = &shareHist{}
	h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 1, 1))
	h.ack("b", 500, 600, history.OK, "", ackOf(history.AckReject, 0, 0))
	wantHolds(t, shareVerdict(t, h, "ShareAcksOnlyAcquired"), false, "b's reject of t-0@0, which b never acquired")
}

// TestShareRecordsSettle: produced records must be accepted, rejected or
// delivered at the limit before the final phase; one whose lock lapsed
// long before it, or never delivered, is a violation; one still under a
// lock is not; without a final phase the checker is skipped.
func TestShareRecordsSettle(t *testing.T) {
	base := func() *shareHist {
		h := &shareHist{}
		h.produce(0, 0)
		h.produce(10, 1)
		h.fetch("a", 100, 200, history.OK, nil, acq("t", 0, 0, 1))
		h.ack("a", 300, 400, history.OK, "", ackOf(history.AckAccept, 0, 0))
		return h
	}
	h := base()
	h.fetch("b", 1000, 1100, history.OK, nil, acq("t", 1, 1, 1))
	h.final(20000)
	wantHolds(t, shareVerdict(t, h, "ShareRecordsSettle"), false, "t-0@1 (produced at event")
	// Without a stall the message still names the slack and the excess.
	wantHolds(t, shareVerdict(t, h, "ShareRecordsSettle"), false, "its lock lapsed 13.9s before the final phase without another delivery, 11.9s over the slack for a delivery again (2s)")

	h = base()
	h.final(20000)
	wantHolds(t, shareVerdict(t, h, "ShareRecordsSettle"), false, "never delivered")
	wantHolds(t, shareVerdict(t, h, "ShareRecordsSettle"), false, "before the final phase (event 8, 19.989s after its produce was answered)")

	h = base()
	h.fetch("b", 1000, 1100, history.OK, nil, acq("t", 1, 1, 3))
	h.final(20000)
	wantHolds(t, shareVerdict(t, h, "ShareRecordsSettle"), true, "")

	h = base()
	h.fetch("b", 18000, 18100, history.OK, nil, acq("t", 1, 1, 1))
	h.final(20000)
	v := shareVerdict(t, h, "ShareRecordsSettle")
	wantHolds(t, v, true, "")
	if !strings.Contains(strings.Join(v.Notes, " "), "1 still under a lock") {
		t.Errorf("notes %v do not count the record under a lock", v.Notes)
	}

	h = base()
	if v := shareVerdict(t, h, "ShareRecordsSettle"); v.Skipped == "" {
		t.Errorf("judged without a final phase: %+v", v)
	}
}

// TestShareVerdictsOnlyWithShareMembers: a history without share members
// gets no share verdicts; one with them gets all six after the others.
func TestShareVerdictsOnlyWithShareMembers(t *testing.T) {
	h := &shareHist{}
	h.produce(0, 0)
	for _, v := range All(h.events(), nil, sharePlan) {
		if strings.HasPrefix(v.Name, "Share") {
			t.Errorf("verdict %s in a run without share members", v.Name)
		}
	}
	h.fetch("a", 100, 200, history.OK, nil, acq("t", 0, 0, 1))
	n := 0
	for _, v := range All(h.events(), nil, sharePlan) {
		if strings.HasPrefix(v.Name, "Share") {
			n++
		}
	}
	if n != 6 {
		t.Errorf("%d share verdicts, want 6", n)
	}
	// Share members alone: the consumer-group checkers have no member to
	// judge (NoLostRecords would otherwise count every record as never
	// consumed): they do not apply, and HistoryWellFormed says so.
	vs := All(h.events(), nil, sharePlan)
	for _, v := range vs {
		if c, ok := Named(v.Name); ok && c.Groups&ShareGroups == 0 {
			t.Errorf("%s judged a run without consumer-group members: %+v", v.Name, v)
		}
	}
	notApply := 0
	for _, c := range Checkers {
		if c.Groups&ShareGroups == 0 {
			notApply++
		}
	}
	if vs[0].Name != NameHistoryWellFormed || !hasNote(vs[0], fmt.Sprintf("%d consumer-group checkers do not apply", notApply)) {
		t.Errorf("the first verdict does not say which checkers do not apply: %+v", vs[0])
	}
}

// TestShareAckAnsweredWithErrorMayHaveLanded: an accept answered
// NOT_LEADER_FOR_PARTITION (or another error Kafka may answer after its
// state write landed, version.ShareAckMayHaveApplied) is an unknown
// outcome: a record it settled and that never came back holds
// ShareRecordsSettle, noted with the error; an accept refused before any
// write (INVALID_RECORD_STATE) leaves the record unsettled, a violation.
// The answer drops the share-partition on that broker (SharePartitionManager
// fencedSharePartitionHandler), so another member acquiring the record
// there within the first lock, at the same delivery count, is no breach;
// after a refusal that drops nothing, it is.
func TestShareAckAnsweredWithErrorMayHaveLanded(t *testing.T) {
	base := func(ackErr string) *shareHist {
		h := &shareHist{}
		h.produce(0, 0)
		h.produce(10, 1)
		h.fetch("a", 100, 200, history.OK, nil, acq("t", 0, 1, 1))
		h.ack("a", 300, 2500, history.OK, ackErr, ackOf(history.AckAccept, 0, 1))
		return h
	}
	for _, e := range []string{"NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "COORDINATOR_NOT_AVAILABLE", "UNKNOWN_SERVER_ERROR"} {
		h := base(e)
		h.final(20000)
		v := shareVerdict(t, h, "ShareRecordsSettle")
		wantHolds(t, v, true, "")
		if notes := strings.Join(v.Notes, " "); !strings.Contains(notes, "2 records settled only by an accept or reject answered with an error Kafka may give after the state write landed ("+e) {
			t.Errorf("%s: notes %v do not count the records settled by the accept answered with it", e, v.Notes)
		}
		wantHolds(t, shareVerdict(t, h, "ShareAckedNotRedelivered"), true, "")
	}
	h := base("INVALID_RECORD_STATE")
	h.final(20000)
	wantHolds(t, shareVerdict(t, h, "ShareRecordsSettle"), false, "t-0@0 (produced at event")

	// The record came back (the write did not land): it is settled by the
	// later accept, and no checker counts the first one as applied.
	h = base("NOT_LEADER_FOR_PARTITION")
	h.fetchFrom(2, "b", 3000, 3100, acq("t", 0, 1, 1))
	h.ack("b", 3200, 3300, history.OK, "", ackOf(history.AckAccept, 0, 1))
	h.final(20000)
	for _, name := range []string{"ShareRecordsSettle", "ShareAckedNotRedelivered", "ShareLockExclusive", "ShareDeliveryCountBounded"} {
		wantHolds(t, shareVerdict(t, h, name), true, "")
	}

	// Acquired again on the same broker within a's lock, at count 1.
	again := func(ackErr string) *shareHist {
		h := base(ackErr)
		h.fetch("b", 3000, 3100, history.OK, nil, acq("t", 0, 0, 1))
		return h
	}
	h = again("NOT_LEADER_FOR_PARTITION")
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), true, "")
	wantHolds(t, shareVerdict(t, h, "ShareDeliveryCountBounded"), true, "")
	h = again("INVALID_RECORD_STATE")
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), false, "while a still held it")
	wantHolds(t, shareVerdict(t, h, "ShareDeliveryCountBounded"), false, "delivery count went from 1 to 1")
}

// fetchErr is a ShareFetch of member to node 1 answered without records,
// partition t-0 carrying the fetch error err.
func (h *shareHist) fetchErr(member string, inv, ans int, err string) {
	v := history.ShareFetch{Member: member, MemberID: h.ids[member], Node: 1, SessionEpoch: 1, Fetch: history.TPs("t", 0)}
	h.add(inv, history.Invoke, member+"/fetch", history.FShareFetch, v)
	done := v
	done.LockTimeoutMs = 5000
	done.FetchErrors = []history.PartitionError{{Topic: "t", Partition: 0, Error: err}}
	h.add(ans, history.OK, member+"/fetch", history.FShareFetch, done)
}

// TestShareFetchErrorDropsOnlyWhenNotDisproved: a fetch answered
// NOT_LEADER_FOR_PARTITION may come from a log read whose error the leader
// passes on while it keeps the share-partition
// (ShareFetchUtils.processFetchResponse), or from a path that removed it
// (DelayedShareFetch's exception handler). With nothing later to tell, it
// excuses another acquisition of a held record on that broker within the
// holder's lock; once the same leader applies the holder's accept of a
// record it handed out before that fetch, it kept the share-partition (one
// loaded again would refuse the accept INVALID_RECORD_STATE), and the
// acquisition is a breach again. The 4.4.0 share hunt's seed
// 116519593863584419 showed the kept case.
func TestShareFetchErrorDropsOnlyWhenNotDisproved(t *testing.T) {
	// a holds offsets 0–1 from node 1 (lock 5 s from 100); b's fetch is
	// answered NOT_LEADER_FOR_PARTITION by node 1.
	base := func() *shareHist {
		h := &shareHist{}
		h.fetch("a", 100, 200, history.OK, nil, acq("t", 0, 1, 1))
		h.fetchErr("b", 300, 400, "NOT_LEADER_FOR_PARTITION")
		return h
	}
	// c acquires offset 1 from node 1 at count 1 within a's lock.
	steal := func(h *shareHist) { h.fetch("c", 1000, 1100, history.OK, nil, acq("t", 1, 1, 1)) }

	// Nothing disproves the drop: excused, and the notes say by what.
	h := base()
	steal(h)
	for _, name := range []string{"ShareLockExclusive", "ShareDeliveryCountBounded"} {
		v := shareVerdict(t, h, name)
		wantHolds(t, v, true, "")
		if notes := strings.Join(v.Notes, " "); !strings.Contains(notes, "1 after fetch NOT_LEADER_FOR_PARTITION") {
			t.Errorf("%s: notes %v do not count the excuse by the fetch's error", name, v.Notes)
		}
	}

	// Node 1 applied a's accept of offset 0, handed out before b's fetch:
	// it kept the share-partition, so c's acquisition breaches a's lock.
	h = base()
	h.ack("a", 500, 600, history.OK, "", ackOf(history.AckAccept, 0, 0))
	steal(h)
	v := shareVerdict(t, h, "ShareLockExclusive")
	wantHolds(t, v, false, "while a still held it")
	if notes := strings.Join(v.Notes, " "); !strings.Contains(notes, "1 not excused by a fetch answered with an error") {
		t.Errorf("notes %v do not count the refuted drop", v.Notes)
	}
	wantHolds(t, shareVerdict(t, h, "ShareDeliveryCountBounded"), false, "delivery count went from 1 to 1")

	// b's fetch was sent before a's was answered: had node 1 dropped the
	// share-partition then, it would have been before it made a's
	// acquisition, which the accept shows it kept; so it did not end a's
	// lock of offset 1 (acquired with offset 0) either.
	h = &shareHist{}
	h.fetch("a", 100, 200, history.OK, nil, acq("t", 0, 1, 1))
	h.fetchErr("b", 150, 400, "NOT_LEADER_FOR_PARTITION")
	h.ack("a", 500, 600, history.OK, "", ackOf(history.AckAccept, 0, 0))
	steal(h)
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), false, "while a still held it")

	// An acknowledgement's error is a drop (SharePartitionManager.acknowledge
	// removes the share-partition), whatever came before.
	h = base()
	h.ack("a", 500, 600, history.OK, "", ackOf(history.AckAccept, 0, 0))
	h.ack("b", 700, 800, history.OK, "NOT_LEADER_FOR_PARTITION", ackOf(history.AckAccept, 5, 5))
	steal(h)
	wantHolds(t, shareVerdict(t, h, "ShareLockExclusive"), true, "")
	wantHolds(t, shareVerdict(t, h, "ShareDeliveryCountBounded"), true, "")

	// What does not disprove the drop: an accept that was refused, one of a
	// record acquired after the fetch (from the share-partition loaded
	// again), one the start offset may have passed, and one after a fetch
	// of a's to node 1 that was never answered (it may have acquired the
	// record again).
	for name, add := range map[string]func(h *shareHist){
		"refused": func(h *shareHist) {
			h.ack("a", 500, 600, history.OK, "INVALID_RECORD_STATE", ackOf(history.AckAccept, 0, 0))
		},
		"acquired after": func(h *shareHist) {
			h.fetch("a", 450, 480, history.OK, nil, acq("t", 2, 2, 1))
			h.ack("a", 500, 600, history.OK, "", ackOf(history.AckAccept, 2, 2))
		},
		// a had accepted offset 0 before: the start offset may have passed
		// it, and the broker answers an acknowledgement below the start
		// offset without an error, applying nothing.
		"below the start offset": func(h *shareHist) {
			h.ack("a", 250, 280, history.OK, "", ackOf(history.AckAccept, 0, 0))
			h.ack("a", 500, 600, history.OK, "", ackOf(history.AckAccept, 0, 0))
		},
		"unanswered fetch": func(h *shareHist) {
			// on a process of its own, as a member's calls to each node are
			h.add(250, history.Invoke, "a/fetch@1", history.FShareFetch,
				history.ShareFetch{Member: "a", Node: 1, SessionEpoch: 1, Fetch: history.TPs("t", 0)})
			h.ack("a", 500, 600, history.OK, "", ackOf(history.AckAccept, 0, 0))
		},
	} {
		h := base()
		add(h)
		steal(h)
		for _, check := range []string{"ShareLockExclusive", "ShareDeliveryCountBounded"} {
			if v := shareVerdict(t, h, check); !v.Holds {
				t.Errorf("%s: %s fails: %+v", name, check, v.Violations)
			}
		}
	}
}

// fetchErrorKept is an excerpt of the share hunt's run `groupquake run --seed 116519593863584419
// --scenario combined --kafka 4.4.0 --nodes 3 --kinds kgo-share,share` (events 5150–5300: the
// share calls answered in that window, with their original indexes), taken while node 1 was
// being stopped (fault events 5165–5726, left out). m5 acquired offset 362 of partition 2 from
// node 1 (event 5201); node 1 answered m5's next fetch NOT_LEADER_FOR_PARTITION for partition 2
// (events 5202–5227) and then applied m5's accept of offset 362 (events 5228–5231): it kept its
// share-partition across that answer (ShareFetchUtils.processFetchResponse passes a log read's
// error on). m3's, m1's, m2's and m4's fetches answered NOT_LEADER_FOR_PARTITION for partition 0
// (events 5204–5221) have no such evidence after them.
const fetchErrorKept = "testdata/kafka-4.4.0-share-fetch-error-kept-seed-116519593863584419"

func TestShareFetchErrorKeptRealRun(t *testing.T) {
	l, err := history.Load(filepath.Join(fetchErrorKept, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	f := build(l.Events, nil)
	f.plan = history.Plan{Share: &history.SharePlan{DeliveryCountLimit: 3, RecordLockMs: 5000}}
	sf := f.shareFacts()
	pos := func(idx int64) int {
		for i, e := range f.ev {
			if e.Index == idx {
				return i
			}
		}
		t.Fatalf("no event %d in the excerpt", idx)
		return -1
	}
	topic := "gq-testsharefresh-4.4.0-13-combined-kgo-share-share-seed-116519593863584419-116519593863584419-records"
	p0, p2 := history.TP{Topic: topic, Partition: 0}, history.TP{Topic: topic, Partition: 2}
	var held []int
	for _, id := range sf.byRecord[shareKey{p2, 362}] {
		if a := sf.acqs[id]; a.member == "m5" && f.idx(a.ans) == 5201 {
			held = append(held, id)
		}
	}
	if len(held) != 1 {
		t.Fatalf("m5's acquisition of offset 362 at event 5201 not found: %v", held)
	}
	// No answer of node 1 ended m5's lock of offset 362 before its accept
	// (m6's fetch answered at event 5218 was sent before m5's acquisition
	// was answered: if it dropped anything, it was before that acquisition
	// was made, since the accept shows the share-partition that made it).
	if why := sf.droppedOn(1, p2, held[0], pos(5228), ""); why != "" {
		t.Errorf("a drop taken to end m5's lock of offset 362 although node 1 then applied m5's accept of it: %s", why)
	}
	n0, n2 := 0, 0
	for _, c := range sf.calls {
		for _, d := range c.drops {
			switch {
			case d.tp == p0 && c.node == 1:
				n0++
				if !sf.mayDrop(1, p0, -1, c.inv, c.ans) {
					t.Errorf("node 1's answer at event %d for partition 0 disproved with no evidence", f.idx(c.ans))
				}
			case d.tp == p2 && c.node == 1:
				n2++
				// Only m5's, sent after the acquisition, is disproved for
				// the share-partition as a whole.
				if want := f.idx(c.ans) != 5227; sf.mayDrop(1, p2, -1, c.inv, c.ans) != want {
					t.Errorf("node 1's answer at event %d for partition 2: may drop %v, want %v", f.idx(c.ans), !want, want)
				}
			}
		}
	}
	if n0 != 4 || n2 != 2 {
		t.Errorf("node 1's NOT_LEADER_FOR_PARTITION answers: %d for partition 0, %d for partition 2; want 4 and 2", n0, n2)
	}
}
