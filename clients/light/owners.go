package light

import (
	"slices"
	"sync"
	"time"
)

// Owners tracks which member owns each partition, as the members report
// it, and measures the rebalance pause of each partition: the time from
// its previous owner giving it up to its next owner taking it. A
// partition taken while another member still holds it is an overlap
// (two owners at once); the tracker counts it and keeps both.
type Owners struct {
	mu       sync.Mutex
	holders  [][]int32 // partition → members holding it
	released []time.Time
	pauses   []time.Duration
	overlaps int
}

// NewOwners tracks partitions 0..n-1.
func NewOwners(n int32) *Owners {
	return &Owners{holders: make([][]int32, n), released: make([]time.Time, n)}
}

// Acquire records that member took parts at now.
func (o *Owners) Acquire(member int32, parts []int32, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range parts {
		if p < 0 || int(p) >= len(o.holders) || slices.Contains(o.holders[p], member) {
			continue
		}
		if len(o.holders[p]) > 0 {
			o.overlaps++
		} else if !o.released[p].IsZero() {
			o.pauses = append(o.pauses, now.Sub(o.released[p]))
		}
		o.holders[p] = append(o.holders[p], member)
	}
}

// Release records that member gave parts up at now.
func (o *Owners) Release(member int32, parts []int32, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range parts {
		if p < 0 || int(p) >= len(o.holders) {
			continue
		}
		if i := slices.Index(o.holders[p], member); i >= 0 {
			o.holders[p] = slices.Delete(o.holders[p], i, i+1)
			if len(o.holders[p]) == 0 {
				o.released[p] = now
			}
		}
	}
}

// Exact reports whether every partition has exactly one owner.
func (o *Owners) Exact() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, h := range o.holders {
		if len(h) != 1 {
			return false
		}
	}
	return true
}

// Owner returns each partition's owners.
func (o *Owners) Owner() [][]int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([][]int32, len(o.holders))
	for i, h := range o.holders {
		out[i] = slices.Clone(h)
	}
	return out
}

// TakePauses returns the pauses measured since the last call and forgets
// them, so that each phase of a run gets its own.
func (o *Owners) TakePauses() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.pauses
	o.pauses = nil
	return p
}

// Overlaps is the number of times a partition was taken while another
// member held it.
func (o *Owners) Overlaps() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.overlaps
}
