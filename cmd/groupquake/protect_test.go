package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/run"
)

// stderrFirst is the first line of a command's stderr.
func stderrFirst(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestRefusedSizes: sizes beyond what any machine takes are refused before
// anything starts, with exit 2 and a first line that names the flag, says
// the limit and what to do; no run directory is written.
func TestRefusedSizes(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		first, more string // first line's start; more in it
	}{
		{[]string{"run", "--embedded", "--partitions", "100000000"}, "groupquake: --partitions 100000000: at most ", "on the embedded cluster on this machine (it keeps every partition's log open"},
		{[]string{"run", "--partitions", "5000"}, "groupquake: --partitions 5000: at most 4000 on a container cluster", "give at most 4000"},
		{[]string{"run", "--embedded", "--scenario", "member-links", "--partitions", "100000000"}, "groupquake: --partitions 100000000: at most ", "raise the limit (ulimit -n)"},
		{[]string{"run", "--embedded", "--rate", "1000000"}, "groupquake: --rate 1000000: at most 10000 records a second", "give at most 10000"},
		{[]string{"run", "--embedded", "--duration", "48h", "--bound", "49h"}, "groupquake: --duration 48h0m0s: at most 24h0m0s", "suites/soak"},
		{[]string{"run", "--embedded", "--duration", "23h", "--rate", "10000", "--bound", "24h"}, "groupquake: --rate 10000: at most about ", "records a run on this machine"},
		{[]string{"run", "--embedded", "--duration", "23h", "--rate", "10000", "--records", "500000000", "--bound", "24h"}, "groupquake: --records 500000000: at most about ", "give a shorter --duration, a lower --rate or --records"},
		{[]string{"run", "--embedded", "--members", "300"}, "groupquake: --members 300: at most 200 members", "groupquake scale"},
		// The default campaign refuses as one run would.
		{[]string{"run", "--embedded", "--partitions", "100000000"}, "groupquake: --partitions 100000000", ""},
		{[]string{"upgrade", "--from", "4.1.2", "--partitions", "5000"}, "groupquake: --partitions 5000: at most 4000 on a container cluster", ""},
		{[]string{"upgrade", "--from", "4.1.2", "--rate", "20000"}, "groupquake: --rate 20000: at most 10000", ""},
		{[]string{"scale", "--members", "2000000", "--protocol", "classic", "--partitions", "10"}, "groupquake: --members 2000000: at most ", "classic members on this machine (each has a connection of its own"},
		{[]string{"scale", "--members", "100", "--protocol", "consumer", "--partitions", "5000"}, "groupquake: --partitions 5000: at most 4000 on a container cluster", ""},
		{[]string{"scale", "--embedded", "--members", "100", "--protocol", "consumer", "--partitions", "100000000"}, "groupquake: --partitions 100000000: at most ", "on the embedded cluster on this machine"},
		{[]string{"scale", "--embedded", "--members", "1000000000", "--protocol", "consumer", "--partitions", "10"}, "groupquake: --members 1000000000: at most ", "half this machine's memory"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := tc.args
			if args[0] == "run" || args[0] == "upgrade" {
				args = append(args, "--out", out)
			}
			code, _, stderr := call(t, args...)
			l := stderrFirst(stderr)
			if code != exitBadInput || !strings.HasPrefix(l, tc.first) || !strings.Contains(l, tc.more) {
				t.Errorf("exit %d, first line %q; want %d, %q…%q", code, l, exitBadInput, tc.first, tc.more)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused command wrote %s", out)
			}
		})
	}
}

