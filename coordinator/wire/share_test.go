package wire

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/coordinator/version"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func startShare(t *testing.T, dir string, v version.Version, clock *fakeClock) *Server {
	t.Helper()
	s, err := Start(Config{DataDir: dir, Version: v, NewCoordinator: newStandIn, Logf: t.Logf, ShareFetch: true, Now: clock.now})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return s
}

// shareClient sends share requests of one member and names what it got.
type shareClient struct {
	t      *testing.T
	ctx    context.Context
	cl     *kgo.Client
	member string
	topic  [16]byte
}

func (c *shareClient) fetch(epoch int32, maxRecords int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
	c.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	g, m := "sg", c.member
	req.GroupID, req.MemberID, req.ShareSessionEpoch, req.MaxRecords, req.BatchSize = &g, &m, epoch, maxRecords, maxRecords
	req.MaxBytes = 1 << 20
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = c.topic
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.AcknowledgementBatches = acks
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(c.ctx, c.cl)
	if err != nil {
		c.t.Fatalf("ShareFetch: %v", err)
	}
	return resp
}

func (c *shareClient) ack(epoch int32, first, last int64, typ int8) *kmsg.ShareAcknowledgeResponse {
	c.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	g, m := "sg", c.member
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &g, &m, epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = c.topic
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
	rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(c.ctx, c.cl)
	if err != nil {
		c.t.Fatalf("ShareAcknowledge: %v", err)
	}
	return resp
}

func ackBatchOf(first, last int64, typ int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
	return b
}

// acquired renders a ShareFetch answer: its error, and per partition the
// acknowledge error and the acquired ranges first-last@deliveryCount.
func acquired(r *kmsg.ShareFetchResponse) string {
	out := errName(r.ErrorCode)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out += fmt.Sprintf(" p%d err=%v ack=%v", p.Partition, errName(p.ErrorCode), errName(p.AcknowledgeErrorCode))
			for _, a := range p.AcquiredRecords {
				out += fmt.Sprintf(" %d-%d@%d", a.FirstOffset, a.LastOffset, a.DeliveryCount)
			}
			if len(p.AcquiredRecords) > 0 && len(p.Records) == 0 {
				out += " (no records)"
			}
		}
	}
	return out
}

// errName is the error's Kafka name, "<nil>" for none.
func errName(code int16) string {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return "<nil>"
}

func ackErrors(r *kmsg.ShareAcknowledgeResponse) string {
	out := errName(r.ErrorCode)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out += fmt.Sprintf(" p%d=%v", p.Partition, errName(p.ErrorCode))
		}
	}
	return out
}

// TestShareFetchOverTheWire drives two members' share sessions over the
// wire: the session epochs (0 opens, a wrong epoch or no session is
// refused, -1 closes and releases), acquisition with delivery counts,
// piggy-backed and separate acknowledgements, lock expiry on the server's
// clock, and the __share_group_state the leader wrote, replayed after a
// restart.
func TestShareFetchOverTheWire(t *testing.T) {
	for _, v := range []version.Version{version.V4_2_1, version.V4_4_0} {
		t.Run(v.String(), func(t *testing.T) { testShareFetchOverTheWire(t, v) })
	}
}

