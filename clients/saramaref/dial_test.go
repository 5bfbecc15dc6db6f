package saramaref

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
)

// countingListener counts the connections a broker accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// TestDialsOnlyThroughTheLinks: every connection Sarama makes, to the seed
// and to the brokers it learns from Metadata and FindCoordinator (three
// brokers, so the coordinator and the leaders are not all the seed), goes
// through the member's dialer, so link faults reach all of them: the
// brokers accept exactly as many connections as the dialer made.
func TestDialsOnlyThroughTheLinks(t *testing.T) {
	var accepted, dialed atomic.Int64
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(6, "t"), kfake.ListenFn(func(network, addr string) (net.Listener, error) {
		l, err := net.Listen(network, addr)
		return countingListener{l, &accepted}, err
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var d net.Dialer
	dial := func(ctx context.Context, network, host string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, host)
		if err == nil {
			dialed.Add(1)
		}
		return conn, err
	}
	var got events
	m, err := New("m1", "g", []string{"t"}, WithHooks(&got), KgoOpts(kgo.SeedBrokers(c.ListenAddrs()[0]), kgo.Dialer(dial)), SessionTimeout(6*time.Second), HeartbeatInterval(200*time.Millisecond), RebalanceTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the assignment", func() bool { _, ok := got.find(clients.Assigned); return ok })
	for range 10 { // fetch from the leaders
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		m.Poll(ctx)
		cancel()
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for accepted.Load() != dialed.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if a, d := accepted.Load(), dialed.Load(); a != d || d < 2 {
		t.Errorf("the brokers accepted %d connections, the member's dialer made %d: want equal (and more than one: the seed and the brokers learned)", a, d)
	}
}
