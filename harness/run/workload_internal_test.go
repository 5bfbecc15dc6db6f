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
	rec := retainingRecorder(t)
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

// ownedMember owns what the test says and hands out the records it is
// given; its commits are kept.
type ownedMember struct {
	owned   clients.Partitions
	recs    chan []clients.Record
	commits chan map[string]map[int32]int64
}

func (m *ownedMember) Name() string                { return "m1" }
func (m *ownedMember) Protocol() clients.Protocol  { return clients.Classic }
func (m *ownedMember) Start(context.Context) error { return nil }
func (m *ownedMember) Owned() clients.Partitions   { return m.owned }
func (m *ownedMember) Close(context.Context) error { return nil }
func (m *ownedMember) Commit(_ context.Context, offs map[string]map[int32]int64) (map[string]map[int32]string, error) {
	m.commits <- offs
	return nil, nil
}
func (m *ownedMember) Poll(ctx context.Context) ([]clients.Record, error) {
	select {
	case r := <-m.recs:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestDriverForgetsAPositionOfAnEndedOwnership scripts what an embedded
// bite run showed: a classic member consumed t[0] up to offset 18, its
// commit of 19 failed (its session had expired while its links were cut),
// it lost t[0], the group's other member committed 141, and the member was
// given t[0] back in a new generation. The driver must not then commit 19
// for it: that is a position of the ownership that ended, and committing
// it moves the group's offset back (CommittedOffsetMonotonic).
func TestDriverForgetsAPositionOfAnEndedOwnership(t *testing.T) {
	rec := retainingRecorder(t)
	tp := clients.Partitions{"t": {0}}
	m := &ownedMember{owned: tp, recs: make(chan []clients.Record), commits: make(chan map[string]map[int32]int64, 4)}
	h := NewHookRecorder(rec, "m1", "classic")
	d := newDriver(MemberPlan{Name: "m1", Protocol: history.ProtocolClassic, CommitEvery: 0}, m, h, rec, newLedger(), time.Now)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()

	m.recs <- []clients.Record{{Topic: "t", Partition: 0, Offset: 18, Generation: 2, MemberEpoch: -1}}
	if got := <-m.commits; got["t"][0] != 19 {
		t.Fatalf("first commit %v, want t[0] at 19", got)
	}
	// The commit reported success above; make the position pending again
	// as a failed commit leaves it, then the member loses the partition
	// and is given it back.
	d.mu.Lock()
	d.pending["t"] = map[int32]int64{0: 19}
	d.mu.Unlock()
	h.OnEvent(clients.Event{Kind: clients.Lost, Protocol: clients.Classic, Member: "m1", Generation: -1, MemberEpoch: -1, GroupEpoch: -1, Partitions: tp, Why: "session expired"})
	h.OnEvent(clients.Event{Kind: clients.Assigned, Protocol: clients.Classic, Member: "m1", Generation: 4, MemberEpoch: -1, GroupEpoch: -1, Partitions: tp, Why: "SyncGroup of generation 4"})
	m.recs <- nil // a poll that returns nothing: the driver's commit turn
	m.recs <- nil
	select {
	case got := <-m.commits:
		t.Errorf("the driver committed %v after the member was given t[0] back and consumed nothing of it", got)
	default:
	}
	m.recs <- []clients.Record{{Topic: "t", Partition: 0, Offset: 141, Generation: 4, MemberEpoch: -1}}
	if got := <-m.commits; got["t"][0] != 142 {
		t.Errorf("commit after consuming offset 141 in the new generation: %v, want t[0] at 142", got)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// retainingRecorder is a recorder that keeps its events in memory, on the
// test's clock.
func retainingRecorder(t *testing.T) *history.Recorder {
	t.Helper()
	var buf bytes.Buffer
	start := time.Now()
	rec, err := history.NewRecorder(&buf, func() time.Duration { return time.Since(start) }, history.Retain())
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
