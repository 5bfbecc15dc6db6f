package run

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/internal/interrupt"
)

// Config is how to carry out a plan.
type Config struct {
	Plan Plan
	// Dir is the run directory; it must not hold a run yet.
	Dir string
	// Registry builds members by kind; nil means kinds.Default().
	Registry kinds.Registry
	// Cluster, when set, is used as is and not closed (tests start theirs
	// with clustertest). Otherwise Run starts a container cluster from the
	// plan's options and ClusterConfig, or connects to the plan's bootstrap
	// with External, and closes it at the end unless Keep.
	Cluster       cluster.Handle
	ClusterConfig cluster.Config
	External      cluster.ExternalConfig
	Keep          bool
	// Disposable says that Cluster is removed once this run ends, as a
	// cluster the run starts itself is: an interrupted run then leaves its
	// node faults unhealed (the nodes go with the cluster) rather than
	// wait for stopped nodes to start again.
	Disposable bool
	// Logf reports progress; nil is silent.
	Logf func(format string, args ...any)
	// OnPhase, when set, is called as each phase begins, once its marker
	// is in the history, with the run's context (tests hold a phase with
	// it, to interrupt the run there).
	OnPhase func(ctx context.Context, phase string)
	// KgoLog, when set, gets the log of the members' and producers' kgo
	// clients at kgo's info level, each line naming the client (what
	// `groupquake run -v` shows); nil is silent.
	KgoLog func(format string, args ...any)
	// ClientLog, unless kgo.LogLevelNone (the zero value, no file), is the
	// level of the log of the members' kgo clients written to
	// ClientLogFile in the run directory, each line with the time to the
	// millisecond and the member's name (groupquake run --client-log). It
	// is not part of the plan: it changes what is written, not what runs.
	ClientLog kgo.LogLevel
	// Now is the clock; nil means time.Now. History times are monotonic
	// time since the run started, read from the times it returns.
	Now func() time.Time
}

// Result is what a run left.
type Result struct {
	Dir    string
	Report check.Report
	// Notes say what went wrong on the way without stopping the run (a
	// phase that hit its bound, a member that would not leave).
	Notes []string
}

// Run carries out the plan, phase by phase: setup → warm-up → workload ∥
// faults → heal → quiesce → final observations → teardown, then judges the
// history. Everything is written to the run directory as it happens (see
// the file list above PlanFile), so a run that crashes or is killed leaves
// what it did, and `groupquake check DIR` judges it.
//
// An error means the run could not be carried out (no cluster, a broken
// history writer); the verdicts, when they were reached, are in the Result
// either way. A violated property is not an error: it is in Report.
func Run(ctx context.Context, cfg Config) (Result, error) {
	res := Result{Dir: cfg.Dir}
	if cfg.Registry == nil {
		cfg.Registry = kinds.Default()
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := cfg.Plan
	if err := p.Validate(); err != nil {
		return res, err
	}
	for _, m := range p.Members {
		if _, ok := cfg.Registry[m.Kind]; !ok {
			return res, fmt.Errorf("member %s: kind %q is not in the registry (known: %s)", m.Name, m.Kind, strings.Join(cfg.Registry.Names(), ", "))
		}
	}
	if err := prepareDir(cfg.Dir); err != nil {
		return res, err
	}
	if beforeClaim != nil {
		beforeClaim(cfg.Dir)
	}
	// The history is created first, and only if it does not exist: it
	// claims the directory, so that of two runs given the same directory at
	// once the second writes nothing there (not its plan over the first's).
	hf, err := claimDir(cfg.Dir)
	if err != nil {
		return res, err
	}
	if err := writeJSONAtomic(filepath.Join(cfg.Dir, PlanFile), p); err != nil {
		hf.Close()
		return res, err
	}
	if err := writeFileAtomic(filepath.Join(cfg.Dir, RerunFile), rerunScript(p), 0o755); err != nil {
		hf.Close()
		return res, err
	}
	start := cfg.Now()
	clock := func() time.Duration { return cfg.Now().Sub(start) }
	meter := newEffectMeter(clock)
	rec, err := history.NewRecorder(hf, clock, history.Tap(meter.tap))
	if err != nil {
		hf.Close()
		return res, err
	}
	cfg.Logf("run %s: seed %d, scenario %s, %d members, %d faults; rerun with: %s", cfg.Dir, p.Seed, p.Options.Scenario, len(p.Members), len(p.Faults), p.Command())

	r := &runner{cfg: cfg, p: p, rec: rec, led: newLedger(), notes: &res.Notes, start: start, meter: meter, clock: clock}
	if cfg.ClientLog != kgo.LogLevelNone {
		if r.clientLog, err = openClientLog(cfg.Dir, cfg.ClientLog, cfg.Now); err != nil {
			hf.Close()
			return res, err
		}
	}
	// The pulse records every stall of the harness process (pulse.go) from
	// here to the end of the history; the run's waits count them (waitFor).
	r.pulse = newPulse(rec, clock, cfg.Logf)
	stopPulse := r.pulse.start()
	var runErr error
	if p.IsShare() {
		runErr = r.runShare(ctx) // share_run.go
	} else {
		runErr = r.run(ctx)
	}
	if err := stopPulse(); err != nil {
		r.note("pulse: the harness's stalls are no longer recorded: %v", err)
	}
	if r.clientLog != nil {
		if err := r.clientLog.close(); err != nil {
			r.note("client log: %v", err)
		}
	}
	if err := hf.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("closing the history: %w", err)
	}
	j, err := Judge(cfg.Dir)
	if err != nil {
		return res, errors.Join(runErr, err)
	}
	res.Report = j.Report
	if err := WriteVerdicts(cfg.Dir, j.Report); err != nil {
		return res, errors.Join(runErr, err)
	}
	if err := WriteReport(cfg.Dir, j); err != nil {
		return res, errors.Join(runErr, err)
	}
	return res, runErr
}