// TestProtectedFiles: no command writes over a file of an existing run
// directory it was not asked to rewrite: each is refused before anything
// starts, with exit 2 and a first line that says why, and every file of the
// run directory is left as it was.
func TestProtectedFiles(t *testing.T) {
	fx := makeFixtures(t)
	rd := fx.killed // a run directory: plan.json, history.jsonl
	for _, f := range []string{run.VerdictsFile, run.ObservationsFile} {
		if err := os.WriteFile(filepath.Join(rd, f), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := func() map[string][]byte {
		m := map[string][]byte{}
		filepath.WalkDir(rd, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				m[p], _ = os.ReadFile(p)
			}
			return nil
		})
		return m
	}
	before := snapshot()
	// A directory that holds an earlier diff's and scale's results.
	old := filepath.Join(t.TempDir(), "old")
	os.MkdirAll(old, 0o755)
	for _, f := range []string{"diff.json", "upgrade.txt", "node-1.log"} {
		os.WriteFile(filepath.Join(old, f), []byte("x"), 0o644)
	}
	in := func(f string) string { return filepath.Join(rd, f) }
	for _, tc := range []struct {
		args  []string
		first string
	}{
		{[]string{"report", "-o", in(run.PlanFile), rd}, "groupquake: report -o " + in(run.PlanFile) + ": it would write plan.json inside the run directory " + rd},
		{[]string{"report", "-o", in(run.HistoryFile), rd}, "groupquake: report -o " + in(run.HistoryFile) + ": it would write history.jsonl inside the run directory"},
		{[]string{"report", "-o", in(run.VerdictsFile), rd}, "groupquake: report -o " + in(run.VerdictsFile) + ": it would write verdicts.json inside the run directory"},
		{[]string{"report", "-o", in(run.ObservationsFile), rd}, "groupquake: report -o " + in(run.ObservationsFile) + ": it would write observations.json inside the run directory"},
		{[]string{"report", "-o", in("new.html"), rd}, "groupquake: report -o " + in("new.html") + ": it would write a file inside the run directory"},
		{[]string{"report", "-o", in(run.ReportFile), fx.corrupt}, "groupquake: report -o " + in(run.ReportFile) + ": it would write a file inside the run directory " + rd},
		{[]string{"report", "-o", rd, rd}, "groupquake: -o " + rd + " is a directory"},
		{[]string{"report", "-o", in("trend.html"), fx.root}, "groupquake: report -o " + in("trend.html") + ": it would write a file inside the run directory"},
		{[]string{"diff", "--from", "4.1.2", "--embedded", "--out", rd}, "groupquake: diff --out " + rd + " already holds a run (plan.json)"},
		{[]string{"diff", "--from", "4.1.2", "--embedded", "--out", in("sub")}, "groupquake: diff --out " + in("sub") + " is inside the run directory " + rd},
		{[]string{"diff", "--from", "4.1.2", "--embedded", "--out", old}, "groupquake: diff --out " + old + " already holds diff.json of an earlier run"},
		{[]string{"upgrade", "--from", "4.1.2", "--out", rd}, "groupquake: upgrade --out " + rd + " already holds a run (plan.json)"},
		{[]string{"upgrade", "--from", "4.1.2", "--out", in("sub")}, "groupquake: upgrade --out " + in("sub") + " is inside the run directory " + rd},
		{[]string{"upgrade", "--from", "4.1.2", "--out", old}, "groupquake: upgrade --out " + old + " already holds upgrade.txt"},
		{[]string{"scale", "--members", "2", "--protocol", "consumer", "--partitions", "1", "--logs", rd}, "groupquake: scale --logs " + rd + " already holds a run (plan.json)"},
		{[]string{"scale", "--members", "2", "--protocol", "consumer", "--partitions", "1", "--logs", in("logs")}, "groupquake: scale --logs " + in("logs") + " is inside the run directory " + rd},
		{[]string{"scale", "--members", "2", "--protocol", "consumer", "--partitions", "1", "--logs", old}, "groupquake: scale --logs " + old + " already holds node logs"},
		{[]string{"run", "--embedded", "--scenario", "baseline", "--out", rd}, "groupquake: --out: run directory " + rd + " already holds a run"},
		{[]string{"run", "--embedded", "--scenario", "baseline", "--out", in("sub")}, "groupquake: --out: " + in("sub") + " is inside the run directory " + rd},
		{[]string{"run", "--embedded", "--out", in("campaign")}, "groupquake: --out: " + in("campaign") + " is inside the run directory " + rd},
	} {
		t.Run(strings.Join(tc.args[:1], " ")+" "+strings.Join(tc.args[1:], " "), func(t *testing.T) {
			code, _, stderr := call(t, tc.args...)
			if l := stderrFirst(stderr); code != exitBadInput || !strings.HasPrefix(l, tc.first) {
				t.Errorf("exit %d, first line %q; want %d and %q…", code, l, exitBadInput, tc.first)
			}
		})
	}
	after := snapshot()
	if len(after) != len(before) {
		t.Errorf("the run directory held %d files, now %d", len(before), len(after))
	}
	for p, b := range before {
		if !bytes.Equal(after[p], b) {
			t.Errorf("%s was changed", p)
		}
	}

	// What a command was asked to rewrite, it rewrites: the run's own
	// report.html, by report (-o naming it, or by default).
	for _, args := range [][]string{{"report", "-o", in(run.ReportFile), rd}, {"report", rd}} {
		if code, _, stderr := call(t, args...); code != exitOK {
			t.Errorf("%v: exit %d:\n%s", args, code, stderr)
		}
	}
	if _, err := os.Stat(in(run.ReportFile)); err != nil {
		t.Errorf("report wrote no %s: %v", run.ReportFile, err)
	}
}
