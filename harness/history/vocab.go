package history

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// The event vocabulary: the F values that clients, producers, the nemesis and the observer emit, and
// the payload type that goes with each. One payload type per F (shared where the Kafka meaning is
// the same), carried on the invoke and, filled in with the outcome, on the completion.
//
// Ordering that the checkers rely on (writers, please keep it):
//   - a member records "revoked" before it acknowledges the revocation to the coordinator (the
//     classic rejoin, or the consumer-protocol heartbeat that carries the smaller owned set), because
//     only that acknowledgement lets another member be assigned the partition;
//   - a member records "assigned" when it may start fetching, before the first "consume";
//   - "lost" (onPartitionsLost) is recorded when the member learns it was fenced, never later than
//     its next join or epoch-0 heartbeat;
//   - a completion is recorded before the client acts on its result (a heartbeat response that
//     hands out a new epoch is recorded before that epoch is used in a commit);
//   - a member the harness kills cannot speak for itself: the workload records FSessionExpired
//     for it once the coordinator has removed it, so its partitions count as lost.
const (
	// FProduce: a producer's send of one record. invoke → ok (acknowledged, Offset set) | fail
	// (certainly not written) | info (timeout: maybe written). Process: the producer.
	FProduce = "produce"
	// FConsume: a member handed one record to the application. Standalone info.
	FConsume = "consume"
	// FCommit: OffsetCommit. invoke → ok (the coordinator accepted every partition without an entry
	// in PartitionErrors) | fail (rejected; Error names the Kafka error) | info (unknown outcome).
	FCommit = "commit"
	// FAssigned, FRevoked, FLost: the member's owned set changed (onPartitionsAssigned /
	// onPartitionsRevoked / onPartitionsLost). Standalone info. Revoked means released in order;
	// lost means the member learned it had been fenced and did not get to release cleanly.
	FAssigned = "assigned"
	FRevoked  = "revoked"
	FLost     = "lost"
	// FJoin: classic JoinGroup (including the MEMBER_ID_REQUIRED round trip as a fail).
	FJoin = "join"
	// FSync: classic SyncGroup.
	FSync = "sync"
	// FHeartbeat: classic Heartbeat or KIP-848 ConsumerGroupHeartbeat (Protocol says which).
	FHeartbeat = "heartbeat"
	// FLeave: classic LeaveGroup or a ConsumerGroupHeartbeat with epoch -1/-2.
	FLeave = "leave"
	// FOffsetFetch: a member read the committed offsets of partitions it was given (its client's
	// OffsetFetch answer, through its hooks). Standalone info; Value holds "member" and "offsets".
	FOffsetFetch = "offset-fetch"
	// FFenced: the member learned it is no longer in the group at its epoch (FENCED_MEMBER_EPOCH,
	// UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID). Standalone info.
	FFenced = "fenced"
	// FLeft: the member left the group cleanly (after its leave call). Standalone info.
	FLeft = "left"
	// FSessionExpired: the session of the member expired on the coordinator: recorded by the member
	// when it learns it, or by the observer when it sees the member gone. Standalone info.
	FSessionExpired = "session-expired"
	// FStopped: the member stopped for good on its own (its Poll says so, as a KafkaConsumer's
	// poll throws after a fatal error); recorded once by the workload, Error says why. Standalone
	// info.
	FStopped = "stopped"
	// FRestart: the member's supervisor acted on it after it stopped for good, as systemd or
	// Kubernetes restarts a process whose consumer threw a fatal error and exited (Restart says
	// what it did, after which stop and at which attempt). Standalone info on the member's process.
	FRestart = "restart"
	// FFaultStart, FFaultStop: the nemesis applied or healed a fault. invoke → ok | fail | info,
	// process "nemesis"; Value says what was really done.
	FFaultStart = "fault-start"
	FFaultStop  = "fault-stop"
	// FFaultEdge: a fault that changes its target again and again while in force (link-flap: it
	// cuts the client's link and restores it, over and over) made one change, recorded once it took
	// effect, so the event's time is when the link went down or came back up. Standalone info on
	// the fault's process ("nemesis/3"), never a call: it neither starts nor ends a fault, and its
	// F is not the open fault-start or fault-stop's. Value is a FaultEdge. The first cut, made by
	// the apply, is cut 1, recorded before the fault-start's completion; each cut is followed by the
	// up that ended it, the last one made by the heal (then Final, recorded before the fault-stop's
	// completion) unless the flapping ended in an up window.
	FFaultEdge = "fault-edge"
	// FPhase: a phase of the run began. Standalone info from process "harness".
	FPhase = "phase"
	// FDescribe: the observer's DescribeGroups / ConsumerGroupDescribe plus OffsetFetch.
	// invoke → ok (Value holds the snapshot) | fail | info.
	FDescribe = "describe"
	// FStall: the harness process itself did not run for a while (a starved machine, a stopped
	// process): its pulse, a goroutine that wakes at a short period for nothing else, woke late by
	// at least a threshold. Recorded once per late wake-up, when the pulse runs again; Stall says
	// from when to when. Standalone info from process "harness". Members that run in the harness's
	// process could not heartbeat meanwhile: EventuallyConverges does not charge the group for it.
	FStall = "stall"
)

