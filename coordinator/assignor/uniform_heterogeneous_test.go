package assignor

import (
	"errors"
	"testing"
)

// Ported from UniformHeterogeneousAssignmentBuilderTest (4.4 branch; same
// scenarios and expectations on 4.0–4.2). The builder is deterministic given
// the member order (TreeMap in Kafka's tests: A, B, C).
func TestUniformHeterogeneousKafkaScenarios(t *testing.T) {
	const A, B, C = "A", "B", "C"
	tests := []struct {
		name    string
		topics  PartitionCounts
		members []MemberSpec
		want    map[string]MemberAssignment
	}{
		{
			name:    "testTwoMembersNoTopicSubscription",
			topics:  PartitionCounts{topic1: 3},
			members: treeMap(member(A, nil), member(B, nil)),
			want:    map[string]MemberAssignment{},
		},
		{
			name:    "testFirstAssignmentTwoMembersTwoTopics",
			topics:  PartitionCounts{topic1: 3, topic3: 6},
			members: treeMap(member(A, ids(topic1, topic3)), member(B, ids(topic3))),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1, 2), tp(topic3, 4)),
				B: exp(tp(topic3, 0, 1, 2, 3, 5)),
			},
		},
		{
			name:    "testFirstAssignmentNumMembersGreaterThanTotalNumPartitions",
			topics:  PartitionCounts{topic1: 2, topic3: 1},
			members: treeMap(member(A, ids(topic3)), member(B, ids(topic3)), member(C, ids(topic1))),
			want: map[string]MemberAssignment{
				A: exp(tp(topic3, 0)),
				B: {},
				C: exp(tp(topic1, 0, 1)),
			},
		},
		{
			name:   "testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment",
			topics: PartitionCounts{topic1: 6, topic2: 4, topic3: 4},
			members: treeMap(
				member(A, ids(topic1), mkAssignment(tp(topic1, 0, 1, 2))...),
				member(B, ids(topic1, topic2), mkAssignment(tp(topic1, 3), tp(topic2, 0))...),
				member(C, ids(topic1, topic2, topic3), mkAssignment(tp(topic1, 4, 5), tp(topic2, 1, 2, 3), tp(topic3, 0, 1, 2, 3))...),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1, 2, 5)),
				B: exp(tp(topic1, 3), tp(topic2, 0, 1, 2, 3)),
				C: exp(tp(topic1, 4), tp(topic3, 0, 1, 2, 3)),
			},
		},
		{
			name:   "testReassignmentWhenPartitionsAreAddedForTwoMembers",
			topics: PartitionCounts{topic1: 6, topic2: 5, topic3: 3, topic4: 3},
			members: treeMap(
				member(A, ids(topic1, topic3), mkAssignment(tp(topic1, 0, 1, 2, 3), tp(topic3, 0, 1))...),
				member(B, ids(topic1, topic2, topic3, topic4), mkAssignment(tp(topic2, 0, 1, 2), tp(topic4, 0, 1, 2))...),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1, 2, 3, 4, 5), tp(topic3, 0, 1, 2)),
				B: exp(tp(topic2, 0, 1, 2, 3, 4), tp(topic4, 0, 1, 2)),
			},
		},
		{
			name:   "testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics",
			topics: PartitionCounts{topic1: 6, topic2: 7},
			members: treeMap(
				member(A, ids(topic1), mkAssignment(tp(topic1, 0, 2), tp(topic2, 0))...),
				member(B, ids(topic1, topic2), mkAssignment(tp(topic1, 1), tp(topic2, 1, 2))...),
				member(C, ids(topic1, topic2)),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 2, 3, 4, 5)),
				B: exp(tp(topic1, 1), tp(topic2, 1, 2, 6)),
				C: exp(tp(topic2, 0, 3, 4, 5)),
			},
		},
		{
			name:   "testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics",
			topics: PartitionCounts{topic1: 3, topic2: 8, topic3: 3},
			members: treeMap(
				member(A, ids(topic1, topic3), mkAssignment(tp(topic1, 0, 1, 2), tp(topic3, 0, 1))...),
				member(B, ids(topic2), mkAssignment(tp(topic2, 3, 4, 5, 6))...),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1, 2), tp(topic3, 0, 1, 2)),
				B: exp(tp(topic2, 0, 1, 2, 3, 4, 5, 6, 7)),
			},
		},
		{
			name:   "testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics",
			topics: PartitionCounts{topic1: 3, topic2: 5},
			members: treeMap(
				member(A, ids(topic1), mkAssignment(tp(topic1, 0, 2), tp(topic2, 1, 3))...),
				member(B, ids(topic1, topic2), mkAssignment(tp(topic1, 1), tp(topic2, 0, 2, 4))...),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1, 2)),
				B: exp(tp(topic2, 0, 1, 2, 3, 4)),
			},
		},
		{
			name:   "testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions",
			topics: PartitionCounts{topic1: 2, topic2: 2, topic3: 2},
			members: treeMap(
				member(A, ids(topic1, topic2, topic3), mkAssignment(tp(topic1, 0, 1), tp(topic2, 0, 1), tp(topic3, 0, 1))...),
				member(B, ids(topic1, topic2, topic3)),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic2, 0), tp(topic3, 0, 1)),
				B: exp(tp(topic1, 0, 1), tp(topic2, 1)),
			},
		},
		{
			name:    "testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions",
			topics:  PartitionCounts{topic1: 3},
			members: treeMap(member(A, ids(topic1)), member(B, nil)),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1, 2)),
				B: {},
			},
		},
	}
	u := mustUniform(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := GroupSpec{Subscription: Heterogeneous, Members: tc.members}
			got := mustAssign(t, u, spec, tc.topics)
			assertAssignment(t, tc.want, got)
			if err := checkValid(spec, tc.topics, got); err != nil {
				t.Fatal(err)
			}
			if err := checkTopicBalance(spec, got); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A partition outside the topic in a previous assignment makes Java throw
// (ArrayIndexOutOfBoundsException); here it is an ErrInvalidSpec.
func TestUniformHeterogeneousStalePartition(t *testing.T) {
	spec := GroupSpec{Subscription: Heterogeneous, Members: []MemberSpec{
		member("A", ids(topic1), mkAssignment(tp(topic1, 7))...),
	}}
	_, err := mustUniform(t).Assign(spec, PartitionCounts{topic1: 3})
	if !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("want ErrInvalidSpec, got %v", err)
	}
}
