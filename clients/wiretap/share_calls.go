package wiretap

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// ShareCalls is an Observer that reports the share-group requests
// (KIP-932) a client writes, and their answers, by the clients contract
// (clients/share_events.go), for a share consumer that sends them itself:
// kgo's (clients/kgoshare) and the Java KafkaShareConsumer. Tracked:
// ShareGroupHeartbeat of the member's group (a leave when its epoch is
// negative) on the heartbeat lane, and ShareFetch and ShareAcknowledge,
// each on the lane of the broker it goes to (a share consumer fetches
// from every partition leader at once, one request at a time per broker).
// A broker is known by its address: Metadata answers name every broker's
// node id and address, and the connection a request goes by says which
// address it was written to. Topic ids are named by Metadata answers too.
type ShareCalls struct {
	cfg CallsConfig

	mu    sync.Mutex
	calls uint64
	lanes map[string]*shareCall // heartbeat lane, or "fetch@<node>"
	names map[[16]byte]string
	nodes map[string]int32 // host:port → node id
}

type shareCall struct {
	lane string
	op   clients.Op
	req  kmsg.Request
	done bool
	ev   clients.Event
}

// shareMetadata marks a Metadata request, whose answer names topics and
// brokers.
type shareMetadata struct{}

var _ HostObserver = (*ShareCalls)(nil)

// NewShareCalls returns an observer that reports what cfg says (its
// Protocol is clients.Share).
func NewShareCalls(cfg CallsConfig) *ShareCalls {
	return &ShareCalls{cfg: cfg, lanes: map[string]*shareCall{}, names: map[[16]byte]string{}, nodes: map[string]int32{}}
}

// Wants implements Observer.
func (w *ShareCalls) Wants(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.Metadata, kmsg.ShareGroupHeartbeat, kmsg.ShareFetch, kmsg.ShareAcknowledge:
		return true
	}
	return false
}

// Broken implements Observer.
func (w *ShareCalls) Broken(err error) { w.cfg.reportBroken("share", err) }

// Lost implements Observer.
func (w *ShareCalls) Lost(token any, err error) {
	if c, ok := token.(*shareCall); ok {
		w.answer(c, nil, err)
	}
}

// Response implements Observer.
func (w *ShareCalls) Response(token any, resp kmsg.Response) {
	switch t := token.(type) {
	case shareMetadata:
		if mr, ok := resp.(*kmsg.MetadataResponse); ok {
			w.learn(mr)
		}
	case *shareCall:
		w.answer(t, resp, nil)
	}
}

// Request implements Observer; without the address, a ShareFetch or
// ShareAcknowledge is reported at node -1.
func (w *ShareCalls) Request(req kmsg.Request) any { return w.RequestOn("", req) }

