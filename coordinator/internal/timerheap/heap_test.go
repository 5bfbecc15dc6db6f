package timerheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type entry struct{ deadline, seq int }

func (a entry) Before(b entry) bool {
	return a.deadline < b.deadline || (a.deadline == b.deadline && a.seq < b.seq)
}

// TestHeapOrder: pushes and pops interleaved (seeded) give every entry back
// in Before's order, the first of what is queued at each Pop.
func TestHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Heap[entry]
	var want []entry // what is queued, sorted
	for seq := range 5000 {
		if r.IntN(3) > 0 || len(h) == 0 {
			e := entry{r.IntN(100), seq}
			h.Push(e)
			i, _ := slices.BinarySearchFunc(want, e, func(a, b entry) int {
				if a.Before(b) {
					return -1
				}
				return 1
			})
			want = slices.Insert(want, i, e)
			continue
		}
		if got := h.Pop(); got != want[0] {
			t.Fatalf("Pop gave %v, the first queued is %v", got, want[0])
		}
		want = want[1:]
	}
	for len(h) > 0 {
		if got := h.Pop(); got != want[0] {
			t.Fatalf("Pop gave %v, the first queued is %v", got, want[0])
		}
		want = want[1:]
	}
	if len(want) != 0 {
		t.Fatalf("heap empty with %d entries never given back", len(want))
	}
}

// TestHeapCompact: Compact drops the stale entries only once the heap holds
// more than 1024 entries and more than four times the armed ones, and the
// heap still gives the live entries in order after.
func TestHeapCompact(t *testing.T) {
	var h Heap[entry]
	for seq := range 1025 {
		h.Push(entry{1025 - seq, seq})
	}
	live := func(e entry) bool { return e.seq%10 == 0 }
	h.Compact(1025, live)
	if len(h) != 1025 {
		t.Fatalf("Compact with as many armed as queued left %d of 1025", len(h))
	}
	h.Compact(257, live)
	if len(h) != 1025 {
		t.Fatalf("Compact with 1025 queued, 257 armed (not four times as many) left %d", len(h))
	}
	h.Compact(103, live)
	if len(h) != 103 {
		t.Fatalf("Compact with 1025 queued, 103 armed left %d, want the 103 live", len(h))
	}
	for prev := 0; len(h) > 0; {
		e := h.Pop()
		if !live(e) || e.deadline < prev {
			t.Fatalf("after Compact Pop gave %v after deadline %d", e, prev)
		}
		prev = e.deadline
	}
}
