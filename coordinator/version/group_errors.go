package version

// GroupWriteMayHaveLanded reports whether a group coordinator's answer with
// error name leaves open that the request's records were written: the
// coordinator appends them first and answers once they are replicated; when
// that wait times out or the partition's leader moves,
// GroupCoordinatorService#normalizeException answers COORDINATOR_NOT_AVAILABLE
// (for REQUEST_TIMED_OUT and NOT_ENOUGH_REPLICAS) or NOT_COORDINATOR (for
// NOT_LEADER_OR_FOLLOWER), and the records may stay in the log for a later
// coordinator to replay. Every 4.x release answers so; it applies to every
// request that writes records (OffsetCommit, ConsumerGroupHeartbeat,
// ShareGroupHeartbeat, a classic JoinGroup or SyncGroup).
func GroupWriteMayHaveLanded(name string) bool {
	switch name {
	case "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "REQUEST_TIMED_OUT":
		return true
	}
	return false
}
