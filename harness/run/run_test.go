package run_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

func TestMain(m *testing.M) {
	code := clustertest.Main(m)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// The groupquake command, built once for every test of the package that
// drives it (a build takes seconds of both cores).
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func groupquakeBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "groupquake-run-test-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "groupquake")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/groupquake/groupquake/cmd/groupquake").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build ./cmd/groupquake: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// TestBaselineRun runs groupquake's two members, each in a group of its
// protocol beside kgo's, against a one-node cluster of every tested
// version, with no faults: the run directory must be complete, every
// checker must hold with none skipped (RecoveredStateMatchesLog replays
// the broker's records), and judging a copy of the directory offline must
// give the same verdicts. The two runs of a version share its cluster: each
// plan names its own group and topic after its seed. So does TestKilledRun
// on the first version's (clustertest.Shared).
func TestBaselineRun(t *testing.T) {
	for _, v := range clustertest.Versions() {
		t.Run(v, func(t *testing.T) {
			c := clustertest.Shared(t, cluster.Config{Version: v, Nodes: 1})
			for _, kinds := range [][]string{{"classic", "kgo-classic"}, {"consumer", "kgo-consumer"}} {
				t.Run(kinds[0], func(t *testing.T) { baselineRun(t, c, v, kinds) })
			}
		})
	}
}

// baselineRun runs one group of groupquake's member of a protocol beside
// kgo's on c, with no faults, and requires every checker to hold, none
// skipped.
func baselineRun(t *testing.T, c cluster.Handle, v string, named []string) {
	{
		{
			reg := kinds.Default()
			seed := uint64(time.Now().UnixNano())
			p, err := run.NewPlan(seed, run.Options{
				Scenario:   run.ScenarioBaseline,
				Kafka:      v,
				Nodes:      1,
				Kinds:      named,
				Members:    4,
				Partitions: 6,
				Duration:   10 * time.Second,
				Rate:       30,
			}, reg.Kinds())
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "run")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			res, err := run.Run(ctx, run.Config{Plan: p, Dir: dir, Registry: reg, Cluster: c, Logf: t.Logf})
			if err != nil {
				t.Fatalf("run: %v (notes: %v)", err, res.Notes)
			}
			for _, f := range []string{run.PlanFile, run.RerunFile, run.HistoryFile, run.ObservationsFile, run.VerdictsFile, run.ReportFile} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("run directory lacks %s: %v", f, err)
				}
			}
			requireHolds(t, res.Report)

			loaded, err := history.Load(filepath.Join(dir, run.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			need := map[string]bool{history.FProduce: false, history.FConsume: false, history.FCommit: false, history.FAssigned: false, history.FDescribe: false}
			for _, e := range loaded.Events {
				if _, ok := need[e.F]; ok {
					need[e.F] = true
				}
			}
			for f, seen := range need {
				if !seen {
					t.Errorf("history has no %q event", f)
				}
			}
			obs, err := history.LoadObservations(filepath.Join(dir, run.ObservationsFile))
			if err != nil {
				t.Fatal(err)
			}
			if !obs.Final.HasRecords || len(obs.Final.Records) == 0 || !obs.Final.HasCommitted || obs.Final.Group == nil {
				t.Errorf("final observation incomplete: records %v (%d), committed %v, group %v", obs.Final.HasRecords, len(obs.Final.Records), obs.Final.HasCommitted, obs.Final.Group != nil)
			}

			// The same verdicts offline, from a copy, through the command.
			cp := filepath.Join(t.TempDir(), "copy")
			copyDir(t, dir, cp)
			if err := os.Remove(filepath.Join(cp, run.VerdictsFile)); err != nil {
				t.Fatal(err)
			}
			out, code := clustertest.RunGroupquake(t, groupquakeBin(t), "check", "--write", cp)
			if code != 0 {
				t.Fatalf("groupquake check on a copy exits %d, want 0:\n%s", code, out)
			}
			offline, err := run.ReadVerdicts(cp)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := verdictSummary(res.Report), verdictSummary(offline); a != b {
				t.Errorf("offline verdicts differ:\nrun:     %s\noffline: %s", a, b)
			}
			if t.Failed() {
				t.Logf("rerun: %s", p.Command())
			}
		}
	}
}

func requireHolds(t *testing.T, rep check.Report) {
	t.Helper()
	for _, v := range rep.Verdicts {
		switch {
		case v.Skipped != "":
			t.Errorf("%s skipped: %s", v.Name, v.Skipped)
		case !v.Holds:
			for _, x := range v.Violations {
				t.Errorf("%s: %s (events %v)", v.Name, x.Message, x.EventIndexes)
			}
		default:
			t.Logf("%s holds: %s", v.Name, strings.Join(v.Notes, "; "))
		}
	}
}

