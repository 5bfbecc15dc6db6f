// Package coordinator is groupquake's reference group coordinator: one
// coordinator shard (one __consumer_offsets partition) of Kafka 4.x's group
// coordinator as a pure, deterministic state machine.
//
//	Submit/Handle(now, request) → (response or parked, records)
//	Tick(now)                   → records (timers: sessions, joins, syncs, offset expiry)
//	Replay(record), Loaded(now) → load a log, as after a failover
//	State()                     → the durable state, for "replay equals live" checks
//
// The shell serves classic groups (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, DescribeGroups, ListGroups, DeleteGroups; GroupMetadataManager
// and classic/ClassicGroup of the 4.4 branch) and offsets (OffsetCommit,
// OffsetFetch, OffsetDelete; OffsetMetadataManager), one file per API named
// by key. Consumer groups (KIP-848) live behind the ConsumerGroups seam,
// served by default by package consumergroup's Manager through a thin
// adapter (consumer_adapter.go); State covers both kinds of group.
// Records are what the profile's Kafka release writes (records.AsWrittenBy).
//
// Conformance vectors are in testdata/classic, testdata/offsets and
// testdata/consumer (consumer groups through the shell) (datadriven;
// `go test ./coordinator -run Conformance -rewrite`).
package coordinator
