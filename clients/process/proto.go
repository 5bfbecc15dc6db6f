// Package process runs a consumer-group member of any client as a process
// that speaks groupquake's member protocol (docs/member-protocol.md):
// newline-delimited JSON over the process's standard input and output, or
// over one connection of a local socket per member when one process hosts
// many. The harness sends hello, subscribe, poll, commit, close and crash;
// the client reports what only it knows (its rebalance callbacks, the
// records it hands to the application, the outcome of the commits it was
// asked for, commits it made on its own, whether it stopped for good). The
// group requests and their answers are read from the wire by the member's
// gateway (Gateway), which every connection of the client goes through, so
// a client reports them itself only when it says so in its ready message
// (calls "client").
//
// Member is the clients.Member of such a process; clients/java runs the
// Java KafkaConsumer on it, and the member kinds of harness/run name the
// other implementations (the Python one, Spring Kafka, a user's own).
// Transcript and Rules check a conversation against the protocol: what
// groupquake member-check reports.
package process

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Version is the member protocol version this package speaks. The harness
// offers every version it speaks in hello; the client answers ready with
// the one it chose.
const Version = 1

// Versions are the protocol versions the harness offers.
var Versions = []int{Version}

// The message types, harness to client.
const (
	THello     = "hello"
	TSubscribe = "subscribe"
	TPoll      = "poll"
	TCommit    = "commit"
	TClose     = "close"
	TCrash     = "crash"
	TAck       = "ack"
	TFreeze    = "freeze"
	TThaw      = "thaw"
)

// The message types, client to harness.
const (
	TReady      = "ready"
	TSubscribed = "subscribed"
	TPolled     = "polled"
	TCommitted  = "committed"
	TClosed     = "closed"
	TAssigned   = "assigned"
	TRevoked    = "revoked"
	TLost       = "lost"
	TOwnCommit  = "own-commit"
	TCall       = "call"
	TError      = "error"
	TStopped    = "stopped"
)

// The error codes of an error message.
const (
	// CodeUnknownMessage: the message's type is not one the receiver
	// knows. Not fatal: the receiver goes on.
	CodeUnknownMessage = "unknown_message"
	// CodeBadMessage: a line that is not a JSON object, or a message that
	// lacks a field its type needs. Not fatal.
	CodeBadMessage = "bad_message"
	// CodeUnsupportedVersion: hello offered no version the client speaks;
	// the client exits after saying so.
	CodeUnsupportedVersion = "unsupported_version"
	// CodeBadConfig: hello asked for something the client cannot do (a
	// group protocol or an assignor it does not have); the client exits.
	CodeBadConfig = "bad_config"
)

// What a client says in ready about who reports what.
const (
	// CallsWire: the client reports no calls; the gateway reads them off
	// the wire (the default, and what every shipped implementation does).
	CallsWire = "wire"
	// CallsClient: the client reports each group request itself (call
	// messages); the gateway still carries its traffic (link faults reach
	// it) but reports nothing.
	CallsClient = "client"
	// CommitsApplication: the client commits only when the harness asks
	// (commit); the default.
	CommitsApplication = "application"
	// CommitsOwn: the client commits on its own (a framework's listener
	// container); commit is not sent, and the client reports each commit it
	// made as own-commit.
	CommitsOwn = "own"
	// CapFreeze: the client stops on freeze and goes on at thaw (a
	// process that hosts many members, where SIGSTOP would stop them all).
	CapFreeze = "freeze"
)

