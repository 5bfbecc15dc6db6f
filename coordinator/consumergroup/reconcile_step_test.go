package consumergroup

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TestReconciliationRunsRepeatedly: the exported step gives what the
// reconciler gives, the same every time, and leaves its input alone (a
// benchmark runs it in a loop).
func TestReconciliationRunsRepeatedly(t *testing.T) {
	t1, t2 := cabTopic("t1"), cabTopic("t2")
	topics := Topics{{Name: "t1", ID: t1, Partitions: 4}, {Name: "t2", ID: t2, Partitions: 4}}
	assigned := map[TopicID]map[int32]int32{t1: {0: 10, 1: 10}, t2: {0: 10}}
	x := NewReconciliation(version.V4_4_0.Profile(), ReconcileInput{
		MemberID: "m", State: records.MemberStable, Epoch: 10, PrevEpoch: 9,
		Subscribed: []string{"t2", "t1"}, Assigned: assigned,
		TargetEpoch: 11, Target: map[TopicID][]int32{t1: {1, 2}, t2: {0, 3}},
		Topics:         topics,
		PartitionEpoch: func(t TopicID, p int32) int32 { return map[bool]int32{true: 7, false: -1}[t == t2 && p == 3] },
	})
	for i := range 2 {
		out, err := x.Run()
		if err != nil {
			t.Fatal(err)
		}
		// t1-0 must be revoked first; the member did not say what it owns.
		if out.State != records.MemberUnrevokedPartitions || out.Epoch != 10 || out.PrevEpoch != 10 {
			t.Fatalf("run %d: state %v epoch %d prev %d, want UNREVOKED_PARTITIONS 10 10", i, out.State, out.Epoch, out.PrevEpoch)
		}
		if !maps.Equal(out.Pending[t1], map[int32]int32{0: 10}) || !maps.Equal(out.Assigned[t1], map[int32]int32{1: 10}) {
			t.Fatalf("run %d: assigned %v pending %v", i, out.Assigned, out.Pending)
		}
	}
	if !maps.Equal(assigned[t1], map[int32]int32{0: 10, 1: 10}) {
		t.Fatalf("the input was changed: %v", assigned)
	}
}

// TestMemberSubscribes: a member answers whether it subscribes to a name,
// from its names or from the set it keeps of many; a copy given other names
// answers from those, a copy given the same names keeps the set.
func TestMemberSubscribes(t *testing.T) {
	var many []string
	for i := range 20 {
		many = append(many, fmt.Sprintf("t%02d", i))
	}
	m := newMember("m")
	m.setSubscribed(many)
	if !m.subscribes("t07") || m.subscribes("t20") || m.subscribedSet == nil {
		t.Fatalf("subscribes: t07 %t, t20 %t, set made %t", m.subscribes("t07"), m.subscribes("t20"), m.subscribedSet != nil)
	}
	c := m.clone()
	c.setSubscribed(slices.Clone(many))
	if c.subscribedSet == nil {
		t.Fatal("a copy given the same names dropped the set")
	}
	c.setSubscribed(append(slices.Clone(many[1:]), "t20"))
	if c.subscribes("t00") || !c.subscribes("t20") {
		t.Fatalf("a copy given other names answers from the old ones: t00 %t, t20 %t", c.subscribes("t00"), c.subscribes("t20"))
	}
	if !m.subscribes("t00") {
		t.Fatal("the original lost its names")
	}
	few := newMember("f")
	few.setSubscribed([]string{"a", "c"})
	if !few.subscribes("c") || few.subscribes("b") {
		t.Fatal("a member of few names answers wrong")
	}
}
