package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
)

// The loop tests drive the real member (Start, its heartbeat goroutine,
// reconcile, commit, Close) against kfake, whose group coordinator is
// replaced by a script: ConsumerGroupHeartbeat, OffsetCommit and
// OffsetFetch are answered by the test (scriptBroker), everything else
// (metadata, coordinator lookup, fetches) by kfake. The script writes down
// every group request in the order it arrived, so a test asserts what the
// member sent and in which order, beside the events it reported. Waits are
// bounded polls; the one sleep is the quiet period in which a stale member
// must send nothing. The only timing assertion is a lower bound that a slow
// machine cannot break.

const loopTopic = "t"

// groupReq is one group request as the broker saw it, with what it answered.
type groupReq struct {
	at     time.Time
	node   int32 // the node it arrived at
	hb     *kmsg.ConsumerGroupHeartbeatRequest
	hbResp *kmsg.ConsumerGroupHeartbeatResponse
	commit *kmsg.OffsetCommitRequest
	fetch  *kmsg.OffsetFetchRequest
}

func (a groupReq) String() string {
	switch {
	case a.hb != nil:
		s := fmt.Sprintf("heartbeat epoch %d tps %v", a.hb.MemberEpoch, hbParts(a.hb))
		if a.hbResp != nil {
			s += fmt.Sprintf(" → err %d epoch %d", a.hbResp.ErrorCode, a.hbResp.MemberEpoch)
		}
		return s
	case a.commit != nil:
		return fmt.Sprintf("commit epoch %d %v", a.commit.Generation, clientstest.CommitOffsets(a.commit))
	default:
		return "offset-fetch"
	}
}

// scriptBroker is the scripted coordinator. The group's state for the next
// answer is epoch and assigned; fail answers the next heartbeat with an
// error instead, once.
type scriptBroker struct {
	c  *kfake.Cluster
	id [16]byte // the topic's id, as kfake made it

	mu       sync.Mutex
	log      []groupReq
	finds    []time.Time // when each FindCoordinator arrived
	epoch    int32
	assigned []int32
	interval time.Duration
	fail     int16
	fetchErr int16 // every OffsetFetch partition answers it while set
	// moved, while set, answers every heartbeat and OffsetFetch
	// NOT_COORDINATOR, as a node that is no longer the coordinator does.
	moved     bool
	committed map[int32]int64
	// holdLeave, while set, keeps the answer to a leave heartbeat until it
	// is closed; leaveHeld is signalled when a leave is being held.
	holdLeave chan struct{}
	leaveHeld chan struct{}
	// holdCommit does the same for OffsetCommit.
	holdCommit chan struct{}
	commitHeld chan struct{}
	// heldAt is when the first held OffsetCommit arrived.
	heldAt time.Time
	// hbDelay, while set, delays every heartbeat's answer by that much,
	// as a slow link does.
	hbDelay time.Duration
	// coordinator, while not -1, is the only node that answers heartbeats:
	// every other answers NOT_COORDINATOR (a leave too).
	coordinator int32
}

func newScriptBroker(t *testing.T, partitions int32) *scriptBroker {
	t.Helper()
	return newScriptBrokers(t, partitions, 1)
}

// newScriptBrokers is newScriptBroker on a cluster of n brokers, every one
// of which answers the group requests by the script.
// stuckBroker is a broker of two partitions that assigns both at epoch 1
// and cannot read their committed offsets (UNSTABLE_OFFSET_COMMIT), so a
// member's reconciliation cannot finish.
func stuckBroker(t *testing.T) *scriptBroker {
	s := newScriptBroker(t, 2)
	s.set(1, 0, 1)
	s.mu.Lock()
	s.fetchErr = kerr.UnstableOffsetCommit.Code
	s.mu.Unlock()
	return s
}

func newScriptBrokers(t *testing.T, partitions int32, n int) *scriptBroker {
	t.Helper()
	c := clientstest.NewCluster(t, kfake.NumBrokers(n), kfake.SeedTopics(partitions, loopTopic))
	t.Cleanup(c.Close)
	s := &scriptBroker{c: c, epoch: 1, interval: 100 * time.Millisecond, committed: map[int32]int64{}, coordinator: -1}

	// Ten records in every partition, and the topic's id.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := range partitions {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: loopTopic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = new(loopTopic)
	meta.Topics = append(meta.Topics, mt)
	resp, err := meta.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 {
		t.Fatalf("metadata of %s: %v %+v", loopTopic, err, resp)
	}
	s.id = resp.Topics[0].TopicID

	c.ControlKey(kmsg.ConsumerGroupHeartbeat.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		hb := req.(*kmsg.ConsumerGroupHeartbeatRequest)
		s.mu.Lock()
		hold, held, delay := s.holdLeave, s.leaveHeld, s.hbDelay
		s.mu.Unlock()
		if delay > 0 {
			c.SleepControl(func() { time.Sleep(delay) })
		}
		if hb.MemberEpoch < 0 && hold != nil {
			select {
			case held <- struct{}{}:
			default:
			}
			c.SleepControl(func() { <-hold })
		}
		return s.heartbeat(hb, c.CurrentNode()), nil, true
	})
	c.ControlKey(kmsg.OffsetCommit.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		s.mu.Lock()
		hold, held := s.holdCommit, s.commitHeld
		if hold != nil && s.heldAt.IsZero() {
			s.heldAt = time.Now()
		}
		s.mu.Unlock()
		if hold != nil {
			select {
			case held <- struct{}{}:
			default:
			}
			c.SleepControl(func() { <-hold })
		}
		return s.offsetCommit(req.(*kmsg.OffsetCommitRequest)), nil, true
	})
	c.ControlKey(kmsg.OffsetFetch.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return s.offsetFetch(req.(*kmsg.OffsetFetchRequest)), nil, true
	})
	// When FindCoordinators arrive is written down (apart from the
	// group requests); kfake answers them, or a test's control of them
	// registered after this one.
	c.ControlKey(kmsg.FindCoordinator.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		s.mu.Lock()
		s.finds = append(s.finds, time.Now())
		s.mu.Unlock()
		return nil, nil, false
	})
	return s
}

