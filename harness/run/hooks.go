package run

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/history"
)

// HookRecorder turns one member's clients.Events into history events. It is
// the member's clients.Hooks, and the driver's door for the commit calls it
// makes.
//
// Calls follow the clients package's contract: a member reports each
// request when it is sent (clients.Sent, with a Call number and the epoch or
// generation the request carries) and once more when its answer comes, so
// the recorder writes the invoke when the request left and the completion
// when the answer came: a slow call shows as long as it was.
//
// Processes (each has at most one open call, the history's rule): the
// member's name ("m1") for its application thread (consume, the ownership
// callbacks, and the commits the application asked for through
// Member.Commit), name+"/hb" for its heartbeat lane (heartbeats, leaves, and
// the consumer protocol's joining heartbeat), name+"/join" for the classic
// JoinGroup and SyncGroup (the join loop runs while the heartbeat thread
// heartbeats, so a join and a heartbeat can be in flight together), and
// name+"/commit" for commits the member makes on its own. A member keeps one
// call per lane in flight; if it ever reports a second one on a process
// whose call is open, the open one is closed as an unknown outcome and the
// breach is kept as the recorder's error. Finish closes what a member left
// open when it was closed.
//
// Ordering (vocab.go's rules): a member calls OnEvent synchronously from the
// place the change happens, and OnEvent writes the event before it returns,
// so "revoked" precedes the acknowledgement, "assigned" precedes the first
// record, and a completion precedes the use of its result, as long as the
// member reports in that order (clients.Hooks asks it to).
type HookRecorder struct {
	resends  bool
	instance string
	rec      *history.Recorder
	name     string
	protocol string

	mu    sync.Mutex
	open  map[uint64]*openCall // by clients.Event.Call
	busy  map[string]uint64    // process → its open call
	app   bool                 // the driver is inside Member.Commit
	sent  bool                 // ... and the member reported a request for it
	err   error                // the first event that could not be recorded
	calls int                  // calls opened

	giveUp func(clients.Partitions) // called with every Revoked or Lost event's partitions
}

// OnGiveUp registers f, called with the partitions of every Revoked or Lost
// event the member reports, after it is recorded. f runs under the
// recorder's lock: it must not call back into the recorder.
func (h *HookRecorder) OnGiveUp(f func(clients.Partitions)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.giveUp = f
}

// openCall is a call whose invoke is written and whose completion is not.
type openCall struct {
	process, f string
	op         clients.Op
	inv        any
}

var _ clients.Hooks = (*HookRecorder)(nil)

// NewHookRecorder returns the recorder of member name speaking protocol
// ("classic" or "consumer").
func NewHookRecorder(rec *history.Recorder, name, protocol string, opts ...HookOpt) *HookRecorder {
	h := &HookRecorder{rec: rec, name: name, protocol: protocol, open: map[uint64]*openCall{}, busy: map[string]uint64{}}
	for _, o := range opts {
		o(h)
	}
	return h
}

// HookOpt configures a HookRecorder.
type HookOpt func(*HookRecorder)

// ResendsCommits says the member's client may send one OffsetCommit more
// than once on its own (kgo retries after a lost answer or a coordinator
// move). Its failed commits are then recorded as unknown outcomes (info),
// not as rejections: an earlier attempt may have been written before the
// answer the member finally saw (seen in a broker-faults run: a commit sent
// while the coordinator's node was killed came back UNKNOWN_MEMBER_ID, and
// the broker then described its offsets).
func ResendsCommits() HookOpt { return func(h *HookRecorder) { h.resends = true } }

// Instance is the member's group.instance.id (a static member): its joins,
// heartbeats and commits carry it in the history where its client's events
// do not, so that the checkers can tell one static member taking the place
// of another (a bounce into the other protocol) from two members sharing a
// partition epoch.
func Instance(id string) HookOpt { return func(h *HookRecorder) { h.instance = id } }

// instanceOf is the instance id of the member's call e reports.
func (h *HookRecorder) instanceOf(e clients.Event) string {
	if e.InstanceID != "" {
		return e.InstanceID
	}
	return h.instance
}

