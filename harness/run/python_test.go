package run_test

import (
	"context"
	"testing"

	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/kinds"
)

// TestPythonMemberContract runs the clients contract suite
// (contract_test.go) on every confluent-kafka kind (clients/process/python)
// against the embedded cluster. It needs python3 with confluent_kafka, no
// Docker; it runs in the cluster tier (the unit tier's machines need not
// have confluent-kafka), and a machine without it fails it, saying what to
// install.
func TestPythonMemberContract(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the confluent-kafka kinds are tested in the cluster tier (they need python3 with confluent_kafka)")
	}
	var names []string
	for _, k := range kinds.PythonKinds() {
		names = append(names, k.Name)
	}
	reg, err := kinds.Registry{}.WithPython(context.Background(), names)
	if err != nil {
		t.Fatalf("the confluent-kafka member kinds cannot be tested on this machine: %v", err)
	}
	e := clustertest.Embedded(t, cluster.EmbeddedConfig{})
	clustertest.CreateTopic(t, e, "contract", 3)
	for _, kind := range names {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			contract(t, e, kind, reg[kind])
		})
	}
}
