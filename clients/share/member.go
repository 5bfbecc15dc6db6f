// Package share is groupquake's own member of a KIP-932 share group
// (Kafka's queues, production-ready from 4.2): ShareGroupHeartbeat for its
// membership, ShareFetch to acquire records from each partition's leader
// under a time-limited lock, and acknowledgements (accept, release, reject,
// and on 4.2+ renew) piggybacked on ShareFetch or sent with
// ShareAcknowledge, each within a share session whose epoch the member
// keeps per broker. Every request is built with kmsg and sent once through
// the member's kgo client (its links); nothing is retried behind the
// history's back.
//
// It reports by the clients package's contract: every ShareGroupHeartbeat,
// ShareFetch and ShareAcknowledge is reported Sent when it leaves and
// answered once (share_events.go of package clients), the answer before the
// member acts on it, so an acquisition is in the history before its records
// reach the application.
//
// Invariants the member keeps (each is what the share checkers judge the
// broker by, so a member that broke one would be blamed on Kafka):
//  1. It acknowledges only records it acquired and has not acknowledged
//     finally (accept, reject, release), each once.
//  2. An acknowledgement goes to the broker it acquired the record from, in
//     a share session of that broker at an epoch above 0 (epoch 0 opens a
//     session and may carry none).
//  3. The session epoch rises by one with every answered request of the
//     session; an error that ends the session (SHARE_SESSION_NOT_FOUND,
//     INVALID_SHARE_SESSION_EPOCH, a lost connection) sends the next request
//     at epoch 0.
//  4. It reports the broker's per-partition acknowledgement error as it
//     came: an acknowledgement counts as done only when the answer says so.
package share

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/groupreq"
	"github.com/groupquake/groupquake/clients/internal/option"
)

// ErrClosed is returned by calls on a closed member.
var ErrClosed = errors.New("share member is closed")

// Record is one record the member acquired and handed to the application.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	// DeliveryCount is how many times the broker has acquired it, this
	// time included.
	DeliveryCount int16
	// Deadline is the earliest its acquisition lock can lapse: when the
	// ShareFetch left plus the answer's lock timeout (the broker locked it
	// later than that). An acknowledgement after it may be refused.
	Deadline time.Time
	// Node is the broker it came from.
	Node int32
}

type tp struct {
	topic     string
	partition int32
}

type topicID = [16]byte

// session is the member's share session with one broker.
type session struct {
	epoch int32       // the epoch the next request carries; 0: none open
	parts map[tp]bool // the partitions the session fetches
}

// held is a record the member acquired and has not finally acknowledged.
type held struct {
	node     int32
	deadline time.Time
}

// Member is one share-group member.
type Member struct {
	name, group, memberID string
	cfg                   cfg
	cl                    *kgo.Client
	dec                   kgo.Decompressor

	// fetchMu is the fetch lane: Poll, Flush and Close hold it, so one
	// ShareFetch or ShareAcknowledge is in flight at a time.
	fetchMu sync.Mutex
	emitMu  sync.Mutex

	mu         sync.Mutex
	calls      uint64
	epoch      int32 // member epoch the next heartbeat carries (0: join)
	fullNext   bool  // the next heartbeat is full (subscribed topics): one failed
	assigned   map[tp]bool
	unresolved []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition
	ids        map[string]topicID
	names      map[topicID]string
	leaders    map[tp]int32
	staleMeta  bool
	sessions   map[int32]*session
	pending    map[tp][]clients.ShareAck // acknowledgements not sent yet
	delivered  []Record                  // implicit mode: accepted by the next Poll
	holding    map[tp]map[int64]held
	cursor     int
	hbInterval time.Duration
	started    bool
	closed     bool

	// Seams: how requests are sent (tests script them).
	sendHeartbeat func(context.Context, *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error)
	sendFetch     func(context.Context, int32, *kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error)
	sendAck       func(context.Context, int32, *kmsg.ShareAcknowledgeRequest) (*kmsg.ShareAcknowledgeResponse, error)
	metadata      func(context.Context, []string) (*kmsg.MetadataResponse, error)
	sleep         func(context.Context, time.Duration)

	ctx    context.Context
	cancel context.CancelFunc
	kick   chan struct{}
	wg     sync.WaitGroup
}

