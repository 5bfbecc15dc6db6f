package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// scriptedPulse is a pulse on a scripted clock: its i-th wait moves the
// clock by steps[i]; once the steps are spent, drained is closed and the
// wait blocks until the pulse is stopped. No real time is measured.
type scriptedPulse struct {
	p       *pulse
	rec     *history.Recorder
	now     time.Duration
	steps   []time.Duration
	drained chan struct{}
	logged  []string
}

func newScriptedPulse(t *testing.T, w interface{ Write([]byte) (int, error) }, steps ...time.Duration) *scriptedPulse {
	t.Helper()
	s := &scriptedPulse{steps: steps, drained: make(chan struct{})}
	clock := func() time.Duration { return s.now }
	rec, err := history.NewRecorder(w, clock, history.Retain())
	if err != nil {
		t.Fatal(err)
	}
	s.rec = rec
	s.p = newPulse(rec, clock, func(format string, args ...any) { s.logged = append(s.logged, fmt.Sprintf(format, args...)) })
	s.p.wait = func(ctx context.Context, d time.Duration) bool {
		if len(s.steps) == 0 {
			close(s.drained)
			<-ctx.Done()
			return false
		}
		s.now += s.steps[0]
		s.steps = s.steps[1:]
		return true
	}
	return s
}

// ticks is n on-time wake-ups.
func ticks(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = pulseEvery
	}
	return out
}

// runScript starts the pulse, lets it spend its steps, stops it and
// returns what stop returned; it fails the test if the pulse's goroutine
// outlives stop.
func (s *scriptedPulse) runScript(t *testing.T) error {
	t.Helper()
	stop := s.p.start()
	select {
	case <-s.drained:
	case <-time.After(time.Minute): // a guard against a hang, not a measure
		t.Fatal("the pulse did not spend its scripted steps")
	}
	err := stop()
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "run.(*pulse).run(") {
		t.Fatalf("a pulse goroutine still runs after stop:\n%s", stacks)
	}
	return err
}

func stalls(t *testing.T, rec *history.Recorder) []history.Stall {
	t.Helper()
	var out []history.Stall
	for _, e := range rec.Events() {
		if e.F != history.FStall {
			t.Fatalf("the pulse recorded %s", e)
		}
		if e.Type != history.Info || e.Process != "harness" {
			t.Fatalf("a stall is a standalone info event of process harness, got %s", e)
		}
		out = append(out, e.Value.(history.Stall))
	}
	return out
}

// The pulse tests do not run in parallel: each looks for a pulse goroutine
// left behind, and must not see another test's.

// TestPulseOnTimeRecordsNothing: wake-ups on time, and late by less than
// the threshold, leave the history empty.
func TestPulseOnTimeRecordsNothing(t *testing.T) {
	steps := append(ticks(50), pulseEvery+pulseLate-time.Millisecond)
	steps = append(steps, ticks(50)...)
	s := newScriptedPulse(t, &bytes.Buffer{}, steps...)
	if err := s.runScript(t); err != nil {
		t.Fatal(err)
	}
	if got := stalls(t, s.rec); len(got) != 0 {
		t.Fatalf("on-time wake-ups recorded %+v", got)
	}
}

// TestPulseRecordsALateTickOnce: a wake-up 12.5 s late is one stall event,
// from its due time to its arrival; one late by exactly the threshold is
// another; the on-time ones around them record nothing.
func TestPulseRecordsALateTickOnce(t *testing.T) {
	steps := append(ticks(2), pulseEvery+12500*time.Millisecond) // due at 0.3 s, woke at 12.8 s
	steps = append(steps, ticks(10)...)
	steps = append(steps, pulseEvery+pulseLate) // due at 13.9 s, woke at 14.9 s
	steps = append(steps, ticks(3)...)
	s := newScriptedPulse(t, &bytes.Buffer{}, steps...)
	if err := s.runScript(t); err != nil {
		t.Fatal(err)
	}
	want := []history.Stall{
		{From: 300 * time.Millisecond, To: 12800 * time.Millisecond, Every: pulseEvery},
		{From: 13900 * time.Millisecond, To: 14900 * time.Millisecond, Every: pulseEvery},
	}
	got := stalls(t, s.rec)
	if len(got) != len(want) {
		t.Fatalf("stalls %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("stall %d is %+v, want %+v", i, got[i], want[i])
		}
	}
	if e := s.rec.Events()[0]; e.Time != want[0].To || !strings.Contains(e.Why, "12.5s late") {
		t.Fatalf("the stall is recorded at %v (%q), want at its end %v saying how late", e.Time, e.Why, want[0].To)
	}
	if len(s.logged) != 2 || s.logged[0] != "the harness did not run for 12.5s (300ms–12.8s, event 0): its members sent nothing meanwhile" {
		t.Fatalf("logged %q", s.logged)
	}
}

type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestPulseStopsOnARecorderError: a stall it cannot record ends the pulse,
// and stop says why.
func TestPulseStopsOnARecorderError(t *testing.T) {
	s := newScriptedPulse(t, brokenWriter{}, pulseEvery+2*time.Second)
	stop := s.p.start()
	if err := stop(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("stop returned %v, want the recorder's error", err)
	}
}
