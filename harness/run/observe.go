package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/harness/history"
)

// observer reads the group from outside, straight to the brokers (never
// through a member's links): descriptions and committed offsets during the
// run, recorded as FDescribe calls of process "observer", and at the end the
// snapshot of observations.json, with the group's records from its
// __consumer_offsets partition.
type observer struct {
	adm       *kadm.Client
	bootstrap []string
	rec       *history.Recorder
	group     string
	protocol  string
	topics    []string
	clock     func() time.Duration

	mu sync.Mutex // one FDescribe call at a time: the periodic loop and quiesce's checks share the process
}

const offsetsTopic = "__consumer_offsets"

// describe asks the describe API of the group's protocol, and the other one
// when the group turns out to be of the other type.
func (o *observer) describe(ctx context.Context) (*history.GroupDescription, error) {
	first, second := o.describeConsumer, o.describeClassic
	if o.protocol == history.ProtocolClassic {
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

func (o *observer) describeConsumer(ctx context.Context) (*history.GroupDescription, error) {
	ds, err := o.adm.DescribeConsumerGroups(ctx, o.group)
	if err != nil {
		return nil, fmt.Errorf("ConsumerGroupDescribe: %w", err)
	}
	d, ok := ds[o.group]
	if !ok {
		return nil, fmt.Errorf("ConsumerGroupDescribe: group %s missing from the answer", o.group)
	}
	if d.Err != nil {
		return nil, fmt.Errorf("ConsumerGroupDescribe: %w", d.Err)
	}
	g := &history.GroupDescription{GroupID: o.group, Protocol: history.ProtocolConsumer, State: d.State, GroupEpoch: d.Epoch, AssignmentEpoch: d.AssignmentEpoch, AssignorName: d.AssignorName, Members: []history.MemberDescription{}}
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

func (o *observer) describeClassic(ctx context.Context) (*history.GroupDescription, error) {
	ds, err := o.adm.DescribeGroups(ctx, o.group)
	if err != nil {
		return nil, fmt.Errorf("DescribeGroups: %w", err)
	}
	d, ok := ds[o.group]
	if !ok {
		return nil, fmt.Errorf("DescribeGroups: group %s missing from the answer", o.group)
	}
	if d.Err != nil {
		return nil, fmt.Errorf("DescribeGroups: %w", d.Err)
	}
	g := &history.GroupDescription{GroupID: o.group, Protocol: history.ProtocolClassic, State: d.State, Members: []history.MemberDescription{}}
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

// committed fetches the group's committed offsets of the workload topics.
func (o *observer) committed(ctx context.Context) ([]history.OffsetAt, error) {
	rs, err := o.adm.FetchOffsetsForTopics(ctx, o.group, o.topics...)
	if err != nil {
		return nil, fmt.Errorf("OffsetFetch: %w", err)
	}
	out := []history.OffsetAt{}
	var errs []error
	rs.Each(func(r kadm.OffsetResponse) {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, r.Err))
			return
		}
		out = append(out, history.OffsetAt{Topic: r.Topic, Partition: r.Partition, Offset: r.At})
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("OffsetFetch: %w", errors.Join(errs...))
	}
	slices.SortFunc(out, func(a, b history.OffsetAt) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

// observe records one FDescribe call.
func (o *observer) observe(ctx context.Context, why string) (*history.Describe, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := o.rec.Invoke("observer", history.FDescribe, history.Describe{}, why); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var d history.Describe
	g, gerr := o.describe(ctx)
	c, cerr := o.committed(ctx)
	d.Group = g
	if cerr == nil {
		d.Committed, d.HasCommitted = c, true
	}
	if err := errors.Join(gerr, cerr); err != nil {
		d.Error = err.Error()
		if g == nil && cerr != nil {
			_, rerr := o.rec.Fail("observer", d, "describe and offset fetch failed")
			return nil, rerr
		}
	}
	_, err := o.rec.OK("observer", d, "")
	return &d, err
}

// loop observes every interval until ctx ends.
func (o *observer) loop(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := o.observe(ctx, "periodic observation"); err != nil {
			return err
		}
	}
}

// snapshot takes the final reads for observations.json. historyLen is the
// number of events recorded before it started (Recorder.Len()).
func (o *observer) snapshot(ctx context.Context, label string, historyLen int64) (history.Snapshot, []error) {
	s := history.Snapshot{Label: label, HistoryLen: historyLen, Time: o.clock()}
	var errs []error
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if g, err := o.describe(ctx); err != nil {
		errs = append(errs, err)
	} else {
		s.Group = g
	}
	if c, err := o.committed(ctx); err != nil {
		errs = append(errs, err)
	} else {
		s.Committed, s.HasCommitted = c, true
	}
	if rs, err := o.offsetsRecords(ctx); err != nil {
		errs = append(errs, err)
	} else {
		s.Records, s.HasRecords = rs, true
	}
	return s, errs
}

// offsetsRecords reads the group's partition of __consumer_offsets from its
// start to its high watermark with a direct (groupless) kgo consumer and
// decodes the group's records with coordinator/records.
func (o *observer) offsetsRecords(ctx context.Context) ([]history.Record, error) {
	td, err := o.adm.ListTopicsWithInternal(ctx, offsetsTopic)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", offsetsTopic, err)
	}
	d, ok := td[offsetsTopic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return nil, fmt.Errorf("metadata of %s: topic missing (%v): has the group ever committed?", offsetsTopic, d.Err)
	}
	part := int32(records.PartitionFor(o.group, len(d.Partitions)))
	ends, err := o.adm.ListEndOffsets(ctx, offsetsTopic)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", offsetsTopic, err)
	}
	end, ok := ends.Lookup(offsetsTopic, part)
	if !ok || end.Err != nil {
		return nil, fmt.Errorf("end offset of %s-%d: %v", offsetsTopic, part, end.Err)
	}
	out := []history.Record{}
	if end.Offset <= 0 {
		return out, nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(o.bootstrap...),
		kgo.ClientID("groupquake-observer"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{offsetsTopic: {part: kgo.NewOffset().AtStart()}}),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	next, empty := int64(0), 0
	// Compaction and transaction markers can leave the last offsets without
	// records, so the high watermark is not always reached by a record: two
	// empty polls in a row after the last record end the read.
	for next < end.Offset && empty < 2 {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reading %s-%d: stopped at offset %d of %d: %w", offsetsTopic, part, next, end.Offset, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return nil, fmt.Errorf("reading %s-%d: %w", offsetsTopic, part, ferr)
		}
		if fs.NumRecords() == 0 {
			empty++
			continue
		}
		empty = 0
		var derr error
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if derr != nil {
				return
			}
			hr, mine, err := historyRecord(o.group, r)
			if err != nil {
				derr = fmt.Errorf("%s-%d offset %d: %w", offsetsTopic, part, r.Offset, err)
				return
			}
			if mine {
				out = append(out, hr)
			}
		})
		if derr != nil {
			return nil, derr
		}
	}
	return out, nil
}

// historyRecord decodes one __consumer_offsets record into the history's
// generic form, and says whether it belongs to group.
func historyRecord(group string, r *kgo.Record) (history.Record, bool, error) {
	dec, err := records.DecodeRecord(r.Key, r.Value)
	if err != nil {
		return history.Record{}, false, err
	}
	hr := history.Record{Partition: r.Partition, Offset: r.Offset, KeyType: int16(dec.Type()), RawKey: r.Key, RawValue: r.Value}
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
