// Package recovery checks what a Kafka cluster keeps of its consumer groups:
// the __consumer_offsets records brokers write, decoded and replayed by the
// reference coordinator, before and after restarts.
package recovery

import (
	"os"
	"testing"

	"github.com/groupquake/groupquake/harness/cluster/clustertest"
)

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }
