package assignor

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Ported from RangeAssignorTest (apache/kafka 4.4 branch; the 4.0–4.3 versions
// have the same scenarios and expectations, the 4.3+ one adds the shared
// testReassignmentStickiness). Kafka's tests build members in a TreeMap, so
// the member order is by id; for range it does not matter anyway.
func TestRangeKafkaScenarios(t *testing.T) {
	const A, B, C = "A", "B", "C"
	tests := []struct {
		name   string
		topics PartitionCounts
		spec   GroupSpec
		want   map[string]MemberAssignment
	}{
		{
			name:   "testOneMemberNoTopic",
			topics: PartitionCounts{},
			spec:   GroupSpec{Members: []MemberSpec{member(A, nil)}, Subscription: Homogeneous},
			want:   map[string]MemberAssignment{A: {}},
		},
		{
			name:   "testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions",
			topics: PartitionCounts{topic1: 3, topic3: 2},
			spec: GroupSpec{Subscription: Homogeneous, Members: treeMap(
				member(A, ids(topic1, topic3)),
				member(B, ids(topic1, topic3)),
			)},
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1), tp(topic3, 0)),
				B: exp(tp(topic1, 2), tp(topic3, 1)),
			},
		},
		{
			name:   "testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions",
			topics: PartitionCounts{topic1: 3, topic2: 3, topic3: 2},
			spec: GroupSpec{Subscription: Heterogeneous, Members: treeMap(
				member(A, ids(topic1, topic2)),
				member(B, ids(topic3)),
				member(C, ids(topic2, topic3)),
			)},
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1, 2), tp(topic2, 0, 1)),
				B: exp(tp(topic3, 0)),
				C: exp(tp(topic2, 2), tp(topic3, 1)),
			},
		},
		{
			name:   "testFirstAssignmentNumMembersGreaterThanNumPartitions",
			topics: PartitionCounts{topic1: 3, topic3: 2},
			spec: GroupSpec{Subscription: Homogeneous, Members: treeMap(
				member(A, ids(topic1, topic3)),
				member(B, ids(topic1, topic3)),
				member(C, ids(topic1, topic3)),
			)},
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0), tp(topic3, 0)),
				B: exp(tp(topic1, 1), tp(topic3, 1)),
				C: exp(tp(topic1, 2)),
			},
		},
		{
			name:   "testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded",
			topics: PartitionCounts{topic1: 2, topic2: 2},
			spec: GroupSpec{Subscription: Homogeneous, Members: treeMap(
				member(A, ids(topic1, topic2), mkAssignment(tp(topic1, 0), tp(topic2, 0))...),
				member(B, ids(topic1, topic2), mkAssignment(tp(topic1, 1), tp(topic2, 1))...),
				member(C, ids(topic1, topic2)),
			)},
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0), tp(topic2, 0)),
				B: exp(tp(topic1, 1), tp(topic2, 1)),
				C: {},
			},
		},
		{
			name:   "testReassignmentWhenOnePartitionAddedForTwoMembersTwoTopics",
			topics: PartitionCounts{topic1: 4, topic2: 4},
			spec: GroupSpec{Subscription: Homogeneous, Members: treeMap(
				member(A, ids(topic1, topic2), mkAssignment(tp(topic1, 0, 1), tp(topic2, 0, 1))...),
				member(B, ids(topic1, topic2), mkAssignment(tp(topic1, 2), tp(topic2, 2))...),
			)},
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1), tp(topic2, 0, 1)),
				B: exp(tp(topic1, 2, 3), tp(topic2, 2, 3)),
			},
		},
		{
			name:   "testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics",
			topics: PartitionCounts{topic1: 3, topic2: 3},
			spec: GroupSpec{Subscription: Homogeneous, Members: treeMap(
				member(A, ids(topic1, topic2), mkAssignment(tp(topic1, 0, 1), tp(topic2, 0, 1))...),
				member(B, ids(topic1, topic2), mkAssignment(tp(topic1, 2), tp(topic2, 2))...),
				member(C, ids(topic1, topic2)),
			)},
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0), tp(topic2, 0)),
				B: exp(tp(topic1, 1), tp(topic2, 1)),
				C: exp(tp(topic1, 2), tp(topic2, 2)),
			},
		},
		{
			name:   "testReassignmentWhenOneMemberAddedAndOnePartitionAfterInitialAssignmentWithTwoMembersTwoTopics",
			topics: PartitionCounts{topic1: 4, topic2: 3},
			spec: GroupSpec{Subscription: Heterogeneous, Members: treeMap(
				member(A, ids(topic1, topic2), mkAssignment(tp(topic1, 0, 1), tp(topic2, 0, 1))...),
				member(B, ids(topic1, topic2), mkAssignment(tp(topic1, 2), tp(topic2, 2))...),
				member(C, ids(topic1)),
			)},
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1), tp(topic2, 0, 1)),
				B: exp(tp(topic1, 2), tp(topic2, 2)),
				C: exp(tp(topic1, 3)),
			},
		},
		{
			name:   "testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithTwoMembersTwoTopics",
			topics: PartitionCounts{topic1: 3, topic2: 3},
			spec: GroupSpec{Subscription: Homogeneous, Members: treeMap(
				member(B, ids(topic1, topic2), mkAssignment(tp(topic1, 2), tp(topic2, 2))...),
			)},
			want: map[string]MemberAssignment{
				B: exp(tp(topic1, 0, 1, 2), tp(topic2, 0, 1, 2)),
			},
		},
		{
			name:   "testReassignmentWhenMultipleSubscriptionsRemovedAfterInitialAssignmentWithThreeMembersTwoTopics",
			topics: PartitionCounts{topic1: 3, topic2: 3, topic3: 2},
			spec: GroupSpec{Subscription: Heterogeneous, Members: treeMap(
				member(A, ids(topic1), mkAssignment(tp(topic1, 0, 1, 2), tp(topic2, 0))...),
				member(B, ids(topic1, topic2, topic3), mkAssignment(tp(topic2, 1))...),
				member(C, ids(topic2), mkAssignment(tp(topic2, 2), tp(topic3, 0, 1))...),
			)},
			want: map[string]MemberAssignment{
				A: exp(tp(topic1, 0, 1)),
				B: exp(tp(topic1, 2), tp(topic2, 0, 1), tp(topic3, 0, 1)),
				C: exp(tp(topic2, 2)),
			},
		},
	}
	r := mustRange(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustAssign(t, r, tc.spec, tc.topics)
			assertAssignment(t, tc.want, got)
			if err := checkValid(tc.spec, tc.topics, got); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// RangeAssignorTest.testStaticMembership: a static member that rejoins under a
// new member id gets its ranges back.
func TestRangeStaticMembership(t *testing.T) {
	topics := PartitionCounts{topic1: 3}
	r := mustRange(t)
	before := mustAssign(t, r, GroupSpec{Subscription: Homogeneous, Members: treeMap(
		static(member("A", ids(topic1)), "instanceA"),
		static(member("B", ids(topic1)), "instanceB"),
	)}, topics)
	after := mustAssign(t, r, GroupSpec{Subscription: Homogeneous, Members: treeMap(
		static(member("B", ids(topic1)), "instanceB"),
		static(member("memberA1", ids(topic1)), "instanceA"),
	)}, topics)
	if !equalMember(before.Members["A"], after.Members["memberA1"]) || !equalMember(before.Members["B"], after.Members["B"]) {
		t.Fatalf("static members moved: before %s after %s", render(before.Members), render(after.Members))
	}
}

// RangeAssignorTest.testMixedStaticMembership: static members sort before
// dynamic ones, so replacing static A by memberA1 changes nothing.
func TestRangeMixedStaticMembership(t *testing.T) {
	topics := PartitionCounts{topic1: 5}
	r := mustRange(t)
	before := mustAssign(t, r, GroupSpec{Subscription: Homogeneous, Members: treeMap(
		static(member("A", ids(topic1)), "instanceA"),
		static(member("C", ids(topic1)), "instanceC"),
		member("B", ids(topic1)),
	)}, topics)
	after := mustAssign(t, r, GroupSpec{Subscription: Homogeneous, Members: treeMap(
		static(member("C", ids(topic1)), "instanceC"),
		member("B", ids(topic1)),
		static(member("memberA1", ids(topic1)), "instanceA"),
	)}, topics)
	for _, pair := range [][2]string{{"A", "memberA1"}, {"B", "B"}, {"C", "C"}} {
		if !equalMember(before.Members[pair[0]], after.Members[pair[1]]) {
			t.Fatalf("%s → %s moved: before %s after %s", pair[0], pair[1], render(before.Members), render(after.Members))
		}
	}
	// And the exact vector: instanceA, instanceC, then B.
	assertAssignment(t, map[string]MemberAssignment{
		"A": exp(tp(topic1, 0, 1)),
		"C": exp(tp(topic1, 2, 3)),
		"B": exp(tp(topic1, 4)),
	}, before)
}

// Java String.compareTo order, not Go byte order: in UTF-8, U+FF21 (EF BC A1)
// sorts before U+1F600 (F0 9F 98 80); in UTF-16 the emoji's high surrogate
// 0xD83D is below 0xFF21, so Java puts the emoji first.
func TestRangeSortsByJavaStringOrder(t *testing.T) {
	emoji, fullwidth := "\U0001F600", "\uFF21"
	spec := GroupSpec{Subscription: Homogeneous, Members: []MemberSpec{
		member(fullwidth, ids(topic1)),
		member(emoji, ids(topic1)),
	}}
	got := mustAssign(t, mustRange(t), spec, PartitionCounts{topic1: 2})
	assertAssignment(t, map[string]MemberAssignment{
		emoji:     exp(tp(topic1, 0)),
		fullwidth: exp(tp(topic1, 1)),
	}, got)
}

// Range is not sticky: a new dynamic member whose id sorts first takes the
// first range, whatever the previous target was.
func TestRangeIgnoresPreviousAssignment(t *testing.T) {
	topics := PartitionCounts{topic1: 4}
	spec := GroupSpec{Subscription: Homogeneous, Members: treeMap(
		member("B", ids(topic1), mkAssignment(tp(topic1, 0, 1, 2, 3))...),
		member("A", ids(topic1)),
	)}
	got := mustAssign(t, mustRange(t), spec, topics)
	assertAssignment(t, map[string]MemberAssignment{
		"A": exp(tp(topic1, 0, 1)),
		"B": exp(tp(topic1, 2, 3)),
	}, got)
}

// TestRangeMemberOrderAsReference: the member order (sorted by the bytes
// after a shared prefix first) is the reference's stable sort, for ids
// sharing long prefixes, holding NUL bytes, of any length, static or not.
func TestRangeMemberOrderAsReference(t *testing.T) {
	// Ids equal in their first 8 bytes after the shared prefix, different
	// after (NUL bytes inside), with the others short.
	ms := []MemberSpec{{ID: "p-x\x00\x00\x00\x00\x00\x00\x00b"}, {ID: "p-y"}, {ID: "p-x\x00\x00\x00\x00\x00\x00\x00a"}, {ID: "p-x"}}
	if got, want := rangeMemberOrder(ms), refRangeMemberOrder(ms); !slices.Equal(got, want) {
		t.Fatalf("order %v, reference %v, members %q", got, want, ms)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	alphabet := []byte{0, 1, '0', '1', '9', 'a', 'z', 0x7f}
	for range 500 {
		prefix := strings.Repeat("member-", rng.IntN(3))
		var ms []MemberSpec
		for range rng.IntN(40) {
			b := []byte(prefix)
			for range rng.IntN(12) {
				b = append(b, alphabet[rng.IntN(len(alphabet))])
			}
			m := MemberSpec{ID: string(b)}
			if rng.IntN(4) == 0 {
				m.InstanceID = prefix + string(alphabet[rng.IntN(len(alphabet))])
			}
			ms = append(ms, m)
		}
		if got, want := rangeMemberOrder(ms), refRangeMemberOrder(ms); !slices.Equal(got, want) {
			t.Fatalf("order %v, reference %v, members %q", got, want, ms)
		}
	}
}
