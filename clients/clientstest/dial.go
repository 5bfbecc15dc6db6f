package clientstest

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

// NewCluster starts a kfake cluster with opts, failing the test when it
// cannot; the caller closes it.
func NewCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

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

// DialsOnlyThroughTheLinks checks that every connection a member makes,
// to the seed and to the brokers it learns from Metadata and
// FindCoordinator (three brokers, so the coordinator and the leaders are
// not all the seed), goes through the member's dialer, so link faults reach
// all of them: the brokers accept exactly as many connections as the
// dialer made. newMember builds the member of group "g" on topic "t" with
// hooks and the links as kgo options (kgo.SeedBrokers, kgo.Dialer).
func DialsOnlyThroughTheLinks(t *testing.T, newMember func(hooks clients.Hooks, links []kgo.Opt) (clients.Member, error)) {
	t.Helper()
	var accepted, dialed atomic.Int64
	c := NewCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(6, "t"), kfake.ListenFn(func(network, addr string) (net.Listener, error) {
		l, err := net.Listen(network, addr)
		return countingListener{l, &accepted}, err
	}))
	defer c.Close()
	var d net.Dialer
	dial := func(ctx context.Context, network, host string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, host)
		if err == nil {
			dialed.Add(1)
		}
		return conn, err
	}
	var got Recorder
	m, err := newMember(&got, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()[0]), kgo.Dialer(dial)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); len(got.Of(clients.Assigned)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no assignment within a minute")
		}
	}
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

// StartOnFake starts the member newMember builds (with a Recorder as its
// hooks and the seed of a one-broker kfake cluster with topic "t" of three
// partitions as its kgo options) and returns the Recorder and the member;
// the member is closed, then the cluster, when the test ends.
func StartOnFake[M clients.Member](t *testing.T, newMember func(hooks clients.Hooks, seed kgo.Opt) (M, error)) (*Recorder, M) {
	t.Helper()
	c := NewCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(3, "t"))
	t.Cleanup(c.Close)
	got := &Recorder{}
	m, err := newMember(got, kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return got, m
}

// StartKilledAtEnd fails the test when building the member failed (err) or
// m does not start within a minute, and kills m when the test ends.
func StartKilledAtEnd[M interface {
	Start(context.Context) error
	Kill() error
}](t *testing.T, m M, err error) M {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	_, cancel := Start(t, m, time.Minute)
	defer cancel()
	t.Cleanup(func() { m.Kill() })
	return m
}
