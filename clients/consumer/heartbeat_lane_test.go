package consumer

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
)

// The heartbeat goroutine never waits on an OffsetCommit: Java's
// background thread goes on heartbeating while a commit is in flight, and a
// member whose heartbeat goroutine waits for a commit's whole timeout (5 s
// on a paused node, seen in a Kafka 4.1.2 run) sends no heartbeat for that
// long. These tests hold every OffsetCommit at the broker and require the
// member to send heartbeats meanwhile; before the interval auto-commit and
// the reconciliation left the heartbeat goroutine, both waited on the lane
// until the commit was released. (What the member sends is counted, not
// what arrives: a broker, kfake as Kafka, answers one connection's
// requests in order, so the heartbeats queue behind the held commit.)

// holdCommits makes the broker keep every OffsetCommit until release is
// called and returns a channel signalled when one is held.
func holdCommits(t *testing.T, s *scriptBroker) (held <-chan struct{}, release func()) {
	t.Helper()
	ch := make(chan struct{})
	s.mu.Lock()
	s.holdCommit, s.commitHeld = ch, make(chan struct{}, 1)
	held = s.commitHeld
	s.mu.Unlock()
	done := false
	release = func() {
		if !done {
			done = true
			close(ch)
		}
	}
	return held, release
}

// sent counts the requests of op the member reported sent.
func sent(m loopMember, op clients.Op) int {
	n := 0
	for _, e := range m.log.Of(clients.Sent) {
		if e.Op == op {
			n++
		}
	}
	return n
}

// produceOneEach appends a record to each partition of the loop topic.
func produceOneEach(t *testing.T, s *scriptBroker) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, p := range []int32{0, 1} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: loopTopic, Partition: p, Value: []byte("during the commit")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// commitsBeforeAnswer counts the OffsetCommits the member reported sent
// before it reported the first one answered (or failed).
func commitsBeforeAnswer(m loopMember) int {
	n := 0
	for _, e := range m.log.All() {
		switch {
		case e.Kind == clients.Committed || e.Kind == clients.CommitFailed:
			return n
		case e.Kind == clients.Sent && e.Op == clients.OpCommit:
			n++
		}
	}
	return n
}

// heartbeatSentWhileHeld waits until the member sent a heartbeat later than
// after past the arrival of the first held commit at the broker and before
// any commit was answered (the held one fails at its request timeout, 5 s):
// a member whose heartbeats wait on the commit lane sends none until then. One is
// asked for, not more: behind the held commit that heartbeat waits out its
// request timeout, and the next needs a coordinator lookup that queues
// behind the commits sent again on new connections, so how many more get
// out in a while is kgo's and the machine's timing (3 in 20 s was asked
// once, and a loaded machine sent 2, or 1 in a minute).
func heartbeatSentWhileHeld(t *testing.T, s *scriptBroker, m loopMember, held <-chan struct{}, after time.Duration, dump func() string) {
	t.Helper()
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatalf("no OffsetCommit reached the broker\n%s", dump())
	}
	s.mu.Lock()
	heldAt := s.heldAt
	s.mu.Unlock()
	eventually(t, "a heartbeat sent while the commit is held (before any commit's answer)", func() bool {
		for _, e := range m.log.All() {
			switch {
			case (e.Kind == clients.Committed || e.Kind == clients.CommitFailed) && e.At.After(heldAt):
				// The held commit timed out: a heartbeat from here on
				// may have waited for it.
				t.Fatalf("a commit was answered (%s at %v) before a heartbeat was sent %v after the held commit arrived\n%s", e.Kind, e.At.Sub(heldAt), after, dump())
			case e.Kind == clients.Sent && e.Op == clients.OpHeartbeat && e.At.After(heldAt.Add(after)):
				return true
			}
		}
		return false
	}, dump)
}

// TestLoopHeartbeatsWhileTheAppCommitIsInFlight: the application's commit
// holds the lane; the auto-commit interval elapses meanwhile. Heartbeats go
// on, and the held auto-commit is not sent beside the application's. The
// application commits right after a heartbeat is answered, so that the next
// heartbeat is due an interval (1 s) later, well after the auto-commit
// (every 50 ms) found the lane busy, or was itself held (either commit may
// be the first): a member whose heartbeat goroutine runs the auto-commit
// itself is then stuck on the lane before that heartbeat.
func TestLoopHeartbeatsWhileTheAppCommitIsInFlight(t *testing.T) {
	t.Parallel()
	const autoCommit = 50 * time.Millisecond
	s := newScriptBroker(t, 2)
	s.set(1, 0, 1)
	s.interval = time.Second
	m := startMember(t, s, true, AutoCommitInterval(autoCommit))
	dump := m.dumpWith(s)
	eventually(t, "the member owns t[0 1] and consumed both", func() bool { return m.owns(0, 1)() && m.consumedAll() }, dump)
	answered := len(m.log.Of(clients.Heartbeat))
	eventually(t, "a heartbeat answered", func() bool { return len(m.log.Of(clients.Heartbeat)) > answered }, dump)
	held, release := holdCommits(t, s)
	defer release()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m.Commit(ctx, map[string]map[int32]int64{loopTopic: {0: 10, 1: 10}})
	}()
	// A record more in each partition, consumed by the polling workload,
	// gives the auto-commit something to commit, so that it waits on the
	// lane (the first auto-commit already committed 10 and 10).
	produceOneEach(t, s)
	eventually(t, "the member consumed the new records", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.positions[loopTopic][0] == 11 && m.positions[loopTopic][1] == 11
	}, dump)
	heartbeatSentWhileHeld(t, s, m, held, 4*autoCommit, dump)
	if commits := commitsBeforeAnswer(m); commits != 1 {
		t.Errorf("the member sent %d OffsetCommits before the first was answered, want 1 (the lane)\n%s", commits, dump())
	}
}