// New builds a member of share group group, named name by the harness. It
// does not contact the brokers until Start.
func New(name, group string, opts ...Opt) (*Member, error) {
	var c cfg
	option.Apply(&c, opts...)
	if err := groupreq.CheckNew("share", name, group, c.validate()); err != nil {
		return nil, err
	}
	m := newMember(name, group, c)
	cl, err := kgo.NewClient(append(slices.Clone(c.KgoOpts), kgo.ClientID("groupquake-"+name))...)
	if err != nil {
		return nil, fmt.Errorf("share member %q: kgo client: %w", name, err)
	}
	m.cl = cl
	m.sendHeartbeat = func(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
		return req.RequestWith(ctx, cl)
	}
	m.sendFetch = func(ctx context.Context, node int32, req *kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error) {
		resp, err := cl.Broker(int(node)).Request(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp.(*kmsg.ShareFetchResponse), nil
	}
	m.sendAck = func(ctx context.Context, node int32, req *kmsg.ShareAcknowledgeRequest) (*kmsg.ShareAcknowledgeResponse, error) {
		resp, err := cl.Broker(int(node)).Request(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp.(*kmsg.ShareAcknowledgeResponse), nil
	}
	m.metadata = func(ctx context.Context, topics []string) (*kmsg.MetadataResponse, error) {
		req := kmsg.NewPtrMetadataRequest()
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
		return req.RequestWith(ctx, cl)
	}
	return m, nil
}

// newMember builds the member's state without a client (tests set the
// seams).
func newMember(name, group string, c cfg) *Member {
	ctx, cancel := context.WithCancel(context.Background())
	return &Member{
		name: name, group: group, memberID: groupreq.NewMemberID(), cfg: c,
		dec:        kgo.DefaultDecompressor(),
		assigned:   map[tp]bool{},
		ids:        map[string]topicID{},
		names:      map[topicID]string{},
		leaders:    map[tp]int32{},
		sessions:   map[int32]*session{},
		pending:    map[tp][]clients.ShareAck{},
		holding:    map[tp]map[int64]held{},
		hbInterval: 500 * time.Millisecond,
		staleMeta:  true,
		sleep: func(ctx context.Context, d time.Duration) {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		},
		ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1),
	}
}

// Name is the harness's name for the member.
func (m *Member) Name() string { return m.name }

// Protocol is clients.Share.
func (m *Member) Protocol() clients.Protocol { return clients.Share }

// MemberID is the member id it chose (kept across rejoins).
func (m *Member) MemberID() string { return m.memberID }

// Assigned is the member's current assignment: the partitions it may fetch
// (other members may fetch them too).
func (m *Member) Assigned() clients.Partitions {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.assignedLocked()
}

// Start joins the group (a ShareGroupHeartbeat at epoch 0) and keeps
// heartbeating on its own goroutine until Close.
func (m *Member) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started || m.closed {
		m.mu.Unlock()
		return fmt.Errorf("share member %q: Start called twice or after Close", m.name)
	}
	m.started = true
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.heartbeatLoop()
	}()
	return nil
}

// Close accepts what the application was handed and did not acknowledge
// (implicit mode), sends what is pending with ShareAcknowledge at the final
// epoch -1 on every open session (which closes it: the broker releases what
// the member still holds there), leaves the group (epoch -1) and stops.
func (m *Member) Close(ctx context.Context) error {
	m.fetchMu.Lock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.fetchMu.Unlock()
		return nil
	}
	m.closed = true
	m.acceptDeliveredLocked()
	var nodes []int32
	for n, s := range m.sessions {
		if s.epoch > 0 {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	started := m.started
	m.mu.Unlock()
	for _, n := range nodes {
		m.acknowledge(ctx, n, false, true, nil)
	}
	m.fetchMu.Unlock()
	m.cancel()
	m.wg.Wait()
	if started {
		m.leave(ctx)
	}
	if m.cl != nil {
		m.cl.Close()
	}
	return nil
}

// Abandon is the member's process dying: from now on it sends nothing (no
// final acknowledgement, no leave), its heartbeats stop, and its client
// stays open with whatever connections it had, as a vanished host leaves
// its TCP connections half-open on the brokers, until Drop. The records it
// holds stay acquired until their locks lapse or Drop closes its
// connections (the broker then ends its share sessions and releases them,
// SharePartitionManager.releaseSession). The caller stops calling Poll
// first; calls after Abandon return ErrClosed.
func (m *Member) Abandon() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// Drop closes the client of an abandoned member: its connections close.
func (m *Member) Drop() {
	if m.cl != nil {
		m.cl.Close()
	}
}

// Holding counts the records the member acquired and has not finally
// acknowledged.
func (m *Member) Holding() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, offs := range m.holding {
		n += len(offs)
	}
	return n
}

// Unsent counts the records whose final acknowledgement the member queued
// and has not sent yet: the broker still has them acquired by it.
func (m *Member) Unsent() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, acks := range m.pending {
		for _, a := range acks {
			if a.Type != clients.AckRenew {
				n += int(a.Last - a.First + 1)
			}
		}
	}
	return n
}

