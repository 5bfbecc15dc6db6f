package run

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/history"
)

// nemesis applies the plan's fault schedule and records every start and stop
// as a call in the history (Jepsen's nemesis is a process of the same
// history). Faults overlap, so each fault of the schedule is a process of
// its own, "nemesis/<index in the schedule>", and runs on its own goroutine:
// a fault that waits for a rebalance delays nothing else. Node actions are
// serialised (one container action at a time). Whatever it started and did
// not stop, heal stops, so every run heals before its final observations.
type nemesis struct {
	schedule []faults.Fault
	env      faults.Env
	rec      *history.Recorder
	meter    *effectMeter
	logf     func(string, ...any)

	// nodeSlot is held by the node fault in force, from before it is
	// applied until its heal has finished (a restarted node serves again):
	// schedules keep node faults apart on paper, but a stop that takes
	// seconds, a For counted from when a fault took effect and a start
	// that takes half a minute make them overlap in fact, and two nodes
	// down on three is a lost quorum (seen: a pause of the coordinator's
	// node while another node was still stopped hung a run).
	nodeSlot chan struct{}
	// planned counts the planned steps (of an upgrade, of a migration) still
	// to end (started, in force for their For, healed): the workload phase
	// lasts until they have.
	planned sync.WaitGroup
	// stepFailed is closed when an upgrade step failed to apply or heal:
	// the steps after it are not applied (they would wait for a node slot
	// a failed heal never gives back).
	stepFailed chan struct{}
	failOnce   sync.Once
	// stepBefore chains an upgrade's steps in the order of their times
	// (then of the schedule): step i starts only once step stepBefore[i]
	// has ended (applied, in force for its For, healed), closing
	// stepEnded[stepBefore[i]]. The node slot alone orders them by which
	// goroutine reaches it first, and on a loaded machine a later step's
	// can get there first (seen: the features finalized before the last
	// node was replaced).
	stepBefore map[int]int
	stepEnded  map[int]chan struct{}
	// abort, when set, cuts short an action in flight (a node stopping or
	// starting): the run was stopped early and its cluster is removed next.
	abort  context.Context
	mu     sync.Mutex
	active map[int]faults.Fault // schedule index → the fault as applied (coordinator resolved), not healed yet
	starts map[int]effectMark   // schedule index → the meter's reading when it started
}

func newNemesis(schedule []faults.Fault, env faults.Env, rec *history.Recorder, meter *effectMeter, logf func(string, ...any)) *nemesis {
	n := &nemesis{schedule: schedule, env: env, rec: rec, meter: meter, logf: logf, active: map[int]faults.Fault{}, starts: map[int]effectMark{}, nodeSlot: make(chan struct{}, 1), stepFailed: make(chan struct{}),
		stepBefore: map[int]int{}, stepEnded: map[int]chan struct{}{}}
	var steps []int
	for i, f := range schedule {
		if f.Planned() {
			n.planned.Add(1)
		}
		if f.Family() == faults.FamilyUpgrade {
			steps = append(steps, i)
			n.stepEnded[i] = make(chan struct{})
		}
	}
	sort.SliceStable(steps, func(a, b int) bool { return schedule[steps[a]].At < schedule[steps[b]].At })
	for k := 1; k < len(steps); k++ {
		n.stepBefore[steps[k]] = steps[k-1]
	}
	return n
}

// awaitStepBefore waits until the upgrade step before step i has ended,
// and says how long it waited ("" when it did not); false when ctx ended
// first.
func (n *nemesis) awaitStepBefore(ctx context.Context, i int) (string, bool) {
	p, ok := n.stepBefore[i]
	if !ok {
		return "", true
	}
	t0 := time.Now()
	select {
	case <-n.stepEnded[p]:
	case <-ctx.Done():
		return "", false
	}
	if d := time.Since(t0); d > 100*time.Millisecond {
		return fmt.Sprintf("waited %s for the upgrade step before it to end", d.Round(time.Millisecond)), true
	}
	return "", true
}

