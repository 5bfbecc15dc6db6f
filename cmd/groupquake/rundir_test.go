package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/run"
)

// TestSameRerunAtOnce scripts the printed rerun command (no --out) started
// twice at the same moment: both choose the same default directory
// (./runs/<time>-<seed>/), the other run takes it first, then this one
// starts. This one must go to a directory of its own and leave the other's
// as it was: it was refused with exit 2 (`--out: run directory ... already
// holds ...`, for an --out the user never gave).
func TestSameRerunAtOnce(t *testing.T) {
	t.Chdir(t.TempDir())
	other := []byte(`{"seed": 77}` + "\n")
	var taken string
	runRun = func(ctx context.Context, cfg run.Config) (run.Result, error) {
		if taken == "" {
			// The other run: it claimed the directory and wrote its plan.
			taken = cfg.Dir
			if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{run.HistoryFile, run.PlanFile} {
				if err := os.WriteFile(filepath.Join(cfg.Dir, name), other, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		return run.Run(ctx, cfg)
	}
	defer func() { runRun = run.Run }()
	code, _, stderr := call(t, "run", "--seed", "77", "--scenario", "baseline", "--embedded", "--duration", "1s")
	if code == exitBadInput || strings.Contains(stderr, "already holds") {
		t.Fatalf("exit %d: the rerun was refused:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "was taken by another run started at the same moment: this run writes to "+taken+"-2") {
		t.Errorf("the rerun does not say where it went instead of %s:\n%s", taken, stderr)
	}
	for _, name := range []string{run.HistoryFile, run.PlanFile} {
		if b, err := os.ReadFile(filepath.Join(taken, name)); err != nil || string(b) != string(other) {
			t.Errorf("the other run's %s is now %q (%v)", name, b, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(taken+"-2", run.PlanFile))
	var p run.Plan
	if err != nil || json.Unmarshal(b, &p) != nil || p.Seed != 77 {
		t.Errorf("%s-2 does not hold the rerun's plan: %v %s", taken, err, b)
	}
}

// TestFreeName: the default directory of a command started again in the
// same second with the same seed is a new one beside it.
func TestFreeName(t *testing.T) {
	base := filepath.Join(t.TempDir(), "20261206T020409Z-77")
	if got := freeName(base); got != base {
		t.Errorf("freeName of a free name = %s", got)
	}
	for _, d := range []string{base, base + "-2"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := freeName(base); got != base+"-3" {
		t.Errorf("freeName with %s and -2 taken = %s, want %s-3", base, got, base)
	}
	if _, err := os.Stat(base + "-3"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("freeName made %s-3", base)
	}
}

// TestStatsSaysStoppedRuns: stats counts a run stopped before its end (here
// killed in its workload) as a run, measured up to where it stopped, and
// says so: it was counted as a whole run without a word.
func TestStatsSaysStoppedRuns(t *testing.T) {
	fx := makeFixtures(t)
	code, stdout, stderr := call(t, "stats", fx.killed)
	if code != exitOK || !strings.Contains(stdout, "runs") {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	if want := "note: 1 of the 1 runs stopped before their end (interrupted, killed, or stopped by --bound), measured up to where they stopped: " + fx.killed; !strings.Contains(stderr, want) {
		t.Errorf("stats does not say %q:\n%s", want, stderr)
	}
}

// TestSecondInterruptAfterVerdicts: a second Ctrl-C after the run wrote its
// verdicts (in the writing of its report) said the run directory held what
// was recorded, "not judged".
func TestSecondInterruptAfterVerdicts(t *testing.T) {
	judged, unjudged := filepath.Join(t.TempDir(), "judged"), filepath.Join(t.TempDir(), "unjudged")
	for _, d := range []string{judged, unjudged} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		defer writing(d)()
	}
	if err := os.WriteFile(filepath.Join(judged, run.VerdictsFile), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	if code := forceStop(&stderr, os.Interrupt); code != exitFailed {
		t.Errorf("exit %d", code)
	}
	for _, want := range []string{
		"run directory " + judged + " holds what was recorded and its verdicts: see them with: groupquake check " + judged + " (--write also writes its report)",
		"run directory " + unjudged + " holds what was recorded, not judged: judge it with: groupquake check " + unjudged,
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("a second Ctrl-C does not say %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), judged+" holds what was recorded, not judged") {
		t.Errorf("a second Ctrl-C says the judged run was not judged:\n%s", stderr.String())
	}
}

// TestReportCannotWrite: a run's report that cannot be written in its run
// directory (read-only there; here a folder in the way) exits 3 saying
// what to do, and leaves no temporary file.
func TestReportCannotWrite(t *testing.T) {
	fx := makeFixtures(t)
	if err := os.MkdirAll(filepath.Join(fx.killed, run.ReportFile, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := call(t, "report", fx.killed)
	if code != exitFailed || !strings.Contains(stderr, "writing the report: ") || !strings.HasSuffix(stderr, "; write it elsewhere with -o FILE\n") {
		t.Errorf("exit %d, want %d and a message that says where else to write:\n%s", code, exitFailed, stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(fx.killed, ".*.tmp-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestCheckOutTriesToWrite: a place whose modes let this process write but
// whose file system makes nothing there (/proc, even for root) is refused
// before anything starts; checkOut said yes and the run failed with exit 3
// when it wrote its plan. A folder it may write is accepted and left as it
// was (the folder made to try it is removed).
func TestCheckOutTriesToWrite(t *testing.T) {
	for _, dir := range []string{"/proc/groupquake-out", "/proc/groupquake-out/run"} {
		err := checkOut(dir)
		if err == nil || !strings.Contains(err.Error(), dir+" cannot be written: no folder can be made in ") {
			t.Errorf("checkOut(%s) = %v, want it refused", dir, err)
		}
	}
	tmp := t.TempDir()
	if err := checkOut(filepath.Join(tmp, "a", "b")); err != nil {
		t.Errorf("checkOut of a new folder in a temporary directory: %v", err)
	}
	if entries, err := os.ReadDir(tmp); err != nil || len(entries) != 0 {
		t.Errorf("checkOut left %v in %s (%v)", entries, tmp, err)
	}
	code, _, stderr := call(t, "run", "--out", "/proc/groupquake-out", "--scenario", "baseline", "--embedded", "--duration", "1s")
	if code != exitBadInput || !strings.Contains(stderr, "/proc/groupquake-out cannot be written") {
		t.Errorf("run --out /proc/groupquake-out: exit %d, want %d:\n%s", code, exitBadInput, stderr)
	}
}
