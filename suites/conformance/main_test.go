// Package conformance runs scripted consumer-group scenarios with exact
// expectations, per Kafka version, against real brokers in containers: our
// classic and KIP-848 members, alone and beside kgo's own group consumer.
package conformance

import (
	"os"
	"testing"

	"github.com/groupquake/groupquake/harness/cluster/clustertest"
)

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }
