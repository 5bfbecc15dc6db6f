package classic

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
	"github.com/groupquake/groupquake/clients/assign"
	"github.com/groupquake/groupquake/clients/clientstest"
)

// The state-machine tests run against kfake (franz-go's in-process fake
// cluster), with requests intercepted where a scenario needs an error the
// fake would not produce on its own. Timers: session 6s (kfake's minimum
// unless lowered), heartbeat 200ms; waits are bounded polls, never sleeps.

const topic = "t"

func newFake(t *testing.T) *kfake.Cluster {
	t.Helper()
	c := clientstest.NewCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(6, topic), kfake.GroupMinSessionTimeout(time.Second))
	t.Cleanup(c.Close)
	return c
}

// recorder collects a member's events.
type recorder struct{ clientstest.Recorder }

// answered lists the events of kind k without an error: for Joined, the
// JoinGroups that were answered with a generation.
func (r *recorder) answered(k clients.Kind) []clients.Event {
	var out []clients.Event
	for _, e := range r.Of(k) {
		if e.Err == "" {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) has(k clients.Kind, errName string) bool {
	for _, e := range r.Of(k) {
		if errName == "" || e.Err == errName {
			return true
		}
	}
	return false
}

func (r *recorder) dump() string {
	var b strings.Builder
	for _, e := range r.All() {
		if e.Kind == clients.Heartbeat && e.Err == "" {
			continue
		}
		fmt.Fprintf(&b, "  %s gen=%d id=%s parts=%v err=%s why=%s\n", e.Kind, e.Generation, e.MemberID, e.Partitions, e.Err, e.Why)
	}
	return b.String()
}

// checkCalls holds every scenario to the clients contract on calls
// (clientstest.CheckCalls), and prints the events when it fails.
func checkCalls(t *testing.T, rec *recorder) {
	t.Helper()
	if clientstest.CheckCalls(t, rec.All(), nil); t.Failed() {
		t.Logf("events:\n%s", rec.dump())
	}
}

type testMember struct {
	*Member
	rec *recorder
}

func start(t *testing.T, c *kfake.Cluster, name, group string, opts ...Opt) testMember {
	t.Helper()
	rec := &recorder{}
	base := []Opt{
		KgoOpts(kgo.SeedBrokers(c.ListenAddrs()...)),
		WithHooks(rec),
		SessionTimeout(6 * time.Second),
		HeartbeatInterval(200 * time.Millisecond),
		RebalanceTimeout(10 * time.Second),
	}
	m, err := New(name, group, []string{topic}, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	_, cancel := clientstest.Start(t, m, 30*time.Second)
	defer cancel()
	t.Cleanup(func() {
		_ = m.Close(context.Background())
		checkCalls(t, rec)
	})
	return testMember{m, rec}
}

func waitFor(t *testing.T, what string, cond func() bool, dump ...*recorder) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, r := range dump {
				b.WriteString(r.dump())
			}
			t.Fatalf("waited 30s for %s\nevents:\n%s", what, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func owns(m testMember, ps ...int32) func() bool {
	return func() bool {
		o := m.Owned()
		return m.Stable() && slices.Equal(o[topic], ps) && o.Count() == len(ps)
	}
}

func partitions(ps ...int32) clients.Partitions { return clients.Partitions{topic: ps} }

// respond answers one intercepted request with errCode.
func respond(req kmsg.Request, set func(kmsg.Response)) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	set(resp)
	return resp
}

func TestEagerRangeTwoMembers(t *testing.T) {
	c, a := startOwningAll(t)
	if a.RebalanceProtocol() != assign.Eager {
		t.Fatalf("default assignors [range, cooperative-sticky] must rebalance EAGER, got %v", a.RebalanceProtocol())
	}
	b := start(t, c, "b", "g")
	// Range orders members by member id; which of the two gets [0,1,2]
	// depends on the generated ids, so check the split, then who.
	waitFor(t, "a and b split 3/3", func() bool {
		return a.Stable() && b.Stable() && a.Owned().Count() == 3 && b.Owned().Count() == 3 &&
			a.Generation().ID == b.Generation().ID
	}, a.rec, b.rec)
	first, second := a, b
	if b.Generation().MemberID < a.Generation().MemberID {
		first, second = b, a
	}
	if got := first.Owned()[topic]; !slices.Equal(got, []int32{0, 1, 2}) {
		t.Errorf("member sorting first owns %v, want [0 1 2]", got)
	}
	if got := second.Owned()[topic]; !slices.Equal(got, []int32{3, 4, 5}) {
		t.Errorf("member sorting second owns %v, want [3 4 5]", got)
	}
	// Eager: a revoked all 6 before rejoining.
	revoked := a.rec.Of(clients.Revoked)
	if len(revoked) == 0 || !slices.Equal(revoked[0].Partitions[topic], []int32{0, 1, 2, 3, 4, 5}) {
		t.Errorf("a's first revocation = %v, want all 6\n%s", revoked, a.rec.dump())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !b.rec.has(clients.Left, "") {
		t.Errorf("b sent no LeaveGroup\n%s", b.rec.dump())
	}
	waitFor(t, "a owns all 6 again", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
}

func TestCooperativeStickyKeepsPartitions(t *testing.T) {
	c := newFake(t)
	coop := Assignors(assign.CooperativeSticky())
	a := start(t, c, "a", "g", coop)
	if a.RebalanceProtocol() != assign.Cooperative {
		t.Fatalf("[cooperative-sticky] must rebalance COOPERATIVE, got %v", a.RebalanceProtocol())
	}
	waitFor(t, "a owns all 6", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
	b := start(t, c, "b", "g", coop)
	waitFor(t, "a [0 1 2], b [3 4 5]", func() bool {
		return owns(a, 0, 1, 2)() && owns(b, 3, 4, 5)()
	}, a.rec, b.rec)
	for _, e := range a.rec.Of(clients.Revoked) {
		for _, p := range e.Partitions[topic] {
			if p < 3 {
				t.Errorf("a revoked %d: cooperative-sticky must keep [0 1 2]\n%s", p, a.rec.dump())
			}
		}
	}
	if got := a.rec.Of(clients.Revoked); len(got) != 1 || !slices.Equal(got[0].Partitions[topic], []int32{3, 4, 5}) {
		t.Errorf("a's revocations = %v, want exactly one of [3 4 5]", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a owns all 6 again", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
}

func TestFindCoordinatorRetries(t *testing.T) {
	c := newFake(t)
	codes := []int16{kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code}
	var mu sync.Mutex
	c.ControlKey(kmsg.FindCoordinator.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		fr := req.(*kmsg.FindCoordinatorRequest)
		if len(codes) == 0 || len(fr.CoordinatorKeys) == 0 || fr.CoordinatorKeys[0] != "g" {
			return nil, nil, false
		}
		c.KeepControl()
		code := codes[0]
		codes = codes[1:]
		return respond(req, func(r kmsg.Response) {
			resp := r.(*kmsg.FindCoordinatorResponse)
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key, co.ErrorCode, co.NodeID = "g", code, -1
			resp.Coordinators = append(resp.Coordinators, co)
		}), nil, true
	})
	a := start(t, c, "a", "g", RetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	waitFor(t, "a owns all 6", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
	for _, name := range []string{"COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR"} {
		if !a.rec.has(clients.Error, name) {
			t.Errorf("no retried FindCoordinator with %s\n%s", name, a.rec.dump())
		}
	}
}

func TestMemberIDRequiredRoundTrip(t *testing.T) {
	_, a := startOwningAll(t)
	evs := a.rec.All()
	iReq := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Err == "MEMBER_ID_REQUIRED" })
	iJoin := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.Joined && e.Err == "" })
	if iReq < 0 || iJoin < iReq {
		t.Fatalf("want MEMBER_ID_REQUIRED before the first Joined\n%s", a.rec.dump())
	}
	if evs[iReq].MemberID == "" || evs[iReq].MemberID != evs[iJoin].MemberID {
		t.Errorf("joined as %q after MEMBER_ID_REQUIRED gave %q", evs[iJoin].MemberID, evs[iReq].MemberID)
	}
}

// startOwningAll starts member a of group g on a new fake cluster and
// waits until it owns all six partitions of the topic.
func startOwningAll(t *testing.T, opts ...Opt) (*kfake.Cluster, testMember) {
	t.Helper()
	c := newFake(t)
	a := start(t, c, "a", "g", opts...)
	waitFor(t, "a owns all 6", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
	return c, a
}

// failHeartbeat answers the next heartbeat of group g with code.
func failHeartbeat(c *kfake.Cluster, code int16) {
	c.ControlKey(kmsg.Heartbeat.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		return respond(req, func(r kmsg.Response) { r.(*kmsg.HeartbeatResponse).ErrorCode = code }), nil, true
	})
}

func TestHeartbeatIllegalGenerationLosesAndKeepsMemberID(t *testing.T) {
	c, a := startOwningAll(t)
	id := a.Generation().MemberID
	failHeartbeat(c, kerr.IllegalGeneration.Code)
	waitFor(t, "a lost its partitions", func() bool { return a.rec.has(clients.Lost, "") }, a.rec)
	waitFor(t, "a owns all 6 again", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
	if got := a.Generation().MemberID; got != id {
		t.Errorf("member id changed from %s to %s: ILLEGAL_GENERATION keeps it", id, got)
	}
	if n := len(a.rec.Of(clients.Revoked)); n != 0 {
		t.Errorf("a revoked %d times: a reset generation loses, it does not revoke\n%s", n, a.rec.dump())
	}
}

func TestHeartbeatUnknownMemberIDResetsMemberID(t *testing.T) {
	c, a := startOwningAll(t)
	id := a.Generation().MemberID
	failHeartbeat(c, kerr.UnknownMemberID.Code)
	waitFor(t, "a lost its partitions", func() bool { return a.rec.has(clients.Lost, "") }, a.rec)
	waitFor(t, "a owns all 6 under a new member id", func() bool {
		return owns(a, 0, 1, 2, 3, 4, 5)() && a.Generation().MemberID != id
	}, a.rec)
}

func TestHeartbeatFencedInstanceIDIsFatal(t *testing.T) {
	c, a := startOwningAll(t, InstanceID("i1"))
	failHeartbeat(c, kerr.FencedInstanceID.Code)
	waitFor(t, "a reports the fencing", func() bool { return a.rec.has(clients.Fenced, "FENCED_INSTANCE_ID") }, a.rec)
	// Owned waits for the member's lock, under which the fencing's whole
	// outcome (Fenced, then Lost) is reported: read first, Lost is there.
	if owned := a.Owned().Count(); !a.rec.has(clients.Lost, "") || owned != 0 {
		t.Errorf("a fenced member must lose its partitions\n%s", a.rec.dump())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := a.Poll(ctx)
	if !errors.Is(err, ErrFatal) || !errors.Is(err, kerr.FencedInstanceID) {
		t.Errorf("Poll after fencing = %v, want ErrFatal wrapping FENCED_INSTANCE_ID", err)
	}
	if _, err := a.Commit(ctx, map[string]map[int32]int64{topic: {0: 1}}); !errors.Is(err, kerr.FencedInstanceID) {
		t.Errorf("Commit after fencing = %v, want FENCED_INSTANCE_ID", err)
	}
}

func TestStaleGenerationCommitRejected(t *testing.T) {
	c, a := startOwningAll(t)
	old := a.Generation()
	b := start(t, c, "b", "g")
	waitFor(t, "a and b stable in a newer generation", func() bool {
		return a.Stable() && b.Stable() && a.Generation().ID > old.ID && a.Generation().ID == b.Generation().ID
	}, a.rec, b.rec)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stale := Generation{ID: old.ID, MemberID: a.Generation().MemberID}
	failed, err := a.CommitAs(ctx, stale, map[string]map[int32]int64{topic: {a.Owned()[topic][0]: 42}})
	if !errors.Is(err, kerr.IllegalGeneration) {
		t.Fatalf("stale commit = %v (%v), want ILLEGAL_GENERATION", err, failed)
	}
	if !a.Stable() {
		t.Errorf("a stale commit must not reset the current generation")
	}
	got, err := a.FetchOffsets(ctx, a.Owned())
	if err != nil {
		t.Fatal(err)
	}
	for p, o := range got[topic] {
		if o == 42 {
			t.Errorf("stale commit landed on partition %d", p)
		}
	}
	// The current generation commits.
	p := a.Owned()[topic][0]
	if _, err := a.Commit(ctx, map[string]map[int32]int64{topic: {p: 7}}); err != nil {
		t.Fatal(err)
	}
	got, err = a.FetchOffsets(ctx, partitions(p))
	if err != nil || got[topic][p] != 7 {
		t.Fatalf("committed offset = %v, %v; want 7", got, err)
	}
	// A plain commit (no generation) into a group with members is refused.
	if _, err := a.CommitAs(ctx, Generation{ID: -1}, map[string]map[int32]int64{topic: {p: 9}}); err == nil {
		t.Errorf("plain commit into a live group was accepted")
	}
}

func TestPlainCommitToEmptyGroup(t *testing.T) {
	c := newFake(t)
	m, err := New("admin", "solo", []string{topic}, KgoOpts(kgo.SeedBrokers(c.ListenAddrs()...)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := m.CommitAs(ctx, Generation{ID: -1}, map[string]map[int32]int64{topic: {1: 11}}); err != nil {
		t.Fatal(err)
	}
	got, err := m.FetchOffsets(ctx, partitions(1, 2))
	if err != nil || got[topic][1] != 11 || got[topic][2] != -1 {
		t.Fatalf("fetched %v, %v; want 1→11, 2→-1", got, err)
	}
}

func TestConsumeCommitAndResume(t *testing.T) {
	c := newFake(t)
	produceSix(t, c, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := start(t, c, "a", "g", AutoCommit(true), AutoCommitInterval(100*time.Millisecond))
	seen := map[int32]int{}
	for total := 0; total < 18; {
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		recs, err := a.Poll(pctx)
		pcancel()
		if err != nil {
			t.Logf("poll: %v", err) // transient fetch errors are the caller's to retry
		}
		for _, r := range recs {
			seen[r.Partition]++
			total++
		}
		if ctx.Err() != nil {
			t.Fatalf("consumed %v before the deadline", seen)
		}
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !a.rec.has(clients.Committed, "") {
		t.Fatalf("auto-commit never committed\n%s", a.rec.dump())
	}
	// A new member resumes at the committed offsets: nothing to read.
	b := start(t, c, "b", "g")
	waitFor(t, "b owns all 6", owns(b, 0, 1, 2, 3, 4, 5), b.rec)
	got, err := b.FetchOffsets(ctx, b.Owned())
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(6) {
		if got[topic][p] != 3 {
			t.Errorf("partition %d committed at %d, want 3", p, got[topic][p])
		}
	}
}

func TestMaxPollIntervalLeavesAndPollRejoins(t *testing.T) {
	c := newFake(t)
	a := start(t, c, "a", "g", MaxPollInterval(2*time.Second), RebalanceTimeout(5*time.Second))
	waitFor(t, "a leaves on poll expiry", func() bool { return a.rec.has(clients.SessionExpired, "") }, a.rec)
	waitFor(t, "a sent LeaveGroup", func() bool { return a.rec.has(clients.Left, "") }, a.rec)
	// On a slow machine the poll timer may expire before SyncGroup
	// answered; then there was nothing to lose.
	if a.Owned().Count() != 0 || (a.rec.has(clients.Assigned, "") && !a.rec.has(clients.Lost, "")) {
		t.Fatalf("a kept partitions after leaving\n%s", a.rec.dump())
	}
	joins := len(a.rec.answered(clients.Joined))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitFor(t, "a rejoins after Poll", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, _ = a.Poll(pctx)
		pcancel()
		return len(a.rec.answered(clients.Joined)) > joins && a.Owned().Count() == 6
	}, a.rec)
}

func TestOptionsCheckedOnce(t *testing.T) {
	for name, opts := range map[string][]Opt{
		"heartbeat above session": {SessionTimeout(time.Second), HeartbeatInterval(2 * time.Second)},
		"no common protocol":      {Assignors(assign.Range(), assign.RoundRobin(), assign.CooperativeSticky()), Assignors()},
		"empty instance id":       {InstanceID("")},
		"duplicate assignor":      {Assignors(assign.Range(), assign.Range())},
	} {
		if _, err := New("m", "g", []string{topic}, opts...); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := New("m", "", []string{topic}); err == nil {
		t.Errorf("empty group accepted")
	}
}

// failOnce answers the next request of key with code set by set.
// failCommitOnce answers the next OffsetCommit with code for t-0.
func failCommitOnce(c *kfake.Cluster, code int16) {
	failOnce(c, kmsg.OffsetCommit, func(r kmsg.Response) {
		resp := r.(*kmsg.OffsetCommitResponse)
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitResponseTopicPartition()
		rp.Partition, rp.ErrorCode = 0, code
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
	})
}

func failOnce(c *kfake.Cluster, key kmsg.Key, set func(kmsg.Response)) {
	c.ControlKey(key.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		return respond(req, set), nil, true
	})
}

func TestJoinGroupNotCoordinatorFindsItAgain(t *testing.T) {
	c := newFake(t)
	failOnce(c, kmsg.JoinGroup, func(r kmsg.Response) { r.(*kmsg.JoinGroupResponse).ErrorCode = kerr.NotCoordinator.Code })
	a := start(t, c, "a", "g")
	waitFor(t, "a owns all 6", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
	if n := len(a.rec.Of(clients.FoundCoordinator)); n != 2 || !a.rec.has(clients.Error, "NOT_COORDINATOR") {
		t.Errorf("want NOT_COORDINATOR then a second FindCoordinator, got %d lookups\n%s", n, a.rec.dump())
	}
}

func TestJoinGroupFatalErrors(t *testing.T) {
	for _, code := range []*kerr.Error{kerr.FencedInstanceID, kerr.InconsistentGroupProtocol, kerr.GroupMaxSizeReached, kerr.InvalidSessionTimeout} {
		t.Run(code.Message, func(t *testing.T) {
			c := newFake(t)
			failOnce(c, kmsg.JoinGroup, func(r kmsg.Response) { r.(*kmsg.JoinGroupResponse).ErrorCode = code.Code })
			a := start(t, c, "a", "g", InstanceID("i"))
			waitFor(t, "a stops", func() bool { return a.Err() != nil }, a.rec)
			if !errors.Is(a.Err(), code) || !errors.Is(a.Err(), ErrFatal) {
				t.Errorf("Err() = %v, want fatal %s", a.Err(), code.Message)
			}
			if n := len(a.rec.answered(clients.Joined)); n != 0 {
				t.Errorf("joined %d times after a fatal JoinGroup error", n)
			}
		})
	}
}

func TestJoinGroupRebalanceInProgressRetriesAtOnce(t *testing.T) {
	c := newFake(t)
	failOnce(c, kmsg.JoinGroup, func(r kmsg.Response) { r.(*kmsg.JoinGroupResponse).ErrorCode = kerr.RebalanceInProgress.Code })
	// A backoff far above the test's wait would show up as a timeout.
	a := start(t, c, "a", "g", RetryBackoff(time.Minute, time.Minute))
	waitFor(t, "a owns all 6", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
}

func TestSyncGroupRebalanceInProgressRejoins(t *testing.T) {
	c := newFake(t)
	failOnce(c, kmsg.SyncGroup, func(r kmsg.Response) { r.(*kmsg.SyncGroupResponse).ErrorCode = kerr.RebalanceInProgress.Code })
	a := start(t, c, "a", "g", RetryBackoff(time.Minute, time.Minute))
	waitFor(t, "a owns all 6", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
	if !a.rec.has(clients.Error, "REBALANCE_IN_PROGRESS") || len(a.rec.answered(clients.Joined)) < 2 {
		t.Errorf("want REBALANCE_IN_PROGRESS from SyncGroup and a second JoinGroup\n%s", a.rec.dump())
	}
	if a.rec.has(clients.Lost, "") {
		t.Errorf("REBALANCE_IN_PROGRESS keeps the generation: nothing is lost\n%s", a.rec.dump())
	}
}

func TestSyncGroupUnknownMemberIDRejoinsWithoutID(t *testing.T) {
	c, a := startOwningAll(t)
	id := a.Generation().MemberID
	failOnce(c, kmsg.SyncGroup, func(r kmsg.Response) { r.(*kmsg.SyncGroupResponse).ErrorCode = kerr.UnknownMemberID.Code })
	failHeartbeat(c, kerr.RebalanceInProgress.Code) // make a rejoin
	waitFor(t, "a owns all 6 under a new member id", func() bool {
		return owns(a, 0, 1, 2, 3, 4, 5)() && a.Generation().MemberID != id
	}, a.rec)
}

func TestCommitRetriesCoordinatorErrors(t *testing.T) {
	c, a := startOwningAll(t, RetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	failCommitOnce(c, kerr.NotCoordinator.Code)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.Commit(ctx, map[string]map[int32]int64{topic: {0: 5}}); err != nil {
		t.Fatalf("commit after NOT_COORDINATOR: %v", err)
	}
	commits := a.rec.Of(clients.Committed)
	if len(commits) != 2 || commits[0].Err != "NOT_COORDINATOR" || commits[1].Err != "" || commits[1].Offsets[topic][0] != 5 {
		t.Errorf("want a NOT_COORDINATOR answer then a landed commit, got %v", commits)
	}
}

func TestOwnCommitIllegalGenerationResetsGeneration(t *testing.T) {
	c, a := startOwningAll(t)
	id := a.Generation().MemberID
	failCommitOnce(c, kerr.IllegalGeneration.Code)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.Commit(ctx, map[string]map[int32]int64{topic: {0: 5}}); !errors.Is(err, kerr.IllegalGeneration) {
		t.Fatalf("commit = %v, want ILLEGAL_GENERATION", err)
	}
	waitFor(t, "a lost and rejoined with the same member id", func() bool {
		return a.rec.has(clients.Lost, "") && owns(a, 0, 1, 2, 3, 4, 5)() && a.Generation().MemberID == id
	}, a.rec)
}

// TestCoordinatorLookupThroughFlap scripts what a flapping link does to a
// member that owns partitions: its heartbeat is answered
// REBALANCE_IN_PROGRESS, the JoinGroup that follows finds its connection
// closed (EOF), and the next FindCoordinators find theirs closed too (the
// cuts), until one goes through. Java's ensureCoordinatorReady sends one
// FindCoordinator per attempt and retries it after retry.backoff.ms, so
// each failure is the member's to see and the rejoin comes within a few
// backoffs (here 10 to 50 ms). A lookup that kgo's Client.Request retried
// inside, after kgo's own backoff (250 ms doubling to 5 s), kept a member
// silent for 7.9 s through three up windows, past its 6 s session (seed
// 2918632487381593263 on 4.4.0, three nodes).
func TestCoordinatorLookupThroughFlap(t *testing.T) {
	const cuts = 6
	c, a := startOwningAll(t, RetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	var (
		mu             sync.Mutex
		joinCut, found time.Time
		failed         int
	)
	c.ControlKey(kmsg.FindCoordinator.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		if joinCut.IsZero() || !found.IsZero() {
			return nil, nil, false
		}
		c.KeepControl()
		if failed == cuts {
			found = time.Now()
			return nil, nil, false
		}
		failed++
		return nil, errors.New("link cut"), true
	})
	c.ControlKey(kmsg.JoinGroup.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		joinCut = time.Now()
		return nil, errors.New("link cut"), true
	})
	failHeartbeat(c, kerr.RebalanceInProgress.Code)
	waitFor(t, "a rejoins and owns all 6", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !found.IsZero() && len(a.rec.answered(clients.Joined)) >= 2 && owns(a, 0, 1, 2, 3, 4, 5)()
	}, a.rec)
	mu.Lock()
	t.Logf("found %v after the EOF", found.Sub(joinCut)) // a measure for the reader, not asserted
	mu.Unlock()
	// Each lookup is the member's own attempt: every cut is a failure it
	// sees (kgo's retries inside Client.Request would hide some).
	n := 0
	for _, e := range a.rec.Of(clients.Error) {
		if strings.HasPrefix(e.Why, "FindCoordinator failed") {
			n++
		}
	}
	if n < cuts {
		t.Errorf("the member saw %d failed FindCoordinators, want %d (one per attempt, as Java's ensureCoordinatorReady)\n%s", n, cuts, a.rec.dump())
	}
}
