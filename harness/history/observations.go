package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// GroupDescription is what DescribeGroups (classic) or ConsumerGroupDescribe (KIP-848) returned for
// the group, reduced to what the checkers compare. Numbers the API did not return are 0.
type GroupDescription struct {
	GroupID string `json:"group_id"`
	// Protocol is "classic" or "consumer": the type of the group on the broker.
	Protocol string `json:"protocol"`
	// State is Kafka's state name: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
	// (classic) or Empty, Assigning, Reconciling, Stable, Dead (consumer).
	State string `json:"state"`
	// Generation is the classic generation when known (DescribeGroups does not return it; the
	// observer may take it from the GroupMetadata record).
	Generation int32 `json:"generation,omitempty"`
	// GroupEpoch and AssignmentEpoch are ConsumerGroupDescribe's; the group is Stable only when every
	// member is at AssignmentEpoch (ConsumerGroup.maybeUpdateGroupState).
	GroupEpoch      int32               `json:"group_epoch,omitempty"`
	AssignmentEpoch int32               `json:"assignment_epoch,omitempty"`
	AssignorName    string              `json:"assignor_name,omitempty"`
	Members         []MemberDescription `json:"members"`
	Error           string              `json:"error,omitempty"`
	// Coordinator is the node that answered the describe (a group's describe is sent to the
	// node FindCoordinator names, and answered by a node that acts as its coordinator); nil
	// when not recorded.
	Coordinator *int32 `json:"coordinator,omitempty"`
}

// MemberDescription is one member of a GroupDescription.
type MemberDescription struct {
	MemberID   string `json:"member_id"`
	InstanceID string `json:"instance_id,omitempty"`
	ClientID   string `json:"client_id,omitempty"`
	// MemberType is "classic" or "consumer" (ConsumerGroupDescribe v1, KIP-1099).
	MemberType  string `json:"member_type,omitempty"`
	MemberEpoch int32  `json:"member_epoch,omitempty"`
	// Assignment is the member's current assignment (up to 4.3 without partitions pending
	// revocation, from 4.4 with them: KAFKA-20431). For classic members it is the decoded
	// ConsumerProtocolAssignment.
	Assignment       []TP `json:"assignment"`
	TargetAssignment []TP `json:"target_assignment,omitempty"`
}

// ListsClientOf reports whether g lists a member whose client id is the
// one every member kind of the harness sets for member name: "groupquake-"
// and the name (a broken kind adds "-" and its bug).
func (g *GroupDescription) ListsClientOf(name string) bool {
	if g == nil {
		return false
	}
	want := "groupquake-" + name
	for _, m := range g.Members {
		if m.ClientID == want || strings.HasPrefix(m.ClientID, want+"-") {
			return true
		}
	}
	return false
}

// Stable reports whether the group is at rest: Kafka says Stable and, for a consumer group, every
// member has reached the assignment epoch.
func (g *GroupDescription) Stable() bool {
	if g == nil || g.State != "Stable" {
		return false
	}
	if g.Protocol == ProtocolConsumer {
		for _, m := range g.Members {
			if m.MemberEpoch != g.AssignmentEpoch {
				return false
			}
		}
	}
	return true
}

// Record is one decoded `__consumer_offsets` record, kept generic so this package needs no codec.
// Key and Value hold the fields by their names in Kafka's message schemas
// (group-coordinator/src/main/resources/common/message/*.json): OffsetCommitKey{group, topic,
// partition}, OffsetCommitValue{offset, leaderEpoch, metadata, commitTimestamp},
// ConsumerGroupCurrentMemberAssignmentKey{GroupId, MemberId}, …; use Record's accessors, which
// match names case-insensitively. Numbers are json.Number after ReadObservations, so int64 offsets
// keep every digit.
type Record struct {
	// Partition and Offset locate the record in __consumer_offsets.
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	// KeyType is the record type (0–8 for groups; see kafka-group-protocol.md §6.2).
	KeyType      int16          `json:"key_type"`
	ValueVersion int16          `json:"value_version,omitempty"`
	Key          map[string]any `json:"key"`
	// Value is nil for a tombstone.
	Value map[string]any `json:"value"`
	// RawKey and RawValue are the record's bytes as the broker wrote them
	// (RawValue nil for a tombstone), so that a replay decodes exactly what
	// the broker wrote rather than this generic rendering of it.
	RawKey   []byte `json:"raw_key,omitempty"`
	RawValue []byte `json:"raw_value,omitempty"`
}

