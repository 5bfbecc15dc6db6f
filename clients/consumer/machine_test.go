package consumer

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

var (
	idA = topicID{1}
	idB = topicID{2}
)

func testMachine(t *testing.T, mut ...func(*machineConfig)) *machine {
	t.Helper()
	cfg := machineConfig{group: "g", memberID: "m1", topics: []string{"a", "b"}, assignor: "uniform", rack: "r1", rebalanceTimeoutMs: 30000}
	for _, f := range mut {
		f(&cfg)
	}
	m := newMachine(cfg)
	m.names[idA] = "a"
	m.names[idB] = "b"
	m.join("test")
	return m
}

// ok is a successful heartbeat answer; assigned nil means no Assignment.
func ok(epoch int32, assigned map[topicID][]int32) *kmsg.ConsumerGroupHeartbeatResponse {
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.MemberEpoch = epoch
	r.HeartbeatIntervalMillis = 500
	if assigned != nil {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, id := range sortedIDs(assigned) {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID = id
			t.Partitions = assigned[id]
			a.Topics = append(a.Topics, t)
		}
		r.Assignment = &a
	}
	return r
}

func failed(err *kerr.Error) *kmsg.ConsumerGroupHeartbeatResponse {
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.ErrorCode = err.Code
	r.MemberEpoch = -1
	return r
}

// owned drives the member's side of a plan: it is what the Member holds.
type harness struct {
	t     *testing.T
	m     *machine
	owned clients.Partitions
}

// eachFence runs test, in parallel subtests, with each error by which the
// broker fences a member: FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID.
func eachFence(t *testing.T, test func(t *testing.T, fence *kerr.Error)) {
	for _, fence := range []*kerr.Error{kerr.FencedMemberEpoch, kerr.UnknownMemberID} {
		t.Run(fence.Message, func(t *testing.T) {
			t.Parallel()
			test(t, fence)
		})
	}
}

// mustPlan is the machine's next plan; the test fails, saying what, when
// there is none.
func (h *harness) mustPlan(what string) plan {
	h.t.Helper()
	p, _, ok := h.m.nextPlan(h.owned)
	if !ok {
		h.t.Fatal(what)
	}
	return p
}

func newHarness(t *testing.T, mut ...func(*machineConfig)) *harness {
	return &harness{t: t, m: testMachine(t, mut...), owned: clients.Partitions{}}
}

// beat sends one heartbeat and answers it.
func (h *harness) beat(resp *kmsg.ConsumerGroupHeartbeatResponse) (*kmsg.ConsumerGroupHeartbeatRequest, outcome) {
	h.t.Helper()
	req, seq := h.m.request()
	o := h.m.onResponse(seq, resp)
	if o.loseAll != "" {
		h.owned = clients.Partitions{}
	}
	h.check()
	return req, o
}

// reconcile carries out the machine's plan as the Member would.
func (h *harness) reconcile() (plan, bool) {
	h.t.Helper()
	p, unresolved, ok := h.m.nextPlan(h.owned)
	if len(unresolved) > 0 || !ok {
		return p, false
	}
	for t, ps := range p.add {
		for _, x := range ps {
			if !slices.Contains(h.m.target.parts[h.m.cfg.idOf(t)], x) {
				h.t.Fatalf("plan adds %s[%d], which the broker did not assign (target %v)", t, x, h.m.target.parts)
			}
		}
	}
	h.owned = h.owned.Minus(p.revoke)
	for t, ps := range p.add {
		h.owned[t] = append(h.owned[t], ps...)
		slices.Sort(h.owned[t])
	}
	if !h.m.finish(p, true) {
		h.t.Fatalf("plan %d was aborted", p.seq)
	}
	h.check()
	return p, true
}