// failedStep is closed once an upgrade step failed, for an upgrade step f;
// nil (never ready) for any other fault.
func (n *nemesis) failedStep(f faults.Fault) <-chan struct{} {
	if f.Family() != faults.FamilyUpgrade {
		return nil
	}
	return n.stepFailed
}

// stepFails records that upgrade step f failed.
func (n *nemesis) stepFails(f faults.Fault) {
	if f.Family() == faults.FamilyUpgrade {
		n.failOnce.Do(func() { close(n.stepFailed) })
	}
}

// awaitPlanned returns when every planned step of the schedule (an
// upgrade's, a migration's) has ended, or ctx has: an upgrade or a
// migration is carried out whole, however long the machine takes for it,
// so the workload phase waits for it.
func (n *nemesis) awaitPlanned(ctx context.Context) {
	done := make(chan struct{})
	go func() { n.planned.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func process(i int) string { return "nemesis/" + strconv.Itoa(i) }

func faultValue(f faults.Fault) history.Fault {
	v := history.Fault{What: string(f.Kind)}
	switch {
	case f.Member != "":
		v.Target = []string{f.Member}
	case f.Client != "" && f.Node == faults.AllNodes:
		v.Target = []string{f.Client + "->all-brokers"}
	case f.Client != "":
		v.Target = []string{f.Client + "->node-" + strconv.Itoa(int(f.Node))}
	case f.Node == faults.Coordinator:
		v.Target = []string{"group-coordinator"}
	case f.Node == faults.ShareCoordinator:
		v.Target = []string{"share-coordinator-p" + strconv.Itoa(int(f.Partition))}
	case f.Node == faults.PartitionLeader:
		v.Target = []string{"leader-p" + strconv.Itoa(int(f.Partition))}
	case f.Kind == faults.FeatureUpdate:
		v.Target = []string{"cluster"}
	default:
		v.Target = []string{"node-" + strconv.Itoa(int(f.Node))}
	}
	v.Params = f.Params()
	return v
}

// run executes the schedule from start (the beginning of the workload
// phase) until every fault has started and ended or ctx ends; a fault still
// in force then is left to heal.
func (n *nemesis) run(ctx context.Context, start time.Time) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(n.schedule))
	for i := range n.schedule {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n.schedule[i].Planned() {
				defer n.planned.Done()
			}
			if ended, ok := n.stepEnded[i]; ok {
				defer close(ended)
			}
			if err := n.one(ctx, start, i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// one runs fault i: it waits for its time (and its trigger), applies it,
// and heals it For later.
func (n *nemesis) one(ctx context.Context, start time.Time, i int) error {
	f := n.schedule[i]
	if !sleepUntil(ctx, start.Add(f.At)) {
		return nil
	}
	trig, ok := n.awaitStepBefore(ctx, i)
	if !ok {
		return nil
	}
	if f.Trigger == faults.OnRebalance {
		trig = joinEffects(trig, n.awaitRebalance(ctx))
		if ctx.Err() != nil {
			return nil
		}
	}
	if err := n.start(ctx, i, trig); err != nil {
		return err
	}
	// For counts from when the fault took effect.
	if f.For == 0 || !sleepUntil(ctx, time.Now().Add(f.For)) {
		return nil
	}
	return n.stop(ctx, i, "scheduled end after "+f.For.String())
}

// awaitRebalance waits until a rebalance is in flight, at most
// faults.RebalanceWait, and says what happened.
func (n *nemesis) awaitRebalance(ctx context.Context) string {
	if n.env.Group == nil {
		return "no view of the group: started at its time"
	}
	t0 := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(faults.RebalanceWait)
	defer deadline.Stop()
	for !n.env.Group.Rebalancing() {
		select {
		case <-ctx.Done():
			return ""
		case <-deadline.C:
			return fmt.Sprintf("no rebalance in flight within %s of its time: started at that bound", faults.RebalanceWait)
		case <-tick.C:
		}
	}
	return fmt.Sprintf("started %s after its time, with a rebalance in flight", time.Since(t0).Round(time.Millisecond))
}

func (n *nemesis) start(ctx context.Context, i int, trig string) error {
	f := n.schedule[i]
	v := faultValue(f)
	why := "scheduled at " + f.At.String()
	if trig != "" {
		why += "; " + trig
	}
	if _, err := n.rec.Invoke(process(i), history.FFaultStart, v, why); err != nil {
		return err
	}
	// Once started, an action runs to its end even if the workload phase
	// ends meanwhile: a docker stop cut short goes on in the engine, and a
	// heal that came before it finished would find the node still up and
	// leave it stopped for good.
	actx, cancel := n.actionContext(ctx)
	defer cancel()
	applied, effect, err := n.apply(ctx, actx, i, f)
	if applied.Node != f.Node {
		v.Target = faultValue(applied).Target
	}
	v.Effect = joinEffects(trig, effect)
	if err != nil {
		v.Error = err.Error()
		n.logf("nemesis: %s did not apply: %v", f, err)
		n.stepFails(f)
		if _, ok := err.(errNotApplied); ok {
			_, rerr := n.rec.Fail(process(i), v, "the fault was not applied")
			return rerr
		}
		_, rerr := n.rec.Info(process(i), history.FFaultStart, v, "applying the fault failed; it may have partly taken effect")
		return rerr
	}
	n.logf("nemesis: %s%s", applied, effectSuffix(v.Effect))
	_, err = n.rec.OK(process(i), v, "")
	return err
}

// actionBound is how long one action on the cluster (a fault's start or
// its heal) may take: a node's restart under load, with its log recovery,
// takes tens of seconds on a loaded 2-core machine (a variable for the
// tests).
var actionBound = 3 * time.Minute

// actionContext is the context of one action on the cluster: it outlives
// ctx (the workload phase) by up to actionBound, and ends with abort.
func (n *nemesis) actionContext(ctx context.Context) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), actionBound)
	if n.abort == nil {
		return actx, cancel
	}
	stop := context.AfterFunc(n.abort, cancel)
	return actx, func() { stop(); cancel() }
}

