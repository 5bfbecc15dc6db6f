package share

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
	"github.com/groupquake/groupquake/clients/internal/option"
)

var topicT = topicID{1}

// batch encodes one record batch (magic 2, uncompressed) of values at
// offsets first, first+1, …, as a broker sends it.
func batch(first int64, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		var body []byte
		body = append(body, 0)                             // attributes
		body = binary.AppendVarint(body, 0)                // timestamp delta
		body = binary.AppendVarint(body, int64(i))         // offset delta
		body = binary.AppendVarint(body, -1)               // no key
		body = binary.AppendVarint(body, int64(len(v)))    // value
		body = append(body, v...)                          //
		body = binary.AppendVarint(body, 0)                // headers
		recs = binary.AppendVarint(recs, int64(len(body))) //
		recs = append(recs, body...)
	}
	var tail []byte // from attributes on: what the CRC covers
	tail = binary.BigEndian.AppendUint16(tail, 0)
	tail = binary.BigEndian.AppendUint32(tail, uint32(len(values)-1))
	tail = binary.BigEndian.AppendUint64(tail, 0)
	tail = binary.BigEndian.AppendUint64(tail, 0)
	tail = binary.BigEndian.AppendUint64(tail, ^uint64(0)) // producer id -1
	tail = binary.BigEndian.AppendUint16(tail, ^uint16(0))
	tail = binary.BigEndian.AppendUint32(tail, ^uint32(0))
	tail = binary.BigEndian.AppendUint32(tail, uint32(len(values)))
	tail = append(tail, recs...)
	var out []byte
	out = binary.BigEndian.AppendUint64(out, uint64(first))
	out = binary.BigEndian.AppendUint32(out, uint32(4+1+4+len(tail)))
	out = binary.BigEndian.AppendUint32(out, 0) // leader epoch
	out = append(out, 2)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(tail, crc32.MakeTable(crc32.Castagnoli)))
	return append(out, tail...)
}

// script is a scripted broker: each request is logged and answered by the
// next function queued for its kind.
type script struct {
	t   *testing.T
	mu  sync.Mutex
	log []kmsg.Request
	hb  []func(*kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error)
	sf  []func(*kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error)
	sa  []func(*kmsg.ShareAcknowledgeRequest) (*kmsg.ShareAcknowledgeResponse, error)
}

// answerNext logs r and answers it with the next function queued in q; a
// request with nothing queued fails the test, named by what.
func answerNext[R kmsg.Request, A any](s *script, q *[]func(R) (A, error), r R, what func() string) (A, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, r)
	if len(*q) == 0 {
		s.t.Fatalf("unscripted %s", what())
	}
	f := (*q)[0]
	*q = (*q)[1:]
	return f(r)
}

// recorder keeps the member's events (clientstest.Recorder) and reads the
// share calls among them.
type recorder struct{ clientstest.Recorder }

func (r *recorder) ops() []string {
	var out []string
	for _, e := range r.All() {
		if e.Op == clients.OpShareFetch || e.Op == clients.OpShareAck {
			out = append(out, fmt.Sprintf("%s/%s", e.Op, e.Kind))
		}
	}
	return out
}

// answers returns the answered share calls.
func (r *recorder) answers() []clients.Event {
	var out []clients.Event
	for _, e := range r.All() {
		if e.Kind == clients.ShareFetched || e.Kind == clients.ShareAcked {
			out = append(out, e)
		}
	}
	return out
}

