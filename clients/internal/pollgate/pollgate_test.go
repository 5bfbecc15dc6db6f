package pollgate

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitingCallbackRunsInTheNextPoll scripts the order that broke with a
// mutex held between Polls (kafka-go seed 223 of churn on the embedded
// cluster: after a 16 s stall, the first Poll returned records of a
// generation whose revocation had waited all along): a callback waits
// while the gate is shut; a Poll opens and shuts it at once; the callback
// must have run when Shut returns.
func TestWaitingCallbackRunsInTheNextPoll(t *testing.T) {
	for range 200 {
		g := New()
		var ran atomic.Bool
		parked := make(chan struct{})
		go func() {
			close(parked)
			g.Enter()
			time.Sleep(time.Millisecond) // the callback's report takes a while
			ran.Store(true)
			g.Leave()
		}()
		<-parked
		for { // until the callback is parked in Enter
			g.mu.Lock()
			w := g.waiting
			g.mu.Unlock()
			if w == 1 {
				break
			}
			time.Sleep(time.Microsecond)
		}
		g.Open()
		g.Shut()
		if !ran.Load() {
			t.Fatal("Shut returned before the callback that was waiting when the Poll opened the gate had run")
		}
	}
}

// TestCallbackWaitsForAPoll: a callback does not run while the gate is shut.
func TestCallbackWaitsForAPoll(t *testing.T) {
	g := New()
	done := make(chan struct{})
	go func() { g.Enter(); g.Leave(); close(done) }()
	select {
	case <-done:
		t.Fatal("a callback ran while no Poll ran")
	case <-time.After(50 * time.Millisecond):
	}
	g.Open()
	<-done
	g.Shut()
}
