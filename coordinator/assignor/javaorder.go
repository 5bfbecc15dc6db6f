package assignor

import (
	"cmp"
	"math"
	"math/bits"
	"unicode/utf16"
)

// This file reproduces the iteration order of java.util.HashMap and HashSet
// for the keys the assignors use: String member ids, Uuid topic ids and
// Integer partitions. One detail depends on the broker's JDK: how
// `new HashSet<>(collection)` sizes its table (changed in JDK 19). The
// apache/kafka images run JDK 21; a Debian openjdk-17 image runs 17.
//
// A HashMap iterates its table from bucket 0 up; within a bucket, entries are
// in insertion order, and resizing splits buckets without reordering them. So
// the order is a stable sort of the insertion order by
// spread(hashCode) & (tableSize-1), where tableSize is what the map grew to.
// Not reproduced: treeified bins (8+ keys in one bucket of a 64+ table), whose
// order also follows insertion except for keys inserted after treeification.

const javaMaxCapacity = 1 << 30

// javaSpread is HashMap.hash: the high half folded into the low half.
func javaSpread(h int32) int32 { return h ^ int32(uint32(h)>>16) }

// javaTableSizeFor is HashMap.tableSizeFor.
func javaTableSizeFor(c int) int {
	if c <= 1 {
		return 1
	}
	n := 1 << bits.Len(uint(c-1))
	if n > javaMaxCapacity {
		return javaMaxCapacity
	}
	return n
}

// javaGrownTable is the table size after size insertions into a table that
// started at initial: a resize doubles it whenever size exceeds 0.75·table.
func javaGrownTable(initial, size int) int {
	n := initial
	for n < javaMaxCapacity && size > int(float32(n)*0.75) {
		n *= 2
	}
	return n
}

// javaDefaultMapTable is the table of `new HashMap<>()` after size puts.
func javaDefaultMapTable(size int) int { return javaGrownTable(16, size) }

// DefaultJavaVersion is the JDK of the official apache/kafka 4.x images
// (eclipse-temurin:21-jre-alpine, docker/jvm/Dockerfile).
const DefaultJavaVersion = 21

// javaCopySetTable is the table of `new HashSet<>(collection)`. JDK 19+:
// HashMap.newHashMap(max(size, 12)), capacity ceil(max(size,12)/0.75). JDK 17
// and 18: new HashMap<>(max((int)(size/.75f)+1, 16)). They differ when size is
// 3·2^k ≥ 12 (12, 24, 48, …): JDK 17 gets a table twice as large.
func javaCopySetTable(size, javaVersion int) int {
	capacity := max(int(float32(size)/float32(0.75))+1, 16)
	if javaVersion >= 19 {
		capacity = int(math.Ceil(float64(max(size, 12)) / 0.75))
	}
	return javaGrownTable(javaTableSizeFor(capacity), size)
}

// javaOrder returns the permutation of 0..n-1 that a Java hash table of the
// given size iterates, for keys inserted in index order with the given
// hashes: a stable sort by bucket, here a counting sort (the table is at
// most a few times the number of keys), or an insertion sort for a few keys.
func javaOrder(hashes []int32, table int) []int {
	mask := int32(table - 1)
	idx := make([]int, len(hashes))
	if len(hashes) <= 16 {
		for i := range idx {
			idx[i] = i
		}
		for i := 1; i < len(idx); i++ {
			for j := i; j > 0 && javaSpread(hashes[idx[j]])&mask < javaSpread(hashes[idx[j-1]])&mask; j-- {
				idx[j], idx[j-1] = idx[j-1], idx[j]
			}
		}
		return idx
	}
	start := make([]int32, table+1) // start[b+1] counts bucket b, then where it begins
	for _, h := range hashes {
		start[javaSpread(h)&mask+1]++
	}
	for b := 1; b <= table; b++ {
		start[b] += start[b-1]
	}
	for i, h := range hashes {
		b := javaSpread(h) & mask
		idx[start[b]] = i
		start[b]++
	}
	return idx
}

// JavaKeyHash is the hash a java.util.HashMap keyed by strings places s
// by: HashMap.hash of String.hashCode.
func JavaKeyHash(s string) int32 { return javaSpread(javaStringHash(s)) }

// javaStringHash is String.hashCode, over UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	if isASCII(s) {
		for i := 0; i < len(s); i++ {
			h = 31*h + int32(s[i])
		}
		return h
	}
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*h + r1
			h = 31*h + r2
			continue
		}
		h = 31*h + r
	}
	return h
}