// WriteVerdicts writes verdicts.json into the run directory dir, atomically.
func WriteVerdicts(dir string, rep check.Report) error {
	return writeJSONAtomic(filepath.Join(dir, VerdictsFile), rep)
}

// runner holds one run's moving parts.
type runner struct {
	cfg   Config
	p     Plan
	rec   *history.Recorder
	led   *ledger
	notes *[]string
	start time.Time
	clock func() time.Duration // since start, the history's clock
	pulse *pulse               // the harness's own stalls (pulse.go)

	h       cluster.Handle
	ownsH   bool
	obs     *observer
	nem     *nemesis
	meter   *effectMeter
	crew    *crew
	hooksMu sync.Mutex
	hooks   []*HookRecorder // every incarnation's, for their recording errors
	prods   []*producer
	// shareAdm is a share run's admin client (share_run.go).
	shareAdm *kadm.Client
	// shareObs are a share run's observations, written at its final
	// phase and again with what the observer read after teardown.
	shareObs *history.Observations
	// clientLog is ClientLogFile when Config.ClientLog asks for it.
	clientLog *clientLog

	notesMu sync.Mutex

	phaseMu  sync.Mutex
	cur      string        // the phase the run is in
	stopIn   string        // the phase the run was in when its context ended
	stopTime time.Duration // and when, since the start

	checkpointsMu sync.Mutex
	checkpoints   []history.Snapshot // taken during the workload (checkpoint.go)
}

func (r *runner) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.notesMu.Lock()
	*r.notes = append(*r.notes, s)
	r.notesMu.Unlock()
	r.cfg.Logf("%s", s)
}

func (r *runner) phase(ctx context.Context, name, why string) error {
	r.cfg.Logf("phase %s", name)
	r.setPhase(ctx, name)
	_, err := r.rec.BeginPhase(name, why)
	r.began(ctx, name)
	return err
}

func (r *runner) began(ctx context.Context, name string) {
	if r.cfg.OnPhase != nil {
		r.cfg.OnPhase(ctx, name)
	}
}

// setPhase moves the run to phase name. A run whose context has ended
// meanwhile notes first the phase it ended in (markStopped runs on its own
// goroutine and may come later).
func (r *runner) setPhase(ctx context.Context, name string) {
	if ctx.Err() != nil {
		r.markStopped()
	}
	r.phaseMu.Lock()
	r.cur = name
	r.phaseMu.Unlock()
}

func (r *runner) phaseNow() string {
	r.phaseMu.Lock()
	defer r.phaseMu.Unlock()
	return r.cur
}

// markStopped notes the phase the run is in when its context ends.
func (r *runner) markStopped() {
	r.phaseMu.Lock()
	defer r.phaseMu.Unlock()
	if r.stopIn == "" {
		r.stopIn, r.stopTime = r.cur, r.cfg.Now().Sub(r.start)
	}
}

// stopped says why ctx ended the run early ("" while it has not): the
// signal that interrupted it, or the run's bound, with the phase it was in
// then.
func (r *runner) stopped(ctx context.Context) string {
	if ctx.Err() == nil {
		return ""
	}
	r.markStopped()
	why := "stopped (its context was cancelled)"
	if sig, ok := interrupt.Of(ctx); ok {
		why = "interrupted by " + interrupt.Name(sig)
	} else if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "stopped by its bound (--bound)"
	}
	r.phaseMu.Lock()
	defer r.phaseMu.Unlock()
	return fmt.Sprintf("%s in its %s phase at %s", why, r.stopIn, r.stopTime.Round(100*time.Millisecond))
}