// scripted builds a member on the scripted broker: topic "t" (2
// partitions) led by node 1, and an assignment of t-0 installed as a
// heartbeat would.
func scripted(t *testing.T, opts ...Opt) (*Member, *script, *recorder) {
	t.Helper()
	rec := &recorder{}
	var c cfg
	option.Apply(&c, append([]Opt{Topics("t"), WithHooks(rec), MaxWait(time.Millisecond)}, opts...)...)
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	m := newMember("m1", "g", c)
	s := &script{t: t}
	m.sendHeartbeat = func(_ context.Context, r *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
		return answerNext(s, &s.hb, r, func() string { return fmt.Sprintf("heartbeat %+v", r) })
	}
	m.sendFetch = func(_ context.Context, node int32, r *kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error) {
		return answerNext(s, &s.sf, r, func() string { return fmt.Sprintf("share fetch at epoch %d", r.ShareSessionEpoch) })
	}
	m.sendAck = func(_ context.Context, node int32, r *kmsg.ShareAcknowledgeRequest) (*kmsg.ShareAcknowledgeResponse, error) {
		return answerNext(s, &s.sa, r, func() string { return fmt.Sprintf("share acknowledge at epoch %d", r.ShareSessionEpoch) })
	}
	m.metadata = func(context.Context, []string) (*kmsg.MetadataResponse, error) {
		resp := kmsg.NewPtrMetadataResponse()
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID = kmsg.StringPtr("t"), topicT
		for p := int32(0); p < 2; p++ {
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition, mp.Leader = p, 1
			mt.Partitions = append(mt.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, mt)
		return resp, nil
	}
	m.sleep = func(context.Context, time.Duration) {}
	m.mu.Lock()
	m.applyAssignmentLocked([]kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{{TopicID: topicT, Partitions: []int32{0}}})
	m.mu.Unlock()
	return m, s, rec
}

// fetchAnswer answers a ShareFetch with one partition of t-0, under a 5 s
// lock, as fill sets it.
func fetchAnswer(fill func(p *kmsg.ShareFetchResponseTopicPartition)) func(*kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error) {
	return func(*kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error) {
		resp := kmsg.NewPtrShareFetchResponse()
		resp.AcquisitionLockTimeoutMillis = 5000
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = topicT
		p := kmsg.NewShareFetchResponseTopicPartition()
		fill(&p)
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp, nil
	}
}

// acquired answers a ShareFetch with records at offsets first.. of t-0 at
// delivery count dc under a 5 s lock.
func acquired(first int64, dc int16, values ...string) func(*kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error) {
	return fetchAnswer(func(p *kmsg.ShareFetchResponseTopicPartition) {
		if len(values) > 0 {
			p.Records = batch(first, values...)
			p.AcquiredRecords = []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: first, LastOffset: first + int64(len(values)) - 1, DeliveryCount: dc}}
		}
	})
}

// ackedWith answers a ShareFetch carrying acknowledgements with ackErr for
// t-0 and no records.
func ackedWith(ackErr int16) func(*kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error) {
	return fetchAnswer(func(p *kmsg.ShareFetchResponseTopicPartition) { p.AcknowledgeErrorCode = ackErr })
}

// heartbeatAnswer answers a ShareGroupHeartbeat at member epoch epoch,
// with no assignment.
func heartbeatAnswer(epoch int32) func(*kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
	return func(*kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
		r := kmsg.NewPtrShareGroupHeartbeatResponse()
		r.MemberEpoch = epoch
		return r, nil
	}
}

func fetchReq(t *testing.T, r kmsg.Request) *kmsg.ShareFetchRequest {
	t.Helper()
	f, ok := r.(*kmsg.ShareFetchRequest)
	if !ok {
		t.Fatalf("request %T, want ShareFetch", r)
	}
	return f
}

func ackTypes(parts []kmsg.ShareFetchRequestTopicPartition) string {
	var out []string
	for _, p := range parts {
		for _, b := range p.AcknowledgementBatches {
			out = append(out, fmt.Sprintf("%d:%d-%d/%v", p.Partition, b.FirstOffset, b.LastOffset, b.AcknowledgeTypes))
		}
	}
	return strings.Join(out, " ")
}