// Record types of __consumer_offsets (the key's int16 prefix; kafka-group-protocol.md §6.2).
const (
	RecordLegacyOffsetCommit                    int16 = 0
	RecordOffsetCommit                          int16 = 1
	RecordGroupMetadata                         int16 = 2
	RecordConsumerGroupMetadata                 int16 = 3
	RecordConsumerGroupPartitionMetadata        int16 = 4
	RecordConsumerGroupMemberMetadata           int16 = 5
	RecordConsumerGroupTargetAssignmentMetadata int16 = 6
	RecordConsumerGroupTargetAssignmentMember   int16 = 7
	RecordConsumerGroupCurrentMemberAssignment  int16 = 8
	RecordConsumerGroupRegularExpression        int16 = 16
)

// Tombstone reports whether the record deletes its key.
func (r Record) Tombstone() bool { return r.Value == nil }

// KeyString returns a string field of the key, matched case-insensitively.
func (r Record) KeyString(name string) (string, bool) { return fieldString(r.Key, name) }

// KeyInt returns an integer field of the key.
func (r Record) KeyInt(name string) (int64, bool) { return fieldInt(r.Key, name) }

// ValueInt returns an integer field of the value.
func (r Record) ValueInt(name string) (int64, bool) { return fieldInt(r.Value, name) }

// ValueString returns a string field of the value.
func (r Record) ValueString(name string) (string, bool) { return fieldString(r.Value, name) }

