package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/internal/machine"
	"github.com/groupquake/groupquake/results"
)

const upgradeUsage = `Usage: groupquake upgrade --from OLD [--to NEW] [flags]

Validates a rolling Kafka upgrade: a 3-node cluster of OLD; first a baseline
run of the workload (a group of both protocols and several member kinds) on
OLD without an upgrade, then the same workload while every node is replaced
in turn by NEW on its data and metadata.version and group.version are
finalized at NEW's levels through the Admin API; every checker must hold in
both, none skipped. upgrade.txt lists each upgrade step and every rebalance
with how long each partition stopped, beside the baseline's.

Exit status: 0 every checker holds and the upgrade completed, 1 a violation or
an upgrade step that failed, 2 bad input (nothing is started), 3 a run could
not be carried out.
`

// upgradeKinds is the default group of an upgrade: both protocols,
// groupquake's members and kgo's.
var upgradeKinds = []string{"classic", "consumer", "kgo-classic", "kgo-consumer"}

// upgradeFlags are the flags of `groupquake upgrade`.
type upgradeFlags struct {
	clientLog   clientLogFlag
	clientLevel kgo.LogLevel // --client-log's, once validate read it
	from, to    string
	seed        string
	out         string
	duration    time.Duration
	baseline    time.Duration
	scenario    string
	intensity   string
	kinds       string
	partitions  int
	rate        int
	bound       time.Duration
	basePort    int
	imageSource string
	downgrade   string
}

func (f *upgradeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.from, "from", "", "Kafka release the 3-node cluster starts on (served: "+strings.Join(cluster.KafkaVersions, ", ")+")")
	fs.StringVar(&f.to, "to", cluster.DefaultKafkaVersion, "newer Kafka release every node is upgraded to")
	fs.StringVar(&f.seed, "seed", "", "seed of both runs' plans (default: a random one, printed)")
	fs.StringVar(&f.out, "out", "", "directory of the two run directories and upgrade.txt (default: ./runs/<time>-upgrade-<seed>/)")
	fs.DurationVar(&f.duration, "duration", 0, "workload of the upgrade run (0: as long as the upgrade is planned to take; it lasts on until every step has ended)")
	fs.DurationVar(&f.baseline, "baseline", 0, "workload of the baseline run on the old release (0: the upgrade run's)")
	fs.StringVar(&f.scenario, "scenario", run.ScenarioBaseline, "faults of the nemesis in both runs besides the upgrade: "+strings.Join(run.Scenarios(), ", "))
	fs.StringVar(&f.intensity, "intensity", "normal", "faults per minute when --scenario draws faults: low, normal, high, or a rate such as 12/min")
	fs.StringVar(&f.kinds, "kinds", strings.Join(upgradeKinds, ","), "member kinds, cycled over the members")
	fs.IntVar(&f.partitions, "partitions", 6, "partitions of the workload topic")
	fs.IntVar(&f.rate, "rate", 40, "records per second over all partitions")
	fs.DurationVar(&f.bound, "bound", 30*time.Minute, "how long both runs may take together")
	fs.IntVar(&f.basePort, "base-port", 0, "loopback port of the first broker (0: free ports)")
	fs.StringVar(&f.imageSource, "image-source", "auto", "auto, build or official")
	f.clientLog.register(fs)
	fs.StringVar(&f.downgrade, "downgrade", "", "after the upgrade, roll the binaries back to --from: before-finalize (Kafka allows it: metadata.version is still the old release's), or after-finalize (metadata.version lowered first; refused where Kafka refuses it)")
}

// args rebuilds the command line of an upgrade with seed.
func (f *upgradeFlags) args(seed uint64) []string {
	a := []string{"--from", f.from, "--to", f.to, "--seed", strconv.FormatUint(seed, 10), "--kinds", f.kinds,
		"--partitions", strconv.Itoa(f.partitions), "--rate", strconv.Itoa(f.rate), "--scenario", f.scenario}
	if f.duration > 0 {
		a = append(a, "--duration", f.duration.String())
	}
	if f.baseline > 0 {
		a = append(a, "--baseline", f.baseline.String())
	}
	if f.intensity != "normal" {
		a = append(a, "--intensity", f.intensity)
	}
	if f.downgrade != "" {
		a = append(a, "--downgrade", f.downgrade)
	}
	return a
}

// upgradeResult is upgrade.json: both runs' impact, side by side.
type upgradeResult struct {
	From     string       `json:"from"`
	To       string       `json:"to"`
	Seed     uint64       `json:"seed"`
	Upgrade  check.Impact `json:"upgrade"`
	Baseline check.Impact `json:"baseline"`
}