// errNotApplied marks a fault that certainly did not start.
type errNotApplied struct{ why string }

func (e errNotApplied) Error() string { return e.why }

// apply resolves and starts fault i, with actx, once ctx (the workload
// phase) still allows it. A node fault first waits for the node fault
// before it to be healed (see nodeSlot) and finds the coordinator only
// then. From the moment the action is attempted the fault counts as active
// (a failed start may have half happened), so it is healed.
func (n *nemesis) apply(ctx, actx context.Context, i int, f faults.Fault) (faults.Fault, string, error) {
	var waited string
	select {
	case <-n.failedStep(f):
		return f, "", errNotApplied{"not applied: an earlier step of the upgrade failed"}
	default:
	}
	if f.HoldsNode() {
		t0 := time.Now()
		select {
		case n.nodeSlot <- struct{}{}:
		case <-ctx.Done():
			return f, "", errNotApplied{"not applied: the workload phase ended while the node fault before it was still in force or healing"}
		case <-n.failedStep(f):
			return f, "", errNotApplied{"not applied: an earlier step of the upgrade failed"}
		}
		if d := time.Since(t0); d > 100*time.Millisecond {
			waited = fmt.Sprintf("waited %s for the node fault before it to heal (one node down at a time)", d.Round(time.Millisecond))
		}
		if ctx.Err() != nil {
			<-n.nodeSlot
			return f, waited, errNotApplied{"not applied: the workload phase ended while the node fault before it was still in force or healing"}
		}
	}
	resolved, who, err := faults.Resolve(actx, f, n.env)
	if err != nil {
		if f.HoldsNode() {
			<-n.nodeSlot
		}
		return f, waited, errNotApplied{err.Error()}
	}
	n.mu.Lock()
	n.active[i] = resolved
	n.starts[i] = n.meter.mark()
	n.mu.Unlock()
	env := n.env
	env.Edges = n.edges(i)
	saw, err := faults.Apply(actx, resolved, env)
	return resolved, joinEffects(joinEffects(waited, who), saw), err
}

