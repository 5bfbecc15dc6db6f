package run_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
)

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }

// tick is a clock that moves one millisecond per reading, so event times are
// distinct and increasing without sleeping.
func tick() func() time.Duration {
	var mu sync.Mutex
	var t time.Duration
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		t += time.Millisecond
		return t
	}
}

// newHooks is a recorder (newRec) and member m1's hook recorder on it, of
// protocol.
func newHooks(t *testing.T, protocol string) (*history.Recorder, *run.HookRecorder) {
	t.Helper()
	rec, _ := newRec(t)
	return rec, run.NewHookRecorder(rec, "m1", protocol)
}

func newRec(t *testing.T) (*history.Recorder, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	rec, err := history.NewRecorder(&buf, tick(), history.Retain())
	if err != nil {
		t.Fatal(err)
	}
	return rec, &buf
}

func parts(topic string, ps ...int32) clients.Partitions { return clients.Partitions{topic: ps} }

// owning is e naming partitions ps of t.
func owning(e clients.Event, ps ...int32) clients.Event {
	e.Partitions = parts("t", ps...)
	return e
}

func ev(k clients.Kind, p clients.Protocol, member string, epoch int32) clients.Event {
	e := clients.Event{Kind: k, Protocol: p, Member: member, MemberID: member + "-id", Generation: -1, MemberEpoch: -1, GroupEpoch: -1, Why: "test"}
	if p == clients.Consumer {
		e.MemberEpoch = epoch
	} else {
		e.Generation = epoch
	}
	return e
}

