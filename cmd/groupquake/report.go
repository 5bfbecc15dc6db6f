package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/results"
)

// TrendFile is the trend page `groupquake report` writes over many runs.
const TrendFile = "trend.html"

const reportUsage = `Usage: groupquake report [-o FILE] DIR...
       groupquake report --scorecard [--by client|kind] [--json] DIR...

Renders run directories as HTML that opens offline. A DIR that holds no
plan.json is searched for run directories below it. For one run directory it
writes that run's report (verdicts, the ownership timeline with faults and
violations, the events); for many, a trend page: verdicts and rebalance
pauses per run, per Kafka version and per protocol, linking each run's report
(written for the runs that have none), and beside it scorecard.html, the
client scorecard. Verdicts are read from verdicts.json; a run without one is
judged now. -o - writes one run's report to standard output, and no file.

--scorecard prints the client scorecard as a table instead, and writes
nothing: per client (or member kind), Kafka version and scenario, the runs,
the verdicts, the violations charged to the client (a violation is charged to
the members whose events it cites; one that cites several clients' members
is charged to each, shared), the violations that are the run's (they cite no
member), its members' rebalance pauses and the registered findings matched.
--json prints it as one JSON document (docs/schema/scorecard.json).

Exit status: 0 written or printed, 2 no run directory is found or the one run
directory cannot be read, 3 the page could not be written.
`

// cmdReport renders run directories: one run's report.html, or over many (a nightly's) the trend
// page of verdicts and rebalance pauses per run, per Kafka version and per protocol.
func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", reportUsage)
	out := fs.String("o", "", "output file (default: DIR/report.html for one run directory, trend.html in the directory that holds the runs for many; scorecard.html is written beside it); - writes one run's report to standard output")
	scorecard := fs.Bool("scorecard", false, "print the client scorecard of the runs as a table, and write nothing")
	by := fs.String("by", check.ByClient, "the scorecard's rows: client (groupquake, kgo, java, …) or kind (each member kind)")
	asJSON := fs.Bool("json", false, "print the client scorecard as one JSON document (docs/schema/scorecard.json), and write nothing")
	pos, con, err := parseWithConsole(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return badInput("report needs at least one run directory, or one that holds runs (see 'groupquake report -h')")
	}
	if *by != check.ByClient && *by != check.ByKind {
		return badInput("--by %s: give client or kind", *by)
	}
	if given(fs)["by"] && !*scorecard && !*asJSON {
		return badInput("--by arranges the scorecard that --scorecard or --json prints: add one of them")
	}
	if *out != "" && (*scorecard || *asJSON) {
		return badInput("-o names the page to write, and --scorecard and --json print the scorecard and write nothing: give one or the other")
	}
	toStdout := *out == "-"
	if *out != "" && !toStdout {
		if err := checkOutFile("-o", *out); err != nil {
			return err
		}
	}
	var dirs []string
	for _, root := range pos {
		if _, err := os.Stat(root); err != nil {
			return badInput("%v: give the directory of a run, or one that holds runs", err)
		}
		dirs = append(dirs, runDirsBelow(root)...)
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	if len(dirs) == 0 {
		return badInput("no run directory (one with a %s) under %v: give the directory of a run, or one that holds runs", run.PlanFile, pos)
	}

	if *scorecard || *asJSON {
		return printScorecard(stdout, dirs, *by, *asJSON, con.Logf)
	}

	if len(dirs) == 1 && len(pos) == 1 && filepath.Clean(pos[0]) == dirs[0] {
		if *out != "" && !toStdout {
			if err := outputFile("report -o", *out, dirs[0]); err != nil {
				return err
			}
		}
		var b bytes.Buffer
		err := run.RenderReport(&b, dirs[0])
		if inc := (*run.IncompleteError)(nil); errors.As(err, &inc) {
			return badInput("%v", err)
		}
		if err != nil {
			return err
		}
		if toStdout {
			// The page holds everything it shows: it opens as well from
			// a file the caller names (report -o - RUN > page.html).
			_, err := stdout.Write(b.Bytes())
			return err
		}
		path := *out
		if path == "" {
			path = filepath.Join(dirs[0], run.ReportFile)
		}
		if err := run.WriteFileAtomic(path, b.Bytes(), 0o644); err != nil {
			return exitError{exitFailed, fmt.Sprintf("writing the report: %v; write it elsewhere with -o FILE", err)}
		}
		fmt.Fprintln(stdout, path)
		return nil
	}

	if toStdout {
		return badInput("-o -: the trend page of %d runs links each run's report and scorecard.html beside it, which standard output cannot hold: give -o FILE (one run's report can go to standard output)", len(dirs))
	}
	path := *out
	if path == "" {
		path = filepath.Join(commonDir(pos), TrendFile)
		if r := run.RunDirOf(filepath.Dir(path)); r != "" {
			return badInput("report: the trend page would go to %s, inside the run directory %s: give -o FILE outside any run directory", path, r)
		}
	} else if err := outputFile("report -o", path, ""); err != nil {
		return err
	}
	if err := writeTrend(ctx, path, "", dirs, con.Logf); err != nil {
		return err
	}
	fmt.Fprintln(stdout, path)
	fmt.Fprintln(stdout, filepath.Join(filepath.Dir(path), ScorecardFile))
	return nil
}

