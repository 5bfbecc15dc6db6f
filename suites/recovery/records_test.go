package recovery

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/suites/internal/adminctx"
)

// offsetsPartitions is cluster.FastGroupSettings' offsets.topic.num.partitions.
const offsetsPartitions = 3

// TestBrokerRecordsDecode runs a classic group and a KIP-848 group (kgo's
// own consumers) on a real broker, then reads every record the broker wrote
// to __consumer_offsets and checks that coordinator/records decodes each one,
// re-encodes it to the very same bytes, puts it in the partition
// PartitionFor names, and writes the value versions the version profile says.
func TestBrokerRecordsDecode(t *testing.T) {
	for _, v := range clustertest.Versions() {
		t.Run("kafka-"+v, func(t *testing.T) {
			c := sharedCluster(t, v)
			clustertest.CreateTopic(t, c, "g-t", 6)
			produce(t, c, "g-t", 600)
			runGroup(t, c, "g-classic", "g-t", 600, false)
			runGroup(t, c, "g-consumer", "g-t", 600, true)

			recs := readOffsetsTopic(t, c)
			prof := version.MustParse(v).Profile()
			seen := map[records.Type]int{}
			ownGroups := map[string]bool{"g-classic": true, "g-consumer": true}
			for _, r := range recs {
				dec, err := records.DecodeRecord(r.Key, r.Value)
				if err != nil {
					t.Errorf("partition %d offset %d: %v (key %x value %x)", r.Partition, r.Offset, err, r.Key, r.Value)
					continue
				}
				if ownGroups[records.GroupOf(dec.Key)] {
					seen[dec.Type()]++ // the shared cluster holds other tests' groups too
				}
				k, val, err := records.EncodeRecord(dec)
				if err != nil {
					t.Errorf("partition %d offset %d: re-encode %s: %v", r.Partition, r.Offset, dec.Type(), err)
					continue
				}
				if !bytes.Equal(k, r.Key) || !bytes.Equal(val, r.Value) {
					t.Errorf("partition %d offset %d: %s re-encodes differently:\nbroker key %x value %x\nours   key %x value %x", r.Partition, r.Offset, dec.Type(), r.Key, r.Value, k, val)
				}
				if g := records.GroupOf(dec.Key); g != "" {
					if want := records.PartitionFor(g, offsetsPartitions); int(r.Partition) != want {
						t.Errorf("record of group %q in partition %d, PartitionFor says %d", g, r.Partition, want)
					}
				}
				if ocv, ok := dec.Value.(*records.OffsetCommitValue); ok && ocv.Version != prof.OffsetCommitValueVersion {
					t.Errorf("Kafka %s wrote OffsetCommitValue v%d; the version profile says v%d", v, ocv.Version, prof.OffsetCommitValueVersion)
				}
			}
			var types []string
			for ty, n := range seen {
				types = append(types, fmt.Sprintf("%s=%d", ty, n))
			}
			sort.Strings(types)
			t.Logf("Kafka %s wrote %d group records; its two groups': %v", v, len(recs), types)
			// Both kinds of group must have left their records: counted
			// only for this test's groups, so that another test's groups on
			// the shared cluster cannot stand in for them.
			for _, ty := range []records.Type{records.TypeOffsetCommit, records.TypeGroupMetadata, records.TypeConsumerGroupMetadata,
				records.TypeConsumerGroupMemberMetadata, records.TypeConsumerGroupTargetAssignmentMetadata,
				records.TypeConsumerGroupTargetAssignmentMember, records.TypeConsumerGroupCurrentMemberAssignment} {
				if seen[ty] == 0 {
					t.Errorf("Kafka %s wrote no %s record", v, ty)
				}
			}
		})
	}
}

func produce(t *testing.T, c *cluster.Cluster, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// runGroup consumes topic with two members of group (KIP-848 when
// consumerProtocol), commits, and leaves, so the broker writes the records
// of joins, rebalances, commits and leaves.
func runGroup(t *testing.T, c *cluster.Cluster, group, topic string, total int64, consumerProtocol bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	members := groupClients(t, c, group, topic, consumerProtocol)
	admin, err := c.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := admin
	// Poll until the group has consumed everything, committing as it goes.
	consumeAll(ctx, adm, members, group, topic, total, time.Now().Add(90*time.Second))
	for _, m := range members {
		m.Close() // leaves the group
	}
	if got := committedTotal(ctx, adm, group, topic); got != total {
		t.Fatalf("group %s committed %d of %d records within the bound", group, got, total)
	}
}

// groupClients builds two members of group on topic (KIP-848 when
// consumerProtocol) that read from the start and commit by hand.
func groupClients(t *testing.T, c *cluster.Cluster, group, topic string, consumerProtocol bool) []*kgo.Client {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit()}
	if consumerProtocol {
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	} else {
		opts = append(opts, kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	}
	var members []*kgo.Client
	for range 2 {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, cl)
	}
	return members
}

// consumeAll polls with members, committing as they go, until group has
// committed total records of topic or the deadline passes; it says whether
// the group got there.
func consumeAll(ctx context.Context, adm *kadm.Client, members []*kgo.Client, group, topic string, total int64, deadline time.Time) bool {
	for time.Now().Before(deadline) {
		for _, m := range members {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			m.PollFetches(pctx)
			pcancel()
			m.CommitUncommittedOffsets(ctx)
		}
		if committedTotal(ctx, adm, group, topic) == total {
			return true
		}
	}
	return false
}

// committedTotal sums the committed offsets of group on topic.
func committedTotal(ctx context.Context, adm *kadm.Client, group, topic string) int64 {
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return -1
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			sum += o.At
		}
	})
	return sum
}

type rawRecord struct {
	Partition  int32
	Offset     int64
	Key, Value []byte
}

// readOffsetsTopic reads every partition of __consumer_offsets from the
// start to its high watermark.
func readOffsetsTopic(t *testing.T, c *cluster.Cluster) []rawRecord {
	t.Helper()
	adm, ctx, done := adminctx.Open(t, c, time.Minute)
	defer done()
	ends, err := adm.ListEndOffsets(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	parts := map[string]map[int32]kgo.Offset{"__consumer_offsets": {}}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			parts["__consumer_offsets"][o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumePartitions(parts))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []rawRecord
	got := map[int32]int64{}
	for {
		done := true
		for p, end := range want {
			if got[p] < end {
				done = false
			}
		}
		if done {
			break
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read __consumer_offsets: reached %v of %v", got, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, rawRecord{r.Partition, r.Offset, r.Key, r.Value})
			got[r.Partition] = r.Offset + 1
		})
	}
	if len(out) == 0 {
		t.Fatal("__consumer_offsets is empty")
	}
	return out
}