// Acknowledge acknowledges records the member handed out, with type t
// (clients.AckAccept, AckRelease, AckReject, or AckRenew where the brokers
// serve it). It only queues them: the next Poll piggybacks them on its
// ShareFetch or sends them with ShareAcknowledge, and Flush sends them at
// once. A record it does not hold (never acquired, or already finally
// acknowledged) is refused.
func (m *Member) Acknowledge(recs []Record, t int8) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if err := clients.CheckAppAck(t); err != nil {
		return err
	}
	if t == clients.AckRenew && !m.cfg.renew {
		return errors.New("RENEW needs ShareAcknowledge v2 (Kafka 4.2+): the member was built without Renew(true)")
	}
	for _, r := range recs {
		p := tp{r.Topic, r.Partition}
		if _, ok := m.holding[p][r.Offset]; !ok {
			return fmt.Errorf("%s-%d@%d: the member does not hold it (never acquired, or already acknowledged)", r.Topic, r.Partition, r.Offset)
		}
	}
	for _, r := range recs {
		m.queueLocked(tp{r.Topic, r.Partition}, r.Offset, t)
	}
	m.delivered = slices.DeleteFunc(m.delivered, func(d Record) bool {
		return slices.ContainsFunc(recs, func(r Record) bool {
			return r.Topic == d.Topic && r.Partition == d.Partition && r.Offset == d.Offset
		})
	})
	return nil
}

// queueLocked queues one acknowledgement; a final one (not RENEW) ends the
// member's hold on the record.
func (m *Member) queueLocked(p tp, off int64, t int8) {
	m.pending[p] = append(m.pending[p], clients.ShareAck{
		ShareRange: clients.ShareRange{Topic: p.topic, Partition: p.partition, First: off, Last: off}, Type: t,
	})
	if t != clients.AckRenew {
		delete(m.holding[p], off)
	}
}

// acceptDeliveredLocked is the implicit mode: what the last Poll handed
// out and the application did not acknowledge is accepted.
func (m *Member) acceptDeliveredLocked() {
	if m.cfg.explicit {
		return
	}
	for _, r := range m.delivered {
		p := tp{r.Topic, r.Partition}
		if _, ok := m.holding[p][r.Offset]; ok {
			m.queueLocked(p, r.Offset, clients.AckAccept)
		}
	}
	m.delivered = nil
}

// lockOpen takes m.mu and says true if the member is not closed; if it is,
// it lets go of m.mu again and says false.
func (m *Member) lockOpen() bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	return true
}

// Poll acknowledges what is pending (and, in implicit mode, what the last
// Poll handed out) and acquires records from the next partition leader in
// turn, waiting at most MaxWait.
func (m *Member) Poll(ctx context.Context) ([]Record, error) {
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	if !m.lockOpen() {
		return nil, ErrClosed
	}
	m.acceptDeliveredLocked()
	stale := m.staleMeta || len(m.unresolved) > 0
	m.mu.Unlock()
	if stale {
		m.refreshMetadata(ctx)
	}

	m.mu.Lock()
	byNode := m.byNodeLocked()
	var fetchNodes []int32
	for n := range byNode {
		fetchNodes = append(fetchNodes, n)
	}
	slices.Sort(fetchNodes)
	target := int32(-1)
	if len(fetchNodes) > 0 {
		target = fetchNodes[m.cursor%len(fetchNodes)]
		m.cursor++
	}
	// Acknowledgements that the fetch will not carry: to other brokers,
	// of partitions the fetch does not ask for, or renewals.
	ackNodes := map[int32]bool{}
	for p, acks := range m.pending {
		if len(acks) == 0 {
			continue
		}
		n, ok := m.leaders[p]
		if !ok {
			continue
		}
		if n != target || !byNode[n][p] || hasRenew(acks) {
			ackNodes[n] = true
		}
	}
	m.mu.Unlock()

	// Acknowledgements of the partitions the fetch asks for ride on it.
	apart := func(n int32) func(tp) bool {
		return func(p tp) bool { return n != target || !byNode[n][p] }
	}
	for _, n := range sortedNodes(ackNodes) {
		if m.sessionEpoch(n) == 0 {
			m.fetch(ctx, n, nil) // opens a session; carries no acknowledgement
		}
		if hasAnyRenew(m, n) {
			m.acknowledge(ctx, n, true, false, nil)
		}
		m.acknowledge(ctx, n, false, false, apart(n))
	}
	if target < 0 {
		m.sleep(ctx, m.cfg.maxWait)
		return nil, ctx.Err()
	}
	recs := m.fetch(ctx, target, byNode[target])
	m.mu.Lock()
	if !m.cfg.explicit {
		m.delivered = append(m.delivered, recs...)
	}
	m.mu.Unlock()
	return recs, nil
}

