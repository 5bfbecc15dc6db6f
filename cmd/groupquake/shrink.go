package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

const shrinkUsage = `Usage: groupquake shrink RUN_DIR [--checker NAME] [--tries N] [--max-trials N] [--out DIR] [--bound D] [--image-source S] [--json]

For a run that failed (a checker was violated), finds a smaller set of its
plan's faults under which the same checker is still violated: which
fault(s) the violation needs. Each trial is the run's plan (seed, members,
workload, durations) with a subset of its faults, carried out on a cluster
like the run's (the embedded cluster for an embedded run, else a container
cluster of the plan's Kafka version and node count, started once for every
trial and removed at the end, or on Ctrl-C). The first trial has no fault
at all; then delta debugging (ddmin) halves the set, keeping a part, or
the rest without a part, that still fails. A migration's steps are not
faults to drop: they stay in every trial (they replace members and leave
the cluster as it was, so the trials can share it; the trials' cluster has
the run's migration policy). A rolling upgrade's run is refused (below).

A subset still fails when a target checker (--checker, default every
checker the run violated) is violated in any of --tries runs of it. A
cluster is not deterministic: a subset that held may be a miss, which the
output says; more --tries make a miss less likely. --max-trials bounds the
subsets tried (each up to --tries runs); the output says when the bound
stopped the search before the set was minimal.

Each trial is a run directory of its own, RUN_DIR/shrink/NN-<faults>/ (or
under --out), named by the faults it kept (f2+5: the plan's 2nd and 5th
fault, "none": no fault), with its plan.json: groupquake check and report
read it, and groupquake run --plan DIR/plan.json reruns it. At the end it
prints the smallest failing fault set and the command that reruns it.

Refused (exit 2, nothing started): a directory that is missing or not a
run, a run that held (nothing to shrink) or was cut short, a plan without
faults (the violation needs no fault: rerun it as a baseline), a --checker
that is unknown or was not violated there, a run on --bootstrap, a plan
with a rolling upgrade's steps (one cluster serves every trial, and the
first trial's upgrade would leave it upgraded: rerun such a run with
groupquake upgrade, or bisect its faults by hand with edited copies of its
plan.json and groupquake run --plan), a plan with a member kind this
groupquake does not know, a --bound not longer than the plan's workload.

Exit status: 0 the search ended (the smallest failing set is printed, also
when --max-trials stopped it), 2 bad input, 3 the plan's member kinds
could not be prepared (no Java, a failed build), a trial could not be
carried out, its cluster did not start, or the search was interrupted (the
trials so far are printed).
`

// shrinkFlags are the flags of `groupquake shrink`.
type shrinkFlags struct {
	checker     string
	tries       int
	maxTrials   int
	out         string
	bound       time.Duration
	imageSource string
	json        bool
}

// shrinkTrialJSON is one run of a trial.
type shrinkTrialJSON struct {
	N     int    `json:"n"`
	Kept  []int  `json:"kept"` // the plan's faults kept, counted from 1
	Try   int    `json:"try"`
	Fails bool   `json:"fails"`
	Holds bool   `json:"holds"`
	Dir   string `json:"dir"`
	// Violated are the target checkers the run violated.
	Violated []string `json:"violated"`
	// Note says why a run neither holds nor fails: "interrupted" (Ctrl-C
	// stopped it; its directory holds it judged up to there).
	Note string `json:"note,omitempty"`
}

// shrinkJSON is shrink's --json document.
type shrinkJSON struct {
	SchemaVersion int      `json:"schema_version"`
	Dir           string   `json:"dir"`
	Out           string   `json:"out"`
	Checkers      []string `json:"checkers"`
	Faults        int      `json:"faults"`
	Tries         int      `json:"tries"`
	MaxTrials     int      `json:"max_trials"`
	// Kept are the faults of the smallest failing set (counted from 1 in
	// the plan's faults), and what each is.
	Kept       []int    `json:"kept"`
	KeptFaults []string `json:"kept_faults"`
	// NeedsNoFault: the trial without any fault failed.
	NeedsNoFault bool `json:"needs_no_fault"`
	// Bounded: --max-trials stopped the search before the set was minimal.
	Bounded bool              `json:"bounded"`
	Trials  []shrinkTrialJSON `json:"trials"`
	// Plan is the reduced plan's file (a trial's plan.json) and Rerun the
	// command that reruns the smallest failing set.
	Plan  string `json:"plan,omitempty"`
	Rerun string `json:"rerun"`
	Error string `json:"error,omitempty"`
}

