package java

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/wiretap"
)

// The Java consumer sends its group requests itself and exposes no hook
// that carries a request or its answer. To report calls by the clients
// contract the member observes the JVM's connections where they pass the
// gateway (gateway.go, clients/wiretap): a request of a tracked kind is
// reported Sent just before the gateway writes it towards the broker, and
// answered once its response frame has been read, before the JVM gets it.
// This is the same witness clients/kgoref uses for kgo, adapted. The frames are decoded,
// so the events carry what was really sent (generation, member epoch,
// offsets) and answered.
//
// Tracked: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// ConsumerGroupHeartbeat (a leave when its epoch is negative), OffsetCommit
// of the member's group. Metadata answers are read for topic ids, which
// name the partitions of a ConsumerGroupHeartbeat assignment. A request whose
// answer never comes (the connection closes, or the JVM writes the next request
// of its lane first) is answered as having no answer: an unknown outcome.
type wire struct {
	m *Member

	mu    sync.Mutex
	calls uint64
	lanes map[clients.Lane]*wireCall // the last call of each lane
	names map[[16]byte]string        // topic ids seen in Metadata answers
	app   bool                       // Member.Commit is running: its commits are the application's
}

type wireCall struct {
	op   clients.Op
	req  kmsg.Request
	done bool
	ev   clients.Event // the Sent event, whose identity the answer repeats
}

// metadataToken marks a Metadata request, whose answer only names topics.
type metadataToken struct{}

var _ wiretap.Observer = (*wire)(nil)

func newWire(m *Member) *wire {
	return &wire{m: m, lanes: map[clients.Lane]*wireCall{}, names: map[[16]byte]string{}}
}

func (w *wire) setApp(on bool) {
	w.mu.Lock()
	w.app = on
	w.mu.Unlock()
}

// Wants implements wiretap.Observer.
func (w *wire) Wants(key int16) bool {
	return key == kmsg.Metadata.Int16() || trackedOp(key) != ""
}

// Broken implements wiretap.Observer.
func (w *wire) Broken(err error) {
	ev := w.m.event(clients.Error)
	ev.Err = err.Error()
	ev.Why = "a connection of the JVM could not be observed any more; its group requests are not reported: " + err.Error()
	w.m.report(ev)
}

// Lost implements wiretap.Observer.
func (w *wire) Lost(token any, err error) {
	if call, ok := token.(*wireCall); ok {
		w.answer(call, nil, err)
	}
}

// Response implements wiretap.Observer.
func (w *wire) Response(token any, resp kmsg.Response) {
	switch t := token.(type) {
	case metadataToken:
		if mr, ok := resp.(*kmsg.MetadataResponse); ok {
			w.learnNames(mr)
		}
	case *wireCall:
		w.answer(t, resp, nil)
	}
}

