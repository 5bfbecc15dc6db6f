package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/harness/history"
)

// scriptedReader is a group whose log grows as the script says: each read
// of the records returns the log as it is, then step runs (a member joins).
type scriptedReader struct {
	log      []history.Record
	epoch    int32
	onRecord []func(r *scriptedReader) // run after the n-th read of the records
	reads    int
	// onCommitted runs after the first read of the committed offsets,
	// which comes after the description.
	onCommitted func(r *scriptedReader)
}

func (r *scriptedReader) Describe(context.Context) (*history.GroupDescription, error) {
	return &history.GroupDescription{State: "Stable", Protocol: history.ProtocolConsumer, GroupEpoch: r.epoch, AssignmentEpoch: r.epoch}, nil
}

func (r *scriptedReader) Committed(context.Context) ([]history.OffsetAt, error) {
	if f := r.onCommitted; f != nil {
		r.onCommitted = nil
		f(r)
	}
	return nil, nil
}

func (r *scriptedReader) Records(context.Context) ([]history.Record, int32, error) {
	out := append([]history.Record(nil), r.log...)
	if r.reads < len(r.onRecord) && r.onRecord[r.reads] != nil {
		r.onRecord[r.reads](r)
	}
	r.reads++
	return out, 0, nil
}

func (r *scriptedReader) TopicIDs(context.Context, []string, []history.Record) (map[string]string, error) {
	return map[string]string{}, nil
}

// join appends a member's records and bumps the group epoch: what a member
// back from an outage does when it rejoins.
func join(r *scriptedReader) {
	r.epoch++
	r.log = append(r.log, history.Record{Offset: int64(len(r.log)), KeyType: 5}, history.Record{Offset: int64(len(r.log)) + 1, KeyType: 3})
}

// slowReader describes the group at once and never answers a read of the
// offsets or records until its context ends.
type slowReader struct{ scriptedReader }

func (r *slowReader) Committed(ctx context.Context) ([]history.OffsetAt, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (r *slowReader) Records(ctx context.Context) ([]history.Record, int32, error) {
	<-ctx.Done()
	return nil, 0, ctx.Err()
}

func newScriptedObserver(t *testing.T, r *scriptedReader) *observer {
	rec, err := history.NewRecorder(&bytes.Buffer{}, func() time.Duration { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	return &observer{read: r, rec: rec, clock: func() time.Duration { return 0 }}
}

// TestSnapshotIsOneState scripts the checkpoint of a 4.1.2 migration under
// broker faults (seed 13, from-classic): the group was described at epoch 1
// with one member, and a member back from the outage joined before the
// records were read, so the replay (epoch 2, two members) was compared with
// the description of epoch 1. The snapshot reads the records before and
// after the description and offsets, and reads again when the log moved.
func TestSnapshotIsOneState(t *testing.T) {
	t.Run("a join between the description and the records is read again", func(t *testing.T) {
		r := &scriptedReader{epoch: 1, log: []history.Record{{Offset: 0}, {Offset: 1}}, onCommitted: join}
		s, _, errs := newScriptedObserver(t, r).snapshot(context.Background(), "after-m3", 0)
		if len(errs) > 0 || !s.HasRecords {
			t.Fatalf("errors %v, records %v", errs, s.HasRecords)
		}
		if s.Group.GroupEpoch != 2 || len(s.Records) != 4 {
			t.Fatalf("described epoch %d with %d records: not one state (want epoch 2, 4 records)", s.Group.GroupEpoch, len(s.Records))
		}
	})
	t.Run("a log that keeps moving leaves the records out", func(t *testing.T) {
		r := &scriptedReader{epoch: 1, onRecord: []func(*scriptedReader){join, join, join, join, join, join}}
		s, _, errs := newScriptedObserver(t, r).snapshot(context.Background(), "after-m3", 0)
		if s.HasRecords || len(errs) != 1 || !strings.Contains(errs[0].Error(), "records left out") {
			t.Fatalf("records %v, errors %v", s.HasRecords, errs)
		}
	})
	t.Run("reads cut by the bound say so: the bound, the wait, what is missing", func(t *testing.T) {
		defer func(b time.Duration) { snapshotBound = b }(snapshotBound)
		snapshotBound = 50 * time.Millisecond
		r := &slowReader{scriptedReader{epoch: 1, log: []history.Record{{Offset: 0}}}}
		s, _, errs := (&observer{read: r, rec: newScriptedObserver(t, &r.scriptedReader).rec, clock: func() time.Duration { return 0 }}).snapshot(context.Background(), "final", 0)
		if s.HasRecords || s.HasCommitted || len(errs) == 0 {
			t.Fatalf("records %v, committed %v, errors %v", s.HasRecords, s.HasCommitted, errs)
		}
		last := errs[len(errs)-1].Error()
		for _, want := range []string{"snapshot final: its reads timed out after ", "(bound 50ms), without its committed offsets, its __consumer_offsets records"} {
			if !strings.Contains(last, want) {
				t.Fatalf("%q lacks %q", last, want)
			}
		}
	})
	t.Run("a quiet group is read once", func(t *testing.T) {
		r := &scriptedReader{epoch: 1, log: []history.Record{{Offset: 0}}}
		s, _, errs := newScriptedObserver(t, r).snapshot(context.Background(), "final", 0)
		if len(errs) > 0 || !s.HasRecords || r.reads != 2 {
			t.Fatalf("errors %v, records %v, %d reads of the records", errs, s.HasRecords, r.reads)
		}
	})
}

// A TOPIC_ALREADY_EXISTS answer on a cluster the run started counts as the
// topic created only when the listing shows the topic with the partitions
// asked for (a retried CreateTopics found its own first attempt's topic).
func TestOwnTopicFound(t *testing.T) {
	parts := func(n int) map[int32]kadm.PartitionDetail {
		m := map[int32]kadm.PartitionDetail{}
		for i := range n {
			m[int32(i)] = kadm.PartitionDetail{Topic: "t", Partition: int32(i)}
		}
		return m
	}
	var logged []string
	logf := func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
	if err := ownTopicFound(kadm.TopicDetails{"t": {Topic: "t", Partitions: parts(3)}}, "t", 3, logf); err != nil || len(logged) != 1 {
		t.Fatalf("the topic as asked: %v, logged %q", err, logged)
	}
	for name, td := range map[string]kadm.TopicDetails{
		"other partitions": {"t": {Topic: "t", Partitions: parts(2)}},
		"not listed":       {},
		"listed in error":  {"t": {Topic: "t", Err: kerr.UnknownTopicOrPartition}},
	} {
		if err := ownTopicFound(td, "t", 3, nil); !errors.Is(err, kerr.TopicAlreadyExists) {
			t.Errorf("%s: %v, want the answer to stand", name, err)
		}
	}
}