// cmdUpgrade is `groupquake upgrade`: a baseline run and an upgrade run on
// one 3-node cluster, each judged, and the upgrade's steps and final state
// checked.
func cmdUpgrade(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("upgrade", upgradeUsage)
	var f upgradeFlags
	f.register(fs)
	con, err := parseNoArgs(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	named, err := f.validate()
	if err != nil {
		return err
	}
	seed, err := f.drawSeed()
	if err != nil {
		return err
	}
	reg := kinds.Default()
	base, up, err := f.plans(seed, named, reg)
	if err != nil {
		return err
	}
	dir, err := f.prepareOut(seed, base, up)
	if err != nil {
		return err
	}
	rerun := "groupquake upgrade " + strings.Join(f.args(seed), " ")
	dir, release, err := claimDir(dir, f.out != "", "the upgrade", rerun, con)
	if err != nil {
		return err
	}
	logf := con.Logf
	con.Infof("upgrade %s → %s, seed %d; directory %s", f.from, f.to, seed, dir)
	con.Infof("rerun with: %s", rerun)
	setRerun(rerun)
	stopWatch := con.watch(ctx)
	defer stopWatch()

	// Everything that can be refused has been: from here on, containers.
	ctx, cancel := context.WithTimeout(ctx, f.bound)
	defer cancel()
	c, err := f.startCluster(ctx, logf, rerun)
	if err != nil {
		release() // nothing was written: the same --out may be given again
		return err
	}
	defer func() {
		if cerr := c.Close(context.WithoutCancel(ctx)); cerr != nil {
			logf("closing the cluster: %v", cerr)
		}
	}()
	s := &upgradeSession{ctx: ctx, dir: dir, reg: reg, c: c, con: con, stdout: stdout, clientLog: f.clientLevel}
	bi, ui, err := s.runBoth(base, up, rerun)
	if err != nil {
		return err
	}
	s.checkEnd(up, ui)
	return s.report(&f, seed, rerun, bi, ui)
}

// validate refuses the flags of an upgrade that cannot run (exit 2, nothing
// started) and returns the member kinds of its group.
func (f *upgradeFlags) validate() ([]string, error) {
	bad := badInput
	var err error
	if f.clientLevel, err = f.clientLog.level(); err != nil {
		return nil, err
	}
	if f.from == "" {
		return nil, bad("--from is required: the Kafka release the cluster starts on (served: %s)", strings.Join(cluster.KafkaVersions, ", "))
	}
	if _, _, err := version.CheckUpgrade(f.from, f.to); err != nil {
		return nil, bad("%v", err)
	}
	if f.baseline < 0 || f.duration < 0 {
		return nil, bad("--duration and --baseline must not be negative (got %s, %s)", f.duration, f.baseline)
	}
	if _, err := faults.ParseIntensity(f.intensity); err != nil {
		return nil, bad("--intensity: %v", err)
	}
	switch cluster.ImageSource(f.imageSource) {
	case cluster.SourceAuto, cluster.SourceBuild, cluster.SourceOfficial:
	default:
		return nil, bad("--image-source %q: use auto, build or official", f.imageSource)
	}
	if f.partitions < 1 {
		return nil, bad("--partitions %d: the workload topic needs at least one partition", f.partitions)
	}
	if f.rate < 1 {
		return nil, bad("--rate %d: the workload needs at least one record per second", f.rate)
	}
	if top := 65535 - 3; f.basePort < 0 || f.basePort > top {
		return nil, bad("--base-port %d: give a port from 1 to %d, or 0 for free ports", f.basePort, top)
	}
	if f.bound <= 0 {
		return nil, bad("--bound %s: both runs need a positive bound, such as 30m", f.bound)
	}
	named := strings.Split(f.kinds, ",")
	if err := checkKinds("--kinds", f.kinds, named); err != nil {
		return nil, err
	}
	for _, k := range named {
		if !slices.Contains(kinds.Default().Names(), k) {
			return nil, bad("--kinds: %s runs only in groupquake run; an upgrade's group is made of %s", k, strings.Join(kinds.Default().Names(), ", "))
		}
	}
	return named, nil
}

// drawSeed returns the seed of --seed, or a random one when it is not given.
func (f *upgradeFlags) drawSeed() (uint64, error) {
	return seedFlag(f.seed, "")
}

// plans draws the plans of both runs from seed: the baseline on --from
// without an upgrade, and the upgrade run. It refuses a --bound that does not
// cover both workloads.
func (f *upgradeFlags) plans(seed uint64, named []string, reg kinds.Registry) (base, up run.Plan, err error) {
	bad := badInput
	o := run.Options{
		Scenario: f.scenario, Kafka: f.from, Nodes: 3, Kinds: named, Partitions: int32(f.partitions), Rate: f.rate,
		Duration: f.duration, UpgradeTo: f.to, Downgrade: f.downgrade,
	}
	if f.intensity != "normal" {
		o.Intensity = f.intensity
	}
	o.Members = len(o.Kinds)
	o.Group = fmt.Sprintf("gq-%d-upgrade", seed)
	o.Topic = o.Group + "-records"
	up, err = run.NewPlan(seed, o, reg.Kinds())
	if err != nil {
		return base, up, bad("%v", err)
	}
	bo := o
	bo.UpgradeTo, bo.Downgrade, bo.Duration = "", "", up.Workload
	if f.baseline > 0 {
		bo.Duration = f.baseline
	}
	bo.Group = fmt.Sprintf("gq-%d-baseline", seed)
	bo.Topic = bo.Group + "-records"
	base, err = run.NewPlan(seed, bo, reg.Kinds())
	if err != nil {
		return base, up, bad("baseline: %v", err)
	}
	if both := base.Workload + up.Workload; f.bound <= both {
		return base, up, bad("--bound %s is not longer than the two workloads (%s + %s): raise --bound (it also covers the cluster's start, the images and each run's setup and heal)", f.bound, base.Workload, up.Workload)
	}
	return base, up, nil
}

// prepareOut returns the upgrade's directory (--out or a new one under the
// runs directory), refusing one that already holds a run, and refuses plans
// too large for this machine.
func (f *upgradeFlags) prepareOut(seed uint64, base, up run.Plan) (string, error) {
	dir := f.out
	if dir == "" {
		dir = newRunDir("upgrade-" + strconv.FormatUint(seed, 10))
	}
	if err := outputDir("upgrade --out", dir, "upgrade.txt", "upgrade.json"); err != nil {
		return "", err
	}
	for _, d := range []string{dir, filepath.Join(dir, "baseline"), filepath.Join(dir, "upgrade")} {
		if err := checkOut(d); err != nil {
			return "", badInput("--out: %v", err)
		}
	}
	if err := base.CheckSize(machine.This()); err != nil {
		return "", badInput("%v", err)
	}
	if err := up.CheckSize(machine.This()); err != nil {
		return "", badInput("%v", err)
	}
	return dir, nil
}

// startCluster gets the engine and the images of both releases and starts
// the 3-node cluster on --from.
func (f *upgradeFlags) startCluster(ctx context.Context, logf func(string, ...any), rerun string) (*cluster.Cluster, error) {
	if _, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(logf)); err != nil {
		return nil, exitError{exitFailed, fmt.Sprintf("an upgrade replaces Kafka containers and needs a Docker engine: %v (run `groupquake engine up` as root)", err)}
	}
	imgOpts := cluster.ImageOptions{Source: cluster.ImageSource(f.imageSource), Logf: logf}
	for _, v := range []string{f.from, f.to} {
		if _, err := cluster.EnsureImage(ctx, v, imgOpts); err != nil {
			if ierr := interrupted(ctx, "while getting the image of Kafka "+v+"; rerun with: "+rerun); ierr != nil {
				return nil, ierr
			}
			return nil, exitError{exitFailed, fmt.Sprintf("image of Kafka %s: %v", v, err)}
		}
	}
	c, err := cluster.Start(ctx, cluster.Config{Version: f.from, Nodes: 3, BasePort: f.basePort, Image: imgOpts, Logf: logf})
	if err != nil {
		if ierr := interrupted(ctx, "while the cluster started (what it had started is removed); rerun with: "+rerun); ierr != nil {
			return nil, ierr
		}
		return nil, exitError{exitFailed, err.Error()}
	}
	return c, nil
}

