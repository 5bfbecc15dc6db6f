package records

import (
	"strings"
	"testing"
)

// consumerMemberValue is the golden ConsumerGroupMemberMetadataValue of a
// consumer-protocol member (22 bytes):
//
//	0     version 0000
//	2     InstanceId null, 3 RackId null
//	4     ClientId "c" (02 63), 6 ClientHost "/h" (03 2f68)
//	9     SubscribedTopicNames ["a"] (02 02 61), 12 SubscribedTopicRegex null
//	13    RebalanceTimeoutMs 00001388
//	17    ServerAssignor null
//	18    tagged fields: 01 | 00 01 00
const consumerMemberValue = "0000 00 00 0263 032f68 020261 00 00001388 00 01 000100"

func TestDecodeErrors(t *testing.T) {
	memberKey := "0005 0001 67 0001 6d"
	for _, tc := range []struct {
		name       string
		key, value string
		tombstone  bool
		want       string
	}{
		{
			name:  "truncated member value names the field and byte",
			key:   memberKey,
			value: consumerMemberValue[:strings.Index(consumerMemberValue, "00001388")] + "0000",
			want:  "decode ConsumerGroupMemberMetadataValue v0: truncated at byte 13 of 15: RebalanceTimeoutMs needs 4 bytes, 2 remain",
		},
		{
			name:  "member value cut inside the tagged section",
			key:   memberKey,
			value: "0000 00 00 0263 032f68 020261 00 00001388 00 01 0001",
			want:  "decode ConsumerGroupMemberMetadataValue v0: truncated at byte 21 of 21: ConsumerGroupMemberMetadataValue tag 0 needs 1 bytes, 0 remain",
		},
		{
			name:      "key shorter than the record type",
			key:       "00",
			tombstone: true,
			want:      "decode record key: truncated at byte 0 of 1: record type needs 2 bytes, 1 remain",
		},
		{
			name:      "key with trailing bytes",
			key:       "0002 0001 67 ff",
			tombstone: true,
			want:      "decode GroupMetadataKey: 1 trailing bytes at byte 5 of 6",
		},
		{
			name:      "null group in a key",
			key:       "0002 ffff",
			tombstone: true,
			want:      "decode GroupMetadataKey: null at byte 2: non-nullable string group was serialized as null",
		},
		{
			name:  "value version Kafka does not define",
			key:   "0001 0001 67 0001 74 00000003",
			value: "0005 0000000000000064",
			want:  "decode OffsetCommitValue: unknown value version 5 (Kafka reads v0–v4)",
		},
		{
			name:  "type 0 with a value version other than 0",
			key:   "0000 0001 67 0001 74 00000003",
			value: "0003 0000000000000064 00000005 0001 6d 00000000000003e8",
			want:  "decode LegacyOffsetCommitValue: unknown value version 3 (Kafka reads v0–v0)",
		},
		{
			name:  "empty (not null) value",
			key:   "0003 0001 67",
			value: "",
			want:  "decode ConsumerGroupMetadataValue: truncated at byte 0 of 0: value version needs 2 bytes, 0 remain",
		},
		{
			name:  "tagged field shorter than its type",
			key:   "0003 0001 67",
			value: "0000 00000005 01 00 04 01020304",
			want:  "decode ConsumerGroupMetadataValue v0: truncated at byte 9: MetadataHash needs 8 bytes, ConsumerGroupMetadataValue tag 0 ends at byte 13",
		},
		{
			name:  "tagged field longer than its type",
			key:   "0003 0001 67",
			value: "0000 00000005 01 00 09 010203040506070809",
			want:  "decode ConsumerGroupMetadataValue v0: tagged field 0 of ConsumerGroupMetadataValue at byte 17 has 1 bytes left after its value",
		},
		{
			name:  "array count larger than the value",
			key:   "0007 0001 67 0001 6d",
			value: "0000 ff01 00",
			want:  "decode ConsumerGroupTargetAssignmentMemberValue v0: invalid length at byte 2: array TopicPartitions has 254 elements of at least 18 bytes, 1 bytes remain",
		},
		{
			name:  "non-nullable compact string serialized as null",
			key:   "0005 0001 67 0001 6d",
			value: "0000 00 00 00",
			want:  "decode ConsumerGroupMemberMetadataValue v0: null at byte 4: non-nullable string ClientId was serialized as null",
		},
		{
			name:  "varint longer than 5 bytes",
			key:   "0003 0001 67",
			value: "0000 00000005 ffffffffff",
			want:  "decode ConsumerGroupMetadataValue v0: invalid unsigned varint at byte 6: ConsumerGroupMetadataValue tagged field count does not fit in 32 bits",
		},
		{
			name:  "trailing bytes after a value",
			key:   "0006 0001 67",
			value: "0000 00000007 00 00",
			want:  "decode ConsumerGroupTargetAssignmentMetadataValue v0: 1 trailing bytes at byte 7 of 8",
		},
		{
			name:  "GroupMetadataValue member count beyond the data",
			key:   "0002 0001 67",
			value: "0003 0000 00000000 ffff ffff ffffffffffffffff 00000002",
			want:  "decode GroupMetadataValue v3: invalid length at byte 20: array members has 2 elements of at least 24 bytes, 0 bytes remain",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value := valueBytes(t, tc.value, tc.tombstone)
			_, err := DecodeRecord(hx(t, tc.key), value)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %q\nwant %q", err, tc.want)
			}
		})
	}
}