// Err returns the first error met while recording: a member event that could
// not be written is a broken history, and the run must say so.
func (h *HookRecorder) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

func (h *HookRecorder) keep(err error) {
	if err != nil && h.err == nil {
		h.err = fmt.Errorf("recording member %s: %w", h.name, err)
	}
}

func (h *HookRecorder) proto(e clients.Event) string {
	if e.Protocol != "" {
		return string(e.Protocol)
	}
	return h.protocol
}

// epoch is the generation of a classic member, the member epoch of a
// consumer-protocol member.
func (h *HookRecorder) epoch(e clients.Event) int32 {
	if h.proto(e) == history.ProtocolConsumer {
		return e.MemberEpoch
	}
	return e.Generation
}

// tps turns clients.Partitions into the history's sorted list.
func tps(p clients.Partitions) []history.TP {
	out := []history.TP{}
	for _, t := range p.Topics() {
		for _, n := range p[t] {
			out = append(out, history.TP{Topic: t, Partition: n})
		}
	}
	history.SortTPs(out)
	return out
}

// process is where calls of op go.
func (h *HookRecorder) process(op clients.Op, app bool) string {
	switch op.Lane() {
	case clients.LaneJoin:
		return h.name + "/join"
	case clients.LaneCommit:
		if app {
			return h.name
		}
		return h.name + "/commit"
	}
	return h.name + "/hb"
}

// invokeValue is the payload of the invoke of the request e reports sent.
func (h *HookRecorder) invokeValue(e clients.Event) (string, any) {
	proto := h.proto(e)
	switch e.Op {
	case clients.OpJoin:
		return history.FJoin, history.Join{Member: h.name, MemberID: e.MemberID, InstanceID: h.instanceOf(e), Generation: e.Generation}
	case clients.OpSync:
		return history.FSync, history.Sync{Member: h.name, MemberID: e.MemberID, Generation: e.Generation}
	case clients.OpLeave:
		return history.FLeave, history.Leave{Member: h.name, MemberID: e.MemberID, Protocol: proto, Epoch: h.epoch(e)}
	case clients.OpCommit:
		return history.FCommit, history.Commit{Member: h.name, MemberID: e.MemberID, InstanceID: h.instanceOf(e), Protocol: proto, Epoch: h.epoch(e), Offsets: offsetList(e.Offsets)}
	}
	return history.FHeartbeat, history.Heartbeat{Member: h.name, MemberID: e.MemberID, InstanceID: h.instanceOf(e), Protocol: proto, Epoch: h.epoch(e)}
}

// completion is the type and payload of the completion of c answered by e.
func (h *HookRecorder) completion(c *openCall, e clients.Event) (history.Type, any) {
	t := history.OK
	switch {
	case e.Err == "", e.Kind == clients.Committed:
		// Committed: answered; refused partitions are in PartitionErrors.
	case e.ErrCode == 0:
		t = history.Info // no answer: the request may or may not have been applied
	case c.op == clients.OpCommit:
		t = h.commitFailure(e.Err, e.ErrCode)
	case c.op == clients.OpLeave:
		t = history.Info // a leave the client may have resent may have been applied before this answer
	case h.writes(c.op, e) && writeTimedOut(e.Err):
		t = history.Info
	default:
		t = history.Fail
	}
	switch v := c.inv.(type) {
	case history.Join:
		v.Error = e.Err
		if e.Err == "" {
			v.Generation, v.MemberID = e.Generation, e.MemberID
			if e.Leader {
				v.Leader = e.MemberID
			}
		}
		return t, v
	case history.Sync:
		v.Error = e.Err
		if e.Err == "" {
			v.Assignment = tps(e.Partitions)
		}
		return t, v
	case history.Leave:
		v.Error = e.Err
		return t, v
	case history.Commit:
		v.Error = e.Err
		for _, tp := range sortedKeys(e.PartitionErrs) {
			for _, p := range sortedKeys(e.PartitionErrs[tp]) {
				v.PartitionErrors = append(v.PartitionErrors, history.PartitionError{Topic: tp, Partition: p, Error: e.PartitionErrs[tp][p]})
			}
		}
		return t, v
	case history.Heartbeat:
		v.Error = e.Err
		if e.Err == "" && v.Protocol == history.ProtocolConsumer {
			v.ResultEpoch = e.MemberEpoch
			if e.Partitions != nil {
				v.HasAssignment, v.Assignment = true, tps(e.Partitions)
			}
		}
		return t, v
	}
	return t, c.inv
}

