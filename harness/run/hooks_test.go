package run_test

import (
	"bytes"
	"errors"
	"os"
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

	a := ev(clients.Assigned, clients.Classic, "m1", 1)
	a.Partitions = parts("t", 0, 1)
	m1.OnEvent(a)
	if rec.Len() != 1 {
		t.Fatalf("assigned not written when OnEvent returned: %d events", rec.Len())
	}
	r := ev(clients.Revoked, clients.Classic, "m1", 1)
	r.Partitions = parts("t", 1)
	m1.OnEvent(r)
	if rec.Len() != 2 {
		t.Fatalf("revoked not written when OnEvent returned: %d events", rec.Len())
	}
	a2 := ev(clients.Assigned, clients.Classic, "m2", 2)
	a2.Partitions = parts("t", 1)
	m2.OnEvent(a2)

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

// TestHooksHeartbeatCarriesEpochs: a consumer-protocol heartbeat is one call
// on the member's heartbeat process, its invoke carrying the epoch held and
// its completion the epoch returned.
func TestHooksHeartbeatCarriesEpochs(t *testing.T) {
	t.Parallel()
	rec, _ := newRec(t)
	h := run.NewHookRecorder(rec, "m1", "consumer")
	a := ev(clients.Assigned, clients.Consumer, "m1", 3)
	a.Partitions = parts("t", 0)
	h.OnEvent(a)
	h.OnEvent(ev(clients.Heartbeat, clients.Consumer, "m1", 5))
	es := rec.Events()
	if len(es) != 3 {
		t.Fatalf("%d events, want assigned + heartbeat invoke + ok:\n%s", len(es), dump(es))
	}
	inv, done := es[1], es[2]
	if inv.Type != history.Invoke || done.Type != history.OK || inv.Process != "m1/hb" || done.Process != "m1/hb" || inv.F != history.FHeartbeat {
		t.Fatalf("heartbeat recorded as:\n%s", dump(es))
	}
	hb, _ := history.ValueAs[history.Heartbeat](done)
	if hb.Epoch != 3 || hb.ResultEpoch != 5 || hb.Protocol != "consumer" {
		t.Errorf("heartbeat completion %+v, want epoch 3 → 5", hb)
	}
	mustHold(t, es, "EpochMonotonic")
}

// TestHooksCommitCompletion: the driver's commit invoke is completed by the
// member's Committed event (with the epoch the request carried), before
// Member.Commit returns; CommitReturned then adds nothing. An epoch learned
// between the invoke and the completion is recorded before the completion,
// so the commit is judged at the epoch it was sent with.
func TestHooksCommitCompletion(t *testing.T) {
	t.Parallel()
	rec, _ := newRec(t)
	h := run.NewHookRecorder(rec, "m1", "consumer")
	a := ev(clients.Assigned, clients.Consumer, "m1", 5)
	a.Partitions = parts("t", 0)
	h.OnEvent(a)
	c := history.Commit{Member: "m1", Protocol: "consumer", Epoch: 5, Offsets: []history.OffsetAt{{Topic: "t", Partition: 0, Offset: 10}}}
	if err := h.CommitInvoke(c, "test"); err != nil {
		t.Fatal(err)
	}
	if err := h.CommitInvoke(c, "test"); err == nil {
		t.Error("a second commit while one is open was accepted")
	}
	h.OnEvent(ev(clients.Heartbeat, clients.Consumer, "m1", 6))
	done := ev(clients.Committed, clients.Consumer, "m1", 6)
	done.Offsets = map[string]map[int32]int64{"t": {0: 10}}
	h.OnEvent(done)
	if err := h.CommitReturned(c, nil, nil); err != nil {
		t.Fatal(err)
	}
	es := rec.Events()
	var commits []history.Event
	for _, e := range es {
		if e.F == history.FCommit {
			commits = append(commits, e)
		}
	}
	if len(commits) != 2 || commits[0].Type != history.Invoke || commits[1].Type != history.OK || commits[1].Process != "m1" {
		t.Fatalf("commit recorded as:\n%s", dump(es))
	}
	got, _ := history.ValueAs[history.Commit](commits[1])
	if got.Epoch != 6 {
		t.Errorf("completion epoch %d, want the request's 6", got.Epoch)
	}
	mustHold(t, es, "FencedCommitsRejected", "EpochMonotonic")
}

// TestHooksCommitOutcomes: what a failed commit's error means for its
// outcome, and commits the member made on its own.
func TestHooksCommitOutcomes(t *testing.T) {
	t.Parallel()
	rec, _ := newRec(t)
	h := run.NewHookRecorder(rec, "m1", "consumer")
	stale := ev(clients.CommitFailed, clients.Consumer, "m1", 4)
	stale.Err, stale.ErrCode = kerr.StaleMemberEpoch.Message, kerr.StaleMemberEpoch.Code
	stale.Offsets = map[string]map[int32]int64{"t": {0: 3}}
	net := ev(clients.CommitFailed, clients.Consumer, "m1", 4)
	net.Err = "connection reset by peer"
	net.Offsets = map[string]map[int32]int64{"t": {0: 3}}

	c := history.Commit{Member: "m1", Protocol: "consumer", Epoch: 4, Offsets: []history.OffsetAt{{Topic: "t", Partition: 0, Offset: 3}}}
	for _, tc := range []struct {
		e    clients.Event
		want history.Type
	}{{stale, history.Fail}, {net, history.Info}} {
		if err := h.CommitInvoke(c, "test"); err != nil {
			t.Fatal(err)
		}
		h.OnEvent(tc.e)
		es := rec.Events()
		last := es[len(es)-1]
		if last.Type != tc.want || last.F != history.FCommit || last.Process != "m1" {
			t.Errorf("commit failing with %q recorded as %s, want %s", tc.e.Err, last, tc.want)
		}
	}
	// Without a member report, the return values complete the call.
	if err := h.CommitInvoke(c, "test"); err != nil {
		t.Fatal(err)
	}
	if err := h.CommitReturned(c, nil, kerr.IllegalGeneration); err != nil {
		t.Fatal(err)
	}
	if err := h.CommitInvoke(c, "test"); err != nil {
		t.Fatal(err)
	}
	if err := h.CommitReturned(c, nil, errors.New("i/o timeout")); err != nil {
		t.Fatal(err)
	}
	es := rec.Events()
	if es[len(es)-3].Type != history.Fail || es[len(es)-1].Type != history.Info {
		t.Errorf("return-value completions:\n%s", dump(es[len(es)-4:]))
	}
	// A commit the member made on its own is a call of its own process.
	own := ev(clients.Committed, clients.Consumer, "m1", 4)
	own.Offsets = map[string]map[int32]int64{"t": {0: 3}}
	h.OnEvent(own)
	es = rec.Events()
	inv, done := es[len(es)-2], es[len(es)-1]
	if inv.Process != "m1/commit" || inv.Type != history.Invoke || done.Type != history.OK {
		t.Errorf("member's own commit recorded as:\n%s", dump(es[len(es)-2:]))
	}
	if _, err := history.Pairs(es); err != nil {
		t.Error(err)
	}
}

// TestHooksMembership: lost, fenced and leave end the member's ownership the
// way the checkers read them.
func TestHooksMembership(t *testing.T) {
	t.Parallel()
	rec, _ := newRec(t)
	h := run.NewHookRecorder(rec, "m1", "classic")
	a := ev(clients.Assigned, clients.Classic, "m1", 2)
	a.Partitions = parts("t", 0)
	h.OnEvent(a)
	l := ev(clients.Lost, clients.Classic, "m1", 2)
	l.Partitions = parts("t", 0)
	h.OnEvent(l)
	f := ev(clients.Fenced, clients.Classic, "m1", 2)
	f.Err = "ILLEGAL_GENERATION"
	h.OnEvent(f)
	h.OnEvent(ev(clients.Left, clients.Classic, "m1", 3))
	var fs []string
	for _, e := range rec.Events() {
		fs = append(fs, string(e.Type)+" "+e.F)
	}
	want := []string{"info assigned", "info lost", "info fenced", "invoke leave", "ok leave", "info left"}
	if len(fs) != len(want) {
		t.Fatalf("events %v, want %v", fs, want)
	}
	for i := range want {
		if fs[i] != want[i] {
			t.Errorf("event %d is %q, want %q", i, fs[i], want[i])
		}
	}
	mustHold(t, rec.Events(), "NoDoubleOwnership")
}

// TestHooksConcurrent: heartbeats reported from several goroutines keep each
// invoke next to its completion (the pairing rule), whatever the
// interleaving.
func TestHooksConcurrent(t *testing.T) {
	t.Parallel()
	rec, _ := newRec(t)
	h := run.NewHookRecorder(rec, "m1", "classic")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				h.OnEvent(ev(clients.Heartbeat, clients.Classic, "m1", int32(1+(g*50+i)/100)))
			}
		}()
	}
	wg.Wait()
	if err := h.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := history.Pairs(rec.Events()); err != nil {
		t.Fatal(err)
	}
	if got := rec.Len(); got != 800 {
		t.Errorf("%d events, want 800", got)
	}
}