// valueBytes is the record value written in hex: nil for a tombstone, an
// empty (not nil) slice for an empty value.
func valueBytes(t *testing.T, value string, tombstone bool) []byte {
	t.Helper()
	if tombstone {
		return nil
	}
	if b := hx(t, value); b != nil {
		return b
	}
	return []byte{}
}

func TestUnknownTypesDecodeWithoutError(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		tombstone  bool
		version    int16
	}{
		{key: "0009 0001 67", value: "0000 00", version: 0},   // ShareGroupPartitionMetadata (4.0 only)
		{key: "0011 0001 67", value: "0003 00", version: 3},   // StreamsGroupMetadata
		{key: "000f 0001 67", value: "7ffe", version: 0x7ffe}, // a value version no one defines
		{key: "0017 0001 67", value: "01", version: -1},       // a value too short for its version
		{key: "0013 0001 67 0001 6d", tombstone: true},        // StreamsGroupMemberMetadata tombstone
		{key: "7fff", value: "", version: -1},                 // empty key body, empty value
	} {
		value := valueBytes(t, tc.value, tc.tombstone)
		rec, err := DecodeRecord(hx(t, tc.key), value)
		if err != nil {
			t.Errorf("DecodeRecord(%s, %s): %v", tc.key, tc.value, err)
			continue
		}
		k, ok := rec.Key.(OtherKey)
		if !ok || k.Type.Known() {
			t.Errorf("%s decoded to %T %v, want OtherKey", tc.key, rec.Key, rec.Key)
		}
		if tc.tombstone != rec.IsTombstone() {
			t.Errorf("%s: tombstone %v, want %v", tc.key, rec.IsTombstone(), tc.tombstone)
		}
		if !tc.tombstone && rec.Value.ValueVersion() != tc.version {
			t.Errorf("%s: value version %d, want %d", tc.key, rec.Value.ValueVersion(), tc.version)
		}
		checkRoundTrip(t, rec)
	}
}

func TestEncodeErrors(t *testing.T) {
	withTag := func(tag uint32) *ConsumerGroupMetadataValue {
		v := &ConsumerGroupMetadataValue{Epoch: 1}
		v.UnknownTags.Set(tag, []byte{1})
		return v
	}
	ocWithTags := NewOffsetCommitValue(3)
	ocWithTags.UnknownTags.Set(5, []byte{1})
	for _, tc := range []struct {
		name string
		rec  Record
		want string
	}{
		{"nil key", Record{}, "encode record: nil key"},
		{"value of another type", Record{Key: GroupMetadataKey{Group: "g"}, Value: &ConsumerGroupMetadataValue{}},
			"encode GroupMetadataValue: value is *records.ConsumerGroupMetadataValue, which belongs to another record type"},
		{"version out of range", Record{Key: OffsetCommitKey{Group: "g"}, Value: NewOffsetCommitValue(5)},
			"encode OffsetCommitValue: unknown value version 5 (Kafka defines v0–v4)"},
		{"legacy type with v1", Record{Key: OffsetCommitKey{Legacy: true}, Value: NewOffsetCommitValue(1)},
			"encode LegacyOffsetCommitValue: unknown value version 1 (Kafka defines v0–v0)"},
		{"unknown tag that the schema defines", Record{Key: ConsumerGroupMetadataKey{GroupID: "g"}, Value: withTag(0)},
			"encode ConsumerGroupMetadataValue v0: ConsumerGroupMetadataValue: unknown tagged field 0 is defined by the schema; set the field instead"},
		{"tags on a non-flexible version", Record{Key: OffsetCommitKey{Group: "g"}, Value: ocWithTags},
			"encode OffsetCommitValue v3: tagged fields set, but v3 is not flexible"},
		{"string too long", Record{Key: GroupMetadataKey{Group: strings.Repeat("g", 0x8000)}},
			"encode GroupMetadataKey: string group is 32768 bytes, more than 32767"},
		{"OtherKey of a known type", Record{Key: OtherKey{Type: TypeConsumerGroupMetadata}},
			"encode OtherKey: ConsumerGroupMetadata is a known record type; use its key type"},
		{"typed value for an unknown type", Record{Key: OtherKey{Type: 11}, Value: &ConsumerGroupMetadataValue{}},
			"encode record value: *records.ConsumerGroupMetadataValue given for unknown ShareGroupMetadata; use OtherValue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := EncodeRecord(tc.rec)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}
