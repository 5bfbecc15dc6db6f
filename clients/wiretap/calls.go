package wiretap

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// Calls is an Observer that reports the group requests a client writes, and
// their answers, by the clients contract (package clients, "Calls"), for a
// member whose client sends its group requests itself and exposes no hook
// that carries a request or its answer: kgo (clients/kgoref) and the Java
// consumer (clients/java). A request of a tracked kind is reported Sent just
// before it is written, and answered once its response frame has been read,
// before the client gets it. The frames are decoded, so the events carry
// what was really sent (generation, member epoch, offsets) and answered.
//
// Tracked: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// ConsumerGroupHeartbeat (a leave when its epoch is negative), OffsetCommit
// of the member's group. Metadata answers are read for topic ids, which
// name the partitions of a ConsumerGroupHeartbeat assignment. A request whose
// answer never comes (the connection closes, or the client writes the next
// request of its lane first) is answered as having no answer: an unknown
// outcome.
type Calls struct {
	cfg CallsConfig

	mu    sync.Mutex
	calls uint64
	lanes map[clients.Lane]*call // the last call of each lane
	names map[[16]byte]string    // topic ids seen in Metadata answers
	app   bool                   // Member.Commit is running: its commits are the application's
}

// CallsConfig says whose requests a Calls observer reports, and to whom.
type CallsConfig struct {
	// Group is the member's group; requests for other groups are not
	// reported.
	Group string
	// Protocol says what an OffsetCommit's generation field holds: a
	// generation (classic) or a member epoch (consumer).
	Protocol clients.Protocol
	// Client names who writes the requests in the events' whys: "kgo",
	// "the Java consumer".
	Client string
	// Event returns a new event of the member: its identity filled in,
	// Generation, MemberEpoch and GroupEpoch -1, At now.
	Event func(clients.Kind) clients.Event
	// Now is the member's clock, for the answers' At.
	Now func() time.Time
	// Report receives every event. It is called under the observer's
	// lock, so that a lane's Sent and answers arrive in the order they
	// were decided, whatever connection goroutine decides them.
	Report func(clients.Event)
	// Lookups also reports the answers of the member's FindCoordinator
	// (FoundCoordinator, with the coordinator's node) and OffsetFetch
	// (Fetched, with the committed offsets) requests of its group: facts
	// of call 0, as groupquake's own classic member reports them, for a
	// client whose API says neither (Sarama, kafka-go).
	Lookups bool
}

type call struct {
	op   clients.Op
	req  kmsg.Request
	done bool
	ev   clients.Event // the Sent event, whose identity the answer repeats
}

// metadataToken marks a Metadata request, whose answer only names topics.
type metadataToken struct{}

// lookupToken marks a FindCoordinator or OffsetFetch request of the
// member's group (CallsConfig.Lookups), whose answer is reported as a fact.
type lookupToken struct{ req kmsg.Request }

var _ Observer = (*Calls)(nil)

// NewCalls returns an observer that reports what cfg says.
func NewCalls(cfg CallsConfig) *Calls {
	return &Calls{cfg: cfg, lanes: map[clients.Lane]*call{}, names: map[[16]byte]string{}}
}

// SetApp says whether the OffsetCommits written from now on are the
// application's (Member.Commit is running).
func (w *Calls) SetApp(on bool) {
	w.mu.Lock()
	w.app = on
	w.mu.Unlock()
}

// Wants implements Observer.
func (w *Calls) Wants(key int16) bool {
	if w.cfg.Lookups && (key == kmsg.FindCoordinator.Int16() || key == kmsg.OffsetFetch.Int16()) {
		return true
	}
	return key == kmsg.Metadata.Int16() || trackedOp(key) != ""
}

// Broken implements Observer.
func (w *Calls) Broken(err error) { w.cfg.reportBroken("group", err) }

// reportBroken reports that a connection could no longer be observed, so
// that its requests (of kind what) go unreported from now on.
func (cfg CallsConfig) reportBroken(what string, err error) {
	ev := cfg.Event(clients.Error)
	ev.Err = err.Error()
	ev.Why = "a connection of " + cfg.Client + " could not be observed any more; its " + what + " requests are not reported: " + err.Error()
	cfg.Report(ev)
}

// Lost implements Observer.
func (w *Calls) Lost(token any, err error) {
	if c, ok := token.(*call); ok {
		w.answer(c, nil, err)
	}
}

// Response implements Observer.
func (w *Calls) Response(token any, resp kmsg.Response) {
	switch t := token.(type) {
	case metadataToken:
		if mr, ok := resp.(*kmsg.MetadataResponse); ok {
			w.learnNames(mr)
		}
	case *call:
		w.answer(t, resp, nil)
	case lookupToken:
		w.lookup(t.req, resp)
	}
}

