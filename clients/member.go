// Package clients holds what groupquake's two consumer-group members share:
// the Member interface the workload drives and the Hooks through which a
// member reports every state change, with the generation or epochs it
// happened at and why. The members themselves live in clients/classic
// (JoinGroup/SyncGroup/Heartbeat) and clients/consumer (KIP-848
// ConsumerGroupHeartbeat); client-side assignors in clients/assign.
//
// This package never imports the harness: the workload adapts Hooks events
// into the run's history.
//
// # Calls: when a request leaves and when its answer comes
//
// A member reports every group request it sends, of the kinds the history
// records as calls (JoinGroup, SyncGroup, Heartbeat, ConsumerGroupHeartbeat,
// LeaveGroup or the leave heartbeat, OffsetCommit), twice:
//
//  1. Sent, when the request leaves (or is handed to the client library that
//     sends it, never later): Call is a number unique within the member, Op
//     says what the request is, and the event carries what the request
//     carries: MemberID, Generation (classic) or MemberEpoch (consumer) as
//     sent, InstanceID, Offsets of a commit, App for a commit the
//     application asked for through Member.Commit.
//  2. Exactly one answer, when the answer comes or when the member stops
//     waiting for it: an event with the same Call and Op, whose Kind is the
//     op's outcome (Joined, Synced, Heartbeat, Left, Committed,
//     CommitFailed), or Error for a JoinGroup or SyncGroup that failed
//     (Joined and Synced mean the member got a generation or an
//     assignment). Err with ErrCode names the Kafka error the answer
//     carried; Err without ErrCode means there was no answer (a transport
//     error, a timeout, the member closing): the outcome is unknown. The
//     answer carries the result: Generation, MemberID and Leader of a
//     JoinGroup, Partitions of a SyncGroup, MemberEpoch and Partitions (if
//     any) of a ConsumerGroupHeartbeat, PartitionErrs of an OffsetCommit.
//
// The answer is reported before anything the member does because of it
// (Fenced, Lost, Assigned, a rejoin), so "the completion precedes the use
// of its result" holds in the history. Events that answer no request carry
// Call 0. A commit that was refused before anything was sent (Commit for
// partitions not owned, outside a generation) is reported, if at all, as
// Committed or CommitFailed with Call 0: nothing left the member.
//
// Calls of one lane never overlap, so each lane is one process of the
// history (a process has at most one open call):
//   - LaneHeartbeat: heartbeats and leaves (for the consumer protocol the
//     epoch-0 heartbeat that joins too); one heartbeat goroutine sends them.
//   - LaneJoin: classic JoinGroup and SyncGroup. They run on the join loop,
//     and the heartbeat thread keeps heartbeating while a SyncGroup is in
//     flight (Java's HeartbeatThread does the same), so a join and a
//     heartbeat can be in flight at once: two lanes.
//   - commits: one OffsetCommit of a member in flight at a time, whether the
//     member or the application made it (the commit lane of clients/classic
//     and clients/consumer), recorded on the application's process (App)
//     or the member's own.
package clients

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"
)

// ErrStopped is wrapped by the error Poll returns once the member has
// stopped for good on its own (a fatal error: a KafkaConsumer throws it
// from poll and must be closed). It never comes back into the group by
// itself, so the harness need not wait for it.
var ErrStopped = errors.New("the member stopped for good")

// Protocol is the consumer-group protocol a member speaks.
type Protocol string

const (
	// Classic is JoinGroup/SyncGroup/Heartbeat (KIP-62, KIP-345, KIP-429).
	Classic Protocol = "classic"
	// Consumer is the KIP-848 ConsumerGroupHeartbeat protocol.
	Consumer Protocol = "consumer"
)

// Epochs places epoch, a generation (Classic) or a member epoch (Consumer),
// in the two fields events and records carry; the other is -1.
func (p Protocol) Epochs(epoch int32) (generation, memberEpoch int32) {
	if p == Consumer {
		return -1, epoch
	}
	return epoch, -1
}

// Partitions maps a topic to partition numbers, sorted.
type Partitions map[string][]int32

