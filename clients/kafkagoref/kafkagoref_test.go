package kafkagoref

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
)

// TestAssignedWithoutPoll: a generation kafka-go hands out is reported
// assigned at once, whether the application polls or not. The adapter
// first held the report until the next Poll, dating a stalled member's
// ownership later than the coordinator gave it.
func TestAssignedWithoutPoll(t *testing.T) {
	got, m := clientstest.StartOnFake(t, func(hooks clients.Hooks, seed kgo.Opt) (*Member, error) {
		return New("m1", "g", []string{"t"}, WithHooks(hooks), KgoOpts(seed), SessionTimeout(6*time.Second), HeartbeatInterval(200*time.Millisecond), RebalanceTimeout(10*time.Second))
	})
	deadline := time.Now().Add(time.Minute)
	for {
		if _, ok := got.First(clients.Assigned); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no assignment reported within a minute without a Poll")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a, _ := got.First(clients.Assigned)
	if a.Partitions.Count() != 3 || a.Generation < 1 || m.Owned().Count() != 3 {
		t.Errorf("Assigned = %+v, Owned = %v: want the 3 partitions at a generation", a, m.Owned())
	}
	if f, ok := got.First(clients.Fetched); !ok || f.Call != 0 {
		t.Errorf("the OffsetFetch of the generation's offsets was not reported as a fact: %+v", f)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range [][]Opt{{Balancers()}, {Balancers("sticky")}} {
		if _, err := New("m1", "g", []string{"t"}, o...); err == nil {
			t.Errorf("New with %v: no error", o)
		}
	}
}

// TestEndedGenerationHandsNothingOut scripts a stalled application: it
// stops polling, another member joins, and kafka-go ends the generation
// (its heartbeat is answered REBALANCE_IN_PROGRESS) while records of it
// are buffered. The first Poll after the stall must report the revocation
// and hand out none of those records. The adapter first held the
// revocation with a mutex that a Poll finding records at once took back
// before the parked revocation woke, and handed out the ended
// generation's records (embedded seed 223 of churn: 37 records consumed
// 12 s after the generation ended).
func TestEndedGenerationHandsNothingOut(t *testing.T) {
	c := clientstest.NewCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	defer c.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(n int) {
		for range n {
			if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got clientstest.Recorder
	opts := func(h clients.Hooks) []Opt {
		return []Opt{WithHooks(h), KgoOpts(kgo.SeedBrokers(c.ListenAddrs()...)), SessionTimeout(6 * time.Second), HeartbeatInterval(100 * time.Millisecond), RebalanceTimeout(10 * time.Second)}
	}
	m1, err := New("m1", "g", []string{"t"}, opts(&got)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := m1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m1.Close(context.Background())
	produce(4)
	deadline := time.Now().Add(time.Minute)
	for n := 0; n < 4; {
		if time.Now().After(deadline) {
			t.Fatalf("m1 polled %d of 4 records within a minute", n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		recs, err := m1.Poll(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		n += len(recs)
	}
	// The application stalls: records arrive and are buffered.
	produce(6)
	time.Sleep(time.Second)
	m2, err := New("m2", "g", []string{"t"}, opts(clients.HookFunc(func(clients.Event) {}))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m2.Close(context.Background())
	for {
		if time.Now().After(deadline) {
			t.Fatal("m1's generation did not end within a minute of m2's start")
		}
		ended := false
		for _, e := range got.All() {
			ended = ended || (e.Op == clients.OpHeartbeat && e.Err == "REBALANCE_IN_PROGRESS")
		}
		if ended {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the revocation parks, waiting for a Poll
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	recs, err := m1.Poll(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) > 0 {
		t.Errorf("the first Poll after the generation ended handed out %d of its records", len(recs))
	}
	if _, ok := got.First(clients.Revoked); !ok {
		t.Error("the first Poll after the generation ended returned before the revocation was reported")
	}
}

// TestRevokeKind: a generation ends lost when its last heartbeat was
// answered with a fencing error or got no answer (embedded seed 233 of
// churn: a frozen member's heartbeat timed out, kafka-go ended the
// generation, and the coordinator had expired it; reported revoked, the
// overlap with the partitions' next owner read as a double ownership), and
// revoked when the coordinator asked for a rebalance or nothing failed.
func TestRevokeKind(t *testing.T) {
	for _, c := range []struct {
		lastHB int16
		want   clients.Kind
	}{
		{0, clients.Revoked},
		{kerr.RebalanceInProgress.Code, clients.Revoked},
		{kerr.UnknownMemberID.Code, clients.Lost},
		{kerr.IllegalGeneration.Code, clients.Lost},
		{kerr.FencedInstanceID.Code, clients.Lost},
		{noAnswer, clients.Lost},
	} {
		if got, why := revokeKind(c.lastHB); got != c.want {
			t.Errorf("revokeKind(%d) = %s (%s), want %s", c.lastHB, got, why, c.want)
		}
	}
}

// TestDialsOnlyThroughTheLinks: every connection kafka-go makes (its group and its partition readers), to the seed and to
// the brokers it learns, goes through the member's dialer, so link faults
// reach all of them (clientstest.DialsOnlyThroughTheLinks).
func TestDialsOnlyThroughTheLinks(t *testing.T) {
	clientstest.DialsOnlyThroughTheLinks(t, func(hooks clients.Hooks, links []kgo.Opt) (clients.Member, error) {
		return New("m1", "g", []string{"t"}, WithHooks(hooks), KgoOpts(links...), SessionTimeout(6*time.Second), HeartbeatInterval(200*time.Millisecond), RebalanceTimeout(10*time.Second))
	})
}
