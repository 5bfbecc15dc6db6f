// Package pollgate holds a member's ownership callbacks back between two
// Polls, as kgo.BlockRebalanceOnPoll does for kgo: a callback (a
// revocation) runs only while a Poll runs, and every callback already
// waiting when a Poll starts has run when that Poll returns. A sync.Mutex
// held between Polls does not give the second half: a Poll that unlocks
// and locks again at once can take the lock back before a parked waiter
// wakes, and return records of a generation whose revocation was due.
package pollgate

import (
	"context"
	"slices"
	"sync"

	"github.com/groupquake/groupquake/clients"
)

// Gate is closed between Polls. The zero value is not usable: call New.
type Gate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	open    bool
	waiting int // callbacks waiting for the gate to open
	busy    int // callbacks running
}

// New returns a closed gate.
func New() *Gate {
	g := &Gate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Enter waits until a Poll runs (or the gate is opened for good), then
// lets the callback run; Leave ends it.
func (g *Gate) Enter() {
	g.mu.Lock()
	g.waiting++
	for !g.open {
		g.cond.Wait()
	}
	g.waiting--
	g.busy++
	g.mu.Unlock()
}

// Leave ends a callback that Enter let in.
func (g *Gate) Leave() {
	g.mu.Lock()
	g.busy--
	g.cond.Broadcast()
	g.mu.Unlock()
}

// Open lets callbacks run: a Poll starts, or the member closes.
func (g *Gate) Open() {
	g.mu.Lock()
	g.open = true
	g.cond.Broadcast()
	g.mu.Unlock()
}

// Shut waits until no callback is waiting or running, then closes the
// gate: the Poll returns.
func (g *Gate) Shut() {
	g.mu.Lock()
	for g.waiting > 0 || g.busy > 0 {
		g.cond.Wait()
	}
	g.open = false
	g.mu.Unlock()
}

// Drain is what a Poll does with the gate: it opens it, takes the records
// waiting in recs (waiting for the first until ctx ends, then as many as
// are there, up to max), and shuts it again. A ctx that ends is no error:
// Drain returns what it took.
func Drain[R any](ctx context.Context, g *Gate, recs <-chan R, max int) []R {
	g.Open()
	var got []R
	select {
	case r := <-recs:
		got = append(got, r)
	case <-ctx.Done():
	}
more:
	for len(got) < max {
		select {
		case r := <-recs:
			got = append(got, r)
		default:
			break more
		}
	}
	g.Shut()
	return got
}

// Record is a record a generation's reader (a session's claim) handed to
// Poll: Gen numbers that generation, Ended closes when it ends.
type Record struct {
	Gen   uint64
	Ended <-chan struct{}
	Rec   clients.Record
}

// Current returns the records of got that Poll hands out: those of the
// current generation cur while one is live, whose generation has not ended
// (an ended generation hands out no more records, even while its
// revocation waits for the next Poll), of a partition owned.
func Current(got []Record, live bool, cur uint64, owned clients.Partitions) []clients.Record {
	var out []clients.Record
	for _, r := range got {
		if live && r.Gen == cur && !ended(r.Ended) && slices.Contains(owned[r.Rec.Topic], r.Rec.Partition) {
			out = append(out, r.Rec)
		}
	}
	return out
}

// ended says whether ch is closed.
func ended(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
