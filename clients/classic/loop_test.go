package classic

import (
	"context"
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

// These tests drive the member's join loop (heartbeat → onJoinPrepare →
// JoinGroup → SyncGroup) against kfake and look at the requests the broker
// received, in order, not only at the member's own events.

// wire records group requests in the order kfake received them, without
// answering them (kfake's coordinator does).
type wire struct {
	mu   sync.Mutex
	reqs []kmsg.Request
}

func watchWire(c *kfake.Cluster, keys ...kmsg.Key) *wire {
	w := &wire{}
	for _, k := range keys {
		c.ControlKey(k.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
			w.mu.Lock()
			w.reqs = append(w.reqs, req)
			w.mu.Unlock()
			return nil, nil, false // not handled: kfake answers, and the watcher stays
		})
	}
	return w
}

func (w *wire) all() []kmsg.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.reqs)
}

func (w *wire) String() string {
	var b strings.Builder
	for i, r := range w.all() {
		switch r := r.(type) {
		case *kmsg.JoinGroupRequest:
			fmt.Fprintf(&b, "  %d JoinGroup member %q\n", i, r.MemberID)
		case *kmsg.SyncGroupRequest:
			fmt.Fprintf(&b, "  %d SyncGroup member %q generation %d\n", i, r.MemberID, r.Generation)
		case *kmsg.OffsetCommitRequest:
			fmt.Fprintf(&b, "  %d OffsetCommit member %q generation %d %v\n", i, r.MemberID, r.Generation, clientstest.CommitOffsets(r))
		default:
			fmt.Fprintf(&b, "  %d %T\n", i, r)
		}
	}
	return b.String()
}

// ILLEGAL_GENERATION from SyncGroup keeps the member id (Java's
// resetGenerationOnResponseError with shouldResetMemberId false): the next
// JoinGroup names the same member, unlike UNKNOWN_MEMBER_ID.
func TestSyncGroupIllegalGenerationRejoinsWithSameID(t *testing.T) {
	c, a := startOwningAll(t)
	id := a.Generation().MemberID
	gen := a.Generation().ID
	w := watchWire(c, kmsg.JoinGroup, kmsg.SyncGroup)
	failOnce(c, kmsg.SyncGroup, func(r kmsg.Response) { r.(*kmsg.SyncGroupResponse).ErrorCode = kerr.IllegalGeneration.Code })
	failHeartbeat(c, kerr.RebalanceInProgress.Code) // make a rejoin
	waitFor(t, "a owns all 6 in a newer generation", func() bool {
		return owns(a, 0, 1, 2, 3, 4, 5)() && a.Generation().ID > gen+1
	}, a.rec)
	if got := a.Generation().MemberID; got != id {
		t.Errorf("member id changed from %s to %s after ILLEGAL_GENERATION from SyncGroup\n%s", id, got, w)
	}
	var joins []string
	for _, r := range w.all() {
		if j, ok := r.(*kmsg.JoinGroupRequest); ok {
			joins = append(joins, j.MemberID)
		}
	}
	// The watcher sits behind failOnce for SyncGroup, so the failed
	// SyncGroup is not in w; both JoinGroups (the one before it and the
	// one after) are, and both name the member.
	if len(joins) < 2 || slices.ContainsFunc(joins, func(m string) bool { return m != id }) {
		t.Errorf("JoinGroups named %q, want at least two, all %q\n%s", joins, id, w)
	}
}

