package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
)

// crew runs the group's members through their lives: the first start in
// the warm-up (late joiners wait for their MemberJoin heal), the churn
// the nemesis asks for through faults.Members (leave, crash, stall,
// restore), and the restarts of a member that stopped for good by its
// supervisor (supervisor.go). Each member is a slot; each start of it is an incarnation with
// its own clients.Member, hooks and driver, under the member's one name, so
// the history speaks of "m1" across its restarts, as Kafka speaks of one
// static member across them.
type crew struct {
	r     *runner
	ctx   context.Context // lives until the workload's members are stopped
	errs  chan error
	wg    *sync.WaitGroup
	slots map[string]*slot
	order []*slot

	// replaceMu serialises the replacements of a migration: each waits
	// for the group to take its newcomer in before the next begins.
	replaceMu sync.Mutex
	// standsFor maps a newcomer the coordinator refused to the member that
	// stayed in its place, so the replacement planned for the newcomer
	// replaces that member instead.
	standsFor map[string]string
	// final is set once the run flushed the members' commits for the final
	// observation: an incarnation started later holds its commits.
	final atomic.Bool
}

// memberSlot is what the crews (crew, shareCrew) keep of every planned
// member alike.
type memberSlot struct {
	plan MemberPlan

	mu      sync.Mutex // serialises the member's life changes
	running bool
	frozen  bool
	starts  int
}

func (b *memberSlot) base() *memberSlot { return b }

// slotsOf makes a slot of every planned member: by name, and in the plan's
// order.
func slotsOf[S any](members []MemberPlan, mk func(MemberPlan) S) (map[string]S, []S) {
	slots := map[string]S{}
	var order []S
	for _, mp := range members {
		s := mk(mp)
		slots[mp.Name] = s
		order = append(order, s)
	}
	return slots, order
}

// slotOf returns the slot of member name.
func slotOf[S any](slots map[string]S, name string) (S, error) {
	s, ok := slots[name]
	if !ok {
		return s, fmt.Errorf("no member %q in the plan", name)
	}
	return s, nil
}

// withSlot runs fn on the slot of member name, under the slot's lock.
func withSlot[S interface{ base() *memberSlot }](slots map[string]S, name string, fn func(S) (string, error)) (string, error) {
	s, err := slotOf(slots, name)
	if err != nil {
		return "", err
	}
	s.base().mu.Lock()
	defer s.base().mu.Unlock()
	return fn(s)
}

// join starts the planned member b unless it runs; start launches its
// incarnation, building a new one first when rebuild (an earlier one ran).
func (b *memberSlot) join(start func(rebuild bool) error) (string, error) {
	if b.running {
		return fmt.Sprintf("%s was already running", b.plan.Name), nil
	}
	if err := start(b.starts > 0); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s joins (%s)", b.plan.Name, b.plan.Kind), nil
}

// resume brings the running member b back from a stall or a freeze: a
// frozen one gets its links healed and thaw (when not nil) called, and its
// driver (stalled) polls again. It says what it did.
func (r *runner) resume(b *memberSlot, stalled *atomic.Bool, thaw func() error) (string, error) {
	name := b.plan.Name
	var saw string
	if b.frozen {
		if err := r.onLinks(name, "thawing member %s's links", func(l *cluster.Links) error { return l.Heal(faults.AllNodes) }); err != nil {
			return "", err
		}
		if thaw != nil {
			if err := thaw(); err != nil {
				return "", err
			}
		}
		b.frozen = false
		saw = "thawed; "
	}
	if stalled.Swap(false) {
		saw += name + " polls again"
	}
	if saw == "" {
		saw = name + " was running"
	}
	return saw, nil
}

