package light

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersions is a small request for pool tests; its answer is made by
// the test (held) or by hold's caller.
func apiVersions() kmsg.Request {
	r := kmsg.NewPtrApiVersionsRequest()
	r.SetVersion(3)
	r.ClientSoftwareName, r.ClientSoftwareVersion = "gq", "0"
	return r
}

func holdAll(*stubReq) kmsg.Response { return nil }

func answerAll(*stubReq) kmsg.Response { return kmsg.NewPtrApiVersionsResponse() }

// asks runs n Do calls of members from..from+n-1 in goroutines; wait
// returns their errors in member order.
func asks(ctx context.Context, p *Pool, addr string, from, n int, timeout time.Duration) (wait func() []error) {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = p.Do(ctx, addr, from+i, apiVersions(), timeout)
		})
	}
	return func() []error { wg.Wait(); return errs }
}

func (p *Pool) queued(addr string) int {
	l := p.lane(addr, 0)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nq
}

// TestLaneOpensConnectionsByQueueDepth scripts a shared lane's sizing: a
// request that finds room is written at once; the lane opens another
// connection only when its queue holds more than QueuePerConn requests
// per connection open or being dialed; a new connection takes requests
// from the queue at once; and the lane never goes past its bound.
func TestLaneOpensConnectionsByQueueDepth(t *testing.T) {
	s, p := stubPool(t, holdAll, 3)
	ctx := context.Background()

	// One request: a connection is dialed for it.
	w0 := asks(ctx, p, s.addr(), 0, 1, 0)
	first := s.next()
	if n := s.accepted.Load(); n != 1 {
		t.Fatalf("%d connections for one request, want 1", n)
	}
	// The second goes on the same connection (Window 2); the next
	// QueuePerConn wait in the queue without a new connection.
	w1 := asks(ctx, p, s.addr(), 1, 1+QueuePerConn, 0)
	eventually(t, "the queue holds QueuePerConn requests", func() bool { return p.queued(s.addr()) == QueuePerConn })
	if n := s.accepted.Load(); n != 1 {
		t.Fatalf("%d connections with %d requests queued for 1, want still 1", n, QueuePerConn)
	}
	// One more makes the queue longer than QueuePerConn per connection:
	// a second connection, which takes Window requests off the queue.
	w2 := asks(ctx, p, s.addr(), 10, 1, 0)
	eventually(t, "a second connection", func() bool { return s.accepted.Load() == 2 })
	eventually(t, "the new connection takes Window queued requests", func() bool { return p.queued(s.addr()) == QueuePerConn+1-Window })
	// A flood of 100 more: the lane stops at its bound of 3.
	w3 := asks(ctx, p, s.addr(), 100, 100, 0)
	eventually(t, "the bound of 3 connections", func() bool { return p.Conns(s.addr()) == 3 })
	eventually(t, "every request but the written ones queued", func() bool { return p.queued(s.addr()) == 107-3*Window })
	time.Sleep(50 * time.Millisecond) // room for a wrong fourth dial
	if n := s.accepted.Load(); n != 3 {
		t.Fatalf("%d connections, want the bound of 3", n)
	}

	// Answer everything: every request is answered once, none dropped.
	first.reply <- kmsg.NewPtrApiVersionsResponse()
	go func() {
		for r := range s.held {
			r.reply <- kmsg.NewPtrApiVersionsResponse()
		}
	}()
	for _, w := range []func() []error{w0, w1, w2, w3} {
		for i, err := range w() {
			if err != nil {
				t.Errorf("request %d: %v", i, err)
			}
		}
	}
	if n := len(s.requests(kmsg.ApiVersions)); n != 107 {
		t.Errorf("the broker read %d requests, want 107", n)
	}
}

// TestLaneSteadyNeedsOneConnection: requests that come one after another,
// each answered before the next, never queue, so the lane keeps one
// connection however many members send them.
func TestLaneSteadyNeedsOneConnection(t *testing.T) {
	s, p := stubPool(t, answerAll, 0)
	for i := range 200 {
		if _, err := p.Do(context.Background(), s.addr(), i, apiVersions(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.accepted.Load(); n != 1 {
		t.Fatalf("%d connections for 200 requests one at a time, want 1", n)
	}
}

// TestLaneDropsGivenUpRequest: a request given up while it waits in the
// queue is dropped there and never written: the broker never reads it,
// and the request asked after it is the next one the broker reads.
func TestLaneDropsGivenUpRequest(t *testing.T) {
	s, p := stubPool(t, holdAll, 1)
	st := p.stats

	// Two requests fill the one connection's window; the broker holds
	// the first (and has not read the second: it reads one at a time).
	wa := asks(context.Background(), p, s.addr(), 0, Window, 0)
	a := s.next()
	eventually(t, "the connection's window full", func() bool {
		l := p.lane(s.addr(), 0)
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.conns) == 1 && l.conns[0].busy == Window
	})
	// Member 5's request waits in the queue; member 5 gives it up.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := p.Do(ctx, s.addr(), 5, apiVersions(), 0)
		gaveUp <- err
	}()
	eventually(t, "member 5's request queued", func() bool { return p.queued(s.addr()) == 1 })
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("member 5's given-up request returned %v, want context.Canceled", err)
	}
	// Member 6 asks after it.
	w6 := asks(context.Background(), p, s.addr(), 6, 1, 0)

	a.reply <- kmsg.NewPtrApiVersionsResponse()
	b := s.next() // the second of the window
	b.reply <- kmsg.NewPtrApiVersionsResponse()
	c := s.next()
	c.reply <- kmsg.NewPtrApiVersionsResponse()
	for _, err := range append(wa(), w6()...) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.requests(kmsg.ApiVersions)); n != 3 {
		t.Fatalf("the broker read %d requests, want 3: member 5's given-up request was sent", n)
	}
	if d := st.DroppedBy()["ApiVersions"]; d != 1 {
		t.Errorf("dropped %d requests, want 1", d)
	}
	if v := st.VoidBy()["ApiVersions"]; v != 0 {
		t.Errorf("%d requests given up after they were written, want 0", v)
	}
}

