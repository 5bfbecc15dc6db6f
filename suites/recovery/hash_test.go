package recovery

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/suites/internal/adminctx"
)

// TestContinueFromBrokerLog runs a KIP-848 group (kgo's consumers) on a real
// broker, reads the group's __consumer_offsets records and checks two
// things a coordinator taking the group over depends on:
//
//   - every ConsumerGroupMetadata record carries the metadata hash the
//     reference coordinator computes for the same topic (KIP-1101, where
//     the version profile says MetadataHash; 0 and a PartitionMetadata
//     record before);
//   - a reference coordinator that replays the records and then serves the
//     next heartbeat of a live member keeps the group epoch: it sees the
//     subscribed topics as unchanged, as the broker would.
func TestContinueFromBrokerLog(t *testing.T) {
	for _, v := range clustertest.Versions() {
		t.Run("kafka-"+v, func(t *testing.T) {
			prof := version.MustParse(v).Profile()
			c := sharedCluster(t, v)
			const topic, group = "h-t", "h-consumer"
			clustertest.CreateTopic(t, c, topic, 6)
			produce(t, c, topic, 300)
			startMembers(t, c, group, topic, 300, true)
			topicID := topicIDOf(t, c, topic)
			topics := consumergroup.Topics{{Name: topic, ID: topicID, Partitions: 6}}
			want := consumergroup.GroupHash(map[string]int64{topic: consumergroup.TopicHash(topicID, topic, 6, nil)})

			var recs []records.Record
			hashed, partitionMeta := 0, 0
			for _, r := range readOffsetsTopic(t, c) {
				dec, err := records.DecodeRecord(r.Key, r.Value)
				if err != nil {
					t.Fatalf("partition %d offset %d: %v", r.Partition, r.Offset, err)
				}
				if records.GroupOf(dec.Key) != group {
					continue
				}
				recs = append(recs, dec)
				switch val := dec.Value.(type) {
				case *records.ConsumerGroupPartitionMetadataValue:
					partitionMeta++
				case *records.ConsumerGroupMetadataValue:
					switch {
					case !prof.MetadataHash && val.MetadataHash != 0:
						t.Errorf("Kafka %s wrote metadata hash %d; the profile says it has none", v, val.MetadataHash)
					case val.MetadataHash == 0:
					case val.MetadataHash != want:
						t.Errorf("Kafka %s wrote metadata hash %d at epoch %d; the reference coordinator computes %d for topic %s (id %x, 6 partitions, no racks)",
							v, val.MetadataHash, val.Epoch, want, topic, topicID)
					default:
						hashed++
					}
				}
			}
			if prof.MetadataHash && hashed == 0 {
				t.Errorf("Kafka %s wrote no ConsumerGroupMetadata record with a metadata hash", v)
			}
			if prof.WritesPartitionMetadata != (partitionMeta > 0) {
				t.Errorf("Kafka %s wrote %d ConsumerGroupPartitionMetadata values; the profile says WritesPartitionMetadata=%v", v, partitionMeta, prof.WritesPartitionMetadata)
			}
			t.Logf("Kafka %s: %d group records, %d with the metadata hash %d", v, len(recs), hashed, want)

			m, err := consumergroup.New(prof, consumergroup.Config{})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if ty := r.Type(); ty == records.TypeOffsetCommit || ty == records.TypeGroupMetadata {
					continue // the classic half's and the offsets' records
				}
				if err := m.Replay(r); err != nil {
					t.Fatalf("replay %s: %v", r.Type(), err)
				}
			}
			now := time.Now()
			m.Loaded(now)
			before := groupSnapshot(t, m, group)
			if len(before.Members) == 0 {
				t.Fatalf("the replayed group has no members: %s", before.ID)
			}
			mb := before.Members[0]
			owned := map[consumergroup.TopicID][]int32{}
			for _, pe := range mb.Assigned {
				owned[pe.Topic] = append(owned[pe.Topic], pe.Partition)
			}
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.MemberEpoch = group, mb.ID, mb.Epoch
			req.RebalanceTimeoutMillis = mb.RebalanceTimeoutMs
			req.SubscribedTopicNames = slices.Clone(mb.Subscribed)
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			for id, ps := range owned {
				slices.Sort(ps)
				req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: ps})
			}
			resp, out := m.Heartbeat(now, consumergroup.RequestContext{ClientID: mb.ClientID, ClientHost: mb.ClientHost}, req, topics)
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				t.Fatalf("heartbeat of member %s at epoch %d after the replay: %v", mb.ID, mb.Epoch, err)
			}
			after := groupSnapshot(t, m, group)
			if after.Epoch != before.Epoch {
				var types []records.Type
				for _, r := range out {
					types = append(types, r.Type())
				}
				t.Errorf("group epoch %d → %d on the first heartbeat after replaying Kafka %s's log (records %v): the reference coordinator sees the topics as changed",
					before.Epoch, after.Epoch, v, types)
			}
			if resp.MemberEpoch != mb.Epoch {
				t.Errorf("member %s epoch %d → %d on the first heartbeat after the replay", mb.ID, mb.Epoch, resp.MemberEpoch)
			}
		})
	}
}

func groupSnapshot(t *testing.T, m *consumergroup.Manager, group string) consumergroup.GroupSnapshot {
	t.Helper()
	for _, g := range m.State().Groups {
		if g.ID == group {
			return g
		}
	}
	t.Fatalf("the replayed records hold no consumer group %s", group)
	return consumergroup.GroupSnapshot{}
}

func topicIDOf(t *testing.T, c *cluster.Cluster, topic string) [16]byte {
	t.Helper()
	adm, ctx, done := adminctx.Open(t, c, settleBound)
	defer done()
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		t.Fatalf("topic %s: %v", topic, d.Err)
	}
	return d.ID
}