// check holds the invariant that the member never owns a partition outside
// the latest assignment and what it has not yet revoked.
func (h *harness) check() {
	h.t.Helper()
	cur := h.m.partitionsByName(h.m.current.parts)
	for t, ps := range h.owned {
		for _, x := range ps {
			if !slices.Contains(cur[t], x) && !slices.Contains(h.m.partitionsByName(h.m.target.parts)[t], x) {
				h.t.Fatalf("owns %s[%d] outside current %v and target %v", t, x, cur, h.m.target.parts)
			}
		}
	}
}

func (c machineConfig) idOf(name string) topicID {
	switch name {
	case "a":
		return idA
	case "b":
		return idB
	}
	return topicID{}
}

func topicsOf(req *kmsg.ConsumerGroupHeartbeatRequest) map[topicID][]int32 {
	if req.Topics == nil {
		return nil
	}
	out := map[topicID][]int32{}
	for _, t := range req.Topics {
		out[t.TopicID] = t.Partitions
	}
	return out
}

func TestJoinSendsEverythingThenOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *machineConfig) { c.instanceID = "i1" })
	req, o := h.beat(ok(1, map[topicID][]int32{idA: {0, 1, 2}}))
	if req.MemberEpoch != 0 || req.MemberID != "m1" || req.RebalanceTimeoutMillis != 30000 ||
		!slices.Equal(req.SubscribedTopicNames, []string{"a", "b"}) || req.ServerAssignor == nil || *req.ServerAssignor != "uniform" ||
		req.Topics == nil || len(req.Topics) != 0 || req.RackID == nil || req.InstanceID == nil {
		t.Fatalf("join heartbeat is not full: %+v", req)
	}
	if len(o.events) != 2 || o.events[0].Kind != clients.Joined || o.events[1].Kind != clients.Heartbeat || o.events[1].Partitions.Count() != 3 {
		t.Fatalf("join events: %+v", o.events)
	}
	if h.m.state != stateReconciling || h.m.epoch != 1 {
		t.Fatalf("after join answer: state %s epoch %d", h.m.state, h.m.epoch)
	}
	p, done := h.reconcile()
	if !done || p.add.Count() != 3 || p.revoke.Count() != 0 {
		t.Fatalf("first plan: %+v", p)
	}
	if !h.m.heartbeatNow() {
		t.Fatal("the acknowledgement must go out at once")
	}
	ack, _ := h.beat(ok(1, nil))
	if got := topicsOf(ack); !slices.Equal(got[idA], []int32{0, 1, 2}) {
		t.Fatalf("ack carries %v", got)
	}
	if ack.RebalanceTimeoutMillis != -1 || ack.SubscribedTopicNames != nil || ack.ServerAssignor != nil || ack.RackID != nil {
		t.Fatalf("ack resends unchanged fields: %+v", ack)
	}
	if ack.InstanceID == nil {
		t.Fatal("instance id goes out on every heartbeat")
	}
	if h.m.state != stateStable {
		t.Fatalf("after ack: %s", h.m.state)
	}
	keep, _ := h.beat(ok(1, nil))
	if keep.Topics != nil {
		t.Fatalf("steady heartbeat resends owned partitions: %v", keep.Topics)
	}
}

func TestRevokeThenAssignAgainstWhatIsOwned(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.beat(ok(1, map[topicID][]int32{idA: {0, 1, 2, 3, 4, 5}}))
	h.reconcile()
	h.beat(ok(1, nil))
	// B joins: A is told to give up 3,4,5 at the same epoch.
	_, o := h.beat(ok(1, map[topicID][]int32{idA: {0, 1, 2}}))
	if h.m.state != stateReconciling || len(o.events) != 1 {
		t.Fatalf("revocation answer: state %s events %+v", h.m.state, o.events)
	}
	p, _ := h.reconcile()
	if !slices.Equal(p.revoke["a"], []int32{3, 4, 5}) || p.add.Count() != 0 {
		t.Fatalf("plan %+v", p)
	}
	ack, _ := h.beat(ok(2, nil))
	if got := topicsOf(ack); !slices.Equal(got[idA], []int32{0, 1, 2}) || ack.MemberEpoch != 1 {
		t.Fatalf("ack %v at epoch %d", got, ack.MemberEpoch)
	}
	if h.m.epoch != 2 || h.m.state != stateStable {
		t.Fatalf("after ack: epoch %d state %s", h.m.epoch, h.m.state)
	}
	// The same assignment repeated changes nothing.
	_, o = h.beat(ok(2, map[topicID][]int32{idA: {0, 1, 2}}))
	if h.m.state != stateStable {
		t.Fatalf("repeated assignment: %s", h.m.state)
	}
	if _, _, ok := h.m.nextPlan(h.owned); ok {
		t.Fatal("repeated assignment made a plan")
	}
	_ = o
}

