package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/harness/shrink"
)

// shrink starts the cluster, searches and says what it found.
func (s *shrinker) shrink(ctx context.Context, stdout io.Writer) error {
	logf := s.con.Logf
	p := s.plan
	var named []string
	for _, m := range p.Members {
		if !slices.Contains(named, m.Kind) {
			named = append(named, m.Kind)
		}
	}
	reg, err := kinds.Default().WithNamed(ctx, named, kinds.Env{Toolchain: &java.Toolchain{Logf: logf}, KafkaClients: p.KafkaClients()})
	if err != nil {
		return prepareFailed("the plan of "+s.dir, err)
	}
	s.reg = reg.WithUserKinds(p.Options.ProcessKinds)
	s.con.Infof("shrinking %s: %d faults, target %s; trials in %s", s.dir, len(s.pick), strings.Join(s.targets, ", "), s.out)
	setRerun(s.rerun)
	if s.h, err = startShrinkCluster(s, ctx); err != nil {
		msg := fmt.Sprintf("the trials' cluster could not be started: %v", err)
		if ierr := signalled(ctx, "while the trials' cluster started (what it had started is removed; no trial was run)"); ierr != nil {
			msg = ierr.Error()
		}
		return exitError{exitFailed, msg}
	}
	defer func() {
		if err := s.h.Close(context.WithoutCancel(ctx)); err != nil {
			logf("closing the cluster: %v", err)
		}
	}()
	stopWatch := s.con.watch(ctx)
	res, serr := shrink.DDMin(len(s.pick), s.f.maxTrials, func(kept []int) (bool, error) { return s.trial(ctx, kept) })
	stopWatch()
	return s.say(res, serr, stdout)
}

// startShrinkCluster starts the trials' cluster, and runTrial carries out
// a trial's run (a test stands in for them).
var (
	startShrinkCluster = (*shrinker).startCluster
	runTrial           = run.Run
)

// startCluster starts the cluster every trial runs on, like the run's.
func (s *shrinker) startCluster(ctx context.Context) (cluster.Handle, error) {
	emb, cc := s.clusterConfigs()
	if s.plan.Options.Embedded {
		return cluster.StartEmbedded(ctx, emb)
	}
	if _, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(s.con.Logf)); err != nil {
		return nil, fmt.Errorf("the run was on a container cluster, and no Docker engine answers: %w (groupquake engine up, as root)", err)
	}
	return cluster.Start(ctx, cc)
}

// clusterConfigs are the configurations of the trials' cluster, embedded
// or of containers, like the run's: its release and size, and a
// migration's group.consumer.migration.policy (a migration's steps replace
// members; they leave the cluster as it was, so its trials can share one).
func (s *shrinker) clusterConfigs() (cluster.EmbeddedConfig, cluster.Config) {
	o := s.plan.Options
	var logf func(string, ...any)
	if s.con != nil {
		logf = s.con.Logf
	}
	emb := cluster.EmbeddedConfig{Version: o.Kafka, MigrationPolicy: o.MigrationPolicy, Logf: logf}
	cc := cluster.Config{
		Version: o.Kafka, Nodes: o.Nodes, Controllers: o.Controllers,
		Image: cluster.ImageOptions{Source: cluster.ImageSource(s.f.imageSource)}, Logf: logf,
	}
	if o.MigrationPolicy != "" {
		cc.Settings = map[string]string{migrationPolicySetting: o.MigrationPolicy}
	}
	return emb, cc
}

// migrationPolicySetting is the broker setting a migration's plan sets
// (run.Options.MigrationPolicy).
const migrationPolicySetting = "group.consumer.migration.policy"

