package consumer

import (
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
	now := mb.cfg.clock.Now()
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
