package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/internal/interrupt"
)

// TestShrinkKeepsTheFaultTheViolationNeeds: a run of giveUpPlan (carried
// out with run --plan) fails EventuallyConverges; shrink finds that it
// needs m1's cut alone: the trial without faults holds, m2's cuts are
// dropped, and the reduced plan it writes names itself as its rerun (run
// --plan); without -short, that rerun is carried out and fails again.
func TestShrinkKeepsTheFaultTheViolationNeeds(t *testing.T) {
	p := giveUpPlan(t)
	dir := filepath.Join(t.TempDir(), "run")
	start := time.Now()
	if code, _, stderr := gq(t, "run", "--plan", writePlan(t, p), "--out", dir, "-q"); code != exitViolation {
		t.Fatalf("run --plan: exit %d, want %d (a violation)\n%s", code, exitViolation, stderr)
	}
	rep, err := run.ReadVerdicts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := violatedOf(rep, []string{check.NameEventuallyConverges}); len(got) == 0 {
		t.Fatalf("the run did not violate %s: %+v", check.NameEventuallyConverges, rep.Verdicts)
	}
	code, stdout, stderr := gq(t, "shrink", dir, "--checker", check.NameEventuallyConverges, "--json", "-q")
	if code != exitOK {
		t.Fatalf("shrink: exit %d\n%s\n%s", code, stdout, stderr)
	}
	validateJSON(t, "shrink", []byte(stdout))
	var doc shrinkJSON
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(doc.Kept, []int{1}) || doc.Bounded || doc.NeedsNoFault {
		t.Fatalf("kept %v (bounded %v, needs no fault %v), want the 1st fault alone; trials %+v", doc.Kept, doc.Bounded, doc.NeedsNoFault, doc.Trials)
	}
	if len(doc.Trials) == 0 || len(doc.Trials[0].Kept) != 0 || !doc.Trials[0].Holds {
		t.Errorf("the first trial is %+v, want no fault, holding", doc.Trials[0])
	}
	for _, tr := range doc.Trials {
		if want := filepath.Join(dir, run.ShrinkDir); filepath.Dir(tr.Dir) != want {
			t.Errorf("trial %d is in %s, want in %s", tr.N, tr.Dir, want)
		}
		if _, err := run.Judge(tr.Dir); err != nil {
			t.Errorf("trial %d cannot be judged again: %v", tr.N, err)
		}
	}
	reduced, err := run.LoadPlan(doc.Plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(reduced.Faults) != 1 || reduced.Faults[0] != p.Faults[0] || reduced.Saved == nil || !slices.Equal(reduced.Saved.Kept, []int{0}) || reduced.Saved.ShrunkFrom != dir {
		t.Fatalf("the reduced plan %s has faults %v (saved %+v), want m1's cut alone", doc.Plan, reduced.Faults, reduced.Saved)
	}
	if want := "groupquake run --plan " + doc.Plan; doc.Rerun != want || reduced.Command() != want {
		t.Errorf("rerun %q, plan's command %q; want %q", doc.Rerun, reduced.Command(), want)
	}
	script, err := os.ReadFile(filepath.Join(filepath.Dir(doc.Plan), run.RerunFile))
	if err != nil || !strings.Contains(string(script), "groupquake run --plan "+doc.Plan) {
		t.Errorf("the reduced plan's rerun.sh does not rerun its plan file (%v):\n%s", err, script)
	}
	t.Logf("run and shrink (%d trials) took %s", len(doc.Trials), time.Since(start).Round(time.Second))
	shrinkRefusals(t, dir)
	shrinkInterrupted(t, dir)
	if testing.Short() {
		t.Log("-short: the rerun of the reduced plan (one more run, 10 s) is left out")
		return
	}
	again := filepath.Join(t.TempDir(), "again")
	if code, _, stderr := gq(t, "run", "--plan", doc.Plan, "--out", again, "-q"); code != exitViolation {
		t.Errorf("the rerun of the reduced plan exits %d, want %d\n%s", code, exitViolation, stderr)
	}
}

// shrinkRefusals checks, on copies of the failed run dir, what shrink
// refuses before it starts anything.
func shrinkRefusals(t *testing.T, dir string) {
	t.Helper()
	variant := func(name string, edit func(d string, p *run.Plan, rep *check.Report)) string {
		d := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{run.HistoryFile, run.ObservationsFile} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(d, f), b, 0o644)
		}
		p, err := run.LoadPlan(filepath.Join(dir, run.PlanFile))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := run.ReadVerdicts(dir)
		if err != nil {
			t.Fatal(err)
		}
		edit(d, &p, &rep)
		b, _ := json.Marshal(p)
		os.WriteFile(filepath.Join(d, run.PlanFile), b, 0o644)
		if err := run.WriteVerdicts(d, rep); err != nil {
			t.Fatal(err)
		}
		return d
	}
	held := variant("held", func(_ string, _ *run.Plan, rep *check.Report) {
		for i := range rep.Verdicts {
			rep.Verdicts[i].Violations, rep.Verdicts[i].Holds = nil, true
		}
		rep.Holds = true
	})
	noFaults := variant("nofaults", func(_ string, p *run.Plan, _ *check.Report) { p.Faults = nil })
	cut := variant("cut", func(_ string, _ *run.Plan, rep *check.Report) {
		rep.Stopped = "was interrupted by SIGINT in its workload phase"
	})
	notRun := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{held}, "held: no checker was violated, nothing to shrink"},
		{[]string{noFaults}, "has no faults: the violation needs no fault; rerun it as a baseline"},
		{[]string{cut}, "was cut short"},
		{[]string{filepath.Join(notRun, "missing")}, "give the run directory of a run that failed"},
		{[]string{notRun}, "is not a run directory"},
		{[]string{dir, "--checker", "Nope"}, "--checker Nope: no such checker"},
		{[]string{dir, "--checker", check.NameNoDoubleOwnership}, "--checker " + check.NameNoDoubleOwnership + " held in the run"},
		{[]string{dir, "--tries", "0"}, "--tries 0"},
		{[]string{dir, "--max-trials", "0"}, "--max-trials 0"},
		{[]string{dir}, "already exists (an earlier shrink?)"},
		{[]string{}, "shrink takes one run directory"},
	} {
		code, _, stderr := gq(t, append([]string{"shrink"}, c.args...)...)
		if code != exitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("shrink %q: exit %d, %q; want exit 2 saying %q", c.args, code, stderr, c.want)
		}
	}
}

