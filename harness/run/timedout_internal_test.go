package run

import (
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/history"
)

// TestTimedOutSaysPhaseBoundWaitAndWhat: the note of a wait that timed out
// names its phase, its bound and how it was worked out, how long it
// waited, how far past the bound the stalls took it, and what it waited for.
func TestTimedOutSaysPhaseBoundWaitAndWhat(t *testing.T) {
	got := timedOut("quiesce", 72*time.Second, "2×(session 6s + rebalance 15s) + 30s", 72*time.Second+250*time.Millisecond, "3 of 40 acknowledged records to be consumed (t-0 offsets 5–7)")
	want := "quiesce: timed out after 1m12.25s (bound 1m12s: 2×(session 6s + rebalance 15s) + 30s, 250ms past the bound: the harness's stalls moved its deadline): still waiting for 3 of 40 acknowledged records to be consumed (t-0 offsets 5–7)"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	// On time: no excess to speak of; a bound that is its own reason is said once.
	got = timedOut("warm-up", 90*time.Second, "", 90*time.Second, "every partition owned exactly once (t-1 has no owner)")
	if want := "warm-up: timed out after 1m30s (bound 1m30s): still waiting for every partition owned exactly once (t-1 has no owner)"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// TestBadOwnershipNamesEachPartition: the partitions without exactly one
// owner, in the plan's order, with their owners when more than one.
func TestBadOwnershipNamesEachPartition(t *testing.T) {
	tp := func(p int32) history.TP { return history.TP{Topic: "t", Partition: p} }
	want := []history.TP{tp(0), tp(1), tp(2)}
	got := badOwnership(want, map[history.TP][]string{tp(0): {"m3", "m1"}, tp(1): {"m2"}})
	if w := "t-0 has 2 owners (m1, m3), t-2 has no owner"; got != w {
		t.Fatalf("got %q, want %q", got, w)
	}
	if got := badOwnership(want, map[history.TP][]string{tp(0): {"a"}, tp(1): {"b"}, tp(2): {"a"}}); got != "" {
		t.Fatalf("every partition owned once, got %q", got)
	}
}

// TestMissingRecordsAsRanges: the records not consumed, by partition, as
// ranges of offsets, capped at maxNamed ranges; skip leaves some out.
func TestMissingRecordsAsRanges(t *testing.T) {
	l := newLedger()
	t0, t1 := history.TP{Topic: "t", Partition: 0}, history.TP{Topic: "t", Partition: 1}
	for o := int64(0); o < 10; o++ {
		l.ack(t0, o)
	}
	l.ack(t1, 3)
	for _, o := range []int64{0, 1, 2, 3, 4, 8} {
		l.consume(t0, o)
	}
	if got, want := l.missingRecords(nil), "t-0 offsets 5–7, t-0 offset 9, t-1 offset 3"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got, want := l.missingRecords(func(tp history.TP, o int64) bool { return tp == t1 }), "t-0 offsets 5–7, t-0 offset 9"; got != want {
		t.Fatalf("skipping t-1: got %q, want %q", got, want)
	}
	m := newLedger()
	for o := int64(0); o < 2*(maxNamed+3); o += 2 {
		m.ack(t0, o)
	}
	if got := m.missingRecords(nil); !strings.HasSuffix(got, "(and 3 more ranges)") || strings.Count(got, "offset ") != maxNamed {
		t.Fatalf("capped at %d ranges: got %q", maxNamed, got)
	}
}

// TestQuiesceWhy: the quiesce's bound is said as worked out from the
// timers when it is what they give, else as the plan's own.
func TestQuiesceWhy(t *testing.T) {
	p := Plan{Timers: Timers{SessionTimeout: 6 * time.Second, RebalanceTimeout: 15 * time.Second}, QuiesceMax: 72 * time.Second}
	if got, want := p.quiesceWhy(), "2×(session 6s + rebalance 15s) + 30s"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	p.QuiesceMax = time.Minute
	if got, want := p.quiesceWhy(), "quiesce_max in the plan"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestGroupWaitWhy: a wait for the group says its timers and, with node
// faults planned, what they add.
func TestGroupWaitWhy(t *testing.T) {
	p := Plan{Timers: Timers{SessionTimeout: 6 * time.Second, RebalanceTimeout: 15 * time.Second}}
	if got, want := p.groupWaitWhy(), "session 6s + rebalance 15s"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	p.Faults = []faults.Fault{{Kind: faults.NodeStop, Node: 1, For: 5 * time.Second}, {Kind: faults.NodeKill, Node: 2, For: 3 * time.Second}}
	if got, want := p.groupWaitWhy(), "session 6s + rebalance 15s + 48s for the plan's 2 node fault(s) (each one's length + 20s for its node to serve again)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
