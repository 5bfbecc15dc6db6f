package assignor

import (
	"bufio"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Differential vectors: testdata/kafka-<version>.txt hold random cases run
// through Kafka's own UniformAssignor and RangeAssignor (the
// kafka-group-coordinator jar of that release) by testdata/kafkadiff/Driver.java.
// TestKafkaVectors replays them here and wants the exact same target
// assignment, member by member. Inputs carry explicit orders (memberIds(),
// subscription, previous target topics and partitions), which the driver keeps
// with LinkedHashMap/LinkedHashSet, so the vectors pin down the order-dependent
// choices too. To regenerate, see testdata/kafkadiff/regen.sh.

var writeVectorInputs = flag.String("assignor.write-vector-inputs", "", "write the differential vector inputs to this file and skip the replay")

// vectorCase is one case of a vector file.
type vectorCase struct {
	name      string
	assignor  string
	spec      GroupSpec
	topics    PartitionCounts
	wantErr   string
	want      map[string]MemberAssignment
	inputText []string
}

func formatTopics(ts []TopicID) string {
	if len(ts) == 0 {
		return "-"
	}
	var s []string
	for _, t := range ts {
		s = append(s, t.String())
	}
	return strings.Join(s, ",")
}

func formatInts(ps []int32) string {
	if len(ps) == 0 {
		return "-"
	}
	var s []string
	for _, p := range ps {
		s = append(s, strconv.Itoa(int(p)))
	}
	return strings.Join(s, ",")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeCase(w *bufio.Writer, name, assignor string, spec GroupSpec, topics PartitionCounts) {
	fmt.Fprintf(w, "case %s %s %s\n", name, assignor, spec.Subscription)
	for _, t := range slices.SortedFunc(maps.Keys(topics), compareTopicIDs) {
		fmt.Fprintf(w, "topic %s %d\n", t, topics[t])
	}
	for _, m := range spec.Members {
		fmt.Fprintf(w, "member %s %s %s %s\n", m.ID, dash(m.InstanceID), dash(m.RackID), formatTopics(m.Topics))
	}
	for _, m := range spec.Members {
		for _, tp := range m.Assignment {
			fmt.Fprintf(w, "owned %s %s %s\n", m.ID, tp.Topic, formatInts(tp.Partitions))
		}
	}
	fmt.Fprintln(w, "end")
}

// TestWriteKafkaVectorInputs writes the inputs when -assignor.write-vector-inputs is set.
func TestWriteKafkaVectorInputs(t *testing.T) {
	if *writeVectorInputs == "" {
		t.Skip("set -assignor.write-vector-inputs=FILE to write differential vector inputs")
	}
	f, err := os.Create(*writeVectorInputs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "# groupquake coordinator/assignor differential vectors; inputs from TestWriteKafkaVectorInputs")
	n := 0
	// Evolving groups: each round's Go output, in a random iteration order,
	// is the next round's previous target.
	for seed := range uint64(30) {
		for _, name := range []string{UniformName, RangeName} {
			a, _ := New(name)
			for _, st := range []SubscriptionType{Homogeneous, Heterogeneous} {
				g := newGroupGen(seed, 0xC0FFEE)
				spec := g.initial(st)
				for round := range 5 {
					if seed%7 == 3 && round == 0 {
						unicodeInstances(g.rng, spec.Members)
					}
					n++
					writeCase(w, fmt.Sprintf("evolve-%d-%s-%s-%d", seed, name, st, round), name, spec, g.topics)
					got, err := a.Assign(spec, g.topics)
					if err != nil {
						t.Fatal(err)
					}
					spec = g.evolve(spec, got)
				}
			}
		}
	}
	// Wide homogeneous subscriptions (12 and 24 topics): the HashSet copy of
	// the subscription iterates differently on JDK 17 and JDK 19+.
	for seed := range uint64(12) {
		g := &groupGen{rng: rand.New(rand.NewPCG(seed, 0x51DE)), topics: PartitionCounts{}}
		for range 12 * (1 + int(seed%2)) {
			g.addTopic()
			g.topics[g.ids[len(g.ids)-1]] = g.rng.IntN(4)
		}
		spec := GroupSpec{Subscription: Homogeneous}
		for range 2 + g.rng.IntN(5) {
			spec.Members = append(spec.Members, g.newMember(g.ids))
		}
		a, _ := New(UniformName)
		for round := range 3 {
			n++
			writeCase(w, fmt.Sprintf("wide-%d-%d", seed, round), UniformName, spec, g.topics)
			got, err := a.Assign(spec, g.topics)
			if err != nil {
				t.Fatal(err)
			}
			spec = g.evolve(spec, got)
			if len(spec.Members[0].Topics) != len(g.ids) {
				break // a subscription change: no longer wide
			}
		}
	}
	// Arbitrary previous targets: overlapping, stale, out of quota.
	for seed := range uint64(20) {
		for _, name := range []string{UniformName, RangeName} {
			for _, st := range []SubscriptionType{Homogeneous, Heterogeneous} {
				g := newGroupGen(seed, 0xBAD)
				spec := g.initial(st)
				for i := range spec.Members {
					for _, topic := range g.subset() {
						var ps []int32
						for p := range int32(g.topics[topic] + 2) {
							if g.rng.IntN(3) == 0 {
								ps = append(ps, p)
							}
						}
						g.rng.Shuffle(len(ps), func(a, b int) { ps[a], ps[b] = ps[b], ps[a] })
						if len(ps) > 0 {
							spec.Members[i].Assignment = append(spec.Members[i].Assignment, TopicPartitions{topic, ps})
						}
					}
				}
				n++
				writeCase(w, fmt.Sprintf("arbitrary-%d-%s-%s", seed, name, st), name, spec, g.topics)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d cases to %s", n, *writeVectorInputs)
}

// unicodeInstances gives some members instance ids whose Java and Go string
// orders differ, to pin range's String.compareTo order.
func unicodeInstances(rng *rand.Rand, ms []MemberSpec) {
	names := []string{"i-\U0001F600", "i-\uFF21", "i-z", "i-\u00e9"}
	for i := range ms {
		if rng.IntN(2) == 0 {
			ms[i].InstanceID = names[i%len(names)] + strconv.Itoa(i)
		}
	}
}

func parseVectorFile(t *testing.T, path string) (versions []string, javaVersion int, cases []vectorCase) {
	t.Helper()
	javaVersion = DefaultJavaVersion
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c *vectorCase
	parseInts := func(s string) []int32 {
		if s == "-" {
			return nil
		}
		var out []int32
		for _, p := range strings.Split(s, ",") {
			v, err := strconv.Atoi(p)
			if err != nil {
				t.Fatalf("%s: bad partition %q", path, p)
			}
			out = append(out, int32(v))
		}
		return out
	}
	parseTopics := func(s string) []TopicID {
		if s == "-" {
			return nil
		}
		var out []TopicID
		for _, x := range strings.Split(s, ",") {
			out = append(out, mustTopic(x))
		}
		return out
	}
	undash := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	for lineNo, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "#" {
			if len(f) >= 3 && f[1] == "kafka" {
				versions = append([]string{f[2]}, versions...)
			}
			if len(f) >= 3 && f[1] == "same-as" {
				versions = append(versions, f[2:]...)
			}
			if len(f) >= 3 && f[1] == "java" {
				javaVersion, _ = strconv.Atoi(f[2])
			}
			continue
		}
		switch f[0] {
		case "case":
			st := Homogeneous
			if f[3] == "Heterogeneous" {
				st = Heterogeneous
			}
			c = &vectorCase{name: f[1], assignor: f[2], spec: GroupSpec{Subscription: st}, topics: PartitionCounts{}}
		case "topic":
			n, _ := strconv.Atoi(f[2])
			c.topics[mustTopic(f[1])] = n
		case "member":
			c.spec.Members = append(c.spec.Members, MemberSpec{ID: f[1], InstanceID: undash(f[2]), RackID: undash(f[3]), Topics: parseTopics(f[4])})
		case "owned":
			for i := range c.spec.Members {
				if c.spec.Members[i].ID == f[1] {
					c.spec.Members[i].Assignment = append(c.spec.Members[i].Assignment, TopicPartitions{mustTopic(f[2]), parseInts(f[3])})
				}
			}
		case "result":
			if f[1] == "error" {
				c.wantErr = f[2]
			} else {
				c.want = map[string]MemberAssignment{}
			}
		case "outmember":
			c.want[f[1]] = MemberAssignment{}
		case "out":
			c.want[f[1]] = append(c.want[f[1]], TopicPartitions{Topic: mustTopic(f[2]), Partitions: parseInts(f[3])})
		case "end":
			cases = append(cases, *c)
			c = nil
		default:
			t.Fatalf("%s:%d: unknown line %q", path, lineNo+1, line)
		}
		if c != nil {
			c.inputText = append(c.inputText, line)
		}
	}
	return versions, javaVersion, cases
}

func TestKafkaVectors(t *testing.T) {
	files, err := filepath.Glob("testdata/kafka-*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/kafka-*.txt vector files")
	}
	for _, path := range files {
		versions, javaVersion, cases := parseVectorFile(t, path)
		if len(versions) == 0 {
			t.Fatalf("%s has no '# kafka VERSION' header", path)
		}
		// "# same-as" lists releases whose jars gave byte-identical output.
		for _, version := range versions {
			t.Run(fmt.Sprintf("%s/java%d", version, javaVersion), func(t *testing.T) {
				if len(cases) == 0 {
					t.Fatalf("%s has no cases", path)
				}
				for _, c := range cases {
					a, err := New(c.assignor, KafkaVersion(version), JavaVersion(javaVersion))
					if err != nil {
						t.Fatal(err)
					}
					got, err := a.Assign(c.spec, c.topics)
					switch {
					case c.wantErr != "" && err == nil:
						t.Errorf("%s: Kafka failed with %s, we returned %s\n%s", c.name, c.wantErr, render(got.Members), strings.Join(c.inputText, "\n"))
					case c.wantErr == "" && err != nil:
						t.Errorf("%s: Kafka succeeded with %s, we failed: %v\n%s", c.name, render(c.want), err, strings.Join(c.inputText, "\n"))
					case c.wantErr == "" && !equalAssignments(c.want, got.Members):
						t.Errorf("%s: differs from Kafka\nkafka: %s\nours:  %s\n%s", c.name, render(c.want), render(got.Members), strings.Join(c.inputText, "\n"))
					}
				}
				t.Logf("%d cases from %s", len(cases), path)
			})
		}
	}
}