// TestLaneUnansweredBreaksConnection: a written request unanswered past
// its timeout breaks its connection, as Kafka's clients do after
// request.timeout.ms: the other request written on it fails, and the
// request queued behind them goes out on a new connection.
func TestLaneUnansweredBreaksConnection(t *testing.T) {
	s, p := stubPool(t, holdAll, 1)
	ctx := context.Background()
	wOther := asks(ctx, p, s.addr(), 1, 1, 0) // written first, no timeout of its own
	s.next()                                  // held for good
	timedOut := make(chan error, 1)
	go func() {
		_, err := p.Do(ctx, s.addr(), 2, apiVersions(), 500*time.Millisecond)
		timedOut <- err
	}()
	eventually(t, "two requests written", func() bool {
		l := p.lane(s.addr(), 0)
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.conns) == 1 && l.conns[0].busy == 2
	})
	wQueued := asks(ctx, p, s.addr(), 3, 1, 0)
	if err := <-timedOut; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the unanswered request returned %v, want a deadline error", err)
	}
	if err := wOther()[0]; err == nil {
		t.Fatal("the other request on the broken connection was answered")
	}
	r := s.next() // the queued one, on a new connection
	if r.conn != 2 {
		t.Fatalf("the queued request went out on connection %d, want a new one (2)", r.conn)
	}
	r.reply <- kmsg.NewPtrApiVersionsResponse()
	if err := wQueued()[0]; err != nil {
		t.Fatal(err)
	}
}

// TestLaneFailsQueueWithoutConnection: when no connection can be had (the
// broker refuses), the queued requests fail with the dial's error rather
// than wait.
func TestLaneFailsQueueWithoutConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := NewSharedPool(0, "gq", &Stats{})
	defer p.Close()
	for i, err := range asks(context.Background(), p, addr, 0, 20, 0)() {
		if err == nil {
			t.Fatalf("request %d to a refusing address succeeded", i)
		}
	}
}

// TestPoolBoundsConnectsInFlight: members with connections of their own
// (the classic pool) dial at most MaxDialing at once to one address.
func TestPoolBoundsConnectsInFlight(t *testing.T) {
	s := newStub(t, answerAll)
	p := NewOwnPool("gq", &Stats{})
	defer p.Close()
	var now, peak atomic.Int64
	p.mapAddr = func(a string) string {
		n := now.Add(1)
		for {
			m := peak.Load()
			if n <= m || peak.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		now.Add(-1)
		return a
	}
	const members = 4 * MaxDialing
	for i, err := range asks(context.Background(), p, s.addr(), 0, members, 0)() {
		if err != nil {
			t.Errorf("member %d: %v", i, err)
		}
	}
	if m := peak.Load(); m > MaxDialing || m < 2 {
		t.Errorf("at most %d connects were in flight at once, want 2 to %d", m, MaxDialing)
	}
	if n := s.accepted.Load(); n != members {
		t.Errorf("the listener accepted %d connections, want one per member, %d", n, members)
	}
}

// TestPoolClosedWhileDialing: a dial that ends after Close is dropped,
// not kept in the pool, and the request waiting for it fails.
func TestPoolClosedWhileDialing(t *testing.T) {
	s := newStub(t, answerAll)
	p := NewSharedPool(1, "gq", &Stats{})
	started, release := make(chan struct{}), make(chan struct{})
	p.mapAddr = func(a string) string {
		close(started)
		<-release
		return a
	}
	errc := make(chan error, 1)
	go func() {
		_, err := p.Do(context.Background(), s.addr(), 0, apiVersions(), 0)
		errc <- err
	}()
	<-started
	p.Close()
	close(release)
	if err := <-errc; err == nil {
		t.Fatal("a request whose dial spanned Close was answered")
	}
	if open, _, _ := p.stats.Conns(); open != 0 {
		t.Errorf("%d connections open after Close, want 0", open)
	}
}

// TestIdleConnectionClosedByBroker: a broker that closes an idle
// connection (its node stopping) has it closed here at once, not left
// open until the next request finds it broken: a group of 10,000 classic
// members whose coordinator restarted otherwise kept 10,000 dead
// connections beside the 10,000 new ones, past the process's 20,000
// open files.
func TestIdleConnectionClosedByBroker(t *testing.T) {
	s, p := stubPool(t, answerAll, 0)
	st := p.stats
	if _, err := p.Do(context.Background(), s.addr(), 0, apiVersions(), 0); err != nil {
		t.Fatal(err)
	}
	if open, _, _ := st.Conns(); open != 1 {
		t.Fatalf("%d connections open after one request, want 1", open)
	}
	s.closeConns()
	eventually(t, "the idle connection the broker closed is closed here", func() bool {
		open, _, _ := st.Conns()
		return open == 0 && p.Conns(s.addr()) == 0
	})
}

// stubPool starts a stub broker that answers with answer and a shared
// pool of maxConns connections a broker (NewSharedPool), closed when the
// test ends.
func stubPool(t *testing.T, answer func(*stubReq) kmsg.Response, maxConns int) (*stub, *Pool) {
	t.Helper()
	s := newStub(t, answer)
	p := NewSharedPool(maxConns, "gq", &Stats{})
	t.Cleanup(p.Close)
	return s, p
}