// checkOutFile refuses an output file (of flag) that is a directory, or
// whose directory does not exist, and one that exists but is no regular
// file: a page is written to a temporary file and renamed over the path,
// which would replace a device (-o /dev/null replaced /dev/null with the
// page), a pipe or a symbolic link instead of writing through it.
func checkOutFile(flag, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return badInput("%s %s is a directory: give the path of the file to write, e.g. %s", flag, path, filepath.Join(path, TrendFile))
	}
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		what := "a device, a pipe or a socket"
		if st.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(path)
			what = "a symbolic link to " + target
		}
		return badInput("%s %s is %s, not a regular file: the page is written to a new file renamed into place, which would replace it; give the path of a regular file, or of a new one", flag, path, what)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return badInput("%s %s: its directory %s does not exist: create it first, or write elsewhere", flag, path, filepath.Dir(path))
	}
	return nil
}

// writeTrend writes the trend page of the run directories dirs to path,
// linking each run's report.html (written for the runs that have none), and
// beside it the client scorecard of the same runs (scorecard.html), which
// it links; title "" says how many runs it shows.
func writeTrend(ctx context.Context, path, title string, dirs []string, logf func(string, ...any)) error {
	base := filepath.Dir(path)
	var runs []results.RunSummary
	var scored []check.ScoredRun
	for i, d := range dirs {
		if err := interrupted(ctx, fmt.Sprintf("after reading %d of %d runs: no trend page written (%s is as it was)", i, len(dirs), path)); err != nil {
			return err
		}
		j, err := run.Saved(d)
		s := run.Summary(d, j, err)
		scored = append(scored, run.Score(d, j, err))
		if err != nil {
			logf("%s: %v", d, err)
		} else if _, serr := os.Stat(filepath.Join(d, run.ReportFile)); serr != nil {
			if werr := run.WriteReport(d, j); werr != nil {
				logf("%s: %v", d, werr)
			}
		}
		if _, serr := os.Stat(filepath.Join(d, run.ReportFile)); serr == nil {
			if rel, rerr := filepath.Rel(base, filepath.Join(d, run.ReportFile)); rerr == nil {
				s.Report = filepath.ToSlash(rel)
			}
		}
		runs = append(runs, s)
	}
	var b bytes.Buffer
	if title == "" {
		title = fmt.Sprintf("groupquake: %d runs", len(runs))
	}
	card := filepath.Join(base, ScorecardFile)
	if err := results.WriteTrendPage(&b, results.TrendPage{Title: title, Runs: runs, Scorecard: ScorecardFile}); err != nil {
		return err
	}
	if err := run.WriteFileAtomic(path, b.Bytes(), 0o644); err != nil {
		return exitError{exitFailed, fmt.Sprintf("writing the trend page: %v", err)}
	}
	return writeScorecardPage(card, filepath.Base(path), scored)
}

// commonDir is the deepest directory that holds every one of paths.
func commonDir(paths []string) string {
	var common string
	for i, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = filepath.Clean(p)
		}
		if i == 0 {
			common = abs
			continue
		}
		for !within(abs, common) {
			common = filepath.Dir(common)
		}
	}
	return common
}

func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != "../")
}