// A run's shrink trials are not runs of a folder above it (triage, report
// and check count them apart), but are when their folder is given.
func TestRunDirsBelowLeavesShrinkTrials(t *testing.T) {
	root := t.TempDir()
	mk := func(d string) string {
		d = filepath.Join(root, d)
		os.MkdirAll(d, 0o755)
		for _, f := range []string{run.PlanFile, run.HistoryFile} {
			os.WriteFile(filepath.Join(d, f), []byte("{}"), 0o644)
		}
		return d
	}
	r, other := mk("run"), mk("other")
	t1, t2 := mk("run/shrink/01-none"), mk("run/shrink/02-f1")
	notRun := mk("notrun/shrink/01") // a shrink folder of no run: a folder like any
	// Trials placed with --out elsewhere: their plans record the run they
	// were shrunk from; a rerun of one (run --plan) does not.
	trial := func(d, shrunkFrom string) string {
		d = mk(d)
		b, _ := json.Marshal(map[string]any{"saved": map[string]any{"file": filepath.Join(d, run.PlanFile), "shrunk_from": shrunkFrom}})
		os.WriteFile(filepath.Join(d, run.PlanFile), b, 0o644)
		return d
	}
	o1 := trial("trials/01-none", r)
	rerun := trial("rerun", "")
	if got, want := runDirsBelow(root), []string{notRun, other, rerun, r}; !slices.Equal(got, want) {
		t.Errorf("runDirsBelow(root) = %v, want %v", got, want)
	}
	if got, want := runDirsBelow(filepath.Join(r, run.ShrinkDir)), []string{t1, t2}; !slices.Equal(got, want) {
		t.Errorf("runDirsBelow(run/shrink) = %v, want %v", got, want)
	}
	for _, d := range []string{filepath.Join(root, "trials"), o1} {
		if got, want := runDirsBelow(d), []string{o1}; !slices.Equal(got, want) {
			t.Errorf("runDirsBelow(%s) = %v, want %v", d, got, want)
		}
	}
}

// shrinkInterrupted: Ctrl-C in the first trial's workload stops the
// search: exit 3, the trial judged up to there, and the output says where
// it stopped and what it had (the whole set, nothing dropped yet).
func shrinkInterrupted(t *testing.T, dir string) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var once sync.Once
	onPhase = func(_ context.Context, phase string) {
		if phase == history.PhaseWorkload {
			once.Do(func() { cancel(interrupt.Signal{Sig: os.Interrupt}) })
		}
	}
	defer func() { onPhase = nil }()
	out := filepath.Join(t.TempDir(), "trials")
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, []string{"shrink", dir, "--out", out, "-q"}, &stdout, &stderr)
	trial := filepath.Join(out, "01-none")
	if code != exitFailed || !strings.Contains(stdout.String(), "stopped: interrupted by SIGINT in trial 1 ("+trial+")") ||
		!strings.Contains(stdout.String(), "smallest failing set so far: f1+2+3") {
		t.Errorf("shrink interrupted in trial 1: exit %d, want 3 and where it stopped\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(filepath.Join(trial, run.VerdictsFile)); err != nil {
		t.Errorf("the interrupted trial was not judged up to where it stopped: %v", err)
	}
}

