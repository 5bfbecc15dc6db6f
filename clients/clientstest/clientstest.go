// Package clientstest holds what the tests of groupquake's members share:
// a Hooks that keeps every event a member reports.
package clientstest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/groupquake/groupquake/clients"
)

// Recorder is a clients.Hooks that keeps every event, in the order they
// were reported; safe for concurrent use. The zero value is ready.
type Recorder struct {
	mu     sync.Mutex
	events []clients.Event
}

// OnEvent implements clients.Hooks.
func (r *Recorder) OnEvent(e clients.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// All returns a copy of the events so far.
func (r *Recorder) All() []clients.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Of returns the events of kind k so far.
func (r *Recorder) Of(k clients.Kind) []clients.Event {
	var out []clients.Event
	for _, e := range r.All() {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// First returns the first event of kind k so far, if there is one.
func (r *Recorder) First(k clients.Kind) (clients.Event, bool) {
	if es := r.Of(k); len(es) > 0 {
		return es[0], true
	}
	return clients.Event{}, false
}

// CommitResult is what a member's Commit returned: the partitions it
// refused by Kafka error name, and an error.
type CommitResult struct {
	Failed map[string]map[int32]string
	Err    error
}

// CommitAsync runs m.Commit(ctx, offsets) in a goroutine and hands its
// result over on the channel it returns (buffered: nobody has to read it).
func CommitAsync(ctx context.Context, m clients.Member, offsets map[string]map[int32]int64) <-chan CommitResult {
	done := make(chan CommitResult, 1)
	go func() {
		failed, err := m.Commit(ctx, offsets)
		done <- CommitResult{failed, err}
	}()
	return done
}

// Arg is the value of a script command's argument key, and whether the
// command has it.
func Arg(t *testing.T, d *datadriven.TestData, key string) (string, bool) {
	t.Helper()
	if !d.HasArg(key) {
		return "", false
	}
	var v string
	d.ScanArgs(t, key, &v)
	return v, true
}

// Async runs f in a goroutine and hands its error over on the channel it
// returns (buffered: nobody has to read it).
func Async(f func() error) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	return errc
}

// Start starts m with a context that ends after timeout and fails the
// test when Start does; it returns the context and its cancel, for the
// caller to defer.
func Start(t testing.TB, m interface{ Start(context.Context) error }, timeout time.Duration) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	if err := m.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	return ctx, cancel
}