// sendCall writes the invoke of the request e reports sent.
func (h *HookRecorder) sendCall(e clients.Event) {
	if e.Call == 0 || e.Op == "" {
		h.keep(fmt.Errorf("a sent request without a call number or op (call %d, op %q): the clients contract numbers every call", e.Call, e.Op))
		return
	}
	process := h.process(e.Op, e.App)
	if prev, ok := h.busy[process]; ok {
		// A second call on one lane: close the first as unknown, so the
		// history stays well formed, and report the breach.
		c := h.open[prev]
		_, err := h.rec.Record(history.Event{Type: history.Info, Process: process, F: c.f, Value: c.inv,
			Why: fmt.Sprintf("the member reported request #%d on this process before the answer of #%d: outcome unknown", e.Call, prev)})
		h.keep(err)
		h.keep(fmt.Errorf("member reported %s call #%d while call #%d on %s had no answer: one call per lane at a time", e.Op, e.Call, prev, process))
		delete(h.open, prev)
		delete(h.busy, process)
	}
	f, inv := h.invokeValue(e)
	if _, err := h.rec.Invoke(process, f, inv, e.Why); err != nil {
		h.keep(err)
		return
	}
	h.open[e.Call] = &openCall{process: process, f: f, op: e.Op, inv: inv}
	h.busy[process] = e.Call
	h.calls++
	if e.Op == clients.OpCommit && e.App && h.app {
		h.sent = true
	}
}

// answerCall writes the completion of call e.Call. It reports false when no
// such call is open (already closed, or never sent).
func (h *HookRecorder) answerCall(e clients.Event) bool {
	c, ok := h.open[e.Call]
	if !ok {
		return false
	}
	delete(h.open, e.Call)
	delete(h.busy, c.process)
	t, v := h.completion(c, e)
	_, err := h.rec.Record(history.Event{Type: t, Process: c.process, F: c.f, Value: v, Why: e.Why})
	h.keep(err)
	return true
}

// OnEvent implements clients.Hooks.
func (h *HookRecorder) OnEvent(e clients.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	proto := h.proto(e)
	epoch := h.epoch(e)
	why := e.Why
	if e.Kind == clients.Sent {
		h.sendCall(e)
		return
	}
	if e.Call != 0 && !h.answerCall(e) {
		// The answer of a call closed already (Finish, or Member.Commit
		// returned first): a fact, not a completion.
		_, err := h.rec.Info(h.process(e.Op, e.App), "late-answer", map[string]any{"member": h.name, "call": e.Call, "op": e.Op, "kind": e.Kind, "error": e.Err}, why)
		h.keep(err)
		return
	}
	switch e.Kind {
	case clients.FoundCoordinator:
		_, err := h.rec.Info(h.name+"/hb", string(e.Kind), map[string]any{"member": h.name, "node": e.Node}, why)
		h.keep(err)
	case clients.Joined, clients.Synced, clients.Heartbeat:
		if e.Call == 0 {
			h.notSent(e)
		}
	case clients.Fenced, clients.SessionExpired:
		f := history.FFenced
		if e.Kind == clients.SessionExpired {
			f = history.FSessionExpired
		}
		_, err := h.rec.Info(h.name, f, history.Membership{Member: h.name, MemberID: e.MemberID, Protocol: proto, Epoch: epoch, Error: e.Err}, why)
		h.keep(err)
	case clients.Left:
		if e.Call == 0 {
			h.notSent(e)
			break
		}
		if e.Err == "" {
			_, err := h.rec.Left(h.name, history.Membership{Member: h.name, MemberID: e.MemberID, Protocol: proto, Epoch: epoch}, why)
			h.keep(err)
		}
	case clients.Assigned, clients.Revoked, clients.Lost:
		a := history.Assignment{Member: h.name, MemberID: e.MemberID, Protocol: proto, Epoch: epoch, Partitions: tps(e.Partitions), AfterPoll: e.AfterPoll}
		var err error
		switch e.Kind {
		case clients.Assigned:
			_, err = h.rec.Assigned(h.name, a, why)
		case clients.Revoked:
			_, err = h.rec.Revoked(h.name, a, why)
		default:
			_, err = h.rec.Lost(h.name, a, why)
		}
		h.keep(err)
		if e.Kind != clients.Assigned && h.giveUp != nil {
			h.giveUp(e.Partitions)
		}
	case clients.Committed, clients.CommitFailed:
		if e.Call == 0 {
			h.notSent(e)
		}
	case clients.Fetched:
		_, err := h.rec.Info(h.name, history.FOffsetFetch, map[string]any{"member": h.name, "offsets": offsetList(e.Offsets)}, why)
		h.keep(err)
	default:
		_, err := h.rec.Info(h.name, string(e.Kind), map[string]any{"member": h.name, "error": e.Err}, why)
		h.keep(err)
	}
}