// TestLoopHeartbeatsWhileReconciling: the commit before a revocation is
// held; heartbeats go on meanwhile at the old epoch with the owned
// partitions unchanged, and once the commit is answered the revocation is
// acknowledged.
func TestLoopHeartbeatsWhileReconciling(t *testing.T) {
	t.Parallel()
	s, m, dump := startAssigned(t, true)
	eventually(t, "the member owns t[0 1] and consumed both", func() bool { return m.owns(0, 1)() && m.consumedAll() }, dump)
	held, release := holdCommits(t, s)
	defer release()
	s.set(2, 0)
	heartbeatSentWhileHeld(t, s, m, held, 0, dump)
	if !m.owns(0, 1)() {
		t.Errorf("the member gave t[1] up before the commit before its revocation was answered\n%s", dump())
	}
	for _, a := range heartbeats(s.arrivals()) {
		if ps := hbParts(a.hb); a.hb.Topics != nil && len(ps) == 1 {
			t.Errorf("the revocation was acknowledged (%v) before the commit was answered\n%s", ps, dump())
		}
	}
	release()
	eventually(t, "the member owns only t[0]", m.owns(0), dump)
	eventually(t, "the revocation is acknowledged", func() bool {
		for _, a := range heartbeats(s.arrivals()) {
			if ps := hbParts(a.hb); a.hb.Topics != nil && len(ps) == 1 && ps[0] == 0 {
				return true
			}
		}
		return false
	}, dump)
}

// TestLoopPollCountsOrderTheLoss: records carry the number of the Poll that
// returned them and ownership events how many Polls had returned, so that
// the history can place records the workload writes after a loss it
// reported meanwhile: the loss of a fence counts every Poll before it, and
// the partitions assigned after it come only in later Polls.
func TestLoopPollCountsOrderTheLoss(t *testing.T) {
	t.Parallel()
	s := newScriptBroker(t, 4)
	s.set(3, 0, 1)
	m := startMember(t, s, false)
	dump := m.dumpWith(s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last uint64
	poll := func() []clients.Record {
		pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer pcancel()
		recs, _ := m.Poll(pctx)
		for _, r := range recs {
			if r.Poll < last {
				t.Fatalf("record of Poll %d after one of Poll %d", r.Poll, last)
			}
			if r.Poll == 0 {
				t.Fatalf("record %s[%d]@%d carries no Poll number", r.Topic, r.Partition, r.Offset)
			}
			last = r.Poll
		}
		if ctx.Err() != nil {
			t.Fatalf("timed out\n%s", dump())
		}
		return recs
	}
	for !m.owns(0, 1)() || !m.consumedAll() {
		poll()
	}
	before := last
	s.failNext(kerr.UnknownMemberID.Code, 7, 2, 3)
	eventually(t, "the member lost t[0 1]", func() bool { _, ok := m.log.First(clients.Lost); return ok }, dump)
	lost, _ := m.log.First(clients.Lost)
	if lost.AfterPoll == nil || *lost.AfterPoll < before {
		t.Fatalf("the loss counts %v Polls, want at least %d (its records' last Poll)", lost.AfterPoll, before)
	}
	var got []clients.Record
	for !m.owns(2, 3)() || len(got) == 0 {
		got = append(got, poll()...)
	}
	var assigned clients.Event
	for _, e := range m.log.Of(clients.Assigned) {
		if slices.Contains(e.Partitions[loopTopic], 2) {
			assigned = e
		}
	}
	if assigned.AfterPoll == nil {
		t.Fatalf("the assignment of t[2 3] counts no Polls\n%s", dump())
	}
	for _, r := range got {
		if r.Poll <= *assigned.AfterPoll {
			t.Errorf("record %s[%d]@%d of Poll %d, but t[2 3] were assigned after %d Polls", r.Topic, r.Partition, r.Offset, r.Poll, *assigned.AfterPoll)
		}
	}
}
