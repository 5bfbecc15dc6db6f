package classic

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
)

func TestWithBugUnknown(t *testing.T) {
	t.Parallel()
	_, err := New("m", "g", []string{topic}, KgoOpts(kgo.SeedBrokers("127.0.0.1:1")), WithBug("eats-records"))
	if err == nil || !strings.Contains(err.Error(), `unknown bug "eats-records"`) {
		t.Fatalf("New with an unknown bug: %v", err)
	}
}

// The fetching bugs, each beside the correct member on the same steps: a
// member of generation 3 owning t-0 hands out its records; then it gives
// t-0 up, by a revocation (the machine's eager revoke before a rejoin) or
// by a loss (an OffsetCommit answered UNKNOWN_MEMBER_ID resets the
// generation, and the rejoin's onJoinPrepare reports t-0 lost). The correct
// member reports the change and hands out nothing more; BugFetchAfterRevoke
// reports the revocation and goes on handing out t-0's records;
// BugIgnoreFence reports no loss and goes on handing them out too.
func TestFetchingBugsKeepHandingOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		bug  Bug
		lose bool // give t-0 up by a fence (else by a revocation)
		// what the member does after giving t-0 up
		reported   clients.Kind // the event it reports ("" none)
		handsOut   bool
		generation int32 // of the records handed out after
	}{
		{name: "correct-revoke", reported: clients.Revoked},
		{name: "correct-lose", lose: true, reported: clients.Lost},
		{name: "fetch-after-revoke", bug: BugFetchAfterRevoke, reported: clients.Revoked, handsOut: true, generation: 3},
		{name: "ignore-fence", bug: BugIgnoreFence, lose: true, handsOut: true, generation: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFake(t)
			produce := producerTo0(t, c)
			var m *Member
			poll := func(want int) []clients.Record {
				var got []clients.Record
				for range 10 {
					ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
					rs, _ := m.Poll(ctx)
					cancel()
					got = append(got, rs...)
					if want > 0 && len(got) >= want {
						break
					}
				}
				return got
			}
			rec := &recorder{}
			var opts []Opt
			if tc.bug != "" {
				opts = append(opts, WithBug(tc.bug))
			}
			m = stableInGeneration3(t, c, rec, opts...)
			m.step(func(s *machine) outcome {
				var o outcome
				s.assign(&o, clients.Partitions{topic: {0}}, "test")
				return o
			})
			m.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})

			produce(3)
			if got := poll(3); len(got) != 3 || got[0].Generation != 3 {
				t.Fatalf("owning t-0 in generation 3, Poll handed out %v, want 3 records of generation 3", got)
			}
			if tc.lose {
				if err := m.onCommitError(m.Generation(), kerr.UnknownMemberID); err != nil {
					t.Fatal(err)
				}
				m.step((*machine).joinPrepared)
			} else {
				m.step((*machine).joinPrepared) // EAGER: revoke everything
			}
			for _, k := range []clients.Kind{clients.Revoked, clients.Lost} {
				if reported := rec.has(k, ""); reported != (k == tc.reported) {
					t.Errorf("%s reported: %v, want %v\n%s", k, reported, k == tc.reported, rec.dump())
				}
			}
			produce(3)
			got := poll(3)
			switch {
			case !tc.handsOut && len(got) > 0:
				t.Fatalf("after giving t-0 up, Poll handed out %v", got)
			case tc.handsOut && (len(got) != 3 || got[0].Generation != tc.generation):
				t.Fatalf("with bug %s, Poll handed out %v after giving t-0 up, want the 3 new records of generation %d", tc.bug, got, tc.generation)
			}
		})
	}
}

// BugStaleCommit sends the application's commit with the first generation
// the member was given and reports the coordinator's ILLEGAL_GENERATION as
// success; the correct member sends its current generation and reports the
// error.
func TestBugStaleCommit(t *testing.T) {
	for _, bug := range []Bug{"", BugStaleCommit} {
		t.Run(string(bug)+"-", func(t *testing.T) {
			rec := &recorder{}
			opts := []Opt{KgoOpts(kgo.SeedBrokers("127.0.0.1:1")), WithHooks(rec), RetryBackoff(time.Millisecond, time.Millisecond)}
			if bug != "" {
				opts = append(opts, WithBug(bug))
			}
			mb, err := New("m1", "g", []string{topic}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mb.cancel(); mb.cl.Close() })
			var sentGen []int32
			mb.sendCommit = func(_ context.Context, req *kmsg.OffsetCommitRequest, sent func()) (*kmsg.OffsetCommitResponse, error) {
				sent()
				sentGen = append(sentGen, req.Generation)
				var code int16
				if req.Generation != 3 {
					code = kerr.IllegalGeneration.Code
				}
				return clientstest.CommitAnswer(req, code, nil), nil
			}
			// The member was given generation 1, then moved on to 3.
			mb.emit(clients.Event{Kind: clients.Synced, Generation: 1, MemberID: "m1-id", Partitions: clients.Partitions{topic: {0}}})
			mb.mu.Lock()
			mb.started = true
			mb.mach.st, mb.mach.gen = stable, Generation{ID: 3, MemberID: "m1-id"}
			mb.mach.owned = clients.Partitions{topic: {0}}
			mb.mu.Unlock()

			perr, err := mb.Commit(context.Background(), map[string]map[int32]int64{topic: {0: 7}})
			committed := rec.Of(clients.Committed)
			if len(committed) != 1 || len(sentGen) != 1 {
				t.Fatalf("sent %v, committed events %+v", sentGen, committed)
			}
			if bug == "" {
				if sentGen[0] != 3 || err != nil || len(perr) != 0 || committed[0].Err != "" {
					t.Fatalf("correct member: sent generation %v, returned %v %v, reported %+v", sentGen, perr, err, committed[0])
				}
				return
			}
			if sentGen[0] != 1 || err != nil || len(perr) != 0 || committed[0].Err != "" || !committed[0].App || committed[0].Offsets[topic][0] != 7 {
				t.Fatalf("stale-commit member: sent generation %v, returned %v %v, reported %+v; want generation 1 reported acknowledged", sentGen, perr, err, committed[0])
			}
			if !strings.Contains(committed[0].Why, "ILLEGAL_GENERATION") {
				t.Errorf("the acknowledged stale commit does not say what it ignored: %q", committed[0].Why)
			}
			checkCalls(t, rec)
		})
	}
}