func verdictSummary(rep check.Report) string {
	var b strings.Builder
	for _, v := range rep.Verdicts {
		b.WriteString(v.Name)
		if v.Holds {
			b.WriteString("=holds ")
		} else {
			b.WriteString("=VIOLATED ")
		}
	}
	return b.String()
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cutShort fails t unless what check printed of a killed run is a run cut
// short: exit 3 saying it does not hold, or exit 1 when a violation was
// found up to where it stopped; never 0 (a hold).
func cutShort(t *testing.T, what, out string, code int) {
	t.Helper()
	switch {
	case code == 3 && !strings.Contains(out, "cut short, so it does not hold"):
		t.Errorf("%s exits 3 without saying the run was cut short and does not hold:\n%s", what, out)
	case code != 3 && code != 1:
		t.Fatalf("%s exits %d, want 3 (cut short) or 1 (a violation up to where it stopped):\n%s", what, code, out)
	}
}

// TestKilledRun kills `groupquake run` with SIGKILL in the middle of its
// workload and judges what it left: the history is read up to where it
// stopped and judged (exit 3, cut short, or 1 on a violation; never 0, a
// hold, nor 2), a history cut in the middle of a
// line is reported as truncated, and a directory without plan.json or
// history.jsonl is refused with exit 2 and what is missing.
func TestKilledRun(t *testing.T) {
	v := clustertest.Versions()[0]
	c := clustertest.Shared(t, cluster.Config{Version: v, Nodes: 1}) // TestBaselineRun's: the killed run names its group and topic after its seed
	bin := groupquakeBin(t)
	dir := filepath.Join(t.TempDir(), "killed")
	logf, err := os.Create(filepath.Join(t.TempDir(), "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	seed := strconv.FormatInt(time.Now().UnixNano()>>1, 10)
	cmd := exec.Command(bin, "run", "--seed", seed, "--bootstrap", strings.Join(c.Bootstrap(), ","),
		"--kinds", "kgo-classic,kgo-consumer", "--members", "2", "--partitions", "4", "--rate", "40", "--duration", "2m", "--out", dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	}()

	// Kill it once the workload is under way: the workload phase began and
	// members consumed records.
	hist := filepath.Join(dir, run.HistoryFile)
	deadline := time.Now().Add(4 * time.Minute)
	for {
		b, _ := os.ReadFile(hist)
		if bytes.Contains(b, []byte(`"name":"workload"`)) && bytes.Count(b, []byte(`"f":"consume"`)) >= 20 {
			break
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("groupquake run exited (%v) before the workload was under way:\n%s", err, log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("the workload did not get under way within 4 minutes:\n%s", log)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil {
		t.Fatal("groupquake run exited cleanly after SIGKILL")
	}
	for _, f := range []string{run.ObservationsFile, run.VerdictsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("a run killed in its workload has %s", f)
		}
	}

	out, code := clustertest.RunGroupquake(t, bin, "check", dir)
	cutShort(t, "check of the killed run", out, code)
	if !strings.Contains(out, run.ObservationsFile+" is absent") {
		t.Errorf("check does not say the final observations are missing:\n%s", out)
	}
	t.Logf("check of the killed run (exit %d):\n%s", code, out)
	if _, err := os.Stat(filepath.Join(dir, run.ReportFile)); err == nil {
		t.Errorf("check without --write wrote %s into the killed run's directory", run.ReportFile)
	}
	out, code = clustertest.RunGroupquake(t, bin, "check", "--write", dir)
	cutShort(t, "check --write of the killed run", out, code)
	if _, err := os.Stat(filepath.Join(dir, run.ReportFile)); err != nil {
		t.Errorf("check --write of the killed run wrote no %s: %v", run.ReportFile, err)
	}

	// A kill in the middle of a write leaves a cut last line.
	cut := filepath.Join(t.TempDir(), "cut")
	copyDir(t, dir, cut)
	hf, err := os.OpenFile(filepath.Join(cut, run.HistoryFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hf.WriteString(`{"index":999999,"time":1,"type":"inv`); err != nil {
		t.Fatal(err)
	}
	hf.Close()
	out, code = clustertest.RunGroupquake(t, bin, "check", cut)
	cutShort(t, "check of a cut history", out, code)
	if !strings.Contains(out, "truncated line") {
		t.Errorf("check does not report the truncated line:\n%s", out)
	}

	// Without plan.json or history.jsonl there is nothing to judge.
	for _, missing := range []string{run.PlanFile, run.HistoryFile} {
		d := filepath.Join(t.TempDir(), "without-"+missing)
		copyDir(t, dir, d)
		if err := os.Remove(filepath.Join(d, missing)); err != nil {
			t.Fatal(err)
		}
		out, code := clustertest.RunGroupquake(t, bin, "check", d)
		if code != 2 || !strings.Contains(out, "missing "+missing) {
			t.Errorf("check of a directory without %s exits %d, want 2 naming it:\n%s", missing, code, out)
		}
	}
	out, code = clustertest.RunGroupquake(t, bin, "check", filepath.Join(t.TempDir(), "nothing-here"))
	if code != 2 {
		t.Errorf("check of a directory that does not exist exits %d, want 2:\n%s", code, out)
	}
}