// stoppedError ends a run its context stopped: why says where (see
// stopped); it wraps the context's cause (an interrupt.Signal, or
// context.DeadlineExceeded for the bound).
type stoppedError struct {
	why   string
	cause error
}

func (e *stoppedError) Error() string { return "the run was " + e.why }
func (e *stoppedError) Unwrap() error { return e.cause }

func (r *runner) stoppedErr(ctx context.Context) error {
	return &stoppedError{why: r.stopped(ctx), cause: context.Cause(ctx)}
}

// disposable reports whether the cluster goes once the run ends.
func (r *runner) disposable() bool {
	return (r.ownsH && !r.cfg.Keep) || r.cfg.Disposable
}

// KeptClusterHint says that c is kept (--keep), where its brokers are,
// and the command that removes it and nothing else.
func KeptClusterHint(c *cluster.Cluster) string {
	return fmt.Sprintf("keeping cluster %s (--keep), brokers %s: remove it, and nothing else, with: groupquake sweep --cluster %s", c.RunID, strings.Join(c.Bootstrap(), ","), c.RunID)
}

// closeOwnCluster closes, at the end of a run, the cluster the run started
// itself, unless it is kept; a failure is noted, not the run's error.
func (r *runner) closeOwnCluster(ctx context.Context) {
	if r.ownsH && r.h != nil && !r.cfg.Keep {
		if err := r.h.Close(context.WithoutCancel(ctx)); err != nil {
			r.note("teardown: closing the cluster: %v", err)
		}
	}
	if c, ok := r.h.(*cluster.Cluster); ok && r.ownsH && r.cfg.Keep {
		r.cfg.Logf("%s", KeptClusterHint(c))
	}
}

// closeBound bounds the members' leave at teardown: a run that was
// interrupted gives them a few seconds, so that Ctrl-C gives control back
// within seconds whatever state the brokers are in.
func (r *runner) closeBound(ctx context.Context) time.Duration {
	if ctx.Err() != nil {
		return 5 * time.Second
	}
	return 30 * time.Second
}

// crewRun is what the phases of a run share once the members start: the
// context the members and the observer run under, the members' goroutines
// and the first error one of them reports, and the observer's loop.
type crewRun struct {
	workCtx    context.Context
	members    sync.WaitGroup
	memberErrs chan error
	stopObs    context.CancelFunc
	obsDone    chan error
}

// run runs the phases in order: setup, warmup, workload, heal, quiesce,
// final. Whatever happens after setup begins, the teardown is recorded,
// the cluster released and the faults healed.
func (r *runner) run(ctx context.Context) (err error) {
	if err := r.phase(ctx, history.PhaseSetup, "start or reach the cluster, create the topics, build producers and members"); err != nil {
		return err
	}
	defer context.AfterFunc(ctx, r.markStopped)()
	// Whatever happens from here, the teardown is recorded (with where the
	// run stopped, when it stopped early), the cluster released and faults
	// healed.
	workCtx, stopWork := context.WithCancel(ctx)
	cr := &crewRun{workCtx: workCtx, memberErrs: make(chan error, 1)}
	defer func() {
		stopWork()
		cr.members.Wait()
		if terr := r.teardown(ctx); terr != nil && err == nil {
			err = terr
		}
		r.closeOwnCluster(ctx)
	}()
	if err := r.setup(ctx); err != nil {
		if ctx.Err() != nil {
			return r.stoppedErr(ctx)
		}
		return err
	}
	defer func() {
		if cr.stopObs != nil {
			cr.stopObs()
		}
	}()
	if err := r.warmup(ctx, cr); err != nil {
		return err
	}
	if err := r.workAndHeal(ctx, workCtx, "an upgrade's, a migration's"); err != nil {
		return err
	}
	if err := r.quiesce(ctx, cr); err != nil {
		return err
	}
	if err := r.settle(ctx, cr); err != nil {
		return err
	}
	return r.final(ctx)
}

// warmup starts the members, staggered as planned, and the observer, and
// waits until the group owns every partition exactly once (or the warm-up
// bound passes).
func (r *runner) warmup(ctx context.Context, cr *crewRun) error {
	if err := r.phase(ctx, history.PhaseWarmup, "members join, staggered as planned; the group forms"); err != nil {
		return err
	}
	if err := r.crew.startAll(cr.workCtx, cr.memberErrs, &cr.members); err != nil {
		return err
	}
	obsCtx, stopObs := context.WithCancel(cr.workCtx)
	cr.stopObs, cr.obsDone = stopObs, make(chan error, 1)
	go func() { cr.obsDone <- r.obs.loop(obsCtx, r.p.ObserveEvery) }()

	if ok, waited := r.waitFor(ctx, cr.memberErrs, "warm-up", r.p.WarmupMax, r.owned); !ok && ctx.Err() == nil {
		r.note("%s; carrying on, the checkers will judge", timedOut("warm-up", r.p.WarmupMax, r.p.warmupWhy(), waited,
			"every partition owned exactly once ("+badOwnership(r.p.Check().Partitions(), r.ownersNow())+")"))
	}
	if err := r.firstErr(cr.memberErrs); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return r.stoppedErr(ctx)
	}
	return nil
}

