package run

import (
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/harness/history"
)

// ShareRecorder turns one share member's clients.Events into history
// events (harness/history/share.go), by the clients contract: the invoke
// when a request left (clients.Sent), its completion when the answer came
// (ok without an error, fail with a Kafka error, info without an answer).
// Processes: name+"/hb" for ShareGroupHeartbeat (the join and the leave
// included), name+"/fetch" for ShareFetch and ShareAcknowledge (or one
// process per broker, see PerNode). A second
// call reported on a busy process closes the open one as an unknown
// outcome and is kept as the recorder's error; Finish closes what the
// member left open.
type ShareRecorder struct {
	rec  *history.Recorder
	name string
	// perNode puts ShareFetch and ShareAcknowledge on one process per
	// broker, name+"/fetch@<node>", for a member that has one request in
	// flight per broker at a time (kgo's share consumer).
	perNode bool

	mu   sync.Mutex
	open map[uint64]shareOpen // by clients.Event.Call
	busy map[string]uint64    // process → its open call
	err  error
}

type shareOpen struct {
	process, f string
	inv        any
}

var _ clients.Hooks = (*ShareRecorder)(nil)

// NewShareRecorder returns the recorder of share member name.
func NewShareRecorder(rec *history.Recorder, name string) *ShareRecorder {
	return &ShareRecorder{rec: rec, name: name, open: map[uint64]shareOpen{}, busy: map[string]uint64{}}
}

// Err returns the first event that could not be recorded.
func (h *ShareRecorder) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

func (h *ShareRecorder) keep(err error) {
	if err != nil && h.err == nil {
		h.err = err
	}
}

// OnEvent records e.
func (h *ShareRecorder) OnEvent(e clients.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	process, f, ok := h.callOf(e)
	if !ok {
		return // the share member reports calls only
	}
	if e.Kind == clients.Sent {
		if prev, busy := h.busy[process]; busy {
			h.keep(fmt.Errorf("share member %s: call %d sent on %s while call %d is open", h.name, e.Call, process, prev))
			_, err := h.rec.Info(process, f, h.open[prev].inv, "closed as unknown: the member sent another call on this lane")
			h.keep(err)
			delete(h.open, prev)
		}
		inv := h.payload(e, nil)
		_, err := h.rec.Invoke(process, f, inv, e.Why)
		h.keep(err)
		h.open[e.Call] = shareOpen{process, f, inv}
		h.busy[process] = e.Call
		return
	}
	oc, open := h.open[e.Call]
	if !open {
		_, err := h.rec.Info(process, "late-answer", map[string]any{"member": h.name, "call": e.Call, "op": e.Op, "error": e.Err}, e.Why)
		h.keep(err)
		return
	}
	delete(h.open, e.Call)
	delete(h.busy, oc.process)
	v := h.payload(e, &oc)
	var err error
	switch {
	case e.Err == "":
		_, err = h.rec.OK(oc.process, v, e.Why)
	case e.ErrCode != 0:
		_, err = h.rec.Fail(oc.process, v, e.Why)
	default:
		_, err = h.rec.Info(oc.process, f, v, e.Why)
	}
	h.keep(err)
}

// callOf says on which process and under which F e's call goes.
func (h *ShareRecorder) callOf(e clients.Event) (process, f string, ok bool) {
	if e.Call == 0 {
		return "", "", false
	}
	switch e.Op {
	case clients.OpHeartbeat, clients.OpLeave:
		return h.name + "/hb", history.FShareHeartbeat, true
	case clients.OpShareFetch:
		return h.fetchLane(e), history.FShareFetch, true
	case clients.OpShareAck:
		return h.fetchLane(e), history.FShareAck, true
	}
	return "", "", false
}

func (h *ShareRecorder) fetchLane(e clients.Event) string {
	if h.perNode && e.Share != nil {
		return h.name + "/fetch@" + strconv.Itoa(int(e.Share.Node))
	}
	return h.name + "/fetch"
}

// PerNode makes the recorder put a member's ShareFetch and
// ShareAcknowledge on one process per broker (name+"/fetch@<node>"): for a
// member with one request in flight per broker at a time.
func (h *ShareRecorder) PerNode() *ShareRecorder {
	h.perNode = true
	return h
}

// payload is e as the history's payload: the invoke's (what was sent) or,
// given the open call it answers, the completion's (the request's fields
// and the answer).
func (h *ShareRecorder) payload(e clients.Event, call *shareOpen) any {
	answer := call != nil
	if e.Op == clients.OpHeartbeat || e.Op == clients.OpLeave {
		hb := &history.ShareHeartbeat{Member: h.name, MemberID: e.MemberID, Epoch: e.MemberEpoch, Error: e.Err}
		if answer {
			if inv, ok := call.inv.(*history.ShareHeartbeat); ok {
				hb.Epoch = inv.Epoch
			}
			hb.ResultEpoch = e.MemberEpoch
			if e.Partitions != nil {
				hb.HasAssignment, hb.Assignment = true, tps(e.Partitions)
			}
		}
		return hb
	}
	sc := e.Share
	if sc == nil {
		sc = &clients.ShareCall{}
	}
	out := &history.ShareFetch{
		Member: h.name, MemberID: e.MemberID, Node: sc.Node, SessionEpoch: sc.SessionEpoch,
		Fetch: tps(sc.Fetch), Error: e.Err,
	}
	if len(out.Fetch) == 0 {
		out.Fetch = nil
	}
	for _, a := range sc.Acks {
		out.Acks = append(out.Acks, history.ShareAck{ShareRange: shareRange(a.ShareRange), Type: clients.AckName(a.Type)})
	}
	if !answer {
		return out
	}
	out.LockTimeoutMs = sc.LockTimeoutMs
	for _, a := range sc.Acquired {
		out.Acquired = append(out.Acquired, history.ShareAcquired{ShareRange: shareRange(a.ShareRange), DeliveryCount: a.DeliveryCount})
	}
	out.AckErrors = partitionErrors(sc.AckErrs)
	out.FetchErrors = partitionErrors(sc.FetchErrs)
	return out
}

func shareRange(r clients.ShareRange) history.ShareRange {
	return history.ShareRange{Topic: r.Topic, Partition: r.Partition, First: r.First, Last: r.Last}
}

func partitionErrors(m map[string]map[int32]string) []history.PartitionError {
	var out []history.PartitionError
	for t, ps := range m {
		for p, e := range ps {
			if e != "" {
				out = append(out, history.PartitionError{Topic: t, Partition: p, Error: e})
			}
		}
	}
	history.SortByTP(out, func(e history.PartitionError) history.TP { return history.TP{Topic: e.Topic, Partition: e.Partition} })
	return out
}

// Finish closes the calls the member left open as unknown outcomes.
func (h *ShareRecorder) Finish(why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	calls := make([]uint64, 0, len(h.open))
	for c := range h.open {
		calls = append(calls, c)
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i] < calls[j] })
	for _, c := range calls {
		oc := h.open[c]
		_, err := h.rec.Info(oc.process, oc.f, oc.inv, why)
		h.keep(err)
		delete(h.open, c)
		delete(h.busy, oc.process)
	}
}