// Clone returns a deep copy.
func (p Partitions) Clone() Partitions {
	out := make(Partitions, len(p))
	for t, ps := range p {
		out[t] = slices.Clone(ps)
	}
	return out
}

// Count is the number of partitions.
func (p Partitions) Count() int {
	n := 0
	for _, ps := range p {
		n += len(ps)
	}
	return n
}

// Minus returns the partitions of p that are not in q, each topic's in p's
// order; a topic with none left is left out.
func (p Partitions) Minus(q Partitions) Partitions {
	out := Partitions{}
	for t, ps := range p {
		for _, x := range ps {
			if !slices.Contains(q[t], x) {
				out[t] = append(out[t], x)
			}
		}
	}
	return out
}

// Topics returns the topics, sorted.
func (p Partitions) Topics() []string {
	return slices.Sorted(maps.Keys(p))
}

// Apply updates p, whose topics' partitions are sorted, with an ownership
// change: Assigned adds change's partitions, any other kind (Revoked,
// Lost) removes them. The lists stay sorted and free of repeats; a topic
// with none left is deleted.
func (p Partitions) Apply(k Kind, change Partitions) {
	for t, ps := range change {
		for _, x := range ps {
			cur := p[t]
			i, found := slices.BinarySearch(cur, x)
			switch {
			case k == Assigned && !found:
				p[t] = slices.Insert(cur, i, x)
			case k != Assigned && found:
				p[t] = slices.Delete(cur, i, i+1)
			}
		}
		if len(p[t]) == 0 {
			delete(p, t)
		}
	}
}

// Kind is what a member reports.
type Kind string

// What a member reports. Every state change goes out as exactly one event.
const (
	// Membership.
	FoundCoordinator Kind = "found-coordinator" // Node set
	Joined           Kind = "joined"            // classic: JoinGroup answered (Generation, MemberID, Leader); consumer: first epoch
	Synced           Kind = "synced"            // classic: SyncGroup answered with the assignment (Partitions)
	Heartbeat        Kind = "heartbeat"         // a heartbeat's outcome (Err for errors); consumer: epochs
	Fenced           Kind = "fenced"            // the coordinator fenced this member (Err names why)
	Left             Kind = "left"              // LeaveGroup / leave heartbeat sent and answered
	SessionExpired   Kind = "session-expired"   // poll or rebalance timeout made the member leave on its own
	// Ownership. Partitions lists exactly the partitions concerned.
	Assigned Kind = "assigned" // the member now owns these and may consume them
	Revoked  Kind = "revoked"  // the member gave these up cleanly (after committing, when it commits)
	Lost     Kind = "lost"     // the member lost these without a clean hand-off (fenced, session gone)
	// Offsets.
	Committed    Kind = "committed"     // an OffsetCommit answered; Offsets and per-partition Errs
	CommitFailed Kind = "commit-failed" // an OffsetCommit failed as a whole
	Fetched      Kind = "fetched"       // OffsetFetch answered; Offsets
	// Anything the member reports that changes nothing else (a retried request, a fatal error).
	Error Kind = "error"
	// Sent: a request left; Call and Op name it (see the package doc).
	Sent Kind = "sent"
)

// Op is the kind of request a call is.
type Op string

// The requests reported as calls.
const (
	OpJoin      Op = "join"      // classic JoinGroup
	OpSync      Op = "sync"      // classic SyncGroup
	OpHeartbeat Op = "heartbeat" // classic Heartbeat or ConsumerGroupHeartbeat (the epoch-0 join included)
	OpLeave     Op = "leave"     // LeaveGroup or ConsumerGroupHeartbeat with epoch -1/-2
	OpCommit    Op = "commit"    // OffsetCommit
)

// Lane is the sequence of calls a request belongs to: calls of one lane
// never overlap.
type Lane string

const (
	LaneHeartbeat Lane = "hb"
	LaneJoin      Lane = "join"
	LaneCommit    Lane = "commit"
)

// Lane returns the lane of op.
func (o Op) Lane() Lane {
	switch o {
	case OpJoin, OpSync:
		return LaneJoin
	case OpCommit:
		return LaneCommit
	case OpShareFetch, OpShareAck:
		return LaneFetch
	}
	return LaneHeartbeat
}

