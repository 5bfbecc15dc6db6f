package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/check"
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
	f, err := os.Open(filepath.Join(dir, run.VerdictsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := check.ReadVerdicts(f)
	if err != nil {
		t.Fatal(err)
	}
	if got.Holds || len(got.Verdicts) != 2 || got.Verdicts[1].Violations[0].EventIndexes[0] != 3 {
		t.Fatalf("round trip: %+v", got)
	}
}
