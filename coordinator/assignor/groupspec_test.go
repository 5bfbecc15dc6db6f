package assignor

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// GroupSpecImplTest.testIsPartitionAssigned: an explicit inverted target
// assignment is used as given.
func TestGroupSpecIsPartitionAssigned(t *testing.T) {
	spec := GroupSpec{
		Subscription:             Homogeneous,
		Members:                  []MemberSpec{member("test-member", ids(topic1))},
		InvertedTargetAssignment: map[TopicID]map[int32]string{topic1: {1: "test-member"}},
	}
	if !spec.IsPartitionAssigned(topic1, 1) {
		t.Error("partition 1 is in the inverted assignment")
	}
	if spec.IsPartitionAssigned(topic1, 2) {
		t.Error("partition 2 is not")
	}
	if spec.IsPartitionAssigned(topic2, 2) {
		t.Error("another topic is not")
	}
}

// Without an explicit map, it is derived from the members' assignments.
func TestGroupSpecIsPartitionAssignedDerived(t *testing.T) {
	spec := GroupSpec{Subscription: Homogeneous, Members: []MemberSpec{
		member("A", ids(topic1), mkAssignment(tp(topic1, 0, 3))...),
	}}
	for p, want := range map[int32]bool{0: true, 1: false, 3: true} {
		if got := spec.IsPartitionAssigned(topic1, p); got != want {
			t.Errorf("IsPartitionAssigned(topic1, %d) = %v, want %v", p, got, want)
		}
	}
}

// An explicit inverted map changes what the homogeneous builder treats as
// free: a partition marked assigned but held by nobody is never handed out,
// and Kafka does not complain (it is not in the unassigned list).
func TestUniformHomogeneousUsesInvertedTargetAssignment(t *testing.T) {
	spec := GroupSpec{
		Subscription:             Homogeneous,
		Members:                  []MemberSpec{member("A", ids(topic1))},
		InvertedTargetAssignment: map[TopicID]map[int32]string{topic1: {1: "gone"}},
	}
	got := mustAssign(t, mustUniform(t), spec, PartitionCounts{topic1: 3})
	assertAssignment(t, map[string]MemberAssignment{"A": exp(tp(topic1, 0, 2))}, got)
}

func TestValidationErrors(t *testing.T) {
	topics := PartitionCounts{topic1: 3}
	for name, spec := range map[string]GroupSpec{
		"duplicate member":     {Members: []MemberSpec{member("A", ids(topic1)), member("A", ids(topic1))}},
		"duplicate topic":      {Members: []MemberSpec{member("A", ids(topic1, topic1))}},
		"duplicate partition":  {Members: []MemberSpec{member("A", ids(topic1), TopicPartitions{topic1, []int32{1, 1}})}},
		"negative partition":   {Members: []MemberSpec{member("A", ids(topic1), TopicPartitions{topic1, []int32{-1}})}},
		"repeated assignment":  {Members: []MemberSpec{member("A", ids(topic1), tp(topic1, 0), tp(topic1, 1))}},
		"bad subscriptiontype": {Subscription: 7, Members: []MemberSpec{member("A", ids(topic1))}},
	} {
		for _, a := range []Assignor{mustUniform(t), mustRange(t)} {
			if _, err := a.Assign(spec, topics); !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("%s/%s: want ErrInvalidSpec, got %v", a.Name(), name, err)
			}
		}
	}
}

func TestNewAndVersions(t *testing.T) {
	for _, name := range []string{"uniform", "range", uniformClass, rangeClass} {
		if _, err := New(name); err != nil {
			t.Errorf("New(%q): %v", name, err)
		}
	}
	if _, err := New("sticky"); err == nil {
		t.Error("New(sticky) should fail")
	}
	for _, v := range []string{"4.0.0", "4.3.1", "4.4.0"} {
		if _, err := NewUniform(KafkaVersion(v)); err != nil {
			t.Errorf("KafkaVersion(%q): %v", v, err)
		}
	}
	// Only served releases, as coordinator/version names them.
	for _, v := range []string{"3.9.0", "4.99.0", "4.9.1", "4", "4.0", "4.4.99", "4.x", "4.4.0-SNAPSHOT"} {
		_, err := NewUniform(KafkaVersion(v))
		if err == nil || !strings.Contains(err.Error(), "served versions are") {
			t.Errorf("KafkaVersion(%q): %v, want an error naming the served versions", v, err)
		}
	}
}

// Both assignors return an empty assignment for an empty group.
func TestEmptyGroup(t *testing.T) {
	for _, a := range []Assignor{mustUniform(t), mustRange(t)} {
		for _, st := range []SubscriptionType{Homogeneous, Heterogeneous} {
			got := mustAssign(t, a, GroupSpec{Subscription: st}, PartitionCounts{})
			if len(got.Members) != 0 {
				t.Errorf("%s/%s: want no members, got %s", a.Name(), st, render(got.Members))
			}
		}
	}
}

// TestHasBadPartition: duplicates and negative partitions are found in any
// order, also among partitions too large for the bit set.
func TestHasBadPartition(t *testing.T) {
	var seen []uint64
	for _, tc := range []struct {
		ps   []int32
		want bool
	}{
		{[]int32{3, 1, 2}, false},
		{[]int32{3, 1, 3}, true},
		{[]int32{64, 0, 63, 127, 128}, false},
		{[]int32{5, -1, 2}, true},
		{[]int32{1 << 21, 5, 1 << 21}, true},
		{[]int32{1 << 21, 5, 1<<21 + 1}, false},
		{[]int32{3, 1, 2}, false}, // the set is clear again
	} {
		if got := hasBadPartition(tc.ps, &seen); got != tc.want {
			t.Errorf("hasBadPartition(%v) = %t, want %t", tc.ps, got, tc.want)
		}
	}
}

// TestRecordOrderErrorsNameKafkasFirst: a spec in record order with two
// problems gets the error of the first one in Kafka's iteration order, as
// if it had been given in that order.
func TestRecordOrderErrorsNameKafkasFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		a, b := randomTopicID(rng), randomTopicID(rng)
		record := []TopicPartitions{{a, []int32{1, 1}}, {b, []int32{2, 2}}}
		kafka := JavaAssignmentOrder(record, DefaultJavaVersion)
		if kafka[0].Topic == a {
			continue // the same order: nothing to tell apart
		}
		topics := PartitionCounts{a: 3, b: 3}
		spec := GroupSpec{Subscription: Heterogeneous, RecordOrder: true, Members: []MemberSpec{{ID: "m", Topics: []TopicID{a, b}, Assignment: record}}}
		want := GroupSpec{Subscription: Heterogeneous, Members: []MemberSpec{{ID: "m", Topics: []TopicID{a, b}, Assignment: kafka}}}
		for _, as := range []Assignor{mustUniform(t), mustRange(t)} {
			_, err := as.Assign(spec, topics)
			_, werr := as.Assign(want, topics)
			if err == nil || werr == nil || err.Error() != werr.Error() {
				t.Fatalf("%s: record order gives %v, Kafka's order %v", as.Name(), err, werr)
			}
		}
		return
	}
	t.Fatal("no pair of topics whose Kafka order is not their record order")
}
