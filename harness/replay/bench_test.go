package replay_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/replay"
)

// genPartition builds a __consumer_offsets partition of n records shaped
// as Kafka p.Version writes them, in the shape BenchmarkOffsetsLoad1M
// (harness/cluster) writes on a real broker: 4 classic groups committing
// offsets of a topic of 100 partitions, 100 partitions a request, with a
// GroupMetadata record of every group (2 members, a new generation) before
// every 100 requests.
func genPartition(tb testing.TB, p version.Profile, n int) []history.Record {
	tb.Helper()
	const groups, partitions = 4, 100
	out := make([]history.Record, 0, n)
	add := func(r records.Record) {
		shaped, err := records.AsWrittenBy(p, r)
		if err != nil {
			tb.Fatal(err)
		}
		k, v, err := records.EncodeRecord(shaped)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, history.Record{Partition: 0, Offset: int64(len(out)), KeyType: int16(r.Type()), RawKey: k, RawValue: v})
	}
	gen := int32(0)
	for round := int64(0); len(out) < n; round++ {
		if round%100 == 0 {
			gen++
			for g := range groups {
				add(groupMetadata(fmt.Sprintf("bench-%d", g), gen))
			}
		}
		g := fmt.Sprintf("bench-%d", round%groups)
		for part := int32(0); part < partitions && len(out) < n; part++ {
			v := records.NewOffsetCommitValue(p.OffsetCommitValueVersion)
			v.Offset = round
			v.CommitTimestamp = 1_700_000_000_000 + round
			add(records.Record{Key: records.OffsetCommitKey{Group: g, Topic: "bench", Partition: part}, Value: v})
		}
	}
	return out
}

// groupMetadata is a Stable classic group of two members that split the
// topic's 100 partitions, as a kgo consumer group writes it.
func groupMetadata(group string, generation int32) records.Record {
	v := &records.GroupMetadataValue{}
	v.ProtocolType = "consumer"
	proto, leader := "cooperative-sticky", "m-0"
	v.Protocol, v.Leader = &proto, &leader
	v.Generation = generation
	v.CurrentStateTimestamp = 1_700_000_000_000
	for i := range 2 {
		a := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic = "bench"
		for p := int32(i * 50); p < int32(i*50+50); p++ {
			at.Partitions = append(at.Partitions, p)
		}
		a.Topics = append(a.Topics, at)
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.ClientID, m.ClientHost = fmt.Sprintf("m-%d", i), "kgo", "/127.0.0.1"
		m.SessionTimeoutMillis, m.RebalanceTimeoutMillis = 45000, 60000
		m.Subscription = []byte{0, 0, 0, 0, 0, 1, 0, 5, 'b', 'e', 'n', 'c', 'h', 0xff, 0xff, 0xff, 0xff}
		m.Assignment = a.AppendTo(nil)
		v.Members = append(v.Members, m)
	}
	return records.Record{Key: records.GroupMetadataKey{Group: group}, Value: v}
}

// BenchmarkLoad replays a generated __consumer_offsets partition of
// 1,000,000 records (decode and replay of every record, then the end of
// the load) through the reference coordinator: "partition" is the broker's
// whole load (Load), "one-group" what `groupquake replay` and
// RecoveredStateMatchesLog do (State: every record decoded, one group's
// replayed). The broker's own load time of a partition of the same shape is
// BenchmarkOffsetsLoad1M in harness/cluster. Run it with
//
//	go test -run '^$' -bench Load -benchtime 3x ./harness/replay/
func BenchmarkLoad(b *testing.B) {
	p := version.Default.Profile()
	recs := genPartition(b, p, 1_000_000)
	var size int64
	for _, r := range recs {
		size += int64(len(r.RawKey) + len(r.RawValue))
	}
	b.Run("partition", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			c, err := replay.Load(p, recs)
			if err != nil {
				b.Fatal(err)
			}
			if st := c.State(); len(st.Classic) != 4 || len(st.Offsets) != 400 {
				b.Fatalf("replayed %d classic groups and %d offsets, want 4 and 400", len(st.Classic), len(st.Offsets))
			}
		}
		reportRate(b, len(recs))
		reportLive(b, func() any {
			c, err := replay.Load(p, recs)
			if err != nil {
				b.Fatal(err)
			}
			return c
		})
	})
	b.Run("one-group", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			st, err := replay.State(p, "bench-1", nil, recs)
			if err != nil {
				b.Fatal(err)
			}
			if len(st.Offsets) != 100 || len(st.Members) != 2 {
				b.Fatalf("replayed %d offsets and %d members of bench-1, want 100 and 2", len(st.Offsets), len(st.Members))
			}
		}
		reportRate(b, len(recs))
	})
}

// reportRate reports records replayed per second over the benchmark's
// iterations.
func reportRate(b *testing.B, n int) {
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(n), "ns/record")
}

// reportLive reports the heap that what build returns keeps alive, after a
// collection: the memory a loaded partition holds beside its records.
func reportLive(b *testing.B, build func() any) {
	b.StopTimer()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "MB-live")
}
