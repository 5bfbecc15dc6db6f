package run_test

import (
	"context"
	"testing"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/run"
)

// TestJavaMemberContract runs the clients contract suite (contract_test.go)
// on every Java member kind: the official KafkaConsumer of the default
// Kafka version, in its own JVM, against the embedded cluster. It needs a
// JDK and Maven (kafka-clients is resolved once and cached), no Docker, so
// it belongs to the unit tier like the contract of the other kinds; a
// machine without them fails it and says what to install.
func TestJavaMemberContract(t *testing.T) {
	if err := java.CheckJava(); err != nil {
		t.Fatalf("the Java member kinds cannot be tested on this machine: %v", err)
	}
	e, err := cluster.StartEmbedded(context.Background(), cluster.EmbeddedConfig{Logf: t.Logf})
	if err != nil {
		t.Fatalf("embedded cluster: %v", err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	clustertest.CreateTopic(t, e, "contract", 3)
	tc := &java.Toolchain{Logf: t.Logf}
	reg := run.JavaRegistry(tc)
	if _, err := tc.Prepare(context.Background(), cluster.DefaultKafkaVersion); err != nil {
		t.Fatal(err)
	}
	for _, kind := range reg.Names() {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := reg[kind]
			inner := f.New
			f.New = func(s run.MemberSpec) (clients.Member, error) {
				s.KafkaClients = cluster.DefaultKafkaVersion
				return inner(s)
			}
			contract(t, e, kind, f)
		})
	}
}
