package wire

import (
	"context"
	"fmt"
	"reflect"
	"strings"
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
	group  string
}

func (c *shareClient) fetch(epoch int32, maxRecords int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
	c.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	g, m := c.group, c.member
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
	g, m := c.group, c.member
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
	m1 := &shareClient{t, ctx, newClient(t, s), "m1", tp.id, "sg"}
	m2 := &shareClient{t, ctx, newClient(t, s), "m2", tp.id, "sg"}
	setReset(ctx, t, m1.cl, "sg", "earliest")

	steps := []struct {
		name string
		got  func() string
		want string
	}{
		{"member id too long", func() string {
			long := &shareClient{t, ctx, m1.cl, "0123456789012345678901234567890123456", tp.id, "sg"}
			return acquired(long.fetch(0, 3))
		}, "INVALID_REQUEST"},
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
	m3 := &shareClient{t, ctx, newClient(t, s), "m3", tp.id, "sg"}
	if got, want := acquired(m3.fetch(0, 10)), "<nil> p0 err=<nil> ack=<nil> 1-1@5"; got != want {
		t.Fatalf("fetch after the restart: got %q, want %q", got, want)
	}
}

// setReset sets the group's share.auto.offset.reset.
func setReset(ctx context.Context, t *testing.T, cl *kgo.Client, group, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = groupResource, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = version.ShareAutoOffsetResetConfig, &value, kmsg.IncrementalAlterConfigOpSet
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs %s=%s: %v %+v", version.ShareAutoOffsetResetConfig, value, err, resp)
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

// TestShareAdminOverTheWire checks what a share run asks of the server
// besides ShareFetch: FindCoordinator for a share-partition key, the
// group's share.auto.offset.reset (latest by default, kept across a
// restart, bad configs refused) and DescribeShareGroupOffsets.
func TestShareAdminOverTheWire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	dir := t.TempDir()
	clock := &fakeClock{t: time.UnixMilli(1_000_000)}
	s := startShare(t, dir, version.V4_4_0, clock)
	t.Cleanup(func() { s.Close() })
	tp := mustCreateTopic(t, s, "q", 2)
	produceN(ctx, t, s, "q", 4) // two records in each partition
	cl := newClient(t, s)

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 2, []string{"lg:" + uuidString(tp.id) + ":0"}
	if r, err := fc.RequestWith(ctx, cl); err != nil || len(r.Coordinators) != 1 || r.Coordinators[0].ErrorCode != 0 || r.Coordinators[0].NodeID != 1 {
		t.Fatalf("FindCoordinator(share): %v %+v", err, r)
	}

	alter := func(rtype kmsg.ConfigResourceType, name, value string) string {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = rtype, "eg"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = name, &value
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Resources) != 1 {
			t.Fatalf("IncrementalAlterConfigs: %v %+v", err, resp)
		}
		return errName(resp.Resources[0].ErrorCode)
	}
	for _, c := range []struct {
		rtype       kmsg.ConfigResourceType
		name, value string
		want        string
	}{
		{groupResource, "share.record.lock.duration.ms", "1000", "INVALID_CONFIG"},
		{groupResource, version.ShareAutoOffsetResetConfig, "by_duration:PT1H", "INVALID_CONFIG"},
		{kmsg.ConfigResourceTypeTopic, version.ShareAutoOffsetResetConfig, "earliest", "INVALID_REQUEST"},
		{groupResource, version.ShareAutoOffsetResetConfig, "earliest", "<nil>"},
	} {
		if got := alter(c.rtype, c.name, c.value); got != c.want {
			t.Errorf("IncrementalAlterConfigs %v %s=%s: %s, want %s", c.rtype, c.name, c.value, got, c.want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = startShare(t, dir, version.V4_4_0, clock)
	cl = newClient(t, s)
	fetch := func(group string) string {
		req := kmsg.NewPtrShareFetchRequest()
		m := "m"
		req.GroupID, req.MemberID, req.MaxRecords, req.BatchSize, req.MaxBytes = &group, &m, 10, 10, 1<<20
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = tp.id
		for p := int32(0); p < 2; p++ {
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ShareFetch: %v", err)
		}
		return acquired(resp)
	}
	// eg kept earliest across the restart; lg starts at the end (latest).
	if got, want := fetch("eg"), "<nil> p0 err=<nil> ack=<nil> 0-1@1 p1 err=<nil> ack=<nil> 0-1@1"; got != want {
		t.Errorf("eg (earliest): %q, want %q", got, want)
	}
	if got, want := fetch("lg"), "<nil> p0 err=<nil> ack=<nil> p1 err=<nil> ack=<nil>"; got != want {
		t.Errorf("lg (latest): %q, want %q", got, want)
	}
	// An acquisition writes no state (Kafka's leader persists the start
	// offset it picked with its first write): until then the share
	// coordinator has start offset -1. eg's member accepts p0's records:
	// the write carries the start offset as it was (0) and the two settled
	// records (lag 0).
	eg := &shareClient{t, ctx, cl, "m", tp.id, "eg"}
	if r := eg.ack(1, 0, 1, version.AckAccept); ackErrors(r) != "<nil> p0=<nil>" {
		t.Fatalf("ShareAcknowledge: %s", ackErrors(r))
	}
	d := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	for _, g := range []string{"eg", "lg", "none"} {
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = g
		d.Groups = append(d.Groups, rg)
	}
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = "q", []int32{0, 1}
	d.Groups[2].Topics = append(d.Groups[2].Topics, rt)
	resp, err := d.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeShareGroupOffsets: %v", err)
	}
	got := ""
	for _, g := range resp.Groups {
		got += " " + g.GroupID + ":"
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				got += fmt.Sprintf(" %s-%d start=%d lag=%d %s", t.Topic, p.Partition, p.StartOffset, p.Lag, errName(p.ErrorCode))
			}
		}
	}
	if want := " eg: q-0 start=0 lag=0 <nil> q-1 start=-1 lag=-1 <nil> lg: q-0 start=-1 lag=-1 <nil> q-1 start=-1 lag=-1 <nil> none: q-0 start=-1 lag=-1 <nil> q-1 start=-1 lag=-1 <nil>"; got != want {
		t.Errorf("DescribeShareGroupOffsets:\n got%s\nwant%s", got, want)
	}
}