func testShareFetchOverTheWire(t *testing.T, v version.Version) {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	dir := t.TempDir()
	clock := &fakeClock{t: time.UnixMilli(1_000_000)}
	s := startShare(t, dir, v, clock)
	t.Cleanup(func() { s.Close() })
	tp := mustCreateTopic(t, s, "q", 1)
	produceN(ctx, t, s, "q", 5)
	m1 := &shareClient{t, ctx, newClient(t, s), "m1", tp.id}
	m2 := &shareClient{t, ctx, newClient(t, s), "m2", tp.id}

	steps := []struct {
		name string
		got  func() string
		want string
	}{
		{"ack before any session", func() string { return ackErrors(m1.ack(0, 0, 0, version.AckAccept)) }, "INVALID_SHARE_SESSION_EPOCH"},
		{"fetch with no session", func() string { return acquired(m1.fetch(1, 3)) }, "SHARE_SESSION_NOT_FOUND"},
		{"close with no session", func() string { return acquired(m1.fetch(-1, 0)) }, "SHARE_SESSION_NOT_FOUND"},
		{"open with acks", func() string { return acquired(m1.fetch(0, 3, ackBatchOf(0, 0, version.AckAccept))) }, "INVALID_REQUEST"},
		{"m1 opens", func() string { return acquired(m1.fetch(0, 3)) }, "<nil> p0 err=<nil> ack=<nil> 0-2@1"},
		{"m2 opens", func() string { return acquired(m2.fetch(0, 10)) }, "<nil> p0 err=<nil> ack=<nil> 3-4@1"},
		{"m1 wrong epoch", func() string { return acquired(m1.fetch(2, 3)) }, "INVALID_SHARE_SESSION_EPOCH"},
		{"m1 accepts 0, releases 1-2, fetches again", func() string {
			return acquired(m1.fetch(1, 3, ackBatchOf(0, 0, version.AckAccept), ackBatchOf(1, 2, version.AckRelease)))
		}, "<nil> p0 err=<nil> ack=<nil> 1-2@2"},
		{"m2 acks m1's record", func() string { return ackErrors(m2.ack(1, 1, 1, version.AckAccept)) }, "<nil> p0=INVALID_RECORD_STATE"},
		{"m2 ack at a used epoch", func() string { return ackErrors(m2.ack(1, 3, 3, version.AckAccept)) }, "INVALID_SHARE_SESSION_EPOCH"},
		{"m2 rejects 3", func() string { return ackErrors(m2.ack(2, 3, 3, version.AckReject)) }, "<nil> p0=<nil>"},
		{"nothing left", func() string { return acquired(m1.fetch(2, 10)) }, "<nil>"},
		{"locks lapse", func() string {
			clock.add(time.Duration(version.ShareRecordLockDurationMsDefault) * time.Millisecond)
			return acquired(m1.fetch(3, 10))
		}, "<nil> p0 err=<nil> ack=<nil> 1-2@3 4-4@2"},
		{"m1 closes", func() string { return acquired(m1.fetch(-1, 0)) }, "<nil>"},
		{"m1's session is gone", func() string { return ackErrors(m1.ack(4, 1, 1, version.AckAccept)) }, "SHARE_SESSION_NOT_FOUND"},
		{"m2 gets what m1 held", func() string { return acquired(m2.fetch(3, 10)) }, "<nil> p0 err=<nil> ack=<nil> 1-2@4 4-4@3"},
	}
	for _, st := range steps {
		if got := st.got(); got != st.want {
			t.Fatalf("%s: got %q, want %q", st.name, got, st.want)
		}
	}
	// Closing the server closes m2's connection, which closes its session
	// and releases its records: that write is in the log too.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	live := cloneStates(s.share.coord.States)
	k := sharegroup.StateKey{GroupID: "sg", TopicID: tp.id, Partition: 0}
	want := &sharegroup.PartitionState{StartOffset: 1, DeliveryCompleteCount: 1, Batches: []sharegroup.StateBatch{
		{FirstOffset: 1, LastOffset: 2, DeliveryState: sharegroup.StateAvailable, DeliveryCount: 4},
		{FirstOffset: 3, LastOffset: 3, DeliveryState: sharegroup.StateArchived, DeliveryCount: 1},
		{FirstOffset: 4, LastOffset: 4, DeliveryState: sharegroup.StateAvailable, DeliveryCount: 3},
	}}
	if !reflect.DeepEqual(live[k], want) {
		t.Fatalf("share state of %v: %+v, want %+v", k, live[k], want)
	}
	s = startShare(t, dir, v, clock)
	var replayed sharegroup.States
	s.WithCoordinator(func(Coordinator) { replayed = cloneStates(s.share.coord.States) })
	if !reflect.DeepEqual(live, replayed) {
		t.Fatalf("__share_group_state replayed after a restart:\n%+v\nlive before it:\n%+v", replayed[k], live[k])
	}
	// The new leader starts from the persisted state, with no locks: 1 is
	// on its last delivery (the limit is 5), so it is delivered alone.
	m3 := &shareClient{t, ctx, newClient(t, s), "m3", tp.id}
	if got, want := acquired(m3.fetch(0, 10)), "<nil> p0 err=<nil> ack=<nil> 1-1@5"; got != want {
		t.Fatalf("fetch after the restart: got %q, want %q", got, want)
	}
}

func cloneStates(st sharegroup.States) sharegroup.States {
	out := sharegroup.States{}
	for k, v := range st {
		c := *v
		c.Batches = append([]sharegroup.StateBatch(nil), v.Batches...)
		out[k] = &c
	}
	return out
}
