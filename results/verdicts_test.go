package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/check"
)

func TestCountKeepsSkipsApart(t *testing.T) {
	got := Count(verdicts())
	if got.Total != 3 || got.Hold != 1 || len(got.Violated) != 1 || len(got.Skipped) != 1 {
		t.Fatalf("Count = %+v, want 3 total, 1 hold, 1 violated, 1 skipped", got)
	}
	want := "3 checkers: 1 hold, 1 violated (NoLostRecords), 1 skipped (RecoveredStateMatchesLog)"
	if got.String() != want {
		t.Errorf("String() = %q, want %q", got.String(), want)
	}
	if s := Count(verdicts()[:1]).String(); s != "1 checkers: 1 hold, 0 violated, 0 skipped" {
		t.Errorf("all hold: %q", s)
	}
}

func TestWriteViolationsBoundsWhatItShows(t *testing.T) {
	v := check.Verdict{Name: "NoLostRecords"}
	for i := range MaxViolationsShown + 2 {
		v.Violations = append(v.Violations, check.Violation{Message: "lost " + string(rune('a'+i)), EventIndexes: []int64{8, 3, 99}})
	}
	var b strings.Builder
	WriteViolations(&b, v, IndexEvents(sample()), "  ")
	out := b.String()
	if strings.Count(out, "  - lost ") != MaxViolationsShown {
		t.Errorf("shows %d violations, want %d:\n%s", strings.Count(out, "  - lost "), MaxViolationsShown, out)
	}
	if !strings.Contains(out, "… and 2 more in verdicts.json") {
		t.Errorf("does not say how many violations it left out:\n%s", out)
	}
	first := out[:strings.Index(out, "  - lost b")]
	i3, i8 := strings.Index(first, "#3 "), strings.Index(first, "#8 ")
	if i3 < 0 || i8 < 0 || i3 > i8 || !strings.Contains(first, "#99 (not in the history)") {
		t.Errorf("events of a violation are not the cited ones in history order:\n%s", first)
	}
}

func TestStepSummaryNamesTheViolatedCheckerAndRerun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.md")
	s := StepSummary{Title: "TestChaos/combined/mixed", Dir: "/runs/x", Rerun: "groupquake run --seed 42", Verdicts: verdicts(), Events: IndexEvents(sample())}
	if err := AppendStepSummary(path, s); err != nil {
		t.Fatal(err)
	}
	if err := AppendStepSummary(path, s); err != nil { // appended, not overwritten
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{"### ❌ TestChaos/combined/mixed: NoLostRecords violated", "record 7 of t-0 never consumed", "#3 ", "#8 ", "groupquake run --seed 42", "`/runs/x`", "1 skipped (RecoveredStateMatchesLog)"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "### ") != 2 {
		t.Errorf("two appends give %d headings, want 2:\n%s", strings.Count(md, "### "), md)
	}
	if strings.Count(md, "```")%2 != 0 {
		t.Errorf("unbalanced code fences:\n%s", md)
	}

	// A run where everything holds adds nothing, and without a path nothing is written.
	quiet := filepath.Join(t.TempDir(), "quiet.md")
	if err := AppendStepSummary(quiet, StepSummary{Title: "ok", Verdicts: verdicts()[:1]}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(quiet); !os.IsNotExist(err) {
		t.Errorf("a run that holds wrote a summary (stat: %v)", err)
	}
	if err := AppendStepSummary("", s); err != nil {
		t.Errorf("no path: %v", err)
	}
}