// workAndHeal is the workload phase (the producers while the nemesis runs
// its schedule), then the heal. steps names what may stretch the workload
// past its plan (a consumer group's upgrade or migration, a share group's
// upgrade), for the note that says it did.
func (r *runner) workAndHeal(ctx, workCtx context.Context, steps string) error {
	if err := r.phase(ctx, history.PhaseWorkload, "producers write while the nemesis runs its schedule"); err != nil {
		return err
	}
	return r.heal(ctx, r.workload(ctx, workCtx, steps))
}

// workload runs the producers and the nemesis for the planned workload (and
// on until an upgrade's or a migration's steps have ended), and returns
// their errors.
func (r *runner) workload(ctx, workCtx context.Context, steps string) error {
	wctx, cancelW := context.WithCancel(workCtx)
	wstart := r.cfg.Now()
	go func() {
		// The workload lasts as planned, and on until an upgrade's steps
		// have all ended (a slow machine stretches it, see upgrade.go).
		t := time.NewTimer(r.p.Workload)
		defer t.Stop()
		select {
		case <-t.C:
		case <-wctx.Done():
			return
		}
		r.nem.awaitPlanned(wctx)
		if over := r.cfg.Now().Sub(wstart) - r.p.Workload; over > time.Second {
			r.note("workload: lasted %s past its planned %s, until the planned steps (%s) had ended", over.Round(time.Second), r.p.Workload, steps)
		}
		cancelW()
	}()
	var work sync.WaitGroup
	workErrs := make(chan error, len(r.prods)+1)
	for _, pr := range r.prods {
		work.Add(1)
		go func() {
			defer work.Done()
			if err := pr.run(wctx, ctx); err != nil {
				workErrs <- fmt.Errorf("producer %s: %w", pr.plan.Name, err)
			}
		}()
	}
	work.Add(1)
	go func() {
		defer work.Done()
		if err := r.nem.run(wctx, wstart); err != nil {
			workErrs <- fmt.Errorf("nemesis: %w", err)
		}
	}()
	<-wctx.Done()
	cancelW()
	work.Wait()
	close(workErrs)
	var werr error
	for e := range workErrs {
		werr = errors.Join(werr, e)
	}
	return werr
}

// heal heals every fault still active; werr is what went wrong in the
// workload, returned with whatever goes wrong here.
func (r *runner) heal(ctx context.Context, werr error) error {
	if err := r.phase(ctx, history.PhaseHeal, "heal every fault still active"); err != nil {
		return errors.Join(werr, err)
	}
	if err := r.nem.heal(ctx, r.leaveUnhealed(ctx)); err != nil {
		werr = errors.Join(werr, err)
	}
	if ctx.Err() != nil {
		return errors.Join(r.stoppedErr(ctx), werr)
	}
	return werr
}

// quiesce waits until every acknowledged record is consumed and the group
// is quiet, then has every running member make its last commit and hold.
func (r *runner) quiesce(ctx context.Context, cr *crewRun) error {
	if err := r.phase(ctx, history.PhaseQuiesce, "wait until every acknowledged record is consumed, commit it, let the group settle"); err != nil {
		return err
	}
	if ok, waited := r.waitFor(ctx, cr.memberErrs, "quiesce", r.p.QuiesceMax, func() bool { return r.led.Missing() == 0 && r.owned() && r.quiet() }); !ok && ctx.Err() == nil {
		r.note("%s", timedOut("quiesce", r.p.QuiesceMax, r.p.quiesceWhy(), waited, r.quiesceWaitingFor()))
	}
	if ctx.Err() != nil {
		return r.stoppedErr(ctx)
	}
	var flushed []<-chan struct{}
	r.crew.final.Store(true)
	running := r.crew.running()
	for _, d := range running {
		flushed = append(flushed, d.flushAndHold())
	}
	for i, ch := range flushed {
		select {
		case <-ch:
		case <-ctx.Done():
			return r.stoppedErr(ctx)
		case <-time.After(time.Minute):
			r.note("quiesce: member %s did not make its last commit within a minute (the bound of a member's last commit): carrying on without it", running[i].plan.Name)
		}
	}
	return nil
}