// FNotSent is the standalone info of an outcome the member reported for a
// request it never sent (a commit refused before it left: partitions not
// owned, no active generation). It is not a call: nothing reached the
// coordinator.
const FNotSent = "not-sent"

func (h *HookRecorder) notSent(e clients.Event) {
	if e.Kind == clients.Committed || e.Kind == clients.CommitFailed {
		c := history.Commit{Member: h.name, MemberID: e.MemberID, InstanceID: h.instanceOf(e), Protocol: h.proto(e), Epoch: h.epoch(e), Offsets: offsetList(e.Offsets), Error: e.Err}
		if e.App && h.app {
			h.sent = true // the driver's commit is accounted for
		}
		_, err := h.rec.Info(h.process(clients.OpCommit, e.App), FNotSent, c, e.Why)
		h.keep(err)
		return
	}
	_, err := h.rec.Info(h.name+"/hb", FNotSent, map[string]any{"member": h.name, "kind": e.Kind, "epoch": h.epoch(e), "error": e.Err}, e.Why)
	h.keep(err)
}

// commitFailure says what a failed commit's error means for its outcome: a
// Kafka error from the coordinator means it was not applied (fail), except
// the errors Kafka answers after the commit's record was appended (a
// timeout, which may still land, and COORDINATOR_NOT_AVAILABLE and
// NOT_COORDINATOR, which GroupCoordinatorService#normalizeException answers
// for a write that timed out or lost its leader, while the record may stay
// in the log: a Sarama commit answered COORDINATOR_NOT_AVAILABLE after 5 s,
// offsets.commit.timeout.ms, while a node was down, was described
// afterwards), or when the member's client may have sent the commit more
// than once (ResendsCommits); a transport error (no Kafka error code) is an
// unknown outcome.
func (h *HookRecorder) commitFailure(name string, code int16) history.Type {
	if code == 0 || h.resends || writeTimedOut(name) {
		return history.Info
	}
	return history.Fail
}

// writeTimedOut reports whether a Kafka error may answer a request whose
// records the coordinator appended: GroupCoordinatorService#normalizeException
// answers COORDINATOR_NOT_AVAILABLE (or NOT_COORDINATOR, REQUEST_TIMED_OUT)
// for a write that timed out waiting for replication or lost its leader,
// and the records stay in the log and in the coordinator's state unless the
// partition's new leader truncates them.
func writeTimedOut(name string) bool { return version.GroupWriteMayHaveLanded(name) }

