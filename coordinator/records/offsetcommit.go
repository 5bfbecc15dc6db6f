package records

import "encoding/binary"

// The offset commits of a partition's load, nearly all of its records, are
// read here in straight lines when they are laid out as Kafka writes them;
// anything else (a null or long string, an unknown tag, a version Kafka
// does not read, bytes missing or left over) is left to the reader, which
// decodes it or words the error. Both give the same record
// (TestDecodeOffsetCommitSameAsDecode).

// splitOffsetCommitKey returns the group and topic bytes and the partition
// of the key of an offset commit (type 0 or 1, checked by the caller):
// int16 type, two strings of int16 length, int32 partition, nothing after.
func splitOffsetCommitKey(key []byte) (group, topic []byte, partition int32, ok bool) {
	b := key[2:]
	if group, b, ok = cutString16(b); !ok {
		return nil, nil, 0, false
	}
	if topic, b, ok = cutString16(b); !ok || len(b) != 4 {
		return nil, nil, 0, false
	}
	return group, topic, int32(binary.BigEndian.Uint32(b)), true
}

// cutString16 cuts a non-null string of int16 length off b.
func cutString16(b []byte) (s, rest []byte, ok bool) {
	if len(b) < 2 {
		return nil, nil, false
	}
	n := int(int16(binary.BigEndian.Uint16(b)))
	if n < 0 || len(b)-2 < n {
		return nil, nil, false
	}
	return b[2 : 2+n], b[2+n:], true
}

// readOffsetCommitValueFast reads the value of an offset commit of type t
// into v as readOffsetCommitValue does, if it is laid out as Kafka writes
// it: v0–v3, or v4 with metadata shorter than 127 bytes and no tagged field
// but the topic id. It reports whether it did; if not, v is untouched.
func readOffsetCommitValueFast(t Type, value []byte, strings *interner, v *OffsetCommitValue) bool {
	if len(value) < 2 {
		return false
	}
	ver := int16(binary.BigEndian.Uint16(value))
	if ver < 0 || ver > 4 || (t == TypeLegacyOffsetCommit && ver != 0) {
		return false
	}
	b := value[2:]
	// offset, leaderEpoch (v3+), metadata's length (compact from v4),
	// commitTimestamp.
	fixed := [...]int{8 + 2 + 8, 8 + 2 + 8, 8 + 2 + 8, 8 + 4 + 2 + 8, 8 + 4 + 1 + 8}[ver]
	if len(b) < fixed {
		return false
	}
	offset, epoch := int64(binary.BigEndian.Uint64(b)), int32(-1)
	b = b[8:]
	if ver >= 3 {
		epoch = int32(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	var meta []byte
	if ver == 4 {
		// A compact string: uvarint length+1, in one byte below 128.
		n := int(b[0]) - 1
		if n < 0 || n >= 0x7f || len(b)-1 < n+8 {
			return false
		}
		meta, b = b[1:1+n], b[1+n:]
	} else {
		var ok bool
		if meta, b, ok = cutString16(b); !ok || len(b) < 8 {
			return false
		}
	}
	commit, expire := int64(binary.BigEndian.Uint64(b)), int64(-1)
	b = b[8:]
	var topicID []byte
	switch {
	case ver == 1:
		if len(b) != 8 {
			return false
		}
		expire = int64(binary.BigEndian.Uint64(b))
	case ver == 4:
		// Tagged fields: none, or tag 0 (topicId) of 16 bytes.
		switch {
		case len(b) == 1 && b[0] == 0:
		case len(b) == 1+1+1+16 && b[0] == 1 && b[1] == 0 && b[2] == 16:
			topicID = b[3:]
		default:
			return false
		}
	case len(b) != 0:
		return false
	}
	v.reset(ver)
	v.Offset, v.LeaderEpoch, v.CommitTimestamp, v.ExpireTimestamp = offset, epoch, commit, expire
	v.Metadata = strings.get(meta)
	copy(v.TopicID[:], topicID)
	return true
}