// settle waits for a Stable group with every member the harness runs in
// it, then stops the observer.
func (r *runner) settle(ctx context.Context, cr *crewRun) error {
	// Stable, with every member the harness runs in it: a member that
	// gave up, or was dropped without noticing, is given the whole
	// convergence bound to come back before the final observation, so
	// that EventuallyConverges can judge it.
	var w groupWatch
	stable, waited := r.waitFor(ctx, cr.memberErrs, "quiesce (a Stable group with every running member)", r.settleWait(), func() bool {
		return w.settled(ctx, r, "quiesce: is the group stable, with every member in it?", r.crew.running())
	})
	if !stable && ctx.Err() == nil {
		r.note("%s; the final observation is taken all the same", timedOut("quiesce (a Stable group with every running member)", r.settleWait(), r.settleWhy(), waited, r.settleWaitingFor(w)))
	}
	cr.stopObs()
	if err := <-cr.obsDone; err != nil {
		return fmt.Errorf("observer: %w", err)
	}
	if err := r.firstErr(cr.memberErrs); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return r.stoppedErr(ctx)
	}
	return nil
}

// final takes the final observations (describe, committed offsets,
// __consumer_offsets) and writes them to the run directory.
func (r *runner) final(ctx context.Context) error {
	names := r.crew.members()
	r.cfg.Logf("phase %s", history.PhaseFinal)
	r.setPhase(ctx, history.PhaseFinal)
	if _, err := r.rec.BeginFinal(names, "final observations: describe, committed offsets, __consumer_offsets"); err != nil {
		return err
	}
	r.began(ctx, history.PhaseFinal)
	snap, ids, serrs := r.obs.snapshot(ctx, "final", r.rec.Len())
	if ctx.Err() != nil {
		// Half an observation is no final observation: the checkers that
		// need the observations are skipped, with the reason, rather than
		// misled by a partial one.
		return r.stoppedErr(ctx)
	}
	for _, e := range serrs {
		r.note("final observation: %v", e)
	}
	o := &history.Observations{Group: r.p.Group, Final: snap, Checkpoints: r.takenCheckpoints(), TopicIDs: ids}
	if err := writeJSONAtomic(filepath.Join(r.cfg.Dir, ObservationsFile), o); err != nil {
		return err
	}
	r.hooksMu.Lock()
	defer r.hooksMu.Unlock()
	for _, h := range r.hooks {
		if err := h.Err(); err != nil {
			return err
		}
	}
	return nil
}

// settleWait bounds the wait for a Stable group with every running member
// in it: the convergence bound EventuallyConverges judges by (session +
// rebalance + 3 heartbeats + slack, or the plan's own), so that a member
// still out at the final observation has had all of it; with a supervisor,
// one backoff more (a restart may have been waiting out its backoff when
// the group would have taken the member in).
func (r *runner) settleWait() time.Duration {
	w := r.p.Supervisor.MaxBackoff()
	if b, err := check.ConvergenceBound(r.p.Check()); err == nil {
		return b.Limit + w
	}
	t := r.p.Timers
	return t.SessionTimeout + t.RebalanceTimeout + t.ConvergenceSlack + w
}

// missingMembers names the members the harness runs that g does not list,
// by their client ids (GroupDescription.ListsClientOf): the running ones,
// and those their supervisor is restarting. A member that stopped for good
// is missing only when a supervisor will restart it; without one it will
// not come back, and EventuallyConverges judges it as it is.
func missingMembers(g *history.GroupDescription, running []*driver, restarting []string, supervised bool) []string {
	var out []string
	for _, d := range running {
		if d.stopped.Load() && !supervised {
			continue
		}
		if !g.ListsClientOf(d.plan.Name) {
			out = append(out, d.plan.Name)
		}
	}
	return append(out, restarting...)
}

// quietSpell is how long the group must go without any member reporting an
// ownership or membership change before the run counts it as settled: two
// heartbeat intervals, so a member that learns of a rebalance only at its
// next heartbeat has done so (the members' own views lag the coordinator's
// by up to one interval; a "Stable" describe alone can come while a
// revocation is still on its way).
func (r *runner) quietSpell() time.Duration { return 2 * r.p.Timers.HeartbeatInterval }

func (r *runner) quiet() bool { return r.meter.quietFor() >= r.quietSpell() }

// waitTick is how often a wait polls its condition and its deadline.
const waitTick = 250 * time.Millisecond