func verdict(t *testing.T, rep []check.Verdict, name string) check.Verdict {
	t.Helper()
	for _, v := range rep {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no verdict %s", name)
	return check.Verdict{}
}

func mustHold(t *testing.T, events []history.Event, names ...string) {
	t.Helper()
	vs := check.All(events, nil, history.Plan{})
	for _, n := range append([]string{"HistoryWellFormed"}, names...) {
		v := verdict(t, vs, n)
		if !v.Holds {
			t.Errorf("%s violated: %+v\nhistory:\n%s", n, v.Violations, dump(events))
		}
	}
}

func dump(es []history.Event) string {
	var b bytes.Buffer
	for _, e := range es {
		b.WriteString(e.String() + "\n")
	}
	return b.String()
}

// TestHooksOwnershipOrder: each event is written before OnEvent returns, so
// a member that reports "revoked" before it acknowledges the revocation
// puts the revocation before the next owner's "assigned" in the history,
// and the ownership checkers see a clean hand-off.
func TestHooksOwnershipOrder(t *testing.T) {
	t.Parallel()
	rec, _ := newRec(t)
	m1 := run.NewHookRecorder(rec, "m1", "classic")
	m2 := run.NewHookRecorder(rec, "m2", "classic")

	m1.OnEvent(owning(ev(clients.Assigned, clients.Classic, "m1", 1), 0, 1))
	if rec.Len() != 1 {
		t.Fatalf("assigned not written when OnEvent returned: %d events", rec.Len())
	}
	m1.OnEvent(owning(ev(clients.Revoked, clients.Classic, "m1", 1), 1))
	if rec.Len() != 2 {
		t.Fatalf("revoked not written when OnEvent returned: %d events", rec.Len())
	}
	m2.OnEvent(owning(ev(clients.Assigned, clients.Classic, "m2", 2), 1))

	es := rec.Events()
	for i, want := range []string{history.FAssigned, history.FRevoked, history.FAssigned} {
		if es[i].F != want || es[i].Type != history.Info {
			t.Errorf("event %d is %s %s, want info %s", i, es[i].Type, es[i].F, want)
		}
	}
	as, err := history.ValueAs[history.Assignment](es[1])
	if err != nil {
		t.Fatal(err)
	}
	if as.Member != "m1" || as.Epoch != 1 || len(as.Partitions) != 1 || as.Partitions[0] != (history.TP{Topic: "t", Partition: 1}) {
		t.Errorf("revoked payload %+v", as)
	}
	mustHold(t, es, "NoDoubleOwnership", "ValidPartitionEpoch", "EpochMonotonic")
}

// sent is the Sent event of call n.
func sent(e clients.Event, n uint64, op clients.Op) clients.Event {
	e.Kind, e.Call, e.Op = clients.Sent, n, op
	return e
}

// answered is the answer of call n.
func answered(e clients.Event, n uint64, op clients.Op) clients.Event {
	e.Call, e.Op = n, op
	return e
}

// TestHooksCallIntervals: a call is written as its invoke when the member
// reports it sent and as its completion when the answer comes, so events in
// between (here another member's) fall inside it; the invoke carries the
// epoch sent, the completion the epoch returned.
func TestHooksCallIntervals(t *testing.T) {
	t.Parallel()
	rec, h := newHooks(t, "consumer")
	other := run.NewHookRecorder(rec, "m2", "consumer")
	h.OnEvent(sent(ev(clients.Heartbeat, clients.Consumer, "m1", 3), 1, clients.OpHeartbeat))
	other.OnEvent(owning(ev(clients.Assigned, clients.Consumer, "m2", 4), 0))
	h.OnEvent(owning(answered(ev(clients.Heartbeat, clients.Consumer, "m1", 5), 1, clients.OpHeartbeat), 1))

	es := rec.Events()
	if len(es) != 3 || es[0].Type != history.Invoke || es[0].Process != "m1/hb" || es[2].Type != history.OK || es[2].Process != "m1/hb" {
		t.Fatalf("want invoke, m2's assigned, ok on m1/hb:\n%s", dump(es))
	}
	inv, _ := history.ValueAs[history.Heartbeat](es[0])
	ok, _ := history.ValueAs[history.Heartbeat](es[2])
	if inv.Epoch != 3 || ok.Epoch != 3 || ok.ResultEpoch != 5 || !ok.HasAssignment || len(ok.Assignment) != 1 {
		t.Errorf("invoke %+v, completion %+v: want epoch 3 sent, 5 returned with t-1", inv, ok)
	}
	mustHold(t, es, "EpochMonotonic")
}

// wantEvents checks that es are, in order, the events want names as
// "type process f".
func wantEvents(t *testing.T, es []history.Event, want []string) {
	t.Helper()
	if len(es) != len(want) {
		t.Fatalf("got %d events, want %d:\n%s", len(es), len(want), dump(es))
	}
	for i, w := range want {
		if got := string(es[i].Type) + " " + es[i].Process + " " + es[i].F; got != w {
			t.Errorf("event %d is %q, want %q", i, got, w)
		}
	}
}

// TestHooksLanes: a classic SyncGroup in flight while a heartbeat goes out
// and is answered: two processes, each with one call open at a time.
func TestHooksLanes(t *testing.T) {
	t.Parallel()
	rec, h := newHooks(t, "classic")
	h.OnEvent(sent(ev(clients.Joined, clients.Classic, "m1", -1), 1, clients.OpJoin))
	j := answered(ev(clients.Joined, clients.Classic, "m1", 2), 1, clients.OpJoin)
	j.Leader = true
	h.OnEvent(j)
	h.OnEvent(sent(ev(clients.Synced, clients.Classic, "m1", 2), 2, clients.OpSync))
	h.OnEvent(sent(ev(clients.Heartbeat, clients.Classic, "m1", 2), 3, clients.OpHeartbeat))
	h.OnEvent(answered(ev(clients.Heartbeat, clients.Classic, "m1", 2), 3, clients.OpHeartbeat))
	h.OnEvent(owning(answered(ev(clients.Synced, clients.Classic, "m1", 2), 2, clients.OpSync), 0, 1))
	if err := h.Err(); err != nil {
		t.Fatal(err)
	}
	es := rec.Events()
	want := []string{"invoke m1/join join", "ok m1/join join", "invoke m1/join sync", "invoke m1/hb heartbeat", "ok m1/hb heartbeat", "ok m1/join sync"}
	wantEvents(t, es, want)
	jv, _ := history.ValueAs[history.Join](es[1])
	if jv.Generation != 2 || jv.Leader != "m1-id" {
		t.Errorf("join completion %+v", jv)
	}
	mustHold(t, es, "EpochMonotonic")
}

// TestHooksBreachClosesTheOpenCall: a member that reports a second call on
// a lane whose call has no answer breaks the contract: the open call is
// closed as unknown (the history stays well formed) and the recorder keeps
// an error that fails the run. A late answer becomes a fact.
func TestHooksBreachClosesTheOpenCall(t *testing.T) {
	t.Parallel()
	rec, h := newHooks(t, "classic")
	h.OnEvent(sent(ev(clients.Heartbeat, clients.Classic, "m1", 2), 1, clients.OpHeartbeat))
	h.OnEvent(sent(ev(clients.Left, clients.Classic, "m1", 2), 2, clients.OpLeave))
	if h.Err() == nil {
		t.Error("two calls on one lane were not reported as an error")
	}
	h.OnEvent(answered(ev(clients.Heartbeat, clients.Classic, "m1", 2), 1, clients.OpHeartbeat))
	h.OnEvent(answered(ev(clients.Left, clients.Classic, "m1", 2), 2, clients.OpLeave))
	es := rec.Events()
	want := []string{"invoke m1/hb heartbeat", "info m1/hb heartbeat", "invoke m1/hb leave", "info m1/hb late-answer", "ok m1/hb leave", "info m1 left"}
	wantEvents(t, es, want)
	mustHold(t, es)
}

// TestHooksFinishClosesOpenCalls: a request whose answer the member never
// reported (it was closed meanwhile) is closed as an unknown outcome.
func TestHooksFinishClosesOpenCalls(t *testing.T) {
	t.Parallel()
	rec, h := newHooks(t, "consumer")
	c := ev(clients.Committed, clients.Consumer, "m1", 4)
	c.Offsets = map[string]map[int32]int64{"t": {0: 9}}
	h.OnEvent(sent(c, 1, clients.OpCommit))
	h.OnEvent(sent(ev(clients.Heartbeat, clients.Consumer, "m1", 4), 2, clients.OpHeartbeat))
	if err := h.Finish(); err != nil {
		t.Fatal(err)
	}
	es := rec.Events()
	if len(es) != 4 || es[2].Type != history.Info || es[3].Type != history.Info {
		t.Fatalf("want two invokes closed as info:\n%s", dump(es))
	}
	mustHold(t, es)
}

// TestHooksCommitCalls: the driver's Member.Commit is recorded as the
// OffsetCommit requests the member reports for it (App) on the member's
// process, with the epoch each request carried; the member's own commits go
// to name/commit. A Commit that sends nothing leaves a not-sent fact, and a
// request Commit did not wait for is closed when Commit returns.
func TestHooksCommitCalls(t *testing.T) {
	t.Parallel()
	rec, h := newHooks(t, "consumer")
	a := ev(clients.Assigned, clients.Consumer, "m1", 5)
	a.Partitions = parts("t", 0)
	h.OnEvent(a)
	c := history.Commit{Member: "m1", Protocol: "consumer", Epoch: 5, Offsets: []history.OffsetAt{{Topic: "t", Partition: 0, Offset: 10}}}
	offs := map[string]map[int32]int64{"t": {0: 10}}

	// 1: answered STALE_MEMBER_EPOCH, 2: retried at epoch 6 and accepted.
	if err := h.CommitInvoke(c, "test"); err != nil {
		t.Fatal(err)
	}
	if err := h.CommitInvoke(c, "test"); err == nil {
		t.Error("a second CommitInvoke while one runs was accepted")
	}
	s1 := ev(clients.Committed, clients.Consumer, "m1", 5)
	s1.Offsets, s1.App = offs, true
	h.OnEvent(sent(s1, 1, clients.OpCommit))
	own := ev(clients.Committed, clients.Consumer, "m1", 5)
	own.Offsets = offs
	h.OnEvent(sent(own, 2, clients.OpCommit)) // the member's own commit, on its own process
	h.OnEvent(answered(own, 2, clients.OpCommit))
	r1 := s1
	r1.PartitionErrs = map[string]map[int32]string{"t": {0: "STALE_MEMBER_EPOCH"}}
	h.OnEvent(answered(r1, 1, clients.OpCommit))
	h.OnEvent(ev(clients.Heartbeat, clients.Consumer, "m1", 6)) // not a call: a fact
	s3 := ev(clients.Committed, clients.Consumer, "m1", 6)
	s3.Offsets, s3.App = offs, true
	h.OnEvent(sent(s3, 3, clients.OpCommit))
	h.OnEvent(answered(s3, 3, clients.OpCommit))
	if err := h.CommitReturned(c, nil, nil); err != nil {
		t.Fatal(err)
	}
	// 4: nothing sent (partitions not owned).
	if err := h.CommitInvoke(c, "test"); err != nil {
		t.Fatal(err)
	}
	if err := h.CommitReturned(c, map[string]map[int32]string{"t": {0: "NOT_OWNED"}}, nil); err != nil {
		t.Fatal(err)
	}
	// 5: sent, and Commit returned (ctx ended) before the answer.
	if err := h.CommitInvoke(c, "test"); err != nil {
		t.Fatal(err)
	}
	h.OnEvent(sent(s3, 4, clients.OpCommit))
	if err := h.CommitReturned(c, nil, errors.New("context deadline exceeded")); err != nil {
		t.Fatal(err)
	}
	if err := h.Err(); err != nil {
		t.Fatal(err)
	}

	var got []string
	for _, e := range rec.Events() {
		if e.F == history.FCommit || (e.F == run.FNotSent && e.Process == "m1") {
			v, _ := history.ValueAs[history.Commit](e)
			got = append(got, fmt.Sprintf("%s %s %s epoch=%d", e.Type, e.Process, e.F, v.Epoch))
		}
	}
	want := []string{
		"invoke m1 commit epoch=5", "invoke m1/commit commit epoch=5", "ok m1/commit commit epoch=5", "ok m1 commit epoch=5",
		"invoke m1 commit epoch=6", "ok m1 commit epoch=6",
		"info m1 not-sent epoch=5",
		"invoke m1 commit epoch=6", "info m1 commit epoch=6",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("commit events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mustHold(t, rec.Events(), "CommittedOffsetMonotonic")
}

// wantCompletion has h record call 1 (op) of e sent, then answered with
// code and err, and checks that the call completes as want (case name).
func wantCompletion(t *testing.T, rec *history.Recorder, h *run.HookRecorder, e clients.Event, op clients.Op, code int16, err string, want history.Type, name string) {
	t.Helper()
	h.OnEvent(sent(e, 1, op))
	e.ErrCode, e.Err = code, err
	h.OnEvent(answered(e, 1, op))
	if es := rec.Events(); len(es) != 2 || es[1].Type != want {
		t.Errorf("%s: got\n%s\nwant a %s completion", name, dump(es), want)
	}
}

// TestHooksCommitOutcomes: what a commit's answer means for its completion.
func TestHooksCommitOutcomes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		kind    clients.Kind
		code    int16
		err     string
		resends bool
		want    history.Type
	}{
		{"accepted", clients.Committed, 0, "", false, history.OK},
		{"rejected", clients.CommitFailed, kerr.IllegalGeneration.Code, "ILLEGAL_GENERATION", false, history.Fail},
		{"rejected by a client that resends", clients.CommitFailed, kerr.UnknownMemberID.Code, "UNKNOWN_MEMBER_ID", true, history.Info},
		{"timed out", clients.CommitFailed, kerr.RequestTimedOut.Code, "REQUEST_TIMED_OUT", false, history.Info},
		// Answered for an append that timed out or lost its leader: the
		// record may stay in the log (TestGoClients broker-faults seed
		// 1699009550667566998 on 4.4.0: described afterwards).
		{"coordinator not available", clients.CommitFailed, kerr.CoordinatorNotAvailable.Code, "COORDINATOR_NOT_AVAILABLE", false, history.Info},
		{"not coordinator", clients.CommitFailed, kerr.NotCoordinator.Code, "NOT_COORDINATOR", false, history.Info},
		{"no answer", clients.CommitFailed, 0, "i/o timeout", false, history.Info},
	} {
		rec, _ := newRec(t)
		var opts []run.HookOpt
		if tc.resends {
			opts = append(opts, run.ResendsCommits())
		}
		h := run.NewHookRecorder(rec, "m1", "classic", opts...)
		e := ev(tc.kind, clients.Classic, "m1", 3)
		e.Offsets = map[string]map[int32]int64{"t": {0: 4}}
		wantCompletion(t, rec, h, e, clients.OpCommit, tc.code, tc.err, tc.want, tc.name)
	}
}

// TestHooksMembership: Fenced and SessionExpired are facts on the member's
// process; an answered leave adds the left fact.
func TestHooksMembership(t *testing.T) {
	t.Parallel()
	rec, h := newHooks(t, "classic")
	h.OnEvent(owning(ev(clients.Assigned, clients.Classic, "m1", 3), 0))
	l := ev(clients.Lost, clients.Classic, "m1", 3)
	l.Partitions = parts("t", 0)
	f := ev(clients.Fenced, clients.Classic, "m1", 3)
	f.Err = "FENCED_INSTANCE_ID"
	h.OnEvent(f)
	h.OnEvent(l)
	h.OnEvent(sent(ev(clients.Left, clients.Classic, "m1", 3), 1, clients.OpLeave))
	h.OnEvent(answered(ev(clients.Left, clients.Classic, "m1", 3), 1, clients.OpLeave))
	var fs []string
	for _, e := range rec.Events() {
		fs = append(fs, string(e.Type)+" "+e.F)
	}
	want := "info assigned,info fenced,info lost,invoke leave,ok leave,info left"
	if strings.Join(fs, ",") != want {
		t.Errorf("events %v, want %s", fs, want)
	}
	mustHold(t, rec.Events(), "NoDoubleOwnership")
}

// TestHooksConcurrent: members report from several goroutines at once; each
// call stays paired on its process.
func TestHooksConcurrent(t *testing.T) {
	t.Parallel()
	rec, h := newHooks(t, "classic")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var n uint64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				// One lane per goroutine would be the member's job; here
				// the goroutines take turns on one lane under mu.
				mu.Lock()
				n++
				h.OnEvent(sent(ev(clients.Heartbeat, clients.Classic, "m1", int32(1+(g*50+i)/100)), n, clients.OpHeartbeat))
				h.OnEvent(answered(ev(clients.Heartbeat, clients.Classic, "m1", 1), n, clients.OpHeartbeat))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := h.Err(); err != nil {
		t.Fatal(err)
	}
	if h.Calls() != 200 || rec.Len() != 400 {
		t.Fatalf("%d calls, %d events; want 200 and 400", h.Calls(), rec.Len())
	}
	verdict := check.HistoryWellFormed(rec.Events())
	if !verdict.Holds {
		t.Fatalf("history not well formed: %+v", verdict.Violations)
	}
}

// TestHooksWriteTimeoutOutcomes: an error Kafka answers after a write timed
// out leaves a request that writes records unknown (info), and still means
// not applied (fail) for one that writes nothing.
func TestHooksWriteTimeoutOutcomes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		proto clients.Protocol
		op    clients.Op
		code  int16
		err   string
		want  history.Type
	}{
		{"consumer heartbeat, write timed out", clients.Consumer, clients.OpHeartbeat, kerr.CoordinatorNotAvailable.Code, "COORDINATOR_NOT_AVAILABLE", history.Info},
		{"consumer heartbeat, request timed out", clients.Consumer, clients.OpHeartbeat, kerr.RequestTimedOut.Code, "REQUEST_TIMED_OUT", history.Info},
		{"consumer heartbeat, fenced", clients.Consumer, clients.OpHeartbeat, kerr.FencedMemberEpoch.Code, "FENCED_MEMBER_EPOCH", history.Fail},
		{"classic join, write timed out", clients.Classic, clients.OpJoin, kerr.CoordinatorNotAvailable.Code, "COORDINATOR_NOT_AVAILABLE", history.Info},
		{"classic sync, not coordinator", clients.Classic, clients.OpSync, kerr.NotCoordinator.Code, "NOT_COORDINATOR", history.Info},
		{"classic join, unknown member", clients.Classic, clients.OpJoin, kerr.UnknownMemberID.Code, "UNKNOWN_MEMBER_ID", history.Fail},
		{"classic heartbeat writes nothing", clients.Classic, clients.OpHeartbeat, kerr.CoordinatorNotAvailable.Code, "COORDINATOR_NOT_AVAILABLE", history.Fail},
	} {
		rec, _ := newRec(t)
		h := run.NewHookRecorder(rec, "m1", string(tc.proto))
		kind := clients.Heartbeat
		if tc.op == clients.OpJoin {
			kind = clients.Joined
		}
		wantCompletion(t, rec, h, ev(kind, tc.proto, "m1", 3), tc.op, tc.code, tc.err, tc.want, tc.name)
	}
}
