package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/internal/interrupt"
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

func TestMain(m *testing.M) {
	code := m.Run()
	clustertest.RemoveBuilds()
	os.Exit(code)
}

// proc is the hooked command, started.
type proc = clustertest.Process

// startCmd starts the hooked command with args; env adds variables.
func startCmd(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return clustertest.StartProcess(t, clustertest.HookedGroupquake(t), env, args...)
}

func sigName(s syscall.Signal) string {
	if s == syscall.SIGINT {
		return "SIGINT"
	}
	return "SIGTERM"
}

// interruptHeld waits (up to within) for p to hold where the test hook
// holds it, then interrupts it (signalAndWait).
func interruptHeld(t *testing.T, p *proc, within time.Duration, sig syscall.Signal, when string) int {
	t.Helper()
	p.WaitLine(holding, within)
	return signalAndWait(t, p, sig, when)
}

// signalAndWait sends sig to p, waits for it to exit (within controlBound) and
// logs the exit, naming when the signal came.
func signalAndWait(t *testing.T, p *proc, sig syscall.Signal, when string) int {
	t.Helper()
	code, took := p.WaitExit(p.Signal(sig), controlBound)
	t.Logf("%s %s: exit %d after %s", sigName(sig), when, code, took.Round(time.Millisecond))
	return code
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
				code := interruptHeld(t, p, 3*time.Minute, sig, "in "+phase)
				log := p.Log()
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
					if b, _ := os.ReadFile(filepath.Join(dir, run.ReportFile)); !strings.Contains(string(b), "the run was "+want) {
						t.Errorf("report.html does not say %q", "the run was "+want)
					}
					// check --json says the same, in the run schema.
					if _, out := jsonCall(t, "check", "--json", dir); !strings.Contains(fmt.Sprint(validateJSON(t, "run", out)["stopped"]), want) {
						t.Errorf("check --json does not say stopped %q", want)
					}
					// Held at the start of its setup or warm-up, no member had
					// joined: no checker but HistoryWellFormed had anything to
					// judge, and none of them may say it holds.
					if phase == history.PhaseSetup || phase == history.PhaseWarmup {
						for _, v := range rep.Verdicts {
							if v.Name != check.NameHistoryWellFormed && v.Skipped == "" {
								t.Errorf("%s holds in a run stopped before any member joined: %+v", v.Name, v)
							}
						}
					}
					for _, v := range rep.Verdicts {
						// In its final phase the run had reached its end: the
						// quiesce was done; only the observations are missing.
						if phase != history.PhaseFinal && (v.Name == "NoLostRecords" || v.Name == "EventuallyConverges") && !strings.Contains(v.Skipped, want) {
							t.Errorf("%s is not skipped with where the run stopped: %+v", v.Name, v)
						}
					}
				}
				p.NothingLeft(dir)
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
	waitHistory(t, p, dir, 3*time.Minute, "the node stopped and a send to it under way", func(es []history.Event) bool {
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
	code := signalAndWait(t, p, syscall.SIGINT, "with the node stopped")
	if code != exitFailed && code != exitViolation {
		t.Errorf("exit %d, want %d or %d:\n%s", code, exitFailed, exitViolation, p.Log())
	}
	rep := readVerdicts(t, dir)
	if !strings.Contains(rep.Stopped, "interrupted by SIGINT in its workload phase") {
		t.Errorf("verdicts.json says stopped %q, want the workload phase", rep.Stopped)
	}
	if _, err := os.Stat(filepath.Join(dir, run.ReportFile)); err != nil {
		t.Errorf("no report: %v", err)
	}
	p.NothingLeft(dir)
}

// waitHistory waits, within bound, until the history of the run in dir
// holds what cond looks for (what says it).
func waitHistory(t *testing.T, p *proc, dir string, bound time.Duration, what string, cond func([]history.Event) bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		if l, err := history.Load(filepath.Join(dir, run.HistoryFile)); err == nil && cond(l.Events) {
			return
		}
		select {
		case <-p.Exited():
			t.Fatalf("groupquake exited (status %d) before its history showed %s:\n%s", p.Code(), what, p.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the history did not show %s within %s:\n%s", what, bound, p.Log())
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
	p.WaitLine(holding, 3*time.Minute)
	p.Signal(syscall.SIGINT)
	p.WaitLine(regexp.MustCompile(`^groupquake: SIGINT: stopping`), controlBound)
	code := signalAndWait(t, p, syscall.SIGINT, "a second time")
	log := p.Log()
	if code != exitFailed {
		t.Errorf("exit %d after a second SIGINT, want %d:\n%s", code, exitFailed, log)
	}
	// The rerun command again, as the first Ctrl-C says it: the second
	// stops at once, and what the run printed at its start may be far up.
	for _, want := range []string{"SIGINT again: stopping at once", "judge it with: groupquake check " + dir, "\ngroupquake: rerun with: groupquake run --seed 43 --scenario baseline --embedded", "nothing left behind"} {
		if !strings.Contains(log, want) {
			t.Errorf("the command did not say %q:\n%s", want, log)
		}
	}
	p.NothingLeft(dir)
}

// TestInterruptCampaign interrupts the default campaign (on the embedded
// cluster) in its second run's workload: the first run is judged whole,
// the second up to where it stopped, the third never starts; the summary
// table and the trend page are written; nothing is left behind.
func TestInterruptCampaign(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "campaign")
	p := startCmd(t, []string{"GROUPQUAKE_TEST_HOLD=workload@2"}, "run", "--embedded", "--seed", "5", "--duration", "2s", "--out", dir)
	code := interruptHeld(t, p, 5*time.Minute, syscall.SIGTERM, "in the campaign's second run")
	if code != exitFailed && code != exitViolation {
		t.Errorf("exit %d, want %d or %d:\n%s", code, exitFailed, exitViolation, p.Log())
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
	if !strings.Contains(p.Log(), "interrupted") {
		t.Errorf("the campaign does not say it was interrupted:\n%s", p.Log())
	}
	p.NothingLeft(runs...)
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
			p.WaitLine(holding, 5*time.Minute)
			// The members keep starting while the run is held.
			jvms := func() (n int) {
				for _, l := range p.Marked() {
					if strings.Contains(l, " Driver ") {
						n++
					}
				}
				return n
			}
			for deadline := time.Now().Add(time.Minute); jvms() < 2; time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d member JVMs running a minute into the hold, want 2:\n%s", jvms(), strings.Join(p.Marked(), "\n"))
				}
			}
			since := p.Signal(syscall.SIGINT)
			if tc.second {
				p.WaitLine(regexp.MustCompile(`^groupquake: SIGINT: stopping`), controlBound)
				since = p.Signal(syscall.SIGINT)
			}
			code, took := p.WaitExit(since, controlBound)
			t.Logf("exit %d after %s", code, took.Round(time.Millisecond))
			if tc.second && !strings.Contains(p.Log(), "groupquake: killed ") {
				t.Errorf("the second SIGINT did not say which processes it killed:\n%s", p.Log())
			}
			p.NothingLeft(dir)
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
			code := interruptHeld(t, p, 3*time.Minute, sig, "in "+phase)
			if want := "groupquake: interrupted by " + sigName(sig) + " (what was measured up to there is printed above)"; code != exitFailed || !strings.Contains(p.Log(), want) {
				t.Errorf("exit %d, want %d and %q:\n%s", code, exitFailed, want, p.Log())
			}
			p.NothingLeft()
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
	code := interruptHeld(t, p, 3*time.Minute, syscall.SIGINT, "in the diff's scenarios")
	if code != exitFailed || !strings.Contains(p.Log(), "interrupted by SIGINT") {
		t.Errorf("exit %d, want %d and the interrupt named:\n%s", code, exitFailed, p.Log())
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	p.NothingLeft(runs...)
}

// TestInterruptCampaignClusterStart: a campaign interrupted while its
// cluster starts says so and how to rerun the campaign, as an interrupted
// run does, and leaves no campaign directory. It said only that the
// cluster "could not be started" with the start's own error (seen on a
// container cluster: `node 1 has not logged "Kafka Server started"`). Here
// the signal comes first and the cluster start (of an external cluster)
// meets the cancelled context.
func TestInterruptCampaignClusterStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "campaign")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(interrupt.Signal{Sig: os.Interrupt})
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, []string{"run", "--bootstrap", closedPort(t), "--seed", "9", "--duration", "2s", "--out", dir}, &stdout, &stderr)
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{"interrupted by SIGINT while the campaign's cluster started", "rerun the campaign with: groupquake run --seed 9 "} {
		if !strings.Contains(last, want) {
			t.Errorf("last line %q does not say %q", last, want)
		}
	}
	if code != exitFailed {
		t.Errorf("exit %d, want %d:\n%s", code, exitFailed, stderr.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the campaign directory %s was made (stat: %v)", dir, err)
	}
}
