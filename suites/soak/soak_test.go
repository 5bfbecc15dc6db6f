// Package soak runs seeded campaigns back to back for as long as
// -soak.duration says: briefly in CI, for hours in the nightly workflow.
// Every run draws a fresh seed, logs the command that reruns it, and must
// leave every checker holding.
package soak

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/suites/internal/campaign"
)

var (
	duration = flag.Duration("soak.duration", 30*time.Second, "how long to keep starting runs (each run's workload lasts at most -soak.run)")
	perRun   = flag.Duration("soak.run", 2*time.Minute, "workload length of one run")
	nodes    = flag.Int("soak.nodes", 3, "broker nodes of each run's cluster")
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(clustertest.Main(m))
}

func TestSoak(t *testing.T) {
	clustertest.NeedEngine(t)
	if *duration <= 0 || *perRun <= 0 {
		t.Fatalf("-soak.duration (%s) and -soak.run (%s) must be positive", *duration, *perRun)
	}
	scenarios := run.Scenarios()
	start := time.Now()
	for i := 0; time.Since(start) < *duration; i++ {
		left := *duration - time.Since(start)
		d := min(*perRun, max(left, 10*time.Second))
		scenario := scenarios[i%len(scenarios)]
		seed := campaign.RandomSeed()
		t.Run(fmt.Sprintf("%03d-%s", i, scenario), func(t *testing.T) {
			campaign.Run(t, seed, run.Options{Scenario: scenario, Nodes: *nodes, Duration: d}, d+15*time.Minute)
		})
		if t.Failed() {
			t.Logf("stopping the soak after the first failed run (%d runs, %s)", i+1, time.Since(start).Round(time.Second))
			return
		}
	}
}
