package check

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// hist writes small hand-made histories through a real Recorder. Every event is one second after
// the previous one unless wait says otherwise; helpers return the indexes the tests cite.
type hist struct {
	t     *testing.T
	r     *history.Recorder
	now   time.Duration
	proto string
}

func newHist(t *testing.T) *hist {
	t.Helper()
	h := &hist{t: t, proto: history.ProtocolConsumer}
	r, err := history.NewRecorder(&bytes.Buffer{}, func() time.Duration { return h.now }, history.Retain())
	if err != nil {
		t.Fatal(err)
	}
	h.r = r
	return h
}

// newClassicHist is newHist for members of the classic protocol.
func newClassicHist(t *testing.T) *hist {
	t.Helper()
	h := newHist(t)
	h.proto = history.ProtocolClassic
	return h
}

func (h *hist) wait(d time.Duration) { h.now += d }

func (h *hist) add(e history.Event) int64 {
	h.t.Helper()
	h.now += time.Second
	got, err := h.r.Record(e)
	if err != nil {
		h.t.Fatal(err)
	}
	return got.Index
}

func (h *hist) info(proc, f string, v any) int64 {
	h.t.Helper()
	return h.add(history.Event{Type: history.Info, Process: proc, F: f, Value: v})
}

func (h *hist) call(proc, f string, inv any, t history.Type, done any) (int64, int64) {
	h.t.Helper()
	a := h.add(history.Event{Type: history.Invoke, Process: proc, F: f, Value: inv})
	return a, h.add(history.Event{Type: t, Process: proc, F: f, Value: done})
}

func (h *hist) events() []history.Event { return h.r.Events() }

func (h *hist) owned(f, m string, epoch int32, ps ...int32) int64 {
	h.t.Helper()
	return h.info(m, f, history.Assignment{Member: m, Protocol: h.proto, Epoch: epoch, Partitions: history.TPs("t", ps...)})
}

func (h *hist) assigned(m string, epoch int32, ps ...int32) int64 {
	h.t.Helper()
	return h.owned(history.FAssigned, m, epoch, ps...)
}

func (h *hist) revoked(m string, epoch int32, ps ...int32) int64 {
	h.t.Helper()
	return h.owned(history.FRevoked, m, epoch, ps...)
}

func (h *hist) lost(m string, epoch int32, ps ...int32) int64 {
	h.t.Helper()
	return h.owned(history.FLost, m, epoch, ps...)
}

// takeover: a is assigned t-0 at epoch 1, then b is assigned it at epoch 2 while a has not revoked
// it (a is a zombie until something fences it); it returns the two assignments.
func (h *hist) takeover() (a, b int64) {
	h.t.Helper()
	return h.assigned("a", 1, 0), h.assigned("b", 2, 0)
}

// handover: from is assigned t-p at fromEpoch and revokes it, then to is assigned it at toEpoch; it
// returns the two assignments.
func (h *hist) handover(from string, fromEpoch int32, to string, toEpoch, p int32) (first, second int64) {
	h.t.Helper()
	first = h.assigned(from, fromEpoch, p)
	h.revoked(from, fromEpoch, p)
	return first, h.assigned(to, toEpoch, p)
}

func (h *hist) consume(m string, epoch, p int32, off int64) int64 {
	h.t.Helper()
	return h.info(m, history.FConsume, history.Consume{Member: m, Topic: "t", Partition: p, Offset: off, Seq: 1000*int64(p) + off, Epoch: epoch})
}

func (h *hist) commit(m string, epoch int32, t history.Type, errName string, p int32, off int64) (int64, int64) {
	h.t.Helper()
	c := history.Commit{Member: m, Protocol: h.proto, Epoch: epoch, Offsets: []history.OffsetAt{{Topic: "t", Partition: p, Offset: off}}}
	return h.commitAs(m, c, t, errName)
}

// commitAs: process proc sends commit c, answered t with c itself carrying errName.
func (h *hist) commitAs(proc string, c history.Commit, t history.Type, errName string) (int64, int64) {
	h.t.Helper()
	done := c
	done.Error = errName
	return h.call(proc, history.FCommit, c, t, done)
}

// commitsInTurn: m commits each offset of t-0 in turn at epoch, each acknowledged before the next
// is sent; it returns the invokes and the answers.
func (h *hist) commitsInTurn(m string, epoch int32, offs ...int64) (invs, acks []int64) {
	h.t.Helper()
	for _, o := range offs {
		inv, ack := h.commit(m, epoch, history.OK, "", 0, o)
		invs, acks = append(invs, inv), append(acks, ack)
	}
	return invs, acks
}

func (h *hist) reset(m string, p int32, off int64) (int64, int64) {
	h.t.Helper()
	c := history.Commit{Member: m, Protocol: h.proto, Epoch: -1, Reset: true, Offsets: []history.OffsetAt{{Topic: "t", Partition: p, Offset: off}}}
	return h.call(m, history.FCommit, c, history.OK, c)
}