// waitFor polls cond every waitTick until it holds (true), its deadline
// passes or ctx ends (false), and says how long it waited. A member error
// ends the wait too; it is left in errs. The deadline is bound after the
// wait begins, moved by the harness's own stalls as EventuallyConverges
// counts them (stallWait); when they moved it, a note says so, naming the
// wait by what.
func (r *runner) waitFor(ctx context.Context, errs chan error, what string, bound time.Duration, cond func() bool) (bool, time.Duration) {
	tick := time.NewTicker(waitTick)
	defer tick.Stop()
	w := stallWait{plan: r.p.Check(), clock: r.clock, pulse: r.pulse, bound: bound}
	ok := w.run(ctx, errs, tick.C, cond)
	if s := w.said(what); s != "" {
		r.note("%s", s)
	}
	return ok, w.end - w.from
}

// stallWait is a wait of the run whose end moves with the harness's
// stalls by the rule EventuallyConverges judges convergence by
// (check.StallDeadline): a stall long enough for a member's session to
// expire restarts the wait at its end, with its whole bound; a shorter one
// extends it by its length; never past check.StallCap times the bound. A
// wait that did not move would let a stall late in the quiesce end it
// before the group had, from the stall's end, the time the checker then
// gives it, and EventuallyConverges would fail the run for what the
// harness did.
type stallWait struct {
	plan  history.Plan
	clock func() time.Duration
	pulse *pulse // nil: no stall is known
	bound time.Duration

	from, deadline time.Duration
	capped         bool
	stalls         int           // the stalls after from that moved the deadline
	end            time.Duration // when the wait ended
}

// run polls cond at each tick until it holds (true), the deadline passes
// or ctx ends (false); a member error in errs ends it too and is left
// there.
func (w *stallWait) run(ctx context.Context, errs chan error, tick <-chan time.Time, cond func() bool) bool {
	w.from = w.clock()
	w.deadline = w.from + w.bound
	defer func() { w.end = w.clock() }()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case e := <-errs:
			errs <- e
			return false
		case <-tick:
		}
		if w.passed() {
			return false
		}
	}
}

// passed reports whether the deadline has passed, once the stalls so far
// are counted: the pulse is asked first, so that a stall the wait itself
// woke from is recorded before it is judged.
func (w *stallWait) passed() bool {
	if w.pulse != nil {
		_ = w.pulse.check() // its error ends the pulse, which says so at the run's end
		spans := w.pulse.stalls()
		w.deadline, w.capped = check.StallDeadline(w.plan, spans, w.from, w.bound)
		w.stalls = 0
		for _, s := range spans {
			if s.To > w.from {
				w.stalls++
			}
		}
	}
	return w.clock() >= w.deadline
}

// said is the note for a wait that the harness's stalls made last past
// its planned deadline, "" for one they did not (no stall moved it, or it
// ended before its planned deadline all the same).
func (w *stallWait) said(what string) string {
	planned := w.from + w.bound
	if w.deadline == planned || w.stalls == 0 || w.end <= planned {
		return ""
	}
	s := fmt.Sprintf("%s: the harness did not run for part of the wait (%d stall(s)): it lasted past its planned deadline (%s into the run) to %s, its deadline moved to %s as EventuallyConverges counts the stalls",
		what, w.stalls, planned.Round(time.Millisecond), w.end.Round(time.Millisecond), w.deadline.Round(time.Millisecond))
	if w.capped {
		s += fmt.Sprintf(", cut at its cap of %d× its planned %s: the group may not have had the whole bound after the last stall", check.StallCap, w.bound)
	}
	return s
}

func (r *runner) firstErr(errs chan error) error {
	select {
	case e := <-errs:
		return e
	default:
		return nil
	}
}

// owned reports whether every planned partition is owned by exactly one
// member, as the members see it.
func (r *runner) owned() bool {
	count := map[history.TP]int{}
	for _, d := range r.crew.running() {
		for t, ps := range d.m.Owned() {
			for _, p := range ps {
				count[history.TP{Topic: t, Partition: p}]++
			}
		}
	}
	for _, tp := range r.p.Check().Partitions() {
		if count[tp] != 1 {
			return false
		}
	}
	return true
}

