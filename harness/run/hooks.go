package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/harness/history"
)

// HookRecorder turns one member's clients.Events into history events. It is
// the member's clients.Hooks, and the driver's door for the commit calls it
// makes.
//
// Processes, as the history's package doc describes them: the member's name
// ("m1") for its application thread (consume, commit, the ownership
// callbacks), name+"/hb" for its join, sync, heartbeat and leave calls, and
// name+"/commit" for commits the member makes on its own (not through the
// driver).
//
// Ordering (vocab.go's rules): a member calls OnEvent synchronously from the
// place the change happens, and OnEvent writes the event before it returns,
// so "revoked" precedes the acknowledgement, "assigned" precedes the first
// record, and a completion precedes the use of its result, as long as the
// member reports in that order (clients.Hooks asks it to). A member reports a
// call only once it has its outcome, so the invoke of a join, sync, heartbeat
// or leave is written immediately before its completion: its time is when
// the answer came, not when the request left.
type HookRecorder struct {
	resends  bool
	rec      *history.Recorder
	name     string
	protocol string

	mu         sync.Mutex // one call of this member at a time: invoke and completion stay adjacent
	commitOpen bool       // the driver's commit call on process name is waiting for its outcome
	lastEpoch  int32
	err        error // the first event that could not be recorded
}

var _ clients.Hooks = (*HookRecorder)(nil)