// TestHooksRejectedCommitOutcome: a commit rejected with a Kafka error is a
// definite failure for a member that sends each commit once, and an unknown
// outcome for one whose client may have resent it (an earlier attempt may
// have been written before the answer it saw).
func TestHooksRejectedCommitOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []run.HookOpt
		want history.Type
	}{
		{"sent-once", nil, history.Fail},
		{"may-resend", []run.HookOpt{run.ResendsCommits()}, history.Info},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, _ := newRec(t)
			h := run.NewHookRecorder(rec, "m1", "consumer", tc.opts...)
			if err := h.CommitInvoke(history.Commit{Member: "m1", Epoch: 5, Offsets: []history.OffsetAt{{Topic: "t", Partition: 0, Offset: 16}}}, "commit"); err != nil {
				t.Fatal(err)
			}
			f := ev(clients.CommitFailed, clients.Consumer, "m1", 5)
			f.Err, f.ErrCode = "UNKNOWN_MEMBER_ID", 25
			h.OnEvent(f)
			es := rec.Events()
			if last := es[len(es)-1]; last.F != history.FCommit || last.Type != tc.want {
				t.Errorf("rejected commit recorded as %s %s, want %s:\n%s", last.Type, last.F, tc.want, dump(es))
			}
		})
	}
}
