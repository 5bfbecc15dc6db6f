package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
)

// Exit statuses of `groupquake check` (and of `groupquake run`, which ends
// with the same judgement).
const (
	exitHolds     = 0 // every checker holds
	exitViolation = 1 // some checker found a violation
	exitBadDir    = 2 // the run directory is unreadable or incomplete
)

// maxEventsShown bounds the events printed per violation, and
// maxViolationsShown the violations printed per checker: the first ones are
// what a person reads; verdicts.json has them all.
const (
	maxEventsShown     = 8
	maxViolationsShown = 10
)

func cmdCheck(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.Bool("write", false, "also (re)write verdicts.json in the run directory")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: groupquake check [--write] RUN_DIR\n\nRe-runs every checker over a saved run, offline, and rewrites its report.html. Exit status: 0 all hold, 1 a violation, 2 the directory is unreadable or incomplete.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError{exitBadDir, fmt.Sprintf("check takes one run directory, got %d arguments", fs.NArg())}
	}
	dir := fs.Arg(0)
	j, err := run.Judge(dir)
	var inc *run.IncompleteError
	if errors.As(err, &inc) {
		return exitError{exitBadDir, err.Error()}
	}
	if err != nil {
		return exitError{exitBadDir, fmt.Sprintf("run directory %s: %v", dir, err)}
	}
	if *write {
		if err := run.WriteVerdicts(dir, j.Report); err != nil {
			return err
		}
	}
	if err := run.WriteReport(dir, j); err != nil {
		fmt.Fprintf(stderr, "groupquake: %s not rewritten: %v\n", run.ReportFile, err)
	}
	return reportJudgement(stdout, j)
}

// reportJudgement prints the verdicts, and for each violation the events
// that show it, and returns the exit status as an exitError (nil when every
// checker holds).
func reportJudgement(w io.Writer, j run.Judged) error {
	fmt.Fprintf(w, "run of seed %d, scenario %s, group %s: %d events\n", j.Plan.Seed, j.Plan.Options.Scenario, j.Plan.Group, len(j.Events))
	for _, n := range j.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	byIndex := make(map[int64]history.Event, len(j.Events))
	for _, e := range j.Events {
		byIndex[e.Index] = e
	}
	violated := 0
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
			violated++
			fmt.Fprintf(w, "FAIL  %s: %d violations\n", v.Name, len(v.Violations))
			printViolations(w, v, byIndex)
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
	if violated > 0 {
		return exitError{exitViolation, fmt.Sprintf("%d of %d checkers found violations", violated, len(j.Report.Verdicts))}
	}
	fmt.Fprintf(w, "all %d checkers hold\n", len(j.Report.Verdicts))
	return nil
}

func printViolations(w io.Writer, v check.Verdict, byIndex map[int64]history.Event) {
	for i, x := range v.Violations {
		if i == maxViolationsShown {
			fmt.Fprintf(w, "      … and %d more in verdicts.json\n", len(v.Violations)-i)
			break
		}
		fmt.Fprintf(w, "    - %s\n", x.Message)
		idx := append([]int64(nil), x.EventIndexes...)
		sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
		for k, ix := range idx {
			if k == maxEventsShown {
				fmt.Fprintf(w, "        … %d more events\n", len(idx)-k)
				break
			}
			if e, ok := byIndex[ix]; ok {
				fmt.Fprintf(w, "        %s\n", e)
			} else {
				fmt.Fprintf(w, "        #%d (not in the history)\n", ix)
			}
		}
	}
	for _, n := range v.Notes {
		fmt.Fprintf(w, "      note: %s\n", n)
	}
}