// reach starts or reaches the run's cluster (r.h) and creates the topics;
// it returns the cluster's admin client, once it has one, also with an
// error creating a topic. A share run (share) cannot use the
// embedded cluster, and sets no migration policy on the brokers.
func (r *runner) reach(ctx context.Context, share bool) (*kadm.Client, error) {
	p := r.p
	switch {
	case r.cfg.Cluster != nil:
		r.h = r.cfg.Cluster
	case len(p.Options.Bootstrap) > 0:
		ec := r.cfg.External
		ec.Bootstrap = p.Options.Bootstrap
		if ec.Logf == nil {
			ec.Logf = r.cfg.Logf
		}
		e, err := cluster.Connect(ctx, ec)
		if err != nil {
			return nil, err
		}
		r.h, r.ownsH = e, true
	case p.Options.Embedded:
		e, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Version: p.Options.Kafka, MigrationPolicy: p.Options.MigrationPolicy, Logf: r.cfg.Logf})
		if err != nil {
			return nil, err
		}
		r.h, r.ownsH = e, true
	default:
		cc := r.cfg.ClusterConfig
		cc.Version, cc.Nodes, cc.Controllers = p.Options.Kafka, p.Options.Nodes, p.Options.Controllers
		cc.Keep = cc.Keep || r.cfg.Keep // labelled kept: no sweep of crashed runs removes it
		if cc.Logf == nil {
			cc.Logf = r.cfg.Logf
		}
		if pol := p.Options.MigrationPolicy; pol != "" && !share {
			cc.Settings = maps.Clone(cc.Settings)
			if cc.Settings == nil {
				cc.Settings = map[string]string{}
			}
			cc.Settings[migrationPolicySetting] = pol
		}
		c, err := cluster.Start(ctx, cc)
		if err != nil {
			return nil, err
		}
		r.h, r.ownsH = c, true
	}
	adm, err := r.h.Admin()
	if err != nil {
		return nil, err
	}
	rerun := "rerunning a seed against an external cluster? "
	if share {
		rerun = ""
	}
	rf := int16(min(len(r.h.Bootstrap()), 3))
	for _, t := range p.Topics {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		resp, err := adm.CreateTopic(cctx, t.Partitions, rf, nil, t.Name)
		cancel()
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) && r.ownsH {
			err = ownTopic(ctx, adm, t.Name, t.Partitions, r.cfg.Logf)
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			return adm, fmt.Errorf("topic %s already exists: a run needs fresh topics and a fresh group (%spass --topic and --group, or delete them)", t.Name, rerun)
		}
		if err != nil {
			return adm, fmt.Errorf("creating topic %s (%d partitions, replication %d): %w", t.Name, t.Partitions, rf, err)
		}
	}
	return adm, nil
}

// ownTopic is what a TOPIC_ALREADY_EXISTS answer means on a cluster this
// run started, which held no topic before it: kgo retries a CreateTopics
// whose answer did not come in time (a controller slow under load), and
// the retry finds the topic the first attempt made. The topic counts as
// created (nil) when it has the partitions asked for; otherwise the answer
// stands. Seen: a share run on a loaded 2-core machine that three clusters
// shared stopped in its setup, "topic ... already exists", on a cluster
// started seconds before.
func ownTopic(ctx context.Context, adm *kadm.Client, name string, partitions int32, logf func(string, ...any)) error {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	td, err := adm.ListTopics(cctx, name)
	if err != nil {
		return fmt.Errorf("topic %s already exists on the cluster this run started, and listing it failed: %w", name, err)
	}
	return ownTopicFound(td, name, partitions, logf)
}

// ownTopicFound decides ownTopic from the listing td.
func ownTopicFound(td kadm.TopicDetails, name string, partitions int32, logf func(string, ...any)) error {
	d, ok := td[name]
	if !ok || d.Err != nil || int32(len(d.Partitions)) != partitions {
		return kerr.TopicAlreadyExists
	}
	if logf != nil {
		logf("topic %s: created by a retried CreateTopics (its first answer came too late), %d partitions as asked", name, partitions)
	}
	return nil
}

func (r *runner) setup(ctx context.Context) error {
	p := r.p
	adm, err := r.reach(ctx, false)
	if err != nil {
		return err
	}
	r.obs = newObserver(adm, r.h.Bootstrap(), r.rec, p.Group, p.Protocol(), p.TopicNames(), func() time.Duration { return r.cfg.Now().Sub(r.start) })
	if err := r.healLinks(); err != nil {
		return err
	}

	r.crew = newCrew(r)
	env := faults.Env{
		Target:  r.h,
		Links:   func(client string) (faults.Link, error) { return r.h.Links(client) },
		Members: r.crew,
		Group:   groupView{r},
	}
	r.nem = newNemesis(p.Faults, env, r.rec, r.meter, r.cfg.Logf)
	if r.disposable() {
		r.nem.abort = ctx // an interrupt cuts short a node action: the nodes go with the cluster
	}

	for _, pp := range p.Producers {
		l, err := r.h.Links(pp.Name)
		if err != nil {
			return fmt.Errorf("links of producer %s: %w", pp.Name, err)
		}
		pr, err := newProducer(pp, r.kgoOpts(pp.Name, l.KgoOpts(), false), r.rec, r.led, p.Topics, p.Options.Records)
		if err != nil {
			return err
		}
		r.prods = append(r.prods, pr)
	}
	// Every member's first incarnation is built now, so a kind that cannot
	// be built fails the run before anything joins.
	for _, s := range r.crew.order {
		if err := r.crew.build(s); err != nil {
			return err
		}
	}
	return nil
}

