package assignor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Ported from UniformHomogeneousAssignmentBuilderTest (4.4 branch; the same
// class is OptimizedUniformAssignmentBuilderTest on 4.0–4.2). want is the 4.0.1+
// expectation; want400 is the 4.0.0 one, from the test file as it was before
// KAFKA-18688 (apache/kafka#19677), where it differs.
//
// Several expectations here depend on Java iteration orders: the HashSet copy
// of the subscription (through Uuid.hashCode of these fixed topic ids) and the
// LinkedHashMap order of mkOrderedAssignment.
func TestUniformHomogeneousKafkaScenarios(t *testing.T) {
	const A, B, C = "A", "B", "C"
	t13 := ids(topic1, topic3)
	t12 := ids(topic1, topic2)
	tests := []struct {
		name    string
		topics  PartitionCounts
		members []MemberSpec
		want    map[string]MemberAssignment
		want400 map[string]MemberAssignment
	}{
		{
			name:    "testOneMemberNoTopicSubscription",
			topics:  PartitionCounts{topic1: 3},
			members: []MemberSpec{member(A, nil)},
			want:    map[string]MemberAssignment{},
		},
		{
			name:    "testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks",
			topics:  PartitionCounts{topic1: 3, topic3: 2},
			members: treeMap(member(A, t13), member(B, t13)),
			want: map[string]MemberAssignment{
				A: exp(tp(topic3, 0, 1)),
				B: exp(tp(topic1, 0, 1, 2)),
			},
			want400: map[string]MemberAssignment{
				A: exp(tp(topic1, 0), tp(topic3, 0, 1)),
				B: exp(tp(topic1, 1, 2)),
			},
		},
		{
			name:    "testFirstAssignmentNumMembersGreaterThanTotalNumPartitions",
			topics:  PartitionCounts{topic3: 2},
			members: treeMap(member(A, ids(topic3)), member(B, ids(topic3)), member(C, ids(topic3))),
			want: map[string]MemberAssignment{
				A: {},
				B: exp(tp(topic3, 0)),
				C: exp(tp(topic3, 1)),
			},
			want400: map[string]MemberAssignment{
				A: exp(tp(topic3, 0)),
				B: exp(tp(topic3, 1)),
				C: {},
			},
		},
		{
			name:   "testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment",
			topics: PartitionCounts{topic1: 3, topic2: 3},
			members: treeMap(
				member(A, t12, mkOrderedAssignment(tp(topic1, 0, 1), tp(topic2, 0, 1))...),
				member(B, t12, mkOrderedAssignment(tp(topic1, 2), tp(topic2, 2))...),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1), tp(topic2, 0)),
				B: exp(tp(topic1, 2), tp(topic2, 1, 2)),
			},
		},
		{
			name:   "testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics",
			topics: PartitionCounts{topic1: 6, topic2: 5},
			members: treeMap(
				member(A, t12, mkOrderedAssignment(tp(topic1, 0, 2), tp(topic2, 0))...),
				member(B, t12, mkOrderedAssignment(tp(topic1, 1), tp(topic2, 1, 2))...),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 2), tp(topic2, 0, 3, 4)),
				B: exp(tp(topic1, 1, 3, 4, 5), tp(topic2, 1, 2)),
			},
			want400: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 2, 3), tp(topic2, 0, 3, 4)),
				B: exp(tp(topic1, 1, 4, 5), tp(topic2, 1, 2)),
			},
		},
		{
			name:   "testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics",
			topics: PartitionCounts{topic1: 3, topic2: 3},
			members: treeMap(
				member(A, t12, mkOrderedAssignment(tp(topic1, 0, 2), tp(topic2, 0))...),
				member(B, t12, mkOrderedAssignment(tp(topic1, 1), tp(topic2, 1, 2))...),
				member(C, t12),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 2)),
				B: exp(tp(topic1, 1), tp(topic2, 1)),
				C: exp(tp(topic2, 0, 2)),
			},
		},
		{
			name:   "testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics",
			topics: PartitionCounts{topic1: 3, topic2: 3},
			members: treeMap(
				member(A, t12, mkAssignment(tp(topic1, 0), tp(topic2, 0))...),
				member(B, t12, mkAssignment(tp(topic1, 1), tp(topic2, 1))...),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0), tp(topic2, 0, 2)),
				B: exp(tp(topic1, 1, 2), tp(topic2, 1)),
			},
		},
		{
			name:   "testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics",
			topics: PartitionCounts{topic1: 2, topic2: 2},
			members: treeMap(
				member(A, ids(topic2), mkAssignment(tp(topic1, 0), tp(topic2, 0))...),
				member(B, ids(topic2), mkAssignment(tp(topic1, 1), tp(topic2, 1))...),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic2, 0)),
				B: exp(tp(topic2, 1)),
			},
		},
		{
			// 4.0 and 4.1 branches only (4.3 replaced it by the shared
			// testReassignmentStickiness); it is the KAFKA-18688 regression.
			name:   "testReassignmentStickinessWhenAlreadyBalanced",
			topics: PartitionCounts{topic1: 5},
			members: treeMap(
				member(A, ids(topic1), mkAssignment(tp(topic1, 0, 3))...),
				member(B, ids(topic1, topic2), mkAssignment(tp(topic1, 1))...),
				member(C, ids(topic1, topic2), mkAssignment(tp(topic1, 2, 4))...),
			),
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 3)),
				B: exp(tp(topic1, 1)),
				C: exp(tp(topic1, 2, 4)),
			},
			// Derived, not from a Kafka test: 4.0.0 reserves the extra slots for
			// A and B, so C gives up partition 4 to B.
			want400: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 3)),
				B: exp(tp(topic1, 1, 4)),
				C: exp(tp(topic1, 2)),
			},
		},
	}
	for _, version := range []string{"4.0.0", "4.0.1", "4.1.0", "4.2.0", "4.3.0", "4.4.0"} {
		u := mustUniform(t, KafkaVersion(version))
		for _, tc := range tests {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				want := tc.want
				if version == "4.0.0" && tc.want400 != nil {
					want = tc.want400
				}
				spec := GroupSpec{Subscription: Homogeneous, Members: tc.members}
				got := mustAssign(t, u, spec, tc.topics)
				assertAssignment(t, want, got)
				if err := checkValid(spec, tc.topics, got); err != nil {
					t.Fatal(err)
				}
				if err := checkHomogeneousBalance(spec, got); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// UniformHomogeneousAssignmentBuilderTest.testValidityAndBalanceForLargeSampleSet:
// 100 topics of 3 partitions, 49 members. Kafka uses random topic ids; these
// come from a fixed seed.
func TestUniformHomogeneousValidityAndBalanceForLargeSampleSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	topics := PartitionCounts{}
	var all []TopicID
	for range 100 {
		id := randomTopicID(rng)
		topics[id] = 3
		all = append(all, id)
	}
	var ms []MemberSpec
	for i := 1; i < 50; i++ {
		ms = append(ms, member(fmt.Sprintf("member%d", i), all))
	}
	spec := GroupSpec{Subscription: Homogeneous, Members: treeMap(ms...)}
	got := mustAssign(t, mustUniform(t), spec, topics)
	if err := checkValid(spec, topics, got); err != nil {
		t.Fatal(err)
	}
	if err := checkHomogeneousBalance(spec, got); err != nil {
		t.Fatal(err)
	}
}

// With 4.0.0 rules the member order decides who gets the extra partition, so
// a balanced assignment fed back in the other order moves; from 4.0.1 it does not.
func TestUniformHomogeneousKAFKA18688(t *testing.T) {
	topics := PartitionCounts{topic1: 3}
	members := []MemberSpec{
		member("A", ids(topic1), mkAssignment(tp(topic1, 2))...),
		member("B", ids(topic1), mkAssignment(tp(topic1, 0, 1))...),
	}
	spec := GroupSpec{Subscription: Homogeneous, Members: members}
	got := mustAssign(t, mustUniform(t, KafkaVersion("4.0.1")), spec, topics)
	assertAssignment(t, map[string]MemberAssignment{"A": exp(tp(topic1, 2)), "B": exp(tp(topic1, 0, 1))}, got)

	old := mustAssign(t, mustUniform(t, KafkaVersion("4.0.0")), spec, topics)
	assertAssignment(t, map[string]MemberAssignment{"A": exp(tp(topic1, 1, 2)), "B": exp(tp(topic1, 0))}, old)
}

// The member order is Kafka's memberIds() order: members that keep nothing
// take never-assigned partitions in HashSet order of the topics, then revoked
// ones in revocation order.
func TestUniformHomogeneousFillOrder(t *testing.T) {
	topics := PartitionCounts{topic1: 4}
	spec := GroupSpec{Subscription: Homogeneous, Members: []MemberSpec{
		member("X", ids(topic1), mkOrderedAssignment(TopicPartitions{topic1, []int32{3, 1, 0, 2}})...),
		member("Y", ids(topic1)),
	}}
	got := mustAssign(t, mustUniform(t), spec, topics)
	// X keeps the first two in its iteration order (3, 1); Y gets 0 and 2.
	assertAssignment(t, map[string]MemberAssignment{"X": exp(tp(topic1, 1, 3)), "Y": exp(tp(topic1, 0, 2))}, got)
}

func randomTopicID(rng *rand.Rand) TopicID {
	var t TopicID
	for i := range t {
		t[i] = byte(rng.UintN(256))
	}
	return t
}
