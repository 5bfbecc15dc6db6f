package run

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/harness/history"
)

// stuckMember is a member in a fatal state: every Poll returns the same
// error at once.
type stuckMember struct{ polls atomic.Int64 }

func (m *stuckMember) Name() string                { return "m1" }
func (m *stuckMember) Protocol() clients.Protocol  { return clients.Consumer }
func (m *stuckMember) Start(context.Context) error { return nil }
func (m *stuckMember) Owned() clients.Partitions   { return nil }
func (m *stuckMember) Close(context.Context) error { return nil }
func (m *stuckMember) Commit(context.Context, map[string]map[int32]int64) (map[string]map[int32]string, error) {
	return nil, nil
}
func (m *stuckMember) Poll(context.Context) ([]clients.Record, error) {
	m.polls.Add(1)
	return nil, errors.New("GROUP_MAX_SIZE_REACHED: fatal")
}

// TestDriverDoesNotSpinOnAFatalMember: a member that fails every poll at
// once is polled at a bounded rate and its error recorded once, not once
// per poll (a run once wrote 3.4 million such events in a minute).
func TestDriverDoesNotSpinOnAFatalMember(t *testing.T) {
	var buf bytes.Buffer
	start := time.Now()
	rec, err := history.NewRecorder(&buf, func() time.Duration { return time.Since(start) }, history.Retain())
	if err != nil {
		t.Fatal(err)
	}
	m := &stuckMember{}
	d := newDriver(MemberPlan{Name: "m1", Protocol: history.ProtocolConsumer, CommitEvery: time.Hour}, m, NewHookRecorder(rec, "m1", "consumer"), rec, newLedger(), time.Now)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := d.run(ctx); err != nil {
		t.Fatal(err)
	}
	errs := 0
	for _, e := range rec.Events() {
		if e.F == "error" {
			errs++
		}
	}
	if errs != 1 {
		t.Errorf("%d error events for one repeated error, want 1", errs)
	}
	// One second at one poll per 250ms back-off: a handful, not thousands.
	if n := m.polls.Load(); n > 20 {
		t.Errorf("a member failing every poll was polled %d times in a second", n)
	}
}