// TestImplicitAcceptRidesTheNextFetch: the first ShareFetch opens the
// session at epoch 0 and carries no acknowledgement; the records it
// acquired are reported (with their delivery count and the lock) before
// they are handed out, and the next Poll accepts them in one batch on its
// ShareFetch at epoch 1.
func TestImplicitAcceptRidesTheNextFetch(t *testing.T) {
	m, s, rec := scripted(t)
	s.sf = append(s.sf, acquired(0, 1, "a", "b", "c"), ackedWith(0))
	recs, err := m.Poll(context.Background())
	if err != nil || len(recs) != 3 || recs[2].Offset != 2 || string(recs[2].Value) != "c" || recs[0].DeliveryCount != 1 {
		t.Fatalf("first poll: %+v, %v", recs, err)
	}
	if recs[0].Deadline.IsZero() {
		t.Errorf("record without a lock deadline")
	}
	if _, err := m.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	f0, f1 := fetchReq(t, s.log[0]), fetchReq(t, s.log[1])
	if f0.ShareSessionEpoch != 0 || ackTypes(f0.Topics[0].Partitions) != "" {
		t.Errorf("first fetch: epoch %d acks %q, want epoch 0 without acknowledgements", f0.ShareSessionEpoch, ackTypes(f0.Topics[0].Partitions))
	}
	if f1.ShareSessionEpoch != 1 || ackTypes(f1.Topics[0].Partitions) != "0:0-2/[1]" {
		t.Errorf("second fetch: epoch %d acks %q, want epoch 1 accepting 0-2", f1.ShareSessionEpoch, ackTypes(f1.Topics[0].Partitions))
	}
	ans := rec.answers()
	if len(ans) != 2 || len(ans[0].Share.Acquired) != 1 || ans[0].Share.Acquired[0].Last != 2 || ans[0].Share.LockTimeoutMs != 5000 {
		t.Fatalf("answers %+v", ans)
	}
	if got := ans[1].Share.Acks; len(got) != 1 || got[0].First != 0 || got[0].Last != 2 || got[0].Type != clients.AckAccept {
		t.Errorf("second answer's acks %+v, want accept 0-2", got)
	}
	if want := "share-fetch/sent share-fetch/share-fetched share-fetch/sent share-fetch/share-fetched"; strings.Join(rec.ops(), " ") != want {
		t.Errorf("events %v, want %s", rec.ops(), want)
	}
}

