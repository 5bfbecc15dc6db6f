// Package interrupt is what Ctrl-C (SIGINT) and SIGTERM must reach in
// groupquake: the context a signal cancels, with the signal as its cause,
// and the things this process starts outside itself that an interrupt must
// not leave behind: child processes (JVMs, mvn, javac, debootstrap, tar) and
// temporary directories.
//
// A child started with Command runs in a process group of its own (a
// terminal's Ctrl-C reaches groupquake alone, which then stops it in order),
// dies with this process (the kernel sends it SIGKILL when groupquake dies,
// even by SIGKILL), is interrupted when its context ends (SIGINT to its
// group, SIGKILL to the group after Grace) and is known to KillAll until it
// has been waited for. A directory made with MkdirTemp is known to
// RemoveTemps until RemoveTemp removed it. The command's second Ctrl-C
// calls both before it exits.
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"
)

// Signal is the cause of a context that a signal cancelled.
type Signal struct{ Sig os.Signal }

func (s Signal) Error() string { return "interrupted by " + Name(s.Sig) }

// Name is the signal's conventional name: SIGINT, SIGTERM.
func Name(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case nil:
		return "a signal"
	}
	return sig.String()
}

// Of returns the signal that cancelled ctx (or one of its parents), if a
// signal did.
func Of(ctx context.Context) (os.Signal, bool) {
	var s Signal
	if ctx == nil || !errors.As(context.Cause(ctx), &s) {
		return nil, false
	}
	return s.Sig, true
}

// Is reports whether err is, or wraps, an interrupt by a signal.
func Is(err error) bool {
	var s Signal
	return errors.As(err, &s)
}

// Notify returns a context that the first SIGINT or SIGTERM cancels, with
// Signal as its cause, after calling first. The second calls second (which
// is expected to clean up at once and exit); a third signal while second
// runs calls third (expected to exit at once). stop ends the relaying.
func Notify(parent context.Context, first, second, third func(os.Signal)) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 3)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				n++
				switch n {
				case 1:
					if first != nil {
						first(sig)
					}
					cancel(Signal{sig})
				case 2:
					if second != nil {
						go second(sig)
					}
				default:
					if third != nil {
						third(sig)
					}
				}
			}
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel(context.Canceled)
		})
	}
}

// Grace is how long a child process has, after the SIGINT that ends it,
// before its process group is killed.
const Grace = 5 * time.Second

// children are the process groups started by Command and not waited for
// yet: process group id → the command line.
var children struct {
	sync.Mutex
	m map[int]string
}

// Command returns a command that, once started with Start (or Run,
// Output, CombinedOutput), runs in a process group of its own, dies with
// this process, and is interrupted when ctx ends: SIGINT to its group
// (debootstrap unmounts what it mounted, a JVM runs its shutdown hooks),
// SIGKILL to the group Grace later.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		pid := cmd.Process.Pid
		err := syscall.Kill(-pid, syscall.SIGINT)
		// Whatever of the group outlived the SIGINT (a background child
		// ignores it) is killed: the group's id stays taken while any of
		// its processes lives, so this reaches no other process.
		time.AfterFunc(Grace, func() { syscall.Kill(-pid, syscall.SIGKILL) })
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	// After the cancel, the group's pipes are closed this long later even
	// when a grandchild still holds them.
	cmd.WaitDelay = Grace + 2*time.Second
	return cmd
}

func alive(pgid int) bool {
	children.Lock()
	defer children.Unlock()
	_, ok := children.m[pgid]
	return ok
}

// Start starts cmd (made by Command) and keeps its process group for
// KillAll until Wait.
func Start(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	children.Lock()
	if children.m == nil {
		children.m = map[int]string{}
	}
	children.m[cmd.Process.Pid] = cmd.String()
	children.Unlock()
	return nil
}

// Wait waits for cmd, started with Start, and forgets its group.
func Wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	if cmd.Process != nil {
		children.Lock()
		delete(children.m, cmd.Process.Pid)
		children.Unlock()
	}
	return err
}

// Run starts cmd and waits for it.
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	return Wait(cmd)
}

// CombinedOutput runs cmd and returns its standard output and error.
func CombinedOutput(cmd *exec.Cmd) ([]byte, error) {
	var b syncBuffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := Run(cmd)
	return b.Bytes(), err
}

// Output runs cmd and returns its standard output.
func Output(cmd *exec.Cmd) ([]byte, error) {
	var b syncBuffer
	cmd.Stdout = &b
	err := Run(cmd)
	return b.Bytes(), err
}

// Kill sends SIGKILL to cmd's process group (cmd made by Command and
// started with Start): the process and whatever it started. Once Wait
// returned it does nothing (the group's id may belong to another process
// by then).
func Kill(cmd *exec.Cmd) error {
	if cmd.Process == nil || !alive(cmd.Process.Pid) {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// KillAll sends SIGKILL to every process group started by Command and not
// waited for yet, and returns their command lines.
func KillAll() []string {
	return childrenWhere(func(pgid int) bool { return syscall.Kill(-pgid, syscall.SIGKILL) == nil })
}

// Children returns the command lines of the child process groups still
// running (started by Command, not waited for).
func Children() []string {
	return childrenWhere(func(int) bool { return true })
}

// childrenWhere returns, sorted, the command lines of the child process
// groups for which keep holds.
func childrenWhere(keep func(pgid int) bool) []string {
	children.Lock()
	defer children.Unlock()
	var out []string
	for pgid, what := range children.m {
		if keep(pgid) {
			out = append(out, fmt.Sprintf("%s (process group %d)", what, pgid))
		}
	}
	sort.Strings(out)
	return out
}

// temps are the temporary directories made by MkdirTemp and not removed.
var temps struct {
	sync.Mutex
	m map[string]bool
}

// MkdirTemp makes a temporary directory as os.MkdirTemp does, and keeps it
// for RemoveTemps until RemoveTemp or Keep.
func MkdirTemp(dir, pattern string) (string, error) {
	d, err := os.MkdirTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	Track(d)
	return d, nil
}

// Track keeps path for RemoveTemps (a temporary directory made elsewhere).
func Track(path string) {
	temps.Lock()
	defer temps.Unlock()
	if temps.m == nil {
		temps.m = map[string]bool{}
	}
	temps.m[path] = true
}

// Keep forgets path: it is no longer temporary (it was renamed into place).
func Keep(path string) {
	temps.Lock()
	defer temps.Unlock()
	delete(temps.m, path)
}

// RemoveTemp removes path with RemoveTree and forgets it.
func RemoveTemp(path string) error {
	err := RemoveTree(path)
	if err == nil {
		Keep(path)
	}
	return err
}

// RemoveTemps removes every directory made by MkdirTemp (or Tracked) and
// not removed yet, and returns those it could not remove, with why.
func RemoveTemps() []string {
	temps.Lock()
	var ds []string
	for d := range temps.m {
		ds = append(ds, d)
	}
	temps.Unlock()
	sort.Strings(ds)
	var left []string
	for _, d := range ds {
		if err := RemoveTemp(d); err != nil {
			left = append(left, fmt.Sprintf("%s (%v)", d, err))
		}
	}
	return left
}

// Temps returns the temporary directories not removed yet.
func Temps() []string {
	temps.Lock()
	defer temps.Unlock()
	var out []string
	for d := range temps.m {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b...)
}
