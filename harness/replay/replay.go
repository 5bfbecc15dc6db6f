// Package replay rebuilds a group from the __consumer_offsets records a
// broker wrote, through the reference coordinator (coordinator/), in the
// terms the broker's describe APIs use, so that check.RecoveredStateMatchesLog
// can compare the two. It is the coordinator's half of that checker: package
// check stays free of the coordinator, and this package stays free of the
// cluster and of Kafka clients, so a saved run is judged offline.
//
// The replay is what a broker does when it becomes the group's coordinator
// (GroupCoordinatorShard.replay for each record of the partition, then
// onLoaded): a fresh coordinator of the broker's version profile loads the
// broker's exact bytes (history.Record.RawKey/RawValue), decoded by
// coordinator/records.
package replay

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// Func returns the replay of group's records for brokers of kafkaVersion
// (a served release, "4.1.2"). topicNames maps topic ids to names, as the
// cluster's metadata had them when the records were read: consumer-group
// records name topics by id, describes by name. Ids missing from it are left
// out of assignments, as Kafka's ConsumerGroupDescribe leaves out topics that
// no longer exist (it reads names from the metadata image). The map is
// copied.
func Func(kafkaVersion, group string, topicNames map[[16]byte]string) (check.ReplayFunc, error) {
	v, err := version.Parse(kafkaVersion)
	if err != nil {
		return nil, fmt.Errorf("replay of group %s: %w", group, err)
	}
	if group == "" {
		return nil, errors.New("replay: no group id: name the group whose records are replayed")
	}
	p := v.Profile()
	names := maps.Clone(topicNames)
	return func(recs []history.Record) (check.GroupState, error) {
		return State(p, group, names, recs)
	}, nil
}

// State replays recs in log order into a fresh reference coordinator of
// profile p and returns group's state as p's release describes it:
//
//   - a classic group: protocol "classic", the generation, and each member
//     with the assignment decoded from its GroupMetadata assignment bytes
//     (ConsumerProtocolAssignment, as DescribeGroups clients decode it; a
//     group of another protocol type has none to decode);
//   - a consumer group: protocol "consumer", the group and assignment
//     epochs, each member's epoch and assignment (classic-protocol members
//     of the group included, as ConsumerGroupDescribe lists them), with the partitions it
//     still has to revoke exactly when p.DescribeShowsPendingRevocation
//     (KAFKA-20431, 4.3+);
//   - the committed offsets either way.
//
// A group the records do not hold (never created, or deleted) has no
// protocol and no members. Records of other groups, and of group types the
// coordinator does not model (share, streams), are skipped. An error names
// the record that could not be decoded or replayed.
func State(p version.Profile, group string, topicNames map[[16]byte]string, recs []history.Record) (check.GroupState, error) {
	c, m, lastGroupMetadata, err := load(p, recs, group, false)
	if err != nil {
		return check.GroupState{}, err
	}
	out := check.GroupState{Members: map[string]check.MemberState{}, Offsets: map[history.TP]int64{}}
	st := c.State()
	for _, o := range st.Offsets {
		if o.Group == group {
			out.Offsets[history.TP{Topic: o.Topic, Partition: o.Partition}] = o.Offset
		}
	}
	for _, g := range st.Classic {
		if g.Group != group {
			continue
		}
		out.Protocol = history.ProtocolClassic
		out.Generation = g.Generation
		for _, mb := range g.Members {
			a, err := classicAssignment(g.ProtocolType, mb.Assignment)
			if err != nil {
				where := "the log"
				if lastGroupMetadata != nil {
					where = Where(*lastGroupMetadata)
				}
				return check.GroupState{}, fmt.Errorf("%s: member %s of group %s: %w", where, mb.MemberID, group, err)
			}
			out.Members[mb.MemberID] = check.MemberState{Assignment: a}
		}
	}
	for _, g := range m.State().Groups {
		if g.ID != group {
			continue
		}
		out.Protocol = history.ProtocolConsumer
		out.GroupEpoch = g.Epoch
		out.AssignmentEpoch = g.AssignmentEpoch
		for _, mb := range g.Members {
			owned := mb.Assigned
			if p.DescribeShowsPendingRevocation {
				owned = append(slices.Clone(owned), mb.PendingRevocation...)
			}
			out.Members[mb.ID] = check.MemberState{MemberEpoch: mb.Epoch, Assignment: named(owned, topicNames)}
		}
	}
	return out, nil
}

