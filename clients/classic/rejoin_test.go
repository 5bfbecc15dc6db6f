package classic

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
	"github.com/groupquake/groupquake/clients/assign"
)

// The rejoin tests script the order of events against kfake: a rebalance
// is started by answering one heartbeat REBALANCE_IN_PROGRESS, and the
// SyncGroup of the rejoin is answered with the error under test. They hold
// the steps Java's ConsumerCoordinator takes around a rejoin, each of which
// a deliberate bug in tools/mutate/mutants/classic.json removes.

// produceEach writes n records to every partition of topic.
func produceEach(t *testing.T, addrs []string, n int) {
	t.Helper()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for p := range int32(6) {
		for i := range n {
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

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
	produceEach(t, c.ListenAddrs(), 3)
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
	c := newFake(t)
	a := start(t, c, "a", "g", Assignors(assign.CooperativeSticky()))
	waitFor(t, "a owns all 6", owns(a, 0, 1, 2, 3, 4, 5), a.rec)
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