// trialPlan is the run's plan with the faults of kept (indexes into
// s.pick) and a migration's or upgrade's steps, its group, topics and
// instance ids named for trial n (the trials share a cluster), rerun from
// the plan file in dir.
func (s *shrinker) trialPlan(kept []int, n int, dir string) run.Plan {
	tp := s.plan
	var orig []int
	tp.Faults = nil
	for i, x := range s.plan.Faults {
		if j := slices.Index(s.pick, i); j < 0 || slices.Contains(kept, j) {
			tp.Faults = append(tp.Faults, x)
			orig = append(orig, i)
		}
	}
	suffix := fmt.Sprintf("-s%02d", n)
	old := tp.Group
	tp.Group += suffix
	tp.Topics = slices.Clone(tp.Topics)
	for i := range tp.Topics {
		tp.Topics[i].Name += suffix
	}
	tp.Members = slices.Clone(tp.Members)
	for i, m := range tp.Members {
		if m.InstanceID != "" {
			tp.Members[i].InstanceID = tp.Group + strings.TrimPrefix(m.InstanceID, old)
		}
	}
	tp.Options.Group, tp.Options.Topic = tp.Group, ""
	if len(tp.Topics) == 1 {
		tp.Options.Topic = tp.Topics[0].Name
	}
	plan, _ := filepath.Abs(filepath.Join(dir, run.PlanFile))
	tp.Saved = &run.SavedPlan{File: plan, ShrunkFrom: s.dir, Kept: orig}
	return tp
}

// faultsName names kept (indexes into s.pick) by the plan's faults,
// counted from 1.
func (s *shrinker) faultsName(kept []int) ([]int, string) {
	orig := []int{}
	for _, j := range kept {
		orig = append(orig, s.pick[j]+1)
	}
	idx := make([]int, len(orig))
	for i, o := range orig {
		idx[i] = o - 1
	}
	return orig, shrink.Name(idx)
}

// trial runs the plan with the faults of kept up to --tries times, and
// says whether a target checker was violated in any run.
func (s *shrinker) trial(ctx context.Context, kept []int) (bool, error) {
	counted, name := s.faultsName(kept)
	for try := 1; try <= s.f.tries; try++ {
		s.n++
		dir := filepath.Join(s.out, fmt.Sprintf("%02d-%s", s.n, name))
		tp := s.trialPlan(kept, s.n, dir)
		s.con.Infof("trial %d: faults %s (%d of %d), run %d of at most %d: %s", s.n, name, len(kept), len(s.pick), try, s.f.tries, dir)
		rctx, cancel := context.WithTimeout(ctx, s.f.bound)
		done := writing(dir)
		s.con.expectWorkload(tp.Workload)
		res, err := runTrial(rctx, run.Config{Plan: tp, Dir: dir, Registry: s.reg, Cluster: s.h, Disposable: true, Logf: s.con.Logf, KgoLog: kgoLog(s.con), OnPhase: onPhase})
		done()
		cancel()
		for _, n := range res.Notes {
			s.con.Logf("note: %s", n)
		}
		violated := violatedOf(res.Report, s.targets)
		t := shrinkTrialJSON{N: s.n, Kept: counted, Try: try, Fails: len(violated) > 0, Dir: dir, Violated: violated}
		if ierr := interrupted(ctx, fmt.Sprintf("in trial %d (%s)", s.n, dir)); ierr != nil {
			// Its directory holds the run up to there, judged: it is one of
			// the trials, neither holding nor (for the search) failing.
			t.Fails, t.Note = false, "interrupted"
			s.runs = append(s.runs, t)
			return false, ierr
		}
		restoreNodes(ctx, s.h, s.con.Logf)
		t.Holds = !t.Fails && err == nil && res.Report.Stopped == ""
		s.runs = append(s.runs, t)
		s.con.Infof("trial %d: %s", s.n, trialVerdict(t))
		if t.Fails {
			return true, nil
		}
		if !t.Holds {
			why := "it was cut short: " + res.Report.Stopped
			if err != nil {
				why = err.Error()
			}
			return false, exitError{exitFailed, fmt.Sprintf("trial %d (%s) could not be carried out: %s", s.n, dir, why)}
		}
	}
	return false, nil
}

// violatedOf are the targets rep violates.
func violatedOf(rep check.Report, targets []string) []string {
	out := []string{}
	for _, v := range rep.Verdicts {
		if len(v.Violations) > 0 && slices.Contains(targets, v.Name) {
			out = append(out, v.Name)
		}
	}
	return out
}

// trialVerdict is a trial run's verdict in a few words.
func trialVerdict(t shrinkTrialJSON) string {
	switch {
	case t.Fails:
		return "still fails: " + strings.Join(t.Violated, ", ") + " violated"
	case t.Holds:
		return "holds (may be a miss: a cluster is not deterministic)"
	case t.Note != "":
		return t.Note
	}
	return "not carried out"
}

