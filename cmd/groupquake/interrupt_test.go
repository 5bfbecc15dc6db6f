package main

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

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
)

// The interrupt tests drive the command as a user does: built in the test
// (with the groupquake_testhooks tag, testhooks.go, which lets a test hold
// a run at the start of a phase), started as a subprocess, and sent SIGINT
// or SIGTERM when the phase's marker appears on its stderr. Each checks
// that control comes back within controlBound, what the run directory holds
// then, and that nothing is left behind: no temporary directory (the
// subprocess's TMPDIR is the test's own), no child process (every process
// the command starts inherits GROUPQUAKE_TEST_MARK, which the test looks
// for in /proc), no half-written file in the run directory.

// controlBound is how long a command may take to give control back after
// an interrupt: generous against a loaded machine; the times measured are
// logged.
const controlBound = 30 * time.Second

var hooked struct {
	once sync.Once
	bin  string
	err  error
}

// hookedBinary builds the command with the test hooks, once per test
// binary, into a directory TestMain removes.
func hookedBinary(t *testing.T) string {
	t.Helper()
	hooked.once.Do(func() {
		dir, err := os.MkdirTemp("", "groupquake-interrupt-test-")
		if err != nil {
			hooked.err = err
			return
		}
		binDir = dir
		hooked.bin = filepath.Join(dir, "groupquake")
		out, err := exec.Command("go", "build", "-tags", "groupquake_testhooks", "-o", hooked.bin, ".").CombinedOutput()
		if err != nil {
			hooked.err = fmt.Errorf("go build -tags groupquake_testhooks: %v\n%s", err, out)
		}
	})
	if hooked.err != nil {
		t.Fatal(hooked.err)
	}
	return hooked.bin
}

var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// proc is the command under test.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	mark   string
	tmp    string
	mu     sync.Mutex
	stderr bytes.Buffer
	lines  chan string
	exited chan struct{}
	code   int
}

// startCmd starts the hooked command with args; env adds variables.
func startCmd(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, mark: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()), tmp: t.TempDir(), lines: make(chan string, 4096), exited: make(chan struct{})}
	p.cmd = exec.Command(hookedBinary(t), args...)
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

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitLine waits for a stderr line matching re, within bound.
func (p *proc) waitLine(re *regexp.Regexp, bound time.Duration) string {
	p.t.Helper()
	deadline := time.After(bound)
	for {
		select {
		case l := <-p.lines:
			if re.MatchString(l) {
				return l
			}
		case <-p.exited:
			p.t.Fatalf("groupquake exited (status %d) before %q appeared:\n%s", p.code, re, p.log())
		case <-deadline:
			p.t.Fatalf("%q did not appear within %s:\n%s", re, bound, p.log())
		}
	}
}

// signal sends sig and returns when it was sent.
func (p *proc) signal(sig syscall.Signal) time.Time {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("sending %v: %v", sig, err)
	}
	return time.Now()
}

// waitExit waits for the command to exit within bound of since, and
// returns its status and how long it took.
func (p *proc) waitExit(since time.Time, bound time.Duration) (int, time.Duration) {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.code, time.Since(since)
	case <-time.After(time.Until(since.Add(bound))):
		p.t.Fatalf("groupquake did not exit within %s of the signal:\n%s", bound, p.log())
	}
	return 0, 0
}

