package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/history"
)

func encode(t *testing.T, r records.Record) (key, value []byte) {
	t.Helper()
	k, v, err := records.EncodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	return k, v
}

// HistoryRecord keeps the broker's bytes, decodes key and value with every
// digit of an int64 (json.Number, not float64), finds the group under both
// spellings Kafka's keys use ("group" for classic records, "groupId" for
// consumer-group ones) and refuses bytes it cannot decode.
func TestHistoryRecord(t *testing.T) {
	const big = int64(1)<<53 + 1 // not exact as a float64
	v := records.NewOffsetCommitValue(3)
	v.Offset = big
	k, val := encode(t, records.Record{Key: records.OffsetCommitKey{Group: "g", Topic: "t", Partition: 3}, Value: v})

	hr, mine, err := HistoryRecord("g", 7, 42, k, val)
	if err != nil || !mine {
		t.Fatalf("HistoryRecord(g) = mine %v, %v", mine, err)
	}
	if hr.Partition != 7 || hr.Offset != 42 || hr.KeyType != int16(records.TypeOffsetCommit) || hr.ValueVersion != 3 {
		t.Errorf("partition %d offset %d key type %d value version %d, want 7 42 %d 3", hr.Partition, hr.Offset, hr.KeyType, hr.ValueVersion, records.TypeOffsetCommit)
	}
	if !bytes.Equal(hr.RawKey, k) || !bytes.Equal(hr.RawValue, val) {
		t.Errorf("raw bytes changed")
	}
	if got, ok := hr.Value["Offset"].(json.Number); !ok || got.String() != "9007199254740993" {
		t.Errorf("offset decoded as %#v, want json.Number 9007199254740993", hr.Value["Offset"])
	}
	if p, ok := hr.Key["Partition"].(json.Number); !ok || p.String() != "3" {
		t.Errorf("key partition %#v, want 3", hr.Key["Partition"])
	}
	if _, mine, err := HistoryRecord("other", 7, 42, k, val); err != nil || mine {
		t.Errorf("HistoryRecord(other) = mine %v, %v; want not mine", mine, err)
	}

	// A consumer group's record names the group as groupId; a tombstone
	// has no value.
	ck, _ := encode(t, records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: "cg"}})
	hr, mine, err = HistoryRecord("cg", 0, 0, ck, nil)
	if err != nil || !mine {
		t.Fatalf("consumer-group tombstone: mine %v, %v", mine, err)
	}
	if hr.Value != nil || hr.ValueVersion != 0 || hr.KeyType != int16(records.TypeConsumerGroupMetadata) {
		t.Errorf("tombstone decoded with value %v version %d type %d", hr.Value, hr.ValueVersion, hr.KeyType)
	}

	if _, _, err := HistoryRecord("g", 0, 0, []byte{0, 1, 0, 5, 'g'}, nil); err == nil { // a group name cut short
		t.Errorf("a truncated key was accepted")
	}
}