func (s *scriptBroker) heartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, node int32) kmsg.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.SetVersion(req.GetVersion())
	resp.MemberID = new(req.MemberID)
	resp.HeartbeatIntervalMillis = int32(s.interval / time.Millisecond)
	switch {
	case s.coordinator >= 0 && node != s.coordinator:
		resp.ErrorCode = kerr.NotCoordinator.Code
		resp.MemberID = nil
		resp.MemberEpoch = -1
	case req.MemberEpoch < 0:
		resp.MemberEpoch = req.MemberEpoch
	case s.moved:
		resp.ErrorCode = kerr.NotCoordinator.Code
		resp.MemberID = nil
		resp.MemberEpoch = -1
	case s.fail != 0:
		resp.ErrorCode, s.fail = s.fail, 0
		resp.MemberID = nil
		resp.MemberEpoch = -1
	default:
		resp.MemberEpoch = s.epoch
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		if len(s.assigned) > 0 {
			at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			at.TopicID = s.id
			at.Partitions = slices.Clone(s.assigned)
			a.Topics = append(a.Topics, at)
		}
		resp.Assignment = &a
	}
	s.log = append(s.log, groupReq{at: time.Now(), node: node, hb: req, hbResp: resp})
	return resp
}

func (s *scriptBroker) offsetCommit(req *kmsg.OffsetCommitRequest) kmsg.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, groupReq{at: time.Now(), commit: req})
	return clientstest.CommitAnswer(req, 0, func(p kmsg.OffsetCommitRequestTopicPartition) { s.committed[p.Partition] = p.Offset })
}