// What the end of a shrink says: the bound that stopped it, a violation
// that needs no fault, and that holding trials may be misses.
func TestWriteShrink(t *testing.T) {
	tr := func(n int, kept []int, fails bool) shrinkTrialJSON {
		t := shrinkTrialJSON{N: n, Kept: kept, Try: 1, Fails: fails, Holds: !fails, Dir: "d", Violated: []string{}}
		if fails {
			t.Violated = []string{"NoLostRecords"}
		}
		return t
	}
	for _, c := range []struct {
		name string
		doc  shrinkJSON
		want []string
		not  []string
	}{
		{"bounded", shrinkJSON{Faults: 6, MaxTrials: 2, Bounded: true, Kept: []int{1, 2, 3}, Trials: []shrinkTrialJSON{tr(1, []int{}, false), tr(2, []int{1, 2, 3}, true)}},
			[]string{"--max-trials 2 stopped the search: the smallest failing set found, 3 of 6 faults, may not be minimal", "1 trial run(s) held; each may be a miss"}, []string{"smallest failing set: "}},
		{"no fault", shrinkJSON{Faults: 4, MaxTrials: 16, NeedsNoFault: true, Kept: []int{}, Trials: []shrinkTrialJSON{tr(1, []int{}, true)}},
			[]string{"the violation needs no fault: the trial without any fault violated NoLostRecords; rerun it as a baseline"}, []string{"held; each may be a miss"}},
		{"minimal", shrinkJSON{Faults: 4, MaxTrials: 16, Kept: []int{3}, KeptFaults: []string{"f3: link-cut m1"}, Rerun: "groupquake run --plan x/plan.json", Trials: []shrinkTrialJSON{tr(1, []int{}, false), tr(2, []int{3}, true)}},
			[]string{"smallest failing set: 1 of 4 faults (dropping any one of them held)", "  f3: link-cut m1", "rerun it with: groupquake run --plan x/plan.json", "faults f3 "}, nil},
		{"all needed", shrinkJSON{Faults: 2, MaxTrials: 16, Kept: []int{1, 2}, Trials: []shrinkTrialJSON{tr(1, []int{}, false), tr(2, []int{1}, false), tr(3, []int{2}, false)}},
			[]string{"no smaller set failed: the violation may need every one of the 2 faults", "3 trial run(s) held"}, nil},
	} {
		var b bytes.Buffer
		writeShrink(&b, c.doc)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: the output lacks %q:\n%s", c.name, w, b.String())
			}
		}
		for _, w := range c.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: the output says %q:\n%s", c.name, w, b.String())
			}
		}
	}
}

// fakeFailedRun writes a run directory of p that violated checker, without
// running anything: what shrink reads before it starts a cluster.
func fakeFailedRun(t *testing.T, p run.Plan, checker string) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, run.PlanFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, run.HistoryFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := check.Report{Verdicts: []check.Verdict{{Name: checker, Violations: []check.Violation{{Message: "scripted"}}}}}
	if err := run.WriteVerdicts(d, rep); err != nil {
		t.Fatal(err)
	}
	return d
}

// shrinkStarts records whether a shrink got as far as starting its
// cluster, and stops it there.
func shrinkStarts(t *testing.T) *bool {
	t.Helper()
	started := false
	startShrinkCluster = func(*shrinker, context.Context) (cluster.Handle, error) {
		started = true
		return nil, errors.New("no cluster in this test")
	}
	t.Cleanup(func() { startShrinkCluster = (*shrinker).startCluster })
	return &started
}