// Request implements wiretap.Observer: a tracked request of the member's
// group is reported Sent.
func (w *wire) Request(req kmsg.Request) any {
	if req.Key() == kmsg.Metadata.Int16() {
		return metadataToken{}
	}
	op := trackedOp(req.Key())
	ev := w.m.event(clients.Sent)
	group := ""
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		group = r.Group
		ev.MemberID, ev.Why = r.MemberID, "the Java consumer wrote JoinGroup"
	case *kmsg.SyncGroupRequest:
		group = r.Group
		ev.MemberID, ev.Generation, ev.Why = r.MemberID, r.Generation, "the Java consumer wrote SyncGroup"
	case *kmsg.HeartbeatRequest:
		group = r.Group
		ev.MemberID, ev.Generation, ev.Why = r.MemberID, r.Generation, "the Java consumer wrote Heartbeat"
	case *kmsg.LeaveGroupRequest:
		group = r.Group
		ev.MemberID, ev.Why = r.MemberID, "the Java consumer wrote LeaveGroup"
		if len(r.Members) == 1 {
			ev.MemberID = r.Members[0].MemberID
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		group = r.Group
		ev.MemberID, ev.MemberEpoch = r.MemberID, r.MemberEpoch
		ev.Why = fmt.Sprintf("the Java consumer wrote ConsumerGroupHeartbeat with member epoch %d", r.MemberEpoch)
		if r.MemberEpoch < 0 {
			op = clients.OpLeave
		}
	case *kmsg.OffsetCommitRequest:
		group = r.Group
		ev.MemberID, ev.Why = r.MemberID, "the Java consumer wrote OffsetCommit"
		w.m.setEpoch(&ev, r.Generation)
		ev.Offsets = map[string]map[int32]int64{}
		for _, t := range r.Topics {
			name := t.Topic
			if name == "" {
				name = w.name(t.TopicID)
			}
			for _, p := range t.Partitions {
				if ev.Offsets[name] == nil {
					ev.Offsets[name] = map[int32]int64{}
				}
				ev.Offsets[name][p.Partition] = p.Offset
			}
		}
	}
	if op == "" || group != w.m.group {
		return nil
	}
	// Events are reported under mu, so that a lane's Sent and answers
	// reach the hooks in the order they were decided, whatever connection
	// goroutine decides them.
	w.mu.Lock()
	defer w.mu.Unlock()
	lane := op.Lane()
	if prev := w.lanes[lane]; prev != nil && !prev.done {
		w.answerLocked(prev, nil, fmt.Errorf("the Java consumer wrote %s before this request's answer came", kmsg.NameForKey(req.Key())))
	}
	w.calls++
	ev.Call, ev.Op = w.calls, op
	ev.App = op == clients.OpCommit && w.app
	call := &wireCall{op: op, req: req, ev: ev}
	w.lanes[lane] = call
	w.m.report(ev)
	return call
}

func trackedOp(key int16) clients.Op {
	switch kmsg.Key(key) {
	case kmsg.JoinGroup:
		return clients.OpJoin
	case kmsg.SyncGroup:
		return clients.OpSync
	case kmsg.Heartbeat, kmsg.ConsumerGroupHeartbeat:
		return clients.OpHeartbeat
	case kmsg.LeaveGroup:
		return clients.OpLeave
	case kmsg.OffsetCommit:
		return clients.OpCommit
	}
	return ""
}

func (w *wire) learnNames(mr *kmsg.MetadataResponse) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range mr.Topics {
		if t.Topic != nil && t.TopicID != ([16]byte{}) {
			w.names[t.TopicID] = *t.Topic
		}
	}
}

func (w *wire) name(id [16]byte) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.names[id]
}

// answer reports the answer of call: resp, or err when none came. A call
// is answered once; a second answer (a late response after the call was
// given up) is dropped.
func (w *wire) answer(call *wireCall, resp kmsg.Response, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answerLocked(call, resp, err)
}

