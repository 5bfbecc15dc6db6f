package cluster_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/cluster"
)

// TestEmbeddedCluster runs the reference coordinator behind the Kafka
// protocol: records flow through a client's links, a commit survives a
// stop and start (the coordinator replays __consumer_offsets), a pause
// cuts clients off until unpaused, and Close removes the temporary data.
func TestEmbeddedCluster(t *testing.T) {
	ctx := context.Background()
	e, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	createTopic(t, e, "records", 3)
	l, err := e.Links("producer")
	if err != nil {
		t.Fatal(err)
	}
	produceN(t, l, "records", 2000)
	consumeAll(t, l, "records", "g-embedded", 2000)

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