// slot is one planned member.
type slot struct {
	memberSlot
	d      *driver // the current incarnation; nil before its first start
	hooks  *muteHooks
	cancel context.CancelFunc
	done   chan struct{}
	// restarting: the member stopped for good, its supervisor took its
	// process down and starts a new incarnation after a backoff
	// (supervisor.go); restartSeq changes when anything else decides the
	// member's life first, which cancels that restart.
	restarting bool
	restartSeq int

	supMu sync.Mutex
	// attempt counts the supervisor's restarts since the member was last
	// taken into the group (under supMu).
	attempt int
}

// muteHooks passes a member's events to its recorder until the member is
// crashed: a killed process cannot speak for itself, so whatever its
// client says while it is torn down is not part of the history.
type muteHooks struct {
	h        clients.Hooks
	protocol clients.Protocol // the member's, when an event names none
	muted    atomic.Bool
	// epoch is the generation or member epoch of the member's last
	// assignment: what its partitions are recorded as lost at, on a crash.
	epoch atomic.Int32
	// admission receives the first sign that the coordinator took the
	// member in ("") or refused it for its group protocol (the error's
	// name); see admissionOf.
	admission chan string
	admitted  atomic.Bool
	// onJoined runs once, when the coordinator first takes this
	// incarnation in (its supervisor's attempts start over).
	onJoined func()
	joined   atomic.Bool
}

// admissionOf says whether e shows the coordinator taking the member in
// (a JoinGroup answered, a first member epoch, an assignment) or refusing
// it for the group's type or the migration policy: GROUP_ID_NOT_FOUND to a
// consumer-protocol join of a classic group the policy keeps from an
// upgrade (GroupMetadataManager.consumerGroupHeartbeat →
// validateOnlineUpgrade), INCONSISTENT_GROUP_PROTOCOL to a classic join of a
// consumer group the policy keeps classic members out of (KAFKA-20640).
func admissionOf(e clients.Event) (refusal string, decided bool) {
	switch {
	case e.ErrCode == kerr.GroupIDNotFound.Code || e.ErrCode == kerr.InconsistentGroupProtocol.Code:
		return kerr.ErrorForCode(e.ErrCode).(*kerr.Error).Message, true
	case e.ErrCode != 0 || e.Err != "":
		return "", false
	case e.Kind == clients.Joined, e.Kind == clients.Assigned,
		e.Kind == clients.Heartbeat && e.MemberEpoch > 0:
		return "", true
	}
	return "", false
}

func (m *muteHooks) OnEvent(e clients.Event) {
	if m.muted.Load() {
		return
	}
	refusal, ok := admissionOf(e)
	if ok && !m.admitted.Swap(true) {
		m.admission <- refusal // buffered, written once
	}
	if ok && refusal == "" && !m.joined.Swap(true) && m.onJoined != nil {
		m.onJoined()
	}
	if e.Kind == clients.Assigned {
		if p := e.Protocol; p == clients.Consumer || p == "" && m.protocol == clients.Consumer {
			m.epoch.Store(e.MemberEpoch)
		} else {
			m.epoch.Store(e.Generation)
		}
	}
	m.h.OnEvent(e)
}

var _ faults.Members = (*crew)(nil)

func newCrew(r *runner) *crew {
	c := &crew{r: r, standsFor: map[string]string{}}
	c.slots, c.order = slotsOf(r.p.Members, func(mp MemberPlan) *slot { return &slot{memberSlot: memberSlot{plan: mp}} })
	return c
}