// Protocol names as in group.protocol: the classic JoinGroup/SyncGroup protocol or KIP-848's.
const (
	ProtocolClassic  = "classic"
	ProtocolConsumer = "consumer"
)

// Phase names, in the order a run goes through them (docs/design.md "A run").
const (
	PhaseSetup    = "setup"
	PhaseWarmup   = "warmup"
	PhaseWorkload = "workload"
	PhaseHeal     = "heal"
	PhaseQuiesce  = "quiesce"
	PhaseFinal    = "final"
	PhaseTeardown = "teardown"
)

// TP is a topic partition.
type TP struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TP) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// TPs builds a sorted partition list of one topic: TPs("orders", 0, 1, 2).
func TPs(topic string, partitions ...int32) []TP {
	out := make([]TP, len(partitions))
	for i, p := range partitions {
		out[i] = TP{topic, p}
	}
	SortTPs(out)
	return out
}

// SortTPs sorts by topic, then partition, so that assignments compare and print canonically.
func SortTPs(tps []TP) { SortByTP(tps, func(tp TP) TP { return tp }) }

// SortByTP sorts s by the topic, then the partition, that tp reads from each element.
func SortByTP[T any](s []T, tp func(T) TP) {
	sort.Slice(s, func(i, j int) bool {
		a, b := tp(s[i]), tp(s[j])
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
}

// OffsetAt is a committed offset: the offset of the next record to consume, as Kafka stores it.
type OffsetAt struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// TP returns the partition of o.
func (o OffsetAt) TP() TP { return TP{o.Topic, o.Partition} }

// PartitionError is a per-partition error of a partially failed request (for OffsetCommit only
// OFFSET_METADATA_TOO_LARGE, UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED can differ per partition).
type PartitionError struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Error     string `json:"error"`
}

// Produce is the payload of FProduce. Seq is the workload's sequence number carried in the record
// (unique per topic for the run), so a consumed record can be matched to its send even when the
// offset is unknown.
type Produce struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Seq       int64  `json:"seq"`
	// Offset is the offset the broker acknowledged; -1 until then.
	Offset int64 `json:"offset"`
	// Acked is true on the ok completion (acks=all acknowledged).
	Acked bool `json:"acked,omitempty"`
	// Error is the Kafka error name of a failed send.
	Error string `json:"error,omitempty"`
}

