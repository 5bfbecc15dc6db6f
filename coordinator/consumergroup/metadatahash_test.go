package consumergroup

import (
	"bufio"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
)

// hashCase is one case of testdata/metadatahash/kafka.txt: a metadata
// image and the hashes Kafka's jar computed over it.
type hashCase struct {
	name    string
	racks   map[int]string // broker id → rack; no entry: no rack
	topics  Topics
	reps    map[string]map[int][]int
	results [][3]string // kind, topics, value
}

// PartitionRacks is KRaftCoordinatorMetadataImage.partitionRacks over the
// case's brokers.
func (c *hashCase) PartitionRacks(topic string, p int) []string {
	var out []string
	for _, b := range c.reps[topic][p] {
		if r, ok := c.racks[b]; ok {
			out = append(out, r)
		}
	}
	return out
}

type rackedTopics struct {
	Topics
	*hashCase
}

// TestMetadataHashKafkaGolden checks TopicHash, GroupHash and metadataHash
// against the values Kafka's own Utils.computeTopicHash and
// computeGroupHash (kafka-group-coordinator 4.1.0–4.4.0 with hash4j)
// printed for the same metadata images: testdata/metadatahash/regen.sh.
func TestMetadataHashKafkaGolden(t *testing.T) {
	cases := readHashCases(t, "testdata/metadatahash/kafka.txt")
	n := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md := rackedTopics{c.topics, c}
			for _, r := range c.results {
				want, err := strconv.ParseInt(r[2], 10, 64)
				if err != nil {
					t.Fatalf("%v: %v", r, err)
				}
				var got int64
				switch r[0] {
				case "topic-hash":
					id, parts, ok := c.topics.TopicByName(r[1])
					if !ok {
						t.Fatalf("topic-hash of unknown topic %q", r[1])
					}
					got = TopicHash(id, r[1], parts, func(p int) []string { return c.PartitionRacks(r[1], p) })
				case "group-hash":
					got = metadataHash(md, strings.Split(r[1], ","))
				}
				n++
				if got != want {
					t.Errorf("%s %s = %d, Kafka computed %d", r[0], r[1], got, want)
				}
			}
		})
	}
	if n < 20 {
		t.Fatalf("only %d golden values in kafka.txt: the file is truncated", n)
	}
	t.Logf("%d golden values from Kafka's jar matched", n)
}

// TestMetadataHashInputs checks that kafka.txt was generated from the
// current inputs.txt: it is inputs.txt with result lines added.
func TestMetadataHashInputs(t *testing.T) {
	in, err := os.ReadFile("testdata/metadatahash/inputs.txt")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile("testdata/metadatahash/kafka.txt")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for i, l := range strings.Split(string(out), "\n") {
		if i < 2 || strings.HasPrefix(l, "topic-hash ") || strings.HasPrefix(l, "group-hash ") {
			continue // the header and Kafka's results
		}
		kept = append(kept, l)
	}
	if got := strings.Join(kept, "\n"); got != string(in) {
		t.Fatal("kafka.txt was not generated from the current inputs.txt: run testdata/metadatahash/regen.sh")
	}
}

// TestMetadataHashNoRacksIsNilRacks: a host without PartitionRacks hashes
// as brokers without broker.rack do.
func TestMetadataHashNoRacksIsNilRacks(t *testing.T) {
	ts := Topics{{Name: "t", ID: [16]byte{1, 2, 3}, Partitions: 6}}
	plain := metadataHash(ts, []string{"t"})
	empty := metadataHash(rackedTopics{ts, &hashCase{}}, []string{"t"})
	if plain != empty || plain == 0 {
		t.Fatalf("no racks %d, empty racks %d", plain, empty)
	}
	if got := metadataHash(ts, []string{"gone"}); got != 0 {
		t.Fatalf("hash of no existing topic = %d, want 0", got)
	}
}

func readHashCases(t *testing.T, path string) []*hashCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []*hashCase
	var c *hashCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fs := strings.Fields(l)
		bad := func() { t.Fatalf("%s:%d: cannot read %q", path, line, l) }
		if fs[0] != "case" && c == nil {
			bad()
		}
		switch fs[0] {
		case "case":
			c = &hashCase{name: fs[1], racks: map[int]string{}, reps: map[string]map[int][]int{}}
			cases = append(cases, c)
		case "broker":
			if fs[2] != "-" {
				c.racks[atoi(t, fs[1])] = fs[2]
			}
		case "topic":
			raw, err := hex.DecodeString(fs[2])
			if err != nil || len(raw) != 16 {
				bad()
			}
			tp := Topic{Name: fs[1], Partitions: atoi(t, fs[3])}
			copy(tp.ID[:], raw)
			c.topics = append(c.topics, tp)
			c.reps[fs[1]] = map[int][]int{}
		case "replicas":
			var bs []int
			for _, b := range strings.Split(fs[3], ",") {
				bs = append(bs, atoi(t, b))
			}
			c.reps[fs[1]][atoi(t, fs[2])] = bs
		case "group":
		case "topic-hash", "group-hash":
			c.results = append(c.results, [3]string{fs[0], fs[1], fs[2]})
		case "end":
			c = nil
		default:
			bad()
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