// TestSessionErrorResendsAcks: an answer of INVALID_SHARE_SESSION_EPOCH
// applied nothing, so the member opens a new session at epoch 0 (which
// may carry no acknowledgement) and sends its accepts again at epoch 1.
func TestSessionErrorResendsAcks(t *testing.T) {
	m, s, rec := scripted(t)
	sessionErr := func(*kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error) {
		resp := kmsg.NewPtrShareFetchResponse()
		resp.ErrorCode = kerr.InvalidShareSessionEpoch.Code
		return resp, nil
	}
	s.sf = append(s.sf, acquired(0, 1, "a"), sessionErr, acquired(0, 0), ackedWith(0))
	for range 4 {
		if _, err := m.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	epochs := []int32{}
	for _, r := range s.log {
		epochs = append(epochs, fetchReq(t, r).ShareSessionEpoch)
	}
	if fmt.Sprint(epochs) != "[0 1 0 1]" {
		t.Fatalf("session epochs %v, want [0 1 0 1]", epochs)
	}
	if got := ackTypes(fetchReq(t, s.log[1]).Topics[0].Partitions); got != "0:0-0/[1]" {
		t.Errorf("fetch at epoch 1: acks %q", got)
	}
	if got := ackTypes(fetchReq(t, s.log[3]).Topics[0].Partitions); got != "0:0-0/[1]" {
		t.Errorf("fetch after the session error: acks %q, want the accept again", got)
	}
	if ans := rec.answers(); ans[1].Err != "INVALID_SHARE_SESSION_EPOCH" || ans[1].ErrCode == 0 {
		t.Errorf("session error reported as %q (%d)", ans[1].Err, ans[1].ErrCode)
	}
}

// TestLostAnswerIsUnknown: a ShareFetch without an answer is reported with
// an error and no code (an unknown outcome); its acknowledgements are not
// sent again (the lost connection made the broker release the records),
// and the next request opens a new session.
func TestLostAnswerIsUnknown(t *testing.T) {
	m, s, rec := scripted(t)
	lost := func(*kmsg.ShareFetchRequest) (*kmsg.ShareFetchResponse, error) {
		return nil, errors.New("connection reset by peer")
	}
	s.sf = append(s.sf, acquired(0, 1, "a"), lost, acquired(1, 0))
	for range 3 {
		m.Poll(context.Background())
	}
	ans := rec.answers()
	if ans[1].Err == "" || ans[1].ErrCode != 0 {
		t.Errorf("lost answer reported as %q (%d), want an error without a code", ans[1].Err, ans[1].ErrCode)
	}
	if f := fetchReq(t, s.log[2]); f.ShareSessionEpoch != 0 || ackTypes(f.Topics[0].Partitions) != "" {
		t.Errorf("after a lost answer: epoch %d acks %q, want a new session without the lost accept", f.ShareSessionEpoch, ackTypes(f.Topics[0].Partitions))
	}
}

// TestAckErrorReported: the broker's per-partition refusal
// (INVALID_RECORD_STATE: the lock lapsed) is reported as it came; the
// member carrying BugAckNotAcquired reports it as done, which is its bug.
func TestAckErrorReported(t *testing.T) {
	for _, c := range []struct {
		bug  Bug
		want string
	}{{"", "INVALID_RECORD_STATE"}, {BugAckNotAcquired, ""}} {
		m, s, rec := scripted(t, WithBug(c.bug))
		s.sf = append(s.sf, acquired(0, 1, "a"), ackedWith(kerr.InvalidRecordState.Code))
		m.Poll(context.Background())
		m.Poll(context.Background())
		ans := rec.answers()
		if got := ans[1].Share.AckErrs["t"][0]; got != c.want {
			t.Errorf("bug %q: ack error reported %q, want %q", c.bug, got, c.want)
		}
	}
}

// TestExplicitAcks: in explicit mode nothing is accepted unless the
// application says so; a release and a reject ride the next fetch as
// separate batches, a renewal goes alone in a ShareAcknowledge with
// IsRenewAck (before the fetch), and a record the member does not hold is
// refused.
func TestExplicitAcks(t *testing.T) {
	m, s, _ := scripted(t, Explicit(), Renew(true))
	renewed := func(r *kmsg.ShareAcknowledgeRequest) (*kmsg.ShareAcknowledgeResponse, error) {
		resp := kmsg.NewPtrShareAcknowledgeResponse()
		resp.AcquisitionLockTimeoutMillis = 5000
		return resp, nil
	}
	s.sf = append(s.sf, acquired(0, 2, "a", "b", "c"), ackedWith(0))
	s.sa = append(s.sa, renewed)
	recs, _ := m.Poll(context.Background())
	if err := m.Acknowledge(recs[:1], clients.AckRelease); err != nil {
		t.Fatal(err)
	}
	if err := m.Acknowledge(recs[1:2], clients.AckReject); err != nil {
		t.Fatal(err)
	}
	if err := m.Acknowledge(recs[2:], clients.AckRenew); err != nil {
		t.Fatal(err)
	}
	if err := m.Acknowledge(recs[:1], clients.AckAccept); err == nil {
		t.Errorf("a record already released was acknowledged again")
	}
	m.Poll(context.Background())
	ack, ok := s.log[1].(*kmsg.ShareAcknowledgeRequest)
	if !ok || !ack.IsRenewAck || ack.ShareSessionEpoch != 1 {
		t.Fatalf("second request %+v, want a renewing ShareAcknowledge at epoch 1", s.log[1])
	}
	f := fetchReq(t, s.log[2])
	if f.ShareSessionEpoch != 2 || ackTypes(f.Topics[0].Partitions) != "0:0-0/[2] 0:1-1/[3]" {
		t.Errorf("fetch: epoch %d acks %q, want epoch 2 with release 0 and reject 1", f.ShareSessionEpoch, ackTypes(f.Topics[0].Partitions))
	}
	if err := m.Acknowledge(recs[2:], clients.AckAccept); err != nil {
		t.Errorf("a renewed record is still held: %v", err)
	}
}

// TestIgnoreDeliveryCountBug: the member carrying BugIgnoreDeliveryCount
// reports a third delivery as a first.
func TestIgnoreDeliveryCountBug(t *testing.T) {
	for _, c := range []struct {
		bug  Bug
		want int16
	}{{"", 3}, {BugIgnoreDeliveryCount, 1}} {
		m, s, rec := scripted(t, WithBug(c.bug))
		s.sf = append(s.sf, acquired(0, 3, "a"))
		m.Poll(context.Background())
		if got := rec.answers()[0].Share.Acquired[0].DeliveryCount; got != c.want {
			t.Errorf("bug %q: delivery count reported %d, want %d", c.bug, got, c.want)
		}
	}
}

// TestFencedRejoins: FENCED_MEMBER_EPOCH drops the assignment and the next
// heartbeat joins again at epoch 0 with the same member id and the
// subscription.
func TestFencedRejoins(t *testing.T) {
	m, s, _ := scripted(t)
	s.hb = append(s.hb, func(*kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
		r := kmsg.NewPtrShareGroupHeartbeatResponse()
		r.ErrorCode = kerr.FencedMemberEpoch.Code
		return r, nil
	}, heartbeatAnswer(7))
	m.mu.Lock()
	m.epoch = 5
	m.mu.Unlock()
	m.heartbeat()
	if got := m.Assigned().Count(); got != 0 {
		t.Errorf("fenced member kept %d partitions", got)
	}
	m.heartbeat()
	r := s.log[1].(*kmsg.ShareGroupHeartbeatRequest)
	if r.MemberEpoch != 0 || r.MemberID != m.MemberID() || len(r.SubscribedTopicNames) != 1 {
		t.Errorf("rejoin %+v, want epoch 0, the same member id and the topics", r)
	}
}

// TestLostHeartbeatAnswerResendsTopics scripts the order of events of
// seed 9522255144149453824 (embedded, churn, 4.4.0): a heartbeat at epoch 5
// whose answer is lost (the coordinator moved the member to epoch 7 and a
// new assignment), then one at the previous epoch, which the coordinator
// accepts but answers with the assignment only when the request is full.
// The second heartbeat must carry the subscribed topics, and its answer's
// assignment replaces the old one; the one after it is not full again.
func TestLostHeartbeatAnswerResendsTopics(t *testing.T) {
	m, s, _ := scripted(t)
	s.hb = append(s.hb, func(*kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
		return nil, context.DeadlineExceeded
	}, func(r *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.MemberEpoch = 7
		if r.SubscribedTopicNames != nil { // GMM: isFullRequest
			a := kmsg.NewShareGroupHeartbeatResponseAssignment()
			a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{{TopicID: topicT, Partitions: []int32{1}}}
			resp.Assignment = &a
		}
		return resp, nil
	}, heartbeatAnswer(7))
	m.mu.Lock()
	m.epoch = 5
	m.names[topicT] = "t" // the topic's metadata is known
	m.mu.Unlock()
	m.heartbeat()
	m.heartbeat()
	if r := s.log[1].(*kmsg.ShareGroupHeartbeatRequest); r.MemberEpoch != 5 || len(r.SubscribedTopicNames) != 1 {
		t.Errorf("heartbeat after the lost answer: epoch %d, topics %v; want epoch 5 and the topics", r.MemberEpoch, r.SubscribedTopicNames)
	}
	if got := m.Assigned(); got.Count() != 1 || len(got["t"]) != 1 || got["t"][0] != 1 {
		t.Errorf("assignment %v, want t-1", got)
	}
	m.heartbeat()
	if r := s.log[2].(*kmsg.ShareGroupHeartbeatRequest); r.SubscribedTopicNames != nil {
		t.Errorf("heartbeat after a full one answered carries topics %v; want none", r.SubscribedTopicNames)
	}
}

// TestCloseReleasesAndLeaves: Close accepts what was handed out, sends it
// at the final epoch -1 (closing the session) and then leaves at epoch -1.
func TestCloseReleasesAndLeaves(t *testing.T) {
	m, s, rec := scripted(t)
	s.sf = append(s.sf, acquired(0, 1, "a"))
	s.sa = append(s.sa, func(r *kmsg.ShareAcknowledgeRequest) (*kmsg.ShareAcknowledgeResponse, error) {
		return kmsg.NewPtrShareAcknowledgeResponse(), nil
	})
	s.hb = append(s.hb, heartbeatAnswer(-1))
	m.Poll(context.Background())
	m.mu.Lock()
	m.started = true
	m.mu.Unlock()
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ack := s.log[1].(*kmsg.ShareAcknowledgeRequest)
	if ack.ShareSessionEpoch != -1 || len(ack.Topics) != 1 || ack.Topics[0].Partitions[0].AcknowledgementBatches[0].AcknowledgeTypes[0] != clients.AckAccept {
		t.Errorf("close sent %+v, want the accept at epoch -1", ack)
	}
	if hb := s.log[2].(*kmsg.ShareGroupHeartbeatRequest); hb.MemberEpoch != -1 {
		t.Errorf("leave at epoch %d", hb.MemberEpoch)
	}
	evs := rec.All()
	last := evs[len(evs)-1]
	if last.Kind != clients.Left || last.Op != clients.OpLeave {
		t.Errorf("last event %+v, want the leave's answer", last)
	}
}

// TestEveryCallAnsweredOnce: each Sent is followed by exactly one answer of
// the same call and op, and calls of the fetch lane never overlap.
func TestEveryCallAnsweredOnce(t *testing.T) {
	m, s, rec := scripted(t)
	s.sf = append(s.sf, acquired(0, 1, "a", "b"), ackedWith(0), acquired(2, 1, "c"))
	for range 3 {
		m.Poll(context.Background())
	}
	open := map[uint64]bool{}
	lane := 0
	for _, e := range rec.All() {
		switch {
		case e.Kind == clients.Sent:
			if open[e.Call] || lane > 0 {
				t.Fatalf("call %d sent while another was open", e.Call)
			}
			open[e.Call] = true
			lane++
		case e.Call != 0:
			if !open[e.Call] {
				t.Fatalf("answer of call %d that was not open", e.Call)
			}
			delete(open, e.Call)
			lane--
		}
	}
	if len(open) != 0 {
		t.Errorf("calls never answered: %v", open)
	}
}

// TestAbandonSendsNothing: an abandoned member (its process died) sends
// no final acknowledgement and no leave, keeps counting the records it
// held (their locks lapse on the broker), and refuses every later call;
// a Close after it sends nothing either.
func TestAbandonSendsNothing(t *testing.T) {
	m, s, rec := scripted(t, Explicit())
	s.sf = append(s.sf, acquired(0, 1, "a", "b"))
	recs, err := m.Poll(context.Background())
	if err != nil || len(recs) != 2 {
		t.Fatalf("poll: %+v, %v", recs, err)
	}
	if err := m.Acknowledge(recs[:1], clients.AckAccept); err != nil {
		t.Fatal(err)
	}
	before := len(rec.All())
	m.Abandon()
	if got := m.Holding(); got != 1 {
		t.Errorf("abandoned member holds %d records, want the one it did not acknowledge", got)
	}
	if got := m.Unsent(); got != 1 {
		t.Errorf("abandoned member has %d acknowledgements unsent, want the accept it queued", got)
	}
	if _, err := m.Poll(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("poll after abandon: %v, want ErrClosed", err)
	}
	if err := m.Acknowledge(recs[1:], clients.AckAccept); !errors.Is(err, ErrClosed) {
		t.Errorf("acknowledge after abandon: %v, want ErrClosed", err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Drop()
	if after := len(rec.All()); len(s.log) != 1 || after != before {
		t.Errorf("abandoned member sent %d requests (want only the first fetch) and reported %d events after abandoning", len(s.log), after-before)
	}
}

// TestAckNotSent: the member carrying BugAckNotSent reports the accept its
// next fetch should carry, and the request goes without it; a correct
// member's request carries it.
func TestAckNotSent(t *testing.T) {
	for _, bug := range []Bug{"", BugAckNotSent} {
		m, s, rec := scripted(t, WithBug(bug))
		s.sf = append(s.sf, acquired(0, 1, "a"), ackedWith(0))
		m.Poll(context.Background())
		m.Poll(context.Background())
		ans := rec.answers()
		if len(ans) < 2 || ans[1].Share == nil || len(ans[1].Share.Acks) != 1 || ans[1].Share.Acks[0].Type != clients.AckAccept {
			t.Fatalf("bug %q: the second fetch is not reported with the accept: %+v", bug, ans)
		}
		got := ackTypes(fetchReq(t, s.log[1]).Topics[0].Partitions)
		if want := bug == ""; strings.Contains(got, "/[1]") != want {
			t.Errorf("bug %q: the second fetch carries acks %q on the wire; an accept there: %v, want %v", bug, got, !want, want)
		}
	}
}
