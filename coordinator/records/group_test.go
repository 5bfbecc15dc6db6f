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
		// A share group's keys name it (GroupId, MemberId of type 10).
		OtherKey{Type: 11, Raw: "\x00\x02sg"}:          "sg",
		OtherKey{Type: 10, Raw: "\x00\x02sg\x00\x01m"}: "sg",
		OtherKey{Type: 11, Raw: "\x00\x09sg"}:          "", // truncated
		OtherKey{Type: 17, Raw: "\x00\x02st"}:          "", // streams: not read
	} {
		if got := GroupOf(k); got != want {
			t.Errorf("GroupOf(%#v) = %q, want %q", k, got, want)
		}
	}
	if got := GroupOf(nil); got != "" {
		t.Errorf("GroupOf(nil) = %q", got)
	}
}

func TestConsumerGroupOf(t *testing.T) {
	for _, k := range []Key{
		ConsumerGroupMetadataKey{GroupID: "g"},
		ConsumerGroupPartitionMetadataKey{GroupID: "g"},
		ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: "m"},
		ConsumerGroupTargetAssignmentMetadataKey{GroupID: "g"},
		ConsumerGroupTargetAssignmentMemberKey{GroupID: "g", MemberID: "m"},
		ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "m"},
		ConsumerGroupRegularExpressionKey{GroupID: "g", RegularExpression: "r"},
	} {
		if got, ok := ConsumerGroupOf(k); got != "g" || !ok {
			t.Errorf("ConsumerGroupOf(%#v) = %q, %v, want g, true", k, got, ok)
		}
	}
	for _, k := range []Key{OffsetCommitKey{Group: "g"}, GroupMetadataKey{Group: "g"}, OtherKey{Type: TypeConsumerGroupMetadata}, nil} {
		if got, ok := ConsumerGroupOf(k); ok {
			t.Errorf("ConsumerGroupOf(%#v) = %q, true: not a consumer-group key", k, got)
		}
	}
}
