package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/process/python"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/membercheck"
)

// TestConfluentPythonMemberCheck runs member-check's scenario, in both
// group protocols, on groupquake's second implementation of the member
// protocol (clients/process/python: confluent-kafka, the Python client on
// librdkafka) against a real one-node cluster of the default tested
// version: every rule must hold. A machine whose python3 cannot import
// confluent_kafka fails it, saying what to install.
func TestConfluentPythonMemberCheck(t *testing.T) {
	clustertest.NeedEngine(t)
	ctx := context.Background()
	cmd, rt, err := python.Command(ctx)
	if err != nil {
		t.Fatalf("this test needs the confluent-python member's runtime: %v", err)
	}
	version := clustertest.Versions()[0]
	t.Logf("confluent-kafka %s, librdkafka %s, Kafka %s", rt.ConfluentKafka, rt.Librdkafka, version)
	c := sharedCluster(t, version)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	rep, err := membercheck.Check(ctx, membercheck.Config{Command: cmd, Cluster: c, Kafka: version, Logf: t.Logf})
	if err != nil {
		t.Fatalf("member-check could not be carried out: %v", err)
	}
	memberCheckHolds(t, rep)
}

// memberCheckHolds fails t for each member-check finding that does not
// hold, and for each protocol in which the member never joined and
// consumed.
func memberCheckHolds(t *testing.T, rep membercheck.Report) {
	t.Helper()
	consumed := map[clients.Protocol]bool{}
	for _, f := range rep.Findings {
		if !f.OK {
			t.Errorf("%s", f)
		}
		if f.OK && f.Rule == "joins-and-consumes" {
			consumed[f.Protocol] = true
		}
	}
	for _, p := range []clients.Protocol{clients.Classic, clients.Consumer} {
		if !consumed[p] {
			t.Errorf("%s: the member never joined and consumed (no joins-and-consumes that holds)", p)
		}
	}
}