// upgradeSession is what the two runs of an upgrade share: the cluster, the
// output, and the reasons, gathered as they are found, that the upgrade did
// not validate.
type upgradeSession struct {
	ctx    context.Context
	dir    string
	reg    kinds.Registry
	c      *cluster.Cluster
	con    *console
	stdout io.Writer
	failed []string
	// clientLog is --client-log's level (run.Config.ClientLog).
	clientLog kgo.LogLevel
}

// runBoth runs and judges the baseline run and then the upgrade run, and
// returns the impact of each. It stops at the first run that is interrupted
// or cannot be carried out.
func (s *upgradeSession) runBoth(base, up run.Plan, rerun string) (bi, ui check.Impact, err error) {
	bi, ok := s.judge("baseline", base)
	if err := interrupted(s.ctx, "in the baseline run (judged up to there in "+filepath.Join(s.dir, "baseline")+"); the upgrade run was not started; rerun with: "+rerun); err != nil {
		return bi, ui, err
	}
	if !ok {
		return bi, ui, exitError{exitFailed, "the baseline run could not be carried out; rerun with: " + rerun}
	}
	ui, ok = s.judge("upgrade", up)
	if err := interrupted(s.ctx, "in the upgrade run (judged up to there in "+filepath.Join(s.dir, "upgrade")+"); rerun with: "+rerun); err != nil {
		return bi, ui, err
	}
	if !ok {
		return bi, ui, exitError{exitFailed, "the upgrade run could not be carried out; rerun with: " + rerun}
	}
	return bi, ui, nil
}