// NewHookRecorder returns the recorder of member name speaking protocol
// ("classic" or "consumer").
func NewHookRecorder(rec *history.Recorder, name, protocol string, opts ...HookOpt) *HookRecorder {
	h := &HookRecorder{rec: rec, name: name, protocol: protocol, lastEpoch: -1}
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

// call writes an invoke and its completion on process.
func (h *HookRecorder) call(process, f string, invoke any, t history.Type, done any, why string) {
	if _, err := h.rec.Invoke(process, f, invoke, why); err != nil {
		h.keep(err)
		return
	}
	_, err := h.rec.Record(history.Event{Type: t, Process: process, F: f, Value: done, Why: why})
	h.keep(err)
}

func outcome(e clients.Event) history.Type {
	if e.Err != "" {
		return history.Fail
	}
	return history.OK
}

// OnEvent implements clients.Hooks.
func (h *HookRecorder) OnEvent(e clients.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hb := h.name + "/hb"
	proto := h.proto(e)
	epoch := h.epoch(e)
	why := e.Why
	switch e.Kind {
	case clients.FoundCoordinator:
		_, err := h.rec.Info(h.name+"/hb", string(e.Kind), map[string]any{"member": h.name, "node": e.Node}, why)
		h.keep(err)
	case clients.Joined:
		if proto == history.ProtocolConsumer {
			inv := history.Heartbeat{Member: h.name, MemberID: e.MemberID, Protocol: proto, Epoch: 0}
			done := inv
			done.ResultEpoch, done.Error = e.MemberEpoch, e.Err
			if e.Partitions != nil {
				done.HasAssignment, done.Assignment = true, tps(e.Partitions)
			}
			h.call(hb, history.FHeartbeat, inv, outcome(e), done, why)
			break
		}
		inv := history.Join{Member: h.name, MemberID: e.MemberID, InstanceID: e.InstanceID}
		done := inv
		done.Generation, done.Error = e.Generation, e.Err
		if e.Leader {
			done.Leader = e.MemberID
		}
		h.call(hb, history.FJoin, inv, outcome(e), done, why)
	case clients.Synced:
		inv := history.Sync{Member: h.name, MemberID: e.MemberID, Generation: e.Generation}
		done := inv
		done.Assignment, done.Error = tps(e.Partitions), e.Err
		h.call(hb, history.FSync, inv, outcome(e), done, why)
	case clients.Heartbeat:
		inv := history.Heartbeat{Member: h.name, MemberID: e.MemberID, Protocol: proto, Epoch: epoch}
		done := inv
		if proto == history.ProtocolConsumer {
			// The request carried the epoch the member held; the response the new one.
			inv.Epoch = max(h.lastEpoch, 0)
			done.Epoch = inv.Epoch
			done.ResultEpoch = e.MemberEpoch
			if e.Partitions != nil {
				done.HasAssignment, done.Assignment = true, tps(e.Partitions)
			}
		}
		done.Error = e.Err
		h.call(hb, history.FHeartbeat, inv, outcome(e), done, why)
	case clients.Fenced, clients.SessionExpired:
		f := history.FFenced
		if e.Kind == clients.SessionExpired {
			f = history.FSessionExpired
		}
		_, err := h.rec.Info(h.name, f, history.Membership{Member: h.name, MemberID: e.MemberID, Protocol: proto, Epoch: epoch, Error: e.Err}, why)
		h.keep(err)
	case clients.Left:
		inv := history.Leave{Member: h.name, MemberID: e.MemberID, Protocol: proto, Epoch: epoch}
		done := inv
		done.Error = e.Err
		t := outcome(e)
		if t == history.Fail {
			t = history.Info // a leave that did not complete may still have reached the coordinator
		}
		h.call(hb, history.FLeave, inv, t, done, why)
		if e.Err == "" {
			_, err := h.rec.Left(h.name, history.Membership{Member: h.name, MemberID: e.MemberID, Protocol: proto, Epoch: epoch}, why)
			h.keep(err)
		}
	case clients.Assigned, clients.Revoked, clients.Lost:
		a := history.Assignment{Member: h.name, MemberID: e.MemberID, Protocol: proto, Epoch: epoch, Partitions: tps(e.Partitions)}
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
	case clients.Committed, clients.CommitFailed:
		c := history.Commit{Member: h.name, MemberID: e.MemberID, InstanceID: e.InstanceID, Protocol: proto, Epoch: epoch, Offsets: offsetList(e.Offsets), Error: e.Err}
		for _, t := range sortedKeys(e.PartitionErrs) {
			for _, p := range sortedKeys(e.PartitionErrs[t]) {
				c.PartitionErrors = append(c.PartitionErrors, history.PartitionError{Topic: t, Partition: p, Error: e.PartitionErrs[t][p]})
			}
		}
		t := history.OK
		if e.Kind == clients.CommitFailed {
			t = h.commitFailure(e.Err, e.ErrCode)
		}
		if h.commitOpen {
			h.commitOpen = false
			_, err := h.rec.Record(history.Event{Type: t, Process: h.name, F: history.FCommit, Value: c, Why: why})
			h.keep(err)
			break
		}
		// A commit the member made on its own: its invoke is written only now, when its
		// outcome is known.
		inv := c
		inv.Error, inv.PartitionErrors = "", nil
		h.call(h.name+"/commit", history.FCommit, inv, t, c, why+" (a commit the member made on its own; invoke written with its outcome)")
	case clients.Fetched:
		_, err := h.rec.Info(h.name, "offset-fetch", map[string]any{"member": h.name, "offsets": offsetList(e.Offsets)}, why)
		h.keep(err)
	default:
		_, err := h.rec.Info(h.name, string(e.Kind), map[string]any{"member": h.name, "error": e.Err}, why)
		h.keep(err)
	}
	if epoch > 0 && e.Err == "" && e.Kind != clients.Lost {
		h.lastEpoch = epoch
	}
}

// commitFailure says what a failed commit's error means for its outcome: a
// Kafka error from the coordinator means it was not applied (fail), except a
// timeout, which may still land, or when the member's client may have sent
// the commit more than once (ResendsCommits); a transport error (no Kafka
// error code) is an unknown outcome.
func (h *HookRecorder) commitFailure(name string, code int16) history.Type {
	if code == 0 || name == "REQUEST_TIMED_OUT" || h.resends {
		return history.Info
	}
	return history.Fail
}

// CommitInvoke records that the driver sends the commit c on the member's
// application process. Its outcome comes from the member's Committed or
// CommitFailed event, or, when the member reports none, from CommitReturned.
func (h *HookRecorder) CommitInvoke(c history.Commit, why string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.commitOpen {
		return fmt.Errorf("member %s: a commit is already open; the driver commits one request at a time", h.name)
	}
	if _, err := h.rec.Invoke(h.name, history.FCommit, c, why); err != nil {
		return err
	}
	h.commitOpen = true
	return nil
}

// CommitReturned completes the driver's commit from Member.Commit's return
// values, if the member did not report its outcome.
func (h *HookRecorder) CommitReturned(c history.Commit, perrs map[string]map[int32]string, err error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.commitOpen {
		return nil
	}
	h.commitOpen = false
	t := history.OK
	why := "Member.Commit returned (the member reported no outcome)"
	if err != nil {
		c.Error = err.Error()
		t = history.Info
		var ke *kerr.Error
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		case errors.As(err, &ke):
			c.Error = ke.Message
			t = h.commitFailure(ke.Message, ke.Code)
		}
	}
	for _, tp := range sortedKeys(perrs) {
		for _, p := range sortedKeys(perrs[tp]) {
			c.PartitionErrors = append(c.PartitionErrors, history.PartitionError{Topic: tp, Partition: p, Error: perrs[tp][p]})
		}
	}
	_, rerr := h.rec.Record(history.Event{Type: t, Process: h.name, F: history.FCommit, Value: c, Why: why})
	return rerr
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
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