// build makes a new incarnation of s (not started).
func (c *crew) build(s *slot) error {
	r, mp := c.r, s.plan
	l, err := r.h.Links(mp.Name)
	if err != nil {
		return fmt.Errorf("links of member %s: %w", mp.Name, err)
	}
	var hopts []HookOpt
	if f, ok := r.cfg.Registry[mp.Kind]; ok && f.ResendsCommits {
		hopts = append(hopts, ResendsCommits())
	}
	if mp.InstanceID != "" {
		hopts = append(hopts, Instance(mp.InstanceID))
	}
	h := NewHookRecorder(r.rec, mp.Name, mp.Protocol, hopts...)
	mh := &muteHooks{h: h, protocol: clients.Protocol(mp.Protocol), admission: make(chan string, 1), onJoined: s.joined}
	p := r.p
	m, err := r.cfg.Registry.Build(mp.Kind, kinds.MemberSpec{
		Name: mp.Name, Group: p.Group, Topics: p.TopicNames(), KgoOpts: r.kgoOpts(mp.Name, l.KgoOpts(), true), Hooks: mh,
		InstanceID:     mp.InstanceID,
		SessionTimeout: p.Timers.SessionTimeout, HeartbeatInterval: p.Timers.HeartbeatInterval, RebalanceTimeout: p.Timers.RebalanceTimeout,
		PollInterval: p.Timers.PollInterval,
		Now:          r.cfg.Now,
		KafkaClients: p.KafkaClients(),
		JavaJVMs:     p.Options.JavaJVMs,
	})
	if err != nil {
		return err
	}
	r.hooksMu.Lock()
	r.hooks = append(r.hooks, h)
	r.hooksMu.Unlock()
	d := newDriver(mp, m, h, r.rec, r.led, r.cfg.Now)
	d.onStop = func(err error) error { return c.stopped(s, d, err) }
	if c.final.Load() {
		d.hold = true // built after the final flush: commit nothing the final observation could race
	}
	s.d, s.hooks = d, mh
	return nil
}

// launch starts s's current incarnation after wait and drives it until the
// crew's context ends or the incarnation is stopped. A start in the
// warm-up that fails ends the run (the member could not run at all); a
// start the nemesis asked for (a late join, a restart) that fails is
// retried for a minute, then noted, since the cluster may be faulted at
// that moment.
func (c *crew) launch(s *slot, wait time.Duration, warmup bool) {
	ctx, cancel := context.WithCancel(c.ctx)
	done := make(chan struct{})
	s.cancel, s.done, s.running = cancel, done, true
	s.starts++
	first, d, name := warmup, s.d, s.plan.Name
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(done)
		if wait > 0 && !sleepUntil(ctx, time.Now().Add(wait)) {
			return
		}
		var err error
		for try := 0; ; try++ {
			if err = d.m.Start(ctx); err == nil || first || ctx.Err() != nil || try >= 60 {
				break
			}
			if !sleepUntil(ctx, time.Now().Add(time.Second)) {
				return
			}
		}
		if err != nil {
			if first {
				c.fail(fmt.Errorf("starting member %s: %w", name, err))
			} else if ctx.Err() == nil {
				c.r.note("member %s could not start again within a minute: %v", name, err)
			}
			return
		}
		if err := d.run(ctx); err != nil {
			c.fail(fmt.Errorf("member %s: %w", name, err))
		}
	}()
}

// fail hands a member's error to the run; the first one ends it.
func (c *crew) fail(err error) {
	select {
	case c.errs <- err:
	default:
	}
}

// startAll starts every member that is not a late joiner, each after its
// planned JoinAfter.
func (c *crew) startAll(ctx context.Context, errs chan error, wg *sync.WaitGroup) error {
	c.ctx, c.errs, c.wg = ctx, errs, wg
	late := map[string]bool{}
	for _, n := range faults.LateJoiners(c.r.p.Faults) {
		late[n] = true
	}
	for _, n := range faults.Replacements(c.r.p.Faults) {
		late[n] = true
	}
	for _, s := range c.order {
		s.mu.Lock()
		if s.d == nil {
			if err := c.build(s); err != nil {
				s.mu.Unlock()
				return err
			}
		}
		if !late[s.plan.Name] {
			c.launch(s, s.plan.JoinAfter, true)
		}
		s.mu.Unlock()
	}
	return nil
}

// running returns the drivers of the members running now.
func (c *crew) running() []*driver {
	return pickSlots(c, func(s *slot) (*driver, bool) { return s.d, s.running && s.d != nil })
}

// members names the members the harness runs now, in plan order: those
// running and those their supervisor is restarting.
func (c *crew) members() []string {
	return pickSlots(c, func(s *slot) (string, bool) { return s.plan.Name, s.running && s.d != nil || s.restarting })
}

// restartingNames names the members their supervisor is restarting now.
func (c *crew) restartingNames() []string {
	return pickSlots(c, func(s *slot) (string, bool) { return s.plan.Name, s.restarting })
}

// pickSlots returns, in plan order, what pick gives of each member's slot
// (read under the slot's lock) where pick says so.
func pickSlots[T any](c *crew, pick func(s *slot) (T, bool)) []T {
	var out []T
	for _, s := range c.order {
		s.mu.Lock()
		if v, ok := pick(s); ok {
			out = append(out, v)
		}
		s.mu.Unlock()
	}
	return out
}

func (c *crew) slot(name string) (*slot, error) { return slotOf(c.slots, name) }

// halt stops s's driver loop and waits for it (a commit in flight gets its
// answer or its timeout first).
func (c *crew) halt(s *slot) {
	if !s.running {
		return
	}
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		c.r.note("member %s: its driver did not stop within 30s", s.plan.Name)
	}
	s.running = false
}

// onLinks does fn to member name's links; what, a format whose one verb
// takes the member's name, says what fn does for its error.
func (r *runner) onLinks(name, what string, fn func(*cluster.Links) error) error {
	l, err := r.h.Links(name)
	if err != nil {
		return fmt.Errorf("links of member %s: %w", name, err)
	}
	if err := fn(l); err != nil {
		return fmt.Errorf(what+": %w", name, err)
	}
	return nil
}

// Join implements faults.Members: a late joiner starts.
func (c *crew) Join(ctx context.Context, name string) (string, error) {
	return withSlot(c.slots, name, func(s *slot) (string, error) {
		if !s.running && s.restarting {
			return c.underSupervisor(s), nil
		}
		return s.join(func(rebuild bool) error {
			if rebuild {
				if err := c.build(s); err != nil {
					return err
				}
			}
			c.launch(s, 0, false)
			return nil
		})
	})
}

// Leave implements faults.Members: the member commits what it consumed of
// the partitions it owns and leaves the group through its Close.
func (c *crew) Leave(ctx context.Context, name string) (string, error) {
	saw, _, err := c.leave(ctx, name)
	return saw, err
}

// leave is Leave, saying too whether the member's commit and close went
// through.
func (c *crew) leave(ctx context.Context, name string) (string, bool, error) {
	clean := true
	saw, err := c.takeOver(name, func(s *slot) (string, error) {
		c.halt(s)
		d := s.d
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		var errs []error
		if err := d.commit(cctx); err != nil {
			errs = append(errs, fmt.Errorf("last commit: %w", err))
		}
		if err := d.m.Close(cctx); err != nil {
			errs = append(errs, fmt.Errorf("close: %w", err))
		}
		if err := d.h.Finish(); err != nil {
			return "", err
		}
		if err := errors.Join(errs...); err != nil {
			clean = false
			return fmt.Sprintf("%s left uncleanly: %v", name, err), nil
		}
		return fmt.Sprintf("%s committed and left", name), nil
	})
	if strings.HasPrefix(saw, name+" was not running") {
		clean = false // nothing was committed or left: a static member's instance id may still be held
	}
	return saw, clean, err
}

// admitWait bounds how long a replacement waits for the group to take its
// newcomer in or refuse it: a classic join completes once every member has
// rejoined (the rebalance timeout), a consumer-protocol member's first epoch
// comes with its first heartbeat.
//
// Node faults beside a migration's steps (Options.Faults) add every node
// fault's interval and a restart's worth (nodeRestartAllowance) each: the
// newcomer of a step may have to wait out every one of them (one node down
// at a time, each after the one before healed), and on a 1-node cluster the
// group has no coordinator meanwhile (seen on 4.4.0: a node stopped for
// 6.8 s, then killed for 8.5 s, kept a step's newcomer out for over 21 s).
func (c *crew) admitWait() time.Duration {
	t := c.r.p.Timers
	return t.RebalanceTimeout + t.SessionTimeout + c.r.p.nodeFaultsWait()
}

