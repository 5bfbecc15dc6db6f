package classic

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
)

// scriptedCoordinator stands for the coordinator behind the member's
// sendCommit: each OffsetCommit arrives (arrivals) and waits for the test's
// answer to it; it is applied when answered ok, as a broker applies a
// request when it processes it. applied is the order in which partition t-0
// took offsets.
type scriptedCoordinator struct {
	arrivals chan *commitArrival
	applied  clientstest.Applied
}

type commitArrival struct {
	req    *kmsg.OffsetCommitRequest
	answer chan error // nil: apply and acknowledge; an error: no answer (transport)
}

func (a *commitArrival) offset() int64 { return a.req.Topics[0].Partitions[0].Offset }

func (s *scriptedCoordinator) send(ctx context.Context, req *kmsg.OffsetCommitRequest, sent func()) (*kmsg.OffsetCommitResponse, error) {
	sent()
	a := &commitArrival{req: req, answer: make(chan error, 1)}
	s.arrivals <- a
	select {
	case err := <-a.answer:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return clientstest.CommitAnswer(req, 0, s.applied.Apply), nil
}

// stableMember owns t-0 in generation 3 and commits to the scripted
// coordinator; it never contacts a broker and runs no goroutine of its own.
func stableMember(t *testing.T, s *scriptedCoordinator, rec *recorder) *Member {
	t.Helper()
	m, err := New("m1", "g", []string{topic}, KgoOpts(kgo.SeedBrokers("127.0.0.1:1")), WithHooks(rec), RetryBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.cancel(); m.cl.Close() })
	m.sendCommit = s.send
	m.mu.Lock()
	m.started = true
	m.mach.st, m.mach.gen = stable, Generation{ID: 3, MemberID: "m1-id"}
	m.mach.owned = clients.Partitions{topic: {0}}
	m.mu.Unlock()
	return m
}

func acknowledgedOffsets(rec *recorder) []int64 {
	var out []int64
	for _, e := range rec.Of(clients.Committed) {
		if o, ok := e.Offsets[topic][0]; ok && e.Err == "" {
			out = append(out, o)
		}
	}
	return out
}

// TestCommitInFlightIsNotOvertaken: the auto-commit loop's commit of 61 is
// sent and has no answer yet; the application commits 62. Without the
// commit lane 62 goes out at once, is acknowledged, and 61 lands after it
// (the committed offset goes back). With it, 62 waits for 61's outcome.
func TestCommitInFlightIsNotOvertaken(t *testing.T) {
	s := &scriptedCoordinator{arrivals: make(chan *commitArrival, 16)}
	rec := &recorder{}
	m := stableMember(t, s, rec)
	laneBusy := make(chan struct{}, 1)
	m.laneWait = func() { laneBusy <- struct{}{} }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	autoDone := clientstest.CommitAsync(ctx, m, map[string]map[int32]int64{topic: {0: 61}})
	a := <-s.arrivals
	if a.offset() != 61 {
		t.Fatalf("first commit sent offset %d, want 61", a.offset())
	}
	appDone := clientstest.CommitAsync(ctx, m, map[string]map[int32]int64{topic: {0: 62}})
	select {
	case b := <-s.arrivals:
		b.answer <- nil
		<-appDone
		a.answer <- nil
		<-autoDone
		t.Fatalf("commit of %d was sent while the commit of 61 had no answer; the coordinator applied %v, the member acknowledged %v",
			b.offset(), s.applied.Offsets(), acknowledgedOffsets(rec))
	case <-laneBusy:
	}
	a.answer <- nil
	if err := (<-autoDone).Err; err != nil {
		t.Fatalf("commit of 61: %v", err)
	}
	b := <-s.arrivals
	b.answer <- nil
	if err := (<-appDone).Err; err != nil {
		t.Fatalf("commit of 62: %v", err)
	}
	if got := s.applied.Offsets(); fmt.Sprint(got) != "[61 62]" {
		t.Fatalf("coordinator applied %v, want [61 62]", got)
	}
}

// TestRetryAfterLostAnswerIsNotSentAfterANewerCommit: the commit of 61
// gets no answer (the connection died while the coordinator's node was
// paused) and is retried after a backoff; during the backoff the lane is
// free and the commit of 62 is sent and acknowledged. The retry of 61 must
// not be sent: it would land after 62.
func TestRetryAfterLostAnswerIsNotSentAfterANewerCommit(t *testing.T) {
	s := &scriptedCoordinator{arrivals: make(chan *commitArrival, 16)}
	rec := &recorder{}
	m := stableMember(t, s, rec)
	// The backoff after the lost answer ends when the test says so.
	backoffOver := make(chan struct{})
	m.cfg.retryBackoff, m.cfg.retryBackoffMax = time.Hour, time.Hour
	m.cfg.Clock = gateClock{clients.WallClock{}, backoffOver}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	first := clientstest.CommitAsync(ctx, m, map[string]map[int32]int64{topic: {0: 61}})
	a := <-s.arrivals
	a.answer <- errors.New("broken pipe") // no answer: outcome unknown, retried after the backoff

	second := clientstest.CommitAsync(ctx, m, map[string]map[int32]int64{topic: {0: 62}})
	b := <-s.arrivals
	if b.offset() != 62 {
		t.Fatalf("second commit sent offset %d, want 62", b.offset())
	}
	b.answer <- nil
	if err := (<-second).Err; err != nil {
		t.Fatalf("commit of 62: %v", err)
	}
	close(backoffOver)
	select {
	case r := <-first:
		if r.Err != nil || r.Failed[topic][0] != Superseded {
			t.Fatalf("commit of 61 returned %v, %v; want %s for t-0", r.Failed, r.Err, Superseded)
		}
	case c := <-s.arrivals:
		c.answer <- nil
		<-first
		t.Fatalf("the retry of 61 was sent (offset %d) after 62 was acknowledged; the coordinator applied %v", c.offset(), s.applied.Offsets())
	}
	if got := s.applied.Offsets(); fmt.Sprint(got) != "[62]" {
		t.Fatalf("coordinator applied %v, want [62]", got)
	}
}

// gateClock's timers fire when gate is closed.
type gateClock struct {
	clients.WallClock
	gate chan struct{}
}

func (g gateClock) After(time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	go func() { <-g.gate; c <- time.Now() }()
	return c
}
