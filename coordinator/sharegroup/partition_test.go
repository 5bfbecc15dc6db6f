package sharegroup

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/groupquake/groupquake/coordinator/version"
)

// clock is a test's injected time in milliseconds.
type clock struct{ ms int64 }

func (c *clock) now() int64 { return c.ms }

var testKey = StateKey{GroupID: "g", TopicID: [16]byte{1}, Partition: 0}

// leader returns a fresh share-partition of 4.4.0's defaults, except a
// delivery count limit of 3 and a lock of 5000 ms (a share run's
// settings), with logEnd records in the log.
func leader(t *testing.T, logEnd int64, mod func(*PartitionConfig)) (*Partition, *Coordinator, *clock) {
	t.Helper()
	pc, cc := ConfigsFor(version.V4_4_0.Profile())
	pc.DeliveryCountLimit, pc.LockMs = 3, 5000
	if mod != nil {
		mod(&pc)
	}
	c := &clock{ms: 1000}
	coord := NewCoordinator(cc, c.now)
	coord.Initialize(testKey, 0)
	p, err := NewPartition(pc, coord, testKey, 0, 0, logEnd)
	if err != nil {
		t.Fatal(err)
	}
	return p, coord, c
}

func mustState(t *testing.T, p *Partition, o int64, state int8, count int16, member string) {
	t.Helper()
	r, ok := p.State(o)
	if !ok {
		t.Fatalf("offset %d is not in flight (start %d, end %d)", o, p.Start(), p.End())
	}
	if r.State != state || r.DeliveryCount != count || r.Member != member {
		t.Fatalf("offset %d is %s at count %d held by %q, want %s at %d held by %q",
			o, StateName(r.State), r.DeliveryCount, r.Member, StateName(state), count, member)
	}
}

func mustRefuse(t *testing.T, err error, code string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("got %v, want a refusal %s", err, code)
	}
}