// TestShareLocksLapseOnTheServerClock: a lock whose time came lapses on
// the server's ticker, with no request to the share-partition, and the
// leader's write of it reaches __share_group_state.
func TestShareLocksLapseOnTheServerClock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	clock := &fakeClock{t: time.UnixMilli(1_000_000)}
	s := startShare(t, "", version.V4_4_0, clock)
	t.Cleanup(func() { s.Close() })
	tp := mustCreateTopic(t, s, "q", 1)
	produceN(ctx, t, s, "q", 2)
	// The connection stays open (closing it would release the records too).
	m := &shareClient{t, ctx, newClient(t, s, kgo.ConnIdleTimeout(15*time.Minute)), "m", tp.id, "sg"}
	setReset(ctx, t, m.cl, "sg", "earliest")
	if got, want := acquired(m.fetch(0, 10)), "<nil> p0 err=<nil> ack=<nil> 0-1@1"; got != want {
		t.Fatalf("fetch: %q, want %q", got, want)
	}
	k := sharegroup.StateKey{GroupID: "sg", TopicID: tp.id, Partition: 0}
	stateLog := func() []sharegroup.StateRecord {
		var out []sharegroup.StateRecord
		s.WithCoordinator(func(Coordinator) {
			if s.share.sessions[shareSessionKey{"sg", "m"}] == nil {
				t.Fatal("m's share session was closed")
			}
			err := eachRecord(s.topics[shareStateTopic], func(kr kmsg.Record) error {
				r, err := sharegroup.DecodeStateRecord(kr.Key, kr.Value)
				out = append(out, r)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
		return out
	}
	if n := len(stateLog()); n != 1 {
		t.Fatalf("%d records in %s before the lapse, want 1 (the initial snapshot)", n, shareStateTopic)
	}
	clock.add(time.Duration(version.ShareRecordLockDurationMsDefault) * time.Millisecond)
	for {
		if recs := stateLog(); len(recs) == 2 {
			u, ok := recs[1].Value.(*sharegroup.UpdateValue)
			want := []sharegroup.StateBatch{{FirstOffset: 0, LastOffset: 1, DeliveryState: sharegroup.StateAvailable, DeliveryCount: 1}}
			if recs[1].Key != k || !ok || !reflect.DeepEqual(u.StateBatches, want) {
				t.Fatalf("the lapse wrote %+v %+v, want an update of %v with %+v", recs[1].Key, recs[1].Value, k, want)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no lapse written to %s by the server's ticker", shareStateTopic)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ShareFetch and ShareAcknowledge refuse a request without a group id, or
// with a member id KafkaApis.isMemberIdValid refuses, with its messages.
func TestInvalidShareIDs(t *testing.T) {
	g, ok, empty, long := "sg", "m", "", strings.Repeat("m", 37)
	for _, c := range []struct {
		group, member *string
		want          string
	}{
		{&g, &ok, ""},
		{nil, &ok, "Invalid group id in the request."},
		{&g, nil, "Invalid member id in the request."},
		{&g, &empty, "Invalid member id in the request."},
		{&g, &long, "Invalid member id in the request."},
	} {
		if got := invalidShareIDs(c.group, c.member); got != c.want {
			t.Errorf("invalidShareIDs(%v, %v) = %q, want %q", c.group, c.member, got, c.want)
		}
	}
}
