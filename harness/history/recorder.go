package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Recorder is the one door to the history: every writer (members, producers, the nemesis, the
// observer) goes through it. It is safe for concurrent use. Under one lock it checks the pairing
// rule (see the package doc), assigns the next index, reads the clock and writes the event as one
// JSON line with a single Write, so a run killed at any moment leaves every earlier event readable
// and at most a truncated last line (which Load tolerates).
//
// Give it an unbuffered writer (an *os.File): a bufio.Writer would keep the last events in memory
// and lose them on SIGKILL.
type Recorder struct {
	mu     sync.Mutex
	w      io.Writer
	clock  func() time.Duration
	next   int64
	open   map[string]Event // process → its open invoke
	retain bool
	events []Event
	taps   []func(Event)
	err    error // sticky: after a failed write no later event may be recorded, or indexes would skip
}

// RecorderOption configures a Recorder.
type RecorderOption interface{ apply(*Recorder) }

type recorderOpt func(*Recorder)

func (o recorderOpt) apply(r *Recorder) { o(r) }

// Retain keeps every recorded event in memory for Events; tests and short runs use it, long runs
// read the file back with Load instead.
func Retain() RecorderOption { return recorderOpt(func(r *Recorder) { r.retain = true }) }

// Tap calls fn with every event once it is written, in index order, under the Recorder's lock:
// fn must be quick and must not record (the nemesis measures a fault's effect this way).
func Tap(fn func(Event)) RecorderOption {
	return recorderOpt(func(r *Recorder) { r.taps = append(r.taps, fn) })
}

// NewRecorder returns a Recorder that appends to w and stamps events with clock, which must return
// monotonic time since the start of the run (use SinceClock).
func NewRecorder(w io.Writer, clock func() time.Duration, opts ...RecorderOption) (*Recorder, error) {
	if w == nil {
		return nil, errors.New("history: NewRecorder needs a writer: pass the history.jsonl file (or io.Discard)")
	}
	if clock == nil {
		return nil, errors.New("history: NewRecorder needs a clock: pass history.SinceClock(runStart)")
	}
	r := &Recorder{w: w, clock: clock, open: map[string]Event{}}
	for _, o := range opts {
		o.apply(r)
	}
	return r, nil
}

// SinceClock returns a clock of monotonic time elapsed since start (time.Since reads the monotonic
// clock that time.Now attached to start).
func SinceClock(start time.Time) func() time.Duration {
	return func() time.Duration { return time.Since(start) }
}

// Invoke records the start of a call f by process.
func (r *Recorder) Invoke(process, f string, value any, why string) (Event, error) {
	return r.Record(Event{Type: Invoke, Process: process, F: f, Value: value, Why: why})
}

// OK records that the open call of process succeeded; its F is the invoke's.
func (r *Recorder) OK(process string, value any, why string) (Event, error) {
	return r.complete(OK, process, value, why)
}

// Fail records that the open call of process certainly did not take effect.
func (r *Recorder) Fail(process string, value any, why string) (Event, error) {
	return r.complete(Fail, process, value, why)
}

// Info records an info event with f: it closes the open call of process when that call is an f
// (unknown outcome), otherwise it is a standalone fact.
func (r *Recorder) Info(process, f string, value any, why string) (Event, error) {
	return r.Record(Event{Type: Info, Process: process, F: f, Value: value, Why: why})
}

func (r *Recorder) complete(t Type, process string, value any, why string) (Event, error) {
	r.mu.Lock()
	inv, ok := r.open[process]
	r.mu.Unlock()
	if !ok {
		return Event{}, fmt.Errorf("history: process %q recorded %s with no open call: record an invoke first", process, t)
	}
	return r.Record(Event{Type: t, Process: process, F: inv.F, Value: value, Why: why})
}

// Record appends e, filling in Index and Time (any values in e are ignored). It returns the event
// as written. Errors leave the history unchanged, except a failed write, which is sticky.
func (r *Recorder) Record(e Event) (Event, error) {
	if !e.Type.Valid() {
		return Event{}, fmt.Errorf("history: event type %q is not one of invoke, ok, fail, info", e.Type)
	}
	if e.Process == "" || e.F == "" {
		return Event{}, fmt.Errorf("history: event needs a process and an f, got process %q f %q", e.Process, e.F)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return Event{}, fmt.Errorf("history: recorder stopped after an earlier write error: %w", r.err)
	}
	inv, isOpen := r.open[e.Process]
	closes := false
	switch e.Type {
	case Invoke:
		if isOpen {
			return Event{}, fmt.Errorf("history: process %q invoked %q while its %q call from event %d is still open: record ok, fail or info for it first, or use a separate process for concurrent calls", e.Process, e.F, inv.F, inv.Index)
		}
	case OK, Fail:
		if !isOpen {
			return Event{}, fmt.Errorf("history: process %q recorded %s %q with no open call: record the invoke first", e.Process, e.Type, e.F)
		}
		if inv.F != e.F {
			return Event{}, fmt.Errorf("history: process %q recorded %s %q but its open call (event %d) is %q: complete that call with its own f", e.Process, e.Type, e.F, inv.Index, inv.F)
		}
		closes = true
	case Info:
		closes = isOpen && inv.F == e.F
	}
	if _, raw := e.Value.(json.RawMessage); !raw {
		e.Value, _ = TypedValue(e) // pointers become values, as in loaded events; never fails here
	}
	e.Index = r.next
	e.Time = r.clock()
	line, err := json.Marshal(e)
	if err != nil {
		return Event{}, fmt.Errorf("history: event %s %q of process %q cannot be encoded (%v): its value must marshal to JSON", e.Type, e.F, e.Process, err)
	}
	line = append(line, '\n')
	if _, err := r.w.Write(line); err != nil {
		r.err = err
		return Event{}, fmt.Errorf("history: writing event %d: %w", e.Index, err)
	}
	r.next++
	if e.Type == Invoke {
		r.open[e.Process] = e
	} else if closes {
		delete(r.open, e.Process)
	}
	if r.retain {
		r.events = append(r.events, e)
	}
	for _, fn := range r.taps {
		fn(e)
	}
	return e, nil
}

// Open returns the invokes still waiting for a completion, in index order. At the end of a run they
// are calls whose outcome is unknown, as if completed with info.
func (r *Recorder) Open() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Event, 0, len(r.open))
	for _, e := range r.open {
		out = append(out, e)
	}
	sortByIndex(out)
	return out
}

// Events returns a copy of the recorded events when the Recorder retains them, nil otherwise.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.retain {
		return nil
	}
	return append([]Event(nil), r.events...)
}

// Len returns the number of events recorded.
func (r *Recorder) Len() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}

func sortByIndex(es []Event) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Index < es[j-1].Index; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}
