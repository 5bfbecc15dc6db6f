package run

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/internal/interrupt"
)

// TestRunDirTakenByAnotherRun scripts two runs given the same directory at
// once: the second checked the directory (no run there), then the first
// started there (its plan and history), then the second starts. The second
// must write nothing into the first's directory: before runs claimed the
// directory with their history, it wrote its plan over the first's and only
// then failed on the history, and `groupquake check` judged the first run's
// history against the second's plan (false violations, seen with two
// `groupquake run --out D` at once).
func TestRunDirTakenByAnotherRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	firstPlan := []byte(`{"seed": 1}` + "\n")
	firstHistory := []byte(`{"index":0,"time":1000000,"type":"info","process":"harness","f":"phase","value":{"name":"setup"}}` + "\n")
	beforeClaim = func(d string) {
		for name, b := range map[string][]byte{PlanFile: firstPlan, HistoryFile: firstHistory} {
			if err := os.WriteFile(filepath.Join(d, name), b, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { beforeClaim = nil }()
	p, err := NewPlan(2, Options{Embedded: true, Kinds: []string{"consumer"}, Duration: time.Second, Partitions: 1}, kinds.Default().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing may start
	_, err = Run(ctx, Config{Plan: p, Dir: dir})
	if !errors.Is(err, ErrDirTaken) {
		t.Errorf("Run into a directory another run took: %v, want ErrDirTaken", err)
	}
	for name, want := range map[string][]byte{PlanFile: firstPlan, HistoryFile: firstHistory} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s of the first run is now %q (%v), want it as the first run wrote it: %q", name, got, err, want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the run directory holds %v, want only the first run's plan and history", names)
	}
}

// TestCheckDirRefusesAClaimedDir: a directory holding a history.jsonl
// without a plan.json (a run starting there now, or one killed before it
// wrote its plan) is refused before the run starts.
func TestCheckDirRefusesAClaimedDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, HistoryFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(dir); err == nil || !bytes.Contains([]byte(err.Error()), []byte("already holds a history.jsonl without a plan.json")) {
		t.Errorf("CheckDir of a directory with a history and no plan: %v", err)
	}
}

// TestSecondInterruptRemovesAtomicTemp scripts a second Ctrl-C (which
// removes the process's temporary files and exits at once) while a result
// is being written: its temporary file, whole but not yet renamed into
// place, must go with the others. It was left in the run directory
// (.report.html.tmp-2226961539, seen on a container run whose second
// Ctrl-C came as its report was written).
func TestSecondInterruptRemovesAtomicTemp(t *testing.T) {
	dir := t.TempDir()
	var left []string
	beforeRename = func(tmp string) {
		interrupt.RemoveTemps() // what the second Ctrl-C does before it exits
		left, _ = filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	}
	defer func() { beforeRename = nil }()
	_ = writeFileAtomic(filepath.Join(dir, ReportFile), []byte("<html>"), 0o644)
	if len(left) > 0 {
		t.Errorf("left in the run directory by a second Ctrl-C: %v", left)
	}
	if ts := interrupt.Temps(); len(ts) > 0 {
		t.Errorf("still tracked after the write: %v", ts)
	}
}
