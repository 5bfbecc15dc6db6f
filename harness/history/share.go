package history

import "time"

// Share groups (KIP-932): the events a share member reports. A share member
// is not given partitions of its own: many members fetch one partition, and
// the broker (the share-partition leader) hands each of them records under
// an acquisition lock with a delivery count. So the words of the consumer
// groups (assigned, revoked, consume, commit) do not apply, and share
// members speak only these, on processes of their own (name+"/hb" for
// heartbeats, name+"/fetch" for ShareFetch and ShareAcknowledge); a checker
// of consumer groups never reads them.
//
// Ordering (as vocab.go's rules): a completion is written before the member
// acts on it, so an acquisition is in the history before the member hands
// the records to the application or acknowledges them.
const (
	// FShareHeartbeat: ShareGroupHeartbeat. Epoch 0 joins, -1 leaves.
	// invoke → ok (answered without error: ResultEpoch, the assignment if
	// any) | fail (answered with an error) | info (no answer).
	FShareHeartbeat = "share-heartbeat"
	// FShareFetch: ShareFetch to one broker. The invoke carries the share
	// session epoch, the partitions asked for and the acknowledgements
	// piggybacked; the completion what was acquired (ranges with their
	// delivery count, under a lock of LockTimeoutMs from when the broker
	// acquired them) and each acknowledged partition's outcome. ok: the
	// request was answered without a top-level error (per-partition errors
	// in AckErrors, FetchErrors); fail: a top-level error (nothing was
	// acquired or acknowledged); info: no answer (a lost connection, which
	// also ends the share session on the broker, releasing what the member
	// held there).
	FShareFetch = "share-fetch"
	// FShareAck: ShareAcknowledge to one broker, with the same outcomes.
	FShareAck = "share-ack"
)

// ProtocolShare names the share-group protocol in payloads.
const ProtocolShare = "share"

// Acknowledge types as ShareFetch and ShareAcknowledge carry them
// (AcknowledgeType.java): 1 accept, 2 release, 3 reject, 4 renew (v2).
const (
	AckAccept  = "accept"
	AckRelease = "release"
	AckReject  = "reject"
	AckRenew   = "renew"
)

// ShareRange is a range of offsets of one partition, inclusive.
type ShareRange struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	First     int64  `json:"first"`
	Last      int64  `json:"last"`
}

// TP returns the partition of r.
func (r ShareRange) TP() TP { return TP{r.Topic, r.Partition} }

// Contains reports whether offset o of tp lies in r.
func (r ShareRange) Contains(tp TP, o int64) bool {
	return r.Topic == tp.Topic && r.Partition == tp.Partition && o >= r.First && o <= r.Last
}

// ShareAcquired is a range the broker handed the member, every record at
// DeliveryCount (the number of times it has been acquired, this time
// included).
type ShareAcquired struct {
	ShareRange
	DeliveryCount int16 `json:"delivery_count"`
}

// ShareAck is an acknowledgement the member sent: Type is AckAccept,
// AckRelease, AckReject or AckRenew.
type ShareAck struct {
	ShareRange
	Type string `json:"type"`
}

// ShareHeartbeat is the payload of FShareHeartbeat.
type ShareHeartbeat struct {
	Member        string `json:"member"`
	MemberID      string `json:"member_id,omitempty"`
	Epoch         int32  `json:"epoch"`
	ResultEpoch   int32  `json:"result_epoch,omitempty"`
	HasAssignment bool   `json:"has_assignment,omitempty"`
	Assignment    []TP   `json:"assignment,omitempty"`
	Error         string `json:"error,omitempty"`
}

// ShareFetch is the payload of FShareFetch and FShareAck (which leaves
// Fetch and Acquired empty).
type ShareFetch struct {
	Member   string `json:"member"`
	MemberID string `json:"member_id,omitempty"`
	// Node is the broker the request went to.
	Node int32 `json:"node"`
	// SessionEpoch is the share session epoch sent: 0 opens a session, -1
	// closes it (releasing what the member holds on that broker).
	SessionEpoch int32 `json:"session_epoch"`
	Fetch        []TP  `json:"fetch,omitempty"`
	// Acks are the acknowledgements the request carried.
	Acks []ShareAck `json:"acks,omitempty"`
	// On the completion: the acquisition lock, the ranges acquired, and
	// the error of each partition whose acknowledgements or fetch failed
	// (a partition of Acks without an entry in AckErrors was acknowledged).
	LockTimeoutMs int32            `json:"lock_timeout_ms,omitempty"`
	Acquired      []ShareAcquired  `json:"acquired,omitempty"`
	AckErrors     []PartitionError `json:"ack_errors,omitempty"`
	FetchErrors   []PartitionError `json:"fetch_errors,omitempty"`
	Error         string           `json:"error,omitempty"`
}