func (s *scriptBroker) offsetFetch(req *kmsg.OffsetFetchRequest) kmsg.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, groupReq{at: time.Now(), fetch: req})
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.SetVersion(req.GetVersion())
	for _, g := range req.Groups {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		if s.moved {
			rg.ErrorCode = kerr.NotCoordinator.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		for _, gt := range g.Topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.TopicID = gt.Topic, gt.TopicID
			for _, p := range gt.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition = p
				rp.Offset = -1
				if o, ok := s.committed[p]; ok {
					rp.Offset = o
				}
				rp.ErrorCode = s.fetchErr
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// set changes what the next heartbeat answers.
func (s *scriptBroker) set(epoch int32, assigned ...int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch, s.assigned = epoch, assigned
}

func (s *scriptBroker) failNext(code int16, thenEpoch int32, thenAssigned ...int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail, s.epoch, s.assigned = code, thenEpoch, thenAssigned
}

func (s *scriptBroker) arrivals() []groupReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func (s *scriptBroker) dump() string {
	var b strings.Builder
	for i, a := range s.arrivals() {
		fmt.Fprintf(&b, "  %d %s\n", i, a)
	}
	return b.String()
}

func hbParts(req *kmsg.ConsumerGroupHeartbeatRequest) []int32 {
	if req.Topics == nil {
		return nil
	}
	out := []int32{}
	for _, t := range req.Topics {
		out = append(out, t.Partitions...)
	}
	slices.Sort(out)
	return out
}

// loopMember is a started member that polls in the background, as the
// workload does, until the test ends.
type loopMember struct {
	*Member
	log *eventLog
}

func startLoopMember(t *testing.T, s *scriptBroker, opts ...Opt) loopMember {
	t.Helper()
	return startMember(t, s, true, opts...)
}

// startMember starts a member; with poll, a goroutine polls it until the
// test ends, as the workload does.
func startMember(t *testing.T, s *scriptBroker, poll bool, opts ...Opt) loopMember {
	t.Helper()
	log := &eventLog{}
	base := []Opt{
		KgoOpts(kgo.SeedBrokers(s.c.ListenAddrs()...)), Topics(loopTopic), WithHooks(log),
		AutoCommitInterval(0), // commits only before reconciliations and on Close
		RebalanceTimeout(30 * time.Second), RequestTimeout(5 * time.Second),
	}
	mb, err := New("m1", "g", append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := mb.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for poll && ctx.Err() == nil {
			if _, err := mb.Poll(ctx); errors.Is(err, ErrClosed) {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		mb.Close(cctx)
		cancel()
		<-done
	})
	return loopMember{mb, log}
}

// startAssigned starts a member against a script broker of two partitions
// whose heartbeats assign it t[0 1] at epoch 1; with poll, a goroutine
// polls it until the test ends. It returns the broker, the member and what
// the test prints when it fails.
func startAssigned(t *testing.T, poll bool, opts ...Opt) (*scriptBroker, loopMember, func() string) {
	t.Helper()
	s := newScriptBroker(t, 2)
	s.set(1, 0, 1)
	m := startMember(t, s, poll, opts...)
	return s, m, m.dumpWith(s)
}

// pollUntil polls m in 50 ms steps until cond holds; when ctx ends first
// the test fails with what.
func pollUntil(t *testing.T, ctx context.Context, m *Member, what string, cond func() bool, dump func() string) {
	t.Helper()
	for !cond() {
		pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		m.Poll(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("%s\n%s", what, dump())
		}
	}
}

// eventually polls cond for up to 20 s.
func eventually(t *testing.T, what string, cond func() bool, dump func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s\n%s", what, dump())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (m loopMember) owns(ps ...int32) func() bool {
	return func() bool { return slices.Equal(m.Owned()[loopTopic], ps) && (len(ps) > 0 || m.Owned().Count() == 0) }
}

// consumedAll reports whether the member handed out every record of its
// owned partitions (ten each).
func (m loopMember) consumedAll() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.owned[loopTopic] {
		if m.positions[loopTopic][p] != 10 {
			return false
		}
	}
	return len(m.owned[loopTopic]) > 0
}

func (m loopMember) dumpWith(s *scriptBroker) func() string {
	return func() string {
		var b strings.Builder
		b.WriteString("broker saw:\n" + s.dump() + "member reported:\n")
		for _, e := range m.log.All() {
			fmt.Fprintf(&b, "  %s epoch %d parts %v offsets %v err %s: %s\n", e.Kind, e.MemberEpoch, e.Partitions, e.Offsets, e.Err, e.Why)
		}
		return b.String()
	}
}

func heartbeats(as []groupReq) []groupReq {
	var out []groupReq
	for _, a := range as {
		if a.hb != nil {
			out = append(out, a)
		}
	}
	return out
}

// The join: the first heartbeat carries epoch 0, the member's own id, the
// subscription, the rebalance timeout and an empty owned set; the answer's
// assignment is fetched (OffsetFetch with the new epoch), assigned, and
// acknowledged at once by a heartbeat listing it.
func TestLoopJoinFetchesAssignsAndAcknowledges(t *testing.T) {
	t.Parallel()
	s := newScriptBroker(t, 4)
	s.set(1, 0, 1)
	m := startLoopMember(t, s)
	dump := m.dumpWith(s)
	eventually(t, "the member owns t[0 1]", m.owns(0, 1), dump)
	eventually(t, "the owned set is acknowledged", func() bool {
		for _, a := range heartbeats(s.arrivals()) {
			if a.hb.MemberEpoch == 1 && slices.Equal(hbParts(a.hb), []int32{0, 1}) {
				return true
			}
		}
		return false
	}, dump)

	as := s.arrivals()
	first := as[0].hb
	if first == nil {
		t.Fatalf("the first group request was not a heartbeat\n%s", dump())
	}
	if first.MemberEpoch != 0 || first.MemberID != m.MemberID() || first.MemberID == "" {
		t.Errorf("first heartbeat epoch %d id %q, want epoch 0 and the member's id %q", first.MemberEpoch, first.MemberID, m.MemberID())
	}
	if !slices.Equal(first.SubscribedTopicNames, []string{loopTopic}) || first.RebalanceTimeoutMillis != 30000 {
		t.Errorf("first heartbeat subscribes %v with rebalance timeout %d, want [t] and 30000", first.SubscribedTopicNames, first.RebalanceTimeoutMillis)
	}
	if got := hbParts(first); got == nil || len(got) != 0 {
		t.Errorf("first heartbeat owned %v, want an empty (not null) list", got)
	}
	// Fetch before assign, with the epoch that assigned the partitions.
	iFetch := slices.IndexFunc(as, func(a groupReq) bool { return a.fetch != nil })
	iAck := slices.IndexFunc(as, func(a groupReq) bool { return a.hb != nil && slices.Equal(hbParts(a.hb), []int32{0, 1}) })
	if iFetch < 0 || iFetch > iAck {
		t.Fatalf("no OffsetFetch before the acknowledgement\n%s", dump())
	}
	g := as[iFetch].fetch.Groups[0]
	if g.MemberEpoch != 1 || g.MemberID == nil || *g.MemberID != m.MemberID() {
		t.Errorf("OffsetFetch with epoch %d id %v, want epoch 1 and the member's id", g.MemberEpoch, g.MemberID)
	}
	// The acknowledgement follows the assigning answer directly: no
	// heartbeat in between says the old (empty) owned set.
	for _, a := range as[1:iAck] {
		if a.hb != nil && a.hb.Topics != nil {
			t.Errorf("heartbeat before the acknowledgement lists %v\n%s", hbParts(a.hb), dump())
		}
	}
	evs := m.log.All()
	iAssigned := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.Assigned })
	iFetched := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.Fetched })
	iJoined := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.Joined })
	if iJoined < 0 || iFetched < iJoined || iAssigned < iFetched {
		t.Errorf("events out of order: joined %d, fetched %d, assigned %d\n%s", iJoined, iFetched, iAssigned, dump())
	} else if !slices.Equal(evs[iAssigned].Partitions[loopTopic], []int32{0, 1}) {
		t.Errorf("assigned %v, want t[0 1]", evs[iAssigned].Partitions)
	}
}