func TestAcquireHandsNewRecordsOnce(t *testing.T) {
	p, _, _ := leader(t, 10, nil)
	got := p.Acquire("a", 4)
	if want := []Acquired{{0, 3, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("a acquired %v, want %v", got, want)
	}
	mustState(t, p, 2, StateAcquired, 1, "a")
	// Held records are not handed again: b gets the next ones.
	if got, want := p.Acquire("b", 4), []Acquired{{4, 7, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("b acquired %v, want %v", got, want)
	}
	if _, err := p.AcquireRange("c", 3, 4); err == nil {
		t.Fatal("offsets a and b hold were acquired again")
	}
	if len(p.Writes) != 0 {
		t.Fatalf("acquisition wrote %v: Kafka writes nothing on acquire", p.Writes)
	}
}

func TestAcceptByHolderSettlesAndMovesStart(t *testing.T) {
	p, _, _ := leader(t, 10, nil)
	p.Acquire("a", 3)
	if err := p.Acknowledge("a", []Ack{{0, 2, version.AckAccept}}); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 3 || p.InFlightCount() != 0 || p.DeliveryCompleteCount() != 0 {
		t.Fatalf("start %d, %d in flight, complete count %d; want 3, 0, 0", p.Start(), p.InFlightCount(), p.DeliveryCompleteCount())
	}
	// The write carries the start offset from before its own transitions
	// (writeShareGroupState reads startOffset() before they complete).
	want := Write{StartOffset: 0, DeliveryCompleteCount: 3, Batches: []StateBatch{{0, 2, StateAcknowledged, 1}}}
	if len(p.Writes) != 1 || !reflect.DeepEqual(p.Writes[0], want) {
		t.Fatalf("writes %+v, want [%+v]", p.Writes, want)
	}
}

func TestAcceptByOtherMemberRefused(t *testing.T) {
	p, _, _ := leader(t, 10, nil)
	p.Acquire("a", 3)
	err := p.Acknowledge("b", []Ack{{0, 2, version.AckAccept}})
	mustRefuse(t, err, CodeInvalidRecordState)
	mustState(t, p, 0, StateAcquired, 1, "a")
	if len(p.Writes) != 0 || p.Start() != 0 {
		t.Fatalf("a refused acknowledgement wrote %v, start %d", p.Writes, p.Start())
	}
}

func TestAcceptAfterLockLapsedRefused(t *testing.T) {
	p, _, c := leader(t, 10, nil)
	p.Acquire("a", 2)
	c.ms += 4999
	if err := p.Acknowledge("a", []Ack{{0, 0, version.AckAccept}}); err != nil {
		t.Fatalf("accept 1 ms before the deadline: %v", err)
	}
	c.ms++
	err := p.Acknowledge("a", []Ack{{1, 1, version.AckAccept}})
	mustRefuse(t, err, CodeInvalidRecordState)
	if want := "The offset cannot be acknowledged. The offset is not acquired."; err.(*Error).Message != want {
		t.Fatalf("refused %q, want Kafka's %q", err.(*Error).Message, want)
	}
	mustState(t, p, 1, StateAvailable, 1, "")
	// The lapse was written: offset 1 available at count 1.
	last := p.Writes[len(p.Writes)-1]
	if !reflect.DeepEqual(last.Batches, []StateBatch{{1, 1, StateAvailable, 1}}) {
		t.Fatalf("lapse wrote %+v", last)
	}
}

func TestReleaseRedeliversThenArchivesAtLimit(t *testing.T) {
	p, _, _ := leader(t, 1, nil)
	for n := int16(1); n <= 3; n++ {
		got := p.Acquire("a", 10)
		if want := []Acquired{{0, 0, n}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery %d: acquired %v, want %v", n, got, want)
		}
		if err := p.Acknowledge("a", []Ack{{0, 0, version.AckRelease}}); err != nil {
			t.Fatal(err)
		}
		if n < 3 {
			mustState(t, p, 0, StateAvailable, n, "")
		}
	}
	// Released at the limit: archived, and the start offset passes it.
	if p.Start() != 1 || p.Acquire("a", 10) != nil {
		t.Fatalf("start %d after a release at the limit, want 1 and nothing to acquire", p.Start())
	}
	if w := p.Writes[len(p.Writes)-1]; !reflect.DeepEqual(w.Batches, []StateBatch{{0, 0, StateArchived, 3}}) {
		t.Fatalf("last write %+v, want offset 0 archived at count 3", w)
	}
}

func TestLapseAvailableBelowLimitArchivedAtIt(t *testing.T) {
	p, _, c := leader(t, 2, nil)
	p.Acquire("a", 1) // offset 0, count 1
	for n := 0; n < 3; n++ {
		p.AcquireRange("b", 1, 1)
		if n < 2 {
			p.Acknowledge("b", []Ack{{1, 1, version.AckRelease}})
		}
	}
	c.ms += 5000
	p.Tick()
	mustState(t, p, 0, StateAvailable, 1, "")
	mustState(t, p, 1, StateArchived, 3, "")
}

func TestRejectArchives(t *testing.T) {
	p, _, _ := leader(t, 3, nil)
	p.Acquire("a", 3)
	if err := p.Acknowledge("a", []Ack{{1, 1, version.AckReject}}); err != nil {
		t.Fatal(err)
	}
	mustState(t, p, 1, StateArchived, 1, "")
	mustRefuse(t, p.Acknowledge("a", []Ack{{1, 1, version.AckAccept}}), CodeInvalidRecordState)
}

func TestStartOffsetMovesOnlyPastSettledPrefix(t *testing.T) {
	p, _, _ := leader(t, 4, nil)
	p.Acquire("a", 1)
	p.Acquire("b", 3)
	p.Acknowledge("b", []Ack{{1, 3, version.AckAccept}})
	if p.Start() != 0 || p.DeliveryCompleteCount() != 3 {
		t.Fatalf("start %d, complete %d; want 0 (offset 0 still held), 3", p.Start(), p.DeliveryCompleteCount())
	}
	p.Acknowledge("a", []Ack{{0, 0, version.AckReject}})
	if p.Start() != 4 {
		t.Fatalf("start %d, want 4", p.Start())
	}
}

func TestMaxInFlight(t *testing.T) {
	p, _, _ := leader(t, 20, func(c *PartitionConfig) { c.MaxInFlight = 5 })
	if got := p.Acquire("a", 10); !reflect.DeepEqual(got, []Acquired{{0, 4, 1}}) {
		t.Fatalf("acquired %v, want 0-4 (5 in flight at most)", got)
	}
	if got := p.Acquire("b", 10); got != nil {
		t.Fatalf("acquired %v past max in-flight", got)
	}
	// A released record inside the in-flight window can be acquired.
	p.Acknowledge("a", []Ack{{2, 2, version.AckRelease}})
	if got := p.Acquire("b", 10); !reflect.DeepEqual(got, []Acquired{{2, 2, 2}}) {
		t.Fatalf("acquired %v, want offset 2 again", got)
	}
	p.Acknowledge("a", []Ack{{0, 1, version.AckAccept}})
	if got := p.Acquire("b", 10); !reflect.DeepEqual(got, []Acquired{{5, 6, 1}}) {
		t.Fatalf("acquired %v, want 5-6 once the start offset moved", got)
	}
}

func TestRenew(t *testing.T) {
	p, _, c := leader(t, 2, nil)
	p.Acquire("a", 2)
	c.ms += 4000
	if err := p.Acknowledge("a", []Ack{{0, 1, version.AckRenew}}); err != nil {
		t.Fatal(err)
	}
	c.ms += 4000 // 8 s after the acquisition, 4 s after the renewal
	if err := p.Acknowledge("a", []Ack{{0, 1, version.AckAccept}}); err != nil {
		t.Fatalf("accept within the renewed lock: %v", err)
	}
	if len(p.Writes) != 1 {
		t.Fatalf("writes %v: a renewal writes nothing", p.Writes)
	}
	off, _, _ := leader(t, 2, func(c *PartitionConfig) { c.Renew = false })
	off.Acquire("a", 2)
	mustRefuse(t, off.Acknowledge("a", []Ack{{0, 1, version.AckRenew}}), CodeInvalidRecordState)
}

func TestAckBelowStartAnsweredWithoutError(t *testing.T) {
	p, _, c := leader(t, 1, nil)
	p.Acquire("a", 1)
	c.ms += 5000
	p.Acquire("b", 1)
	p.Acknowledge("b", []Ack{{0, 0, version.AckAccept}})
	// a's lock lapsed and b settled the record; a's late reject is
	// skipped and answered as applied (the finding of docs/share-groups.md).
	if err := p.Acknowledge("a", []Ack{{0, 0, version.AckReject}}); err != nil {
		t.Fatalf("a late acknowledgement below the start offset: %v", err)
	}
	if len(p.Writes) != 2 {
		t.Fatalf("writes %v", p.Writes)
	}
}

func TestAckRequestErrors(t *testing.T) {
	p, _, _ := leader(t, 5, nil)
	p.Acquire("a", 3)
	mustRefuse(t, p.Acknowledge("a", []Ack{{1, 4, version.AckAccept}}), CodeInvalidRequest)
	mustRefuse(t, p.Acknowledge("a", []Ack{{4, 4, version.AckAccept}}), CodeInvalidRequest)
	mustRefuse(t, p.Acknowledge("a", []Ack{{0, 0, 7}}), CodeInvalidRequest)
	if err := p.Acknowledge("a", []Ack{{0, 2, version.AckAccept}}); err != nil {
		t.Fatal(err)
	}
	// Nothing in flight and the offsets past the start offset.
	mustRefuse(t, p.Acknowledge("a", []Ack{{3, 3, version.AckAccept}}), CodeInvalidRecordState)
}

func TestAckAllOrNothing(t *testing.T) {
	p, _, _ := leader(t, 4, nil)
	p.Acquire("a", 2)
	p.Acquire("b", 2)
	err := p.Acknowledge("a", []Ack{{0, 1, version.AckAccept}, {2, 2, version.AckAccept}})
	mustRefuse(t, err, CodeInvalidRecordState)
	mustState(t, p, 0, StateAcquired, 1, "a")
	if p.Start() != 0 || p.DeliveryCompleteCount() != 0 || len(p.Writes) != 0 {
		t.Fatalf("the refused request changed the state: start %d, complete %d, writes %v", p.Start(), p.DeliveryCompleteCount(), p.Writes)
	}
}

func TestLastDeliveryAlone(t *testing.T) {
	p, _, _ := leader(t, 3, nil)
	p.Acquire("a", 3)
	p.Acknowledge("a", []Ack{{0, 0, version.AckAccept}, {1, 2, version.AckRelease}})
	p.Acquire("a", 10) // 1-2 at count 2
	p.Acknowledge("a", []Ack{{1, 2, version.AckRelease}})
	// Both are on their last delivery (count 2 of 3): one at a time.
	if got := p.Acquire("a", 10); !reflect.DeepEqual(got, []Acquired{{1, 1, 3}}) {
		t.Fatalf("acquired %v, want offset 1 alone at count 3", got)
	}
	// A record on its last delivery after one that is not: it waits for
	// the next fetch.
	mixed, _, _ := leader(t, 2, nil)
	mixed.Acquire("a", 2)
	mixed.Acknowledge("a", []Ack{{0, 1, version.AckRelease}})
	mixed.AcquireRange("a", 1, 1) // offset 1 at count 2
	mixed.Acknowledge("a", []Ack{{1, 1, version.AckRelease}})
	if got := mixed.Acquire("b", 10); !reflect.DeepEqual(got, []Acquired{{0, 0, 2}}) {
		t.Fatalf("acquired %v, want offset 0 at count 2 without offset 1 (on its last delivery)", got)
	}
	if got := mixed.Acquire("b", 10); !reflect.DeepEqual(got, []Acquired{{1, 1, 3}}) {
		t.Fatalf("acquired %v, want offset 1 alone at count 3", got)
	}
	limit2, _, _ := leader(t, 3, func(c *PartitionConfig) { c.DeliveryCountLimit = 2 })
	limit2.Acquire("a", 3)
	limit2.Acknowledge("a", []Ack{{0, 2, version.AckRelease}})
	if got := limit2.Acquire("a", 10); !reflect.DeepEqual(got, []Acquired{{0, 2, 2}}) {
		t.Fatalf("limit 2: acquired %v, want 0-2 together (isolation needs a limit above 2)", got)
	}
}

func TestReleaseAllOnlyTheMembers(t *testing.T) {
	p, _, _ := leader(t, 4, nil)
	p.Acquire("a", 2)
	p.Acquire("b", 2)
	if n := p.ReleaseAll("a"); n != 2 {
		t.Fatalf("released %d, want 2", n)
	}
	mustState(t, p, 0, StateAvailable, 1, "")
	mustState(t, p, 2, StateAcquired, 1, "b")
}

func TestCoordinatorSnapshotsAndStartOffset(t *testing.T) {
	c := &clock{}
	for _, v := range []version.Version{version.V4_2_1, version.V4_4_0} {
		_, cc := ConfigsFor(v.Profile())
		cc.SnapshotEvery = 2
		coord := NewCoordinator(cc, c.now)
		coord.Initialize(testKey, 0)
		for _, start := range []int64{5, 7, 6} {
			if err := coord.Write(testKey, Write{StartOffset: start, DeliveryCompleteCount: -1}); err != nil {
				t.Fatal(err)
			}
		}
		var types []int16
		for _, r := range coord.Records {
			types = append(types, r.Type)
		}
		if want := []int16{TypeShareSnapshot, TypeShareUpdate, TypeShareUpdate, TypeShareSnapshot}; !reflect.DeepEqual(types, want) {
			t.Fatalf("%s: record types %v, want %v", v, types, want)
		}
		want := int64(6)
		if v.Profile().ShareStartOffsetNoRegress {
			want = 7
		}
		if got := coord.States[testKey].StartOffset; got != want {
			t.Fatalf("%s: start offset %d after writes 5, 7, 6; want %d", v, got, want)
		}
	}
	coord := NewCoordinator(CoordinatorConfig{SnapshotEvery: 500}, c.now)
	if err := coord.Write(testKey, Write{}); err == nil {
		t.Fatal("a write to a share-partition never initialized was taken")
	}
}

// TestWrittenRecordsReplayToModel drives a leader at random and, after
// every step, encodes the records it wrote, decodes them and replays them
// with States.Replay, and requires the replayed state to be what the
// leader holds: settled offsets from the persisted start offset up to the
// leader's, and from there every offset as the leader holds it (an
// acquired one as the available one last written, or unwritten at its
// first delivery). A leader loaded from the replayed state (a failover)
// holds the same start offset and offsets, without their locks.
func TestWrittenRecordsReplayToModel(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		p, coord, c := leader(t, 0, func(pc *PartitionConfig) { pc.MaxInFlight = 12 })
		coord.cfg.SnapshotEvery = 3
		members := []string{"a", "b", "c"}
		for step := 0; step < 200; step++ {
			m := members[rng.IntN(len(members))]
			switch rng.IntN(6) {
			case 0:
				p.Append(rng.IntN(5))
			case 1, 2:
				p.Acquire(m, 1+rng.IntN(4))
			case 3:
				first := p.Start() + int64(rng.IntN(4)) - 1
				last := first + int64(rng.IntN(3))
				p.Acknowledge(m, []Ack{{first, last, int8(1 + rng.IntN(4))}})
			case 4:
				c.ms += int64(rng.IntN(3000))
				p.Tick()
			case 5:
				if rng.IntN(4) == 0 {
					p.ReleaseAll(m)
				}
			}
			replayed := States{}
			for _, r := range coord.Records {
				k, v, err := EncodeStateRecord(r)
				if err != nil {
					t.Fatal(err)
				}
				d, err := DecodeStateRecord(k, v)
				if err != nil {
					t.Fatal(err)
				}
				replayed.Replay(d)
			}
			if !reflect.DeepEqual(replayed, coord.States) {
				t.Fatalf("seed %d step %d: decoded records replay to %+v, the coordinator holds %+v", seed, step, replayed[testKey], coord.States[testKey])
			}
			if err := persistedMatches(p, replayed[testKey]); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
		pc := p.cfg
		q, err := NewPartition(pc, coord, testKey, 1, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if q.Start() != p.Start() {
			t.Fatalf("seed %d: the new leader starts at %d, the old one was at %d", seed, q.Start(), p.Start())
		}
		for o := p.Start(); o <= max(p.End(), q.End()); o++ {
			r, _ := p.State(o)
			if r.State == StateAcquired {
				r.State, r.DeliveryCount = StateAvailable, r.DeliveryCount-1
			}
			r.Member, r.Deadline, r.lock = "", 0, 0
			s, _ := q.State(o)
			if r != s && !(o > q.End() && r.State == StateAvailable && r.DeliveryCount == 0) {
				t.Fatalf("seed %d: offset %d is %+v on the new leader, %+v on the old", seed, o, s, r)
			}
		}
	}
}

// persistedMatches compares the replayed state s with leader p.
func persistedMatches(p *Partition, s *PartitionState) error {
	if s.StartOffset > p.Start() {
		return fmt.Errorf("persisted start offset %d is past the leader's %d", s.StartOffset, p.Start())
	}
	for o := max(s.StartOffset, 0); o < p.Start(); o++ {
		b, _, ok := s.StateOf(o)
		if !ok || !terminal(b.DeliveryState) {
			return fmt.Errorf("offset %d is settled on the leader (start %d), persisted as %+v (found %v)", o, p.Start(), b, ok)
		}
	}
	for o := p.Start(); o <= p.End(); o++ {
		r, _ := p.State(o)
		b, _, ok := s.StateOf(o)
		st, c := r.State, r.DeliveryCount
		if st == StateAcquired {
			st, c = StateAvailable, c-1
		}
		switch {
		case !ok && st == StateAvailable && c == 0:
		case !ok || b.DeliveryState != st || b.DeliveryCount != c:
			return fmt.Errorf("offset %d: the leader holds %s at %d (%s), persisted %+v (found %v)", o, StateName(r.State), r.DeliveryCount, StateName(st), b, ok)
		}
	}
	if n := len(s.Batches); n > 0 && s.Batches[n-1].LastOffset > p.End() && s.Batches[n-1].LastOffset >= p.Start() {
		return fmt.Errorf("persisted batch %+v past the leader's last offset in flight %d", s.Batches[n-1], p.End())
	}
	return nil
}
