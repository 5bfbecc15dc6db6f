package consumergroup

import (
	"encoding/binary"
	"slices"
	"unicode/utf16"

	"github.com/zeebo/xxh3"
)

// The group metadata hash (KIP-1101, written from 4.1 where
// version.Profile.MetadataHash): ConsumerGroupMetadataValue.MetadataHash
// summarises the subscribed topics so a coordinator notices a created,
// deleted, grown or re-racked topic without storing the topics. Kafka
// computes it in org.apache.kafka.coordinator.group.Utils with hash4j's
// streaming XXH3-64 (seed 0); this file feeds XXH3 the very bytes hash4j
// is fed, so the records are equal to a broker's bit for bit. hash4j writes
// every int and long little-endian and a String as its UTF-16 code units
// (little-endian) followed by its length in code units as an int
// (AbstractHashStream.putString). testdata/metadatahash holds the values
// Kafka's own jar computes for the same inputs.

// topicHashMagic is Utils.TOPIC_HASH_MAGIC_BYTE, the layout version.
const topicHashMagic = 0x00

// PartitionRacks is an optional extension of TopicMetadata for hosts whose
// brokers have racks (broker.rack). It returns the racks of the replicas of
// one partition as the metadata image has them
// (KRaftCoordinatorMetadataImage.partitionRacks): the rack of each
// replica's registered broker, in replica order, duplicates kept, replicas
// on brokers without a rack or not registered left out. A host without it
// has no racks, like a cluster whose brokers set none.
type PartitionRacks interface {
	PartitionRacks(topic string, partition int) []string
}

// TopicHash is Utils.computeTopicHash for a topic that exists: the magic
// byte, the topic id (most then least significant long), the name, the
// partition count, then per partition its index and its racks sorted as
// Java sorts Strings, each as its length and the string. racks may be nil.
func TopicHash(id [16]byte, name string, partitions int, racks func(partition int) []string) int64 {
	b := make([]byte, 0, 64+8*partitions)
	b = append(b, topicHashMagic)
	b = binary.LittleEndian.AppendUint64(b, binary.BigEndian.Uint64(id[:8]))
	b = binary.LittleEndian.AppendUint64(b, binary.BigEndian.Uint64(id[8:]))
	b = appendJavaString(b, name)
	b = binary.LittleEndian.AppendUint32(b, uint32(partitions))
	for p := range partitions {
		b = binary.LittleEndian.AppendUint32(b, uint32(p))
		if racks == nil {
			continue
		}
		rs := slices.Clone(racks(p))
		slices.SortFunc(rs, compareJavaStrings)
		for _, r := range rs {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(utf16.Encode([]rune(r)))))
			b = appendJavaString(b, r)
		}
	}
	return int64(xxh3.Hash(b))
}

// GroupHash is Utils.computeGroupHash: the topic hashes as longs in topic
// name order, hashed again; 0 for no topics.
func GroupHash(topicHashes map[string]int64) int64 {
	if len(topicHashes) == 0 {
		return 0
	}
	names := make([]string, 0, len(topicHashes))
	for n := range topicHashes {
		names = append(names, n)
	}
	slices.SortFunc(names, compareJavaStrings)
	b := make([]byte, 0, 8*len(names))
	for _, n := range names {
		b = binary.LittleEndian.AppendUint64(b, uint64(topicHashes[n]))
	}
	return int64(xxh3.Hash(b))
}

// metadataHash is ModernGroup.computeMetadataHash over the given subscribed
// topic names: the group hash of the topics the metadata holds (a missing
// topic is left out, so none at all hash to 0).
func metadataHash(topics TopicMetadata, names []string) int64 {
	return metadataHashCached(topics, names, nil)
}

// topicHashKey is what the hash of a topic without racks is a function of.
type topicHashKey struct {
	id         [16]byte
	name       string
	partitions int
}

// MetadataHash is ModernGroup.computeMetadataHash of the topics named
// that exist in topics (no cache): what a share group writes in
// ShareGroupMetadataValue.MetadataHash, as a consumer group does.
func MetadataHash(topics TopicMetadata, names []string) int64 {
	return metadataHashCached(topics, names, nil)
}

// metadataHash is metadataHash with the Manager's cache of topic hashes,
// as GMM keeps its topicHashCache: a heartbeat then hashes no partition
// list. Only hashes of topics without racks are cached (their hash is a
// function of the id, name and partition count alone).
func (m *Manager) metadataHash(topics TopicMetadata, names []string) int64 {
	if m.topicHashes == nil || len(m.topicHashes) > 4096 {
		m.topicHashes = map[topicHashKey]int64{}
	}
	return metadataHashCached(topics, names, m.topicHashes)
}

func metadataHashCached(topics TopicMetadata, names []string, cache map[topicHashKey]int64) int64 {
	hashes := make(map[string]int64, len(names))
	racker, _ := topics.(PartitionRacks)
	for _, n := range names {
		id, parts, ok := topics.TopicByName(n)
		if !ok {
			continue
		}
		if racker != nil {
			hashes[n] = TopicHash(id, n, parts, func(p int) []string { return racker.PartitionRacks(n, p) })
			continue
		}
		k := topicHashKey{id, n, parts}
		h, ok := cache[k]
		if !ok {
			h = TopicHash(id, n, parts, nil)
			if cache != nil {
				cache[k] = h
			}
		}
		hashes[n] = h
	}
	return GroupHash(hashes)
}

// appendJavaString is hash4j's putString: the UTF-16 code units of s,
// little-endian, then their count as an int.
func appendJavaString(b []byte, s string) []byte {
	units := utf16.Encode([]rune(s))
	for _, u := range units {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return binary.LittleEndian.AppendUint32(b, uint32(len(units)))
}

// compareJavaStrings is String.compareTo: UTF-16 code unit order, which
// differs from Go's byte order once a string leaves the BMP.
func compareJavaStrings(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}