// Flush sends every pending acknowledgement now with ShareAcknowledge and
// returns the answers' per-partition errors by Kafka error name.
func (m *Member) Flush(ctx context.Context) (map[string]map[int32]string, error) {
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	if !m.lockOpen() {
		return nil, ErrClosed
	}
	nodes := map[int32]bool{}
	for p, acks := range m.pending {
		if n, ok := m.leaders[p]; ok && len(acks) > 0 {
			nodes[n] = true
		}
	}
	m.mu.Unlock()
	errs := map[string]map[int32]string{}
	for _, n := range sortedNodes(nodes) {
		if m.sessionEpoch(n) == 0 {
			m.fetch(ctx, n, nil)
		}
		if hasAnyRenew(m, n) {
			mergeErrs(errs, m.acknowledge(ctx, n, true, false, nil))
		}
		mergeErrs(errs, m.acknowledge(ctx, n, false, false, nil))
	}
	return errs, nil
}

func mergeErrs(dst, src map[string]map[int32]string) {
	for t, ps := range src {
		for p, e := range ps {
			if dst[t] == nil {
				dst[t] = map[int32]string{}
			}
			dst[t][p] = e
		}
	}
}

func hasRenew(acks []clients.ShareAck) bool {
	return slices.ContainsFunc(acks, func(a clients.ShareAck) bool { return a.Type == clients.AckRenew })
}

func hasAnyRenew(m *Member, node int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, acks := range m.pending {
		if m.leaders[p] == node && hasRenew(acks) {
			return true
		}
	}
	return false
}

func sortedNodes(set map[int32]bool) []int32 {
	var out []int32
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// byNodeLocked groups the assigned partitions with a known leader by
// leader.
func (m *Member) byNodeLocked() map[int32]map[tp]bool {
	out := map[int32]map[tp]bool{}
	for p := range m.assigned {
		n, ok := m.leaders[p]
		if !ok {
			continue
		}
		if out[n] == nil {
			out[n] = map[tp]bool{}
		}
		out[n][p] = true
	}
	return out
}

func (m *Member) sessionEpoch(n int32) int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessionEpochLocked(n)
}

func (m *Member) sessionEpochLocked(n int32) int32 {
	if s := m.sessions[n]; s != nil {
		return s.epoch
	}
	return 0
}

// endSessionLocked forgets the session with n: the next request opens one.
func (m *Member) endSessionLocked(n int32) {
	delete(m.sessions, n)
}

// nextEpoch is ShareRequestMetadata.nextEpoch: epochs wrap to 1.
func nextEpoch(e int32) int32 {
	if e < 0 || e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// refreshMetadata learns topic ids, names and partition leaders, and
// resolves an assignment that named unknown topic ids.
func (m *Member) refreshMetadata(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.requestTimeout)
	defer cancel()
	resp, err := m.metadata(ctx, m.cfg.topics)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		m.ids[*t.Topic] = t.TopicID
		m.names[t.TopicID] = *t.Topic
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Leader >= 0 {
				m.leaders[tp{*t.Topic, p.Partition}] = p.Leader
			}
		}
	}
	m.staleMeta = false
	if len(m.unresolved) > 0 {
		m.applyAssignmentLocked(m.unresolved)
	}
}

// applyAssignmentLocked sets the assignment; topic ids it cannot name yet
// wait for the next metadata.
func (m *Member) applyAssignmentLocked(tps []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition) {
	next := map[tp]bool{}
	var unresolved []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition
	for _, t := range tps {
		name, ok := m.names[t.TopicID]
		if !ok {
			unresolved = append(unresolved, t)
			continue
		}
		for _, p := range t.Partitions {
			next[tp{name, p}] = true
		}
	}
	m.assigned, m.unresolved = next, unresolved
	if len(unresolved) > 0 {
		m.staleMeta = true
	}
}

// ev returns a new event of the member.
func (m *Member) ev(kind clients.Kind, why string) clients.Event {
	return clients.Event{
		Kind: kind, Protocol: clients.Share, Member: m.name, MemberID: m.memberID,
		Generation: -1, MemberEpoch: -1, GroupEpoch: -1, Why: why, At: m.cfg.now(),
	}
}

func (m *Member) emit(e clients.Event) {
	m.emitMu.Lock()
	defer m.emitMu.Unlock()
	m.cfg.Hooks.OnEvent(e)
}

func (m *Member) nextCall() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	return m.calls
}

// errName names a Kafka error code, or a transport error's text.
func errName(code int16, err error) (string, int16) {
	if code != 0 {
		if ke := kerr.ErrorForCode(code); ke != nil {
			var k *kerr.Error
			if errors.As(ke, &k) {
				return k.Message, code
			}
			return ke.Error(), code
		}
	}
	if err != nil {
		var k *kerr.Error
		if errors.As(err, &k) {
			return k.Message, k.Code
		}
		return err.Error(), 0
	}
	return "", 0
}

func sortAcks(acks []clients.ShareAck) {
	sort.Slice(acks, func(i, j int) bool {
		a, b := acks[i], acks[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.First < b.First
	})
}
