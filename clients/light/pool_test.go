package light

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// listen accepts connections on loopback until the test ends and counts
// them.
func listen(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String(), &n
}

// TestPoolSharedSlotDialsOnce: the members of one slot wait for the dial
// in progress instead of each dialing, so 200 members on 4 slots make 4
// connections, and every member of a slot gets the same one.
func TestPoolSharedSlotDialsOnce(t *testing.T) {
	addr, accepted := listen(t)
	p := NewPool(4, 16, "gq", &Stats{})
	defer p.Close()
	var slow atomic.Int64
	p.mapAddr = func(a string) string {
		slow.Add(1)
		time.Sleep(20 * time.Millisecond) // a slow connect: the others of the slot arrive meanwhile
		return a
	}
	conns := make([]*Conn, 200)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			c, err := p.Get(context.Background(), addr, i)
			if err != nil {
				t.Errorf("member %d: %v", i, err)
			}
			conns[i] = c
		})
	}
	wg.Wait()
	if d := slow.Load(); d != 4 {
		t.Errorf("%d dials for 4 slots, want 4", d)
	}
	for i, c := range conns {
		if c == nil || c != conns[i%4] {
			t.Fatalf("member %d got %p, the first of its slot %p", i, c, conns[i%4])
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for accepted.Load() != 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := accepted.Load(); n != 4 {
		t.Errorf("the listener accepted %d connections, want 4", n)
	}
}

// TestPoolBoundsConnectsInFlight: members with connections of their own
// (the classic pool) dial at most MaxDialing at once to one address.
func TestPoolBoundsConnectsInFlight(t *testing.T) {
	addr, accepted := listen(t)
	p := NewPool(1<<30, 2, "gq", &Stats{})
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
	var wg sync.WaitGroup
	for i := range members {
		wg.Go(func() {
			if _, err := p.Get(context.Background(), addr, i); err != nil {
				t.Errorf("member %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if m := peak.Load(); m > MaxDialing || m < 2 {
		t.Errorf("at most %d connects were in flight at once, want 2 to %d", m, MaxDialing)
	}
	deadline := time.Now().Add(5 * time.Second)
	for accepted.Load() != members && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := accepted.Load(); n != members {
		t.Errorf("the listener accepted %d connections, want %d", n, members)
	}
}

// TestPoolClosedWhileDialing: a dial that ends after Close is dropped,
// not kept in the pool.
func TestPoolClosedWhileDialing(t *testing.T) {
	addr, _ := listen(t)
	p := NewPool(1, 2, "gq", &Stats{})
	started, release := make(chan struct{}), make(chan struct{})
	p.mapAddr = func(a string) string {
		close(started)
		<-release
		return a
	}
	errc := make(chan error, 1)
	go func() {
		_, err := p.Get(context.Background(), addr, 0)
		errc <- err
	}()
	<-started
	p.Close()
	close(release)
	if err := <-errc; err == nil {
		t.Fatal("a dial that spanned Close handed out its connection")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, conns := range p.slots {
		if len(conns) > 0 {
			t.Fatalf("the closed pool kept %d connection(s)", len(conns))
		}
	}
}
