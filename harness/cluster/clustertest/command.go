package clustertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// BuildGroupquake builds the groupquake command and returns the binary's
// path, for tests that drive it as a user would: once per test binary when
// its TestMain runs the tests with Main (RemoveBuilds removes it; a build
// links for seconds), else into t's temporary directory.
func BuildGroupquake(t testing.TB) string {
	t.Helper()
	shared.mu.Lock()
	once := shared.main
	shared.mu.Unlock()
	if !once {
		bin := filepath.Join(t.TempDir(), "groupquake")
		if err := build(bin); err != nil {
			t.Fatal(err)
		}
		return bin
	}
	return built(t, &plain)
}

// HookedGroupquake builds the groupquake command with the test hooks
// (cmd/groupquake/testhooks.go: GROUPQUAKE_TEST_HOLD holds a run at the
// start of a phase) once per test binary, and returns the binary's path.
// RemoveBuilds (called by Main) removes it.
func HookedGroupquake(t testing.TB) string {
	t.Helper()
	return built(t, &hooked)
}

// aBuild is a groupquake binary built once per test binary.
type aBuild struct {
	sync.Mutex
	dir, bin string
	tags     []string
}

var (
	plain  aBuild
	hooked = aBuild{tags: []string{"-tags", "groupquake_testhooks"}}
)

// built returns b's binary, built on the first call.
func built(t testing.TB, b *aBuild) string {
	t.Helper()
	b.Lock()
	defer b.Unlock()
	if b.bin != "" {
		return b.bin
	}
	dir, err := os.MkdirTemp("", "groupquake-build-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "groupquake")
	if err := build(bin, b.tags...); err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	b.dir, b.bin = dir, bin
	return bin
}

// build builds the groupquake command into bin, with flags.
func build(bin string, flags ...string) error {
	args := append(append([]string{"build"}, flags...), "-o", bin, "github.com/groupquake/groupquake/cmd/groupquake")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// RemoveBuilds removes what BuildGroupquake and HookedGroupquake built once
// per test binary.
func RemoveBuilds() {
	for _, b := range []*aBuild{&plain, &hooked} {
		b.Lock()
		if b.dir != "" {
			os.RemoveAll(b.dir)
			b.dir, b.bin = "", ""
		}
		b.Unlock()
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
