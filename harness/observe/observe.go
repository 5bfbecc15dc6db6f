// Package observe reads a consumer group from outside, straight from the
// brokers: its description (DescribeGroups or ConsumerGroupDescribe), its
// committed offsets (OffsetFetch), the records of its __consumer_offsets
// partition with the broker's exact bytes, and the topic ids those records
// name. The run's observer (harness/run) and `groupquake replay` both read
// through it, so what a run saves and what the command compares live are read
// the same way.
package observe

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/harness/history"
)

// OffsetsTopic is the topic Kafka keeps group state in.
const OffsetsTopic = "__consumer_offsets"

// Reader reads one group. It holds no state between calls.
type Reader struct {
	// Admin is used for every request but the record read; the caller owns
	// and closes it.
	Admin *kadm.Client
	// Bootstrap seeds the direct consumer that reads __consumer_offsets.
	Bootstrap []string
	Group     string
	// Protocol ("classic" or "consumer") says which describe API to ask
	// first; the other is asked when the group turns out to be of the other
	// type. Empty means consumer first.
	Protocol string
	// Topics limits Committed to these topics, with -1 for partitions
	// without a commit; nil fetches every offset the group has.
	Topics []string
}

// Describe asks the describe API of the group's protocol, and the other one
// when the group turns out to be of the other type.
func (r *Reader) Describe(ctx context.Context) (*history.GroupDescription, error) {
	first, second := r.describeConsumer, r.describeClassic
	if r.Protocol == history.ProtocolClassic {
		first, second = second, first
	}
	g, err := first(ctx)
	if err == nil {
		return g, nil
	}
	g2, err2 := second(ctx)
	if err2 == nil {
		return g2, nil
	}
	return nil, fmt.Errorf("%v; and %v", err, err2)
}

func (r *Reader) describeConsumer(ctx context.Context) (*history.GroupDescription, error) {
	ds, err := r.Admin.DescribeConsumerGroups(ctx, r.Group)
	d, err := described("ConsumerGroupDescribe", r.Group, ds, err, func(d kadm.DescribedConsumerGroup) error { return d.Err })
	if err != nil {
		return nil, err
	}
	node := d.Coordinator.NodeID
	g := &history.GroupDescription{GroupID: r.Group, Protocol: history.ProtocolConsumer, State: d.State, GroupEpoch: d.Epoch, AssignmentEpoch: d.AssignmentEpoch, AssignorName: d.AssignorName, Members: []history.MemberDescription{}, Coordinator: &node}
	for _, m := range d.Members {
		md := history.MemberDescription{MemberID: m.MemberID, ClientID: m.ClientID, MemberEpoch: m.MemberEpoch, Assignment: setTPs(m.Assignment), TargetAssignment: setTPs(m.TargetAssignment)}
		if m.InstanceID != nil {
			md.InstanceID = *m.InstanceID
		}
		switch m.MemberType {
		case 0:
			md.MemberType = history.ProtocolClassic
		case 1:
			md.MemberType = history.ProtocolConsumer
		}
		g.Members = append(g.Members, md)
	}
	return g, nil
}

func (r *Reader) describeClassic(ctx context.Context) (*history.GroupDescription, error) {
	ds, err := r.Admin.DescribeGroups(ctx, r.Group)
	d, err := described("DescribeGroups", r.Group, ds, err, func(d kadm.DescribedGroup) error { return d.Err })
	if err != nil {
		return nil, err
	}
	node := d.Coordinator.NodeID
	g := &history.GroupDescription{GroupID: r.Group, Protocol: history.ProtocolClassic, State: d.State, Members: []history.MemberDescription{}, Coordinator: &node}
	for _, m := range d.Members {
		md := history.MemberDescription{MemberID: m.MemberID, ClientID: m.ClientID, MemberType: history.ProtocolClassic, Assignment: []history.TP{}}
		if m.InstanceID != nil {
			md.InstanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				for _, p := range t.Partitions {
					md.Assignment = append(md.Assignment, history.TP{Topic: t.Topic, Partition: p})
				}
			}
			history.SortTPs(md.Assignment)
		}
		g.Members = append(g.Members, md)
	}
	return g, nil
}

// described picks group's description out of the answer ds (or err) to
// the request what: an error names the request.
func described[D any](what, group string, ds map[string]D, err error, failed func(D) error) (D, error) {
	var d D
	if err != nil {
		return d, fmt.Errorf("%s: %w", what, err)
	}
	d, ok := ds[group]
	if !ok {
		return d, fmt.Errorf("%s: group %s missing from the answer", what, group)
	}
	if err := failed(d); err != nil {
		return d, fmt.Errorf("%s: %w", what, err)
	}
	return d, nil
}