func field(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

func fieldString(m map[string]any, name string) (string, bool) {
	v, ok := field(m, name)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

func fieldInt(m map[string]any, name string) (int64, bool) {
	v, ok := field(m, name)
	if !ok {
		return 0, false
	}
	return Int(v)
}

// Int is a whole number of a decoded record: a json.Number once read back,
// a float64 or an int where a test or the observer built it, or a decimal
// string.
func Int(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		return int64(n), float64(int64(n)) == n
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case int16:
		return int64(n), true
	case int8:
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}

// Snapshot is what the observer read at one moment: the description, the committed offsets and the
// decoded records of the group's __consumer_offsets partition.
type Snapshot struct {
	// Label says when it was taken: "final", "after restart of broker-2".
	Label string        `json:"label"`
	Time  time.Duration `json:"time"`
	// HistoryLen is the number of history events recorded before the observer started reading
	// (Recorder.Len()), which places the snapshot in the history so checkers know which
	// acknowledged commits it must show; 0 when unknown (the final snapshot then counts as taken
	// after the whole history, a checkpoint is not judged for durability).
	HistoryLen int64 `json:"history_len,omitempty"`
	// HistoryEnd is the number of history events recorded when the observer had finished reading
	// (Recorder.Len() again), so that with HistoryLen it brackets the read: the events from
	// HistoryLen to HistoryEnd were recorded while it was under way, and may have happened before
	// or after what it read. 0 when unknown: the read then counts as going on until the end of
	// the history (for the final snapshot, until the teardown phase begins).
	HistoryEnd int64             `json:"history_end,omitempty"`
	Group      *GroupDescription `json:"group,omitempty"`
	// Committed holds OffsetFetch's answer; HasCommitted says it was fetched at all.
	Committed    []OffsetAt `json:"committed,omitempty"`
	HasCommitted bool       `json:"has_committed,omitempty"`
	// Records is in log order; HasRecords says the partition was read at all.
	Records    []Record `json:"records,omitempty"`
	HasRecords bool     `json:"has_records,omitempty"`
	// ShareStarts are a share group's share-partition start offsets
	// (DescribeShareGroupOffsets), when the run has share members.
	ShareStarts []ShareStart `json:"share_starts,omitempty"`
}

// Observations is observations.json: the final reads of a run after heal and quiesce, and the
// checkpoints the run took on the way (for example after each broker restart), in time order.
type Observations struct {
	Group       string     `json:"group"`
	Final       Snapshot   `json:"final"`
	Checkpoints []Snapshot `json:"checkpoints,omitempty"`
	// TopicIDs maps topic name → topic id in Kafka's form (Uuid.toString:
	// 22 characters of URL-safe base64), as the cluster's metadata said when
	// the observer read the records. Consumer-group records name topics by
	// id only, while describes and checkers name them, so a replay needs
	// this to compare assignments; nil in run directories written before it
	// was recorded.
	TopicIDs map[string]string `json:"topic_ids,omitempty"`
	// ShareRecovery, for a share group's run, is what the observer read
	// after every member closed (share.go).
	ShareRecovery *ShareRecovery `json:"share_recovery,omitempty"`
}

// All returns the checkpoints followed by the final snapshot.
func (o *Observations) All() []Snapshot {
	if o == nil {
		return nil
	}
	out := append([]Snapshot(nil), o.Checkpoints...)
	return append(out, o.Final)
}

// WriteObservations writes o as indented JSON.
func WriteObservations(w io.Writer, o *Observations) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(o)
}

// ReadObservations reads observations.json. Numbers inside records stay json.Number.
func ReadObservations(r io.Reader) (*Observations, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var o Observations
	if err := dec.Decode(&o); err != nil {
		return nil, fmt.Errorf("observations are not valid JSON (%v): re-run the final observation step or restore observations.json", err)
	}
	return &o, nil
}

// SaveObservations writes observations.json at path.
func SaveObservations(path string, o *Observations) error {
	var b bytes.Buffer
	if err := WriteObservations(&b, o); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// LoadObservations reads observations.json from path.
func LoadObservations(path string) (*Observations, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	o, err := ReadObservations(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

// Plan is the part of a run's plan that the checkers need: which group and partitions, and the
// timers the convergence bound is computed from. The full scenario lives in harness/run; this is
// kept minimal and plain so that an offline re-check needs nothing else.
type Plan struct {
	Group    string `json:"group"`
	Protocol string `json:"protocol"`
	// Topics lists the subscribed topics and their partition counts: every one of these partitions
	// must be owned once the group has converged.
	Topics []TopicPlan `json:"topics"`
	// The timers of the scenario (consumer: group.consumer.session.timeout.ms and heartbeat interval,
	// the member's rebalance timeout; classic: session.timeout.ms, heartbeat.interval.ms,
	// max.poll.interval.ms).
	SessionTimeout    time.Duration `json:"session_timeout"`
	HeartbeatInterval time.Duration `json:"heartbeat_interval"`
	RebalanceTimeout  time.Duration `json:"rebalance_timeout"`
	// ConvergenceSlack is added to the bound for what the timers do not cover: coordinator
	// failover and log load, leader election, group.consumer.assignment.interval.ms (4.3+).
	ConvergenceSlack time.Duration `json:"convergence_slack,omitempty"`
	// ConvergenceBound, when positive, replaces the computed bound.
	ConvergenceBound time.Duration `json:"convergence_bound,omitempty"`
	// Kinds names each member's implementation ("kgo-consumer"), by member
	// name: a finding of one client matches only its members.
	Kinds map[string]string `json:"kinds,omitempty"`
	// Share is set when the run has share members: the broker's share
	// settings the share checkers judge against.
	Share *SharePlan `json:"share,omitempty"`
}

// TopicPlan is one subscribed topic.
type TopicPlan struct {
	Name       string `json:"name"`
	Partitions int32  `json:"partitions"`
}

// Partitions lists every planned partition in canonical order.
func (p Plan) Partitions() []TP {
	var out []TP
	for _, t := range p.Topics {
		for i := int32(0); i < t.Partitions; i++ {
			out = append(out, TP{t.Name, i})
		}
	}
	SortTPs(out)
	return out
}