// joinHb: consumer-protocol member m (its member id m) joins with a heartbeat at epoch 0, answered
// ok at epoch.
func (h *hist) joinHb(m string, epoch int32) (int64, int64) {
	h.t.Helper()
	in := history.Heartbeat{Member: m, MemberID: m, Protocol: history.ProtocolConsumer}
	out := in
	out.ResultEpoch = epoch
	return h.call(m+"/hb", history.FHeartbeat, in, history.OK, out)
}

func (h *hist) hb(m string, epoch int32, t history.Type) (int64, int64) {
	h.t.Helper()
	in := history.Heartbeat{Member: m, Protocol: h.proto, Epoch: epoch}
	out := in
	if h.proto == history.ProtocolConsumer {
		out.ResultEpoch = epoch
	}
	if t == history.Fail {
		out.ResultEpoch, out.Error = 0, "FENCED_MEMBER_EPOCH"
	}
	return h.call(m+"/hb", history.FHeartbeat, in, t, out)
}

func (h *hist) produce(p int32, off int64) int64 {
	h.t.Helper()
	in := history.Produce{Topic: "t", Partition: p, Seq: 1000*int64(p) + off, Offset: -1}
	out := in
	out.Offset, out.Acked = off, true
	_, ok := h.call("p0", history.FProduce, in, history.OK, out)
	return ok
}

func (h *hist) phase(name string) int64 {
	h.t.Helper()
	return h.info("harness", history.FPhase, history.Phase{Name: name})
}

func (h *hist) describe(g *history.GroupDescription, committed ...history.OffsetAt) int64 {
	h.t.Helper()
	_, ok := h.call("observer", history.FDescribe, history.Describe{}, history.OK, history.Describe{Group: g, Committed: committed, HasCommitted: committed != nil})
	return ok
}

func off(p int32, o int64) history.OffsetAt {
	return history.OffsetAt{Topic: "t", Partition: p, Offset: o}
}

// mustHold fails the test unless v holds.
func mustHold(t *testing.T, v Verdict) {
	t.Helper()
	if !v.Holds {
		t.Fatalf("%s must hold, got violations: %+v\nnotes: %v", v.Name, v.Violations, v.Notes)
	}
	if v.Skipped != "" {
		t.Fatalf("%s skipped: %s", v.Name, v.Skipped)
	}
}

// mustJudgeNothing fails the test unless v says it had nothing to judge
// (skipped, not a hold), for the reason why.
func mustJudgeNothing(t *testing.T, v Verdict, why string) {
	t.Helper()
	if !v.Holds || len(v.Violations) > 0 || v.Skipped != nothingPrefix+why {
		t.Fatalf("%s must say it had nothing to judge (%q), got holds %v, skipped %q, violations %+v", v.Name, nothingPrefix+why, v.Holds, v.Skipped, v.Violations)
	}
}

// mustHoldNote fails the test unless v holds and its notes contain fragment.
func mustHoldNote(t *testing.T, v Verdict, fragment string) {
	t.Helper()
	mustHold(t, v)
	mustNote(t, v, fragment)
}

// mustNote fails the test unless v's notes, joined by new lines, contain fragment.
func mustNote(t *testing.T, v Verdict, fragment string) {
	t.Helper()
	if !strings.Contains(notesOf(v), fragment) {
		t.Fatalf("notes: %v", v.Notes)
	}
}

// mustFailSaying fails the test unless v fails and its first violation's message contains fragment.
func mustFailSaying(t *testing.T, v Verdict, fragment string) {
	t.Helper()
	if v.Holds || len(v.Violations) == 0 || !strings.Contains(v.Violations[0].Message, fragment) {
		t.Fatalf("got %+v", v)
	}
}

// mustSay fails the test unless x's message contains every fragment.
func mustSay(t *testing.T, x Violation, fragments ...string) {
	t.Helper()
	for _, f := range fragments {
		if !strings.Contains(x.Message, f) {
			t.Fatalf("message %q lacks %q", x.Message, f)
		}
	}
}

// mustCite fails the test unless v fails with a violation that cites every index in want.
func mustCite(t *testing.T, v Verdict, want ...int64) Violation {
	t.Helper()
	if v.Holds {
		t.Fatalf("%s must fail, it holds (notes %v)", v.Name, v.Notes)
	}
	for _, x := range v.Violations {
		ok := true
		for _, w := range want {
			if !slices.Contains(x.EventIndexes, w) {
				ok = false
			}
		}
		if ok {
			return x
		}
	}
	t.Fatalf("%s: no violation cites events %v; got %+v", v.Name, want, v.Violations)
	return Violation{}
}