// What shrink refuses in a run's plan before it starts anything: a
// rolling upgrade's steps (one cluster for every trial would stay
// upgraded), a member kind it does not know, a --bound no longer than the
// plan's workload.
func TestShrinkRefusesPlansBeforeStarting(t *testing.T) {
	started := shrinkStarts(t)
	up, err := run.NewPlan(3, run.Options{Scenario: run.ScenarioBrokerFaults, Kafka: "4.1.2", Nodes: 3, Kinds: []string{"classic", "consumer"}, UpgradeTo: "4.4.0"}, kinds.Default().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(up.Faults, func(x faults.Fault) bool { return x.Family() == faults.FamilyUpgrade }) {
		t.Fatalf("the upgrade plan has no upgrade step: %v", up.Faults)
	}
	unknown := giveUpPlan(t)
	unknown.Members = slices.Clone(unknown.Members)
	unknown.Members[1].Kind = "no-such-kind"
	p := giveUpPlan(t)
	for _, c := range []struct {
		name string
		dir  string
		args []string
		want string
	}{
		{"upgrade", fakeFailedRun(t, up, check.NameEventuallyConverges), nil, "upgrades its cluster (node-upgrade): shrink runs every trial on one cluster"},
		{"unknown kind", fakeFailedRun(t, unknown, check.NameEventuallyConverges), nil, `unknown member kind "no-such-kind"`},
		{"bound", fakeFailedRun(t, p, check.NameEventuallyConverges), []string{"--bound", p.Workload.String()}, "is not longer than the plan's workload (" + p.Workload.String() + ")"},
	} {
		code, _, stderr := gq(t, append([]string{"shrink", c.dir, "-q"}, c.args...)...)
		if code != exitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want exit 2 saying %q", c.name, code, stderr, c.want)
		}
		if *started {
			t.Fatalf("%s: the trials' cluster was started", c.name)
		}
		if _, err := os.Stat(filepath.Join(c.dir, run.ShrinkDir)); err == nil {
			t.Errorf("%s: %s was written", c.name, run.ShrinkDir)
		}
	}
	// The same plan with a bound past its workload gets as far as the cluster.
	code, _, stderr := gq(t, "shrink", fakeFailedRun(t, p, check.NameEventuallyConverges), "-q", "--bound", (p.Workload + time.Second).String())
	if code != exitFailed || !*started {
		t.Errorf("a shrinkable plan: exit %d (started %v), want 3 from the test's cluster\n%s", code, *started, stderr)
	}
}

// A migration's trials run on a cluster with the run's migration policy
// (its steps replace members and leave the cluster as it was, so the
// trials share one); the migration steps stay in every trial.
func TestShrinkMigrationTrials(t *testing.T) {
	for _, embedded := range []bool{true, false} {
		o := run.Options{Scenario: run.ScenarioMigration, Kafka: "4.4.0", Embedded: embedded, Members: 2, MigrationPolicy: "upgrade", Faults: []faults.Kind{faults.LinkCut}}
		if !embedded {
			o.Nodes = 1
		}
		p, err := run.NewPlan(5, o, kinds.Default().Kinds())
		if err != nil {
			t.Fatal(err)
		}
		s, err := newShrinker(fakeFailedRun(t, p, check.NameEventuallyConverges), shrinkFlags{tries: 1, maxTrials: 4, bound: time.Hour, imageSource: "auto"})
		if err != nil {
			t.Fatalf("embedded %v: %v", embedded, err)
		}
		emb, cc := s.clusterConfigs()
		if emb.MigrationPolicy != "upgrade" || cc.Settings[migrationPolicySetting] != "upgrade" {
			t.Errorf("embedded %v: the trials' cluster has migration policy %q (embedded), %q (containers); want the run's, upgrade", embedded, emb.MigrationPolicy, cc.Settings[migrationPolicySetting])
		}
		var steps int
		for _, x := range p.Faults {
			if x.Family() == faults.FamilyMigration {
				steps++
			}
		}
		if steps == 0 {
			t.Fatalf("embedded %v: the migration plan has no migration step: %v", embedded, p.Faults)
		}
		tp := s.trialPlan(nil, 1, t.TempDir())
		if len(tp.Faults) != steps || len(tp.Faults) == 0 {
			t.Errorf("embedded %v: the trial without faults has %v, want the %d migration steps alone", embedded, tp.Faults, steps)
		}
	}
}

// noCluster is the trials' cluster of a scripted shrink: nothing.
type noCluster struct{ cluster.Handle }

func (noCluster) Close(context.Context) error { return nil }

