package chaos

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/suites/internal/campaign"
)

// goClientsFlag turns on TestGoClients (the nightly workflow's `make
// goclients`): its cells cost more than CI's chaos budget allows.
var goClientsFlag = flag.Bool("chaos.goclients", false, "TestGoClients: run the Go client kinds (Sarama beside groupquake's classic member, kafka-go alone), one scenario family per kind")

// goClientCells covers each Go client kind (run.GoClientRegistry) once,
// each in a scenario family of its own, so the four families are each run
// once. Sarama's kinds run two members beside groupquake's classic member,
// whose range assignor the group agrees on. kafka-go runs alone: it cannot
// share a group with a member that reads consumer subscriptions as Kafka
// defines them (docs/clients.md, the first finding), so a mixed cell would
// only ever show that.
var goClientCells = []struct {
	family string
	kinds  []string
}{
	{run.ScenarioMemberLinks, []string{"sarama-range", "sarama-range", "classic"}},
	{run.ScenarioBrokerFaults, []string{"sarama-roundrobin", "sarama-roundrobin", "classic"}},
	{run.ScenarioChurn, []string{"sarama-sticky", "sarama-sticky", "classic"}},
	{run.ScenarioCombined, []string{"kafkago", "kafkago", "kafkago"}},
}

// TestGoClients runs goClientCells on one 3-node cluster of the default
// version with the seeds of -chaos.seeds: every checker must hold. It
// measured 22–27 s a cell, 136 s with the cluster's start (docs/clients.md),
// so it is the nightly's, not CI's (whose chaos matrix has under a minute to
// spare for it).
func TestGoClients(t *testing.T) {
	if !*goClientsFlag {
		t.Skip("-chaos.goclients not given: the Go client cells are the nightly workflow's (make goclients)")
	}
	version := clustertest.Versions()[0]
	c := clustertest.Start(t, cluster.Config{Version: version, Nodes: 3})
	for _, cell := range goClientCells {
		for _, seed := range seeds(t) {
			t.Run(fmt.Sprintf("%s/%s/seed-%d", cell.family, cell.kinds[0], seed), func(t *testing.T) {
				campaign.RunOn(t, c, seed, run.Options{
					Scenario: cell.family, Kafka: version, Nodes: 3, Kinds: cell.kinds,
					Duration: matrixWorkload,
				}, 10*time.Minute)
			})
		}
	}
}
