package observe

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/harness/history"
)

// ShareStateTopic is the share coordinator's topic (KIP-932).
const ShareStateTopic = "__share_group_state"

// ShareRecovery reads what the recovery checker of a share group needs,
// once nothing writes the group's state any more: the group's share-group
// records of __consumer_offsets, every record of __share_group_state, and
// the brokers' ShareGroupDescribe and DescribeShareGroupOffsets of it.
// What cannot be read is said in Errors; the rest is still returned.
func ShareRecovery(ctx context.Context, adm *kadm.Client, bootstrap []string, group string, topics []string) *history.ShareRecovery {
	out := &history.ShareRecovery{TopicIDs: map[string]string{}}
	fail := func(err error) { out.Errors = append(out.Errors, err.Error()) }

	if md, err := adm.Metadata(ctx, topics...); err != nil {
		fail(fmt.Errorf("metadata of %v: %w", topics, err))
	} else {
		for _, t := range topics {
			if td, ok := md.Topics[t]; ok && td.Err == nil {
				out.TopicIDs[t] = FormatTopicID(td.ID)
			}
		}
	}
	groupRecs, gerr := readShareGroupRecords(ctx, adm, bootstrap, group)
	stateRecs, serr := readWhole(ctx, adm, bootstrap, ShareStateTopic)
	if gerr != nil {
		fail(gerr)
	}
	if serr != nil {
		fail(serr)
	}
	out.GroupRecords, out.StateRecords = groupRecs, stateRecs
	out.HasRecords = gerr == nil && serr == nil

	d := &history.ShareGroupDescription{}
	if dg, err := adm.DescribeShareGroups(ctx, group); err != nil {
		d.Error = err.Error()
	} else if g, ok := dg[group]; !ok {
		d.Error = "the answer did not name the group"
	} else {
		if g.Err != nil {
			d.Error = g.Err.Error()
		}
		d.State, d.GroupEpoch, d.AssignmentEpoch = g.GroupState, g.GroupEpoch, g.AssignmentEpoch
		for _, m := range g.Members {
			sm := history.ShareGroupMember{MemberID: m.MemberID, MemberEpoch: m.MemberEpoch, Assignment: setTPs(m.Assignment)}
			d.Members = append(d.Members, sm)
		}
	}
	out.Describe = d

	ends, err := adm.ListEndOffsets(ctx, topics...)
	// A share coordinator still loading its state after a node came back
	// answers with a retriable error for a moment: ask again, for at most
	// ten seconds.
	var so kadm.DescribedShareGroupsOffsets
	var derr error
	for try := 0; try < 20; try++ {
		so, derr = adm.DescribeShareGroupOffsets(ctx, group)
		if derr == nil {
			derr = so.Error()
		}
		if derr == nil || !kerr.IsRetriable(derr) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err != nil {
		fail(fmt.Errorf("end offsets of %v: %w", topics, err))
	} else {
		out.Starts = append(out.Starts, ShareStarts(ends, so, derr, group)...)
	}
	return out
}

// ShareStarts is each partition of ends with its end offset and the share
// group's start offset there from so, the answer to DescribeShareGroupOffsets
// (-1 where so has none; derr, that request's error, stands in every
// partition's Error), sorted by topic and partition.
func ShareStarts(ends kadm.ListedOffsets, so kadm.DescribedShareGroupsOffsets, derr error, group string) []history.ShareStart {
	var out []history.ShareStart
	ends.Each(func(lo kadm.ListedOffset) {
		s := history.ShareStart{Topic: lo.Topic, Partition: lo.Partition, StartOffset: -1, End: lo.Offset}
		if derr != nil {
			s.Error = derr.Error()
		} else if o, ok := so[group].Offsets.Lookup(lo.Topic, lo.Partition); ok {
			s.StartOffset = o.StartOffset
			if o.Err != nil {
				s.Error = o.Err.Error()
			}
		}
		out = append(out, s)
	})
	history.SortByTP(out, func(s history.ShareStart) history.TP { return history.TP{Topic: s.Topic, Partition: s.Partition} })
	return out
}

// readShareGroupRecords reads the group's partition of __consumer_offsets
// and keeps the group's share-group records.
func readShareGroupRecords(ctx context.Context, adm *kadm.Client, bootstrap []string, group string) ([]history.RawRecord, error) {
	td, err := adm.ListTopicsWithInternal(ctx, OffsetsTopic)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", OffsetsTopic, err)
	}
	d, ok := td[OffsetsTopic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return nil, fmt.Errorf("metadata of %s: topic missing (%v)", OffsetsTopic, d.Err)
	}
	part := int32(records.PartitionFor(group, len(d.Partitions)))
	all, err := readPartitions(ctx, adm, bootstrap, OffsetsTopic, []int32{part})
	if err != nil {
		return nil, err
	}
	var out []history.RawRecord
	for _, r := range all {
		gr, err := sharegroup.DecodeGroupRecord(r.Key, r.Value)
		if errors.Is(err, sharegroup.ErrNotShare) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s-%d offset %d: %w", OffsetsTopic, part, r.Offset, err)
		}
		if gr.GroupID == group {
			out = append(out, r)
		}
	}
	return out, nil
}

// readWhole reads every partition of topic from its start to its high
// watermark.
func readWhole(ctx context.Context, adm *kadm.Client, bootstrap []string, topic string) ([]history.RawRecord, error) {
	td, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		return nil, fmt.Errorf("metadata of %s: topic missing (%v)", topic, d.Err)
	}
	var parts []int32
	for p := range d.Partitions {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	return readPartitions(ctx, adm, bootstrap, topic, parts)
}

// readPartitions reads parts of topic from their start to their high
// watermarks with a direct (groupless) consumer, keeping the bytes.
func readPartitions(ctx context.Context, adm *kadm.Client, bootstrap []string, topic string, parts []int32) ([]history.RawRecord, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	want := map[int32]int64{}
	offs := map[int32]kgo.Offset{}
	for _, p := range parts {
		e, ok := ends.Lookup(topic, p)
		if !ok || e.Err != nil {
			return nil, fmt.Errorf("end offset of %s-%d: %v", topic, p, e.Err)
		}
		if e.Offset > 0 {
			want[p] = e.Offset
			offs[p] = kgo.NewOffset().AtStart()
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.ClientID("groupquake-observer"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	by := map[int32][]history.RawRecord{}
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for empty := 0; !done() && empty < 2; {
		fs, ferr := pollFetches(ctx, cl)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, ctx.Err())
		}
		if ferr != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, ferr)
		}
		if fs.NumRecords() == 0 {
			empty++
			continue
		}
		empty = 0
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if r.Offset < want[r.Partition] {
				by[r.Partition] = append(by[r.Partition], history.RawRecord{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
			}
		})
	}
	var out []history.RawRecord
	for _, p := range parts {
		out = append(out, by[p]...)
	}
	return out, nil
}
