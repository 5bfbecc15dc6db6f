package assignor

import (
	"math/rand/v2"
	"testing"
)

// TestTopicIndex: topics get numbers in the order added, found again after
// the table grows, and topics not added are not found, for random ids and
// for ids that differ in one byte only.
func TestTopicIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 100, 1000} {
		for _, structured := range []bool{false, true} {
			x := newTopicIndex(n / 3)
			var ids []TopicID
			for i := range n {
				id := randomTopicID(rng)
				if structured {
					id = TopicID{15: byte(i), 14: byte(i >> 8)}
				}
				ids = append(ids, id)
				if got := x.add(id); got != int32(i) {
					t.Fatalf("add #%d = %d", i, got)
				}
			}
			for i, id := range ids {
				if got, ok := x.get(id); !ok || got != int32(i) {
					t.Fatalf("n=%d structured=%t: get(#%d) = %d, %t", n, structured, i, got, ok)
				}
			}
			for range 50 {
				if _, ok := x.get(randomTopicID(rng)); ok {
					t.Fatalf("n=%d: a topic never added was found", n)
				}
			}
		}
	}
}
