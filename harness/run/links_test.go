package run_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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
			t.Errorf("%s: %s\nthe history before it (t.TempDir goes with the test):\n%s", v.Name, x.Message, historyAround(t, dir, x.EventIndexes))
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

// historyAround returns the lines of dir's history.jsonl from 40 events
// before to 3 after each of the events at idx (the first three), so that
// a violation in a test's temporary run directory can be read from the
// test's log.
func historyAround(t *testing.T, dir string, idx []int64) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, run.HistoryFile))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var out strings.Builder
	for n, i := range idx {
		if n == 3 {
			break
		}
		from, to := max(int(i)-40, 0), min(int(i)+4, len(lines))
		for _, l := range lines[min(from, to):to] {
			out.WriteString("  " + l + "\n")
		}
		out.WriteString("  ...\n")
	}
	return out.String()
}
