package records

// GroupOf returns the group a record key belongs to, which also picks its
// __consumer_offsets partition (PartitionFor). Keys that name no group
// (types this package does not decode: share and streams groups, OtherKey)
// and a nil key give "".
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