func TestLostAnswerMakesTheNextHeartbeatFull(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.beat(ok(3, map[topicID][]int32{idA: {0}}))
	h.reconcile()
	h.beat(ok(3, nil))
	req, seq := h.m.request()
	if req.Topics != nil {
		t.Fatal("steady heartbeat carried partitions")
	}
	o := h.m.onError(seq, errors.New("connection reset"))
	if !o.backoff || h.m.state != stateStable || h.m.epoch != 3 {
		t.Fatalf("after lost answer: %+v state %s epoch %d", o, h.m.state, h.m.epoch)
	}
	full, seq := h.m.request()
	if full.MemberEpoch != 3 || full.RebalanceTimeoutMillis != 30000 || full.SubscribedTopicNames == nil || full.Topics == nil || full.ServerAssignor == nil {
		t.Fatalf("retry after a lost answer is not full: %+v", full)
	}
	// The broker had moved the member to epoch 4 with a new partition in
	// the lost answer; the full request gets it again.
	h.m.onResponse(seq, ok(4, map[topicID][]int32{idA: {0, 1}}))
	p, done := h.reconcile()
	if !done || !slices.Equal(p.add["a"], []int32{1}) || h.m.epoch != 4 {
		t.Fatalf("plan after recovery %+v epoch %d", p, h.m.epoch)
	}
}

func TestLateAndRepeatedAnswersAreDropped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, seq1 := h.m.request()
	h.m.onError(seq1, errors.New("timeout"))
	_, seq2 := h.m.request()
	// The answer to the first join arrives late: dropped.
	if o := h.m.onResponse(seq1, ok(1, map[topicID][]int32{idA: {0, 1}})); len(o.events) != 0 || h.m.state != stateJoining {
		t.Fatalf("late answer acted on: %+v state %s", o, h.m.state)
	}
	h.m.onResponse(seq2, ok(2, map[topicID][]int32{idA: {0}}))
	if h.m.epoch != 2 {
		t.Fatalf("epoch %d", h.m.epoch)
	}
	// The same answer delivered twice: the second is dropped.
	if o := h.m.onResponse(seq2, ok(2, map[topicID][]int32{idA: {0, 1, 2}})); len(o.events) != 0 {
		t.Fatalf("repeated answer acted on: %+v", o)
	}
	p, _ := h.reconcile()
	if !slices.Equal(p.add["a"], []int32{0}) {
		t.Fatalf("plan %+v", p)
	}
}