// groupWaitWhy says how a wait of session timeout + rebalance timeout +
// nodeFaultsWait (admitWait, a checkpoint's) was worked out.
func (p Plan) groupWaitWhy() string {
	t := p.Timers
	why := fmt.Sprintf("session %s + rebalance %s", t.SessionTimeout, t.RebalanceTimeout)
	n := 0
	for _, f := range p.Faults {
		if f.Family() == faults.FamilyNode {
			n++
		}
	}
	if n > 0 {
		why += fmt.Sprintf(" + %s for the plan's %d node fault(s) (each one's length + %s for its node to serve again)", p.nodeFaultsWait(), n, nodeRestartAllowance)
	}
	return why
}

// nodeFaultsWait is how much longer a migration's step or checkpoint may
// have to wait for the group because of the plan's node faults: each one's
// interval and a restart's worth (nodeRestartAllowance).
func (p Plan) nodeFaultsWait() time.Duration {
	var w time.Duration
	for _, f := range p.Faults {
		if f.Family() == faults.FamilyNode {
			w += f.For + nodeRestartAllowance
		}
	}
	return w
}

// nodeRestartAllowance is how long a Kafka node may take to serve the group
// again once a node fault healed: the container's start, the log's
// recovery, the coordinator loading __consumer_offsets (9–10 s on the
// project's 2-core machine).
const nodeRestartAllowance = 20 * time.Second

// RefusedMark and AdmittedMark begin what a replacement says it saw, so
// that a run's steps can be read back from the history (MigrationSteps).
const (
	RefusedMark  = "refused by the coordinator with "
	AdmittedMark = "taken in by the group"
)

// Replace implements faults.Replacer: in starts; once the group has taken
// it in, out (or the member that stands for out, when out was itself
// refused) commits and leaves for good; when the coordinator refuses in,
// in is stopped and out stays, standing for in from then on.
func (c *crew) Replace(ctx context.Context, out, in string) (string, error) {
	c.replaceMu.Lock()
	defer c.replaceMu.Unlock()
	holder := out
	for c.standsFor[holder] != "" {
		holder = c.standsFor[holder]
	}
	s, err := c.slot(in)
	if err != nil {
		return "", err
	}
	hs, err := c.slot(holder)
	if err != nil {
		return "", err
	}
	if id := s.plan.InstanceID; id != "" && id == hs.plan.InstanceID {
		return c.bounce(ctx, holder, in)
	}
	refusal, took, decided, err := c.admit(ctx, s, in, fmt.Sprintf("replacing %s by %s", holder, in))
	if err != nil {
		return "", err
	}
	if !decided || refusal != "" {
		stopped, err := c.withdraw(ctx, in, holder)
		if err != nil {
			return "", err
		}
		if !decided {
			return "", fmt.Errorf("%s (%s) was neither taken in nor refused within %s (%s), and is %s; %s stays", in, s.plan.Kind, c.admitWait(), c.r.p.groupWaitWhy(), stopped, holder)
		}
		saw := fmt.Sprintf("%s%s: %s (%s) refused after %s, %s; %s stays in its place", RefusedMark, refusal, in, s.plan.Kind, took, stopped, holder)
		return c.checkpointAfter(ctx, saw, in)
	}
	left, err := c.Leave(ctx, holder)
	if err != nil {
		return "", err
	}
	saw := fmt.Sprintf("%s: %s (%s) joined after %s; %s", AdmittedMark, in, s.plan.Kind, took, left)
	return c.checkpointAfter(ctx, saw, in)
}

// bounce is a replacement of a static member by itself in the other
// protocol (Options.MigrationStatic), as a rolling bounce of its pod does:
// out commits and closes (a static member's close: a classic member sends
// no LeaveGroup, a consumer-protocol member leaves with epoch -2, so the
// coordinator keeps its place and its assignment for its instance id), then
// in starts under the same group.instance.id and takes that place over
// (GroupMetadataManager.getOrMaybeSubscribeStaticConsumerGroupMember, and
// the classic group's static rejoin). When the coordinator refuses in, in
// is stopped and out starts again in its own protocol (the bounce rolled
// back), standing for in from then on.
//
// A static consumer-protocol member whose leave failed still holds its
// instance id, and Kafka refuses it to another consumer-protocol member
// with UNRELEASED_INSTANCE_ID until it is released
// (GroupMetadataManager.throwIfInstanceIdIsUnreleased), which the
// newcomer's client takes as fatal: the bounce then waits out the old
// member's session first, as a pod's restarts would until the id is free.
func (c *crew) bounce(ctx context.Context, out, in string) (string, error) {
	left, clean, err := c.leave(ctx, out)
	if err != nil {
		return "", err
	}
	s, err := c.slot(in)
	if err != nil {
		return "", err
	}
	if hs := c.slots[out]; !clean && hs.plan.Protocol == history.ProtocolConsumer && s.plan.Protocol == history.ProtocolConsumer {
		t := c.r.p.Timers
		wait := t.SessionTimeout + t.HeartbeatInterval
		if !sleepUntil(ctx, time.Now().Add(wait)) {
			return "", fmt.Errorf("bouncing %s into %s: %w", out, in, ctx.Err())
		}
		left += fmt.Sprintf("; its instance id stays held until its session expires (a consumer-protocol newcomer gets UNRELEASED_INSTANCE_ID meanwhile): %s waited %s", in, wait)
	}
	refusal, took, decided, err := c.admit(ctx, s, in, fmt.Sprintf("bouncing %s into %s", out, in))
	if err != nil {
		return "", err
	}
	if !decided || refusal != "" {
		// Rolled back: out starts again in its own protocol.
		stopped, err := c.withdraw(ctx, in, out)
		if err != nil {
			return "", err
		}
		back, err := c.Join(ctx, out)
		if err != nil {
			return "", err
		}
		if !decided {
			return "", fmt.Errorf("%s (%s, instance id %s) was neither taken in nor refused within %s (%s) after %s left, and is %s; %s", in, s.plan.Kind, s.plan.InstanceID, c.admitWait(), c.r.p.groupWaitWhy(), out, stopped, back)
		}
		saw := fmt.Sprintf("%s%s: %s (%s, instance id %s) refused after %s, %s; rolled back: %s", RefusedMark, refusal, in, s.plan.Kind, s.plan.InstanceID, took, stopped, back)
		return c.checkpointAfter(ctx, saw, in)
	}
	saw := fmt.Sprintf("%s: %s (%s) took the place of static member %s (instance id %s) %s after it left; %s", AdmittedMark, in, s.plan.Kind, out, s.plan.InstanceID, took, left)
	return c.checkpointAfter(ctx, saw, in)
}

// admit starts newcomer s (named in) and waits for the coordinator to take
// it in or refuse it for its group protocol (refusal, the error's name).
// decided is false when neither came within admitWait: the caller stops
// the newcomer and says what stays. what names the step in errors.
func (c *crew) admit(ctx context.Context, s *slot, in, what string) (refusal string, took time.Duration, decided bool, err error) {
	s.mu.Lock()
	if s.running || s.restarting {
		s.mu.Unlock()
		return "", 0, false, fmt.Errorf("%s is already running: a replacement brings in a member the plan kept out of the group", in)
	}
	if s.d == nil || s.starts > 0 {
		if err := c.build(s); err != nil {
			s.mu.Unlock()
			return "", 0, false, err
		}
	}
	admission := s.hooks.admission
	c.launch(s, 0, false)
	s.mu.Unlock()

	t0 := time.Now()
	select {
	case refusal = <-admission:
		return refusal, time.Since(t0).Round(time.Millisecond), true, nil
	case <-ctx.Done():
		return "", 0, false, fmt.Errorf("%s: %w", what, ctx.Err())
	case <-time.After(c.admitWait()):
		return "", 0, false, nil
	}
}

// withdraw stops a newcomer the group did not take in; out, the member it
// was to replace, stands for it from then on.
func (c *crew) withdraw(ctx context.Context, in, out string) (string, error) {
	c.standsFor[in] = out
	return c.stop(ctx, in)
}

// checkpointAfter takes the checkpoint that ends a replacement (named after
// its newcomer), so that the group is judged after every step of a
// migration; what the checkpoint saw is added to what the step saw.
func (c *crew) checkpointAfter(ctx context.Context, saw, in string) (string, error) {
	cp, err := c.r.checkpoint(ctx, "after-"+in)
	if err != nil {
		return "", err
	}
	return saw + "; " + cp, nil
}

// stop ends a member that the coordinator refused: its driver stops and
// its client closes (it owns nothing to commit).
func (c *crew) stop(ctx context.Context, name string) (string, error) {
	return c.takeOver(name, func(s *slot) (string, error) {
		c.halt(s)
		d := s.d
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		cerr := d.m.Close(cctx)
		if err := d.h.Finish(); err != nil {
			return "", err
		}
		if cerr != nil {
			return "stopped (its client's close said: " + cerr.Error() + ")", nil
		}
		return "stopped", nil
	})
}

// Crash implements faults.Members: the member's links are cut first, so
// from that instant nothing of it reaches Kafka; then its driver is
// stopped, its owned partitions are recorded as lost on its behalf (a dead
// process consumes and commits nothing more), its client is closed with
// its hooks muted, its open calls end as unknown outcomes, and its links
// heal for the next incarnation.
func (c *crew) Crash(ctx context.Context, name string) (string, error) {
	return c.change(name, func(s *slot) (string, error) {
		// l is looked up once: it heals below, after the member is gone.
		l, err := c.r.h.Links(name)
		if err != nil {
			return "", fmt.Errorf("links of member %s: %w", name, err)
		}
		if err := l.Cut(faults.AllNodes); err != nil {
			return "", fmt.Errorf("cutting member %s off: %w", name, err)
		}
		s.hooks.muted.Store(true)
		c.halt(s)
		d := s.d
		owned := d.m.Owned()
		rec := c.r.rec
		if owned.Count() > 0 {
			a := history.Assignment{Member: name, Protocol: s.plan.Protocol, Epoch: s.hooks.epoch.Load(), Partitions: tps(owned)}
			if _, err := rec.Lost(name, a, "crashed by the nemesis: the process is gone and consumes nothing more; the coordinator counts it until its session expires"); err != nil {
				return "", err
			}
		}
		var cerr error
		if k, ok := d.m.(killer); ok {
			cerr = k.Kill() // the member's own process: killed, as a crash kills it
		} else {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			cerr = d.m.Close(cctx)
			cancel()
		}
		// Calls the member had open end as unknown outcomes: it cannot report them.
		if err := d.h.Finish(); err != nil {
			return "", err
		}
		if err := l.Heal(faults.AllNodes); err != nil {
			return "", fmt.Errorf("healing member %s's links after its crash: %w", name, err)
		}
		saw := fmt.Sprintf("%s crashed owning %d partitions", name, owned.Count())
		if cerr != nil {
			saw += " (its client's close said: " + cerr.Error() + ")"
		}
		return saw, nil
	})
}

// killer is a Java member (clients/java): a crash kills its own process
// instead of closing the client, or, hosted in a shared JVM, cuts its
// links for good and abandons its consumer there.
type killer interface{ Kill() error }

// freezer is a member whose process can be stopped and resumed (SIGSTOP,
// SIGCONT; a Java member hosted in a shared JVM: its thread stopped and its
// links held): a freeze then stops it as a long pause would, besides
// delaying its links.
type freezer interface{ Freeze(on bool) error }