// commitBeforeRevoke checks one revocation of partition p: after the
// heartbeat answer that takes p away, an OffsetCommit of p at offset want
// reaches the broker before the heartbeat that acknowledges p's loss, and the
// member reports the commit before it reports p revoked.
func commitBeforeRevoke(as []groupReq, evs []clients.Event, p int32, want int64) error {
	iAnswer := slices.IndexFunc(as, func(a groupReq) bool {
		return a.hb != nil && a.hbResp.Assignment != nil && a.hbResp.ErrorCode == 0 && !slices.Contains(a.hbResp.Assignment.Topics[0].Partitions, p) && a.hb.MemberEpoch > 0
	})
	if iAnswer < 0 {
		return fmt.Errorf("no heartbeat answer took t[%d] away", p)
	}
	iAck := -1
	for i := iAnswer + 1; i < len(as); i++ {
		if as[i].hb != nil && as[i].hb.Topics != nil && !slices.Contains(hbParts(as[i].hb), p) {
			iAck = i
			break
		}
	}
	if iAck < 0 {
		return fmt.Errorf("the revocation of t[%d] was never acknowledged", p)
	}
	committed := false
	for _, a := range as[iAnswer+1 : iAck] {
		if a.commit != nil {
			if o, ok := clientstest.CommitOffsets(a.commit)[p]; ok && o == want {
				committed = true
			}
		}
	}
	if !committed {
		return fmt.Errorf("no OffsetCommit of t[%d] at %d between the revoking answer (groupReq %d) and its acknowledgement (groupReq %d)", p, want, iAnswer, iAck)
	}
	iCommitted := slices.IndexFunc(evs, func(e clients.Event) bool {
		o, ok := e.Offsets[loopTopic][p]
		return e.Kind == clients.Committed && ok && o == want
	})
	iRevoked := slices.IndexFunc(evs, func(e clients.Event) bool {
		return e.Kind == clients.Revoked && slices.Contains(e.Partitions[loopTopic], p)
	})
	if iCommitted < 0 || iRevoked < 0 || iRevoked < iCommitted {
		return fmt.Errorf("member reported committed at %d and revoked at %d: the commit must come first", iCommitted, iRevoked)
	}
	return nil
}

// A revocation: the member commits what it handed out, then gives the
// partition up (Revoked, Owned), then acknowledges; a partition it keeps is
// not touched. The same scenario with BugSkipCommitBeforeRevoke must fail
// the same check, so the check is known to catch the skipped step.
func TestLoopRevocationCommitsFirst(t *testing.T) {
	t.Parallel()
	memberAndBug(t, BugSkipCommitBeforeRevoke, func(t *testing.T, opts []Opt, bug bool) {
		s := newScriptBroker(t, 4)
		s.set(1, 0, 1)
		m := startLoopMember(t, s, opts...)
		dump := m.dumpWith(s)
		eventually(t, "the member owns t[0 1] and handed out all their records", func() bool { return m.owns(0, 1)() && m.consumedAll() }, dump)
		s.set(2, 0)
		eventually(t, "the member owns only t[0]", m.owns(0), dump)
		eventually(t, "the revocation is acknowledged", func() bool {
			for _, a := range heartbeats(s.arrivals()) {
				if a.hb.MemberEpoch == 2 && slices.Equal(hbParts(a.hb), []int32{0}) {
					return true
				}
			}
			return false
		}, dump)
		err := commitBeforeRevoke(s.arrivals(), m.log.All(), 1, 10)
		switch {
		case bug && err == nil:
			t.Fatalf("the check passed a member that revokes without committing\n%s", dump())
		case !bug && err != nil:
			t.Fatalf("%v\n%s", err, dump())
		}
		if bug {
			return
		}
		for _, e := range m.log.All() {
			if e.Kind == clients.Revoked && slices.Contains(e.Partitions[loopTopic], 0) {
				t.Errorf("t[0] was revoked though the new assignment keeps it: %+v", e)
			}
			if e.Kind == clients.Lost {
				t.Errorf("a clean revocation reported lost partitions: %+v", e)
			}
		}
	})
}