func TestFencedDropsEverythingAndRejoinsWithTheSameID(t *testing.T) {
	t.Parallel()
	eachFence(t, func(t *testing.T, err *kerr.Error) {
		h := newHarness(t)
		h.beat(ok(5, map[topicID][]int32{idA: {0, 1}, idB: {0}}))
		h.reconcile()
		h.beat(ok(5, nil))
		_, o := h.beat(failed(err))
		if o.loseAll == "" || o.backoff || len(o.events) != 1 || o.events[0].Kind != clients.Fenced || o.events[0].Err != err.Message {
			t.Fatalf("fence outcome %+v", o)
		}
		if h.m.state != stateJoining || h.m.epoch != 0 || !h.m.current.none() {
			t.Fatalf("after fence: state %s epoch %d current %v", h.m.state, h.m.epoch, h.m.current)
		}
		rejoin, _ := h.beat(failed(err))
		if rejoin.MemberID != "m1" || rejoin.MemberEpoch != 0 || rejoin.Topics == nil || len(rejoin.Topics) != 0 || rejoin.SubscribedTopicNames == nil {
			t.Fatalf("rejoin %+v", rejoin)
		}
		// Kafka before 4.2 fences the epoch-0 rejoin of a known id
		// (KAFKA-19233): the member backs off instead of spinning.
		_, o = h.beat(failed(err))
		if !o.backoff {
			t.Fatal("a fenced rejoin does not back off")
		}
		_, o = h.beat(ok(7, map[topicID][]int32{idA: {1}}))
		if o.events[0].Kind != clients.Joined || h.m.epoch != 7 {
			t.Fatalf("rejoin answer %+v", o.events)
		}
	})
}

func TestFatalErrorsStopTheMember(t *testing.T) {
	t.Parallel()
	for _, err := range []*kerr.Error{kerr.UnreleasedInstanceID, kerr.UnsupportedAssignor, kerr.GroupMaxSizeReached, kerr.InvalidRequest, kerr.FencedInstanceID, kerr.GroupAuthorizationFailed, kerr.InvalidRegularExpression, kerr.UnsupportedVersion} {
		t.Run(err.Message, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.beat(ok(1, map[topicID][]int32{idA: {0}}))
			h.reconcile()
			_, o := h.beat(failed(err))
			if h.m.state != stateFatal || !h.m.skipHeartbeat() || !errors.Is(h.m.fatal, err) || o.loseAll == "" {
				t.Fatalf("state %s fatal %v outcome %+v", h.m.state, h.m.fatal, o)
			}
			if o.events[0].Kind != clients.Error || o.events[0].Err != err.Message {
				t.Fatalf("event %+v", o.events[0])
			}
			h.m.join("test")
			if h.m.state != stateFatal {
				t.Fatal("a fatal member rejoined")
			}
		})
	}
}

func TestRetriableErrorsKeepTheState(t *testing.T) {
	t.Parallel()
	for _, err := range []*kerr.Error{kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.TopicAuthorizationFailed} {
		t.Run(err.Message, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.beat(ok(2, map[topicID][]int32{idA: {0}}))
			h.reconcile()
			h.beat(ok(2, nil))
			_, o := h.beat(failed(err))
			if !o.backoff || o.loseAll != "" || h.m.state != stateStable || h.m.epoch != 2 {
				t.Fatalf("outcome %+v state %s epoch %d", o, h.m.state, h.m.epoch)
			}
			next, _ := h.m.request()
			if next.Topics == nil || next.SubscribedTopicNames == nil {
				t.Fatal("heartbeat after an error is not full")
			}
		})
	}
}

func TestPlanAbortedByAFence(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.beat(ok(1, map[topicID][]int32{idA: {0, 1}}))
	p := h.mustPlan("no plan")
	// While the member commits, a heartbeat is fenced.
	req, seq := h.m.request()
	if req.Topics != nil && len(req.Topics) != 0 {
		t.Fatalf("heartbeat during reconciliation acknowledged early: %v", req.Topics)
	}
	h.m.onResponse(seq, failed(kerr.FencedMemberEpoch))
	if h.m.valid(p) || h.m.finish(p, true) {
		t.Fatal("plan survived a fence")
	}
	if !h.m.current.none() {
		t.Fatalf("aborted plan became current: %v", h.m.current)
	}
}