// Stall implements faults.Members: the driver stops polling and
// committing; with freeze, the member's links also delay every byte by d.
func (c *crew) Stall(ctx context.Context, name string, freeze bool, d time.Duration) (string, error) {
	return c.change(name, func(s *slot) (string, error) {
		s.d.stalled.Store(true)
		if freeze {
			if err := c.r.onLinks(name, "freezing member %s's links", func(l *cluster.Links) error { return l.Latency(faults.AllNodes, d, 0) }); err != nil {
				return "", err
			}
			s.frozen = true
			if f, ok := s.d.m.(freezer); ok {
				if err := f.Freeze(true); err != nil {
					return "", fmt.Errorf("freezing member %s's process: %w", name, err)
				}
				if c.r.p.Options.JavaJVMs == kinds.JavaJVMsShared {
					return fmt.Sprintf("%s frozen for %s (its thread in the shared JVM stopped, its gateway held, its links delayed)", name, d), nil
				}
				return fmt.Sprintf("%s frozen for %s (its process stopped, its links delayed)", name, d), nil
			}
			return fmt.Sprintf("%s frozen for %s", name, d), nil
		}
		return fmt.Sprintf("%s stopped polling for %s (poll interval %s)", name, d, c.r.p.Timers.PollInterval), nil
	})
}

// change runs fn on the running member name, under its slot's lock; a
// member that is not running is left as it is, and the history says so (a
// member its supervisor is restarting stays in its hands: a crash or a
// stall of a process that is not there changes nothing).
func (c *crew) change(name string, fn func(*slot) (string, error)) (string, error) {
	return c.changeRunning(name, false, fn)
}

// takeOver is change for what takes the member out of the group until the
// harness brings it back (a leave, a withdrawal): a restart its supervisor
// has pending is cancelled.
func (c *crew) takeOver(name string, fn func(*slot) (string, error)) (string, error) {
	return c.changeRunning(name, true, fn)
}

func (c *crew) changeRunning(name string, takeOver bool, fn func(*slot) (string, error)) (string, error) {
	return withSlot(c.slots, name, func(s *slot) (string, error) {
		if !s.running {
			if s.restarting {
				if !takeOver {
					return fmt.Sprintf("%s was not running (%s)", name, c.underSupervisor(s)), nil
				}
				if err := c.cancelRestart(s, "the harness took the member out first (a leave, or a newcomer withdrawn)"); err != nil {
					return "", err
				}
				return fmt.Sprintf("%s was not running: it had stopped for good; its supervisor's restart is cancelled", name), nil
			}
			return fmt.Sprintf("%s was not running", name), nil
		}
		return fn(s)
	})
}

// Restore implements faults.Members: a stalled member resumes, a stopped
// one starts anew (a new member id; a static member keeps its instance id).
func (c *crew) Restore(ctx context.Context, name string) (string, error) {
	return withSlot(c.slots, name, func(s *slot) (string, error) {
		if s.running {
			return c.r.resume(&s.memberSlot, &s.d.stalled, func() error {
				if f, ok := s.d.m.(freezer); ok {
					if err := f.Freeze(false); err != nil {
						return fmt.Errorf("thawing member %s's process: %w", name, err)
					}
				}
				return nil
			})
		}
		if s.restarting {
			return c.underSupervisor(s), nil
		}
		if err := c.build(s); err != nil {
			return "", err
		}
		c.launch(s, 0, false)
		how := "as a new member"
		if s.plan.InstanceID != "" {
			how = "with its instance id " + s.plan.InstanceID
		}
		return fmt.Sprintf("%s starts again %s", name, how), nil
	})
}

// closeAll closes every running incarnation (teardown): they leave the group.
func (c *crew) closeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range c.order {
		s.mu.Lock()
		d, was := s.d, s.running
		s.running = false
		s.mu.Unlock()
		if d == nil || !was {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.m.Close(ctx); err != nil {
				c.r.cfg.Logf("teardown: member %s: %v", d.plan.Name, err)
			}
		}()
	}
	wg.Wait()
}
