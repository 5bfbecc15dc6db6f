package assign

import (
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// This file reproduces the few JVM behaviours the Java assignors' output
// depends on: String.compareTo (UTF-16 code units, not bytes), String and
// TopicPartition hash codes, and the iteration order of java.util.HashMap
// and HashSet.
//
// HashMap iteration order, for the maps the assignors build (keys inserted,
// rarely removed, never more than eight keys in one bucket): buckets in
// index order, and within a bucket the insertion order. The bucket of a key
// is spread(hashCode) & (capacity-1), spread(h) = h ^ (h >>> 16); a table
// starts at 16 buckets and doubles when it holds more than 3/4 of its
// capacity, and a resize keeps the relative order of the keys that share a
// bucket. A bucket of nine or more keys is converted to a tree (or makes a
// table of fewer than 64 buckets resize) and then iterates differently; with
// member ids and partitions of one topic that does not happen in practice,
// and we do not model it.

// javaCompare is java.lang.String.compareTo for the strings a JVM decodes
// from these bytes: it compares UTF-16 code units, so a character above
// U+FFFF (a surrogate pair, 0xD800–0xDFFF) sorts before U+E000–U+FFFF,
// unlike a Go byte comparison. Invalid UTF-8 decodes as U+FFFD per bad byte;
// equal results fall back to the byte order so the order stays total.
func javaCompare(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) || (a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf) {
		// A common prefix followed by ASCII (or nothing) compares the
		// same in UTF-16 and in bytes.
		switch {
		case a == b:
			return 0
		case i == len(a):
			return -1
		case i == len(b):
			return 1
		case a[i] < b[i]:
			return -1
		}
		return 1
	}
	// Back up to a rune boundary in both strings (the prefixes are equal,
	// so it is the same boundary).
	for i > 0 && (!utf8.RuneStart(a[i]) || !utf8.RuneStart(b[i])) {
		i--
	}
	ua, ub := utf16Units(a[i:]), utf16Units(b[i:])
	for k := 0; k < len(ua) && k < len(ub); k++ {
		if ua[k] != ub[k] {
			if ua[k] < ub[k] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(ua) < len(ub):
		return -1
	case len(ua) > len(ub):
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func utf16Units(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s { // invalid bytes come out as U+FFFD
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			out = append(out, uint16(r1), uint16(r2))
		} else {
			out = append(out, uint16(r))
		}
	}
	return out
}

// javaStringHash is java.lang.String.hashCode.
func javaStringHash(s string) int32 {
	var h int32
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		for i := 0; i < len(s); i++ {
			h = 31*h + int32(s[i])
		}
		return h
	}
	for _, u := range utf16Units(s) {
		h = 31*h + int32(u)
	}
	return h
}

// javaTopicPartitionHash is org.apache.kafka.common.TopicPartition.hashCode.
func javaTopicPartitionHash(p tp) int32 {
	return 31*(31+p.partition) + javaStringHash(p.topic)
}

// javaBucket is the bucket index of a hash code in a table of capacity cap.
func javaBucket(h int32, capacity int) int {
	spread := uint32(h) ^ (uint32(h) >> 16)
	return int(spread & uint32(capacity-1))
}

// javaDefaultCapacity is the table size of a HashMap made with new
// HashMap<>() (or new HashSet<>()) after n distinct insertions.
func javaDefaultCapacity(n int) int {
	c := 16
	for n > c/4*3 {
		c *= 2
	}
	return c
}

// javaHashMapOrder returns the indices of keys in the order a new
// HashMap<>() iterates after put(keys[0]), put(keys[1]), … . Keys are
// distinct.
func javaHashMapOrder(keys []string) []int {
	capacity := javaDefaultCapacity(len(keys))
	buckets := make([]int, len(keys))
	order := make([]int, len(keys))
	for i, k := range keys {
		buckets[i] = javaBucket(javaStringHash(k), capacity)
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return buckets[x] - buckets[y] })
	return order
}

// javaHashSet models the iteration order of a java.util.HashSet of topic
// partitions closely enough to answer iterator().next(), which is all
// AbstractStickyAssignor asks of it (PartitionMovements.
// getTheActualPartitionToBeMoved).
type javaHashSet struct {
	seq      map[tp]uint64 // element → insertion sequence
	next     uint64
	capacity int
}

func newJavaHashSet() *javaHashSet {
	return &javaHashSet{seq: make(map[tp]uint64), capacity: 16}
}

func (s *javaHashSet) add(p tp) {
	if _, ok := s.seq[p]; ok {
		return
	}
	s.seq[p] = s.next
	s.next++
	// The table only grows (HashMap.resize on ++size > threshold).
	if len(s.seq) > s.capacity/4*3 {
		s.capacity *= 2
	}
}

func (s *javaHashSet) remove(p tp) { delete(s.seq, p) }

func (s *javaHashSet) empty() bool { return len(s.seq) == 0 }

// first is iterator().next(): the lowest bucket, and in it the earliest
// insertion.
func (s *javaHashSet) first() tp {
	var best tp
	bestBucket, bestSeq := -1, uint64(0)
	for p, q := range s.seq {
		b := javaBucket(javaTopicPartitionHash(p), s.capacity)
		if bestBucket < 0 || b < bestBucket || (b == bestBucket && q < bestSeq) {
			best, bestBucket, bestSeq = p, b, q
		}
	}
	return best
}