// A fence (FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID): the member drops
// everything as lost without committing it, rejoins at epoch 0 with the
// same member id and an empty owned set, and takes the new assignment.
func TestLoopFencedRejoinsAtEpochZero(t *testing.T) {
	t.Parallel()
	eachFence(t, func(t *testing.T, code *kerr.Error) {
		s := newScriptBroker(t, 4)
		s.set(3, 0, 1)
		m := startLoopMember(t, s)
		dump := m.dumpWith(s)
		eventually(t, "the member owns t[0 1] and handed out their records", func() bool { return m.owns(0, 1)() && m.consumedAll() }, dump)
		id := m.MemberID()
		before := len(s.arrivals())
		s.failNext(code.Code, 7, 2, 3)
		eventually(t, "the member owns t[2 3] at epoch 7", func() bool { return m.owns(2, 3)() && m.Epoch() == 7 }, dump)

		as := s.arrivals()[before:]
		iFence := slices.IndexFunc(as, func(a groupReq) bool { return a.hb != nil && a.hbResp.ErrorCode == code.Code })
		if iFence < 0 {
			t.Fatalf("the broker never answered %s\n%s", code.Message, dump())
		}
		iRejoin := slices.IndexFunc(as, func(a groupReq) bool { return a.hb != nil && a.hb.MemberEpoch == 0 })
		if iRejoin != iFence+1 {
			t.Fatalf("the request after the fence (groupReq %d) is not an epoch-0 heartbeat (first at %d)\n%s", iFence, iRejoin, dump())
		}
		rejoin := as[iRejoin].hb
		if rejoin.MemberID != id {
			t.Errorf("rejoined as %q, want the same member id %q", rejoin.MemberID, id)
		}
		if got := hbParts(rejoin); got == nil || len(got) != 0 {
			t.Errorf("rejoin heartbeat owns %v, want an empty list", got)
		}
		if !slices.Equal(rejoin.SubscribedTopicNames, []string{loopTopic}) {
			t.Errorf("rejoin heartbeat subscribes %v, want the full subscription", rejoin.SubscribedTopicNames)
		}
		for _, a := range as {
			if a.commit != nil {
				t.Errorf("fenced member committed %v: lost partitions are not committed", clientstest.CommitOffsets(a.commit))
			}
		}
		evs := m.log.All()
		iLost := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.Lost })
		if iLost < 0 || !slices.Equal(evs[iLost].Partitions[loopTopic], []int32{0, 1}) {
			t.Fatalf("no Lost of t[0 1]\n%s", dump())
		}
		for i, e := range evs {
			if e.Kind == clients.Revoked {
				t.Errorf("a fenced member revoked %v: it loses, it does not revoke", e.Partitions)
			}
			if e.Kind == clients.Assigned && slices.Contains(e.Partitions[loopTopic], 2) && i < iLost {
				t.Errorf("t[2] assigned before t[0 1] were lost")
			}
		}
	})
}

// The member heartbeats at the interval the broker names, not sooner (nor at
// the 1 s it uses before the first answer). Only a lower bound is checked:
// the broker answers every heartbeat before the member schedules the next,
// so two arrivals are at least one interval apart however slow the machine.
// The rebalance timeout is shorter than the steady stretch: it runs only
// while reconciling, so a stable member keeps its epoch.
func TestLoopHeartbeatInterval(t *testing.T) {
	t.Parallel()
	s := newScriptBroker(t, 2)
	s.set(1, 0, 1)
	s.mu.Lock()
	s.interval = 1300 * time.Millisecond
	s.mu.Unlock()
	m := startLoopMember(t, s, RebalanceTimeout(time.Second))
	dump := m.dumpWith(s)
	eventually(t, "the member owns t[0 1]", m.owns(0, 1), dump)
	eventually(t, "the acknowledgement went out", func() bool {
		return slices.ContainsFunc(heartbeats(s.arrivals()), func(a groupReq) bool { return a.hb.Topics != nil && len(a.hb.Topics) > 0 })
	}, dump)
	from := len(heartbeats(s.arrivals()))
	eventually(t, "three more heartbeats", func() bool { return len(heartbeats(s.arrivals())) >= from+3 }, dump)
	hbs := heartbeats(s.arrivals())
	for i := from; i < from+3; i++ {
		if gap := hbs[i].at.Sub(hbs[i-1].at); gap < s.interval {
			t.Errorf("heartbeat %d arrived %v after the previous one, sooner than the interval %v\n%s", i, gap, s.interval, dump())
		}
		if hbs[i].hb.MemberEpoch != 1 {
			t.Errorf("steady heartbeat %d has epoch %d, want 1", i, hbs[i].hb.MemberEpoch)
		}
	}
}

// Close commits what was handed out, revokes everything, then sends the
// leave heartbeat: epoch -1, or -2 for a static member, with its id; the
// member reports Left.
func TestLoopCloseCommitsThenLeaves(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  []Opt
		epoch int32
	}{
		{name: "dynamic", epoch: -1},
		{name: "static", opts: []Opt{InstanceID("i1")}, epoch: -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, m, dump := startAssigned(t, true, tc.opts...)
			eventually(t, "the member owns t[0 1] and handed out their records", func() bool { return m.owns(0, 1)() && m.consumedAll() }, dump)
			before := len(s.arrivals())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := m.Close(ctx); err != nil {
				t.Fatalf("close: %v", err)
			}
			as := s.arrivals()[before:]
			iCommit := slices.IndexFunc(as, func(a groupReq) bool { return a.commit != nil })
			iLeave := slices.IndexFunc(as, func(a groupReq) bool { return a.hb != nil && a.hb.MemberEpoch < 0 })
			if iCommit < 0 || iLeave < 0 || iLeave < iCommit {
				t.Fatalf("want an OffsetCommit, then the leave heartbeat; got commit at %d, leave at %d\n%s", iCommit, iLeave, dump())
			}
			if got := clientstest.CommitOffsets(as[iCommit].commit); got[0] != 10 || got[1] != 10 {
				t.Errorf("close committed %v, want t[0]=10 t[1]=10", got)
			}
			leave := as[iLeave].hb
			if leave.MemberEpoch != tc.epoch || leave.MemberID != m.MemberID() {
				t.Errorf("leave heartbeat epoch %d id %q, want %d and %q", leave.MemberEpoch, leave.MemberID, tc.epoch, m.MemberID())
			}
			for _, a := range as[iLeave+1:] {
				if a.hb != nil {
					t.Errorf("heartbeat after the leave: %s", a)
				}
			}
			evs := m.log.All()
			iRevoked := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.Revoked })
			iLeft := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.Left })
			if iRevoked < 0 || iLeft < iRevoked || evs[iLeft].MemberEpoch != tc.epoch {
				t.Errorf("want Revoked then Left with epoch %d; revoked at %d, left at %d\n%s", tc.epoch, iRevoked, iLeft, dump())
			}
			if m.Owned().Count() != 0 {
				t.Errorf("a closed member owns %v", m.Owned())
			}
		})
	}
}

