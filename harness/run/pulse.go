package run

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// The pulse's defaults. Every is short next to the timers a stall matters
// for (a heartbeat interval of 1 s or more, a session timeout of 6 s or
// more) and costs ten wake-ups a second. A wake-up is a stall when it comes
// Late or later past its due time: a second is far above what the Go
// scheduler, a garbage collection or a busy disk delay a goroutine by on a
// machine that runs (milliseconds), and below a heartbeat interval, so
// every stall that could cost a member a heartbeat is recorded. Shorter
// delays go unrecorded; EventuallyConverges' slack covers them.
const (
	pulseEvery = 100 * time.Millisecond
	pulseLate  = time.Second
)

// pulse is a goroutine that watches the harness process itself: it wakes
// every period and does nothing else, so when a wake-up comes late by late
// or more, the whole process was not run meanwhile (a starved machine, a
// stopped process) and neither were the members that run in it. It then
// records one FStall event saying from when (the wake-up's due time) to
// when (its arrival) the harness did not run. On-time wake-ups record
// nothing.
type pulse struct {
	rec   *history.Recorder
	clock func() time.Duration // the run's clock, the history's
	every time.Duration
	late  time.Duration
	// wait waits d, or until ctx ends, and says whether d passed (a timer;
	// tests script it with their clock).
	wait func(ctx context.Context, d time.Duration) bool
	logf func(format string, args ...any) // says each stall as it is recorded

	mu   sync.Mutex
	last time.Duration   // when the harness last ran, as far as the pulse knows
	seen []history.Stall // the stalls recorded, in order
	err  error           // the Recorder's error, after which nothing more is recorded
}

func newPulse(rec *history.Recorder, clock func() time.Duration, logf func(string, ...any)) *pulse {
	return &pulse{rec: rec, clock: clock, every: pulseEvery, late: pulseLate, wait: sleepCtx, logf: logf}
}

// sleepCtx waits d, or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// run wakes every period until ctx ends, recording each late wake-up
// (check). It returns the Recorder's error, which ends it.
func (p *pulse) run(ctx context.Context) error {
	p.mu.Lock()
	p.last = p.clock()
	p.mu.Unlock()
	for p.wait(ctx, p.every) {
		if err := p.check(); err != nil {
			return err
		}
	}
	return nil
}

// check is one wake-up of the harness: when it comes late or more past
// the pulse's next due time (a period after the harness last ran), the
// harness did not run from then to now, and one FStall event says so. The
// pulse calls it on each of its wake-ups; a wait of the run calls it
// before it judges its deadline (waitFor), so that a stall it woke from is
// recorded, and counted, before the wait can end on it: whichever wakes
// first records the stall, once. After the Recorder's error it records
// nothing and returns that error.
func (p *pulse) check() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	now := p.clock()
	due := p.last + p.every
	if now-due >= p.late {
		s := history.Stall{From: due, To: now, Every: p.every}
		why := "the harness's pulse, due every " + p.every.String() + ", woke " + (now - due).Round(time.Millisecond).String() + " late: the harness process did not run meanwhile"
		e, err := p.rec.Stalled(s, why)
		if err != nil {
			p.err = err
			return err
		}
		p.seen = append(p.seen, s)
		p.logf("the harness did not run for %s (%s–%s, event %d): its members sent nothing meanwhile", s.To-s.From, s.From.Round(time.Millisecond), s.To.Round(time.Millisecond), e.Index)
	}
	p.last = max(p.last, now)
	return nil
}

// stalls is the stalls recorded so far, in order.
func (p *pulse) stalls() []history.Stall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// start runs the pulse in its own goroutine until the returned stop is
// called; stop waits for the goroutine to end and returns its error.
func (p *pulse) start() (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}