// edges records each change fault i makes to its target while in force (a
// flapping link's cuts and restores, faults.Env.Edges) as a fault-edge fact
// of its process, as soon as the fault reports it: the event's time is when
// the change took effect, so the history shows when the link was down.
func (n *nemesis) edges(i int) func(faults.Edge) {
	return func(e faults.Edge) {
		v := faultValue(e.Fault)
		x := history.FaultEdge{What: v.What, Target: v.Target, Edge: history.EdgeCut, Cut: e.Cut, Final: e.Final}
		if e.Up {
			x.Edge = history.EdgeUp
		}
		why := ""
		if e.Final {
			why = "the heal"
		}
		if e.Err != nil {
			x.Error = e.Err.Error()
			why = joinEffects(why, "the change failed: the link may be either way until the heal")
		}
		if _, err := n.rec.Info(process(i), history.FFaultEdge, x, why); err != nil {
			n.logf("nemesis: recording %s of %s: %v", e, e.Fault, err)
		}
	}
}

func (n *nemesis) stop(ctx context.Context, i int, why string) error {
	n.mu.Lock()
	f, ok := n.active[i]
	mark := n.starts[i]
	n.mu.Unlock()
	if !ok {
		return nil
	}
	v := faultValue(f)
	if _, err := n.rec.Invoke(process(i), history.FFaultStop, v, why); err != nil {
		return err
	}
	// What the group went through while the fault was in force, read
	// before the heal changes it.
	v.Effect, v.NoEffect = n.meter.since(mark, f)
	actx, cancel := n.actionContext(ctx)
	began := time.Now()
	saw, err := faults.Heal(actx, f, n.env)
	if err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("not healed within the bound of an action on the cluster (%s; waited %s): %w", actionBound, time.Since(began).Round(time.Millisecond), err)
	}
	cancel()
	if f.HoldsNode() && err == nil {
		<-n.nodeSlot // healed: the next node fault may start
	}
	v.Effect = joinEffects(v.Effect, saw)
	if err != nil {
		v.Error = err.Error()
		n.stepFails(f)
		_, rerr := n.rec.Info(process(i), history.FFaultStop, v, "healing failed: the cluster may still be hurt")
		if rerr != nil {
			return rerr
		}
		return fmt.Errorf("healing %s: %w", f, err)
	}
	n.mu.Lock()
	delete(n.active, i)
	n.mu.Unlock()
	_, err = n.rec.OK(process(i), v, "")
	return err
}

// heal stops every fault still active, in the order of the schedule. It
// runs even after the run's context ended, so a cancelled run leaves no
// fault behind; except those leave says to leave in force (a run stopped
// early whose cluster is removed next, see runner.leaveUnhealed), which are
// recorded as stopped without a heal.
func (n *nemesis) heal(ctx context.Context, leave func(faults.Fault) bool) error {
	var first error
	for i := range n.schedule {
		n.mu.Lock()
		f, ok := n.active[i]
		n.mu.Unlock()
		if ok && leave != nil && leave(f) {
			n.abandon(i, f)
			continue
		}
		if err := n.stop(ctx, i, "final heal"); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// abandon records fault i as ended without a heal: the run stopped early
// and what the fault acts on goes with the run.
func (n *nemesis) abandon(i int, f faults.Fault) {
	v := faultValue(f)
	why := "not healed: the run was stopped early"
	if f.HoldsNode() {
		why += " and its cluster is removed"
	}
	if _, err := n.rec.Invoke(process(i), history.FFaultStop, v, why); err != nil {
		n.logf("nemesis: %v", err)
		return
	}
	v.Error = why
	if _, err := n.rec.Info(process(i), history.FFaultStop, v, why); err != nil {
		n.logf("nemesis: %v", err)
	}
	n.mu.Lock()
	delete(n.active, i)
	n.mu.Unlock()
}

func joinEffects(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func effectSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}
