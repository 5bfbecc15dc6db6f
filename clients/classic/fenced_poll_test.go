package classic

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
)

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
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce := func(n int) {
		for range n {
			if err := p.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
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
