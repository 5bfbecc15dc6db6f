package cluster_test

import (
	"context"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/cluster"
)

// TestRollingUpgrade rolls a 3-node 4.1.2 cluster to the default version
// node by node: records and commits made before the upgrade are still
// there after it, and every node runs the new broker.
func TestRollingUpgrade(t *testing.T) {
	needEngine(t)
	const from = "4.1.2"
	to := cluster.DefaultKafkaVersion
	c := startCluster(t, cluster.Config{Version: from, Nodes: 3})
	createTopic(t, c, "t", 3)
	l, err := c.Links("producer")
	if err != nil {
		t.Fatal(err)
	}
	produceN(t, l, "t", 3000)
	commitAndCheck(t, c, "g-upgrade", "t", 1234)
	ctx := context.Background()
	if err := c.UpgradeNode(ctx, 1, from); err == nil {
		t.Errorf("upgrading node 1 to the version it runs was accepted")
	}
	if err := c.RollingUpgrade(ctx, to); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		if n.Version != to {
			t.Errorf("node %d reports version %s after the upgrade, want %s", n.ID, n.Version, to)
		}
		logs, err := c.Logs(ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs, "Kafka version: "+to) {
			t.Errorf("node %d did not log %q after the upgrade", n.ID, "Kafka version: "+to)
		}
	}
	expectCommitted(t, c, "g-upgrade", "t", 1234)
	lc, err := c.Links("consumer")
	if err != nil {
		t.Fatal(err)
	}
	consumeAll(t, lc, "t", "g-after-upgrade", 3000)
}