// marked returns the processes still alive that the command started
// (they carry its GROUPQUAKE_TEST_MARK).
func (p *proc) marked() []string {
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

func (p *proc) killMarked() {
	for _, l := range p.marked() {
		if pid, err := strconv.Atoi(strings.Fields(l)[0]); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// nothingLeft fails the test for any temporary file, child process or
// half-written run file the command left.
func (p *proc) nothingLeft(runDirs ...string) {
	p.t.Helper()
	if left := p.marked(); len(left) > 0 {
		p.t.Errorf("processes the command started are still running:\n  %s", strings.Join(left, "\n  "))
	}
	ents, err := os.ReadDir(p.tmp)
	if err != nil {
		p.t.Fatal(err)
	}
	for _, e := range ents {
		p.t.Errorf("left in the temporary directory: %s", e.Name())
	}
	for _, d := range runDirs {
		tmps, _ := filepath.Glob(filepath.Join(d, ".*.tmp-*"))
		for _, f := range tmps {
			p.t.Errorf("half-written file left in the run directory: %s", f)
		}
	}
}

func sigName(s syscall.Signal) string {
	if s == syscall.SIGINT {
		return "SIGINT"
	}
	return "SIGTERM"
}

func readVerdicts(t *testing.T, dir string) check.Report {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, run.VerdictsFile))
	if err != nil {
		t.Fatalf("no verdicts after the interrupt: %v", err)
	}
	defer f.Close()
	rep, err := check.ReadVerdicts(f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// teardownMark returns what the history's teardown phase says of where
// the run stopped ("" when it reached its end), and whether there is one.
func teardownMark(t *testing.T, dir string) (string, bool) {
	t.Helper()
	l, err := history.Load(filepath.Join(dir, run.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Events {
		if e.F != history.FPhase {
			continue
		}
		if p, err := history.ValueAs[history.Phase](e); err == nil && p.Name == history.PhaseTeardown {
			return p.Stopped, true
		}
	}
	return "", false
}

var holding = regexp.MustCompile(`^groupquake-test: holding in phase `)

// TestInterruptRunPhases interrupts an embedded run in each of its phases,
// with SIGINT and with SIGTERM: control comes back within controlBound,
// the verdicts (judged up to there) and the report are written, the
// history's teardown says where the run stopped, and nothing is left
// behind. A run interrupted in its teardown has reached its end: it is
// judged whole.
func TestInterruptRunPhases(t *testing.T) {
	phases := []string{history.PhaseSetup, history.PhaseWarmup, history.PhaseWorkload, history.PhaseHeal, history.PhaseQuiesce, history.PhaseFinal, history.PhaseTeardown}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		for _, phase := range phases {
			t.Run(sigName(sig)+"/"+phase, func(t *testing.T) {
				t.Parallel()
				dir := filepath.Join(t.TempDir(), "run")
				p := startCmd(t, []string{"GROUPQUAKE_TEST_HOLD=" + phase},
					"run", "--embedded", "--scenario", "member-links", "--seed", "42", "--duration", "2s", "--out", dir)
				p.waitLine(holding, 3*time.Minute)
				code, took := p.waitExit(p.signal(sig), controlBound)
				t.Logf("%s in %s: exit %d after %s", sigName(sig), phase, code, took.Round(time.Millisecond))
				log := p.log()
				if !strings.Contains(log, "groupquake: "+sigName(sig)+": stopping") {
					t.Errorf("the command did not say it was stopping:\n%s", log)
				}
				rep := readVerdicts(t, dir)
				if _, err := os.Stat(filepath.Join(dir, run.ReportFile)); err != nil {
					t.Errorf("no report after the interrupt: %v", err)
				}
				mark, ok := teardownMark(t, dir)
				if !ok {
					t.Errorf("the history has no teardown phase")
				}
				if phase == history.PhaseTeardown {
					if code != exitOK && code != exitViolation || mark != "" || rep.Stopped != "" {
						t.Errorf("interrupted in its teardown, the run had reached its end: exit %d, stopped %q / %q; want 0 or 1 and no stop", code, mark, rep.Stopped)
					}
					if _, err := os.Stat(filepath.Join(dir, run.ObservationsFile)); err != nil {
						t.Errorf("a run interrupted in its teardown has no final observations: %v", err)
					}
				} else {
					want := "interrupted by " + sigName(sig) + " in its " + phase + " phase"
					if code != exitFailed && code != exitViolation {
						t.Errorf("exit %d, want %d (interrupted) or %d (a violation up to there):\n%s", code, exitFailed, exitViolation, log)
					}
					if !strings.HasPrefix(mark, want) {
						t.Errorf("the history's teardown says %q, want %q…", mark, want)
					}
					if !strings.Contains(rep.Stopped, want) {
						t.Errorf("verdicts.json says stopped %q, want it to say %q", rep.Stopped, want)
					}
					for _, v := range rep.Verdicts {
						// In its final phase the run had reached its end: the
						// quiesce was done; only the observations are missing.
						if phase != history.PhaseFinal && (v.Name == "NoLostRecords" || v.Name == "EventuallyConverges") && !strings.Contains(v.Skipped, want) {
							t.Errorf("%s is not skipped with where the run stopped: %+v", v.Name, v)
						}
					}
				}
				p.nothingLeft(dir)
			})
		}
	}
}

// TestInterruptCombinedSeed is the run of issue 22: this combined seed,
// interrupted while its node-stop of the coordinator was in force, hung:
// its producer waited in kgo's ProduceSync for a send to the stopped node
// (kgo does not give up a request it may have written), while the heal
// that would have restarted the node waited for the producer. SIGINT once
// the node is stopped and the producer's next send is under way: control
// comes back, the run is judged up to there, nothing is left.
func TestInterruptCombinedSeed(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	p := startCmd(t, nil, "run", "--seed", "3040568321269072316", "--scenario", "combined", "--embedded", "--duration", "10s", "--out", dir)
	p.waitHistory(dir, 3*time.Minute, "the node stopped and a send to it under way", func(es []history.Event) bool {
		stopped, open := false, map[string]bool{}
		for _, e := range es {
			switch e.F {
			case history.FFaultStart:
				v, _ := e.Value.(history.Fault)
				stopped = e.Type == history.OK && v.What == "node-stop"
			case history.FFaultStop:
				stopped = false
			case history.FProduce:
				open[e.Process] = e.Type == history.Invoke
			}
		}
		for _, o := range open {
			if o && stopped {
				return true
			}
		}
		return false
	})
	code, took := p.waitExit(p.signal(syscall.SIGINT), controlBound)
	t.Logf("SIGINT with the node stopped: exit %d after %s", code, took.Round(time.Millisecond))
	if code != exitFailed && code != exitViolation {
		t.Errorf("exit %d, want %d or %d:\n%s", code, exitFailed, exitViolation, p.log())
	}
	rep := readVerdicts(t, dir)
	if !strings.Contains(rep.Stopped, "interrupted by SIGINT in its workload phase") {
		t.Errorf("verdicts.json says stopped %q, want the workload phase", rep.Stopped)
	}
	if _, err := os.Stat(filepath.Join(dir, run.ReportFile)); err != nil {
		t.Errorf("no report: %v", err)
	}
	p.nothingLeft(dir)
}

// waitHistory waits, within bound, until the history of the run in dir
// holds what cond looks for (what says it).
func (p *proc) waitHistory(dir string, bound time.Duration, what string, cond func([]history.Event) bool) {
	p.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		if l, err := history.Load(filepath.Join(dir, run.HistoryFile)); err == nil && cond(l.Events) {
			return
		}
		select {
		case <-p.exited:
			p.t.Fatalf("groupquake exited (status %d) before its history showed %s:\n%s", p.code, what, p.log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the history did not show %s within %s:\n%s", what, bound, p.log())
		}
	}
}

// TestSecondInterrupt: a run whose teardown never ends (held for good)
// ignores nothing: the first SIGINT starts the orderly stop, the second
// stops at once, removes the embedded cluster's data, names the run
// directory to judge, and leaves nothing behind.
func TestSecondInterrupt(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	p := startCmd(t, []string{"GROUPQUAKE_TEST_HOLD=teardown!"},
		"run", "--embedded", "--scenario", "baseline", "--seed", "43", "--duration", "2s", "--out", dir)
	p.waitLine(holding, 3*time.Minute)
	p.signal(syscall.SIGINT)
	p.waitLine(regexp.MustCompile(`^groupquake: SIGINT: stopping`), controlBound)
	code, took := p.waitExit(p.signal(syscall.SIGINT), controlBound)
	t.Logf("second SIGINT: exit %d after %s", code, took.Round(time.Millisecond))
	log := p.log()
	if code != exitFailed {
		t.Errorf("exit %d after a second SIGINT, want %d:\n%s", code, exitFailed, log)
	}
	for _, want := range []string{"SIGINT again: stopping at once", "judge it with: groupquake check " + dir, "nothing left behind"} {
		if !strings.Contains(log, want) {
			t.Errorf("the command did not say %q:\n%s", want, log)
		}
	}
	p.nothingLeft(dir)
}

// TestInterruptCampaign interrupts the default campaign (on the embedded
// cluster) in its second run's workload: the first run is judged whole,
// the second up to where it stopped, the third never starts; the summary
// table and the trend page are written; nothing is left behind.
func TestInterruptCampaign(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "campaign")
	p := startCmd(t, []string{"GROUPQUAKE_TEST_HOLD=workload@2"}, "run", "--embedded", "--seed", "5", "--duration", "2s", "--out", dir)
	p.waitLine(holding, 5*time.Minute)
	code, took := p.waitExit(p.signal(syscall.SIGTERM), controlBound)
	t.Logf("SIGTERM in the campaign's second run: exit %d after %s", code, took.Round(time.Millisecond))
	if code != exitFailed && code != exitViolation {
		t.Errorf("exit %d, want %d or %d:\n%s", code, exitFailed, exitViolation, p.log())
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "[0-9]-*"))
	if len(runs) != 2 {
		t.Fatalf("campaign directory holds runs %v, want the first two", runs)
	}
	if rep := readVerdicts(t, runs[0]); rep.Stopped != "" {
		t.Errorf("the first run stopped: %q", rep.Stopped)
	}
	if rep := readVerdicts(t, runs[1]); !strings.Contains(rep.Stopped, "interrupted by SIGTERM in its workload phase") {
		t.Errorf("the second run's verdicts say stopped %q", rep.Stopped)
	}
	if _, err := os.Stat(filepath.Join(dir, TrendFile)); err != nil {
		t.Errorf("no trend page: %v", err)
	}
	if !strings.Contains(p.log(), "interrupted") {
		t.Errorf("the campaign does not say it was interrupted:\n%s", p.log())
	}
	p.nothingLeft(runs...)
}

// TestInterruptJavaMembers: per-member JVMs of the Java KafkaConsumer in a
// run interrupted in its workload end with it; with a teardown that never
// ends, the second Ctrl-C kills them.
func TestInterruptJavaMembers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, hold string
		second     bool
	}{{"first", "workload", false}, {"second", "teardown!", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			p := startCmd(t, []string{"GROUPQUAKE_TEST_HOLD=" + tc.hold},
				"run", "--embedded", "--kinds", "java-consumer,consumer,java-classic-cooperative", "--seed", "44", "--duration", "2s", "--out", dir)
			p.waitLine(holding, 5*time.Minute)
			// The members keep starting while the run is held.
			jvms := func() (n int) {
				for _, l := range p.marked() {
					if strings.Contains(l, " Driver ") {
						n++
					}
				}
				return n
			}
			for deadline := time.Now().Add(time.Minute); jvms() < 2; time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d member JVMs running a minute into the hold, want 2:\n%s", jvms(), strings.Join(p.marked(), "\n"))
				}
			}
			since := p.signal(syscall.SIGINT)
			if tc.second {
				p.waitLine(regexp.MustCompile(`^groupquake: SIGINT: stopping`), controlBound)
				since = p.signal(syscall.SIGINT)
			}
			code, took := p.waitExit(since, controlBound)
			t.Logf("exit %d after %s", code, took.Round(time.Millisecond))
			if tc.second && !strings.Contains(p.log(), "groupquake: killed ") {
				t.Errorf("the second SIGINT did not say which processes it killed:\n%s", p.log())
			}
			p.nothingLeft(dir)
		})
	}
}