// The poll timer: a member not polled for longer than the max poll interval
// leaves on its own (epoch -1), drops its partitions as lost, sends nothing
// more, and rejoins at epoch 0 with the same id on the next Poll.
func TestLoopPollTimeoutLeavesAndPollRejoins(t *testing.T) {
	t.Parallel()
	s, m, dump := startAssigned(t, false, MaxPollInterval(1500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pollUntil(t, ctx, m.Member, "the member never owned t[0 1]", m.owns(0, 1), dump)
	// No Poll from here on.
	eventually(t, "the member leaves", func() bool {
		return slices.ContainsFunc(s.arrivals(), func(a groupReq) bool { return a.hb != nil && a.hb.MemberEpoch == -1 })
	}, dump)
	evs := m.log.All()
	iExpired := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.SessionExpired })
	iLost := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.Lost })
	if iExpired < 0 || iLost < 0 || !slices.Equal(evs[iLost].Partitions[loopTopic], []int32{0, 1}) {
		t.Fatalf("want SessionExpired and Lost of t[0 1]\n%s", dump())
	}
	if m.Owned().Count() != 0 {
		t.Errorf("owns %v after leaving", m.Owned())
	}
	// Staying out: no heartbeat after the leave while nobody polls. The
	// loop wakes at least every second, so two seconds would show one.
	n := len(s.arrivals())
	time.Sleep(2 * time.Second)
	for _, a := range s.arrivals()[n:] {
		t.Errorf("sent while stale (no Poll since the leave): %s", a)
	}
	// A member that left is out of the group: its poll timer does not run
	// on, so the leave is reported once however long nobody polls.
	expired := 0
	for _, e := range m.log.All() {
		if e.Kind == clients.SessionExpired {
			expired++
		}
	}
	if expired != 1 {
		t.Errorf("%d SessionExpired events while stale, want the one of the leave\n%s", expired, dump())
	}
	pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	m.Poll(pctx)
	pcancel()
	eventually(t, "the member rejoins at epoch 0", func() bool {
		return slices.ContainsFunc(s.arrivals()[n:], func(a groupReq) bool { return a.hb != nil && a.hb.MemberEpoch == 0 && a.hb.MemberID == m.MemberID() })
	}, dump)
}

// The rebalance timeout: a reconciliation that cannot finish (here the
// committed offsets of the new partitions cannot be read) makes the member
// leave at epoch -1 once the timeout has passed, as the broker would fence
// it, and rejoin at epoch 0 with the same id; it then reconciles.
func TestLoopRebalanceTimeoutLeavesAndRejoins(t *testing.T) {
	t.Parallel()
	s := stuckBroker(t)
	// Nobody polls: the rejoin after this leave is the member's own, unlike
	// the poll timer's, which waits for a Poll.
	m := startMember(t, s, false, RebalanceTimeout(1500*time.Millisecond), RetryBackoff(50*time.Millisecond, 200*time.Millisecond))
	dump := m.dumpWith(s)
	eventually(t, "the member leaves", func() bool {
		return slices.ContainsFunc(s.arrivals(), func(a groupReq) bool { return a.hb != nil && a.hb.MemberEpoch == -1 })
	}, dump)
	as := s.arrivals()
	iLeave := slices.IndexFunc(as, func(a groupReq) bool { return a.hb != nil && a.hb.MemberEpoch == -1 })
	if as[0].hb == nil || as[0].hb.MemberEpoch != 0 {
		t.Fatalf("first request is not the join\n%s", dump())
	}
	if gap := as[iLeave].at.Sub(as[0].at); gap < 1500*time.Millisecond {
		t.Errorf("left %v after joining, before the rebalance timeout of 1.5s", gap)
	}
	if m.Owned().Count() != 0 {
		t.Errorf("owns %v though no assignment finished", m.Owned())
	}
	if !slices.ContainsFunc(m.log.All(), func(e clients.Event) bool { return e.Kind == clients.SessionExpired }) {
		t.Errorf("no SessionExpired event\n%s", dump())
	}
	s.mu.Lock()
	s.fetchErr = 0
	s.mu.Unlock()
	eventually(t, "the member rejoins and owns t[0 1]", m.owns(0, 1), dump)
	as = s.arrivals()
	iRejoin := slices.IndexFunc(as[iLeave+1:], func(a groupReq) bool { return a.hb != nil && a.hb.MemberEpoch == 0 })
	if iRejoin < 0 || as[iLeave+1+iRejoin].hb.MemberID != m.MemberID() {
		t.Errorf("no epoch-0 rejoin with the member's id after the leave\n%s", dump())
	}
}