// healLinks heals, on a cluster handed to the run (Config.Cluster), the
// links of every client of the plan: its members, its producers and the
// clients its link faults name. A cluster keeps each client's links under
// the client's name, and every run names its clients alike (m1, m2, ...,
// p0), so a run that ended without healing its link faults (it failed, or
// was stopped) would leave the next run on the same cluster (a test
// binary's shared one) with a cut or slowed link. A cluster the run
// started itself has no links yet.
func (r *runner) healLinks() error {
	if r.ownsH {
		return nil
	}
	p := r.p
	names := map[string]bool{}
	for _, mp := range p.Members {
		names[mp.Name] = true
	}
	for _, pp := range p.Producers {
		names[pp.Name] = true
	}
	for _, f := range p.Faults {
		if f.Client != "" {
			names[f.Client] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		l, err := r.h.Links(name)
		if err != nil {
			return fmt.Errorf("links of %s: %w", name, err)
		}
		if err := l.Heal(faults.AllNodes); err != nil {
			return fmt.Errorf("healing the links of %s (an earlier run on this cluster may have left them faulted): %w", name, err)
		}
	}
	return nil
}

// leaveUnhealed says, for a run that was stopped early (interrupted, or
// by its bound), which faults its heal leaves in force, so that Ctrl-C
// gives control back within seconds: node faults and upgrade steps when
// the cluster is removed next (starting a stopped container node takes up
// to minutes, for nodes about to be removed), and churn (a crashed member
// started again, a late joiner joining, only to be closed). Link faults and
// a stalled or frozen member are healed: that is instant, and a frozen
// JVM must be thawed to leave. A run that was not stopped heals everything
// (nil).
func (r *runner) leaveUnhealed(ctx context.Context) func(faults.Fault) bool {
	if ctx.Err() == nil {
		return nil
	}
	disposable := r.disposable()
	return func(f faults.Fault) bool {
		switch {
		case f.IsLinkFault(), f.Kind == faults.MemberStall, f.Kind == faults.MemberFreeze:
			return false
		case f.HoldsNode():
			return disposable
		}
		return true
	}
}

// groupView is what coordinator-aware faults ask of the run.
type groupView struct{ r *runner }

// Coordinator asks the brokers (bypassing every link) which node
// coordinates the group now.
func (g groupView) Coordinator(ctx context.Context) (faults.NodeID, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for _, c := range g.r.obs.adm.FindGroupCoordinators(cctx, g.r.p.Group) {
		if c.Err != nil {
			return 0, c.Err
		}
		return c.NodeID, nil
	}
	return 0, fmt.Errorf("no coordinator found for group %s", g.r.p.Group)
}

// Rebalancing reports whether some planned partition has no owner or more
// than one among the running members.
func (g groupView) Rebalancing() bool { return !g.r.owned() }

// beginTeardown marks the teardown phase (what says what it does) and
// heals every fault still active; it returns why the run stopped early,
// "" when it did not.
func (r *runner) beginTeardown(ctx context.Context, what string) string {
	why := r.stopped(ctx)
	r.setPhase(ctx, history.PhaseTeardown)
	r.cfg.Logf("phase %s", history.PhaseTeardown)
	if why != "" {
		r.cfg.Logf("the run was %s: judging it up to there", why)
	}
	if _, err := r.rec.Info("harness", history.FPhase, history.Phase{Name: history.PhaseTeardown, Stopped: why}, what); err != nil {
		r.note("teardown: %v", err)
	}
	r.began(ctx, history.PhaseTeardown)
	if r.nem != nil {
		if err := r.nem.heal(ctx, r.leaveUnhealed(ctx)); err != nil {
			r.note("teardown: healing: %v", err)
		}
	}
	return why
}

// teardown closes members (they leave the group), producers and the
// observer's admin client. The cluster is released by run's deferred close.
func (r *runner) teardown(ctx context.Context) error {
	r.beginTeardown(ctx, "members leave, clients close")
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.closeBound(ctx))
	defer cancel()
	// An interrupt during the teardown shortens the members' leave too.
	defer context.AfterFunc(ctx, func() { time.AfterFunc(r.closeBound(ctx), cancel) })()
	if r.crew != nil {
		r.crew.closeAll(cctx)
	}
	for _, pr := range r.prods {
		pr.close()
	}
	if r.obs != nil {
		r.obs.adm.Close()
	}
	var err error
	r.hooksMu.Lock()
	defer r.hooksMu.Unlock()
	for _, h := range r.hooks {
		err = errors.Join(err, h.Finish())
	}
	return err
}