// scriptShrink runs shrink over a fake failed run of giveUpPlan with
// scripted trials: run n (counted from 1) of plan tp violates
// EventuallyConverges when fails says so; it returns the run directory.
func scriptShrink(t *testing.T, fails func(ctx context.Context, n int, tp run.Plan) bool) string {
	t.Helper()
	startShrinkCluster = func(*shrinker, context.Context) (cluster.Handle, error) { return noCluster{}, nil }
	n := 0
	runTrial = func(ctx context.Context, cfg run.Config) (run.Result, error) {
		n++
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return run.Result{}, err
		}
		v := check.Verdict{Name: check.NameEventuallyConverges, Holds: true}
		if fails(ctx, n, cfg.Plan) {
			v.Holds, v.Violations = false, []check.Violation{{Message: "scripted"}}
		}
		return run.Result{Dir: cfg.Dir, Report: check.Report{Holds: v.Holds, Verdicts: []check.Verdict{v}}}, nil
	}
	t.Cleanup(func() { startShrinkCluster, runTrial = (*shrinker).startCluster, run.Run })
	return fakeFailedRun(t, giveUpPlan(t), check.NameEventuallyConverges)
}

// cutsM1 says whether a trial's plan kept m1's cut (giveUpPlan's 1st fault).
func cutsM1(tp run.Plan) bool {
	return slices.ContainsFunc(tp.Faults, func(x faults.Fault) bool { return x.Client == "m1" })
}

// Ctrl-C in a trial leaves it among the trials (its directory holds it,
// judged up to there): neither holding nor failing, noted interrupted, in
// the text and in --json.
func TestShrinkRecordsTheInterruptedTrial(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		ctx, cancel := context.WithCancelCause(context.Background())
		dir := scriptShrink(t, func(_ context.Context, n int, tp run.Plan) bool {
			if n == 2 {
				cancel(interrupt.Signal{Sig: os.Interrupt})
			}
			return cutsM1(tp)
		})
		args := []string{"shrink", dir, "-q"}
		if asJSON {
			args = append(args, "--json")
		}
		var stdout, stderr bytes.Buffer
		code := runMain(ctx, args, &stdout, &stderr)
		cancel(nil)
		trial2 := filepath.Join(dir, run.ShrinkDir, "02-f1")
		if code != exitFailed {
			t.Fatalf("json %v: exit %d, want 3\n%s\n%s", asJSON, code, stdout.String(), stderr.String())
		}
		if !asJSON {
			if !strings.Contains(stdout.String(), "  02  faults f1           interrupted  "+trial2) {
				t.Errorf("the text leaves out the interrupted trial 2:\n%s", stdout.String())
			}
			continue
		}
		validateJSON(t, "shrink", stdout.Bytes())
		var doc shrinkJSON
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Trials) != 2 {
			t.Fatalf("%d trials in --json, want 2 (the interrupted one too): %+v", len(doc.Trials), doc.Trials)
		}
		if tr := doc.Trials[1]; tr.N != 2 || tr.Dir != trial2 || tr.Holds || tr.Fails || tr.Note != "interrupted" {
			t.Errorf("the interrupted trial is %+v, want trial 2 in %s, neither holding nor failing, noted interrupted", tr, trial2)
		}
	}
}

// With --tries 2, a violation that needs no fault is named by the run that
// failed, not by the first run of the trial (which held).
func TestShrinkNeedsNoFaultNamesTheFailingRun(t *testing.T) {
	dir := scriptShrink(t, func(_ context.Context, n int, _ run.Plan) bool { return n == 2 })
	code, stdout, stderr := gq(t, "shrink", dir, "--tries", "2", "-q")
	want := "the violation needs no fault: the trial without any fault violated " + check.NameEventuallyConverges + "; rerun it as a baseline"
	if code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("exit %d, want 0 and %q\n%s\n%s", code, want, stdout, stderr)
	}
}

// The command a second Ctrl-C says reruns the shrink carries every flag
// given, and with the default output folder removes it first (a second
// shrink of the run refuses it).
func TestShrinkRerunLine(t *testing.T) {
	dir := scriptShrink(t, func(_ context.Context, _ int, tp run.Plan) bool { return cutsM1(tp) })
	out := filepath.Join(t.TempDir(), "my trials")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"shrink", dir, "--out", out, "--checker", check.NameEventuallyConverges, "--tries", "2", "--max-trials", "3", "-q"},
			"groupquake shrink " + dir + " --out '" + out + "' --checker " + check.NameEventuallyConverges + " --tries 2 --max-trials 3 -q"},
		{[]string{"shrink", dir, "-q"}, "rm -r " + filepath.Join(dir, run.ShrinkDir) + " && groupquake shrink " + dir + " -q"},
	} {
		setRerun("")
		if code, stdout, stderr := gq(t, c.args...); code != exitOK {
			t.Fatalf("%q: exit %d\n%s\n%s", c.args, code, stdout, stderr)
		}
		rerunLine.Lock()
		got := rerunLine.cmd
		rerunLine.Unlock()
		if got != c.want {
			t.Errorf("%q: rerun with %q, want %q", c.args, got, c.want)
		}
	}
}