func setTPs(s kadm.TopicsSet) []history.TP {
	out := []history.TP{}
	for t, ps := range s {
		for p := range ps {
			out = append(out, history.TP{Topic: t, Partition: p})
		}
	}
	history.SortTPs(out)
	return out
}

// Committed fetches the group's committed offsets (of Topics, when set).
//
// It asks with require_stable. Without it, Kafka's group coordinator (4.x)
// answers OffsetFetch as a read operation from its last committed state, the
// high watermark of the __consumer_offsets partition: right after a
// coordinator moves, the new leader's high watermark can lag its log, and for
// seconds it answers with offsets older than commits it already
// acknowledged (seen on 4.4.0: 11 acknowledged, then 4 read for 3 s after
// the coordinator's node came back from a 9 s pause; finding
// kafka-offset-fetch-unstable, docs/findings.md).
// With require_stable the read is a write operation that waits for the
// high watermark, so the observer reads what the log holds; members read as
// their clients do.
func (r *Reader) Committed(ctx context.Context) ([]history.OffsetAt, error) {
	ctx = kadm.RequireStable(ctx)
	var rs kadm.OffsetResponses
	var err error
	if r.Topics != nil {
		rs, err = r.Admin.FetchOffsetsForTopics(ctx, r.Group, r.Topics...)
	} else {
		rs, err = r.Admin.FetchOffsets(ctx, r.Group)
	}
	if err != nil {
		return nil, fmt.Errorf("OffsetFetch: %w", err)
	}
	out := []history.OffsetAt{}
	var errs []error
	rs.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			errs = append(errs, fmt.Errorf("%s-%d: %w", o.Topic, o.Partition, o.Err))
			return
		}
		out = append(out, history.OffsetAt{Topic: o.Topic, Partition: o.Partition, Offset: o.At})
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("OffsetFetch: %w", errors.Join(errs...))
	}
	history.SortByTP(out, history.OffsetAt.TP)
	return out, nil
}

// Records reads the group's partition of __consumer_offsets from its start
// to its high watermark with a direct (groupless) kgo consumer and keeps the
// group's records, decoded with coordinator/records and with the broker's
// bytes. It also returns the partition it read.
func (r *Reader) Records(ctx context.Context) ([]history.Record, int32, error) {
	td, err := r.Admin.ListTopicsWithInternal(ctx, OffsetsTopic)
	if err != nil {
		return nil, -1, fmt.Errorf("metadata of %s: %w", OffsetsTopic, err)
	}
	d, ok := td[OffsetsTopic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return nil, -1, fmt.Errorf("metadata of %s: topic missing (%v): has any group ever committed on this cluster?", OffsetsTopic, d.Err)
	}
	part := int32(records.PartitionFor(r.Group, len(d.Partitions)))
	end, err := r.endOffset(ctx, part)
	if err != nil {
		return nil, part, err
	}
	out := []history.Record{}
	if end.Offset <= 0 {
		return out, part, nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(r.Bootstrap...),
		kgo.ClientID("groupquake-observer"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{OffsetsTopic: {part: kgo.NewOffset().AtStart()}}),
	)
	if err != nil {
		return nil, part, err
	}
	defer cl.Close()
	next, empty := int64(0), 0
	// Compaction and transaction markers can leave the last offsets without
	// records, so the high watermark is not always reached by a record: two
	// empty polls in a row after the last record end the read.
	for next < end.Offset && empty < 2 {
		fs, ferr := pollFetches(ctx, cl)
		if ctx.Err() != nil {
			return nil, part, fmt.Errorf("reading %s-%d: stopped at offset %d of %d: %w", OffsetsTopic, part, next, end.Offset, ctx.Err())
		}
		if ferr != nil {
			return nil, part, fmt.Errorf("reading %s-%d: %w", OffsetsTopic, part, ferr)
		}
		if fs.NumRecords() == 0 {
			empty++
			continue
		}
		empty = 0
		var derr error
		fs.EachRecord(func(rec *kgo.Record) {
			next = rec.Offset + 1
			if derr != nil {
				return
			}
			hr, mine, err := HistoryRecord(r.Group, rec.Partition, rec.Offset, rec.Key, rec.Value)
			if err != nil {
				derr = fmt.Errorf("%s-%d offset %d: %w", OffsetsTopic, part, rec.Offset, err)
				return
			}
			if mine {
				out = append(out, hr)
			}
		})
		if derr != nil {
			return nil, part, derr
		}
	}
	return out, part, nil
}

