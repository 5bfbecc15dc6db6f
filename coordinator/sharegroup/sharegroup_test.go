package sharegroup

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// kafkaRun is a file of testdata/: the records a real broker wrote in a
// share run (a churn run of groupquake's and kgo's share members on two
// partitions, read after every member closed), and what it described.
type kafkaRun struct {
	Kafka    string            `json:"kafka"`
	Group    string            `json:"group"`
	TopicIDs map[string]string `json:"topic_ids"`
	Starts   []struct {
		Topic       string `json:"topic"`
		Partition   int32  `json:"partition"`
		StartOffset int64  `json:"start_offset"`
	} `json:"starts"`
	Describe struct {
		GroupEpoch      int32 `json:"group_epoch"`
		AssignmentEpoch int32 `json:"assignment_epoch"`
		Members         []any `json:"members"`
	} `json:"describe"`
	GroupRecords []rawRecord `json:"group_records"`
	// StateRecords are, per share-partition, its records of
	// __share_group_state from its last snapshot on.
	StateRecords []rawRecord `json:"state_records"`
}

type rawRecord struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       []byte `json:"key"`
	Value     []byte `json:"value"`
}

func kafkaRuns(t *testing.T) map[string]kafkaRun {
	t.Helper()
	files, err := filepath.Glob("testdata/kafka-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/kafka-*.json: %v", err)
	}
	out := map[string]kafkaRun{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r kafkaRun
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = r
	}
	return out
}

// TestKafkaRecordsRoundTrip: every share-group record of __consumer_offsets
// and every record of __share_group_state a real broker wrote decodes, and
// encodes back to the broker's bytes.
func TestKafkaRecordsRoundTrip(t *testing.T) {
	for name, run := range kafkaRuns(t) {
		types := map[int16]int{}
		for _, r := range run.GroupRecords {
			gr, err := DecodeGroupRecord(r.Key, r.Value)
			if err != nil {
				t.Fatalf("%s: group record at offset %d: %v", name, r.Offset, err)
			}
			types[gr.Type]++
			k, v, err := EncodeGroupRecord(gr)
			if err != nil || !bytes.Equal(k, r.Key) || !bytes.Equal(v, r.Value) {
				t.Errorf("%s: group record type %d at offset %d encodes to %x / %x, the broker wrote %x / %x (%v)", name, gr.Type, r.Offset, k, v, r.Key, r.Value, err)
			}
		}
		for _, r := range run.StateRecords {
			sr, err := DecodeStateRecord(r.Key, r.Value)
			if err != nil {
				t.Fatalf("%s: state record at offset %d: %v", name, r.Offset, err)
			}
			types[100+sr.Type]++
			k, v, err := EncodeStateRecord(sr)
			if err != nil || !bytes.Equal(k, r.Key) || !bytes.Equal(v, r.Value) {
				t.Errorf("%s: state record type %d at offset %d encodes to %x / %x, the broker wrote %x / %x (%v)", name, sr.Type, r.Offset, k, v, r.Key, r.Value, err)
			}
		}
		for _, want := range []int16{TypeMemberMetadata, TypeGroupMetadata, TypeTargetAssignmentMetadata, TypeTargetAssignmentMember, TypeCurrentMemberAssignment, TypeStatePartitionMetadata, 100 + TypeShareSnapshot, 100 + TypeShareUpdate} {
			if types[want] == 0 {
				t.Errorf("%s has no record of type %d (100+: __share_group_state): the round trip does not cover it (%v)", name, want, types)
			}
		}
	}
}

// TestKafkaReplayMatchesDescribe: replaying what a real broker wrote gives
// the state it described once every member had left: each share-partition's
// start offset (DescribeShareGroupOffsets), the group's epoch and
// assignment epoch and no member (ShareGroupDescribe), and every
// share-partition with state initialized.
func TestKafkaReplayMatchesDescribe(t *testing.T) {
	for name, run := range kafkaRuns(t) {
		gs := Groups{}
		for _, r := range run.GroupRecords {
			gr, _ := DecodeGroupRecord(r.Key, r.Value)
			gs.Replay(gr)
		}
		g := gs[run.Group]
		if g == nil || g.Epoch != run.Describe.GroupEpoch || g.AssignmentEpoch != run.Describe.AssignmentEpoch || len(g.Members) != len(run.Describe.Members) {
			t.Errorf("%s: replayed group %+v, described epoch %d, assignment epoch %d, %d members", name, g, run.Describe.GroupEpoch, run.Describe.AssignmentEpoch, len(run.Describe.Members))
			continue
		}
		st := States{}
		for _, r := range run.StateRecords {
			sr, _ := DecodeStateRecord(r.Key, r.Value)
			st.Replay(sr)
		}
		for _, s := range run.Starts {
			id, _ := base64.RawURLEncoding.DecodeString(run.TopicIDs[s.Topic])
			var k StateKey
			k.GroupID, k.Partition = run.Group, s.Partition
			copy(k.TopicID[:], id)
			ps := st[k]
			if ps == nil || ps.StartOffset != s.StartOffset {
				t.Errorf("%s: %s-%d replays to %+v, described start offset %d", name, s.Topic, s.Partition, ps, s.StartOffset)
				continue
			}
			if !contains(g.Initialized[k.TopicID], k.Partition) {
				t.Errorf("%s: %s-%d has state but is not initialized in the group's records (%v)", name, s.Topic, s.Partition, g.Initialized)
			}
		}
	}
}

