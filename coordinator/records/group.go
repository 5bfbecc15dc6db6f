package records

// GroupOf returns the group a record key belongs to, which also picks its
// __consumer_offsets partition (PartitionFor). A share group's key (types
// 10–15, which this package leaves as OtherKey) starts with its GroupId,
// read from the raw key. Other keys that name no group (streams groups,
// anything newer) and a nil key give "".
func GroupOf(k Key) string {
	switch k := k.(type) {
	case OffsetCommitKey:
		return k.Group
	case GroupMetadataKey:
		return k.Group
	case ConsumerGroupMetadataKey:
		return k.GroupID
	case ConsumerGroupPartitionMetadataKey:
		return k.GroupID
	case ConsumerGroupMemberMetadataKey:
		return k.GroupID
	case ConsumerGroupTargetAssignmentMetadataKey:
		return k.GroupID
	case ConsumerGroupTargetAssignmentMemberKey:
		return k.GroupID
	case ConsumerGroupCurrentMemberAssignmentKey:
		return k.GroupID
	case ConsumerGroupRegularExpressionKey:
		return k.GroupID
	case OtherKey:
		if k.Type >= 10 && k.Type <= 15 && len(k.Raw) >= 2 {
			// Share-group keys are GroupId[, MemberId] at version 0: an
			// int16 length, then the string.
			n := int(k.Raw[0])<<8 | int(k.Raw[1])
			if n <= len(k.Raw)-2 {
				return k.Raw[2 : 2+n]
			}
		}
	}
	return ""
}

// ConsumerGroupOf returns the group of a consumer-group record key (types
// 3–8 and 16), and false for any other key.
func ConsumerGroupOf(k Key) (string, bool) {
	switch k.(type) {
	case ConsumerGroupMetadataKey, ConsumerGroupPartitionMetadataKey, ConsumerGroupMemberMetadataKey,
		ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMemberKey,
		ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupRegularExpressionKey:
		return GroupOf(k), true
	}
	return "", false
}