// judge carries out the run of plan p in the subdirectory name, prints its
// judgement, notes every violated or skipped checker, and measures its
// impact. ok is false when the run could not be carried out.
func (s *upgradeSession) judge(name string, p run.Plan) (_ check.Impact, ok bool) {
	logf := s.con.Logf
	d := filepath.Join(s.dir, name)
	logf("%s run: %s", name, p.Command())
	defer writing(d)()
	s.con.expectWorkload(p.Workload)
	res, err := run.Run(s.ctx, run.Config{Plan: p, Dir: d, Registry: s.reg, Cluster: s.c, Disposable: true, Logf: logf, KgoLog: kgoLog(s.con), ClientLog: s.clientLog, OnPhase: onPhase})
	for _, n := range res.Notes {
		logf("note (%s): %s", name, n)
	}
	fmt.Fprintf(s.stdout, "== %s (%s)\n", name, d)
	j, err := judgeRun(d, res, err)
	if j != nil {
		printJudgement(s.stdout, *j)
		if jerr := verdictStatus(j.Report); jerr != nil {
			s.failed = append(s.failed, name+": "+jerr.Error())
		}
		for _, v := range j.Report.Verdicts {
			if v.Skipped != "" {
				s.failed = append(s.failed, fmt.Sprintf("%s: checker %s was skipped (%s)", name, v.Name, v.Skipped))
			}
		}
	}
	if err != nil {
		logf("%s run could not be carried out: %v", name, err)
		return check.Impact{}, false
	}
	h, lerr := history.Load(filepath.Join(d, run.HistoryFile))
	if lerr != nil {
		s.failed = append(s.failed, fmt.Sprintf("%s: reading its history: %v", name, lerr))
		return check.Impact{}, true
	}
	return check.MeasureImpact(h.Events), true
}

// checkEnd notes every upgrade step that did not complete, every node not on
// the plan's final release, and every finalized feature level that is not the
// plan's.
func (s *upgradeSession) checkEnd(up run.Plan, ui check.Impact) {
	for _, st := range ui.Steps {
		if !st.OK || st.End < 0 {
			s.failed = append(s.failed, fmt.Sprintf("upgrade step %s did not complete: %s", st, st.Error))
		}
	}
	final, want := up.FinalKafka(), up.FinalFeatures()
	for _, n := range s.c.Nodes() {
		if n.Version != final {
			s.failed = append(s.failed, fmt.Sprintf("node %d runs Kafka %s at the end, not %s", n.ID, n.Version, final))
		}
	}
	fin, err := s.c.FinalizedFeatures(s.ctx)
	if err != nil {
		s.failed = append(s.failed, "reading the finalized features: "+err.Error())
		return
	}
	for id, l := range fin {
		for name, level := range want {
			if l[name] != level {
				s.failed = append(s.failed, fmt.Sprintf("broker %d finalized %s at %d, want %d", id, name, l[name], level))
			}
		}
	}
}

// report prints and writes upgrade.txt and upgrade.json, and returns the
// upgrade's verdict: an error listing every reason it did not validate, or
// nil.
func (s *upgradeSession) report(f *upgradeFlags, seed uint64, rerun string, bi, ui check.Impact) error {
	var b strings.Builder
	what := fmt.Sprintf("rolling upgrade %s → %s", f.from, f.to)
	if f.downgrade != "" {
		what += fmt.Sprintf(" and back to %s (%s)", f.from, f.downgrade)
	}
	fmt.Fprintf(&b, "%s (seed %d); rerun with: %s\n", what, seed, rerun)
	if err := results.WriteUpgrade(&b, ui, bi); err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "== %s\n%s", what, b.String())
	werr := errors.Join(
		run.WriteFileAtomic(filepath.Join(s.dir, "upgrade.txt"), []byte(b.String()), 0o644),
		writeJSONFile(filepath.Join(s.dir, "upgrade.json"), upgradeResult{From: f.from, To: f.to, Seed: seed, Upgrade: ui, Baseline: bi}),
	)
	if werr != nil {
		s.con.Logf("writing the upgrade's result: %v", werr)
	}
	s.con.Infof("directory %s; rerun with: %s", s.dir, rerun)
	if len(s.failed) > 0 {
		return exitError{exitViolation, "the upgrade did not validate:\n  " + strings.Join(s.failed, "\n  ")}
	}
	fmt.Fprintf(s.stdout, "%s validated: every checker held in both runs and every step completed\n", what)
	return nil
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return run.WriteFileAtomic(path, append(b, '\n'), 0o644)
}