// Event is one state change of a member.
type Event struct {
	Kind     Kind
	Protocol Protocol
	// Member is the harness's name for the member (stable across rejoins).
	Member string
	// MemberID is the coordinator's id for it; InstanceID the static id.
	MemberID   string
	InstanceID string
	// Generation is the classic generation (-1 when none).
	Generation int32
	// MemberEpoch and GroupEpoch are the consumer protocol's epochs (-1 when none).
	MemberEpoch int32
	GroupEpoch  int32
	// Leader is set on a classic Joined event when this member leads.
	Leader bool
	// Node is the coordinator's node id, for FoundCoordinator.
	Node int32
	// Partitions are the partitions an ownership event concerns; on Synced
	// and on a consumer Heartbeat that carries one, the whole assignment.
	Partitions Partitions
	// Offsets are committed or fetched offsets: topic → partition → offset.
	Offsets map[string]map[int32]int64
	// ErrCode is the Kafka error code (0 when none); Err its name, e.g.
	// ILLEGAL_GENERATION, or a transport error's text.
	ErrCode int16
	Err     string
	// PartitionErrs are per-partition Kafka error names of an OffsetCommit.
	PartitionErrs map[string]map[int32]string
	// Why says why the change happened, in words a reader of the history
	// understands ("eager rebalance: revoke everything before JoinGroup").
	Why string
	// At is when the member observed it (the member's clock).
	At time.Time
	// Call numbers the request the event reports (Sent or its answer), 0
	// for events that report no request; Op says what the request is.
	Call uint64
	Op   Op
	// App marks a commit the application asked for (Member.Commit), as
	// opposed to one the member makes on its own.
	App bool
	// Share describes a share member's ShareFetch or ShareAcknowledge
	// (share_events.go); nil on every other event.
	Share *ShareCall
	// AfterPoll, on an ownership event (Assigned, Revoked, Lost) of a
	// member whose ownership changes exclude Poll, is how many of its Polls
	// had returned when the change was made (see Record.Poll); nil when the
	// member does not say.
	AfterPoll *uint64
}

// Hooks receive a member's events, in the order they happened, from the
// member's goroutines: an implementation must be safe for concurrent use
// and must not block for long (the heartbeat path calls it).
type Hooks interface {
	OnEvent(Event)
}

// HookFunc adapts a function to Hooks.
type HookFunc func(Event)

// OnEvent calls f.
func (f HookFunc) OnEvent(e Event) { f(e) }

// Record is one consumed record as the workload sees it.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	// Generation or member epoch the member held when it returned the record.
	Generation  int32
	MemberEpoch int32
	// Poll numbers the Poll that returned the record (1, 2, ...) for a
	// member whose ownership changes exclude Poll; 0 when it does not say.
	// The workload writes a Poll's records after Poll returned, and the
	// member may report an ownership change meanwhile: with Event.AfterPoll
	// the history still says which came first.
	Poll uint64
}

// Member is a consumer-group member the workload drives, whatever its
// protocol. A member joins on Start and keeps its membership alive on its
// own goroutines until Close; Poll hands out records of the partitions it
// owns at that moment, never of a partition it has not been given or has
// already given up.
type Member interface {
	// Name is the harness's name for the member.
	Name() string
	// Protocol is the protocol it speaks.
	Protocol() Protocol
	// Start finds the coordinator and joins; it returns once the member
	// runs (not when it owns partitions).
	Start(ctx context.Context) error
	// Poll returns records of owned partitions, waiting at most until ctx
	// ends. It also counts as liveness for max.poll.interval.ms.
	Poll(ctx context.Context) ([]Record, error)
	// Owned is the member's current assignment.
	Owned() Partitions
	// Commit commits offsets (next offset to read) for owned partitions with
	// the member's current generation or epoch, and returns per-partition
	// errors by Kafka error name.
	Commit(ctx context.Context, offsets map[string]map[int32]int64) (map[string]map[int32]string, error)
	// Close leaves the group (LeaveGroup, or a leave heartbeat with epoch -1,
	// -2 for a static member) and stops every goroutine.
	Close(ctx context.Context) error
}
