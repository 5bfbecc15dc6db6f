// Package records encodes and decodes the group records of the
// __consumer_offsets topic exactly as Apache Kafka 4.0–4.4 writes and reads
// them.
//
// # Wire format
//
// CoordinatorRecordSerde (coordinator-common/src/main/java/org/apache/kafka/
// coordinator/common/runtime/CoordinatorRecordSerde.java) defines a record as
//
//	key   = int16 record type, then the key struct at version 0 (never flexible)
//	value = int16 value version, then the value struct at that version
//
// and a null value is a tombstone. The schemas are the JSON files in
// group-coordinator/src/main/resources/common/message/. In 4.0 the key files
// declare "type": "data" with validVersions equal to the record type; from
// 4.1 they are "coordinator-key" with an apiKey. The bytes are the same.
//
// Flexible versions (all KIP-848 values, OffsetCommitValue and
// GroupMetadataValue from v4) use compact strings, arrays and bytes (uvarint
// length+1, 0 meaning null) and end every struct with a tagged-field section:
// uvarint count, then per field uvarint tag, uvarint size and the bytes, in
// ascending tag order. A tagged field equal to the default of Kafka's
// generated class is not written. Those defaults are not always the
// schema's: ConsumerGroupMemberMetadataValue.ClassicMemberMetadata defaults
// to an empty struct and CurrentMemberAssignment AssignmentEpochs to an
// empty list, so a null there is written explicitly (tag, size 1, byte 0),
// which Kafka does for every consumer-protocol member. A tagged nullable
// struct carries a uvarint presence marker (1) before the struct, counted in
// the field size. These rules were read from the generated write methods in
// the kafka-group-coordinator 4.0.0 and 4.4.0 jars (javap) and from
// generator/src/main/java/org/apache/kafka/message/MessageDataGenerator.java.
//
// # Record types
//
//	0  LegacyOffsetCommitKey / LegacyOffsetCommitValue (v0 only; 4.0 read it as OffsetCommitValue v0–4)
//	1  OffsetCommitKey / OffsetCommitValue v0–4 (kmsg.OffsetCommitValue)
//	2  GroupMetadataKey / GroupMetadataValue v0–4 (kmsg.GroupMetadataValue)
//	3  ConsumerGroupMetadataKey / ConsumerGroupMetadataValue v0
//	4  ConsumerGroupPartitionMetadataKey / ConsumerGroupPartitionMetadataValue v0
//	5  ConsumerGroupMemberMetadataKey / ConsumerGroupMemberMetadataValue v0
//	6  ConsumerGroupTargetAssignmentMetadataKey / ConsumerGroupTargetAssignmentMetadataValue v0
//	7  ConsumerGroupTargetAssignmentMemberKey / ConsumerGroupTargetAssignmentMemberValue v0
//	8  ConsumerGroupCurrentMemberAssignmentKey / ConsumerGroupCurrentMemberAssignmentValue v0
//	16 ConsumerGroupRegularExpressionKey / ConsumerGroupRegularExpressionValue v0
//
// Type 16 is a consumer-group record (regex subscriptions, KIP-848), so it
// is decoded too. Every other type (share groups 9–15 in 4.0 and 10–15
// later, streams groups 17–23, anything newer) decodes to OtherKey and
// OtherValue without error, so a replay can skip it and say so.
//
// Which value version and which tagged fields each Kafka release writes is
// in package version; AsWrittenBy shapes a record accordingly.
//
// # Differences from Kafka's reader
//
// In a differential run against Kafka 4.4.0's GroupCoordinatorRecordSerde
// (5,000 random records encoded here: Kafka re-serialized every one to the
// same bytes; 16,000 mutated golden vectors) the only disagreements were
// these, none of which Kafka's own writer produces:
//
//   - Bytes left after a value or key are an error here; Kafka ignores them.
//   - A known tagged field must fill exactly its declared size here; Kafka
//     reads the field and ignores the size.
//   - Strings are kept as the bytes on the wire; Java replaces invalid UTF-8
//     with U+FFFD when it decodes them.
//
// By reading, not by test: a 5-byte varint whose last byte exceeds 0x0f
// overflows silently in Java and is an error here (kbin.Uvarint).
//
// Unknown tagged fields are kept and re-encoded in ascending tag order.
package records
