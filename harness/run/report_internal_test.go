package run

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStarted: a run's start is read from its directory's name (as `groupquake run` and the suites
// name them), which copying an artifact keeps, and from plan.json's time otherwise.
func TestStarted(t *testing.T) {
	want := time.Date(2026, 12, 2, 16, 44, 25, 0, time.UTC)
	for _, name := range []string{"20261202T164425-7", "20261202T164425Z-123"} {
		if got := started(filepath.Join(t.TempDir(), name)); !got.Equal(want) {
			t.Errorf("started(%s) = %s, want %s", name, got, want)
		}
	}
	d := filepath.Join(t.TempDir(), "my-run")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.WriteFile(filepath.Join(d, PlanFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(d, PlanFile), at, at); err != nil {
		t.Fatal(err)
	}
	if got := started(d); !got.Equal(at) {
		t.Errorf("started(%s) = %s, want plan.json's time %s", d, got, at)
	}
}
