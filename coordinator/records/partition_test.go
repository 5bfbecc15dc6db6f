package records

import (
	"encoding/base64"
	"testing"
)

// TestPartitionFor checks PartitionFor against values computed by Java
// itself: String.hashCode and org.apache.kafka.common.utils.Utils.abs from
// kafka-clients 4.4.0 (Utils.abs(s.hashCode()) % n). Group ids are base64
// so that non-ASCII ones survive as written.
func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		groupB64 string
		hash     int32
		n1, n50  int // partition for 1 and 50 partitions
		n3, n7   int
	}{
		{"", 0, 0, 0, 0, 0},
		{"YQ==", 97, 0, 47, 1, 6},                                   // "a"
		{"YWJj", 96354, 0, 4, 0, 6},                                 // "abc"
		{"aGVsbG8=", 99162322, 0, 22, 1, 0},                         // "hello"
		{"cG9seWdlbmVsdWJyaWNhbnRz", -2147483648, 0, 0, 0, 0},       // "polygenelubricants": Integer.MIN_VALUE, Utils.abs gives 0
		{"bXktZ3JvdXA=", -1906497762, 0, 12, 0, 1},                  // "my-group": negative hash
		{"Y29uc29sZS1jb25zdW1lci0xMjM0NQ==", 158455506, 0, 6, 0, 6}, // "console-consumer-12345"
		{"Z3JvdXBxdWFrZS0w", -1362902693, 0, 43, 2, 5},              // "groupquake-0"
		{"w6l0w6k=", 227742, 0, 42, 0, 4},                           // "été"
		{"8J+YgA==", 1772899, 0, 49, 1, 2},                          // U+1F600, a surrogate pair in UTF-16
		{"Z/CfmIB4", 58028462, 0, 12, 2, 2},                         // "g😀x"
		{"enp6enp6enp6eg==", -1580979136, 0, 36, 1, 2},              // "zzzzzzzzzz"
		{"R1JPVVBfQQ==", 1011412577, 0, 27, 2, 0},                   // "GROUP_A"
		{"5Lit5paH57uE", 20070666, 0, 16, 0, 0},                     // "中文组"
	} {
		b, err := base64.StdEncoding.DecodeString(tc.groupB64)
		if err != nil {
			t.Fatal(err)
		}
		group := string(b)
		if got := javaStringHashCode(group); got != tc.hash {
			t.Errorf("hashCode(%q) = %d, Java says %d", group, got, tc.hash)
		}
		for _, c := range []struct{ n, want int }{{1, tc.n1}, {50, tc.n50}, {3, tc.n3}, {7, tc.n7}} {
			if got := PartitionFor(group, c.n); got != c.want {
				t.Errorf("PartitionFor(%q, %d) = %d, Kafka says %d", group, c.n, got, c.want)
			}
		}
	}
}

func TestPartitionForRejectsNoPartitions(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("PartitionFor(g, 0) did not panic")
		}
	}()
	PartitionFor("g", 0)
}
