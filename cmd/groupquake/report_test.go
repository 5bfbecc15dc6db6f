package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// writeRunDir writes a run directory by hand: the plan of seed on the embedded cluster of kafka, and
// a short history in which two of its members own the first partition at once when overlap is set
// (NoDoubleOwnership fails). No verdicts.json: `report` judges it.
func writeRunDir(t *testing.T, dir string, seed uint64, kafka string, named []string, overlap bool) run.Plan {
	t.Helper()
	p, err := run.NewPlan(seed, run.Options{Embedded: true, Kafka: kafka, Nodes: 1, Kinds: named, Partitions: 2, Duration: 5 * time.Second}, kinds.Default().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	if err := os.WriteFile(filepath.Join(dir, run.PlanFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var now time.Duration
	rec, err := history.NewRecorder(&bytes.Buffer{}, func() time.Duration { return now }, history.Retain())
	if err != nil {
		t.Fatal(err)
	}
	topic := p.Topics[0].Name
	a, c := p.Members[0], p.Members[1]
	step := func(d time.Duration) { now += d }
	rec.BeginPhase(history.PhaseSetup, "")
	step(20 * time.Second)
	rec.BeginPhase(history.PhaseWarmup, "")
	step(time.Second)
	rec.Assigned(a.Name, history.Assignment{Member: a.Name, Protocol: a.Protocol, Epoch: 1, Partitions: history.TPs(topic, 0)}, "")
	step(time.Second)
	rec.Assigned(c.Name, history.Assignment{Member: c.Name, Protocol: c.Protocol, Epoch: 1, Partitions: history.TPs(topic, 1)}, "")
	step(time.Second)
	if overlap {
		rec.Assigned(c.Name, history.Assignment{Member: c.Name, Protocol: c.Protocol, Epoch: 2, Partitions: history.TPs(topic, 0)}, "")
	}
	step(time.Second)
	rec.BeginPhase(history.PhaseTeardown, "")
	var h bytes.Buffer
	if err := history.Write(&h, rec.Events()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, run.HistoryFile), h.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func exitCode(err error) int {
	var ex exitError
	if errors.As(err, &ex) {
		return ex.code
	}
	if err != nil {
		return 1
	}
	return 0
}

// TestReportCommand: one run directory gets its report.html; a directory of runs gets a trend page
// linking each run's report, with rows per Kafka version and per protocol; bad input exits 2.
func TestReportCommand(t *testing.T) {
	root := t.TempDir()
	one := filepath.Join(root, "nightly", "r1")
	writeRunDir(t, one, 1, "4.4.0", []string{"consumer", "kgo-consumer"}, true)
	writeRunDir(t, filepath.Join(root, "nightly", "r2"), 2, "4.1.2", []string{"classic", "kgo-classic"}, false)

	var stdout, stderr bytes.Buffer
	if err := dispatch(context.Background(), []string{"report", one}, &stdout, &stderr); err != nil {
		t.Fatalf("report %s: %v\n%s", one, err, stderr.String())
	}
	page, err := os.ReadFile(filepath.Join(one, run.ReportFile))
	if err != nil {
		t.Fatalf("report wrote no %s: %v", run.ReportFile, err)
	}
	for _, want := range []string{`id="v-NoDoubleOwnership" class="verdict violated"`, `data-tp="gq-1-records-0"`, "judged now, not read from verdicts.json", "setup 20s"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the report of %s lacks %q", one, want)
		}
	}
	if strings.TrimSpace(stdout.String()) != filepath.Join(one, run.ReportFile) {
		t.Errorf("report printed %q, want the report's path", stdout.String())
	}

	stdout.Reset()
	nightly := filepath.Join(root, "nightly")
	if err := dispatch(context.Background(), []string{"report", nightly}, &stdout, &stderr); err != nil {
		t.Fatalf("report %s: %v\n%s", nightly, err, stderr.String())
	}
	trend, err := os.ReadFile(filepath.Join(nightly, TrendFile))
	if err != nil {
		t.Fatalf("no trend page: %v", err)
	}
	for _, want := range []string{
		// r2's history goes from its warm-up to its teardown with no final phase: it found no
		// violation up to there, and is cut short, not a hold.
		"2 runs: 0 hold, 1 violated, 1 cut short, 0 unreadable",
		`href="r1/report.html"`, `href="r2/report.html"`, // each run's report, written for r2 which had none
		`data-key="embedded 4.4.0"`, `data-key="embedded 4.1.2"`,
		`data-key="consumer"`, `data-key="classic"`,
		"NoDoubleOwnership ×1",
	} {
		if !strings.Contains(string(trend), want) {
			t.Errorf("the trend page lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(nightly, "r2", run.ReportFile)); err != nil {
		t.Errorf("the trend did not write the report of a run that had none: %v", err)
	}

	out := filepath.Join(t.TempDir(), "elsewhere.html")
	if err := dispatch(context.Background(), []string{"report", "-o", out, nightly}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "/nightly/r1/report.html") {
		t.Errorf("-o: the trend page at %s does not link the runs' reports relative to itself (%v)", out, err)
	}

	// With verdicts.json (what every run leaves) the history is streamed through the page, not
	// judged again; a corrupt line in it is bad input.
	if err := dispatch(context.Background(), []string{"check", "--write", one}, &stdout, &stderr); exitCode(err) != 1 {
		t.Fatalf("check --write %s: %v", one, err)
	}
	if err := dispatch(context.Background(), []string{"report", one}, &stdout, &stderr); err != nil {
		t.Fatalf("report %s with its verdicts.json: %v\n%s", one, err, stderr.String())
	}
	page, err = os.ReadFile(filepath.Join(one, run.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="v-NoDoubleOwnership" class="verdict violated"`, `data-tp="gq-1-records-0"`, "setup 20s", `class="vmark"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the report of %s, streamed with its verdicts.json, lacks %q", one, want)
		}
	}
	if strings.Contains(string(page), "judged now") {
		t.Errorf("the report of %s judged the run again although verdicts.json was there", one)
	}
	hist := filepath.Join(one, run.HistoryFile)
	h, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hist, bytes.Replace(h, []byte(`"index":2,`), []byte(`"index":"two",`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	err = dispatch(context.Background(), []string{"report", one}, &stdout, &stderr)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "line 3 is not a valid event") {
		t.Errorf("report over a corrupt history: exit %d (%v), want 2 naming the line", exitCode(err), err)
	}

	for _, bad := range [][]string{{"report"}, {"report", filepath.Join(root, "nothing")}, {"report", t.TempDir()}} {
		err := dispatch(context.Background(), bad, &stdout, &stderr)
		if exitCode(err) != 2 {
			t.Errorf("%v: exit %d (%v), want 2", bad, exitCode(err), err)
		}
	}
}

// TestReportToStdout: -o - writes one run's report to standard output, as
// most commands read -, and writes no file (it wrote a file named "-" in
// the working directory); a trend page, which links the runs' reports and
// its scorecard beside it, is refused with exit 2 and nothing written.
func TestReportToStdout(t *testing.T) {
	one := copyRun(t, embeddedRun)
	second := copyRun(t, embeddedRun)
	before, err := os.ReadFile(filepath.Join(one, run.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	t.Chdir(wd)
	code, stdout, stderr := call(t, "report", "-o", "-", one)
	if code != exitOK || !strings.HasPrefix(stdout, "<!DOCTYPE html>") || !strings.Contains(stdout, `id="v-NoDoubleOwnership"`) {
		t.Errorf("report -o - %s: exit %d, stdout starts %.80q:\n%s", one, code, stdout, stderr)
	}
	if after, err := os.ReadFile(filepath.Join(one, run.ReportFile)); err != nil || !bytes.Equal(after, before) {
		t.Errorf("report -o - rewrote %s (%v)", run.ReportFile, err)
	}
	root := filepath.Dir(one)
	if err := os.Rename(second, filepath.Join(root, "second")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = call(t, "report", "-o", "-", root)
	if code != exitBadInput || !strings.Contains(stderr, "-o -: the trend page of 2 runs") || stdout != "" {
		t.Errorf("report -o - over 2 runs: exit %d, want %d:\n%s%s", code, exitBadInput, stdout, stderr)
	}
	for _, d := range []string{wd, root} {
		for _, name := range []string{"-", TrendFile, ScorecardFile} {
			if _, err := os.Lstat(filepath.Join(d, name)); err == nil {
				t.Errorf("report -o - wrote %s", filepath.Join(d, name))
			}
		}
	}
}