// NOT_COORDINATOR on a heartbeat: the member forgets the coordinator
// (Java's markCoordinatorUnknown) and looks it up with a FindCoordinator
// before the next heartbeat, which carries the same epoch: the member
// keeps its partitions.
func TestLoopNotCoordinatorFindsItAgain(t *testing.T) {
	t.Parallel()
	s := newScriptBroker(t, 2)
	s.set(4, 0, 1)
	m := startLoopMember(t, s, RetryBackoff(20*time.Millisecond, 100*time.Millisecond))
	dump := m.dumpWith(s)
	eventually(t, "the member owns t[0 1]", m.owns(0, 1), dump)
	before := len(s.arrivals())
	s.failNext(kerr.NotCoordinator.Code, 4, 0, 1)
	var iFail int
	eventually(t, "a heartbeat after NOT_COORDINATOR", func() bool {
		as := s.arrivals()[before:]
		iFail = slices.IndexFunc(as, func(a groupReq) bool { return a.hb != nil && a.hbResp.ErrorCode == kerr.NotCoordinator.Code })
		return iFail >= 0 && slices.ContainsFunc(as[iFail+1:], func(a groupReq) bool { return a.hb != nil })
	}, dump)
	as := s.arrivals()[before:]
	iNext := iFail + 1 + slices.IndexFunc(as[iFail+1:], func(a groupReq) bool { return a.hb != nil })
	s.mu.Lock()
	finds := slices.Clone(s.finds)
	s.mu.Unlock()
	between, earlier := 0, 0
	for _, at := range finds {
		switch {
		case at.After(as[iFail].at) && at.Before(as[iNext].at):
			between++
		case at.Before(as[iFail].at) && at.After(as[0].at):
			earlier++
		}
	}
	if between != 1 {
		t.Fatalf("%d FindCoordinators between NOT_COORDINATOR (arrival %d) and the next heartbeat (%d), want 1\n%s", between, iFail, iNext, dump())
	}
	if earlier != 0 {
		t.Errorf("%d FindCoordinators between heartbeats answered by the coordinator: the member looked up a coordinator it knew\n%s", earlier, dump())
	}
	if ep := as[iNext].hb.MemberEpoch; ep != 4 {
		t.Errorf("heartbeat after NOT_COORDINATOR has epoch %d, want 4 (nothing changed)", ep)
	}
	if slices.ContainsFunc(m.log.All(), func(e clients.Event) bool { return e.Kind == clients.Lost || e.Kind == clients.Revoked }) {
		t.Errorf("NOT_COORDINATOR cost the member its partitions\n%s", dump())
	}
}