// TestInterruptScale interrupts a scale run on the embedded cluster in
// each of its phases (join wave, steady, one leaves, coordinator restart),
// with SIGINT and SIGTERM in turn: control comes back, the command says
// where it was interrupted, what was measured is printed, nothing is left.
func TestInterruptScale(t *testing.T) {
	for i, phase := range []string{"join wave", "steady", "one leaves", "coordinator restart"} {
		sig := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]
		t.Run(sigName(sig)+"/"+phase, func(t *testing.T) {
			t.Parallel()
			p := startCmd(t, []string{"GROUPQUAKE_TEST_HOLD=" + phase},
				"scale", "--embedded", "--members", "30", "--protocol", "consumer", "--partitions", "10", "--steady", "2s", "--seed", "1")
			p.waitLine(holding, 3*time.Minute)
			code, took := p.waitExit(p.signal(sig), controlBound)
			t.Logf("%s in %s: exit %d after %s", sigName(sig), phase, code, took.Round(time.Millisecond))
			if want := "groupquake: interrupted by " + sigName(sig) + " (what was measured up to there is printed above)"; code != exitFailed || !strings.Contains(p.log(), want) {
				t.Errorf("exit %d, want %d and %q:\n%s", code, exitFailed, want, p.log())
			}
			p.nothingLeft()
		})
	}
}

// TestInterruptDiff interrupts `diff --embedded` in its scenarios (both
// releases' embedded clusters running): control comes back and nothing is
// left.
func TestInterruptDiff(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "diff")
	p := startCmd(t, []string{"GROUPQUAKE_TEST_HOLD=workload"}, "diff", "--from", "4.1.2", "--to", "4.4.0", "--embedded", "--out", dir)
	p.waitLine(holding, 3*time.Minute)
	code, took := p.waitExit(p.signal(syscall.SIGINT), controlBound)
	t.Logf("SIGINT in the diff's scenarios: exit %d after %s", code, took.Round(time.Millisecond))
	if code != exitFailed || !strings.Contains(p.log(), "interrupted by SIGINT") {
		t.Errorf("exit %d, want %d and the interrupt named:\n%s", code, exitFailed, p.log())
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	p.nothingLeft(runs...)
}
