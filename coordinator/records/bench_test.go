package records

import (
	"fmt"
	"testing"
)

// BenchmarkDecodeOffsetCommit decodes an offset commit as Kafka 4.0 (v3)
// and 4.1+ (v4, with the topic id) write it: by Decoder.Decode, a Record
// of a boxed key and a new value, and by Decoder.DecodeOffsetCommit into a
// reused value, which a partition's load (harness/replay) uses.
func BenchmarkDecodeOffsetCommit(b *testing.B) {
	for _, ver := range []int16{3, 4} {
		v := NewOffsetCommitValue(ver)
		v.Offset, v.CommitTimestamp, v.LeaderEpoch = 1234, 1_700_000_000_000, 5
		if ver >= 4 {
			v.TopicID = [16]byte{1, 2, 3}
		}
		key, value, err := EncodeRecord(Record{Key: OffsetCommitKey{Group: "bench-1", Topic: "bench", Partition: 42}, Value: v})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("v%d/Decode", ver), func(b *testing.B) {
			d := NewDecoder()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Decode(key, value); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("v%d/DecodeOffsetCommit", ver), func(b *testing.B) {
			d := NewDecoder()
			var into OffsetCommitValue
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := d.DecodeOffsetCommit(key, value, &into); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