func TestUnreleasedPartitionsArriveOnlyWhenAssigned(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// Joining member B: the broker gives nothing yet (A still owns).
	// Reconciling an empty assignment adds nothing, and is acknowledged.
	h.beat(ok(2, map[topicID][]int32{}))
	if p, _ := h.reconcile(); p.add.Count() != 0 || p.revoke.Count() != 0 {
		t.Fatalf("plan for an empty assignment: %+v", p)
	}
	if ack, _ := h.beat(ok(2, nil)); ack.Topics == nil || len(ack.Topics) != 0 {
		t.Fatalf("empty assignment acknowledged with %v", ack.Topics)
	}
	if h.m.state != stateStable {
		t.Fatalf("after acknowledging an empty assignment: %s", h.m.state)
	}
	if h.owned.Count() != 0 {
		t.Fatal("owns partitions not assigned")
	}
	// A acknowledged: the partitions come with the next heartbeat.
	h.beat(ok(2, map[topicID][]int32{idA: {3, 4, 5}}))
	p, _ := h.reconcile()
	if !slices.Equal(p.add["a"], []int32{3, 4, 5}) {
		t.Fatalf("plan %+v", p)
	}
}

func TestUnresolvedTopicIDsWait(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	idC := topicID{3}
	h.beat(ok(1, map[topicID][]int32{idA: {0}, idC: {0}}))
	_, unresolved, ok1 := h.m.nextPlan(h.owned)
	if ok1 || len(unresolved) != 1 || unresolved[0] != idC {
		t.Fatalf("plan with an unknown topic id: ok %v unresolved %v", ok1, unresolved)
	}
	h.m.names[idC] = "c"
	p, _, ok2 := h.m.nextPlan(h.owned)
	if !ok2 || p.add.Count() != 2 {
		t.Fatalf("plan once resolved %+v", p)
	}
}

func TestLeaveEpochs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		instance string
		want     int32
	}{{"", leaveEpoch}, {"i1", staticLeaveEpoch}} {
		h := newHarness(t, func(c *machineConfig) { c.instanceID = tc.instance })
		h.beat(ok(1, map[topicID][]int32{idA: {0}}))
		h.reconcile()
		if !h.m.leave(false) || !h.m.heartbeatNow() {
			t.Fatal("leave not due at once")
		}
		req, seq := h.m.request()
		if req.MemberEpoch != tc.want || h.m.state != stateUnsubscribed {
			t.Fatalf("instance %q: leave epoch %d state %s", tc.instance, req.MemberEpoch, h.m.state)
		}
		if o := h.m.onResponse(seq, ok(tc.want, nil)); !o.leaveDone {
			t.Fatalf("leave answer not recognised: %+v", o)
		}
	}
}

func TestPollTimeoutLeavesStaleUntilNextPoll(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.beat(ok(1, map[topicID][]int32{idA: {0}}))
	h.reconcile()
	h.m.leave(true)
	req, _ := h.m.request()
	if req.MemberEpoch != leaveEpoch || h.m.state != stateStale || !h.m.skipHeartbeat() {
		t.Fatalf("stale leave: epoch %d state %s", req.MemberEpoch, h.m.state)
	}
	if !h.m.rejoinStale() || h.m.state != stateJoining {
		t.Fatalf("poll after stale: %s", h.m.state)
	}
	rejoin, _ := h.m.request()
	if rejoin.MemberEpoch != 0 || rejoin.SubscribedTopicNames == nil {
		t.Fatalf("rejoin %+v", rejoin)
	}
}

func TestRegexJoin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *machineConfig) { c.topics, c.useRegex, c.regex = nil, true, "^a.*" })
	req, _ := h.beat(ok(1, map[topicID][]int32{idA: {0}}))
	if req.SubscribedTopicRegex == nil || *req.SubscribedTopicRegex != "^a.*" || req.SubscribedTopicNames == nil {
		t.Fatalf("regex join %+v", req)
	}
	h.reconcile()
	ack, _ := h.beat(ok(1, nil))
	if ack.SubscribedTopicRegex != nil {
		t.Fatal("unchanged regex resent")
	}
}

