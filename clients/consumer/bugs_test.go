package consumer

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
)

func TestWithBugUnknown(t *testing.T) {
	t.Parallel()
	_, err := New("m", "g", KgoOpts(kgo.SeedBrokers("127.0.0.1:1")), Topics("t"), WithBug("eats-records"))
	if err == nil || !strings.Contains(err.Error(), `unknown bug "eats-records"`) {
		t.Fatalf("New with an unknown bug: %v", err)
	}
}

// BugAckBeforeRevoke keeps the revoked partitions out of the plan (so the
// reconciliation acknowledges without giving them up) and reports Revoked
// only once ackBeforeRevokeLag has passed; a member without the bug keeps
// the plan as it is.
func TestBugAckBeforeRevokeDefersTheRevocation(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var evs []clients.Event
	hooks := clients.HookFunc(func(e clients.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() })
	mk := func(opts ...Opt) *Member {
		mb, err := New("m", "g", append([]Opt{KgoOpts(kgo.SeedBrokers("127.0.0.1:1")), Topics("t"), WithHooks(hooks)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(mb.cl.Close)
		mb.owned = clients.Partitions{"t": {0, 1}}
		return mb
	}
	p := plan{revoke: clients.Partitions{"t": {1}}}
	if got := mk().deferRevoke(p); got.revoke.Count() != 1 {
		t.Fatalf("without the bug the plan changed: %+v", got)
	}
	mb := mk(WithBug(BugAckBeforeRevoke))
	if got := mb.deferRevoke(p); got.revoke.Count() != 0 {
		t.Fatalf("with the bug the plan still revokes %v", got.revoke)
	}
	now := mb.cfg.Clock.Now()
	mb.lateRevoke(now)
	if !slices.Equal(mb.Owned()["t"], []int32{0, 1}) || len(evs) != 0 {
		t.Fatalf("revoked before the lag: owned %v, events %v", mb.Owned(), evs)
	}
	mb.lateRevoke(now.Add(ackBeforeRevokeLag + time.Second))
	if !slices.Equal(mb.Owned()["t"], []int32{0}) {
		t.Fatalf("owned %v after the lag, want [0]", mb.Owned())
	}
	if len(evs) != 1 || evs[0].Kind != clients.Revoked || !slices.Equal(evs[0].Partitions["t"], []int32{1}) {
		t.Fatalf("events %+v, want one Revoked of t[1]", evs)
	}
}

// BugFetchAfterRevoke goes on handing out the records of a partition it
// revoked, as a correct member does not, until it is assigned again; the
// revocation is reported either way.
func TestBugFetchAfterRevokeKeepsHandingOut(t *testing.T) {
	t.Parallel()
	memberAndBug(t, BugFetchAfterRevoke, func(t *testing.T, opts []Opt, bug bool) {
		s, m, dump := startAssigned(t, false, opts...)
		got := map[int32]int{}
		poll := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			rs, _ := m.Poll(ctx)
			for _, r := range rs {
				got[r.Partition]++
			}
		}
		eventually(t, "the member handed out the ten records of t[0] and t[1]", func() bool { poll(); return got[0] == 10 && got[1] == 10 }, dump)
		s.set(2, 0)
		eventually(t, "the member revoked t[1]", func() bool { poll(); return m.owns(0)() }, dump)
		revoked := false
		for _, e := range m.log.All() {
			revoked = revoked || e.Kind == clients.Revoked && slices.Equal(e.Partitions[loopTopic], []int32{1})
		}
		if !revoked {
			t.Fatalf("no Revoked event for t[1]\n%s", dump())
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for range 5 {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: loopTopic, Partition: 1, Value: []byte("after")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		before := got[1]
		if bug {
			eventually(t, "the broken member hands out t[1]'s new records", func() bool { poll(); return got[1] == before+5 }, dump)
			return
		}
		for range 10 {
			poll()
		}
		if got[1] != before {
			t.Fatalf("the correct member handed out %d records of t[1] after revoking it", got[1]-before)
		}
	})
}

// memberAndBug runs test on the member and, in a subtest named after b, on
// the member with bug b: what the member is held to must fail with the
// bug, so that the check is known to catch it.
func memberAndBug(t *testing.T, b Bug, test func(t *testing.T, opts []Opt, bug bool)) {
	for _, tc := range []struct {
		name string
		opts []Opt
		bug  bool
	}{{name: "member"}, {name: string(b), opts: []Opt{WithBug(b)}, bug: true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			test(t, tc.opts, tc.bug)
		})
	}
}