// endOffset returns the high watermark of the group's partition. Right after
// a leader election the new leader answers OFFSET_NOT_AVAILABLE until its
// high watermark has caught up (KIP-207), and a moved coordinator answers
// other retriable errors for a moment, so retriable errors are asked again
// every 250ms until ctx ends.
func (r *Reader) endOffset(ctx context.Context, part int32) (kadm.ListedOffset, error) {
	for {
		ends, err := r.Admin.ListEndOffsets(ctx, OffsetsTopic)
		if err == nil {
			end, ok := ends.Lookup(OffsetsTopic, part)
			switch {
			case !ok:
				err = fmt.Errorf("end offset of %s-%d: the partition is missing from the answer", OffsetsTopic, part)
			case end.Err != nil:
				err = fmt.Errorf("end offset of %s-%d: %w", OffsetsTopic, part, end.Err)
			default:
				return end, nil
			}
		} else {
			err = fmt.Errorf("end offsets of %s: %w", OffsetsTopic, err)
		}
		if !kerr.IsRetriable(err) {
			return kadm.ListedOffset{}, err
		}
		select {
		case <-ctx.Done():
			return kadm.ListedOffset{}, fmt.Errorf("%w (still retrying when %v)", err, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// HistoryRecord decodes one __consumer_offsets record into the history's
// generic form, keeping the bytes, and says whether it belongs to group.
func HistoryRecord(group string, partition int32, offset int64, key, value []byte) (history.Record, bool, error) {
	dec, err := records.DecodeRecord(key, value)
	if err != nil {
		return history.Record{}, false, err
	}
	hr := history.Record{Partition: partition, Offset: offset, KeyType: int16(dec.Type()), RawKey: key, RawValue: value}
	if hr.Key, err = toMap(dec.Key); err != nil {
		return hr, false, err
	}
	if dec.Value != nil {
		hr.ValueVersion = dec.Value.ValueVersion()
		if hr.Value, err = toMap(dec.Value); err != nil {
			return hr, false, err
		}
	}
	g, ok := hr.KeyString("group")
	if !ok {
		g, ok = hr.KeyString("groupid")
	}
	return hr, ok && g == group, nil
}

// toMap turns a decoded key or value into field name → value, numbers kept
// as json.Number so int64 offsets keep every digit.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// TopicIDs returns name → id (Kafka's Uuid.toString form) of the given
// topics and of every topic the records name by id, as the cluster's
// metadata has them now. Consumer-group records name topics by id only;
// the ids of topics that no longer exist are left out, as Kafka's
// ConsumerGroupDescribe leaves such topics out of assignments.
func (r *Reader) TopicIDs(ctx context.Context, topics []string, recs []history.Record) (map[string]string, error) {
	want := map[[16]byte]bool{}
	for _, hr := range recs {
		dec, err := records.DecodeRecord(hr.RawKey, hr.RawValue)
		if err != nil {
			continue // Records already refused undecodable records; a replay reports them
		}
		for _, id := range RecordTopicIDs(dec) {
			want[id] = true
		}
	}
	td, err := r.Admin.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("metadata (topic ids): %w", err)
	}
	out := map[string]string{}
	for name, d := range td {
		if d.Err != nil {
			continue
		}
		if slices.Contains(topics, name) || want[d.ID] {
			out[name] = FormatTopicID(d.ID)
		}
	}
	return out, nil
}

// RecordTopicIDs lists the topic ids a consumer-group record's value names.
func RecordTopicIDs(r records.Record) [][16]byte {
	var out [][16]byte
	switch v := r.Value.(type) {
	case *records.ConsumerGroupPartitionMetadataValue:
		for _, t := range v.Topics {
			out = append(out, t.TopicID)
		}
	case *records.ConsumerGroupTargetAssignmentMemberValue:
		for _, t := range v.TopicPartitions {
			out = append(out, t.TopicID)
		}
	case *records.ConsumerGroupCurrentMemberAssignmentValue:
		for _, t := range v.AssignedPartitions {
			out = append(out, t.TopicID)
		}
		for _, t := range v.PartitionsPendingRevocation {
			out = append(out, t.TopicID)
		}
	}
	return out
}

// FormatTopicID renders a topic id as Kafka prints it (Uuid.toString):
// URL-safe base64 without padding.
func FormatTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// pollFetches polls cl for up to 3 seconds, for reading a topic to its end:
// it returns what came with the last fetch error that is not the poll's own
// end (an empty poll is not an error).
func pollFetches(ctx context.Context, cl *kgo.Client) (kgo.Fetches, error) {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	fs := cl.PollFetches(pctx)
	var ferr error
	fs.EachError(func(_ string, _ int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			ferr = err
		}
	})
	return fs, ferr
}
