package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/run"
)

// embeddedRun is a real run directory: `groupquake run --embedded --scenario combined --kinds
// consumer,classic-cooperative,kgo-classic --duration 6s --rate 15 --seed 21` (419 events, a
// member-freeze of m2, every checker held).
const embeddedRun = "testdata/embedded-combined-seed-21"

// copyRun copies the run directory src into a new temporary directory.
func copyRun(t *testing.T, src string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range readFiles(t, src) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readFiles returns every file of the directory dir by its name.
func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// historyLines returns the lines of the run's history.jsonl, each with its newline.
func historyLines(t *testing.T, dir string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, run.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimRight(b, "\n"), []byte("\n"))
	lines[len(lines)-1] = append(lines[len(lines)-1], '\n')
	return lines
}

func writeHistory(t *testing.T, dir string, lines [][]byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, run.HistoryFile), bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkJSON runs `groupquake check DIR --json` and decodes what it printed.
func checkJSON(t *testing.T, dir string) (int, judgementJSON) {
	t.Helper()
	code, stdout, stderr := call(t, "check", dir, "--json")
	var j judgementJSON
	if err := json.Unmarshal([]byte(stdout), &j); err != nil {
		t.Fatalf("check --json printed no judgement (exit %d): %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	return code, j
}

// onlyMalformed fails the test unless no checker but HistoryWellFormed found a violation, and
// HistoryWellFormed holds or fails as wantWellFormed says, naming want when it fails.
func onlyMalformed(t *testing.T, j judgementJSON, wantWellFormed bool, want string) {
	t.Helper()
	for _, v := range j.Verdicts {
		if v.Name == "HistoryWellFormed" {
			if v.Holds != wantWellFormed {
				t.Errorf("HistoryWellFormed holds=%v, want %v: %+v", v.Holds, wantWellFormed, v.Violations)
			}
			if !wantWellFormed {
				var msgs []string
				for _, x := range v.Violations {
					msgs = append(msgs, x.Message)
				}
				if !strings.Contains(strings.Join(msgs, "\n"), want) {
					t.Errorf("HistoryWellFormed does not say %q: %v", want, msgs)
				}
			}
			continue
		}
		if !v.Holds {
			t.Errorf("%s invented %d violations from a history the run did not write so: %+v", v.Name, len(v.Violations), v.Violations)
		}
	}
}

// TestCheckCutShortHistories: `groupquake check` on a real run directory whose history.jsonl was
// cut short, reordered, repeated or garbled, with its observations kept, reports no violation
// that the recorded events do not prove; what is malformed HistoryWellFormed says.
func TestCheckCutShortHistories(t *testing.T) {
	t.Parallel()
	whole := historyLines(t, embeddedRun)
	n := len(whole)
	if n < 400 {
		t.Fatalf("the run has %d events, want its 419", n)
	}
	clone := func() [][]byte { return slices.Clone(whole) }
	for _, c := range []struct {
		name      string
		history   func() [][]byte
		noObs     bool
		wellFrmd  bool
		want      string // in HistoryWellFormed's violations
		events    int    // events judged, -1: any
		wantTally string
	}{
		{name: "intact", history: clone, wellFrmd: true, events: n, wantTally: fmt.Sprintf("%d hold, 0 violated, 0 skipped", len(check.For(check.ConsumerGroups)))},
		{name: "the last half lost, observations kept", history: func() [][]byte { return whole[:n/2] }, wellFrmd: true, events: n / 2},
		{name: "killed while writing the last line", history: func() [][]byte {
			h := clone()[:n/2]
			h[len(h)-1] = h[len(h)-1][:len(h[len(h)-1])/2]
			return h
		}, wellFrmd: true, events: n/2 - 1},
		{name: "the observations absent and the last third lost", history: func() [][]byte { return whole[:2*n/3] }, noObs: true, wellFrmd: true, events: 2 * n / 3},
		{name: "two lines swapped", history: func() [][]byte {
			h := clone()
			h[100], h[101] = h[101], h[100]
			return h
		}, want: "1 line(s) out of index order", events: n, wantTally: fmt.Sprintf("%d hold, 1 violated (HistoryWellFormed), 0 skipped", len(check.For(check.ConsumerGroups))-1)},
		{name: "every line shuffled", history: func() [][]byte {
			h := clone()
			rand.New(rand.NewPCG(21, 21)).Shuffle(len(h), func(a, b int) { h[a], h[b] = h[b], h[a] })
			return h
		}, want: "out of index order", events: n, wantTally: fmt.Sprintf("%d hold, 1 violated (HistoryWellFormed), 0 skipped", len(check.For(check.ConsumerGroups))-1)},
		{name: "a consume line repeated", history: func() [][]byte {
			h := clone()
			for i, l := range h {
				if bytes.Contains(l, []byte(`"f":"consume"`)) && i > 150 {
					return slices.Insert(h, i+1, l)
				}
			}
			t.Fatal("no consume in the history")
			return nil
		}, want: "repeats line", events: n},
		{name: "the history written twice", history: func() [][]byte { return append(clone(), whole...) }, want: "repeats line", events: n},
		{name: "a line in the middle lost", history: func() [][]byte { return slices.Delete(clone(), 200, 201) }, want: "events 200 to 200 are missing", events: 200},
		{name: "a line in the middle garbled", history: func() [][]byte {
			h := clone()
			h[250] = []byte("{\"index\":250,\"ti\x00garbage\n")
			return h
		}, want: "line 251 is not a valid event", events: 250},
		{name: "an event given twice with different content", history: func() [][]byte {
			h := clone()
			other := bytes.Replace(h[300], []byte(`"process":"`), []byte(`"process":"x`), 1)
			return slices.Insert(h, 301, other)
		}, want: "both hold event 300", events: 300},
		{name: "the first lines lost", history: func() [][]byte { return whole[10:] }, want: "events 0 to 9 are missing", events: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := copyRun(t, embeddedRun)
			writeHistory(t, dir, c.history())
			if c.noObs {
				if err := os.Remove(filepath.Join(dir, run.ObservationsFile)); err != nil {
					t.Fatal(err)
				}
			}
			code, j := checkJSON(t, dir)
			onlyMalformed(t, j, c.wellFrmd, c.want)
			// A history cut before its final phase is a run cut short: no violation up to there
			// is not a hold (exit 3, holds false).
			cutShort := c.wellFrmd && c.events < n
			switch {
			case !c.wellFrmd && code != exitViolation, cutShort && (code != exitFailed || j.Holds || j.Stopped == ""), c.wellFrmd && !cutShort && (code != exitOK || !j.Holds):
				t.Errorf("exit %d, holds %v, stopped %q", code, j.Holds, j.Stopped)
			}
			if c.events >= 0 && j.Events != c.events {
				t.Errorf("judged %d events, want %d", j.Events, c.events)
			}
			if c.wantTally != "" && (j.Tally == nil || !strings.Contains(j.Tally.String(), c.wantTally)) {
				t.Errorf("tally %v, want %q", j.Tally, c.wantTally)
			}
		})
	}
	t.Run("every prefix", func(t *testing.T) {
		t.Parallel()
		dir := copyRun(t, embeddedRun)
		for cut := 2; cut < n; cut += 23 { // from the warmup phase on: before it the run never happened
			writeHistory(t, dir, whole[:cut])
			code, j := checkJSON(t, dir)
			onlyMalformed(t, j, true, "")
			if code != exitFailed || j.Holds || j.Events != cut {
				t.Errorf("cut at %d: exit %d, holds %v, %d events judged; want exit 3 (cut short), not a hold", cut, code, j.Holds, j.Events)
			}
		}
	})
}

// TestCheckLeavesTheRunDirectory: `groupquake check` prints its verdicts and leaves the run
// directory as it was; --write rewrites verdicts.json and report.html together, so report.html
// never shows a verdict verdicts.json does not hold.
func TestCheckLeavesTheRunDirectory(t *testing.T) {
	t.Parallel()
	dir := copyRun(t, embeddedRun)
	// The history loses a line in the middle: judged now, HistoryWellFormed fails, while the
	// run's own verdicts.json and report.html say every checker held.
	writeHistory(t, dir, slices.Delete(historyLines(t, dir), 200, 201))
	files := func() map[string]string { return readFiles(t, dir) }
	before := files()
	for _, args := range [][]string{{"check", dir}, {"check", dir, "--json"}, {"check", "--json", dir}} {
		if code, _, stderr := call(t, args...); code != exitViolation {
			t.Fatalf("%v: exit %d, want %d: %s", args, code, exitViolation, stderr)
		}
		after := files()
		for name, b := range after {
			if before[name] != b {
				t.Errorf("%v changed %s", args, name)
			}
		}
		if len(after) != len(before) {
			t.Errorf("%v left %d files, there were %d", args, len(after), len(before))
		}
	}
	if !strings.Contains(before[run.ReportFile], `class="holds">holds`) || strings.Contains(before[run.ReportFile], `class="violated"`) {
		t.Fatalf("the run's own report does not show every checker holding")
	}
	code, _, stderr := call(t, "check", "--write", dir)
	if code != exitViolation {
		t.Fatalf("check --write: exit %d: %s", code, stderr)
	}
	after := files()
	var verdicts struct {
		Holds    bool `json:"holds"`
		Verdicts []struct {
			Name    string `json:"name"`
			Holds   bool   `json:"holds"`
			Skipped string `json:"skipped"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(after[run.VerdictsFile]), &verdicts); err != nil {
		t.Fatal(err)
	}
	page := after[run.ReportFile]
	if verdicts.Holds || page == before[run.ReportFile] || !strings.Contains(page, `class="violated"`) {
		t.Fatalf("--write: verdicts.json holds=%v, report.html rewritten=%v", verdicts.Holds, page != before[run.ReportFile])
	}
	holding := 0
	for _, v := range verdicts.Verdicts {
		if v.Holds && v.Skipped == "" {
			holding++
		}
	}
	if got := strings.Count(page, `class="holds">holds`); got != holding {
		t.Errorf("report.html shows %d checkers holding, verdicts.json %d", got, holding)
	}
}

// TestCheckMalformedHistory: a history whose first line is not an event is judged, and
// HistoryWellFormed says what is wrong with it (exit 1), where it used to be refused as bad input.
func TestCheckMalformedHistory(t *testing.T) {
	t.Parallel()
	fx := makeFixtures(t)
	code, stdout, _ := call(t, "check", fx.corrupt)
	if code != exitViolation || !strings.Contains(stdout, "FAIL  HistoryWellFormed") || !strings.Contains(stdout, "line 1 is not a valid event") {
		t.Fatalf("exit %d, stdout:\n%s", code, stdout)
	}
}
