// Package wire is the embedded cluster: a single-node Kafka-protocol server
// inside the process that serves a group coordinator over the wire, so the
// suites and the harness run with no Docker and no Java (docs/design.md,
// Clusters → Embedded).
//
// It serves what kgo and kadm need around the group APIs, one file per API
// named by its key as in franz-go's kfake: ApiVersions, Metadata,
// FindCoordinator, CreateTopics, DeleteTopics, InitProducerId, Produce
// (acks 0/1/-1, idempotent producers), Fetch (sessionless), ListOffsets; and
// it hands OffsetCommit, OffsetFetch, JoinGroup, Heartbeat, LeaveGroup,
// SyncGroup, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete,
// ConsumerGroupHeartbeat, ConsumerGroupDescribe, ShareGroupHeartbeat and
// ShareGroupDescribe to a Coordinator. With Config.ShareFetch it is also
// every share-partition's leader and share coordinator (share.go):
// ShareFetch, ShareAcknowledge, DescribeShareGroupOffsets, a group's
// share.auto.offset.reset through IncrementalAlterConfigs, and
// __share_group_state, which it replays at Start. Framing (request header
// v1/v2, response header v0/v1) is in server.go.
//
// # The log
//
// Every partition is a log of record batches, in memory and, with a data
// directory, in a segment file laid out as Kafka's (topic-partition/
// 00000000000000000000.log, partition.metadata with the topic id). Produce
// stores a client's batch as it arrived, with only the base offset and
// leader epoch rewritten (both outside the CRC); Fetch returns the stored
// bytes.
//
// The coordinator is pure: it returns records instead of writing them. The
// server appends every record it returns, encoded by records.EncodeRecord,
// to the __consumer_offsets partition of the record's group
// (records.PartitionFor), before it sends any response, so the log is the
// coordinator's state: at Start the server replays __consumer_offsets into a
// fresh coordinator before serving ("recovery from the log"), and clients
// can fetch those partitions as from a real broker. The server owns the
// clock and the lock: requests and the periodic Tick run under one mutex.
//
// Package wire/reference plugs in the reference coordinator (package
// coordinator); wire itself depends only on its Coordinator interface.
//
// Everything listens on loopback only.
package wire