// say prints the trials and the smallest failing set, and returns the
// exit status.
func (s *shrinker) say(res shrink.Result, serr error, stdout io.Writer) error {
	doc := shrinkJSON{SchemaVersion: schemaVersion, Dir: s.dir, Out: s.out, Checkers: s.targets, Faults: len(s.pick), Tries: s.f.tries, MaxTrials: s.f.maxTrials,
		Bounded: res.Bounded, Trials: s.runs, Kept: []int{}, KeptFaults: []string{}}
	if doc.Trials == nil {
		doc.Trials = []shrinkTrialJSON{}
	}
	for _, j := range res.Kept {
		doc.Kept = append(doc.Kept, s.pick[j]+1)
		doc.KeptFaults = append(doc.KeptFaults, fmt.Sprintf("f%d: %s", s.pick[j]+1, s.plan.Faults[s.pick[j]]))
	}
	doc.NeedsNoFault = len(res.Kept) == 0 && len(res.Trials) > 0 && res.Trials[0].Fails
	doc.Rerun = s.plan.Command()
	if len(res.Kept) < len(s.pick) {
		// The last failing trial of that set holds its reduced plan.
		for i := len(s.runs) - 1; i >= 0; i-- {
			if t := s.runs[i]; t.Fails && slices.Equal(t.Kept, doc.Kept) {
				doc.Plan = filepath.Join(t.Dir, run.PlanFile)
				doc.Rerun = "groupquake run --plan " + shellQuote(doc.Plan)
				break
			}
		}
	}
	if serr != nil {
		doc.Error = serr.Error()
	}
	if s.f.json {
		if err := writeJSON(stdout, doc); err != nil {
			return err
		}
	} else {
		writeShrink(stdout, doc)
	}
	if serr != nil {
		var ex exitError
		if errors.As(serr, &ex) {
			return ex
		}
		return exitError{exitFailed, serr.Error()}
	}
	return nil
}

// writeShrink writes the trials and the smallest failing set.
func writeShrink(w io.Writer, d shrinkJSON) {
	fmt.Fprintf(w, "shrink of %s: %d faults, target %s, %d run(s) a subset, at most %d subsets\n", d.Dir, d.Faults, strings.Join(d.Checkers, ", "), d.Tries, d.MaxTrials)
	held := 0
	for _, t := range d.Trials {
		fmt.Fprintf(w, "  %02d  faults %-12s %s  %s\n", t.N, keptName(t.Kept), trialVerdict(t), t.Dir)
		if t.Holds {
			held++
		}
	}
	switch {
	case d.Error != "":
		fmt.Fprintf(w, "stopped: %s\nsmallest failing set so far: %s\n", d.Error, keptName(d.Kept))
	case d.NeedsNoFault:
		fmt.Fprintf(w, "the violation needs no fault: the trial without any fault violated %s; rerun it as a baseline\n", strings.Join(noFaultViolated(d.Trials), ", "))
	case d.Bounded:
		fmt.Fprintf(w, "--max-trials %d stopped the search: the smallest failing set found, %d of %d faults, may not be minimal\n", d.MaxTrials, len(d.Kept), d.Faults)
	case len(d.Kept) == d.Faults:
		fmt.Fprintf(w, "no smaller set failed: the violation may need every one of the %d faults\n", d.Faults)
	default:
		fmt.Fprintf(w, "smallest failing set: %d of %d faults (dropping any one of them held)\n", len(d.Kept), d.Faults)
	}
	for _, k := range d.KeptFaults {
		fmt.Fprintf(w, "  %s\n", k)
	}
	if held > 0 {
		fmt.Fprintf(w, "%d trial run(s) held; each may be a miss (a cluster is not deterministic): --tries N runs each subset N times\n", held)
	}
	fmt.Fprintf(w, "rerun it with: %s\n", d.Rerun)
}

// noFaultViolated are the checkers the failing run of the trial without
// faults violated (with --tries, runs of it before may have held).
func noFaultViolated(trials []shrinkTrialJSON) []string {
	for _, t := range trials {
		if len(t.Kept) == 0 && t.Fails {
			return t.Violated
		}
	}
	return nil
}

// keptName is a set of the plan's faults counted from 1, as trial
// directories name it.
func keptName(kept []int) string {
	idx := make([]int, len(kept))
	for i, k := range kept {
		idx[i] = k - 1
	}
	return shrink.Name(idx)
}

// shellQuote quotes s for a shell when it needs it.
func shellQuote(s string) string {
	if !strings.ContainsAny(s, " '\"$`\\") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
