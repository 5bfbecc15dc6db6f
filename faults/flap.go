package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"
)

// LinkFlap cuts one client's links to a broker (or all) and restores them,
// again and again, while the fault is in force: a flapping network, a
// classic cause of rebalance storms and of commits from members that lost
// their partitions. Each cut lasts Fault.FlapDown and the link is up for
// Fault.FlapUp between two cuts; both are drawn with the plan, so a seed
// gives the same rhythm. The heal stops the flapping and heals the link for
// good. It is a link kind the scenarios do not draw: --faults names it.
const LinkFlap Kind = "link-flap"

// MinFlapPeriod is the shortest cut or up period a plan may name: each
// period is one call to the client's links, and shorter ones would only
// measure those calls.
const MinFlapPeriod = 100 * time.Millisecond

// The range the periods are drawn from, and the shortest flap: one cycle
// of the longest periods.
const (
	flapLo  = 500 * time.Millisecond
	flapHi  = 2 * time.Second
	flapMin = 2 * flapHi
)

// flapKind is a link kind whose Apply starts the flapping and whose Heal
// stops it; what a link kind draws and checks, it shares.
type flapKind struct{ linkKind }

func init() {
	register(flapKind{linkKind{kind: LinkFlap, closes: true,
		doc:   "cut one client's links to a broker (or all) and restore them again and again (cut and up periods drawn from the seed) until the heal",
		param: drawFlap, check: checkFlap}})
}

func drawFlap(rng *rand.Rand, _ Space, f *Fault) {
	period := func() time.Duration {
		ms := int64(flapLo / time.Millisecond)
		return time.Duration(ms+rng.Int64N(int64(flapHi/time.Millisecond)-ms+1)) * time.Millisecond
	}
	f.FlapDown = period()
	f.FlapUp = period()
}

func checkFlap(f Fault) error {
	if f.FlapDown < MinFlapPeriod || f.FlapUp < MinFlapPeriod {
		return fmt.Errorf("fault %s needs flap_down (how long each cut lasts) and flap_up (how long the link is up between two cuts) of at least %s each, got flap_down %s and flap_up %s", f.Kind, MinFlapPeriod, f.FlapDown, f.FlapUp)
	}
	return nil
}

// durations: long enough for a few cycles, from one cycle of the longest
// periods to twice a link fault's longest.
func (k flapKind) durations(s Space) (time.Duration, time.Duration) {
	lo := max(s.MinDuration, flapMin)
	return lo, max(lo, 2*s.MaxDuration)
}

// Edge is one change a flapping fault made to its target (see Env.Edges):
// the link was cut or brought up again.
type Edge struct {
	// Fault is the fault as applied.
	Fault Fault
	// Up is false for a cut, true for a restore.
	Up bool
	// Cut numbers the cuts from 1; a restore carries the number of the cut
	// it ended.
	Cut int
	// Final marks the restore the heal made: the flapping is over.
	Final bool
	// At is when the change took effect: when the call to the link
	// returned.
	At time.Time
	// Err is the error of a call to the link that failed: the flapping
	// stops there, and the link may be either way until the heal.
	Err error
}

func (e Edge) String() string {
	s := fmt.Sprintf("cut %d", e.Cut)
	if e.Up {
		s = fmt.Sprintf("up after cut %d", e.Cut)
	}
	if e.Final {
		s += " (the heal)"
	}
	if e.Err != nil {
		s += fmt.Sprintf(" failed: %v", e.Err)
	}
	return s
}

// flapKey finds a flap again at its heal: the client's links (LinkOf gives
// the same Link for a client throughout a run) and the fault.
type flapKey struct {
	l Link
	f Fault
}

// flaps are the flaps in force.
var flaps = struct {
	sync.Mutex
	m map[flapKey]*flap
}{m: map[flapKey]*flap{}}