// Load replays every record of one __consumer_offsets partition, in log
// order and whatever group it belongs to, into a fresh reference
// coordinator of profile p, then ends the load (Coordinator.Loaded): what a
// broker does when it becomes the coordinator of the partition
// (CoordinatorRuntime's load: GroupCoordinatorShard.replay for each record,
// then onLoaded). State replays one group's records only; Load is the
// broker's whole load, which BenchmarkLoad times beside the broker's own.
func Load(p version.Profile, recs []history.Record) (*coordinator.Coordinator, error) {
	c, _, _, err := load(p, recs, "", true)
	return c, err
}

// load replays recs in log order into a fresh reference coordinator of
// profile p, the records of group only or, if every, of every group, then
// ends the load. It returns the coordinator, its consumer-group engine and
// the last GroupMetadata record it replayed (nil: none).
func load(p version.Profile, recs []history.Record, group string, every bool) (*coordinator.Coordinator, *consumergroup.Manager, *history.Record, error) {
	m, err := consumergroup.New(p, consumergroup.Config{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("replay: building the consumer-group engine for Kafka %s: %w", p.Version, err)
	}
	c, err := coordinator.New(p, coordinator.Config{ConsumerGroups: coordinator.NewConsumerGroups(m)})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("replay: building the coordinator for Kafka %s: %w", p.Version, err)
	}
	var lastGroupMetadata *history.Record
	l := newLoader(p, c)
	for i := range recs {
		hr := &recs[i]
		typ, replayed, err := l.replay(hr, group, every)
		if err != nil {
			return nil, nil, nil, err
		}
		if replayed && typ == records.TypeGroupMetadata {
			lastGroupMetadata = hr
		}
	}
	// Loaded re-arms timers and writes nothing unless a classic group is
	// over group.max.size, which the zero Config does not limit; its time
	// does not reach State's result.
	c.Loaded(time.UnixMilli(0))
	return c, m, lastGroupMetadata, nil
}

// loader decodes records and replays them into a coordinator for Load and
// State. Offset commits, nearly every record of a partition, are decoded by
// Decoder.DecodeOffsetCommit into one value reused from record to record and
// replayed by Coordinator.ReplayOffsetCommit, which keeps nothing of it; the
// other records by Decoder.Decode and Coordinator.Replay. Both ways decode
// and replay the same (TestLoaderSameAsDecodeAndReplay).
type loader struct {
	p      version.Profile
	c      *coordinator.Coordinator
	d      *records.Decoder
	commit records.OffsetCommitValue
}

func newLoader(p version.Profile, c *coordinator.Coordinator) *loader {
	return &loader{p: p, c: c, d: records.NewDecoder()}
}

// replay decodes hr, which must decode whatever its group, and replays it
// if it belongs to group, or whatever its group if every. It returns hr's
// record type and whether it was replayed; an error names the record.
func (l *loader) replay(hr *history.Record, group string, every bool) (records.Type, bool, error) {
	if err := hasRawBytes(hr); err != nil {
		return 0, false, err
	}
	if t, ok := records.KeyType(hr.RawKey); ok && (t == records.TypeOffsetCommit || t == records.TypeLegacyOffsetCommit) {
		k, tombstone, err := l.d.DecodeOffsetCommit(hr.RawKey, hr.RawValue, &l.commit)
		if err != nil {
			return 0, false, fmt.Errorf("%s: does not decode: %w", Where(*hr), err)
		}
		if !every && k.Group != group {
			return t, false, nil
		}
		v := &l.commit
		if tombstone {
			v = nil
		}
		if err := l.c.ReplayOffsetCommit(k, v); err != nil {
			return 0, false, l.refused(hr, err)
		}
		return t, true, nil
	}
	dec, err := decode(l.d, hr)
	if err != nil {
		return 0, false, err
	}
	if !every && GroupOf(dec.Key) != group {
		return dec.Type(), false, nil
	}
	if err := l.c.Replay(dec); err != nil {
		return 0, false, l.refused(hr, err)
	}
	return dec.Type(), true, nil
}

