package run_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// TestRunHealsTheLinksAnEarlierRunLeft: on a cluster handed to runs one
// after the other (a test binary's shared one), every run names its
// clients alike (m1, m2, p0), and the cluster keeps each client's links.
// An earlier run that ended without healing left m1's links cut and p0's
// blackholed: the next run heals them before it builds its clients, so m1
// is assigned partitions, p0 produces, and no checker is violated.
func TestRunHealsTheLinksAnEarlierRunLeft(t *testing.T) {
	e := clustertest.Embedded(t, cluster.EmbeddedConfig{})
	p, err := run.NewPlan(53, run.Options{Embedded: true, Kinds: []string{"consumer", "consumer"}, Members: 2, Partitions: 4, Rate: 20, Duration: 3 * time.Second}, kinds.Default().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	m1, p0 := p.Members[0].Name, p.Producers[0].Name
	l, err := e.Links(m1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Cut(cluster.AllNodes); err != nil {
		t.Fatal(err)
	}
	if l, err = e.Links(p0); err != nil {
		t.Fatal(err)
	}
	if err := l.Blackhole(cluster.AllNodes); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := run.Run(ctx, run.Config{Plan: p, Dir: dir, Cluster: e, Logf: t.Logf})
	if err != nil {
		t.Fatalf("run: %v (notes %v)", err, res.Notes)
	}
	for _, v := range res.Report.Verdicts {
		for _, x := range v.Violations {
			t.Errorf("%s: %s", v.Name, x.Message)
		}
	}
	loaded, err := history.Load(filepath.Join(dir, run.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	assigned, produced := false, false
	for _, ev := range loaded.Events {
		assigned = assigned || ev.Process == m1 && ev.F == history.FAssigned
		produced = produced || ev.Process == p0 && ev.F == history.FProduce && ev.Type == history.OK
	}
	if !assigned {
		t.Errorf("%s was never assigned partitions: its links stayed cut", m1)
	}
	if !produced {
		t.Errorf("no record of %s was acknowledged: its links stayed blackholed", p0)
	}
}