// The heartbeat interval is the broker's: an answer that names none (a
// leave's answer carries 0) keeps the last one named rather than making the
// member fall back to its default.
func TestAnswerWithoutIntervalKeepsTheLastOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.beat(ok(1, map[topicID][]int32{idA: {0}}))
	if h.m.interval != 500*time.Millisecond {
		t.Fatalf("interval %v after an answer naming 500ms", h.m.interval)
	}
	resp := ok(1, nil)
	resp.HeartbeatIntervalMillis = 0
	h.beat(resp)
	if h.m.interval != 500*time.Millisecond {
		t.Fatalf("interval %v after an answer naming none, want the last named 500ms", h.m.interval)
	}
}

// A plan that could not be carried out (the member's fetch of committed
// offsets failed) ends unfinished: nothing becomes current, the member stays
// RECONCILING and the next nextPlan hands out a new plan; the old one cannot
// be finished afterwards.
func TestUnfinishedPlanIsPlannedAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.beat(ok(1, map[topicID][]int32{idA: {0, 1}}))
	p1 := h.mustPlan("no plan for a new assignment")
	if h.m.finish(p1, false) {
		t.Fatal("a plan carried out only in part was finished")
	}
	if h.m.state != stateReconciling || !h.m.current.none() {
		t.Fatalf("after an unfinished plan: state %s current %v, want RECONCILING and nothing", h.m.state, h.m.current)
	}
	if h.m.valid(p1) || h.m.finish(p1, true) {
		t.Fatal("an unfinished plan was finished later")
	}
	if !h.m.current.none() {
		t.Fatalf("the unfinished plan became current: %v", h.m.current)
	}
	p2, _, ok2 := h.m.nextPlan(h.owned)
	if !ok2 || p2.seq == p1.seq || !slices.Equal(p2.add["a"], []int32{0, 1}) {
		t.Fatalf("plan after the unfinished one: %+v (ok %v)", p2, ok2)
	}
	if !h.m.finish(p2, true) || h.m.state != stateAcknowledging {
		t.Fatalf("the new plan did not finish: state %s", h.m.state)
	}
}

// Waiting for a topic's name is no plan: ok is false whether or not the
// part already known is what the member owns.
func TestWaitingForANameIsNoPlan(t *testing.T) {
	t.Parallel()
	idC := topicID{3}
	h := newHarness(t)
	h.beat(ok(1, map[topicID][]int32{idA: {0}}))
	h.reconcile()
	h.beat(ok(1, nil))
	h.beat(ok(2, map[topicID][]int32{idA: {0}, idC: {0}}))
	_, unresolved, ok1 := h.m.nextPlan(h.owned)
	if ok1 || len(unresolved) != 1 || unresolved[0] != idC {
		t.Fatalf("known part owned, c unknown: ok %v unresolved %v, want no plan and c", ok1, unresolved)
	}
	if h.m.state != stateReconciling {
		t.Fatalf("state %s while waiting for a name, want RECONCILING", h.m.state)
	}
}

// What the member reports says why: the error message the broker gave with
// a fatal error (Poll returns it), and whether an assignment came at a new
// epoch or the same one.
func TestEventsSayWhy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, o := h.beat(ok(3, map[topicID][]int32{idA: {0}}))
	h.reconcile()
	_, o = h.beat(ok(3, map[topicID][]int32{idA: {0, 1}}))
	if len(o.events) != 1 || !strings.Contains(o.events[0].Why, "member epoch 3 unchanged") || !strings.Contains(o.events[0].Why, "target assignment map[a:[0 1]]") {
		t.Fatalf("assignment at the same epoch reported as %+v", o.events)
	}
	_, o = h.beat(ok(4, nil))
	if len(o.events) != 1 || !strings.Contains(o.events[0].Why, "member epoch 3 → 4") || strings.Contains(o.events[0].Why, "target") {
		t.Fatalf("epoch bump without an assignment reported as %+v", o.events)
	}
	resp := failed(kerr.GroupAuthorizationFailed)
	resp.ErrorMessage = new("group g: not authorized")
	h.beat(resp)
	if h.m.fatal == nil || !strings.Contains(h.m.fatal.Error(), "group g: not authorized") || !errors.Is(h.m.fatal, kerr.GroupAuthorizationFailed) {
		t.Fatalf("fatal error %v, want the broker's message and GROUP_AUTHORIZATION_FAILED", h.m.fatal)
	}
}

