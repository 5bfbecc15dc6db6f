// Package recovery checks what a Kafka cluster keeps of its consumer groups:
// the __consumer_offsets records brokers write, decoded and replayed by the
// reference coordinator, before and after restarts.
package recovery

import (
	"os"
	"testing"

	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
)

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }

// sharedCluster is the one-node cluster of version v that the tests which
// neither restart nor kill a node share (clustertest.Shared: one start per
// version instead of one per test and version): TestContinueFromBrokerLog,
// TestBrokerRecordsDecode, TestRunJudgesRecoveredState and
// TestReplayPendingRevocation. Each has topics and groups of its own (only
// TestReplayPendingRevocation's topic is "t"; each run names its own after
// its seed); TestBrokerRecordsDecode decodes the records of every group the
// cluster has had by then, its own among them.
func sharedCluster(t *testing.T, v string) *cluster.Cluster {
	t.Helper()
	return clustertest.Shared(t, cluster.Config{Version: v, Nodes: 1})
}
