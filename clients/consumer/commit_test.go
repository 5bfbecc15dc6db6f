package consumer

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
)

// scriptedOffsets is a broker's offset store for one group, reached through
// the member's sendCommit: each OffsetCommit arrives (arrivals) and waits
// for the test's answer to it, and is applied when it is answered ok, as a
// broker applies a request when it processes it. applied is the order in
// which the store took offsets of partition t-0.
type scriptedOffsets struct {
	arrivals chan *arrival
	applied  clientstest.Applied
}

// arrival is one OffsetCommit at the broker, waiting for its answer.
type arrival struct {
	req    *kmsg.OffsetCommitRequest
	answer chan scriptedAnswer
}

func (a *arrival) offset() int64 { return a.req.Topics[0].Partitions[0].Offset }

type scriptedAnswer struct {
	code int16 // 0: apply and acknowledge
	err  error // no answer at all
}

func newScriptedOffsets() *scriptedOffsets {
	return &scriptedOffsets{arrivals: make(chan *arrival, 16)}
}

// background runs f in a goroutine; the channel it returns is closed when
// f returns.
func background(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}

func (s *scriptedOffsets) send(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	ar := &arrival{req: req, answer: make(chan scriptedAnswer, 1)}
	s.arrivals <- ar
	var a scriptedAnswer
	select {
	case a = <-ar.answer:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if a.err != nil {
		return nil, a.err
	}
	return clientstest.CommitAnswer(req, a.code, s.applied.Apply), nil
}

// commitMember is a member that owns t-0 at epoch 5 in a stable group and
// whose commits go to the scripted store; it never contacts a broker.
func commitMember(t *testing.T, s *scriptedOffsets, rec clients.Hooks) *Member {
	t.Helper()
	mb, err := New("m1", "g", KgoOpts(kgo.SeedBrokers("127.0.0.1:1")), Topics("t"), WithHooks(rec), RetryBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mb.cl.Close)
	mb.sendCommit = s.send
	mb.mu.Lock()
	mb.started = true
	mb.m.state, mb.m.epoch, mb.m.joins = stateStable, 5, 1
	mb.owned = clients.Partitions{"t": {0}}
	mb.positions = map[string]map[int32]int64{"t": {0: 0}}
	mb.mu.Unlock()
	return mb
}

// acknowledged lists the offsets of t-0 in the order the member reported
// them acknowledged.
func acknowledged(evs []clients.Event) []int64 {
	var out []int64
	for _, e := range evs {
		if e.Kind == clients.Committed && len(e.PartitionErrs) == 0 {
			if o, ok := e.Offsets["t"][0]; ok {
				out = append(out, o)
			}
		}
	}
	return out
}

func nonDecreasing(xs []int64) bool {
	for i := 1; i < len(xs); i++ {
		if xs[i] < xs[i-1] {
			return false
		}
	}
	return true
}

type eventLog struct{ clientstest.Recorder }

// watchLane returns a channel that gets a value each time one of mb's
// commits waits for its lane.
func watchLane(mb *Member) chan struct{} {
	laneBusy := make(chan struct{}, 1)
	mb.laneWait = func() { laneBusy <- struct{}{} }
	return laneBusy
}

// TestOwnCommitInFlightIsNotOvertaken scripts the broker-faults run on
// Kafka 4.4.0 (seed 1974163557206219369): the member's auto-commit of 61 is
// sent and gets no answer (kgo's Client.Request is still resending it to a
// paused coordinator); the application commits 62. The broker must not
// apply 61 after 62. The member must hold the application's commit until
// the auto-commit is resolved (the commit lane); without the lane, 62 is
// sent at once, acknowledged, and 61 lands after it.
func TestOwnCommitInFlightIsNotOvertaken(t *testing.T) {
	s := newScriptedOffsets()
	log := &eventLog{}
	mb := commitMember(t, s, log)
	laneBusy := watchLane(mb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	autoDone := background(func() {
		mb.commit(ctx, map[string]map[int32]int64{"t": {0: 61}}, 0, "auto-commit interval elapsed", noRetry, false)
	})
	a := <-s.arrivals // commit A (61) is sent; the test does not answer it yet
	if a.offset() != 61 {
		t.Fatalf("first commit sent offset %d, want 61", a.offset())
	}

	appDone := clientstest.CommitAsync(ctx, mb, map[string]map[int32]int64{"t": {0: 62}})
	select {
	case b := <-s.arrivals:
		// The application's commit went out while A was unresolved: the
		// broker answers it first, then A's resend lands.
		b.answer <- scriptedAnswer{}
		if err := (<-appDone).Err; err != nil {
			t.Fatalf("commit of 62: %v", err)
		}
		a.answer <- scriptedAnswer{}
		<-autoDone
		t.Fatalf("commit of %d was sent while the commit of 61 had no answer; the broker applied %v and the member acknowledged %v",
			b.offset(), s.applied.Offsets(), acknowledged(log.All()))
	case <-laneBusy:
	}
	a.answer <- scriptedAnswer{} // A's answer (kgo's resend acknowledged)
	<-autoDone
	b := <-s.arrivals
	if b.offset() != 62 {
		t.Fatalf("second commit sent offset %d, want 62", b.offset())
	}
	b.answer <- scriptedAnswer{}
	if err := (<-appDone).Err; err != nil {
		t.Fatalf("commit of 62: %v", err)
	}
	if got := s.applied.Offsets(); fmt.Sprint(got) != "[61 62]" {
		t.Fatalf("broker applied %v, want [61 62]", got)
	}
	if got := acknowledged(log.All()); !nonDecreasing(got) {
		t.Fatalf("member acknowledged %v: an older commit after a newer one", got)
	}
}

// TestStaleRetryOfAnOlderOffsetIsNotSent scripts the other way an older
// commit can overtake: the application's commit of 61 is answered
// STALE_MEMBER_EPOCH and waits (outside the lane, it must not block the
// heartbeat goroutine) for the heartbeat to bring a newer epoch; meanwhile
// the member's auto-commit of 62 is sent and acknowledged. When the new
// epoch comes, the retry of 61 must not be sent: it would move the
// committed offset back.
func TestStaleRetryOfAnOlderOffsetIsNotSent(t *testing.T) {
	s := newScriptedOffsets()
	log := &eventLog{}
	mb := commitMember(t, s, log)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	appDone := clientstest.CommitAsync(ctx, mb, map[string]map[int32]int64{"t": {0: 61}})
	a := <-s.arrivals
	if a.offset() != 61 {
		t.Fatalf("first commit sent offset %d, want 61", a.offset())
	}
	a.answer <- scriptedAnswer{code: kerr.StaleMemberEpoch.Code}

	autoDone := background(func() {
		mb.commit(ctx, map[string]map[int32]int64{"t": {0: 62}}, 0, "auto-commit interval elapsed", noRetry, false)
	})
	b := <-s.arrivals
	if b.offset() != 62 {
		t.Fatalf("second commit sent offset %d, want 62", b.offset())
	}
	b.answer <- scriptedAnswer{}
	<-autoDone

	// The heartbeat brings epoch 6: the application's commit may retry.
	mb.mu.Lock()
	mb.m.epoch = 6
	mb.mu.Unlock()
	select {
	case r := <-appDone:
		if r.Err != nil {
			t.Fatalf("commit of 61: %v", r.Err)
		}
		if got := r.Failed["t"][0]; got != Superseded {
			t.Fatalf("commit of 61 returned %q for t-0, want %s", got, Superseded)
		}
	case c := <-s.arrivals:
		c.answer <- scriptedAnswer{}
		<-appDone
		t.Fatalf("the STALE_MEMBER_EPOCH retry sent offset %d after 62 was acknowledged; the broker applied %v", c.offset(), s.applied.Offsets())
	}
	if got := s.applied.Offsets(); fmt.Sprint(got) != "[62]" {
		t.Fatalf("broker applied %v, want [62]", got)
	}
}

// TestNewAssignmentResetsTheHighWaterMark: the mark is per assignment. A
// partition lost and assigned again starts from the committed offset, which
// may be below what the member sent before; that commit must go out.
func TestNewAssignmentResetsTheHighWaterMark(t *testing.T) {
	s := newScriptedOffsets()
	mb := commitMember(t, s, &eventLog{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { (<-s.arrivals).answer <- scriptedAnswer{code: kerr.FencedMemberEpoch.Code} }()
	mb.commit(ctx, map[string]map[int32]int64{"t": {0: 90}}, 0, "auto-commit", noRetry, false)
	mb.lockOwnership()
	mb.loseOwnedLocked("fenced", 5)
	mb.owned = clients.Partitions{"t": {0}}
	mb.unlockOwnership()
	sent := make(chan int64, 1)
	go func() {
		a := <-s.arrivals
		sent <- a.offset()
		a.answer <- scriptedAnswer{}
	}()
	perrs, err := mb.Commit(ctx, map[string]map[int32]int64{"t": {0: 40}})
	if err != nil || len(perrs) > 0 {
		t.Fatalf("commit of 40 in the new assignment: %v %v", perrs, err)
	}
	if o := <-sent; o != 40 {
		t.Fatalf("sent offset %d, want 40", o)
	}
}

// TestCommitWaitingForTheLaneSendsNoRevokedPartition scripts the migration
// run on the embedded Kafka 4.1.2 (seed 13, bidirectional, from classic)
// that FencedCommitsRejected failed: m3 owned t-0 and t-1 at epoch 5; its
// reconciliation's commit before revoking t-1 was in flight (the lane
// busy) when the workload's commit of t-0 and t-1 passed Commit's ownership
// check and waited for the lane; the reconciliation revoked t-1 and the
// heartbeat acknowledged it with epoch 7; then the workload's commit went
// out with epoch 7 and t-1 in it, and Kafka, which checks only the member's
// epoch, accepted it over t-1's new owner. The commit must carry only what
// the member still owns when it is sent (t-0 at epoch 7), and report t-1
// NOT_OWNED. The same holds when t-1 was given back to the member before
// the commit went out: what was consumed before the revocation is not the
// new assignment's.
func TestCommitWaitingForTheLaneSendsNoRevokedPartition(t *testing.T) {
	for _, back := range []bool{false, true} {
		name := "revoked"
		if back {
			name = "revoked-and-given-back"
		}
		t.Run(name, func(t *testing.T) {
			s := newScriptedOffsets()
			log := &eventLog{}
			mb := commitMember(t, s, log)
			mb.mu.Lock()
			mb.owned = clients.Partitions{"t": {0, 1}}
			mb.positions = map[string]map[int32]int64{"t": {0: 10, 1: 10}}
			mb.mu.Unlock()
			laneBusy := watchLane(mb)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			// The reconciliation's commit before revoking t-1, at epoch 5.
			before := background(func() {
				offs, asOf := mb.consumed()
				mb.commit(ctx, offs, asOf, "auto-commit before reconciling to epoch 7 (revoking t[1])", retryIfNewer, false)
			})
			a := <-s.arrivals
			if a.req.Generation != 5 {
				t.Fatalf("commit before the revocation sent epoch %d, want 5", a.req.Generation)
			}
			// The workload's commit passes Commit's ownership check and
			// waits for the lane.
			appDone := clientstest.CommitAsync(ctx, mb, map[string]map[int32]int64{"t": {0: 12, 1: 12}})
			<-laneBusy
			// While it waits, the reconciliation revokes t-1 and the
			// heartbeat brings epoch 7 (and, in the second case, a later
			// assignment gives t-1 back).
			mb.mu.Lock()
			mb.owned = clients.Partitions{"t": {0}}
			delete(mb.positions["t"], 1)
			delete(mb.committed["t"], 1)
			delete(mb.sentHigh["t"], 1)
			mb.m.epoch = 7
			if back {
				mb.ownSeq++
				mb.takeLocked("t", 1, mb.ownSeq)
				slices.Sort(mb.owned["t"])
			}
			mb.mu.Unlock()
			a.answer <- scriptedAnswer{}
			<-before

			b := <-s.arrivals
			b.answer <- scriptedAnswer{}
			r := <-appDone
			if r.Err != nil {
				t.Fatalf("workload commit: %v", r.Err)
			}
			var sent []string
			for _, rt := range b.req.Topics {
				for _, rp := range rt.Partitions {
					sent = append(sent, fmt.Sprintf("%s-%d@%d", rt.Topic, rp.Partition, rp.Offset))
				}
			}
			if b.req.Generation != 7 || fmt.Sprint(sent) != "[t-0@12]" {
				t.Fatalf("workload commit sent %v at epoch %d, want [t-0@12] at epoch 7: t-1 was revoked while the commit waited for the lane", sent, b.req.Generation)
			}
			if got := r.Failed["t"][1]; got != NotOwned {
				t.Fatalf("workload commit reported %q for t-1, want %s", got, NotOwned)
			}
			if _, ok := r.Failed["t"][0]; ok {
				t.Fatalf("workload commit reported %q for t-0, want it acknowledged", r.Failed["t"][0])
			}
		})
	}
}

// TestStaleCommitIsNotRetriedInANewMembership: the application's commit is
// answered STALE_MEMBER_EPOCH and waits for a newer epoch; meanwhile the
// member is fenced and rejoins (a new membership) and is given the
// partition again. The offset was consumed under the old membership, so it
// is not retried under the new one: the commit returns STALE_MEMBER_EPOCH.
func TestStaleCommitIsNotRetriedInANewMembership(t *testing.T) {
	s := newScriptedOffsets()
	mb := commitMember(t, s, &eventLog{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	done := clientstest.CommitAsync(ctx, mb, map[string]map[int32]int64{"t": {0: 61}})
	a := <-s.arrivals
	if a.req.Generation != 5 {
		t.Fatalf("commit sent with epoch %d, want 5", a.req.Generation)
	}
	// The fence and the rejoin happen before the answer is read: the
	// member holds t-0 again, at epoch 7 of its second membership.
	mb.mu.Lock()
	mb.m.epoch, mb.m.joins = 7, 2
	mb.mu.Unlock()
	a.answer <- scriptedAnswer{code: kerr.StaleMemberEpoch.Code}
	select {
	case r := <-done:
		if r.Err != nil {
			t.Fatalf("commit: %v", r.Err)
		}
		if got := r.Failed["t"][0]; got != kerr.StaleMemberEpoch.Message {
			t.Fatalf("commit returned %q for t-0, want STALE_MEMBER_EPOCH", got)
		}
	case b := <-s.arrivals:
		b.answer <- scriptedAnswer{}
		<-done
		t.Fatalf("the commit of 61 was retried with epoch %d in the new membership", b.req.Generation)
	}
}
