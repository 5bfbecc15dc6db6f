package run_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// TestCheckDir pins what a run directory may be: the command line refuses
// the others before anything starts.
func TestCheckDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	held := filepath.Join(root, "held")
	if err := os.MkdirAll(held, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	src := filepath.Join(root, "src")
	for _, f := range []string{filepath.Join(held, run.PlanFile), file, filepath.Join(src, "x.go")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for dir, want := range map[string]string{
		"":   "no run directory",
		held: "already holds a run",
		file: "is a file",
		src:  "is a Go source folder",
	} {
		if err := run.CheckDir(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckDir(%q) = %v, want it to say %q", dir, err, want)
		}
	}
	fresh := filepath.Join(root, "new", "run")
	if err := run.CheckDir(fresh); err != nil {
		t.Errorf("CheckDir of a new directory: %v", err)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("CheckDir created %s (stat: %v)", fresh, err)
	}
}

func TestWriteVerdictsRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rep := check.NewReport([]check.Verdict{{Name: "A", Holds: true}, {Name: "B", Violations: []check.Violation{{Message: "x", EventIndexes: []int64{3}}}}}, nil)
	if err := run.WriteVerdicts(dir, rep); err != nil {
		t.Fatal(err)
	}
	got, err := run.ReadVerdicts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Holds || len(got.Verdicts) != 2 || got.Verdicts[1].Violations[0].EventIndexes[0] != 3 {
		t.Fatalf("round trip: %+v", got)
	}
}

// TestJudgeRunStoppedEarly: a run that stopped before its final phase is
// judged on what it left, but the properties of the end of a run
// (NoLostRecords, EventuallyConverges) are skipped with the reason instead
// of reporting records in flight as lost.
func TestJudgeRunStoppedEarly(t *testing.T) {
	t.Parallel()
	p, err := run.NewPlan(5, run.Options{Kinds: []string{"kgo-classic"}, Partitions: 1, Duration: time.Second}, kinds.Default().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	tp := history.TPs(p.Topics[0].Name, 0)
	events := []history.Event{
		{Index: 0, Time: 1, Type: history.Info, Process: "harness", F: history.FPhase, Value: history.Phase{Name: history.PhaseWorkload}},
		{Index: 1, Time: 2, Type: history.Info, Process: "m1", F: history.FAssigned, Value: history.Assignment{Member: "m1", Protocol: history.ProtocolClassic, Epoch: 1, Partitions: tp}},
		{Index: 2, Time: 3, Type: history.Invoke, Process: "p1", F: history.FProduce, Value: history.Produce{Topic: tp[0].Topic, Partition: 0, Seq: 1, Offset: -1}},
		{Index: 3, Time: 4, Type: history.OK, Process: "p1", F: history.FProduce, Value: history.Produce{Topic: tp[0].Topic, Partition: 0, Seq: 1, Offset: 0, Acked: true}},
	}
	for _, tc := range []struct {
		name      string
		final     bool
		wantSkips bool
	}{{"stopped in the workload", false, true}, {"reached the final phase", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			es := slices.Clone(events)
			if tc.final {
				es = append(es, history.Event{Index: 4, Time: 5, Type: history.Info, Process: "harness", F: history.FPhase, Value: history.Phase{Name: history.PhaseFinal}})
			}
			writeRunDir(t, dir, p, es)
			j, err := run.Judge(dir)
			if err != nil {
				t.Fatal(err)
			}
			holds := true
			for _, v := range j.Report.Verdicts {
				holds = holds && v.Holds
				if v.Name != "NoLostRecords" && v.Name != "EventuallyConverges" {
					continue
				}
				skipped := strings.Contains(v.Skipped, `the run was killed, or ended by an error, in its workload phase`) && strings.Contains(v.Skipped, `before its "final" phase`)
				if skipped != tc.wantSkips {
					t.Errorf("%s: skipped %q, holds %v; want the end-of-run skip: %v", v.Name, v.Skipped, v.Holds, tc.wantSkips)
				}
				if v.Name == "NoLostRecords" && !tc.wantSkips && v.Holds {
					t.Errorf("NoLostRecords holds with an acknowledged record never consumed: the fixture tests nothing")
				}
			}
			if j.Report.Holds != holds {
				t.Errorf("report holds %v, its verdicts say %v", j.Report.Holds, holds)
			}
		})
	}
}

func writeRunDir(t *testing.T, dir string, p run.Plan, events []history.Event) {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, run.PlanFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, run.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := history.Write(f, events); err != nil {
		t.Fatal(err)
	}
}

// A run directory is refused inside another run's, except for
// groupquake shrink's trials, each directly in the run's shrink folder.
func TestCheckDirShrinkTrials(t *testing.T) {
	r := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(r, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{run.PlanFile, run.HistoryFile} {
		if err := os.WriteFile(filepath.Join(r, f), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, trial := range []string{"01-none", "02-f1+3", "13-f12", "100-6-faults"} {
		if err := run.CheckDir(filepath.Join(r, run.ShrinkDir, trial)); err != nil {
			t.Errorf("a trial in the run's shrink folder is refused: %v", err)
		}
	}
	for _, d := range []string{filepath.Join(r, "other"), filepath.Join(r, run.ShrinkDir, "01-none", "deeper"), filepath.Join(r, "x", run.ShrinkDir, "01"),
		filepath.Join(r, run.ShrinkDir, "anything"), filepath.Join(r, run.ShrinkDir, "01-f1+"), filepath.Join(r, run.ShrinkDir, "1-none")} {
		if err := run.CheckDir(d); err == nil || !strings.Contains(err.Error(), "is inside the run directory") {
			t.Errorf("CheckDir(%s) = %v, want it refused inside the run directory", d, err)
		}
	}
}
