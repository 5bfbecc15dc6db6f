package share

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// takeAcksLocked removes the pending acknowledgements of the partitions
// keep accepts, renewals or the others as renew says, and returns them
// sorted.
func (m *Member) takeAcksLocked(keep func(tp) bool, renew bool) []clients.ShareAck {
	var out []clients.ShareAck
	for p, acks := range m.pending {
		if !keep(p) {
			continue
		}
		var rest []clients.ShareAck
		for _, a := range acks {
			if (a.Type == clients.AckRenew) == renew {
				out = append(out, a)
			} else {
				rest = append(rest, a)
			}
		}
		if len(rest) == 0 {
			delete(m.pending, p)
		} else {
			m.pending[p] = rest
		}
	}
	sortAcks(out)
	return mergeAcks(out)
}

// mergeAcks joins sorted acknowledgements of consecutive offsets of one
// partition and type into one range.
func mergeAcks(acks []clients.ShareAck) []clients.ShareAck {
	var out []clients.ShareAck
	for _, a := range acks {
		if n := len(out); n > 0 {
			l := &out[n-1]
			if l.Topic == a.Topic && l.Partition == a.Partition && l.Type == a.Type && l.Last+1 == a.First {
				l.Last = a.Last
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// requeueLocked puts acknowledgements back, for a request that certainly
// applied none of them (a session error).
func (m *Member) requeueLocked(acks []clients.ShareAck) {
	for _, a := range acks {
		p := tp{a.Topic, a.Partition}
		m.pending[p] = append([]clients.ShareAck{a}, m.pending[p]...)
	}
}

// batches turns sorted single-offset acknowledgements of one partition into
// AcknowledgementBatches: runs of consecutive offsets of one type (the
// broker wants them ordered and not overlapping, KafkaApis
// validateAcknowledgementBatches).
func batches(acks []clients.ShareAck) [][3]int64 {
	var out [][3]int64 // first, last, type
	for _, a := range acks {
		if n := len(out); n > 0 && out[n-1][2] == int64(a.Type) && out[n-1][1]+1 == a.First {
			out[n-1][1] = a.Last
			continue
		}
		out = append(out, [3]int64{a.First, a.Last, int64(a.Type)})
	}
	return out
}

// emitCall emits sent, the Sent event of call id (op, a copy of call),
// and returns when it was sent.
func (m *Member) emitCall(sent clients.Event, id uint64, op clients.Op, call clients.ShareCall) time.Time {
	sent.Call, sent.Op = id, op
	c := call
	sent.Share = &c
	m.emit(sent)
	return sent.At
}

// exchange is one call's round trip, as sendCall makes it.
type exchange[R any] struct {
	resp   R
	err    error         // no answer
	code   int16         // the answer's error code (0 when err)
	a      clients.Event // the answer event, for the caller to complete and emit
	sentAt time.Time     // when the call was reported sent
}

// sendCall reports call id (op) sent (the event sent), sends it with send
// bounded by timeout, and returns the answer and its event (kind); code
// reads the answer's error code.
func sendCall[R any](m *Member, ctx context.Context, timeout time.Duration, sent clients.Event, kind clients.Kind, id uint64, op clients.Op, call clients.ShareCall, send func(context.Context) (R, error), code func(R) int16) exchange[R] {
	x := exchange[R]{sentAt: m.emitCall(sent, id, op, call)}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	x.resp, x.err = send(rctx)
	cancel()
	if x.err == nil {
		x.code = code(x.resp)
	}
	x.a = m.answerOf(kind, id, op, call, x.code, x.err)
	return x
}

// answerOf is the answer event (kind) of call id (op): its error from the
// answer's code or the request's err, and Share a copy of call for the
// caller to fill in with what the answer said.
func (m *Member) answerOf(kind clients.Kind, id uint64, op clients.Op, call clients.ShareCall, code int16, err error) clients.Event {
	a := m.ev(kind, "")
	a.Call, a.Op = id, op
	answer := call
	a.Share = &answer
	a.Err, a.ErrCode = errName(code, err)
	return a
}

// fetch sends one ShareFetch to node asking for want, piggybacking the
// pending acknowledgements of those partitions when a session is open, and
// returns the records acquired. want empty only opens a session.
func (m *Member) fetch(ctx context.Context, node int32, want map[tp]bool) []Record {
	m.mu.Lock()
	s := m.sessions[node]
	if s == nil {
		s = &session{parts: map[tp]bool{}}
		m.sessions[node] = s
	}
	epoch := s.epoch
	req, acks, call := m.fetchRequestLocked(node, s, want)
	m.mu.Unlock()

	id := m.nextCall()
	sent := m.ev(clients.Sent, fmt.Sprintf("share fetch from node %d at session epoch %d", node, epoch))
	if len(want) == 0 {
		sent.Why = fmt.Sprintf("open a share session with node %d (epoch 0 carries no acknowledgements)", node)
	}
	x := sendCall(m, ctx, m.cfg.maxWait+m.cfg.requestTimeout, sent, clients.ShareFetched, id, clients.OpShareFetch, call,
		func(ctx context.Context) (*kmsg.ShareFetchResponse, error) { return m.sendFetch(ctx, node, req) },
		func(r *kmsg.ShareFetchResponse) int16 { return r.ErrorCode })
	resp, err, code, a, sentAt := x.resp, x.err, x.code, x.a, x.sentAt
	answer := a.Share

	m.mu.Lock()
	if a.Err != "" {
		m.endSessionLocked(node)
		m.staleMeta = true
		a.Why = fmt.Sprintf("share fetch from node %d failed: %s; the next request opens a new session", node, a.Err)
		if err == nil && sessionError(code) {
			m.requeueLocked(acks)
			a.Why += "; its acknowledgements go again"
		}
		m.mu.Unlock()
		m.emit(a)
		return nil
	}
	s.epoch = nextEpoch(epoch)
	s.parts = want
	lock := time.Duration(resp.AcquisitionLockTimeoutMillis) * time.Millisecond
	answer.LockTimeoutMs = resp.AcquisitionLockTimeoutMillis
	deadline := sentAt.Add(lock)
	var recs []Record
	var gaps int
	for _, t := range resp.Topics {
		name, ok := m.names[t.TopicID]
		if !ok {
			m.staleMeta = true
			continue
		}
		for _, rp := range t.Partitions {
			p := tp{name, rp.Partition}
			if rp.AcknowledgeErrorCode != 0 && !m.hidesAckErrors() {
				answer.AckErrs = setErr(answer.AckErrs, p, rp.AcknowledgeErrorCode)
			}
			if rp.ErrorCode != 0 {
				answer.FetchErrs = setErr(answer.FetchErrs, p, rp.ErrorCode)
				if leaderError(rp.ErrorCode) {
					m.staleMeta = true
				}
			}
			got, g := m.acquireLocked(node, p, rp, deadline, answer)
			recs = append(recs, got...)
			gaps += g
		}
	}
	a.Why = fmt.Sprintf("share fetch from node %d answered: %d records acquired under a %v lock", node, len(recs), lock)
	if len(acks) > 0 {
		a.Why += fmt.Sprintf(", %d acknowledgement ranges answered", len(acks))
	}
	if gaps > 0 {
		a.Why += fmt.Sprintf(", %d acquired offsets without a record acknowledged as gaps", gaps)
	}
	m.mu.Unlock()
	m.emit(a)
	return recs
}

// fetchRequestLocked builds the ShareFetch of node's session s asking for
// want: the pending acknowledgements of those partitions when the session
// is open, and the partitions it no longer wants as forgotten. It returns
// the request, the acknowledgements it carries and the call as the history
// records it.
func (m *Member) fetchRequestLocked(node int32, s *session, want map[tp]bool) (*kmsg.ShareFetchRequest, []clients.ShareAck, clients.ShareCall) {
	epoch := s.epoch
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = kmsg.StringPtr(m.group), kmsg.StringPtr(m.memberID)
	req.ShareSessionEpoch = epoch
	req.MaxWaitMillis = int32(m.cfg.maxWait.Milliseconds())
	if len(want) == 0 {
		req.MaxWaitMillis = 0
	}
	req.MinBytes, req.MaxBytes = 1, 8<<20
	req.MaxRecords, req.BatchSize = m.cfg.maxRecords, m.cfg.maxRecords
	var acks []clients.ShareAck
	if epoch > 0 {
		acks = m.stretch(m.takeAcksLocked(func(p tp) bool { return want[p] }, false))
	}
	call := clients.ShareCall{Node: node, SessionEpoch: epoch, Fetch: clients.Partitions{}, Acks: acks}
	wire := m.onWire(acks)
	parts := sortedTPs(want)
	for _, p := range parts {
		call.Fetch[p.topic] = append(call.Fetch[p.topic], p.partition)
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p.partition
		for _, ab := range ackBatches(wire, p) {
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch(ab))
		}
		req.Topics = topicIn(req.Topics, m.ids[p.topic], kmsg.NewShareFetchRequestTopic,
			func(t *kmsg.ShareFetchRequestTopic) *topicID { return &t.TopicID },
			func(t *kmsg.ShareFetchRequestTopic) { t.Partitions = append(t.Partitions, rp) })
	}
	if epoch > 0 {
		for _, p := range sortedTPs(s.parts) {
			if want[p] {
				continue
			}
			f := kmsg.NewShareFetchRequestForgottenTopicsData()
			f.TopicID, f.Partitions = m.ids[p.topic], []int32{p.partition}
			req.ForgottenTopicsData = append(req.ForgottenTopicsData, f)
		}
	}
	return req, acks, call
}

// acquireLocked reads one partition's acquired ranges and records: the
// records it holds from now on, and the number of acquired offsets with
// no record (queued as GAP acknowledgements, as the Java consumer does).
func (m *Member) acquireLocked(node int32, p tp, rp kmsg.ShareFetchResponseTopicPartition, deadline time.Time, answer *clients.ShareCall) ([]Record, int) {
	if len(rp.AcquiredRecords) == 0 {
		return nil, 0
	}
	first := int64(math.MaxInt64)
	for _, ar := range rp.AcquiredRecords {
		first = min(first, ar.FirstOffset)
	}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset: first, Topic: p.topic, Partition: p.partition,
	}, &kmsg.FetchResponseTopicPartition{
		Partition: p.partition, HighWatermark: math.MaxInt64, LastStableOffset: math.MaxInt64,
		LogStartOffset: -1, RecordBatches: rp.Records,
	}, m.dec, nil)
	byOffset := make(map[int64]*kgo.Record, len(fp.Records))
	for _, r := range fp.Records {
		byOffset[r.Offset] = r
	}
	if m.holding[p] == nil {
		m.holding[p] = map[int64]held{}
	}
	var out []Record
	gaps := 0
	for _, ar := range rp.AcquiredRecords {
		count := m.deliveryCount(ar.DeliveryCount)
		answer.Acquired = append(answer.Acquired, clients.ShareAcquired{
			ShareRange:    clients.ShareRange{Topic: p.topic, Partition: p.partition, First: ar.FirstOffset, Last: ar.LastOffset},
			DeliveryCount: count,
		})
		for off := ar.FirstOffset; off <= ar.LastOffset; off++ {
			r, ok := byOffset[off]
			if !ok {
				m.pending[p] = append(m.pending[p], clients.ShareAck{
					ShareRange: clients.ShareRange{Topic: p.topic, Partition: p.partition, First: off, Last: off}, Type: clients.AckGap,
				})
				gaps++
				continue
			}
			m.holding[p][off] = held{node: node, deadline: deadline}
			out = append(out, Record{
				Topic: p.topic, Partition: p.partition, Offset: off, Key: r.Key, Value: r.Value,
				DeliveryCount: count, Deadline: deadline, Node: node,
			})
		}
	}
	return out, gaps
}

// acknowledge sends the pending acknowledgements of the partitions node
// leads with ShareAcknowledge: the renewals alone (IsRenewAck) when renew
// says, the others otherwise (of the partitions only accepts, if set).
// final sends at epoch -1, closing the
// session (the broker releases what the member still holds there). It
// returns the per-partition errors of the answer.
func (m *Member) acknowledge(ctx context.Context, node int32, renew, final bool, only func(tp) bool) map[string]map[int32]string {
	m.mu.Lock()
	epoch := m.sessionEpochLocked(node)
	if epoch == 0 {
		m.mu.Unlock()
		return nil
	}
	acks := m.takeAcksLocked(func(p tp) bool {
		n, ok := m.leaders[p]
		return ok && n == node && (only == nil || only(p))
	}, renew)
	if !renew {
		acks = m.stretch(acks)
	}
	if len(acks) == 0 && !final {
		m.mu.Unlock()
		return nil
	}
	req := m.ackRequestLocked(epoch, renew, final, acks)
	m.mu.Unlock()

	call := clients.ShareCall{Node: node, SessionEpoch: req.ShareSessionEpoch, Acks: acks}
	id := m.nextCall()
	why := fmt.Sprintf("share acknowledge to node %d at session epoch %d", node, req.ShareSessionEpoch)
	switch {
	case final:
		why = fmt.Sprintf("close the share session with node %d (epoch -1), acknowledging what is pending", node)
	case renew:
		why = fmt.Sprintf("renew the acquisition locks of %d ranges on node %d", len(acks), node)
	}
	sent := m.ev(clients.Sent, why)
	x := sendCall(m, ctx, m.cfg.requestTimeout, sent, clients.ShareAcked, id, clients.OpShareAck, call,
		func(ctx context.Context) (*kmsg.ShareAcknowledgeResponse, error) { return m.sendAck(ctx, node, req) },
		func(r *kmsg.ShareAcknowledgeResponse) int16 { return r.ErrorCode })
	resp, err, code, a, sentAt := x.resp, x.err, x.code, x.a, x.sentAt
	answer := a.Share
	m.mu.Lock()
	defer func() {
		m.mu.Unlock()
		m.emit(a)
	}()
	if final {
		m.endSessionLocked(node)
		for p := range m.holding {
			for off, h := range m.holding[p] {
				if h.node == node {
					delete(m.holding[p], off)
				}
			}
		}
	}
	if a.Err != "" {
		m.endSessionLocked(node)
		m.staleMeta = true
		a.Why = fmt.Sprintf("share acknowledge to node %d failed: %s", node, a.Err)
		if err == nil && sessionError(code) && !final {
			m.requeueLocked(acks)
			a.Why += "; its acknowledgements go again in a new session"
		}
		return nil
	}
	if !final {
		m.sessions[node].epoch = nextEpoch(epoch)
	}
	answer.LockTimeoutMs = resp.AcquisitionLockTimeoutMillis
	errs, refused := m.ackErrorsLocked(resp, answer)
	if renew && resp.AcquisitionLockTimeoutMillis > 0 {
		m.renewedLocked(acks, *answer, sentAt.Add(time.Duration(resp.AcquisitionLockTimeoutMillis)*time.Millisecond))
	}
	a.Why = fmt.Sprintf("share acknowledge to node %d answered", node)
	if len(refused) > 0 {
		a.Why += ": refused " + strings.Join(refused, ", ")
		if m.hidesAckErrors() {
			a.Why = fmt.Sprintf("share acknowledge to node %d answered", node)
		}
	}
	return errs
}

// ackRequestLocked builds the ShareAcknowledge of acks at the session's
// epoch (-1 when final closes the session), renewals alone when renew.
func (m *Member) ackRequestLocked(epoch int32, renew, final bool, acks []clients.ShareAck) *kmsg.ShareAcknowledgeRequest {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID = kmsg.StringPtr(m.group), kmsg.StringPtr(m.memberID)
	req.ShareSessionEpoch = epoch
	if final {
		req.ShareSessionEpoch = -1
	}
	req.IsRenewAck = renew
	for _, p := range partsOf(acks) {
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.Partition = p.partition
		rp.AcknowledgementBatches = ackBatches(acks, p)
		req.Topics = topicIn(req.Topics, m.ids[p.topic], kmsg.NewShareAcknowledgeRequestTopic,
			func(t *kmsg.ShareAcknowledgeRequestTopic) *topicID { return &t.TopicID },
			func(t *kmsg.ShareAcknowledgeRequestTopic) { t.Partitions = append(t.Partitions, rp) })
	}
	return req
}

// ackErrorsLocked reads the per-partition errors of a ShareAcknowledge
// answer: by topic and partition, and as "topic-partition error" lines;
// it records them in answer (unless the member hides them) and marks the
// metadata stale on a leader error.
func (m *Member) ackErrorsLocked(resp *kmsg.ShareAcknowledgeResponse, answer *clients.ShareCall) (map[string]map[int32]string, []string) {
	errs := map[string]map[int32]string{}
	var refused []string
	for _, t := range resp.Topics {
		name := m.names[t.TopicID]
		for _, rp := range t.Partitions {
			if rp.ErrorCode == 0 {
				continue
			}
			p := tp{name, rp.Partition}
			e, _ := errName(rp.ErrorCode, nil)
			refused = append(refused, fmt.Sprintf("%s-%d %s", name, rp.Partition, e))
			mergeErrs(errs, map[string]map[int32]string{name: {rp.Partition: e}})
			if !m.hidesAckErrors() {
				answer.AckErrs = setErr(answer.AckErrs, p, rp.ErrorCode)
			}
			if leaderError(rp.ErrorCode) {
				m.staleMeta = true
			}
		}
	}
	return errs, refused
}

// renewedLocked moves the lock deadline of the renewed offsets the member
// still holds to d, but for the partitions whose renewal was refused.
func (m *Member) renewedLocked(acks []clients.ShareAck, answer clients.ShareCall, d time.Time) {
	for _, ak := range acks {
		p := tp{ak.Topic, ak.Partition}
		if answer.AckErrs[p.topic][p.partition] != "" {
			continue
		}
		for off := ak.First; off <= ak.Last; off++ {
			if h, ok := m.holding[p][off]; ok {
				h.deadline = d
				m.holding[p][off] = h
			}
		}
	}
}

func sessionError(code int16) bool {
	return code == kerr.ShareSessionNotFound.Code || code == kerr.InvalidShareSessionEpoch.Code
}

func leaderError(code int16) bool {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code,
		kerr.FencedLeaderEpoch.Code, kerr.LeaderNotAvailable.Code:
		return true
	}
	return false
}