func cmdShrink(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f shrinkFlags
	fs := newFlagSet("shrink", shrinkUsage)
	fs.StringVar(&f.checker, "checker", "", "the checker whose violation must stay (default: every checker the run violated; a trial fails when any of them is violated)")
	fs.IntVar(&f.tries, "tries", 1, "runs of each subset: it still fails when any of them violates the checker")
	fs.IntVar(&f.maxTrials, "max-trials", 16, "the most subsets tried")
	fs.StringVar(&f.out, "out", "", "directory of the trials' run directories (default: RUN_DIR/shrink/)")
	fs.DurationVar(&f.bound, "bound", 30*time.Minute, "how long each trial's run may take before it is stopped")
	fs.StringVar(&f.imageSource, "image-source", "auto", "auto, build or official (a container cluster's image)")
	fs.BoolVar(&f.json, "json", false, "print the result as JSON on stdout (the trials' progress stays on stderr)")
	pos, con, err := parseWithConsole(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInput("shrink takes one run directory, got %d arguments (see 'groupquake shrink -h')", len(pos))
	}
	switch {
	case f.tries < 1:
		return badInput("--tries %d: give 1 or more runs of each subset", f.tries)
	case f.maxTrials < 1:
		return badInput("--max-trials %d: give 1 or more", f.maxTrials)
	case f.bound <= 0:
		return badInput("--bound %s: give a positive bound, such as 30m", f.bound)
	}
	switch cluster.ImageSource(f.imageSource) {
	case cluster.SourceAuto, cluster.SourceBuild, cluster.SourceOfficial:
	default:
		return badInput("--image-source %q: use auto, build or official", f.imageSource)
	}
	s, err := newShrinker(pos[0], f)
	if err != nil {
		return err
	}
	s.con = con
	s.rerun = shrinkRerun(args, s)
	return s.shrink(ctx, stdout)
}

// shrinker is one shrink: the run, its targets, the trials so far.
type shrinker struct {
	f       shrinkFlags
	dir     string // the run directory, absolute
	out     string
	plan    run.Plan
	targets []string
	// pick are the indexes of the plan's faults that may be dropped: every
	// fault of the nemesis (a migration's or an upgrade's steps stay).
	pick []int
	reg  kinds.Registry
	h    cluster.Handle
	con  *console
	runs []shrinkTrialJSON
	n    int // trials so far
	// rerun is the command that reruns this shrink (said on a second Ctrl-C).
	rerun string
}

// shrinkRerun is the command line args (shrink's) again; with the default
// output folder, which a second shrink of the run refuses while it
// exists, it says to remove that first.
func shrinkRerun(args []string, s *shrinker) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	cmd := "groupquake shrink " + strings.Join(q, " ")
	if s.f.out == "" {
		cmd = "rm -r " + shellQuote(s.out) + " && " + cmd
	}
	return cmd
}