// AckError returns the error the answer gave the acknowledgements of tp,
// "" when it accepted them.
func (s ShareFetch) AckError(tp TP) string {
	for _, e := range s.AckErrors {
		if e.Topic == tp.Topic && e.Partition == tp.Partition {
			return e.Error
		}
	}
	return ""
}

// SharePlan is what the share checkers need of a run's broker settings.
type SharePlan struct {
	// DeliveryCountLimit is group.share.delivery.count.limit: a record
	// acquired that many times is archived, not delivered again.
	DeliveryCountLimit int16 `json:"delivery_count_limit"`
	// RecordLockMs is group.share.record.lock.duration.ms.
	RecordLockMs int32 `json:"record_lock_ms"`
	// SessionTimeoutMs and HeartbeatIntervalMs are
	// group.share.session.timeout.ms and group.share.heartbeat.interval.ms:
	// whether a time the harness did not run could have let a share
	// member's session expire. 0 in plans written before they were
	// recorded: the checkers then take the plan's session timeout and
	// heartbeat interval.
	SessionTimeoutMs    int32 `json:"session_timeout_ms,omitempty"`
	HeartbeatIntervalMs int32 `json:"heartbeat_interval_ms,omitempty"`
}

// ShareStart is one partition's share-partition start offset as
// DescribeShareGroupOffsets gives it: every record below it is acknowledged
// or archived; -1 when the group has no state for the partition.
type ShareStart struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	StartOffset int64  `json:"start_offset"`
	// End is the partition's high watermark when the observer read it.
	End   int64  `json:"end"`
	Error string `json:"error,omitempty"`
}

// ShareRecovery is what the observer reads once a share run's members
// have all closed (so nothing writes the group's state any more): the
// records of the group's partition of __consumer_offsets that belong to a
// share group (types 10–15), every record of __share_group_state, and what
// the brokers describe: ShareGroupDescribe and DescribeShareGroupOffsets.
// The recovery checker (ShareStateMatchesLog) replays the records and
// compares them with the descriptions and the history.
type ShareRecovery struct {
	Time       time.Duration `json:"time"`
	HistoryLen int64         `json:"history_len,omitempty"`
	// GroupRecords are the share-group records of the group's partition of
	// __consumer_offsets in log order; StateRecords every record of
	// __share_group_state, partition by partition in log order.
	GroupRecords []RawRecord `json:"group_records,omitempty"`
	StateRecords []RawRecord `json:"state_records,omitempty"`
	HasRecords   bool        `json:"has_records,omitempty"`
	// Describe is ShareGroupDescribe's answer; Starts are
	// DescribeShareGroupOffsets' start offsets.
	Describe *ShareGroupDescription `json:"describe,omitempty"`
	Starts   []ShareStart           `json:"starts,omitempty"`
	// TopicIDs maps the workload topics' names to their ids (Kafka's
	// Uuid form): share-group records name topics by id.
	TopicIDs map[string]string `json:"topic_ids,omitempty"`
	// Errors say what could not be read.
	Errors []string `json:"errors,omitempty"`
}

// RawRecord is a record as the broker stored it.
type RawRecord struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       []byte `json:"key"`
	Value     []byte `json:"value,omitempty"` // nil: a tombstone
}

// ShareGroupDescription is ShareGroupDescribe's answer for one group.
type ShareGroupDescription struct {
	State           string             `json:"state"`
	GroupEpoch      int32              `json:"group_epoch"`
	AssignmentEpoch int32              `json:"assignment_epoch"`
	Members         []ShareGroupMember `json:"members,omitempty"`
	Error           string             `json:"error,omitempty"`
}

// ShareGroupMember is one member of a ShareGroupDescription.
type ShareGroupMember struct {
	MemberID    string `json:"member_id"`
	MemberEpoch int32  `json:"member_epoch"`
	Assignment  []TP   `json:"assignment,omitempty"`
}
