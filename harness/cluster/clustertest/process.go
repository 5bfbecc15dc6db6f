package clustertest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is the groupquake command started as a user starts it, for the
// interrupt tests: its stderr is read line by line (WaitLine), signals are
// sent to it (Signal), and what it leaves behind is looked for
// (NothingLeft): its TMPDIR is a directory of the test's own, and every
// process it starts inherits GROUPQUAKE_TEST_MARK, which the test looks for
// in /proc.
type Process struct {
	t      testing.TB
	cmd    *exec.Cmd
	mark   string
	tmp    string
	mu     sync.Mutex
	stderr bytes.Buffer
	lines  chan string
	exited chan struct{}
	code   int
}

// StartProcess starts bin with args; env adds variables. The process is
// killed, with whatever it started, when t ends.
func StartProcess(t testing.TB, bin string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{t: t, mark: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()), tmp: t.TempDir(), lines: make(chan string, 4096), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(append(os.Environ(), "TMPDIR="+p.tmp, "GROUPQUAKE_TEST_MARK="+p.mark), env...)
	p.cmd.Stdout = io.Discard
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		err := p.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
		default:
			p.code = -1
		}
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
		p.killMarked()
	})
	return p
}

// Log is what the process wrote to stderr so far.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Exited is closed once the process exited; Code is its status then.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Code is the exit status, once Exited.
func (p *Process) Code() int { return p.code }

// WaitLine waits for a stderr line matching re, within bound, and returns
// it with re's submatches.
func (p *Process) WaitLine(re *regexp.Regexp, bound time.Duration) []string {
	p.t.Helper()
	deadline := time.After(bound)
	for {
		select {
		case l := <-p.lines:
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-p.exited:
			p.t.Fatalf("groupquake exited (status %d) before %q appeared:\n%s", p.code, re, p.Log())
		case <-deadline:
			p.t.Fatalf("%q did not appear within %s:\n%s", re, bound, p.Log())
		}
	}
}

// Signal sends sig and returns when it was sent.
func (p *Process) Signal(sig syscall.Signal) time.Time {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("sending %v: %v", sig, err)
	}
	return time.Now()
}

// WaitExit waits for the process to exit within bound of since, and
// returns its status and how long it took.
func (p *Process) WaitExit(since time.Time, bound time.Duration) (int, time.Duration) {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.code, time.Since(since)
	case <-time.After(time.Until(since.Add(bound))):
		p.t.Fatalf("groupquake did not exit within %s of the signal:\n%s", bound, p.Log())
	}
	return 0, 0
}

// Marked returns the processes still alive that the command started (they
// carry its GROUPQUAKE_TEST_MARK), with their command lines.
func (p *Process) Marked() []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	want := []byte("GROUPQUAKE_TEST_MARK=" + p.mark + "\x00")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
			continue // a zombie is dead; its parent reaps it
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return out
}

func (p *Process) killMarked() {
	for _, l := range p.Marked() {
		if pid, err := strconv.Atoi(strings.Fields(l)[0]); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// NothingLeft fails the test for any temporary file, child process or
// half-written file in the run directories dirs that the command left.
func (p *Process) NothingLeft(dirs ...string) {
	p.t.Helper()
	if left := p.Marked(); len(left) > 0 {
		p.t.Errorf("processes the command started are still running:\n  %s", strings.Join(left, "\n  "))
	}
	ents, err := os.ReadDir(p.tmp)
	if err != nil {
		p.t.Fatal(err)
	}
	for _, e := range ents {
		p.t.Errorf("left in the temporary directory: %s", e.Name())
	}
	for _, d := range dirs {
		tmps, _ := filepath.Glob(filepath.Join(d, ".*.tmp-*"))
		for _, f := range tmps {
			p.t.Errorf("half-written file left in %s: %s", d, filepath.Base(f))
		}
	}
}
