package interrupt

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alivePID reports whether process pid exists and is not a zombie.
func alivePID(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(st))
	return len(f) > 2 && f[2] != "Z"
}

// grandchild starts, with Command, a shell that starts a sleep in the
// background and prints its pid, and returns the command and that pid.
func grandchild(t *testing.T, ctx context.Context) (*exec.Cmd, int) {
	t.Helper()
	cmd := Command(ctx, "sh", "-c", "sleep 300 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	var b [32]byte
	n, err := out.Read(b[:])
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		t.Fatalf("the shell printed %q", b[:n])
	}
	return cmd, pid
}

// TestCommandEndsItsGroupWithTheContext: cancelling the context of a
// command ends what it started too (the shell's background sleep), and the
// command is known to Children until waited for.
func TestCommandEndsItsGroupWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd, sleeper := grandchild(t, ctx)
	if len(Children()) == 0 {
		t.Errorf("a started command is not among Children")
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- Wait(cmd) }()
	select {
	case <-done:
	case <-time.After(Grace + 5*time.Second):
		t.Fatal("the command did not end after its context was cancelled")
	}
	for deadline := time.Now().Add(Grace + 5*time.Second); alivePID(sleeper); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(sleeper, syscall.SIGKILL)
			t.Fatalf("the command's own child %d outlived the cancel", sleeper)
		}
	}
	for _, c := range Children() {
		if strings.Contains(c, "sleep 300") {
			t.Errorf("a waited command is still among Children: %s", c)
		}
	}
}

// TestKillAll kills every group started and not waited for.
func TestKillAll(t *testing.T) {
	cmd, sleeper := grandchild(t, context.Background())
	killed := KillAll()
	if len(killed) == 0 || !strings.Contains(strings.Join(killed, "\n"), "sleep 300") {
		t.Errorf("KillAll says it killed %v", killed)
	}
	err := Wait(cmd)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the shell ended with %v, want SIGKILL", err)
	}
	for deadline := time.Now().Add(5 * time.Second); alivePID(sleeper); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(sleeper, syscall.SIGKILL)
			t.Fatalf("its child %d outlived KillAll", sleeper)
		}
	}
}

// TestTemps: MkdirTemp's directories are removed by RemoveTemps unless
// removed (or kept) before.
func TestTemps(t *testing.T) {
	root := t.TempDir()
	a, err := MkdirTemp(root, "a-")
	if err != nil {
		t.Fatal(err)
	}
	b, err := MkdirTemp(root, "b-")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(a, "f"), []byte("x"), 0o644)
	Keep(b)
	if left := RemoveTemps(); len(left) > 0 {
		t.Fatalf("RemoveTemps left %v", left)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("%s survived RemoveTemps: %v", a, err)
	}
	if _, err := os.Stat(b); err != nil {
		t.Errorf("kept %s was removed: %v", b, err)
	}
}

// TestRemoveTreeDetachesMounts: a file system mounted inside the tree (as
// an interrupted debootstrap leaves /proc) is detached, not removed
// through; the tree is then removed. Mounting needs root: without it the
// test says so and stops.
func TestRemoveTreeDetachesMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a file system needs root")
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	outside := t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("the host's"), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(root, "proc")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(outside, mnt, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("bind mount not permitted here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	if err := RemoveTree(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("%s was not removed: %v", root, err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "the host's" {
		t.Errorf("RemoveTree removed through the mount: %q, %v", b, err)
	}
}

// TestNotify: the first signal cancels the context with the signal as its
// cause; the second calls second.
func TestNotify(t *testing.T) {
	second := make(chan os.Signal, 1)
	ctx, stop := Notify(context.Background(), nil, func(s os.Signal) { second <- s }, nil)
	defer stop()
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
	if sig, ok := Of(ctx); !ok || sig != syscall.SIGTERM || !Is(context.Cause(ctx)) {
		t.Errorf("the context's cause is %v, want SIGTERM", context.Cause(ctx))
	}
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case s := <-second:
		if s != os.Interrupt {
			t.Errorf("second got %v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second signal did not call second")
	}
}
