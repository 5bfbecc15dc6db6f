package records

import "testing"

func TestGroupOf(t *testing.T) {
	for k, want := range map[Key]string{
		OffsetCommitKey{Group: "g1", Topic: "t"}:               "g1",
		GroupMetadataKey{Group: "g2"}:                          "g2",
		ConsumerGroupMetadataKey{GroupID: "g3"}:                "g3",
		ConsumerGroupMemberMetadataKey{GroupID: "g4"}:          "g4",
		ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g5"}: "g5",
		ConsumerGroupRegularExpressionKey{GroupID: "g6"}:       "g6",
		OtherKey{Type: 11}:                                     "",
	} {
		if got := GroupOf(k); got != want {
			t.Errorf("GroupOf(%#v) = %q, want %q", k, got, want)
		}
	}
	if got := GroupOf(nil); got != "" {
		t.Errorf("GroupOf(nil) = %q", got)
	}
}