// javaUUIDHash is Uuid.hashCode.
func javaUUIDHash(t TopicID) int32 {
	x := t.msb() ^ t.lsb()
	return int32(x>>32) ^ int32(x)
}

// javaStringCompare is String.compareTo: UTF-16 code units, which differs from
// Go's byte order for characters above U+FFFF against U+E000–U+FFFF.
func javaStringCompare(a, b string) int {
	if isASCII(a) && isASCII(b) {
		return cmp.Compare(a, b)
	}
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	return len(ua) - len(ub)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// JavaHashMapOrder returns member ids in the order a `new HashMap<String, _>()`
// iterates them after they were put in the given order. Kafka's
// TargetAssignmentBuilder builds GroupSpec.memberIds() that way, putting members
// in the group's TimelineHashMap order; ids that share a bucket keep the order
// given here, so only those depend on that history.
func JavaHashMapOrder(ids []string) []string {
	hashes := make([]int32, len(ids))
	for i, id := range ids {
		hashes[i] = javaStringHash(id)
	}
	out := make([]string, 0, len(ids))
	for _, i := range javaOrder(hashes, javaDefaultMapTable(len(ids))) {
		out = append(out, ids[i])
	}
	return out
}

// javaUUIDSetCopyOrder is the iteration order of `new HashSet<>(topics)` with
// topics iterated in the given order.
func javaUUIDSetCopyOrder(topics []TopicID, javaVersion int) []TopicID {
	return inJavaOrder(topics, javaUUIDHash, javaCopySetTable(len(topics), javaVersion))
}

// JavaIntSetOrder is the iteration order of `new HashSet<>(partitions)` (as in
// Assignment.fromRecord) with the partitions listed in the given order, on the
// given JDK major version.
func JavaIntSetOrder(partitions []int32, javaVersion int) []int32 {
	return inJavaOrder(partitions, func(p int32) int32 { return p }, javaCopySetTable(len(partitions), javaVersion))
}

// JavaAssignmentOrder orders an assignment the way Kafka's
// Assignment.fromRecord builds it from a ConsumerGroupTargetAssignmentMember
// record: topics into a default HashMap in record order, each topic's
// partitions into `new HashSet<>(list)`. Pass topics and partitions in record
// order. The assignor's own output (sorted here) is iterated by a live broker
// in the order of whatever sets it built, which this cannot know; after a
// coordinator load, this is the order.
func JavaAssignmentOrder(record []TopicPartitions, javaVersion int) []TopicPartitions {
	out := inJavaOrder(record, func(tp TopicPartitions) int32 { return javaUUIDHash(tp.Topic) }, javaDefaultMapTable(len(record)))
	for i := range out {
		out[i].Partitions = JavaIntSetOrder(out[i].Partitions, javaVersion)
	}
	return out
}

// inJavaOrder is a copy of xs in the iteration order of a Java hash table
// of table buckets that xs were added to in order, each under hash(x).
func inJavaOrder[T any](xs []T, hash func(T) int32, table int) []T {
	hashes := make([]int32, len(xs))
	for i, x := range xs {
		hashes[i] = hash(x)
	}
	out := make([]T, 0, len(xs))
	for _, i := range javaOrder(hashes, table) {
		out = append(out, xs[i])
	}
	return out
}

// JavaHashOrder returns the order in which a java.util.HashMap (or
// HashSet) whose table has table buckets iterates keys of the given
// hashCode values inserted in index order: a permutation of 0..n-1.
// JavaNewHashMapTable and JavaDefaultTable give the table sizes.
func JavaHashOrder(hashCodes []int32, table int) []int { return javaOrder(hashCodes, table) }

// JavaDefaultTable is the table of `new HashMap<>()` or `new HashSet<>()`
// after size insertions.
func JavaDefaultTable(size int) int { return javaDefaultMapTable(size) }

// JavaPresizedTable is the table of `new HashMap<>(capacity)` after size
// insertions.
func JavaPresizedTable(capacity, size int) int {
	return javaGrownTable(javaTableSizeFor(capacity), size)
}

// JavaUUIDHash is Uuid.hashCode of a topic id.
func JavaUUIDHash(id [16]byte) int32 { return javaUUIDHash(TopicID(id)) }