// newShrinker reads the run directory and refuses what cannot be shrunk.
func newShrinker(dir string, f shrinkFlags) (*shrinker, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, badInput("%s: %v: give the run directory of a run that failed (groupquake run prints it)", dir, errors.Unwrap(err))
	}
	if !run.IsRunDir(dir) {
		return nil, badInput("%s is not a run directory (it has no %s beside a %s): give the directory groupquake run wrote", dir, run.PlanFile, run.HistoryFile)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, badInput("%s: %v", dir, err)
	}
	j, err := run.Saved(dir)
	if err != nil {
		return nil, badInput("%v", err)
	}
	p := j.Plan
	if j.Report.Stopped != "" {
		return nil, badInput("the run %s was cut short (it %s): its verdicts speak of part of a run, a trial's of a whole one; rerun it (%s) and shrink that run", dir, j.Report.Stopped, p.Command())
	}
	targets, err := shrinkTargets(dir, j.Report, f.checker)
	if err != nil {
		return nil, err
	}
	if err := shrinkablePlan(dir, p, f.bound); err != nil {
		return nil, err
	}
	s := &shrinker{f: f, dir: abs, out: f.out, plan: p, targets: targets}
	for i, x := range p.Faults {
		if x.Family() != faults.FamilyMigration && x.Family() != faults.FamilyUpgrade {
			s.pick = append(s.pick, i)
		}
	}
	switch {
	case len(p.Faults) == 0:
		return nil, badInput("the plan of %s has no faults: the violation needs no fault; rerun it as a baseline: %s", dir, p.Command())
	case len(s.pick) == 0:
		return nil, badInput("the plan of %s has no faults of the nemesis, only the steps of its %s: nothing to drop; rerun it: %s", dir, p.Options.Scenario, p.Command())
	case len(p.Options.Bootstrap) > 0:
		return nil, badInput("the run %s ran on an external cluster (--bootstrap): shrink carries out its trials on the embedded cluster or containers it starts; rerun the plan's trials by hand with groupquake run --plan", dir)
	}
	if s.out == "" {
		s.out = filepath.Join(dir, run.ShrinkDir)
	}
	if _, err := os.Stat(s.out); err == nil {
		return nil, badInput("--out: %s already exists (an earlier shrink?): give another directory with --out, or remove it", s.out)
	}
	if err := checkOut(filepath.Join(s.out, "01-none")); err != nil {
		return nil, badInput("--out: %v", err)
	}
	return s, nil
}

// shrinkablePlan refuses, before anything starts, a plan shrink cannot
// carry out as trials: a rolling upgrade's (every trial would need a
// cluster of the old release, and shrink starts one cluster for all of
// them, which the first trial's upgrade leaves upgraded), members of kinds
// this groupquake does not know, and a --bound no longer than the plan's
// workload. A migration's steps replace members of the group; they do not
// change the cluster, so its trials share one cluster like any others.
func shrinkablePlan(dir string, p run.Plan, bound time.Duration) error {
	for _, x := range p.Faults {
		if x.Family() == faults.FamilyUpgrade {
			return badInput("the plan of %s upgrades its cluster (%s): shrink runs every trial on one cluster, which the first trial's upgrade would leave upgraded; rerun the run with groupquake upgrade, or bisect its faults by hand with edited copies of its %s and groupquake run --plan", dir, x.Kind, run.PlanFile)
		}
	}
	var named []string
	for _, m := range p.Members {
		if !slices.Contains(named, m.Kind) {
			named = append(named, m.Kind)
		}
	}
	if err := checkKinds("the plan of "+dir+": its members' kinds", strings.Join(named, ","), named, p.Options.ProcessKinds); err != nil {
		return err
	}
	if bound <= p.Workload {
		return badInput("--bound %s is not longer than the plan's workload (%s): each trial would be stopped in its workload; raise --bound (it also covers setup, heal and final observations)", bound, p.Workload)
	}
	return nil
}

// shrinkTargets are the checkers a trial must violate to fail: checker,
// which must have been violated in the run, or every one that was.
func shrinkTargets(dir string, rep check.Report, checker string) ([]string, error) {
	var violated, known []string
	for _, v := range rep.Verdicts {
		known = append(known, v.Name)
		if len(v.Violations) > 0 {
			violated = append(violated, v.Name)
		}
	}
	if checker != "" && !slices.Contains(known, checker) {
		return nil, badInput("--checker %s: no such checker; the run's checkers are %s", checker, strings.Join(known, ", "))
	}
	if len(violated) == 0 {
		return nil, badInput("the run %s held: no checker was violated, nothing to shrink (shrink a run that failed)", dir)
	}
	if checker == "" {
		return violated, nil
	}
	if !slices.Contains(violated, checker) {
		return nil, badInput("--checker %s held in the run %s: give one it violated: %s", checker, dir, strings.Join(violated, ", "))
	}
	return []string{checker}, nil
}