// RecordTopicIDs lists the topic ids of the three consumer-group values
// that name topics, pending revocations included, and none for others.
func TestRecordTopicIDs(t *testing.T) {
	a, b, c := [16]byte{1}, [16]byte{2}, [16]byte{3}
	cases := []struct {
		name string
		rec  records.Record
		want [][16]byte
	}{
		{"partition metadata", records.Record{Value: &records.ConsumerGroupPartitionMetadataValue{Topics: []records.PartitionMetadataTopic{{TopicID: a}, {TopicID: b}}}}, [][16]byte{a, b}},
		{"target assignment", records.Record{Value: &records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []records.TargetAssignmentTopic{{TopicID: c}}}}, [][16]byte{c}},
		{"current assignment", records.Record{Value: &records.ConsumerGroupCurrentMemberAssignmentValue{
			AssignedPartitions:          []records.CurrentAssignmentTopic{{TopicID: a}},
			PartitionsPendingRevocation: []records.CurrentAssignmentTopic{{TopicID: b}},
		}}, [][16]byte{a, b}},
		{"offset commit", records.Record{Value: records.NewOffsetCommitValue(3)}, nil},
		{"tombstone", records.Record{}, nil},
	}
	for _, tc := range cases {
		if got := RecordTopicIDs(tc.rec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FormatTopicID is Kafka's Uuid.toString: URL-safe base64 of the 16 bytes,
// unpadded (Uuid.ZERO_UUID prints as 22 A's).
func TestFormatTopicID(t *testing.T) {
	if got := FormatTopicID([16]byte{}); got != "AAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("zero id: %s", got)
	}
	id := [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	if got := FormatTopicID(id); got != "AAECAwQFBgcICQoLDA0ODw" {
		t.Errorf("0..15: %s", got)
	}
	if got := FormatTopicID([16]byte{0xfb, 0xff}); got[:3] != "-_8" {
		t.Errorf("URL-safe alphabet not used: %s", got)
	}
}

// The Reader against the embedded cluster: a classic (simple) group's
// commits and a consumer group's member, read through every method; the
// describe falls back to the other API when the protocol guess is wrong.
func TestReaderOnEmbeddedCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	emb, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Version: "4.4.0", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close(context.Background())
	cl, err := kgo.NewClient(kgo.SeedBrokers(emb.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}

	// A simple group: commits without members.
	var offs kadm.Offsets
	offs.AddOffset("t", 0, 5, -1)
	offs.AddOffset("t", 1, 7, -1)
	if err := adm.CommitAllOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	r := &Reader{Admin: adm, Bootstrap: emb.Bootstrap(), Group: "g", Protocol: history.ProtocolClassic, Topics: []string{"t"}}
	got, err := r.Committed(ctx)
	want := []history.OffsetAt{{Topic: "t", Partition: 0, Offset: 5}, {Topic: "t", Partition: 1, Offset: 7}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Committed = %v, %v; want %v", got, err, want)
	}
	recs, part, err := r.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := int32(records.PartitionFor("g", 3)); part != want {
		t.Errorf("read __consumer_offsets-%d, want %d (the embedded cluster has 3 partitions)", part, want)
	}
	var commits []string
	for _, hr := range recs {
		if g, _ := hr.KeyString("group"); g != "g" {
			t.Errorf("record of group %q kept for g", g)
		}
		if hr.KeyType == int16(records.TypeOffsetCommit) {
			commits = append(commits, string(hr.Key["Topic"].(string))+"/"+hr.Key["Partition"].(json.Number).String()+"="+hr.Value["Offset"].(json.Number).String())
		}
	}
	slices.Sort(commits)
	if !slices.Equal(commits, []string{"t/0=5", "t/1=7"}) {
		t.Errorf("offset commit records %v, want t/0=5 t/1=7", commits)
	}

	// A consumer group with one member, described with the wrong guess
	// first.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "cg", "m1", 0
	hb.RebalanceTimeoutMillis = 30000
	hb.SubscribedTopicNames = []string{"t"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := hb.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("ConsumerGroupHeartbeat: %v %+v", err, resp)
	}
	cr := &Reader{Admin: adm, Bootstrap: emb.Bootstrap(), Group: "cg", Protocol: history.ProtocolClassic}
	d, err := cr.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Protocol != history.ProtocolConsumer || len(d.Members) != 1 || d.Members[0].MemberID != "m1" || d.Members[0].MemberType != history.ProtocolConsumer || d.Members[0].MemberEpoch != resp.MemberEpoch {
		t.Errorf("describe of cg: %+v", d)
	}
	// The describe names the node that answered it: the coordinator FindCoordinator names.
	fc := adm.FindGroupCoordinators(ctx, "cg")
	if c, ok := fc["cg"]; !ok || c.Err != nil || d.Coordinator == nil || *d.Coordinator != c.NodeID {
		t.Errorf("describe of cg names coordinator %v; FindCoordinator answered %+v", d.Coordinator, fc)
	}
	if n := len(d.Members[0].TargetAssignment); n != 2 {
		t.Errorf("target assignment %v, want both partitions of t", d.Members[0].TargetAssignment)
	}
	crecs, _, err := cr.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := cr.TopicIDs(ctx, nil, crecs)
	if err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if ids["t"] != FormatTopicID(td["t"].ID) || len(ids) != 1 {
		t.Errorf("topic ids named by cg's records: %v, want t=%s", ids, FormatTopicID(td["t"].ID))
	}

	// A group that does not exist: both describe APIs fail, and the error
	// names both.
	nr := &Reader{Admin: adm, Bootstrap: emb.Bootstrap(), Group: "nobody"}
	if _, err := nr.Describe(ctx); err == nil {
		t.Errorf("describe of a group that does not exist succeeded")
	}
}