// Request implements Observer: a tracked request of the member's group is
// reported Sent.
func (w *Calls) Request(req kmsg.Request) any {
	if req.Key() == kmsg.Metadata.Int16() {
		return metadataToken{}
	}
	if w.cfg.Lookups && w.lookupOfGroup(req) {
		return lookupToken{req}
	}
	op := trackedOp(req.Key())
	ev := w.cfg.Event(clients.Sent)
	wrote := w.cfg.Client + " wrote "
	group := ""
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		group = r.Group
		ev.MemberID, ev.Why = r.MemberID, wrote+"JoinGroup"
	case *kmsg.SyncGroupRequest:
		group = r.Group
		ev.MemberID, ev.Generation, ev.Why = r.MemberID, r.Generation, wrote+"SyncGroup"
	case *kmsg.HeartbeatRequest:
		group = r.Group
		ev.MemberID, ev.Generation, ev.Why = r.MemberID, r.Generation, wrote+"Heartbeat"
	case *kmsg.LeaveGroupRequest:
		group = r.Group
		ev.MemberID, ev.Why = r.MemberID, wrote+"LeaveGroup"
		if len(r.Members) == 1 {
			ev.MemberID = r.Members[0].MemberID
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		group = r.Group
		ev.MemberID, ev.MemberEpoch = r.MemberID, r.MemberEpoch
		ev.Why = fmt.Sprintf("%sConsumerGroupHeartbeat with member epoch %d", wrote, r.MemberEpoch)
		if r.MemberEpoch < 0 {
			op = clients.OpLeave
		}
	case *kmsg.OffsetCommitRequest:
		group = r.Group
		ev.MemberID, ev.Why = r.MemberID, wrote+"OffsetCommit"
		ev.Generation, ev.MemberEpoch = w.cfg.Protocol.Epochs(r.Generation)
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
	if op == "" || group != w.cfg.Group {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	lane := op.Lane()
	if prev := w.lanes[lane]; prev != nil && !prev.done {
		w.answerLocked(prev, nil, fmt.Errorf("%s%s before this request's answer came", wrote, kmsg.NameForKey(req.Key())))
	}
	w.calls++
	ev.Call, ev.Op = w.calls, op
	ev.App = op == clients.OpCommit && w.app
	c := &call{op: op, req: req, ev: ev}
	w.lanes[lane] = c
	w.cfg.Report(ev)
	return c
}

// lookupOfGroup says whether req is a FindCoordinator or OffsetFetch of
// the member's group.
func (w *Calls) lookupOfGroup(req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		if r.CoordinatorType != 0 {
			return false // a transaction coordinator
		}
		return r.CoordinatorKey == w.cfg.Group || slices.Contains(r.CoordinatorKeys, w.cfg.Group)
	case *kmsg.OffsetFetchRequest:
		if r.Group == w.cfg.Group {
			return true
		}
		return slices.ContainsFunc(r.Groups, func(g kmsg.OffsetFetchRequestGroup) bool { return g.Group == w.cfg.Group })
	}
	return false
}

// lookup reports the answer of a FindCoordinator or OffsetFetch of the
// member's group: FoundCoordinator with the node, Fetched with the
// offsets (-1 where none is committed), or Error when the answer carries
// a Kafka error.
func (w *Calls) lookup(req kmsg.Request, resp kmsg.Response) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fail := func(what string, code int16) {
		ev := w.cfg.Event(clients.Error)
		ev.ErrCode, ev.Err = code, ErrName(kerr.ErrorForCode(code))
		ev.Why = what + " answered " + ev.Err
		w.cfg.Report(ev)
	}
	switch r := resp.(type) {
	case *kmsg.FindCoordinatorResponse:
		node, code := r.NodeID, r.ErrorCode
		for _, c := range r.Coordinators {
			if c.Key == w.cfg.Group {
				node, code = c.NodeID, c.ErrorCode
			}
		}
		if code != 0 {
			fail("FindCoordinator", code)
			return
		}
		ev := w.cfg.Event(clients.FoundCoordinator)
		ev.Node = node
		ev.Why = fmt.Sprintf("FindCoordinator answered: node %d coordinates the group", node)
		w.cfg.Report(ev)
	case *kmsg.OffsetFetchResponse:
		code := r.ErrorCode
		topics := r.Topics
		for _, g := range r.Groups {
			if g.Group == w.cfg.Group {
				code = g.ErrorCode
				topics = nil
				for _, t := range g.Topics {
					ft := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
					for _, p := range t.Partitions {
						ft.Partitions = append(ft.Partitions, kmsg.OffsetFetchResponseTopicPartition{Partition: p.Partition, Offset: p.Offset, ErrorCode: p.ErrorCode})
					}
					topics = append(topics, ft)
				}
			}
		}
		if code != 0 {
			fail("OffsetFetch", code)
			return
		}
		ev := w.cfg.Event(clients.Fetched)
		ev.Offsets = map[string]map[int32]int64{}
		for _, t := range topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					continue
				}
				if ev.Offsets[t.Topic] == nil {
					ev.Offsets[t.Topic] = map[int32]int64{}
				}
				ev.Offsets[t.Topic][p.Partition] = p.Offset
			}
		}
		ev.Why = "OffsetFetch answered (-1: no committed offset)"
		w.cfg.Report(ev)
	}
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