// Before rejoining, a member with auto-commit commits what it handed out
// (ConsumerCoordinator.onJoinPrepare), so the OffsetCommit of its positions
// reaches the broker before its next JoinGroup, with the generation it
// consumed in.
func TestRejoinCommitsFirst(t *testing.T) {
	for _, proto := range []string{"eager", "cooperative"} {
		t.Run(proto, func(t *testing.T) {
			c := newFake(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			produceSix(t, c, 3)
			opts := []Opt{AutoCommit(true), AutoCommitInterval(time.Hour)} // no interval commit during the test
			if proto == "cooperative" {
				opts = append(opts, Assignors(assign.CooperativeSticky()))
			}
			a := start(t, c, "a", "g", opts...)
			waitFor(t, "a owns all 6", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
			for total := 0; total < 18; {
				pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
				got, _ := a.Poll(pctx)
				pcancel()
				total += len(got)
				if ctx.Err() != nil {
					t.Fatalf("consumed %d of 18 records before the deadline", total)
				}
			}
			gen := a.Generation()
			w := watchWire(c, kmsg.JoinGroup, kmsg.OffsetCommit)
			failHeartbeat(c, kerr.RebalanceInProgress.Code)
			waitFor(t, "a joined again", func() bool { return a.Generation().ID > gen.ID && a.Stable() }, a.rec)

			reqs := w.all()
			iJoin := slices.IndexFunc(reqs, func(r kmsg.Request) bool { _, ok := r.(*kmsg.JoinGroupRequest); return ok })
			iCommit := slices.IndexFunc(reqs, func(r kmsg.Request) bool { _, ok := r.(*kmsg.OffsetCommitRequest); return ok })
			if iCommit < 0 || iJoin < 0 || iCommit > iJoin {
				t.Fatalf("want the OffsetCommit before the JoinGroup; commit at %d, join at %d\n%s", iCommit, iJoin, w)
			}
			oc := reqs[iCommit].(*kmsg.OffsetCommitRequest)
			if oc.Generation != gen.ID || oc.MemberID != gen.MemberID {
				t.Errorf("commit before rejoining as generation %d member %q, want %d %q", oc.Generation, oc.MemberID, gen.ID, gen.MemberID)
			}
			for p, o := range clientstest.CommitOffsets(oc) {
				if o != 3 {
					t.Errorf("partition %d committed at %d before rejoining, want 3", p, o)
				}
			}
			if n := len(clientstest.CommitOffsets(oc)); n != 6 {
				t.Errorf("commit before rejoining covers %d partitions, want 6\n%s", n, w)
			}
		})
	}
}

// produceSix writes n records to each of the topic's six partitions.
func produceSix(t *testing.T, c *kfake.Cluster, n int) {
	t.Helper()
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := range int32(6) {
		for i := range n {
			recs = append(recs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// stableConsumer is a member of group g that owns all six partitions and has
// handed out every record (n per partition), with auto-commit on but no
// interval commit during the test.
func stableConsumer(t *testing.T, c *kfake.Cluster, n int, opts ...Opt) testMember {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produceSix(t, c, n)
	a := start(t, c, "a", "g", append([]Opt{AutoCommit(true), AutoCommitInterval(time.Hour)}, opts...)...)
	waitFor(t, "a owns all 6", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
	for total := 0; total < 6*n; {
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		got, _ := a.Poll(pctx)
		pcancel()
		total += len(got)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", total, 6*n)
		}
	}
	return a
}

// Close commits what was handed out, then leaves with LeaveGroup naming the
// member; a static member commits but sends no LeaveGroup (Java's
// maybeLeaveGroup: a static member's session outlives the process).
func TestCloseCommitsThenLeaves(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []Opt
		leaves bool
	}{
		{name: "dynamic", leaves: true},
		{name: "static", opts: []Opt{InstanceID("i1")}, leaves: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFake(t)
			a := stableConsumer(t, c, 2, tc.opts...)
			gen := a.Generation()
			w := watchWire(c, kmsg.OffsetCommit, kmsg.LeaveGroup)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := a.Close(ctx); err != nil {
				t.Fatalf("close: %v", err)
			}
			reqs := w.all()
			iCommit := slices.IndexFunc(reqs, func(r kmsg.Request) bool { _, ok := r.(*kmsg.OffsetCommitRequest); return ok })
			iLeave := slices.IndexFunc(reqs, func(r kmsg.Request) bool { _, ok := r.(*kmsg.LeaveGroupRequest); return ok })
			if iCommit < 0 {
				t.Fatalf("no OffsetCommit on close\n%s", w)
			}
			oc := reqs[iCommit].(*kmsg.OffsetCommitRequest)
			if got := clientstest.CommitOffsets(oc); len(got) != 6 || got[0] != 2 || got[5] != 2 || oc.Generation != gen.ID {
				t.Errorf("close committed %v at generation %d, want every partition at 2 in generation %d", got, oc.Generation, gen.ID)
			}
			switch {
			case tc.leaves && (iLeave < 0 || iLeave < iCommit):
				t.Fatalf("want the LeaveGroup after the commit; commit at %d, leave at %d\n%s", iCommit, iLeave, w)
			case tc.leaves:
				lg := reqs[iLeave].(*kmsg.LeaveGroupRequest)
				if len(lg.Members) != 1 || lg.Members[0].MemberID != gen.MemberID {
					t.Errorf("LeaveGroup names %+v, want member %s", lg.Members, gen.MemberID)
				}
			case iLeave >= 0:
				t.Errorf("a static member sent LeaveGroup on close\n%s", w)
			}
			if n := len(a.rec.Of(clients.Revoked)); n == 0 {
				t.Errorf("close revoked nothing\n%s", a.rec.dump())
			}
		})
	}
}

// Heartbeats go out at the configured interval, not sooner. Only the lower
// bound is checked, with a tenth of the interval to spare: the next heartbeat
// is due an interval after the member decided to send the previous one (as
// Java's Heartbeat.sentHeartbeat), so when that one took longer to leave the
// member than this one, their arrivals are a little less than an interval
// apart (699.99 ms for 700 ms was seen on a loaded machine). A member that
// does not wait sends them a retry backoff (100 ms) apart or less.
func TestHeartbeatInterval(t *testing.T) {
	c := newFake(t)
	const interval = 700 * time.Millisecond
	var mu sync.Mutex
	var at []time.Time
	a := start(t, c, "a", "g", HeartbeatInterval(interval))
	waitFor(t, "a owns all 6", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
	c.ControlKey(kmsg.Heartbeat.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		return nil, nil, false
	})
	waitFor(t, "four heartbeats", func() bool { mu.Lock(); defer mu.Unlock(); return len(at) >= 4 }, a.rec)
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < 4; i++ {
		if gap := at[i].Sub(at[i-1]); gap < interval-interval/10 {
			t.Errorf("heartbeat %d arrived %v after the previous one, sooner than the interval %v", i, gap, interval)
		}
	}
}

// A SyncGroup answer that arrives after a Heartbeat reset the generation is
// not applied (Java's CoordinatorResponseHandler.generationUnchanged: the
// SyncGroup future fails with ILLEGAL_GENERATION and the member rejoins at
// once): the partitions it names belong to a generation the member no longer
// holds, and the member must not turn stable in no generation. The SyncGroup is held in kfake until the Heartbeat sent meanwhile
// was answered ILLEGAL_GENERATION.
func TestSyncAnswerAfterResetIsNotApplied(t *testing.T) {
	c, a := startOwningAll(t)
	gen := a.Generation().ID
	held, release := make(chan int32, 1), make(chan struct{})
	c.ControlKey(kmsg.SyncGroup.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		held <- req.(*kmsg.SyncGroupRequest).Generation
		c.SleepControl(func() { <-release })
		return nil, nil, false // kfake answers with the assignment of the generation
	})
	failHeartbeat(c, kerr.RebalanceInProgress.Code) // a rejoin, whose SyncGroup is held
	var syncGen int32
	select {
	case syncGen = <-held:
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatalf("no SyncGroup after the rejoin\n%s", a.rec.dump())
	}
	failHeartbeat(c, kerr.IllegalGeneration.Code) // the next heartbeat, during the SyncGroup
	waitFor(t, "the heartbeat reset the generation", func() bool { return a.Generation().ID < 0 }, a.rec)
	close(release)
	waitFor(t, "a owns all 6 in a newer generation", func() bool {
		return owns(a, 0, 1, 2, 3, 4, 5)() && a.Generation().ID > syncGen
	}, a.rec)
	for _, e := range a.rec.Of(clients.Sent) {
		// Applied, the stale answer makes the member stable in no generation: it heartbeats as
		// generation -1 (Kafka answers ILLEGAL_GENERATION) instead of rejoining at once.
		if e.Op == clients.OpHeartbeat && e.Generation < 0 {
			t.Fatalf("a Heartbeat sent with generation %d: the SyncGroup answer was applied after the reset\n%s", e.Generation, a.rec.dump())
		}
	}
	for _, e := range a.rec.Of(clients.Assigned) {
		if e.Generation <= 0 || e.Generation == syncGen {
			t.Fatalf("partitions assigned in generation %d (the held SyncGroup was generation %d, the member started in %d): the answer was applied after the reset\n%s", e.Generation, syncGen, gen, a.rec.dump())
		}
	}
}

// A member closed while, as the leader, it computes the assignment (its
// Metadata request held in kfake) still sends LeaveGroup with its member
// id, so the group rebalances at once. Cutting the leader's assignment
// short used to reset it to UNJOINED first, and Close then sent nothing:
// the followers' SyncGroups waited for the leader's session to expire
// (seen in a migration run: 6 s with the group stopped).
func TestCloseWhileLeaderAssignsLeaves(t *testing.T) {
	c, a := startOwningAll(t)
	gen := a.Generation()
	var mu sync.Mutex
	holding := false
	release := make(chan struct{})
	c.ControlKey(kmsg.Metadata.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.MetadataRequest)
		if len(r.Topics) != 1 || r.Topics[0].Topic == nil || *r.Topics[0].Topic != topic {
			return nil, nil, false
		}
		mu.Lock()
		holding = true
		mu.Unlock()
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	failHeartbeat(c, kerr.RebalanceInProgress.Code)
	waitFor(t, "a leads a new generation and asks for the metadata of its assignment", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return holding && a.rec.has(clients.Joined, "")
	}, a.rec)
	joined := a.Generation()
	if joined.ID <= gen.ID {
		t.Fatalf("generation %d after the rejoin, want past %d", joined.ID, gen.ID)
	}
	w := watchWire(c, kmsg.LeaveGroup)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = a.Close(ctx) // the commit of a member mid-rebalance may fail; the leave is what counts
	reqs := w.all()
	i := slices.IndexFunc(reqs, func(r kmsg.Request) bool { _, ok := r.(*kmsg.LeaveGroupRequest); return ok })
	if i < 0 {
		t.Fatalf("no LeaveGroup when closed during its assignment as leader of generation %d\n%s", joined.ID, a.rec.dump())
	}
	if lg := reqs[i].(*kmsg.LeaveGroupRequest); len(lg.Members) != 1 || lg.Members[0].MemberID != joined.MemberID {
		t.Errorf("LeaveGroup names %+v, want member %s", lg.Members, joined.MemberID)
	}
}

// The rejoin tests script the order of events against kfake: a rebalance
// is started by answering one heartbeat REBALANCE_IN_PROGRESS, and the
// SyncGroup of the rejoin is answered with the error under test. They hold
// the steps Java's ConsumerCoordinator takes around a rejoin, each of which
// a deliberate bug in tools/mutate/mutants/classic.json removes.

// pollAll polls m until it has handed out want records.
func pollAll(t *testing.T, m testMember, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for got := 0; got < want; {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		recs, _ := m.Poll(pctx) // transient fetch errors: poll again
		pcancel()
		got += len(recs)
		if ctx.Err() != nil {
			t.Fatalf("handed out %d of %d records\n%s", got, want, m.rec.dump())
		}
	}
}

// ConsumerCoordinator.onJoinPrepare: with auto-commit, an EAGER member
// commits what it handed out before it revokes its partitions and sends
// JoinGroup, so the next owner starts after the records this member
// consumed. The auto-commit interval (an hour) never elapses in the test:
// the only commit before Close is the one the rejoin makes.
func TestRejoinCommitsBeforeRevoking(t *testing.T) {
	c := newFake(t)
	produceSix(t, c, 3)
	a := start(t, c, "a", "g", AutoCommit(true), AutoCommitInterval(time.Hour))
	waitFor(t, "a owns all 6", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
	pollAll(t, a, 18)
	gen := a.Generation()
	failHeartbeat(c, kerr.RebalanceInProgress.Code)
	waitFor(t, "a rejoined and owns all 6 in a newer generation", func() bool {
		return owns(a, 0, 1, 2, 3, 4, 5)() && a.Generation().ID > gen.ID
	}, a.rec)

	evs := a.rec.All()
	iRevoked := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.Revoked })
	iJoin := slices.IndexFunc(evs, func(e clients.Event) bool {
		return e.Kind == clients.Sent && e.Op == clients.OpJoin && e.Generation == gen.ID
	})
	iCommitted := slices.IndexFunc(evs, func(e clients.Event) bool {
		return e.Kind == clients.Committed && e.Err == "" && len(e.PartitionErrs) == 0
	})
	if iRevoked < 0 || iJoin < 0 {
		t.Fatalf("want a revocation and a JoinGroup of generation %d\n%s", gen.ID, a.rec.dump())
	}
	if iCommitted < 0 || iCommitted > iRevoked || iCommitted > iJoin {
		t.Fatalf("no acknowledged commit before the revocation (event %d) and the JoinGroup (event %d): committed at %d\n%s", iRevoked, iJoin, iCommitted, a.rec.dump())
	}
	want := map[int32]int64{0: 3, 1: 3, 2: 3, 3: 3, 4: 3, 5: 3}
	if got := evs[iCommitted].Offsets[topic]; !maps32Equal(got, want) || evs[iCommitted].Generation != gen.ID {
		t.Errorf("commit before the rejoin: generation %d offsets %v, want generation %d offsets %v", evs[iCommitted].Generation, got, gen.ID, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := a.FetchOffsets(ctx, partitions(0, 1, 2, 3, 4, 5))
	if err != nil {
		t.Fatal(err)
	}
	if !maps32Equal(got[topic], want) {
		t.Errorf("committed offsets after the rejoin = %v, want %v", got[topic], want)
	}
}

func maps32Equal(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// AbstractCoordinator.SyncGroupResponseHandler: ILLEGAL_GENERATION resets
// the generation but keeps the member id ("the member ID might still be
// valid"), so the member rejoins as itself; the reset generation makes the
// next onJoinPrepare report what it owned as lost (a COOPERATIVE member
// keeps its partitions across a plain rejoin, so the loss shows only
// because of the reset).
func TestSyncGroupIllegalGenerationLosesAndKeepsMemberID(t *testing.T) {
	c, a := startOwningAll(t, Assignors(assign.CooperativeSticky()))
	id := a.Generation().MemberID
	failOnce(c, kmsg.SyncGroup, func(r kmsg.Response) { r.(*kmsg.SyncGroupResponse).ErrorCode = kerr.IllegalGeneration.Code })
	failHeartbeat(c, kerr.RebalanceInProgress.Code) // make a rejoin
	waitFor(t, "SyncGroup answered ILLEGAL_GENERATION", func() bool { return a.rec.has(clients.Error, "ILLEGAL_GENERATION") }, a.rec)
	waitFor(t, "a owns all 6 again after losing them", func() bool {
		return a.rec.has(clients.Lost, "") && owns(a, 0, 1, 2, 3, 4, 5)()
	}, a.rec)
	if got := a.Generation().MemberID; got != id {
		t.Errorf("member id changed from %s to %s: ILLEGAL_GENERATION from SyncGroup keeps it\n%s", id, got, a.rec.dump())
	}
	evs := a.rec.All()
	iErr := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Op == clients.OpSync && e.Err == "ILLEGAL_GENERATION" })
	for _, e := range evs[iErr:] {
		if e.Kind == clients.Sent && e.Op == clients.OpJoin && e.MemberID != id {
			t.Errorf("JoinGroup after ILLEGAL_GENERATION sent with member id %q, want %q\n%s", e.MemberID, id, a.rec.dump())
		}
	}
	if lost := a.rec.Of(clients.Lost); len(lost) != 1 || !slices.Equal(lost[0].Partitions[topic], []int32{0, 1, 2, 3, 4, 5}) {
		t.Errorf("lost = %v, want all 6 once\n%s", lost, a.rec.dump())
	}
}
