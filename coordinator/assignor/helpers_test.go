package assignor

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The fixed topic ids of Kafka's UniformHomogeneousAssignmentBuilderTest and
// UniformHeterogeneousAssignmentBuilderTest. The homogeneous expectations
// depend on them through Uuid.hashCode (HashSet iteration order).
var (
	topic1 = mustTopic("T1-A4s3VTwiI5CTbEp6POw")
	topic2 = mustTopic("T2-B4s3VTwiI5YHbPp6YUe")
	topic3 = mustTopic("T3-CU8fVTLCz5YMkLoDQsa")
	topic4 = mustTopic("T4-Tw9fVTLCz5HbPp6YQsa")
)

func mustTopic(s string) TopicID {
	t, err := ParseTopicID(s)
	if err != nil {
		panic(err)
	}
	return t
}

// tp is Kafka's mkTopicAssignment: partitions go into `new HashSet<>(list)`.
func tp(topic TopicID, partitions ...int32) TopicPartitions {
	return TopicPartitions{Topic: topic, Partitions: JavaIntSetOrder(partitions, DefaultJavaVersion)}
}

// mkAssignment is Kafka's AssignmentTestUtil.mkAssignment: a default HashMap
// filled in argument order.
func mkAssignment(tps ...TopicPartitions) []TopicPartitions {
	return JavaAssignmentOrder(tps, DefaultJavaVersion)
}

// mkOrderedAssignment is Kafka's mkOrderedAssignment: a LinkedHashMap, so the
// topic order is the argument order.
func mkOrderedAssignment(tps ...TopicPartitions) []TopicPartitions { return tps }

// ids is a topic list in the order given (Set.of order in the Java tests is
// unspecified; no ported expectation depends on it).
func ids(ts ...TopicID) []TopicID { return ts }

// exp builds an expected member assignment; partitions are sorted as in output.
func exp(tps ...TopicPartitions) MemberAssignment {
	out := MemberAssignment{}
	for _, t := range tps {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		out = append(out, TopicPartitions{Topic: t.Topic, Partitions: ps})
	}
	return out
}

// asMap is a member assignment as topic → partitions, topics without
// partitions left out.
func asMap(a MemberAssignment) map[TopicID][]int32 {
	out := map[TopicID][]int32{}
	for _, tp := range a {
		if len(tp.Partitions) > 0 {
			out[tp.Topic] = tp.Partitions
		}
	}
	return out
}

func member(id string, topics []TopicID, assignment ...TopicPartitions) MemberSpec {
	return MemberSpec{ID: id, Topics: topics, Assignment: assignment}
}

func withAssignment(m MemberSpec, a []TopicPartitions) MemberSpec {
	m.Assignment = a
	return m
}

func static(m MemberSpec, instance string) MemberSpec {
	m.InstanceID = instance
	return m
}

// treeMap orders members as Kafka's tests do with a TreeMap: by member id.
func treeMap(ms ...MemberSpec) []MemberSpec {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b MemberSpec) int { return javaStringCompare(a.ID, b.ID) })
	return out
}

// hashMap orders members as a `new HashMap<>()` filled in argument order.
func hashMap(ms ...MemberSpec) []MemberSpec {
	byID := map[string]MemberSpec{}
	var order []string
	for _, m := range ms {
		byID[m.ID] = m
		order = append(order, m.ID)
	}
	var out []MemberSpec
	for _, id := range JavaHashMapOrder(order) {
		out = append(out, byID[id])
	}
	return out
}

func mustAssign(t testing.TB, a Assignor, spec GroupSpec, topics SubscribedTopicDescriber) GroupAssignment {
	t.Helper()
	got, err := a.Assign(spec, topics)
	if err != nil {
		t.Fatalf("%s.Assign: %v", a.Name(), err)
	}
	return got
}

func mustUniform(t testing.TB, opts ...Opt) *Uniform {
	t.Helper()
	u, err := NewUniform(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustRange(t testing.TB) *Range {
	t.Helper()
	r, err := NewRange()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// assertAssignment is Kafka's assertAssignment: same members, same partitions.
func assertAssignment(t testing.TB, want map[string]MemberAssignment, got GroupAssignment) {
	t.Helper()
	if !equalAssignments(want, got.Members) {
		t.Fatalf("assignment mismatch\nwant: %s\ngot:  %s", render(want), render(got.Members))
	}
}

func equalAssignments(a, b map[string]MemberAssignment) bool {
	if len(a) != len(b) {
		return false
	}
	for id, ma := range a {
		mb, ok := b[id]
		if !ok || !equalMember(ma, mb) {
			return false
		}
	}
	return true
}

func equalMember(a, b MemberAssignment) bool {
	return maps.EqualFunc(asMap(a), asMap(b), slices.Equal[[]int32])
}

var topicNames = map[TopicID]string{topic1: "T1", topic2: "T2", topic3: "T3", topic4: "T4"}

// render prints an assignment canonically: members, topics and partitions sorted.
func render(a map[string]MemberAssignment) string {
	var sb strings.Builder
	for _, id := range slices.Sorted(maps.Keys(a)) {
		fmt.Fprintf(&sb, "%s:{", id)
		var parts []string
		for _, tp := range a[id] {
			t, ps := tp.Topic, tp.Partitions
			name, ok := topicNames[t]
			if !ok {
				name = t.String()
			}
			parts = append(parts, fmt.Sprintf("%s%v", name, ps))
		}
		sort.Strings(parts)
		sb.WriteString(strings.Join(parts, " "))
		sb.WriteString("} ")
	}
	return sb.String()
}

// toSpecAssignment feeds an output back as a previous target assignment, in
// the order Kafka would have after loading it from records in ascending order.
func toSpecAssignment(a MemberAssignment) []TopicPartitions {
	m := asMap(a)
	topics := slices.SortedFunc(maps.Keys(m), compareTopicIDs)
	var tps []TopicPartitions
	for _, t := range topics {
		tps = append(tps, TopicPartitions{Topic: t, Partitions: m[t]})
	}
	return JavaAssignmentOrder(tps, DefaultJavaVersion)
}

// withPrevious returns the spec with every member's previous target replaced
// by its entry in prev.
func withPrevious(spec GroupSpec, prev GroupAssignment) GroupSpec {
	out := spec
	out.Members = slices.Clone(spec.Members)
	for i := range out.Members {
		out.Members[i].Assignment = toSpecAssignment(prev.Members[out.Members[i].ID])
	}
	out.InvertedTargetAssignment = nil
	return out
}