// TestPollAfterAFenceHandsOutNothing scripts the order a chaos run on Kafka
// 4.4.0 saw (bite, the unbroken member of the ignore-fence plan): the member
// owns t-0 in generation 3 and has fetched records of it; an OffsetCommit
// answers UNKNOWN_MEMBER_ID, which resets the generation; the loss of t-0 is
// only reported when the member rejoins. A Poll in between must hand out no
// record: the member no longer holds a generation in which it owns
// anything (the Java consumer runs onPartitionsLost inside poll before it
// returns records). Without the rule Poll returned the records, at
// generation -1, and ConsumedOnlyOwned saw them consumed after "lost".
// stableInGeneration3 is member m1 of group g on the fake cluster c, not
// started but stable in generation 3 as member m1-id, reporting to rec;
// it owns nothing yet.
func stableInGeneration3(t *testing.T, c *kfake.Cluster, rec *recorder, opts ...Opt) *Member {
	t.Helper()
	m, err := New("m1", "g", []string{topic}, append([]Opt{KgoOpts(kgo.SeedBrokers(c.ListenAddrs()...)), WithHooks(rec)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.cancel(); m.cl.Close() })
	m.mu.Lock()
	m.started = true
	m.mach.st, m.mach.gen = stable, Generation{ID: 3, MemberID: "m1-id"}
	m.mu.Unlock()
	return m
}

func TestPollAfterAFenceHandsOutNothing(t *testing.T) {
	c := newFake(t)
	produce := producerTo0(t, c)
	rec := &recorder{}
	m := stableInGeneration3(t, c, rec)
	m.mu.Lock()
	m.mach.owned = clients.Partitions{topic: {0}}
	m.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	m.mu.Unlock()

	produce(3)
	var got []clients.Record
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < 3 && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		rs, _ := m.Poll(ctx)
		cancel()
		got = append(got, rs...)
	}
	if len(got) != 3 || got[0].Generation != 3 {
		t.Fatalf("in generation 3 Poll handed out %d records (%v), want 3 at generation 3", len(got), got)
	}

	// Every record says which Poll returned it; an ownership event made now
	// counts every Poll so far (the history places records the workload
	// writes after it by these counts).
	m.mu.Lock()
	polls := m.polls
	m.mu.Unlock()
	for _, r := range got {
		if r.Poll == 0 || r.Poll > polls {
			t.Fatalf("record @%d of Poll %d, want 1..%d", r.Offset, r.Poll, polls)
		}
	}
	m.step(func(*machine) outcome {
		return outcome{events: []clients.Event{{Kind: clients.Lost, Partitions: clients.Partitions{topic: {0}}}}}
	})
	if l, ok := rec.First(clients.Lost); !ok || l.AfterPoll == nil || *l.AfterPoll != polls {
		t.Fatalf("the loss after %d Polls reports %+v", polls, l.AfterPoll)
	}
	m.step(func(*machine) outcome {
		return outcome{events: []clients.Event{{Kind: clients.Assigned, Partitions: clients.Partitions{topic: {0}}}}}
	})
	m.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})

	// The fence: an OffsetCommit answered UNKNOWN_MEMBER_ID resets the generation.
	if err := m.onCommitError(m.Generation(), kerr.UnknownMemberID); err != nil {
		t.Fatal(err)
	}
	produce(3)
	// kgo has the new records buffered or fetches them now; none may go out.
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		rs, _ := m.Poll(ctx)
		cancel()
		if len(rs) > 0 {
			t.Fatalf("after the fence reset the generation, Poll handed out %d records of %v at generation %d", len(rs), m.Owned(), rs[0].Generation)
		}
	}
}

// producerTo0 is a producer to c that writes n records ("v") to partition 0
// of topic, closed when t ends.
func producerTo0(t *testing.T, c *kfake.Cluster) func(n int) {
	t.Helper()
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return func(n int) {
		for range n {
			if err := p.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
