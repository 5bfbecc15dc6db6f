// Package timerheap is the queue of timer armings both coordinators keep
// (the classic one's CoordinatorTimer and the consumer group Manager's
// timers): a min-heap whose entries stay queued when their timer is
// cancelled or armed again, until they come up or the heap is compacted.
package timerheap

// Entry is what a Heap holds: Before orders two entries. The order must be
// total (the coordinators break deadline ties by an arming number), so that
// the order entries come out in does not depend on how the heap stores them.
type Entry[E any] interface {
	Before(E) bool
}

// Heap is a min-heap of entries, the one Before puts first on top. The zero
// value is an empty heap. It is container/heap's algorithm on a typed slice,
// so entries are neither boxed nor ordered through an interface.
type Heap[E Entry[E]] []E

// Push adds x.
func (h *Heap[E]) Push(x E) {
	*h = append(*h, x)
	h.up(len(*h) - 1)
}

// Pop removes and returns the first entry; the heap must not be empty.
func (h *Heap[E]) Pop() E {
	s := *h
	n := len(s) - 1
	s[0], s[n] = s[n], s[0]
	h.down(0, n)
	x := s[n]
	var zero E
	s[n] = zero // the backing array keeps no stale entry alive
	*h = s[:n]
	return x
}

// Compact keeps only the entries live reports when the heap holds more than
// 1024 entries and more than four times armed (the number of armed timers),
// so that re-arming a timer again and again (a member's heartbeats re-arm its
// session timer) does not grow the heap without bound.
func (h *Heap[E]) Compact(armed int, live func(E) bool) {
	if len(*h) <= 1024 || len(*h) <= 4*armed {
		return
	}
	q := (*h)[:0]
	for _, x := range *h {
		if live(x) {
			q = append(q, x)
		}
	}
	clear((*h)[len(q):])
	*h = q
	for i := len(q)/2 - 1; i >= 0; i-- {
		h.down(i, len(q))
	}
}

func (h Heap[E]) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !h[j].Before(h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (h Heap[E]) down(i, n int) {
	for {
		j := 2*i + 1
		if j >= n || j < 0 { // j < 0 after int overflow
			return
		}
		if r := j + 1; r < n && h[r].Before(h[j]) {
			j = r
		}
		if !h[j].Before(h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}