// flapTimer waits d; tests replace it to step the flapping.
var flapTimer = func(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// flap is one link flapping: its goroutine alternates the link between cut
// and up until stop is closed, then closes done.
type flap struct {
	l          Link
	f          Fault
	stop, done chan struct{}
	// edges is told each cut and restore (Env.Edges); nil when no one asks.
	edges func(Edge)
	// Written by the goroutine, read after done: the cuts made, the last
	// cut tried (a cut that failed may have taken effect), whether the link
	// is cut, and the call that failed.
	cuts, tried int
	down        bool
	err         error
}

// edge reports one change of the link, when someone asks.
func (fl *flap) edge(up, final bool, cut int, at time.Time, err error) {
	if fl.edges != nil {
		fl.edges(Edge{Fault: fl.f, Up: up, Cut: cut, Final: final, At: at, Err: err})
	}
}

func (k flapKind) Apply(_ context.Context, env Env, f Fault) (string, error) {
	l, err := k.links(env, f)
	if err != nil {
		return "", err
	}
	if t := reflect.TypeOf(l); t == nil || !t.Comparable() {
		return "", fmt.Errorf("fault %s: the links of %s (%T) cannot be found again at the heal: a Link must be a comparable value, such as a pointer", f, f.Client, l)
	}
	key := flapKey{l, f}
	flaps.Lock()
	defer flaps.Unlock()
	if flaps.m[key] != nil {
		return "", fmt.Errorf("fault %s is already flapping", f)
	}
	if err := l.Cut(f.Node); err != nil {
		return "", err
	}
	fl := &flap{l: l, f: f, stop: make(chan struct{}), done: make(chan struct{}), edges: env.Edges, cuts: 1, tried: 1, down: true}
	flaps.m[key] = fl
	fl.edge(false, false, 1, time.Now(), nil)
	go fl.run()
	return fmt.Sprintf("cut; up after %s, cut again after %s, and so on until the heal", f.FlapDown, f.FlapUp), nil
}

// run alternates the link: up after a cut's FlapDown, cut again after
// FlapUp. A call to the links that fails ends the flapping (the heal says
// so); the link stays as it was until the heal. Each change that took
// effect is reported as an edge (Apply reported the first cut), and so is
// a call that failed.
func (fl *flap) run() {
	defer close(fl.done)
	for down := true; ; down = !down {
		d := fl.f.FlapUp
		if down {
			d = fl.f.FlapDown
		}
		c, stop := flapTimer(d)
		select {
		case <-fl.stop:
			stop()
			return
		case <-c:
		}
		cut := fl.cuts
		if down {
			fl.err = fl.l.Heal(fl.f.Node)
		} else {
			cut++
			fl.tried = cut
			if fl.err = fl.l.Cut(fl.f.Node); fl.err == nil {
				fl.cuts++
			}
		}
		fl.edge(down, false, cut, time.Now(), fl.err)
		if fl.err != nil {
			return
		}
		fl.down = !down
	}
}

// Heal stops the flapping, waits for its goroutine to end and heals the
// link for good. It says how many cuts there were: a Heal whose Apply
// failed before the first cut finds no flap and heals the link all the same.
func (k flapKind) Heal(_ context.Context, env Env, f Fault) (string, error) {
	l, err := k.links(env, f)
	if err != nil {
		return "", err
	}
	saw := "the link was not flapping"
	var fl *flap
	if t := reflect.TypeOf(l); t != nil && t.Comparable() {
		key := flapKey{l, f}
		flaps.Lock()
		fl = flaps.m[key]
		delete(flaps.m, key)
		flaps.Unlock()
		if fl != nil {
			close(fl.stop)
			<-fl.done
			saw = fl.summary()
		}
	}
	err = l.Heal(f.Node)
	// The heal ends the last cut when the flapping left the link cut; after
	// a failed call the link may be either way, and the heal's restore is
	// reported as well, as the end of the last cut tried.
	if fl != nil && (fl.down || fl.err != nil) {
		fl.edge(true, true, fl.tried, time.Now(), err)
	}
	return saw, err
}

func (fl *flap) summary() string {
	times := "once"
	if fl.cuts > 1 {
		times = fmt.Sprintf("%d times", fl.cuts)
	}
	s := fmt.Sprintf("the link was cut %s (%s cut, %s up)", times, fl.f.FlapDown, fl.f.FlapUp)
	if fl.err != nil {
		s += fmt.Sprintf("; the flapping stopped early: %v", fl.err)
	}
	return s
}
