package kgoref

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
)

// A kgo member whose client is closed without Close asking is done for
// good: Poll says so with clients.ErrStopped, so that its supervisor
// starts a new one. After Close, Poll's error is the harness's own doing
// and no stop.
func TestClosedClientStopsTheMember(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := New("m1", "g", []string{"t"}, KgoOpts(kgo.SeedBrokers(c.ListenAddrs()...)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
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