// Consume is the payload of FConsume: Member handed record (Topic, Partition, Offset) to the
// application while it owned the partition at Epoch.
type Consume struct {
	Member    string `json:"member"`
	Protocol  string `json:"protocol,omitempty"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Seq       int64  `json:"seq"`
	// Epoch is the classic generation or the KIP-848 member epoch the member held.
	Epoch int32 `json:"epoch"`
	// Poll numbers the member's Poll that handed the record out, when the member says
	// (groupquake's own members); see Assignment.AfterPoll.
	Poll uint64 `json:"poll,omitempty"`
}

// TP returns the partition of c.
func (c Consume) TP() TP { return TP{c.Topic, c.Partition} }

// Commit is the payload of FCommit.
//
// Epoch is OffsetCommit's GenerationIdOrMemberEpoch: the classic generation, or the member epoch of
// a consumer-protocol member; a negative value is an admin or manual-assignment commit that the
// coordinator accepts without a member (KafkaApis / OffsetMetadataManager.validateOffsetCommit).
// The protocol names the errors of a stale commit: ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID for
// classic groups, STALE_MEMBER_EPOCH or UNKNOWN_MEMBER_ID for consumer groups (ILLEGAL_GENERATION
// for classic members of a consumer group), FENCED_INSTANCE_ID for a replaced static member.
type Commit struct {
	Member     string     `json:"member"`
	MemberID   string     `json:"member_id,omitempty"`
	InstanceID string     `json:"instance_id,omitempty"`
	Protocol   string     `json:"protocol,omitempty"`
	Epoch      int32      `json:"epoch"`
	Offsets    []OffsetAt `json:"offsets"`
	// Reset marks a commit that deliberately moves offsets backwards (a workload seek or reset), so
	// CommittedOffsetMonotonic does not count it.
	Reset bool `json:"reset,omitempty"`
	// Error is the Kafka error name of the whole request on fail ("STALE_MEMBER_EPOCH").
	Error string `json:"error,omitempty"`
	// PartitionErrors lists partitions that failed inside an otherwise accepted request.
	PartitionErrors []PartitionError `json:"partition_errors,omitempty"`
}

// Call is what the commit names as a group call.
func (v Commit) Call() CallFacts { return CallFacts{v.Member, v.MemberID, v.Error} }

// Assignment is the payload of FAssigned, FRevoked and FLost: the partitions that were added to or
// removed from the member's owned set (not the whole set), and the epoch the member held then.
type Assignment struct {
	Member     string `json:"member"`
	MemberID   string `json:"member_id,omitempty"`
	Protocol   string `json:"protocol"`
	Epoch      int32  `json:"epoch"`
	Partitions []TP   `json:"partitions"`
	// AfterPoll is how many of the member's Polls had returned when the change was made, when
	// the member says: the workload writes a Poll's records (FConsume, with Consume.Poll) after
	// Poll returned, so a change reported meanwhile may precede them in the history although
	// the records were handed out first.
	AfterPoll *uint64 `json:"after_poll,omitempty"`
}

// Join is the payload of FJoin (classic JoinGroup). The completion carries the generation the
// coordinator returned, the member id and the leader.
type Join struct {
	Member       string `json:"member"`
	MemberID     string `json:"member_id,omitempty"`
	InstanceID   string `json:"instance_id,omitempty"`
	Generation   int32  `json:"generation"`
	Leader       string `json:"leader,omitempty"`
	ProtocolName string `json:"protocol_name,omitempty"`
	Error        string `json:"error,omitempty"`
}

// Call is what the join names as a group call.
func (v Join) Call() CallFacts { return CallFacts{v.Member, v.MemberID, v.Error} }

// Sync is the payload of FSync (classic SyncGroup).
type Sync struct {
	Member     string `json:"member"`
	MemberID   string `json:"member_id,omitempty"`
	Generation int32  `json:"generation"`
	Assignment []TP   `json:"assignment,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Call is what the sync names as a group call.
func (v Sync) Call() CallFacts { return CallFacts{v.Member, v.MemberID, v.Error} }

// Heartbeat is the payload of FHeartbeat. For a classic Heartbeat, Epoch is the generation sent and
// nothing comes back but an error. For a ConsumerGroupHeartbeat, Epoch is the member epoch sent and,
// on the completion, ResultEpoch is the epoch returned and Assignment the assignment returned
// (HasAssignment distinguishes "no assignment in the response" from "empty assignment").
type Heartbeat struct {
	Member        string `json:"member"`
	MemberID      string `json:"member_id,omitempty"`
	InstanceID    string `json:"instance_id,omitempty"`
	Protocol      string `json:"protocol"`
	Epoch         int32  `json:"epoch"`
	ResultEpoch   int32  `json:"result_epoch,omitempty"`
	HasAssignment bool   `json:"has_assignment,omitempty"`
	Assignment    []TP   `json:"assignment,omitempty"`
	Error         string `json:"error,omitempty"`
}

// Call is what the heartbeat names as a group call.
func (v Heartbeat) Call() CallFacts { return CallFacts{v.Member, v.MemberID, v.Error} }

// Leave is the payload of FLeave: classic LeaveGroup or a ConsumerGroupHeartbeat at epoch -1
// (leave) or -2 (static member's temporary leave).
type Leave struct {
	Member   string `json:"member"`
	MemberID string `json:"member_id,omitempty"`
	Protocol string `json:"protocol"`
	Epoch    int32  `json:"epoch"`
	Error    string `json:"error,omitempty"`
}

// Call is what the leave names as a group call.
func (v Leave) Call() CallFacts { return CallFacts{v.Member, v.MemberID, v.Error} }

// CallFacts is what every group call's payload (Join, Sync, Heartbeat,
// Leave, Commit) names: the member, the member id it carried, and the Kafka
// error of its completion.
type CallFacts struct {
	Member, MemberID, Error string
}

// GroupCall is a group call's payload: Join, Sync, Heartbeat, Leave or
// Commit.
type GroupCall interface{ Call() CallFacts }

// Membership is the payload of FFenced, FLeft and FSessionExpired. Error is the Kafka error that
// told the member ("FENCED_MEMBER_EPOCH"), empty when the observer inferred it.
type Membership struct {
	Member   string `json:"member"`
	MemberID string `json:"member_id,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Epoch    int32  `json:"epoch"`
	Error    string `json:"error,omitempty"`
}

// What a member's supervisor did (Restart.Action).
const (
	// RestartScheduled: the member stopped for good and its process exited; a new one starts
	// after Backoff.
	RestartScheduled = "scheduled"
	// RestartStarted: the new incarnation starts (a new member id; a static member keeps its
	// instance id).
	RestartStarted = "restarted"
	// RestartCancelled: the harness took the member over before the restart was due (it left
	// or was withdrawn); the restart does not happen.
	RestartCancelled = "cancelled"
)

// Restart is the payload of FRestart.
type Restart struct {
	Member string `json:"member"`
	Action string `json:"action"`
	// Attempt counts the restarts since the member was last taken into the group: 1 for the
	// first after it stopped, 2 when the incarnation that restart started stopped too before
	// the group took it in, and so on. The backoff grows with it.
	Attempt int `json:"attempt"`
	// Backoff is how long the supervisor waits before this attempt.
	Backoff time.Duration `json:"backoff"`
	// Reason is why the member stopped (the error its Poll gave), or why the restart was
	// cancelled.
	Reason string `json:"reason,omitempty"`
}

// Fault is the payload of FFaultStart and FFaultStop: what was done to which targets, as the nemesis
// really did it (Jepsen's annotated op), not only as planned.
type Fault struct {
	// What names the fault: "partition", "latency", "pause", "kill", "restart", …
	What string `json:"what"`
	// Target names what it applied to: "broker-2", "m3->coordinator", "group-coordinator".
	Target []string `json:"target,omitempty"`
	// Params holds fault-specific settings ("latency": "200ms").
	Params map[string]string `json:"params,omitempty"`
	// Effect says what the fault was seen to do: on a start, what applying it saw (which node was
	// the coordinator, whether the rebalance it waited for came); on a stop, what happened to the
	// group while it was in force (calls that failed, members fenced, coordinator moves).
	Effect string `json:"effect,omitempty"`
	// NoEffect, on a stop, says why the fault is judged to have had no effect on the group: no
	// call of the members failed, nobody was fenced or expired, no partition moved.
	NoEffect string `json:"no_effect,omitempty"`
	Error    string `json:"error,omitempty"`
}

// The edges of a FaultEdge.
const (
	EdgeCut = "cut" // the link went down
	EdgeUp  = "up"  // the link came back up
)

// FaultEdge is the payload of FFaultEdge: one change a flapping fault made to its target. The fault
// is named as in its fault-start (What, Target); the windows in which the link was down are each
// cut to the up with the same Cut.
type FaultEdge struct {
	What   string   `json:"what"`
	Target []string `json:"target,omitempty"`
	// Edge is EdgeCut or EdgeUp.
	Edge string `json:"edge"`
	// Cut numbers the cuts of the fault from 1; an up carries the number of the cut it ended.
	Cut int `json:"cut"`
	// Final marks the up the heal made: the flapping is over.
	Final bool `json:"final,omitempty"`
	// Error is the error of a change that failed: the flapping stopped there, and the link may be
	// either way until the heal.
	Error string `json:"error,omitempty"`
}

// Phase is the payload of FPhase.
type Phase struct {
	Name string `json:"name"`
	// Members, on the "final" phase, names the members the harness runs
	// at the final observation, those their supervisor is restarting
	// included (those it took out for good, refused or replaced are not
	// among them): each must be in the group.
	Members []string `json:"members,omitempty"`
	// Stopped, on the "teardown" phase of a run that stopped before its end,
	// says why and where: "interrupted by SIGINT in its workload phase at
	// 7.2s", "stopped by its bound (--bound) in its quiesce phase at 30m0s".
	Stopped string `json:"stopped,omitempty"`
}

// Stall is the payload of FStall: the harness's pulse was due to run at From and ran only at To
// (times since the start of the run, as Event.Time), so the harness process did not run from From
// to To; Every is the pulse's period. The event itself is recorded at about To.
type Stall struct {
	From  time.Duration `json:"from"`
	To    time.Duration `json:"to"`
	Every time.Duration `json:"every"`
}

// Len is how long the harness did not run.
func (s Stall) Len() time.Duration { return s.To - s.From }

// Describe is the payload of FDescribe: what the observer saw at one moment.
type Describe struct {
	Group *GroupDescription `json:"group,omitempty"`
	// Committed holds OffsetFetch's answer for the group's partitions; a partition without a
	// committed offset (OffsetFetch's -1) is left out or given as -1.
	Committed []OffsetAt `json:"committed,omitempty"`
	// HasCommitted is true when the observer fetched committed offsets (an empty list then means
	// "nothing committed", not "not fetched").
	HasCommitted bool   `json:"has_committed,omitempty"`
	Error        string `json:"error,omitempty"`
}

// DecodeValue decodes the raw payload of an event with this F into its typed form. An F outside the
// vocabulary keeps its raw JSON, so a newer writer never breaks an older reader.
func DecodeValue(f string, raw json.RawMessage) (any, error) {
	switch f {
	case FProduce:
		return decodeAs[Produce](raw)
	case FConsume:
		return decodeAs[Consume](raw)
	case FCommit:
		return decodeAs[Commit](raw)
	case FAssigned, FRevoked, FLost:
		return decodeAs[Assignment](raw)
	case FJoin:
		return decodeAs[Join](raw)
	case FSync:
		return decodeAs[Sync](raw)
	case FHeartbeat:
		return decodeAs[Heartbeat](raw)
	case FLeave:
		return decodeAs[Leave](raw)
	case FFenced, FLeft, FSessionExpired, FStopped:
		return decodeAs[Membership](raw)
	case FRestart:
		return decodeAs[Restart](raw)
	case FFaultStart, FFaultStop:
		return decodeAs[Fault](raw)
	case FFaultEdge:
		return decodeAs[FaultEdge](raw)
	case FPhase:
		return decodeAs[Phase](raw)
	case FDescribe:
		return decodeAs[Describe](raw)
	case FStall:
		return decodeAs[Stall](raw)
	case FShareHeartbeat:
		return decodeAs[ShareHeartbeat](raw)
	case FShareFetch, FShareAck:
		return decodeAs[ShareFetch](raw)
	}
	return append(json.RawMessage(nil), raw...), nil
}

func decodeAs[T any](raw json.RawMessage) (any, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("payload is not a %T: %w", v, err)
	}
	return v, nil
}

// TypedValue returns e's payload in the form Load gives it: the payload struct (not a pointer) for
// an F of the vocabulary, raw JSON for any other F. It decodes raw JSON and dereferences pointers,
// so checkers can type-switch on values whichever way the event was built.
func TypedValue(e Event) (any, error) {
	switch v := e.Value.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if len(v) == 0 || string(v) == "null" {
			return nil, nil
		}
		return DecodeValue(e.F, v)
	case *Produce:
		return deref(v), nil
	case *Consume:
		return deref(v), nil
	case *Commit:
		return deref(v), nil
	case *Assignment:
		return deref(v), nil
	case *Join:
		return deref(v), nil
	case *Sync:
		return deref(v), nil
	case *Heartbeat:
		return deref(v), nil
	case *Leave:
		return deref(v), nil
	case *Membership:
		return deref(v), nil
	case *Fault:
		return deref(v), nil
	case *FaultEdge:
		return deref(v), nil
	case *Restart:
		return deref(v), nil
	case *Phase:
		return deref(v), nil
	case *Describe:
		return deref(v), nil
	case *Stall:
		return deref(v), nil
	case *ShareHeartbeat:
		return deref(v), nil
	case *ShareFetch:
		return deref(v), nil
	}
	return e.Value, nil
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
