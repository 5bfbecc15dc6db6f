package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/results"
)

const checkUsage = `Usage: groupquake check [flags] RUN_DIR

Re-runs every checker over a saved run, offline, and prints the verdicts. It
leaves the run directory as it is: with --write it rewrites verdicts.json and
report.html together, so the page never shows a verdict the directory's
verdicts.json does not hold. A run killed halfway is judged up to where it
stopped, and what could not be judged is said.

Exit status: 0 the run reached its end and no checker found a violation
(skipped checkers are counted apart), 1 a violation, 2 RUN_DIR is not a
readable run directory, 3 the run was cut short (interrupted, killed, stopped
by its bound: no violation up to where it stopped, which is not a hold), never
got past its setup (nothing to judge), or --write could not write
verdicts.json or report.html.
`

func cmdCheck(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", checkUsage)
	write := fs.Bool("write", false, "rewrite verdicts.json and report.html in the run directory with these verdicts")
	asJSON := fs.Bool("json", false, "print the verdicts as JSON on stdout")
	pos, con, err := parseWithConsole(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInput("check takes one run directory, got %d arguments (see 'groupquake check -h')", len(pos))
	}
	dir := pos[0]
	if err := runDirExists(dir); err != nil {
		return err
	}
	j, err := run.Judge(dir)
	var inc *run.IncompleteError
	if errors.As(err, &inc) {
		return badInput("%v", err)
	}
	if err != nil {
		return badInput("run directory %s: %v", dir, err)
	}
	if !pastSetup(j.Events) && len(j.Flaws) == 0 {
		// Nothing happened to judge: no tally for it. (A history that lost its first lines is
		// judged: HistoryWellFormed says what is missing.)
		err := fmt.Errorf("the run in %s never happened: it stopped in its setup, before any member started, so there is nothing to judge (its history.jsonl says how far it got; rerun it with rerun.sh)", dir)
		if j.Report.Stopped != "" {
			err = fmt.Errorf("%w; it %s", err, j.Report.Stopped)
		}
		if *asJSON {
			doc := judgement(j.Plan, dir, nil, err)
			doc.Stopped = j.Report.Stopped
			if jerr := writeJSON(stdout, runDoc{schemaVersion, doc}); jerr != nil {
				return jerr
			}
		}
		return exitError{exitFailed, err.Error()}
	}
	if *write {
		if err := run.WriteVerdicts(dir, j.Report); err != nil {
			return exitError{exitFailed, fmt.Sprintf("--write: %v", err)}
		}
		if err := run.WriteReport(dir, j); err != nil {
			return exitError{exitFailed, fmt.Sprintf("--write: %s rewritten, but %s not: %v", run.VerdictsFile, run.ReportFile, err)}
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, runDoc{schemaVersion, judgement(j.Plan, dir, &j, nil)}); err != nil {
			return err
		}
	} else {
		printJudgement(stdout, j)
	}
	status := verdictStatus(j.Report)
	var short error
	if status == nil {
		status = cutShort(j)
		short = status
	}
	// A run cut short is on the CI job's summary page too: it did not hold.
	stepSummary(con.Logf, "groupquake check "+dir, dir, j.Plan, &j, short)
	return status
}

// cutShort is the status of a judged run that found no violation: nil when
// the run reached its end, else an exitFailed error that says the run was cut
// short and where. No violation up to there is not a hold (the checkers of
// the end of the run could not judge it); as `run` does for an interrupted
// run, `check` exits 3 then, not 0.
func cutShort(j run.Judged) error {
	if j.Report.Stopped == "" {
		return nil
	}
	return exitError{exitFailed, fmt.Sprintf("the run %s: no checker found a violation up to there, but the run was cut short, so it does not hold; rerun it to judge it whole: %s", j.Report.Stopped, j.Plan.Command())}
}

// runDirExists refuses a RUN_DIR that is not there or not a directory, and
// one that only holds run directories below it (./runs), naming one.
func runDirExists(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return badInput("run directory %s does not exist: give the directory a run wrote (groupquake run prints it; by default ./runs/<time>-<seed>/)", dir)
	case err != nil:
		return badInput("run directory %s: %v", dir, err)
	case !st.IsDir():
		return badInput("%s is a file, not a run directory: give the directory that holds %s and %s", dir, run.PlanFile, run.HistoryFile)
	}
	if _, err := os.Stat(filepath.Join(dir, run.PlanFile)); err == nil {
		return nil
	}
	if below := runDirsBelow(dir); len(below) > 0 {
		return badInput("%s holds no run itself but %d run directories below it: check one of them, e.g. groupquake check %s", dir, len(below), below[len(below)-1])
	}
	return nil
}

// printJudgement prints the verdicts, and for each violation the events
// that show it, then the tally of holds, violations and skips.
func printJudgement(w io.Writer, j run.Judged) {
	fmt.Fprintf(w, "run of seed %d, scenario %s, group %s: %d events\n", j.Plan.Seed, j.Plan.Options.Scenario, j.Plan.Group, len(j.Events))
	for _, n := range j.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	events := results.IndexEvents(j.Events)
	for _, v := range j.Report.Verdicts {
		switch {
		case v.Skipped != "":
			fmt.Fprintf(w, "SKIP  %s: %s\n", v.Name, v.Skipped)
		case v.Holds:
			fmt.Fprintf(w, "ok    %s", v.Name)
			if len(v.Notes) > 0 {
				fmt.Fprintf(w, " (%s)", strings.Join(v.Notes, "; "))
			}
			fmt.Fprintln(w)
		default:
			fmt.Fprintf(w, "FAIL  %s: %d violations\n", v.Name, len(v.Violations))
			results.WriteViolations(w, v, events, "    ")
		}
	}
	for _, n := range j.Report.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if c := j.Report.RebalanceCost; c != nil {
		protos := make([]string, 0, len(c.Protocols))
		for p := range c.Protocols {
			protos = append(protos, p)
		}
		sort.Strings(protos)
		for _, p := range protos {
			pc := c.Protocols[p]
			fmt.Fprintf(w, "rebalance cost (%s): %d partition stops (p50 %s, max %s), %d member stops (max %s)\n",
				p, pc.PartitionStops.Count, pc.PartitionStops.P50, pc.PartitionStops.Max, pc.MemberStops.Count, pc.MemberStops.Max)
		}
	}
	fmt.Fprintln(w, results.Count(j.Report.Verdicts))
}

// verdictStatus is the exit status of a judged run: nil when no checker
// found a violation, else an exitViolation error naming the checkers.
func verdictStatus(rep check.Report) error {
	t := results.Count(rep.Verdicts)
	if len(t.Violated) == 0 {
		return nil
	}
	return exitError{exitViolation, fmt.Sprintf("%d of %d checkers found violations: %s", len(t.Violated), t.Total, strings.Join(t.Violated, ", "))}
}

// stepSummary adds a failed run to the CI job's summary page when the
// command runs on GitHub Actions ($GITHUB_STEP_SUMMARY); a write error is
// only logged.
func stepSummary(logf func(string, ...any), title, dir string, p run.Plan, j *run.Judged, runErr error) {
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return
	}
	s := results.StepSummary{Title: title, Dir: dir, Rerun: p.Command()}
	if j != nil {
		s.Verdicts, s.Events = j.Report.Verdicts, results.IndexEvents(j.Events)
	}
	if runErr != nil {
		s.Error = runErr.Error()
	}
	if err := results.AppendStepSummary(path, s); err != nil {
		logf("%v", err)
	}
}
