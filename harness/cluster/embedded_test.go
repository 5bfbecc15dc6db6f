package cluster_test

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
)

// TestEmbeddedCluster runs the reference coordinator behind the Kafka
// protocol: records flow through a client's links, a commit survives a
// stop and start (the coordinator replays __consumer_offsets), a pause
// cuts clients off until unpaused, and Close removes the temporary data.
func TestEmbeddedCluster(t *testing.T) {
	ctx := context.Background()
	e := clustertest.Embedded(t, cluster.EmbeddedConfig{})
	l := recordsFlow(t, e, "g-embedded", 2000)

	commitAndCheck(t, e, "g-offsets", "records", 42)
	if err := e.StopNode(ctx, cluster.EmbeddedNode); err != nil {
		t.Fatal(err)
	}
	if err := pingThrough(l, 3*time.Second); err == nil {
		t.Errorf("a stopped embedded cluster answered")
	}
	if err := e.StartNode(ctx, cluster.EmbeddedNode); err != nil {
		t.Fatal(err)
	}
	expectCommitted(t, e, "g-offsets", "records", 42)

	if err := e.PauseNode(ctx, cluster.EmbeddedNode); err != nil {
		t.Fatal(err)
	}
	if err := pingThrough(l, 3*time.Second); err == nil {
		t.Errorf("a client reached a paused embedded cluster")
	}
	late, err := e.Links("joined-while-paused")
	if err != nil {
		t.Fatal(err)
	}
	if err := pingThrough(late, 3*time.Second); err == nil {
		t.Errorf("a client linked during the pause reached the cluster")
	}
	if err := e.UnpauseNode(ctx, cluster.EmbeddedNode); err != nil {
		t.Fatal(err)
	}
	if err := pingThrough(l, 30*time.Second); err != nil {
		t.Errorf("after unpause: %v", err)
	}
	if err := e.KillNode(ctx, 2); err == nil {
		t.Errorf("node 2 of a one-node embedded cluster was accepted")
	}

	dir := e.DataDir()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Close left the temporary data directory %s (stat: %v)", dir, err)
	}
}

// TestEmbeddedDialInProcess: DialContext to the embedded cluster's address
// gives a connection without a socket (100 of them open no file
// descriptor), on which a client is served as over TCP; a stopped cluster
// refuses it, a started one serves it again.
func TestEmbeddedDialInProcess(t *testing.T) {
	ctx := context.Background()
	e := clustertest.Embedded(t, cluster.EmbeddedConfig{})
	addr := e.Bootstrap()[0]
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		return len(ents)
	}
	before := fds()
	var conns []net.Conn
	for range 100 {
		c, err := e.DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	if grew := fds() - before; grew > 10 {
		t.Errorf("100 in-process connections opened %d file descriptors", grew)
	}
	for _, c := range conns {
		c.Close()
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.Dialer(e.DialContext), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl); err != nil {
		t.Fatalf("metadata through an in-process connection: %v", err)
	}
	if err := e.StopNode(ctx, cluster.EmbeddedNode); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DialContext(ctx, "tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial to a stopped cluster: %v, want connection refused", err)
	}
	if err := e.StartNode(ctx, cluster.EmbeddedNode); err != nil {
		t.Fatal(err)
	}
	c, err := e.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial after the start: %v", err)
	}
	c.Close()
}