func (w *Calls) learnNames(mr *kmsg.MetadataResponse) {
	w.mu.Lock()
	defer w.mu.Unlock()
	learnTopicNames(w.names, mr)
}

// learnTopicNames adds the name of every topic a Metadata answer names
// with its id to names.
func learnTopicNames(names map[[16]byte]string, mr *kmsg.MetadataResponse) {
	for _, t := range mr.Topics {
		if t.Topic != nil && t.TopicID != ([16]byte{}) {
			names[t.TopicID] = *t.Topic
		}
	}
}

func (w *Calls) name(id [16]byte) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.names[id]
}

// answer reports the answer of c: resp, or err when none came. A call is
// answered once; a second answer (a late response after the call was given
// up) is dropped.
func (w *Calls) answer(c *call, resp kmsg.Response, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answerLocked(c, resp, err)
}

func (w *Calls) answerLocked(c *call, resp kmsg.Response, err error) {
	if c.done {
		return
	}
	c.done = true

	ev := c.ev
	ev.At = w.cfg.Now()
	ev.Why = ""
	switch c.op {
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
		switch c.op {
		case clients.OpCommit:
			ev.Kind = clients.CommitFailed
		case clients.OpJoin, clients.OpSync:
			ev.Kind = clients.Error // Joined and Synced mean a generation or an assignment came
		}
		w.cfg.Report(ev)
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
		if code == 0 && c.op == clients.OpHeartbeat {
			ev.MemberEpoch = r.MemberEpoch
			ev.Why = fmt.Sprintf("ConsumerGroupHeartbeat answered member epoch %d", r.MemberEpoch)
			if r.Assignment != nil {
				if ps, ok := w.namedLocked(r.Assignment); ok {
					ev.Partitions = sorted(ps)
				}
			}
		} else {
			ev.Why = "leave heartbeat answered"
		}
	case *kmsg.OffsetCommitResponse:
		perr := w.partitionErrsLocked(r)
		ev.Why = "OffsetCommit answered"
		if name, code, all := CommitRejected(r); all {
			ev.Kind, ev.Err, ev.ErrCode = clients.CommitFailed, name, code
			ev.Why = "the coordinator rejected the OffsetCommit: " + name
		} else if len(perr) > 0 {
			ev.PartitionErrs = perr
		}
		w.cfg.Report(ev)
		return
	}
	if code != 0 {
		if c.op == clients.OpJoin || c.op == clients.OpSync {
			ev.Kind = clients.Error
		}
		ev.ErrCode = code
		ev.Err = ErrName(kerr.ErrorForCode(code))
		ev.Why = kmsg.NameForKey(c.req.Key()) + " answered " + ev.Err
	}
	w.cfg.Report(ev)
}

// namedLocked is a ConsumerGroupHeartbeat's assignment by topic name; it
// is not ok when the client's metadata has not named one of its topic ids
// yet (the assignment is then left out).
func (w *Calls) namedLocked(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) (clients.Partitions, bool) {
	ps := clients.Partitions{}
	for _, t := range a.Topics {
		name := w.names[t.TopicID]
		if name == "" {
			return nil, false
		}
		ps[name] = append(ps[name], t.Partitions...)
	}
	return ps, true
}

// partitionErrsLocked is the errors an OffsetCommit answered, by topic and
// partition.
func (w *Calls) partitionErrsLocked(r *kmsg.OffsetCommitResponse) map[string]map[int32]string {
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
				perr[name][p.Partition] = ErrName(kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return perr
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

// CommitAnswer is what an application's commit returns once a, the
// OffsetCommit answer the wire saw for it, is in: the partitions the
// coordinator refused by Kafka error name, or an error when it refused the
// commit as a whole; none when no OffsetCommit was written (a nil a).
func CommitAnswer(a *clients.Event, none error) (map[string]map[int32]string, error) {
	switch {
	case a == nil:
		return nil, none
	case a.Kind == clients.CommitFailed && a.ErrCode != 0:
		return nil, kerr.ErrorForCode(a.ErrCode)
	case a.Kind == clients.CommitFailed:
		return nil, errors.New(a.Err)
	}
	return a.PartitionErrs, nil
}

// CommitRejected reports whether every partition of resp carries one
// non-zero error code: the coordinator rejected the commit as a whole (a
// stale generation or member epoch), with the error's name and code.
func CommitRejected(resp *kmsg.OffsetCommitResponse) (name string, code int16, all bool) {
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
	return ErrName(kerr.ErrorForCode(code)), code, true
}

// ErrName returns the Kafka error name of err (FENCED_MEMBER_EPOCH), or its
// text for transport errors.
func ErrName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}