func (w *wire) answerLocked(call *wireCall, resp kmsg.Response, err error) {
	if call.done {
		return
	}
	call.done = true

	ev := call.ev
	ev.At = w.m.now()
	ev.Why = ""
	switch call.op {
	case clients.OpJoin:
		ev.Kind = clients.Joined
	case clients.OpSync:
		ev.Kind = clients.Synced
	case clients.OpLeave:
		ev.Kind = clients.Left
	case clients.OpCommit:
		ev.Kind = clients.Committed
	default:
		ev.Kind = clients.Heartbeat
	}
	if err != nil {
		ev.Err, ev.Why = err.Error(), "no answer: "+err.Error()
		switch call.op {
		case clients.OpCommit:
			ev.Kind = clients.CommitFailed
		case clients.OpJoin, clients.OpSync:
			ev.Kind = clients.Error // Joined and Synced mean a generation or an assignment came
		}
		w.m.report(ev)
		return
	}
	code := int16(0)
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		code = r.ErrorCode
		if code == 0 {
			ev.Generation, ev.MemberID, ev.Leader = r.Generation, r.MemberID, r.LeaderID == r.MemberID
			ev.Why = fmt.Sprintf("JoinGroup answered: generation %d", r.Generation)
		}
	case *kmsg.SyncGroupResponse:
		code = r.ErrorCode
		if code == 0 {
			var a kmsg.ConsumerMemberAssignment
			if len(r.MemberAssignment) == 0 || a.ReadFrom(r.MemberAssignment) == nil {
				ev.Partitions = clients.Partitions{}
				for _, t := range a.Topics {
					ev.Partitions[t.Topic] = append(ev.Partitions[t.Topic], t.Partitions...)
				}
				ev.Partitions = sorted(ev.Partitions)
			}
			ev.Why = "SyncGroup answered"
		}
	case *kmsg.HeartbeatResponse:
		code = r.ErrorCode
		ev.Why = "Heartbeat answered"
	case *kmsg.LeaveGroupResponse:
		code = r.ErrorCode
		if code == 0 && len(r.Members) == 1 {
			code = r.Members[0].ErrorCode
		}
		ev.Why = "LeaveGroup answered"
	case *kmsg.ConsumerGroupHeartbeatResponse:
		code = r.ErrorCode
		if code == 0 && call.op == clients.OpHeartbeat {
			ev.MemberEpoch = r.MemberEpoch
			ev.Why = fmt.Sprintf("ConsumerGroupHeartbeat answered member epoch %d", r.MemberEpoch)
			if r.Assignment != nil {
				ps, ok := clients.Partitions{}, true
				for _, t := range r.Assignment.Topics {
					name := w.names[t.TopicID]
					if name == "" {
						ok = false // an id the JVM's metadata has not named yet: the assignment is left out
						break
					}
					ps[name] = append(ps[name], t.Partitions...)
				}
				if ok {
					ev.Partitions = sorted(ps)
				}
			}
		} else {
			ev.Why = "leave heartbeat answered"
		}
	case *kmsg.OffsetCommitResponse:
		perr := map[string]map[int32]string{}
		for _, t := range r.Topics {
			name := t.Topic
			if name == "" {
				name = w.names[t.TopicID]
			}
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					if perr[name] == nil {
						perr[name] = map[int32]string{}
					}
					perr[name][p.Partition], _ = errName(kerr.ErrorForCode(p.ErrorCode))
				}
			}
		}
		ev.Why = "OffsetCommit answered"
		if name, c, all := sameError(r); all {
			ev.Kind, ev.Err, ev.ErrCode = clients.CommitFailed, name, c
			ev.Why = "the coordinator rejected the OffsetCommit: " + name
		} else if len(perr) > 0 {
			ev.PartitionErrs = perr
		}
		w.m.report(ev)
		return
	}
	if code != 0 {
		if call.op == clients.OpJoin || call.op == clients.OpSync {
			ev.Kind = clients.Error
		}
		ev.ErrCode = code
		ev.Err, _ = errName(kerr.ErrorForCode(code))
		ev.Why = kmsg.NameForKey(call.req.Key()) + " answered " + ev.Err
	}
	w.m.report(ev)
}

func sorted(p clients.Partitions) clients.Partitions {
	out := clients.Partitions{}
	for t, ps := range p {
		s := slices.Clone(ps)
		slices.Sort(s)
		out[t] = slices.Compact(s)
	}
	return out
}

// sameError reports whether every partition of resp carries one non-zero
// error code.
func sameError(resp *kmsg.OffsetCommitResponse) (string, int16, bool) {
	var code int16
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 || (n > 0 && p.ErrorCode != code) {
				return "", 0, false
			}
			code = p.ErrorCode
			n++
		}
	}
	if n == 0 {
		return "", 0, false
	}
	name, _ := errName(kerr.ErrorForCode(code))
	return name, code, true
}

// errName returns the Kafka error name of err, or its text for transport
// errors.
func errName(err error) (string, int16) {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message, ke.Code
	}
	return err.Error(), 0
}