// RequestOn implements HostObserver: a tracked request of the member's
// group is reported Sent.
func (w *ShareCalls) RequestOn(host string, req kmsg.Request) any {
	if req.Key() == kmsg.Metadata.Int16() {
		return shareMetadata{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := w.cfg.Event(clients.Sent)
	wrote := w.cfg.Client + " wrote "
	var group, lane string
	var op clients.Op
	switch r := req.(type) {
	case *kmsg.ShareGroupHeartbeatRequest:
		group, lane, op = r.GroupID, "hb", clients.OpHeartbeat
		ev.MemberID, ev.MemberEpoch = r.MemberID, r.MemberEpoch
		ev.Why = fmt.Sprintf("%sShareGroupHeartbeat with member epoch %d", wrote, r.MemberEpoch)
		if r.MemberEpoch < 0 {
			op = clients.OpLeave
		}
	case *kmsg.ShareFetchRequest:
		node := w.nodeLocked(host)
		group, lane, op = deref(r.GroupID), "fetch@"+strconv.Itoa(int(node)), clients.OpShareFetch
		ev.MemberID = deref(r.MemberID)
		sc := &clients.ShareCall{Node: node, SessionEpoch: r.ShareSessionEpoch, Fetch: clients.Partitions{}}
		for _, t := range r.Topics {
			name := w.names[t.TopicID]
			for _, p := range t.Partitions {
				sc.Fetch[name] = append(sc.Fetch[name], p.Partition)
				for _, b := range p.AcknowledgementBatches {
					sc.Acks = append(sc.Acks, ackRanges(name, p.Partition, b.FirstOffset, b.LastOffset, b.AcknowledgeTypes)...)
				}
			}
		}
		sc.Fetch = sorted(sc.Fetch)
		ev.Share = sc
		ev.Why = fmt.Sprintf("%sShareFetch to node %d at session epoch %d", wrote, node, r.ShareSessionEpoch)
	case *kmsg.ShareAcknowledgeRequest:
		node := w.nodeLocked(host)
		group, lane, op = deref(r.GroupID), "fetch@"+strconv.Itoa(int(node)), clients.OpShareAck
		ev.MemberID = deref(r.MemberID)
		sc := &clients.ShareCall{Node: node, SessionEpoch: r.ShareSessionEpoch}
		for _, t := range r.Topics {
			name := w.names[t.TopicID]
			for _, p := range t.Partitions {
				for _, b := range p.AcknowledgementBatches {
					sc.Acks = append(sc.Acks, ackRanges(name, p.Partition, b.FirstOffset, b.LastOffset, b.AcknowledgeTypes)...)
				}
			}
		}
		ev.Share = sc
		ev.Why = fmt.Sprintf("%sShareAcknowledge to node %d at session epoch %d", wrote, node, r.ShareSessionEpoch)
		if r.IsRenewAck {
			ev.Why += " (renewals)"
		}
	default:
		return nil
	}
	if group != w.cfg.Group {
		return nil
	}
	if prev := w.lanes[lane]; prev != nil && !prev.done {
		w.answerLocked(prev, nil, fmt.Errorf("%s%s on the same lane before this request's answer came", wrote, kmsg.NameForKey(req.Key())))
	}
	w.calls++
	ev.Call, ev.Op = w.calls, op
	c := &shareCall{lane: lane, op: op, req: req, ev: ev}
	w.lanes[lane] = c
	w.cfg.Report(ev)
	return c
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ackRanges turns one AcknowledgementBatch into ranges of one type each:
// one type covers the batch, several give each offset its own.
func ackRanges(topic string, p int32, first, last int64, types []int8) []clients.ShareAck {
	if len(types) <= 1 {
		t := int8(0)
		if len(types) == 1 {
			t = types[0]
		}
		return []clients.ShareAck{{ShareRange: clients.ShareRange{Topic: topic, Partition: p, First: first, Last: last}, Type: t}}
	}
	var out []clients.ShareAck
	for i, t := range types {
		o := first + int64(i)
		if o > last {
			break
		}
		if n := len(out); n > 0 && out[n-1].Type == t && out[n-1].Last+1 == o {
			out[n-1].Last = o
			continue
		}
		out = append(out, clients.ShareAck{ShareRange: clients.ShareRange{Topic: topic, Partition: p, First: o, Last: o}, Type: t})
	}
	return out
}

// nodeLocked is the node id of the broker at host, -1 when no Metadata
// answer named it.
func (w *ShareCalls) nodeLocked(host string) int32 {
	if n, ok := w.nodes[host]; ok {
		return n
	}
	return -1
}

func (w *ShareCalls) learn(mr *kmsg.MetadataResponse) {
	w.mu.Lock()
	defer w.mu.Unlock()
	learnTopicNames(w.names, mr)
	for _, b := range mr.Brokers {
		w.nodes[net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))] = b.NodeID
	}
}

func (w *ShareCalls) answer(c *shareCall, resp kmsg.Response, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answerLocked(c, resp, err)
}

func (w *ShareCalls) answerLocked(c *shareCall, resp kmsg.Response, err error) {
	if c.done {
		return
	}
	c.done = true
	ev := c.ev
	ev.At = w.cfg.Now()
	if c.ev.Share != nil {
		sc := *c.ev.Share
		ev.Share = &sc
	}
	switch c.op {
	case clients.OpShareFetch:
		ev.Kind = clients.ShareFetched
	case clients.OpShareAck:
		ev.Kind = clients.ShareAcked
	case clients.OpLeave:
		ev.Kind = clients.Left
	default:
		ev.Kind = clients.Heartbeat
	}
	if err != nil {
		ev.Err, ev.Why = err.Error(), "no answer: "+err.Error()
		w.cfg.Report(ev)
		return
	}
	code := int16(0)
	switch r := resp.(type) {
	case *kmsg.ShareGroupHeartbeatResponse:
		code = r.ErrorCode
		ev.Why = "ShareGroupHeartbeat answered"
		if code == 0 && c.op == clients.OpHeartbeat {
			ev.MemberEpoch = r.MemberEpoch
			ev.Why = fmt.Sprintf("ShareGroupHeartbeat answered member epoch %d", r.MemberEpoch)
			if r.Assignment != nil {
				ps, ok := clients.Partitions{}, true
				for _, t := range r.Assignment.TopicPartitions {
					name := w.names[t.TopicID]
					if name == "" {
						ok = false // an id no Metadata answer named yet: the assignment is left out
						break
					}
					ps[name] = append(ps[name], t.Partitions...)
				}
				if ok {
					ev.Partitions = sorted(ps)
				}
			}
		}
	case *kmsg.ShareFetchResponse:
		code = r.ErrorCode
		if code == 0 {
			ev.Share.LockTimeoutMs = r.AcquisitionLockTimeoutMillis
			for _, t := range r.Topics {
				name := w.names[t.TopicID]
				for _, p := range t.Partitions {
					ev.Share.AckErrs = setErrName(ev.Share.AckErrs, name, p.Partition, p.AcknowledgeErrorCode)
					ev.Share.FetchErrs = setErrName(ev.Share.FetchErrs, name, p.Partition, p.ErrorCode)
					for _, a := range p.AcquiredRecords {
						ev.Share.Acquired = append(ev.Share.Acquired, clients.ShareAcquired{
							ShareRange:    clients.ShareRange{Topic: name, Partition: p.Partition, First: a.FirstOffset, Last: a.LastOffset},
							DeliveryCount: a.DeliveryCount,
						})
					}
				}
			}
			slices.SortFunc(ev.Share.Acquired, func(a, b clients.ShareAcquired) int {
				if a.Topic != b.Topic {
					if a.Topic < b.Topic {
						return -1
					}
					return 1
				}
				if a.Partition != b.Partition {
					return int(a.Partition - b.Partition)
				}
				return int(a.First - b.First)
			})
			ev.Why = fmt.Sprintf("ShareFetch answered: %d ranges acquired", len(ev.Share.Acquired))
		}
	case *kmsg.ShareAcknowledgeResponse:
		code = r.ErrorCode
		if code == 0 {
			ev.Share.LockTimeoutMs = r.AcquisitionLockTimeoutMillis
			for _, t := range r.Topics {
				name := w.names[t.TopicID]
				for _, p := range t.Partitions {
					ev.Share.AckErrs = setErrName(ev.Share.AckErrs, name, p.Partition, p.ErrorCode)
				}
			}
			ev.Why = "ShareAcknowledge answered"
		}
	}
	if code != 0 {
		ev.ErrCode = code
		ev.Err = ErrName(kerr.ErrorForCode(code))
		ev.Why = kmsg.NameForKey(c.req.Key()) + " answered " + ev.Err
	}
	w.cfg.Report(ev)
}

func setErrName(m map[string]map[int32]string, topic string, p int32, code int16) map[string]map[int32]string {
	if code == 0 {
		return m
	}
	if m == nil {
		m = map[string]map[int32]string{}
	}
	if m[topic] == nil {
		m[topic] = map[int32]string{}
	}
	m[topic][p] = ErrName(kerr.ErrorForCode(code))
	return m
}
