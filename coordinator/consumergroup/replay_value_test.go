package consumergroup_test

import (
	"testing"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TestReplayWrongValueType: a consumer-group record whose value belongs to
// another record type is refused with an error that names the record, the
// group and the value's type, and leaves no group behind (Replay is atomic).
func TestReplayWrongValueType(t *testing.T) {
	wrong := &records.GroupMetadataValue{}
	for _, tc := range []struct {
		key  records.Key
		want string
	}{
		{records.ConsumerGroupMetadataKey{GroupID: "g"}, `replay ConsumerGroupMetadata of group "g": value is *records.GroupMetadataValue`},
		{records.ConsumerGroupPartitionMetadataKey{GroupID: "g"}, `replay ConsumerGroupPartitionMetadata of group "g": value is *records.GroupMetadataValue`},
		{records.ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: "m"}, `replay MemberMetadata of group "g": value is *records.GroupMetadataValue`},
		{records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: "g"}, `replay ConsumerGroupTargetAssignmentMetadata of group "g": value is *records.GroupMetadataValue`},
		{records.ConsumerGroupTargetAssignmentMemberKey{GroupID: "g", MemberID: "m"}, `replay ConsumerGroupTargetAssignmentMember of group "g": value is *records.GroupMetadataValue`},
		{records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "m"}, `replay CurrentMemberAssignment of group "g": value is *records.GroupMetadataValue`},
		{records.ConsumerGroupRegularExpressionKey{GroupID: "g", RegularExpression: "f.*"}, `replay ConsumerGroupRegularExpression of group "g": value is *records.GroupMetadataValue`},
	} {
		m, err := consumergroup.New(version.MustParse("4.4.0").Profile(), consumergroup.Config{})
		if err != nil {
			t.Fatal(err)
		}
		err = m.Replay(records.Record{Key: tc.key, Value: wrong})
		if err == nil || err.Error() != tc.want {
			t.Errorf("replay %T with a GroupMetadataValue: error %v, want %q", tc.key, err, tc.want)
		}
		if m.HasGroup("g") {
			t.Errorf("replay %T with a GroupMetadataValue created the group", tc.key)
		}
	}
}