// A topic listed with no partitions assigns nothing: the reported
// assignment names only topics with partitions.
func TestTopicWithoutPartitionsIsNotReported(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, o := h.beat(ok(1, map[topicID][]int32{idA: {0}, idB: {}}))
	if len(o.events) != 2 || o.events[1].Partitions.Count() != 1 {
		t.Fatalf("events %+v", o.events)
	}
	if _, listed := o.events[1].Partitions["b"]; listed {
		t.Fatalf("assignment reported as %v, want topic b left out", o.events[1].Partitions)
	}
	p, done := h.reconcile()
	if !done || !slices.Equal(p.add.Topics(), []string{"a"}) {
		t.Fatalf("plan %+v", p)
	}
}

// The owned partitions go out ordered by topic id, so that a heartbeat is
// the same bytes for the same state (not the order of a Go map).
func TestOwnedTopicsGoOutInIDOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	assigned := map[topicID][]int32{}
	for i := byte(1); i <= 8; i++ {
		id := topicID{i * 16, i}
		h.m.names[id] = fmt.Sprintf("t%d", i)
		assigned[id] = []int32{0}
	}
	h.beat(ok(1, assigned))
	p, _, planned := h.m.nextPlan(clients.Partitions{})
	if !planned || !h.m.finish(p, true) {
		t.Fatalf("no plan for the assignment: %+v", p)
	}
	req, _ := h.m.request()
	if len(req.Topics) != 8 {
		t.Fatalf("acknowledgement lists %d topics, want 8", len(req.Topics))
	}
	for i := 1; i < len(req.Topics); i++ {
		if bytes.Compare(req.Topics[i-1].TopicID[:], req.Topics[i].TopicID[:]) >= 0 {
			t.Fatalf("topic %d (%x) listed after %x: not in id order", i, req.Topics[i].TopicID, req.Topics[i-1].TopicID)
		}
	}
}

// TestAnswerWhileLeavingIsIgnored scripts a heartbeat answered after the
// member decided to leave: the answer was sent before the leave, so Java
// ignores it (AbstractMembershipManager.onHeartbeatSuccess returns at once
// in LEAVING) and the member neither takes its epoch nor reports it: its
// leave heartbeat still carries the leave epoch.
func TestAnswerWhileLeavingIsIgnored(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.beat(ok(1, map[topicID][]int32{idA: {0}}))
	h.reconcile()
	_, seq := h.m.request() // in flight when the member leaves
	if !h.m.leave(false) || h.m.state != stateLeaving {
		t.Fatalf("leave: state %s", h.m.state)
	}
	o := h.m.onResponse(seq, ok(2, map[topicID][]int32{idA: {0}, idB: {0}}))
	if h.m.epoch != leaveEpoch || len(o.events) != 0 || o.leaveDone || h.m.state != stateLeaving {
		t.Fatalf("answer while leaving: epoch %d (want the leave epoch %d), events %+v, leaveDone %v, state %s", h.m.epoch, leaveEpoch, o.events, o.leaveDone, h.m.state)
	}
	req, _ := h.m.request()
	if req.MemberEpoch != leaveEpoch || h.m.state != stateUnsubscribed {
		t.Fatalf("leave after the ignored answer: epoch %d state %s", req.MemberEpoch, h.m.state)
	}
}
