package pollgate

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients"
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

// Current hands out only the live current generation's records that have
// not ended, of a partition owned; none while no generation is live.
func TestCurrent(t *testing.T) {
	open, done := make(chan struct{}), make(chan struct{})
	close(done)
	rec := func(gen uint64, ended chan struct{}, topic string, p int32, off int64) Record {
		return Record{Gen: gen, Ended: ended, Rec: clients.Record{Topic: topic, Partition: p, Offset: off}}
	}
	got := []Record{
		rec(2, open, "t", 0, 1), // kept
		rec(1, open, "t", 0, 2), // an older generation
		rec(2, done, "t", 0, 3), // the generation ended
		rec(2, open, "t", 1, 4), // partition not owned
		rec(2, open, "u", 0, 5), // topic not owned
		rec(2, open, "t", 2, 6), // kept
	}
	owned := clients.Partitions{"t": {0, 2}}
	var offs []int64
	for _, r := range Current(got, true, 2, owned) {
		offs = append(offs, r.Offset)
	}
	if want := []int64{1, 6}; !slices.Equal(offs, want) {
		t.Errorf("Current kept offsets %v, want %v", offs, want)
	}
	if out := Current(got, false, 2, owned); out != nil {
		t.Errorf("Current with no live generation = %v, want nil", out)
	}
}