func contains(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// TestCombine: on each offset the batch with the highest delivery count
// wins, then the highest state; ranges below the start offset are dropped
// or clipped; equal neighbours coalesce (PersisterStateBatchCombiner).
func TestCombine(t *testing.T) {
	b := func(f, l int64, s int8, c int16) StateBatch { return StateBatch{f, l, s, c} }
	for _, tc := range []struct {
		name        string
		soFar, next []StateBatch
		start       int64
		want        []StateBatch
	}{
		{"disjoint, coalesced", []StateBatch{b(0, 4, StateAvailable, 1)}, []StateBatch{b(5, 9, StateAvailable, 1)}, 0, []StateBatch{b(0, 9, StateAvailable, 1)}},
		{"higher count wins", []StateBatch{b(0, 9, StateAvailable, 1)}, []StateBatch{b(3, 5, StateAvailable, 2)}, 0,
			[]StateBatch{b(0, 2, StateAvailable, 1), b(3, 5, StateAvailable, 2), b(6, 9, StateAvailable, 1)}},
		{"same count, higher state wins", []StateBatch{b(0, 9, StateAvailable, 2)}, []StateBatch{b(4, 4, StateAcknowledged, 2)}, 0,
			[]StateBatch{b(0, 3, StateAvailable, 2), b(4, 4, StateAcknowledged, 2), b(5, 9, StateAvailable, 2)}},
		{"a lower count loses to an older higher one", []StateBatch{b(0, 4, StateArchived, 3)}, []StateBatch{b(0, 4, StateAcknowledged, 1)}, 0,
			[]StateBatch{b(0, 4, StateArchived, 3)}},
		{"clipped at the start offset", []StateBatch{b(0, 9, StateAcknowledged, 1)}, []StateBatch{b(12, 12, StateAvailable, 1)}, 5,
			[]StateBatch{b(5, 9, StateAcknowledged, 1), b(12, 12, StateAvailable, 1)}},
		{"dropped below it", []StateBatch{b(0, 4, StateAcknowledged, 1)}, nil, 5, nil},
	} {
		got := Combine(tc.soFar, tc.next, tc.start)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Combine = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReplayUpdateMerges: a snapshot replaces, an update merges its batches
// and moves the start offset when it sets one, a tombstone deletes.
func TestReplayUpdateMerges(t *testing.T) {
	k := StateKey{GroupID: "g", Partition: 0}
	st := States{}
	st.Replay(StateRecord{Type: TypeShareSnapshot, Key: k, Value: &SnapshotValue{StateEpoch: 1, StartOffset: 0, DeliveryCompleteCount: -1,
		StateBatches: []StateBatch{{0, 4, StateAvailable, 1}}}})
	st.Replay(StateRecord{Type: TypeShareUpdate, Key: k, Value: &UpdateValue{StartOffset: -1, LeaderEpoch: 2, DeliveryCompleteCount: -1,
		StateBatches: []StateBatch{{0, 1, StateAcknowledged, 1}}}})
	if s := st[k]; s.StartOffset != 0 || s.LeaderEpoch != 2 || len(s.Batches) != 2 || s.Batches[0] != (StateBatch{0, 1, StateAcknowledged, 1}) {
		t.Fatalf("after the update: %+v", s)
	}
	st.Replay(StateRecord{Type: TypeShareUpdate, Key: k, Value: &UpdateValue{StartOffset: 2, DeliveryCompleteCount: -1}})
	s := st[k]
	if s.StartOffset != 2 || len(s.Batches) != 1 || s.Batches[0].FirstOffset != 2 {
		t.Fatalf("after the start offset moved: %+v", s)
	}
	if _, below, _ := s.StateOf(1); !below {
		t.Errorf("offset 1 is not below the start offset 2")
	}
	if b, _, ok := s.StateOf(3); !ok || b.DeliveryState != StateAvailable {
		t.Errorf("offset 3: %+v %v", b, ok)
	}
	st.Replay(StateRecord{Type: TypeShareSnapshot, Key: k})
	if st[k] != nil {
		t.Errorf("a tombstone left %+v", st[k])
	}
}

// TestBounds: the share assignor shares each partition among at most
// ceil(members/partitions) members.
func TestBounds(t *testing.T) {
	for _, tc := range []struct{ m, p, sharing, most int }{
		{5, 2, 3, 2}, {2, 2, 1, 1}, {1, 4, 1, 4}, {3, 4, 1, 2}, {1000, 4, 250, 1},
	} {
		if b := Bounds(tc.m, tc.p); b.DesiredSharing != tc.sharing || b.MaxPerMember != tc.most {
			t.Errorf("Bounds(%d members, %d partitions) = %+v, want sharing %d, at most %d a member", tc.m, tc.p, b, tc.sharing, tc.most)
		}
	}
}

// TestDecodeRefuses: a key of another type is ErrNotShare; a truncated
// value or a value of an unknown version is an error that says which.
func TestDecodeRefuses(t *testing.T) {
	k, v, err := EncodeGroupRecord(GroupRecord{Type: TypeGroupMetadata, GroupID: "g", Value: &GroupMetadataValue{Epoch: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeGroupRecord([]byte{0, 1, 0, 1, 'g'}, nil); err != ErrNotShare {
		t.Errorf("an offset commit key: %v, want ErrNotShare", err)
	}
	if _, err := DecodeGroupRecord(k, v[:len(v)-3]); err == nil {
		t.Errorf("a truncated value decoded")
	}
	bad := append([]byte{0, 7}, v[2:]...)
	if _, err := DecodeGroupRecord(k, bad); err == nil {
		t.Errorf("value version 7 decoded")
	}
	if _, err := DecodeStateRecord([]byte{0, 9, 0, 1, 'g'}, nil); err == nil {
		t.Errorf("a state key of type 9 decoded")
	}
}
