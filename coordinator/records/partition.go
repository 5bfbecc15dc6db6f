package records

import "unicode/utf16"

// PartitionFor returns the __consumer_offsets partition that holds groupID's
// records when the topic has numPartitions partitions (the broker's
// offsets.topic.num.partitions): Utils.abs(groupId.hashCode()) % n, as in
// GroupCoordinatorService.partitionFor (4.0–4.4).
//
// groupId.hashCode() is Java's String.hashCode, s[0]*31^(n-1) + … + s[n-1]
// over UTF-16 code units with int32 wrap-around; Utils.abs maps
// Integer.MIN_VALUE to 0 (Math.abs would leave it negative). A group id that
// is not valid UTF-8 hashes its replacement characters (U+FFFD per invalid
// byte); Kafka decodes it from the wire the same way only when each invalid
// sequence is one byte long.
//
// It panics if numPartitions is not positive, like the division it stands
// for.
func PartitionFor(groupID string, numPartitions int) int {
	if numPartitions <= 0 {
		panic("records.PartitionFor: numPartitions must be positive")
	}
	return int(int64(javaAbs(javaStringHashCode(groupID))) % int64(numPartitions))
}

// javaStringHashCode is java.lang.String.hashCode.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + int32(hi)
			h = 31*h + int32(lo)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// javaAbs is org.apache.kafka.common.utils.Utils.abs.
func javaAbs(n int32) int32 {
	if n == -1<<31 {
		return 0
	}
	if n < 0 {
		return -n
	}
	return n
}
