// Package campaign runs harness plans inside go test: each run logs the
// command that reruns it, keeps its run directory (with a report.html) under
// $GROUPQUAKE_RUNS_DIR when that is set, and reports every checker's verdict
// as a subtest named after the checker (one JUnit case per checker per run),
// failed with the violation's first events and the rerun command.
package campaign

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/results"
)

// RandomSeed returns a fresh seed; the run logs it, so a failure reruns.
func RandomSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1
}

// Seed reads the value of a suite's seed flag (name, for the messages): a
// number, or "random" for a fresh one, which it logs with the flag that
// reruns it. A value that is neither fails t.
func Seed(t testing.TB, name, value string) uint64 {
	t.Helper()
	value = strings.TrimSpace(value)
	if value == "random" {
		seed := RandomSeed()
		t.Logf("fresh seed %d (rerun with %s=%d)", seed, name, seed)
		return seed
	}
	n, err := strconv.ParseUint(value, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q is not a seed: give a whole number or \"random\"", name, value)
	}
	return n
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
	// Java and Go client member kinds join the registry when the options
	// name them, and so do the broken kinds (never drawn by a seed).
	reg, err := kinds.Default().WithBroken(o.Kinds).WithGoClients(o.Kinds).WithJava(o.Kinds, &java.Toolchain{Logf: t.Logf})
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
	if res.Report.Verdicts != nil {
		// harness/run writes the report of every run it judged.
		if _, serr := os.Stat(filepath.Join(d, run.ReportFile)); serr != nil {
			t.Errorf("the run was judged but left no %s: %v", run.ReportFile, serr)
		}
	}
	for _, n := range res.Notes {
		t.Logf("note: %s", n)
	}
	Verdicts(t, d, p.Command(), res.Report, err)
	if err != nil {
		t.Fatalf("run (seed %d) could not be carried out: %v; notes: %v; run directory %s", seed, err, res.Notes, d)
	}
	if t.Failed() {
		t.Logf("run directory: %s; rerun: %s", d, p.Command())
	}
	return res
}

// StrictFindingsEnv, when set, makes a violation that matches a registered
// finding fail its subtest like any other.
const StrictFindingsEnv = "GROUPQUAKE_STRICT_FINDINGS"

// onlyKnown says whether every violation of v matches a registered finding.
func onlyKnown(v check.Verdict) bool {
	for _, x := range v.Violations {
		if x.Finding == "" {
			return false
		}
	}
	return len(v.Violations) > 0
}

// AllJudged fails t for every checker of rep that was skipped, and reports
// whether rep has any verdict at all (what a run with none means is the
// caller's to say).
func AllJudged(t testing.TB, rep check.Report) bool {
	t.Helper()
	for _, v := range rep.Verdicts {
		if v.Skipped != "" {
			t.Errorf("checker %s was skipped: %s", v.Name, v.Skipped)
		}
	}
	return len(rep.Verdicts) > 0
}

// Verdicts reports every checker's verdict of the run in directory d as a
// subtest of t named after the checker, so that the JUnit gotestsum writes
// has one test case per checker per run and a red build names the
// invariant: a violated checker fails its subtest with its first violations,
// the events that show them, the run directory and the rerun command; a
// skipped checker skips its subtest with the reason; a checker whose every
// violation matches a registered finding (a known Kafka or client bug) logs
// it as reproduced, unless $GROUPQUAKE_STRICT_FINDINGS is set. runErr is the run's
// error, if it could not be carried out. On GitHub Actions
// ($GITHUB_STEP_SUMMARY) a failed run is also added to the job's summary page.
func Verdicts(t *testing.T, d, rerun string, rep check.Report, runErr error) {
	t.Helper()
	var events map[int64]history.Event
	if len(results.Count(rep.Verdicts).Violated) > 0 || runErr != nil {
		if loaded, err := history.Load(filepath.Join(d, run.HistoryFile)); err == nil {
			events = results.IndexEvents(loaded.Events)
		} else {
			t.Logf("the history of %s cannot be read to show the events of its violations: %v", d, err)
		}
	}
	for _, v := range rep.Verdicts {
		t.Run(v.Name, func(t *testing.T) {
			switch {
			case v.Skipped != "":
				t.Skip(v.Skipped)
			case !v.Holds && onlyKnown(v) && os.Getenv(StrictFindingsEnv) == "":
				// Every violation matches a registered Kafka or client bug
				// (groupquake findings): the run exits 1 for a user, and a
				// suite reports the finding reproduced rather than turning
				// every build red on a bug outside the project.
				var b strings.Builder
				fmt.Fprintf(&b, "%s: known findings reproduced (%s=1 fails the test on them):\n", v.Name, StrictFindingsEnv)
				results.WriteViolations(&b, v, events, "  ")
				fmt.Fprintf(&b, "run directory: %s\nrerun: %s", d, rerun)
				t.Log(b.String())
			case !v.Holds:
				var b strings.Builder
				fmt.Fprintf(&b, "%s: %d violations\n", v.Name, len(v.Violations))
				results.WriteViolations(&b, v, events, "  ")
				fmt.Fprintf(&b, "run directory: %s\nrerun: %s", d, rerun)
				t.Error(b.String())
			case len(v.Notes) > 0:
				t.Log(strings.Join(v.Notes, "; "))
			}
		})
	}
	s := results.StepSummary{Title: t.Name(), Dir: d, Rerun: rerun, Verdicts: rep.Verdicts, Events: events}
	if runErr != nil {
		s.Error = runErr.Error()
	}
	if err := results.AppendStepSummary(os.Getenv("GITHUB_STEP_SUMMARY"), s); err != nil {
		t.Logf("%v", err)
	}
}