// Msg is one protocol message, either way: one JSON object a line. Type
// says which; the other fields are those of its type (the spec lists them)
// and are left out when empty. A receiver ignores fields it does not know.
type Msg struct {
	Type string `json:"type"`
	// ID numbers a command (hello, subscribe, poll, commit, close); its
	// answer repeats it. An error answering a command repeats it too.
	ID uint64 `json:"id,omitempty"`
	// Seq numbers an ownership event (assigned, revoked, lost), counted by
	// the client from 1; the ack answering it repeats it.
	Seq uint64 `json:"seq,omitempty"`

	// hello
	Versions      []int             `json:"versions,omitempty"`
	Member        string            `json:"member,omitempty"`
	Group         string            `json:"group,omitempty"`
	Topics        []string          `json:"topics,omitempty"`
	Bootstrap     []string          `json:"bootstrap,omitempty"`
	GroupProtocol string            `json:"group_protocol,omitempty"`
	Assignor      string            `json:"assignor,omitempty"`
	InstanceID    string            `json:"instance_id,omitempty"`
	Timers        *Timers           `json:"timers,omitempty"`
	Properties    map[string]string `json:"properties,omitempty"`

	// ready
	Version      int      `json:"version,omitempty"`
	Client       string   `json:"client,omitempty"`
	Calls        string   `json:"calls,omitempty"`
	Commits      string   `json:"commits,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`

	// poll, commit, close
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// commit, committed, own-commit
	Offsets []Offset `json:"offsets,omitempty"`
	// committed, own-commit: per-partition errors (Kafka error names).
	PartitionErrors []PartitionError `json:"partition_errors,omitempty"`

	// assigned, revoked, lost
	Partitions []TP `json:"partitions,omitempty"`
	// polled
	Records []Record `json:"records,omitempty"`

	// The consumer's group metadata when the message was written: member
	// id, and generation (classic) or member epoch (consumer); -1 or
	// absent when it has none.
	MemberID string `json:"member_id,omitempty"`
	Epoch    *int32 `json:"epoch,omitempty"`

	// call
	Call      uint64 `json:"call,omitempty"`
	Op        string `json:"op,omitempty"`
	Phase     string `json:"phase,omitempty"` // sent, answered
	ErrorCode int16  `json:"error_code,omitempty"`

	// error, and the answers that carry one (polled, committed, closed)
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`
	// Class names the exception (or error type) behind Error.
	Class string `json:"class,omitempty"`
	// Fatal: the client cannot go on (an error message during hello), or,
	// on polled and stopped, the member stopped for good.
	Fatal bool `json:"fatal,omitempty"`

	// At is the client's wall clock when it happened, in microseconds
	// since the Unix epoch (0: the harness's clock on reading it).
	At int64 `json:"at,omitempty"`
}

// Timers are the plan's group timers, in milliseconds (0: the client's
// default). SessionMS and HeartbeatMS apply to the classic protocol only
// (the broker owns them in the consumer protocol).
type Timers struct {
	SessionMS      int64 `json:"session_ms,omitempty"`
	HeartbeatMS    int64 `json:"heartbeat_ms,omitempty"`
	RebalanceMS    int64 `json:"rebalance_ms,omitempty"`
	PollIntervalMS int64 `json:"poll_interval_ms,omitempty"`
}

// TP is a topic partition.
type TP struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// Offset is the next offset to read of a partition.
type Offset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// PartitionError is the error of one partition of a commit.
type PartitionError struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Error     string `json:"error"`
}

// Record is a record the client handed to the application. Key and Value
// are base64 (standard, padded); absent for null.
type Record struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key,omitempty"`
	Value     string `json:"value,omitempty"`
}

// Commands are the types the harness sends that the client answers, with
// the type of their answer.
var Commands = map[string]string{
	THello:     TReady,
	TSubscribe: TSubscribed,
	TPoll:      TPolled,
	TCommit:    TCommitted,
	TClose:     TClosed,
}

// toClient lists every type the harness may send.
var toClient = []string{THello, TSubscribe, TPoll, TCommit, TClose, TCrash, TAck, TFreeze, TThaw}

// fromClient lists every type a client may send.
var fromClient = []string{TReady, TSubscribed, TPolled, TCommitted, TClosed, TAssigned, TRevoked, TLost, TOwnCommit, TCall, TError, TStopped}

// KnownFromClient says whether t is a type a client may send.
func KnownFromClient(t string) bool { return slices.Contains(fromClient, t) }

// KnownToClient says whether t is a type the harness may send.
func KnownToClient(t string) bool { return slices.Contains(toClient, t) }

// IsOwnership says whether t is assigned, revoked or lost.
func IsOwnership(t string) bool { return t == TAssigned || t == TRevoked || t == TLost }

// Parse reads one line of a client.
func Parse(line []byte) (Msg, error) {
	var m Msg
	if err := json.Unmarshal(line, &m); err != nil {
		return Msg{}, fmt.Errorf("not a JSON object of the member protocol: %v", err)
	}
	if m.Type == "" {
		return Msg{}, fmt.Errorf("a message without a type")
	}
	return m, nil
}

// Line encodes m as one line, newline included.
func (m Msg) Line() []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // Msg holds only plain data
	}
	return append(b, '\n')
}

// EpochOr is the message's epoch, def when it has none.
func (m Msg) EpochOr(def int32) int32 {
	if m.Epoch == nil {
		return def
	}
	return *m.Epoch
}

// Int32 returns a pointer to v (Msg.Epoch).
func Int32(v int32) *int32 { return &v }