func (l *loader) refused(hr *history.Record, err error) error {
	return fmt.Errorf("%s: the reference coordinator of Kafka %s refuses it: %w", Where(*hr), l.p.Version, err)
}

// Decode decodes a history record from the broker's bytes. A record saved
// without them (a run directory older than raw bytes) is an error: the
// generic rendering is not what the broker wrote.
func Decode(hr history.Record) (records.Record, error) {
	return decode(nil, &hr)
}

// decode is Decode with d (nil: none), which keeps the strings of the
// records it decodes for the next ones.
func decode(d *records.Decoder, hr *history.Record) (records.Record, error) {
	if err := hasRawBytes(hr); err != nil {
		return records.Record{}, err
	}
	var dec records.Record
	var err error
	if d != nil {
		dec, err = d.Decode(hr.RawKey, hr.RawValue)
	} else {
		dec, err = records.DecodeRecord(hr.RawKey, hr.RawValue)
	}
	if err != nil {
		return records.Record{}, fmt.Errorf("%s: does not decode: %w", Where(*hr), err)
	}
	return dec, nil
}

// hasRawBytes refuses a record saved without the broker's bytes.
func hasRawBytes(hr *history.Record) error {
	if len(hr.RawKey) == 0 {
		return fmt.Errorf("%s: no raw key bytes: the observation predates raw bytes (history.Record.RawKey); rerun to replay it", Where(*hr))
	}
	if hr.RawValue == nil && hr.Value != nil {
		return fmt.Errorf("%s: a value without its raw bytes: the observation predates raw bytes (history.Record.RawValue); rerun to replay it", Where(*hr))
	}
	return nil
}

// Where names a record for an error: partition, offset and record type.
func Where(hr history.Record) string {
	return fmt.Sprintf("__consumer_offsets-%d offset %d (%s record)", hr.Partition, hr.Offset, records.Type(hr.KeyType))
}

// GroupOf returns the group a record key belongs to, "" for keys of record
// types that are not decoded (share and streams groups).
func GroupOf(k records.Key) string { return records.GroupOf(k) }

// classicAssignment decodes a classic member's assignment bytes as
// DescribeGroups clients do (kadm decodes them for protocol type "consumer"
// only). Empty bytes, a member that has not been synced, are no assignment.
func classicAssignment(protocolType, raw string) ([]history.TP, error) {
	out := []history.TP{}
	if protocolType != "consumer" || len(raw) == 0 {
		return out, nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom([]byte(raw)); err != nil {
		return nil, fmt.Errorf("assignment bytes %x are not a ConsumerProtocolAssignment: %w", raw, err)
	}
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			out = append(out, history.TP{Topic: t.Topic, Partition: p})
		}
	}
	history.SortTPs(out)
	return out, nil
}

// named turns partitions by topic id into partitions by name, leaving out
// ids the map does not know (see Func).
func named(ps []consumergroup.PartitionEpoch, topicNames map[[16]byte]string) []history.TP {
	out := []history.TP{}
	seen := map[history.TP]bool{}
	for _, p := range ps {
		name, ok := topicNames[p.Topic]
		if !ok {
			continue
		}
		tp := history.TP{Topic: name, Partition: p.Partition}
		if !seen[tp] {
			seen[tp] = true
			out = append(out, tp)
		}
	}
	history.SortTPs(out)
	return out
}

// TopicNames turns history.Observations.TopicIDs (name → id in Kafka's
// Uuid.toString form) into the id → name map Func takes.
func TopicNames(byName map[string]string) (map[[16]byte]string, error) {
	out := make(map[[16]byte]string, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		s := byName[name]
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) != 16 {
			return nil, fmt.Errorf("topic id %q of topic %s is not a Kafka Uuid: want 22 characters of URL-safe base64 for 16 bytes", s, name)
		}
		id := [16]byte(b)
		if other, dup := out[id]; dup {
			return nil, fmt.Errorf("topics %s and %s have the same id %s: the observation is corrupt", other, name, s)
		}
		out[id] = name
	}
	return out, nil
}
