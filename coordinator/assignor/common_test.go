package assignor

import (
	"errors"
	"testing"
)

// reassignmentStickiness is CommonAssignorTests.testReassignmentStickiness
// (4.3+ branches): after a first assignment, feeding it back with the members
// in each of the six orders gives the same assignment.
func reassignmentStickiness(t *testing.T, a Assignor, st SubscriptionType) {
	t.Helper()
	topics := PartitionCounts{topic1: 2, topic2: 5, topic3: 7}
	all := ids(topic1, topic2, topic3)
	base := map[string]MemberSpec{"A": member("A", all), "B": member("B", all), "C": member("C", all)}
	spec := GroupSpec{Subscription: st, Members: hashMap(base["A"], base["B"], base["C"])}
	first := mustAssign(t, a, spec, topics)
	if err := checkValid(spec, topics, first); err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]string{
		{"A", "B", "C"}, {"A", "C", "B"}, {"B", "A", "C"},
		{"B", "C", "A"}, {"C", "A", "B"}, {"C", "B", "A"},
	} {
		var ms []MemberSpec
		for _, id := range order {
			m := base[id]
			m.Assignment = toSpecAssignment(first.Members[id])
			ms = append(ms, m)
		}
		second := mustAssign(t, a, GroupSpec{Subscription: st, Members: ms}, topics)
		if !equalAssignments(first.Members, second.Members) {
			t.Fatalf("order %v changed the assignment:\nfirst:  %s\nsecond: %s", order, render(first.Members), render(second.Members))
		}
	}
}

// assignmentReuse is CommonAssignorTests.testAssignmentReuse. Java asserts the
// very same map object comes back; the Go analogue is an equal assignment.
func assignmentReuse(t *testing.T, a Assignor, st SubscriptionType) {
	t.Helper()
	topics := PartitionCounts{topic1: 2, topic2: 5, topic3: 7}
	all := ids(topic1, topic2, topic3)
	spec := GroupSpec{Subscription: st, Members: hashMap(
		MemberSpec{ID: "A", RackID: "rack1", Topics: all},
		MemberSpec{ID: "B", RackID: "rack2", Topics: all},
		MemberSpec{ID: "C", RackID: "rack3", Topics: all},
	)}
	first := mustAssign(t, a, spec, topics)
	second := mustAssign(t, a, withPrevious(spec, first), topics)
	if !equalAssignments(first.Members, second.Members) {
		t.Fatalf("unchanged group got a new assignment:\nfirst:  %s\nsecond: %s", render(first.Members), render(second.Members))
	}
}

// TestSubscribedToNonexistentTopic: a member subscribed to a topic the
// metadata does not have fails the assignment with ErrPartitionAssignor
// (RangeAssignorTest.testOneMemberSubscribedToNonExistentTopic,
// UniformHomogeneousAssignmentBuilderTest.testOneMemberSubscribedToNonexistentTopic,
// UniformHeterogeneousAssignmentBuilderTest.testTwoMembersSubscribedToNonexistentTopics).
func TestSubscribedToNonexistentTopic(t *testing.T) {
	oneMember := func() GroupSpec {
		return GroupSpec{Subscription: Homogeneous, Members: []MemberSpec{member("A", ids(topic2))}}
	}
	for _, tc := range []struct {
		name string
		a    Assignor
		spec GroupSpec
	}{
		{"range", mustRange(t), oneMember()},
		{"uniform homogeneous", mustUniform(t), oneMember()},
		{"uniform heterogeneous", mustUniform(t), GroupSpec{Subscription: Heterogeneous, Members: treeMap(member("A", ids(topic3)), member("B", ids(topic2)))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.a.Assign(tc.spec, PartitionCounts{topic1: 3})
			if !errors.Is(err, ErrPartitionAssignor) {
				t.Fatalf("want ErrPartitionAssignor, got %v", err)
			}
		})
	}
}

// TestCommonAssignorTests runs CommonAssignorTests (4.3+ branches) as
// Kafka's assignor tests do, for both subscription types:
// testReassignmentStickiness for the range assignor (RangeAssignorTest) and
// the uniform one (UniformHomogeneousAssignmentBuilderTest,
// UniformHeterogeneousAssignmentBuilderTest), testAssignmentReuse for the
// uniform one.
func TestCommonAssignorTests(t *testing.T) {
	for _, st := range []SubscriptionType{Homogeneous, Heterogeneous} {
		t.Run(st.String(), func(t *testing.T) {
			t.Run("RangeReassignmentStickiness", func(t *testing.T) { reassignmentStickiness(t, mustRange(t), st) })
			t.Run("UniformReassignmentStickiness", func(t *testing.T) { reassignmentStickiness(t, mustUniform(t), st) })
			t.Run("UniformAssignmentReuse", func(t *testing.T) { assignmentReuse(t, mustUniform(t), st) })
		})
	}
}
