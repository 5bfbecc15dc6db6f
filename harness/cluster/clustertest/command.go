package clustertest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// BuildGroupquake builds the groupquake command into a temporary directory
// and returns the binary's path, for tests that drive it as a user would.
func BuildGroupquake(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "groupquake")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/groupquake/groupquake/cmd/groupquake")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/groupquake: %v\n%s", err, out)
	}
	return bin
}

var hooked struct {
	sync.Mutex
	dir, bin string
}

// HookedGroupquake builds the groupquake command with the test hooks
// (cmd/groupquake/testhooks.go: GROUPQUAKE_TEST_HOLD holds a run at the
// start of a phase) once per test binary, and returns the binary's path.
// RemoveBuilds (called by Main) removes it.
func HookedGroupquake(t testing.TB) string {
	t.Helper()
	hooked.Lock()
	defer hooked.Unlock()
	if hooked.bin != "" {
		return hooked.bin
	}
	dir, err := os.MkdirTemp("", "groupquake-hooked-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "groupquake")
	cmd := exec.Command("go", "build", "-tags", "groupquake_testhooks", "-o", bin, "github.com/groupquake/groupquake/cmd/groupquake")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("go build -tags groupquake_testhooks ./cmd/groupquake: %v\n%s", err, out)
	}
	hooked.dir, hooked.bin = dir, bin
	return bin
}

// RemoveBuilds removes what HookedGroupquake built.
func RemoveBuilds() {
	hooked.Lock()
	defer hooked.Unlock()
	if hooked.dir != "" {
		os.RemoveAll(hooked.dir)
		hooked.dir, hooked.bin = "", ""
	}
}

// RunGroupquake runs bin with args to completion, within two minutes, and
// returns its combined output and exit status; a command that does not end
// in time fails t.
func RunGroupquake(t testing.TB, bin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee) && ctx.Err() == nil:
		return string(out), ee.ExitCode()
	}
	t.Fatalf("groupquake %v: %v\n%s", args, err, out)
	return "", -1
}
