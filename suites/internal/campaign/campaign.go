// Package campaign runs harness plans inside go test: each run logs the
// command that reruns it, keeps its run directory (with a report.html) under
// $GROUPQUAKE_RUNS_DIR when that is set, and fails the test with every
// violation and the events that show it.
package campaign

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/results"
)

// RandomSeed returns a fresh seed; the run logs it, so a failure reruns.
func RandomSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// dir returns where the run writes: under $GROUPQUAKE_RUNS_DIR (kept after
// the test, for CI artifacts and reading failures), else a temporary one.
func dir(t testing.TB, seed uint64) string {
	if root := os.Getenv("GROUPQUAKE_RUNS_DIR"); root != "" {
		d := filepath.Join(root, unsafeName.ReplaceAllString(t.Name(), "_"))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(d, time.Now().UTC().Format("20060102T150405")+"-"+itoa(seed))
	}
	return filepath.Join(t.TempDir(), "run")
}

func itoa(u uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			return string(b[i:])
		}
	}
}

// Mixes are the protocol mixes a covering campaign runs each scenario
// family with: member kinds, cycled over the group's members.
var Mixes = []Mix{
	{"classic-eager", []string{"classic", "classic"}},
	{"classic-cooperative", []string{"classic-cooperative", "kgo-classic"}},
	{"consumer", []string{"consumer", "kgo-consumer"}},
	{"mixed", []string{"classic", "consumer", "kgo-classic", "kgo-consumer"}},
}

// Mix is a named set of member kinds.
type Mix struct {
	Name  string
	Kinds []string
}

// Run builds the plan of seed with o and runs it on a cluster the run
// starts itself from the plan, within bound; every checker must hold.
func Run(t *testing.T, seed uint64, o run.Options, bound time.Duration) run.Result {
	t.Helper()
	return RunOn(t, nil, seed, o, bound)
}

// RunOn is Run on the cluster h, which the run uses as it is and leaves
// running (nil: the run starts its own from the plan). o must describe h
// (its version and node count), so the plan's faults fit it.
func RunOn(t *testing.T, h cluster.Handle, seed uint64, o run.Options, bound time.Duration) run.Result {
	t.Helper()
	if !o.Embedded {
		clustertest.NeedEngine(t)
	}
	if h != nil && o.Topic == "" && o.Group == "" {
		// Runs that share a cluster need names of their own, even for one seed.
		name := strings.ToLower(unsafeName.ReplaceAllString(t.Name(), "-"))
		o.Group = fmt.Sprintf("gq-%s-%d", name, seed)
		o.Topic = o.Group + "-records"
	}
	// Java member kinds join the registry when the options name them.
	reg, err := run.DefaultRegistry().WithJava(o.Kinds, &java.Toolchain{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	p, err := run.NewPlan(seed, o, reg.Kinds())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rerun: %s", p.Command())
	d := dir(t, seed)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	res, err := run.Run(ctx, run.Config{Plan: p, Dir: d, Registry: reg, Logf: t.Logf, Cluster: h})
	if c, ok := h.(*cluster.Cluster); ok {
		// The run healed everything it did: every node of the shared
		// cluster serves again, or the heal is broken (and later runs must
		// not pay for it).
		for _, id := range c.NodeIDs() {
			if serr := c.Serving(context.Background(), id); serr != nil {
				t.Errorf("after the run, %v: its heal left the cluster hurt; bringing the node back for the next run", serr)
				_ = c.UnpauseNode(context.Background(), id)
				_ = c.HealNode(context.Background(), id)
				if err := c.StartNode(context.Background(), id); err != nil {
					t.Fatalf("node %d cannot be brought back: %v", id, err)
				}
			}
		}
	}
	writeReport(t, d, p.Command(), res)
	if err != nil {
		t.Fatalf("run (seed %d) could not be carried out: %v; notes: %v; run directory %s", seed, err, res.Notes, d)
	}
	for _, n := range res.Notes {
		t.Logf("note: %s", n)
	}
	for _, v := range res.Report.Verdicts {
		switch {
		case v.Skipped != "":
			t.Logf("%s skipped: %s", v.Name, v.Skipped)
		case !v.Holds:
			for _, x := range v.Violations {
				t.Errorf("%s: %s (events %v)", v.Name, x.Message, x.EventIndexes)
			}
		}
	}
	if t.Failed() {
		t.Logf("run directory: %s; rerun: %s", d, p.Command())
	}
	return res
}

// writeReport leaves report.html beside the verdicts, best effort.
func writeReport(t *testing.T, d, command string, res run.Result) {
	loaded, err := history.Load(filepath.Join(d, run.HistoryFile))
	if err != nil {
		return
	}
	f, err := os.Create(filepath.Join(d, "report.html"))
	if err != nil {
		return
	}
	defer f.Close()
	if err := results.WriteReport(f, results.Report{Title: t.Name(), Command: command, Events: loaded.Events, Verdicts: res.Report.Verdicts, Truncated: loaded.Truncated != nil}); err != nil {
		t.Logf("report.html: %v", err)
	}
}