// writes reports whether the coordinator writes records for a request of
// op before it answers, so that an error answered after the write timed
// out leaves its outcome unknown: a ConsumerGroupHeartbeat (the member's
// epoch, subscription and assignment records; a Kafka 4.1.2 run under node
// faults saw one answered COORDINATOR_NOT_AVAILABLE that Kafka had applied),
// a ShareGroupHeartbeat likewise, and a classic JoinGroup or SyncGroup
// (the group's metadata record; a classic member joining a consumer group
// is written at once). A classic Heartbeat writes nothing: its error means
// not applied.
func (h *HookRecorder) writes(op clients.Op, e clients.Event) bool {
	switch op {
	case clients.OpJoin, clients.OpSync:
		return true
	case clients.OpHeartbeat:
		return h.proto(e) == history.ProtocolConsumer || h.proto(e) == history.ProtocolShare
	}
	return false
}

// CommitInvoke says that the driver calls Member.Commit for c. The calls
// themselves are the OffsetCommit requests the member reports (Sent with
// App, then the answer) on the member's process; a Commit that sends
// nothing is written by CommitReturned.
func (h *HookRecorder) CommitInvoke(c history.Commit, why string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.app {
		return fmt.Errorf("member %s: a commit is already in progress; the driver commits one request at a time", h.name)
	}
	h.app, h.sent = true, false
	return nil
}

// CommitReturned ends the driver's Member.Commit. A request the member
// reported sent and left unanswered is closed as an unknown outcome (a kgo
// commit abandoned when ctx ended may still be answered, or applied, later);
// if the member sent nothing, what Commit returned is written as a
// standalone FNotSent fact.
func (h *HookRecorder) CommitReturned(c history.Commit, perrs map[string]map[int32]string, err error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.app {
		return nil
	}
	h.app = false
	if id, ok := h.busy[h.name]; ok {
		oc := h.open[id]
		delete(h.open, id)
		delete(h.busy, h.name)
		why := "Member.Commit returned before the member reported this request's answer: outcome unknown"
		if err != nil {
			why += " (" + err.Error() + ")"
		}
		if _, rerr := h.rec.Record(history.Event{Type: history.Info, Process: h.name, F: oc.f, Value: oc.inv, Why: why}); rerr != nil {
			return rerr
		}
	}
	if h.sent {
		return nil
	}
	v := c
	if err != nil {
		v.Error = err.Error()
		var ke *kerr.Error
		if errors.As(err, &ke) {
			v.Error = ke.Message
		}
	}
	for _, tp := range sortedKeys(perrs) {
		for _, p := range sortedKeys(perrs[tp]) {
			v.PartitionErrors = append(v.PartitionErrors, history.PartitionError{Topic: tp, Partition: p, Error: perrs[tp][p]})
		}
	}
	_, rerr := h.rec.Info(h.name, FNotSent, v, "Member.Commit sent no OffsetCommit")
	return rerr
}

// Finish closes every call the member left open, as unknown outcomes, and
// returns Err. The run calls it once the member is closed: a request whose
// answer never came must not stay open in the history.
func (h *HookRecorder) Finish() error {
	h.mu.Lock()
	ids := slices.Sorted(maps.Keys(h.open))
	for _, id := range ids {
		c := h.open[id]
		_, err := h.rec.Record(history.Event{Type: history.Info, Process: c.process, F: c.f, Value: c.inv,
			Why: "the member was closed before it reported this request's answer: outcome unknown"})
		h.keep(err)
		delete(h.open, id)
		delete(h.busy, c.process)
	}
	h.app = false
	h.mu.Unlock()
	return h.Err()
}

// Calls is the number of calls the member reported sent.
func (h *HookRecorder) Calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

func offsetList(m map[string]map[int32]int64) []history.OffsetAt {
	var out []history.OffsetAt
	for _, t := range sortedKeys(m) {
		for _, p := range sortedKeys(m[t]) {
			out = append(out, history.OffsetAt{Topic: t, Partition: p, Offset: m[t][p]})
		}
	}
	return out
}

func sortedKeys[K string | int32, V any](m map[K]V) []K {
	out := slices.Sorted(maps.Keys(m))
	return out
}