func setErr(m map[string]map[int32]string, p tp, code int16) map[string]map[int32]string {
	if m == nil {
		m = map[string]map[int32]string{}
	}
	if m[p.topic] == nil {
		m[p.topic] = map[int32]string{}
	}
	m[p.topic][p.partition], _ = errName(code, nil)
	return m
}

func acksOf(acks []clients.ShareAck, p tp) []clients.ShareAck {
	var out []clients.ShareAck
	for _, a := range acks {
		if a.Topic == p.topic && a.Partition == p.partition {
			out = append(out, a)
		}
	}
	return out
}

func partsOf(acks []clients.ShareAck) []tp {
	set := map[tp]bool{}
	for _, a := range acks {
		set[tp{a.Topic, a.Partition}] = true
	}
	return sortedTPs(set)
}

func sortedTPs(set map[tp]bool) []tp {
	out := make([]tp, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b tp) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition) - int(b.partition)
	})
	return out
}

// ackBatches are the acknowledgement batches of p's acknowledgements among
// acks, a range of one type each, as ShareAcknowledge carries them;
// ShareFetch carries the same (its batch type converts).
func ackBatches(acks []clients.ShareAck, p tp) []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch {
	var out []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch
	for _, b := range batches(acksOf(acks, p)) {
		ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = b[0], b[1], []int8{int8(b[2])}
		out = append(out, ab)
	}
	return out
}

// topicIn lets add fill in the topic of id among ts, a new one (fresh,
// with id) appended when there is none; idOf is where a topic keeps its id.
func topicIn[T any](ts []T, id topicID, fresh func() T, idOf func(*T) *topicID, add func(*T)) []T {
	for i := range ts {
		if *idOf(&ts[i]) == id {
			add(&ts[i])
			return ts
		}
	}
	t := fresh()
	*idOf(&t) = id
	add(&t)
	return append(ts, t)
}
