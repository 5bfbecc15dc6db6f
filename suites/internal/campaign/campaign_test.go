package campaign

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
)

const childEnv = "GROUPQUAKE_CAMPAIGN_CHILD_DIR"

func sampleReport() check.Report {
	return check.NewReport([]check.Verdict{
		{Name: "NoDoubleOwnership", Holds: true, Notes: []string{"3 partitions"}},
		{Name: "NoLostRecords", Violations: []check.Violation{{Message: "record 7 of t-0 never consumed", EventIndexes: []int64{1}}}},
		{Name: "RecoveredStateMatchesLog", Holds: true, Skipped: "observations.json is absent"},
	}, nil)
}

// TestVerdictsAreSubtests runs Verdicts in a child process of this test
// binary (its failures must not fail this test) and reads the verbose
// output: one subtest per checker, failed with the violation, its events and
// the rerun command, skipped with the reason, or passed; and on GitHub
// Actions the job's summary names the violated checker.
func TestVerdictsAreSubtests(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		Verdicts(t, dir, "groupquake run --seed 42", sampleReport(), nil)
		return
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, run.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	err = history.Write(f, []history.Event{
		{Index: 0, Time: time.Second, Type: history.Info, Process: "harness", F: history.FPhase, Value: history.Phase{Name: history.PhaseWorkload}},
		{Index: 1, Time: 2 * time.Second, Type: history.Info, Process: "m1", F: history.FLost, Value: history.Assignment{Member: "m1", Epoch: 3, Partitions: history.TPs("t", 0)}},
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(t.TempDir(), "summary.md")
	cmd := exec.Command(os.Args[0], "-test.run=^TestVerdictsAreSubtests$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir, "GITHUB_STEP_SUMMARY="+summary)
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err == nil {
		t.Fatalf("the child passed with a violated checker:\n%s", out)
	}
	for _, want := range []string{
		`--- PASS: TestVerdictsAreSubtests/NoDoubleOwnership `,
		`--- FAIL: TestVerdictsAreSubtests/NoLostRecords `,
		`--- SKIP: TestVerdictsAreSubtests/RecoveredStateMatchesLog `,
		`observations.json is absent`,
		`record 7 of t-0 never consumed`,
		`#1 2s m1 info lost`,
		`rerun: groupquake run --seed 42`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): TestVerdictsAreSubtests/`).FindAllString(out, -1)); n != 3 {
		t.Errorf("%d checker subtests, want 3:\n%s", n, out)
	}
	md, err := os.ReadFile(summary)
	if err != nil {
		t.Fatalf("no step summary: %v", err)
	}
	for _, want := range []string{"NoLostRecords violated", "record 7 of t-0 never consumed", "groupquake run --seed 42"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("step summary lacks %q:\n%s", want, md)
		}
	}
}

// TestOnlyKnown: a suite logs a violated checker as known findings
// reproduced only when every one of its violations names a finding.
func TestOnlyKnown(t *testing.T) {
	known := check.Violation{Message: "refused its own instance id", Finding: check.FindingStaticRejoinOwnInstance}
	plain := check.Violation{Message: "two owners"}
	for _, c := range []struct {
		v    []check.Violation
		want bool
	}{
		{[]check.Violation{known}, true},
		{[]check.Violation{known, known}, true},
		{[]check.Violation{known, plain}, false},
		{[]check.Violation{plain}, false},
		{nil, false},
	} {
		if got := onlyKnown(check.Verdict{Name: "EventuallyConverges", Violations: c.v}); got != c.want {
			t.Errorf("onlyKnown(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

// seedT records what Seed says instead of failing the test.
type seedT struct {
	testing.TB
	logs, fatals []string
}

func (s *seedT) Helper() {}
func (s *seedT) Logf(format string, args ...any) {
	s.logs = append(s.logs, fmt.Sprintf(format, args...))
}
func (s *seedT) Fatalf(format string, args ...any) {
	s.fatals = append(s.fatals, fmt.Sprintf(format, args...))
}

func TestSeed(t *testing.T) {
	st := &seedT{TB: t}
	if got := Seed(st, "-x.seed", " 42 "); got != 42 || len(st.logs)+len(st.fatals) != 0 {
		t.Fatalf("Seed(42) = %d, logs %q, fatals %q", got, st.logs, st.fatals)
	}
	got := Seed(st, "-x.seed", "random")
	// A fresh seed is logged with the flag that reruns it.
	if len(st.logs) != 1 || !strings.Contains(st.logs[0], fmt.Sprintf("-x.seed=%d", got)) || len(st.fatals) != 0 {
		t.Fatalf("Seed(random) = %d, logs %q, fatals %q", got, st.logs, st.fatals)
	}
	Seed(st, "-x.seed", "seven")
	if len(st.fatals) != 1 || !strings.Contains(st.fatals[0], `-x.seed: "seven" is not a seed`) || !strings.Contains(st.fatals[0], `"random"`) {
		t.Fatalf("Seed(seven): fatals %q", st.fatals)
	}
}
