package version

// Share-partition leader and share coordinator defaults of the 4.2–4.4
// branches (ShareGroupConfig, ShareCoordinatorConfig), for the
// share-partition model of coordinator/sharegroup.
const (
	// SharePartitionMaxRecordLocksDefault is
	// group.share.partition.max.record.locks: how many records past the
	// start offset a share-partition keeps in flight
	// (SharePartition.maxInFlightRecords).
	SharePartitionMaxRecordLocksDefault = 2000
	// ShareSnapshotUpdateRecordsPerSnapshotDefault is
	// share.coordinator.snapshot.update.records.per.snapshot: after this
	// many ShareUpdate records of a share-partition the share coordinator
	// writes a ShareSnapshot instead.
	ShareSnapshotUpdateRecordsPerSnapshotDefault = 500
)
