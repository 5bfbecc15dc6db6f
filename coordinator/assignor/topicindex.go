package assignor

import "encoding/binary"

// topicIndex numbers topics: topic id → a number from 0, in the order
// added. The builders look a topic up once or more per member and topic of
// its assignment; a Uuid is random, so 8 of its bytes are a hash already,
// and an open-addressing table of them answers without hashing 16 bytes
// (Kafka's HashMap<Uuid, _> likewise uses Uuid.hashCode, a few xors).
type topicIndex struct {
	slots []topicSlot // a power of two, at most half full
	n     int32
}

type topicSlot struct {
	id  TopicID
	num int32 // the number + 1; 0 is an empty slot
}

func newTopicIndex(capacity int) *topicIndex {
	size := 8
	for size < 2*capacity {
		size *= 2
	}
	return &topicIndex{slots: make([]topicSlot, size)}
}

func (x *topicIndex) slot(t TopicID) uint64 {
	h := binary.LittleEndian.Uint64(t[:8]) ^ binary.LittleEndian.Uint64(t[8:])
	return (h * 0x9E3779B97F4A7C15) >> 32
}

// get returns t's number, or false.
func (x *topicIndex) get(t TopicID) (int32, bool) {
	mask := uint64(len(x.slots) - 1)
	for i := x.slot(t) & mask; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.num == 0 {
			return 0, false
		}
		if s.id == t {
			return s.num - 1, true
		}
	}
}

// add numbers t (not in the index yet) with the next number and returns it.
func (x *topicIndex) add(t TopicID) int32 {
	if int(x.n+1)*2 > len(x.slots) {
		old := x.slots
		x.slots = make([]topicSlot, 2*len(old))
		for _, s := range old {
			if s.num != 0 {
				x.put(s.id, s.num)
			}
		}
	}
	x.n++
	x.put(t, x.n)
	return x.n - 1
}

func (x *topicIndex) put(t TopicID, num int32) {
	mask := uint64(len(x.slots) - 1)
	i := x.slot(t) & mask
	for x.slots[i].num != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = topicSlot{id: t, num: num}
}
