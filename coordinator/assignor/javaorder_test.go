package assignor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf16"
)

func TestJavaStringHash(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int32
	}{
		{"", 0},
		{"A", 65},
		{"Aa", 2112}, // the classic collision with "BB"
		{"BB", 2112},
		{"hello", 99162322},
		{"polygenelubricants", -2147483648}, // hashes to Integer.MIN_VALUE
		{"\U0001F600", 0xD83D*31 + 0xDE00},  // surrogate pair, two code units
	} {
		if got := javaStringHash(tc.s); got != tc.want {
			t.Errorf("javaStringHash(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

func TestJavaTableSizes(t *testing.T) {
	for _, tc := range []struct{ size, copy21, copy17, defaultTable int }{
		{0, 16, 16, 16}, {3, 16, 16, 16}, {12, 16, 32, 16}, {13, 32, 32, 32}, {24, 32, 64, 32},
		{25, 64, 64, 64}, {48, 64, 128, 64}, {49, 128, 128, 128},
	} {
		if got := javaCopySetTable(tc.size, 21); got != tc.copy21 {
			t.Errorf("javaCopySetTable(%d, JDK 21) = %d, want %d", tc.size, got, tc.copy21)
		}
		if got := javaCopySetTable(tc.size, 17); got != tc.copy17 {
			t.Errorf("javaCopySetTable(%d, JDK 17) = %d, want %d", tc.size, got, tc.copy17)
		}
		if got := javaDefaultMapTable(tc.size); got != tc.defaultTable {
			t.Errorf("javaDefaultMapTable(%d) = %d, want %d", tc.size, got, tc.defaultTable)
		}
	}
}

// A HashSet<Integer> iterates by value modulo its table size, so it is
// ascending only while every value is below the table size.
func TestJavaIntSetOrder(t *testing.T) {
	for _, tc := range []struct{ in, want []int32 }{
		{[]int32{2, 0, 1}, []int32{0, 1, 2}},
		{[]int32{3, 17}, []int32{17, 3}},         // table 16: 17 is in bucket 1
		{[]int32{33, 1, 17}, []int32{33, 1, 17}}, // all in bucket 1: insertion order
		{[]int32{5, 70000}, []int32{70000, 5}},   // spread: 0x11170^1 = 0x11171 lands in bucket 1, before 5
	} {
		if got := JavaIntSetOrder(tc.in, DefaultJavaVersion); !slices.Equal(got, tc.want) {
			t.Errorf("JavaIntSetOrder(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	var big []int32
	for p := int32(19); p >= 0; p-- {
		big = append(big, p)
	}
	if got := JavaIntSetOrder(big, DefaultJavaVersion); !slices.IsSorted(got) {
		t.Errorf("20 partitions in a 32-slot table should iterate ascending, got %v", got)
	}
}

func TestJavaHashMapOrder(t *testing.T) {
	if got := JavaHashMapOrder([]string{"C", "A", "B"}); !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Errorf("single letters sit in buckets 1..3: got %v", got)
	}
	// "Aa" and "BB" collide: insertion order decides.
	if got := JavaHashMapOrder([]string{"BB", "Aa"}); !slices.Equal(got, []string{"BB", "Aa"}) {
		t.Errorf("colliding keys keep insertion order: got %v", got)
	}
	// After growth the order is by bucket of the final table.
	var keys []string
	for i := range 40 {
		keys = append(keys, fmt.Sprintf("member%d", i))
	}
	got := JavaHashMapOrder(keys)
	table := int32(javaDefaultMapTable(len(keys)))
	for i := 1; i < len(got); i++ {
		if javaSpread(javaStringHash(got[i-1]))&(table-1) > javaSpread(javaStringHash(got[i]))&(table-1) {
			t.Fatalf("not in bucket order at %d: %v", i, got)
		}
	}
}

func TestTopicIDRoundTripAndCompare(t *testing.T) {
	s := "T1-A4s3VTwiI5CTbEp6POw"
	if got := mustTopic(s).String(); got != s {
		t.Fatalf("round trip %q → %q", s, got)
	}
	if _, err := ParseTopicID("short"); err == nil {
		t.Fatal("want an error for a short id")
	}
	// Uuid.compareTo compares signed halves: a high first bit sorts first.
	neg := TopicID{0x80}
	pos := TopicID{0x01}
	if compareTopicIDs(neg, pos) >= 0 {
		t.Fatal("Uuid.compareTo is signed: 0x80… < 0x01…")
	}
}

// The Kafka expectations for the homogeneous first assignment hold for either
// subscription order: the HashSet copy puts topic3 before topic1 for these ids.
func TestHomogeneousSubscriptionSetOrderForKafkaTopicIDs(t *testing.T) {
	for _, in := range [][]TopicID{{topic1, topic3}, {topic3, topic1}} {
		if got := javaUUIDSetCopyOrder(in, DefaultJavaVersion); !slices.Equal(got, []TopicID{topic3, topic1}) {
			t.Fatalf("HashSet order of %v = %v, want topic3 first", in, got)
		}
	}
}

// TestJavaOrderIsAStableSortByBucket: javaOrder (a counting sort, or an
// insertion sort for a few keys) is the stable sort of the insertion order
// by bucket, for any number of keys and any table.
func TestJavaOrderIsAStableSortByBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 2000 {
		n := rng.IntN(70)
		table := 1 << rng.IntN(9)
		hashes := make([]int32, n)
		for i := range hashes {
			hashes[i] = int32(rng.Uint32())
			if rng.IntN(4) == 0 && i > 0 {
				hashes[i] = hashes[rng.IntN(i)] // a bucket shared
			}
		}
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		mask := int32(table - 1)
		slices.SortStableFunc(want, func(a, b int) int {
			return int(javaSpread(hashes[a])&mask) - int(javaSpread(hashes[b])&mask)
		})
		if got := javaOrder(hashes, table); !slices.Equal(got, want) {
			t.Fatalf("javaOrder(%v, %d) = %v, want %v", hashes, table, got, want)
		}
	}
}

// TestJavaStringHashASCII: the ASCII loop gives String.hashCode as the
// UTF-16 loop does.
func TestJavaStringHashASCII(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for range 1000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(128))
		}
		s := string(b)
		var want int32
		for _, u := range utf16.Encode([]rune(s)) {
			want = 31*want + int32(u)
		}
		if got := javaStringHash(s); got != want {
			t.Fatalf("javaStringHash(%q) = %d, want %d", s, got, want)
		}
	}
}