// A newly assigned partition resumes at its committed offset (the
// OffsetFetch answer), one without a commit at its start.
func TestLoopAssignedPartitionResumesAtTheCommit(t *testing.T) {
	t.Parallel()
	s := newScriptBroker(t, 2)
	s.mu.Lock()
	s.committed[1] = 7
	s.mu.Unlock()
	s.set(1, 0, 1)
	m := startMember(t, s, false)
	dump := m.dumpWith(s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := map[int32][]int64{}
	for n := 0; n < 13; {
		pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		recs, _ := m.Poll(pctx)
		pcancel()
		for _, r := range recs {
			got[r.Partition] = append(got[r.Partition], r.Offset)
			n++
		}
		if ctx.Err() != nil {
			t.Fatalf("consumed %v, want t[0] 0..9 and t[1] 7..9\n%s", got, dump())
		}
	}
	if !slices.Equal(got[1], []int64{7, 8, 9}) || len(got[0]) != 10 || got[0][0] != 0 {
		t.Errorf("consumed %v, want t[0] from 0 (no commit) and t[1] 7..9 (committed 7)", got)
	}
}

// A fatal heartbeat error (here GROUP_AUTHORIZATION_FAILED) stops the
// member as Java's transitionToFatal does: its partitions are lost, Poll
// returns the error, and it sends nothing more, not even a leave on Close.
func TestLoopFatalErrorStopsTheMember(t *testing.T) {
	t.Parallel()
	s, m, dump := startAssigned(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pollUntil(t, ctx, m.Member, "the member never owned t[0 1]", m.owns(0, 1), dump)
	s.failNext(kerr.GroupAuthorizationFailed.Code, 1, 0, 1)
	var err error
	for err == nil {
		pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err = m.Poll(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("Poll never returned the fatal error\n%s", dump())
		}
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("Poll returned %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	// The error reaches Poll as soon as the answer is read; the partitions
	// are dropped right after, under the ownership lock Poll also takes.
	eventually(t, "the fatal member owns nothing", m.owns(), dump)
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if err := m.Close(cctx); err != nil {
		t.Errorf("close: %v", err)
	}
	as := s.arrivals()
	iFatal := slices.IndexFunc(as, func(a groupReq) bool {
		return a.hb != nil && a.hbResp.ErrorCode == kerr.GroupAuthorizationFailed.Code
	})
	if iFatal < 0 {
		t.Fatalf("the broker never answered GROUP_AUTHORIZATION_FAILED\n%s", dump())
	}
	for _, a := range as[iFatal+1:] {
		t.Errorf("sent after the fatal error: %s", a)
	}
	evs := m.log.All()
	iLost := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.Lost })
	if iLost < 0 || !slices.Equal(evs[iLost].Partitions[loopTopic], []int32{0, 1}) {
		t.Errorf("no Lost of t[0 1]\n%s", dump())
	}
	for _, e := range evs {
		if e.Kind == clients.Left || e.Kind == clients.SessionExpired {
			t.Errorf("a fatal member reported %s: %s", e.Kind, e.Why)
		}
	}
}

// Close while the rebalance-timeout leave is in flight (its answer held
// back by the broker): the member is out of the group already, so Close
// sends no second leave; it stops waiting for the first one.
func TestLoopCloseDuringTheLeaveSendsNoOther(t *testing.T) {
	t.Parallel()
	s := stuckBroker(t)
	release := make(chan struct{})
	s.mu.Lock()
	s.holdLeave, s.leaveHeld = release, make(chan struct{}, 1)
	held := s.leaveHeld
	s.mu.Unlock()
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	m := startMember(t, s, false, RebalanceTimeout(1500*time.Millisecond), RetryBackoff(50*time.Millisecond, 200*time.Millisecond))
	dump := m.dumpWith(s)
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatalf("no leave heartbeat after the rebalance timeout\n%s", dump())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := m.Close(ctx)
	close(release)
	released = true
	if err != nil {
		t.Errorf("close: %v", err)
	}
	if leaves := sent(m, clients.OpLeave); leaves != 1 {
		t.Errorf("%d leave heartbeats sent, want the rebalance-timeout one only\n%s", leaves, dump())
	}
}

// While the commit before a revocation is in flight, Poll hands out no
// record of the partition being revoked (Java's
// markPendingRevocationToPauseFetching): the commit could not cover it.
// Records produced to t[1] and then to t[0] during the commit: Poll returns
// those of t[0], never those of t[1].
func TestLoopPollPausesWhatIsBeingRevoked(t *testing.T) {
	t.Parallel()
	s, m, dump := startAssigned(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	poll := func() []clients.Record {
		pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer pcancel()
		recs, _ := m.Poll(pctx)
		if ctx.Err() != nil {
			t.Fatalf("timed out\n%s", dump())
		}
		return recs
	}
	for !m.owns(0, 1)() || !m.consumedAll() {
		poll()
	}
	held, release := holdCommits(t, s)
	defer release()
	s.set(2, 0)
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatalf("no commit before the revocation of t[1]\n%s", dump())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, p := range []int32{1, 0} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: loopTopic, Partition: p, Value: []byte("during the commit")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for got := false; !got; {
		for _, r := range poll() {
			if r.Partition == 1 {
				t.Fatalf("Poll handed out t[1]@%d while the commit before its revocation was in flight\n%s", r.Offset, dump())
			}
			got = got || r.Offset == 10
		}
	}
	release()
	eventually(t, "the member owns only t[0]", m.owns(0), dump)
}

// TestCallsContract runs a member against kfake (franz-go's in-process
// cluster, which serves ConsumerGroupHeartbeat): join, own the topic's
// partitions, commit, close. Every Sent must get exactly one answer of the
// same call and op, after it, with one call per lane at a time; the joining
// heartbeat carries epoch 0 and the leave a negative epoch.
func TestCallsContract(t *testing.T) {
	c := clientstest.NewCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(3, "t"))
	defer c.Close()
	log := &eventLog{}
	mb, err := New("m1", "g", KgoOpts(kgo.SeedBrokers(c.ListenAddrs()...)), Topics("t"), WithHooks(log), AutoCommitInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := clientstest.Start(t, mb, time.Minute)
	defer cancel()
	for mb.Owned().Count() != 3 {
		pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		mb.Poll(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("the member never owned t's 3 partitions; events: %+v", log.All())
		}
	}
	if perrs, err := mb.Commit(ctx, map[string]map[int32]int64{"t": {0: 0, 1: 0, 2: 0}}); err != nil || len(perrs) > 0 {
		t.Fatalf("commit: %v %v", perrs, err)
	}
	if err := mb.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}

	events := log.All()
	for i, e := range events {
		if e.Kind == clients.Sent && e.Op == clients.OpLeave && e.MemberEpoch >= 0 {
			t.Errorf("event %d: leave sent with member epoch %d", i, e.MemberEpoch)
		}
	}
	answered := clientstest.CheckCalls(t, events, func(i int, sent, answer clients.Event) {
		if answer.Kind == clients.Joined && sent.MemberEpoch != 0 {
			t.Errorf("event %d: Joined answers a heartbeat sent with epoch %d, want 0", i, sent.MemberEpoch)
		}
	})
	for _, op := range []clients.Op{clients.OpHeartbeat, clients.OpCommit, clients.OpLeave} {
		if answered[op] == 0 {
			t.Errorf("no %s call answered", op)
		}
	}
}
