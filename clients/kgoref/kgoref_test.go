package kgoref

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
)

// log collects the events of several members in the order they were
// reported, as the run's history would.
type log struct{ clientstest.Recorder }

func poller(ctx context.Context, t *testing.T, m *Member, got chan<- clients.Record) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			rs, err := m.Poll(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				t.Errorf("%s: poll: %v", m.Name(), err)
				return
			}
			for _, r := range rs {
				got <- r
			}
		}
	}()
	return &wg
}

// TestClassicHandOff runs two classic members on kfake: the first owns every
// partition and commits at its generation; when the second joins, every
// partition that moves is reported revoked by the first before it is
// reported assigned to the second (kgoref's invariant 2).
func TestClassicHandOff(t *testing.T) {
	c := clientstest.NewCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(4, "t"))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 40 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: int32(i % 4), Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	var l log
	newMember := func(name string) *Member {
		m, err := New(name, "g", []string{"t"}, WithHooks(&l),
			KgoOpts(kgo.SeedBrokers(c.ListenAddrs()...)),
			SessionTimeout(6*time.Second), HeartbeatInterval(200*time.Millisecond), RebalanceTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m1 := newMember("m1")
	got := make(chan clients.Record, 1000)
	pctx, stopPolls := context.WithCancel(ctx)
	w1 := poller(pctx, t, m1, got)
	for range 40 {
		select {
		case r := <-got:
			if r.Generation <= 0 {
				t.Errorf("record %s-%d@%d came with generation %d", r.Topic, r.Partition, r.Offset, r.Generation)
			}
		case <-ctx.Done():
			t.Fatal("m1 did not consume the 40 records")
		}
	}
	if n := m1.Owned().Count(); n != 4 {
		t.Fatalf("m1 owns %d partitions, want 4", n)
	}
	stopPolls()
	w1.Wait()
	perr, err := m1.Commit(ctx, map[string]map[int32]int64{"t": {0: 10, 1: 10, 2: 10, 3: 10}})
	if err != nil || len(perr) > 0 {
		t.Fatalf("commit: %v %v", perr, err)
	}

	pctx, stopPolls = context.WithCancel(ctx)
	defer stopPolls()
	w1 = poller(pctx, t, m1, got)
	m2 := newMember("m2")
	w2 := poller(pctx, t, m2, got)
	for m1.Owned().Count()+m2.Owned().Count() != 4 || m2.Owned().Count() == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the group did not rebalance onto m2: m1 %v, m2 %v", m1.Owned(), m2.Owned())
		case <-time.After(50 * time.Millisecond):
		}
	}
	stopPolls()
	w1.Wait()
	w2.Wait()
	for _, m := range []*Member{m1, m2} {
		if err := m.Close(ctx); err != nil {
			t.Errorf("close %s: %v", m.Name(), err)
		}
	}

	es := l.All()
	revokedAt := map[int32]int{}
	committed, left := false, 0
	for i, e := range es {
		switch {
		case e.Kind == clients.Revoked && e.Member == "m1":
			for _, p := range e.Partitions["t"] {
				if _, seen := revokedAt[p]; !seen {
					revokedAt[p] = i
				}
			}
		case e.Kind == clients.Assigned && e.Member == "m2":
			for _, p := range e.Partitions["t"] {
				r, ok := revokedAt[p]
				if !ok || r > i {
					t.Errorf("m2 was assigned t-%d (event %d) before m1 reported revoking it (%v)", p, i, ok)
				}
			}
			if e.Generation <= 0 {
				t.Errorf("m2's assignment has generation %d", e.Generation)
			}
		case e.Kind == clients.Committed && e.Member == "m1":
			committed = true
			if e.Generation <= 0 || e.MemberID == "" || e.Offsets["t"][0] != 10 {
				t.Errorf("commit reported as %+v", e)
			}
		case e.Kind == clients.Left:
			left++
		}
	}
	if !committed {
		t.Error("m1's commit was not reported")
	}
	if left != 2 {
		t.Errorf("%d members reported leaving, want 2", left)
	}
}

// A kgo member whose client is closed without Close asking is done for
// good: Poll says so with clients.ErrStopped, so that its supervisor
// starts a new one. After Close, Poll's error is the harness's own doing
// and no stop.
func TestClosedClientStopsTheMember(t *testing.T) {
	c := clientstest.NewCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	defer c.Close()
	m, err := New("m1", "g", []string{"t"}, KgoOpts(kgo.SeedBrokers(c.ListenAddrs()...)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := clientstest.Start(t, m, 30*time.Second)
	defer cancel()
	pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	if _, err := m.Poll(pctx); err != nil {
		t.Fatalf("first poll: %v", err)
	}
	pcancel()
	m.mu.Lock()
	cl := m.cl
	m.mu.Unlock()
	cl.AllowRebalance()
	cl.Close() // the client is done, not by the member's Close
	if _, err := m.Poll(ctx); !errors.Is(err, clients.ErrStopped) {
		t.Fatalf("Poll on a client closed under the member returned %v, want clients.ErrStopped", err)
	}
	m.Close(ctx) // its leave cannot go out on a closed client: what it says does not matter here
	if _, err := m.Poll(ctx); err == nil || errors.Is(err, clients.ErrStopped) {
		t.Fatalf("Poll after Close returned %v, want an error that is no stop", err)
	}
}
