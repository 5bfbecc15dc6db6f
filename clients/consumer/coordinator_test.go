package consumer

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// TestCoordinatorLookupThroughFlap scripts a coordinator that moves while
// a link flaps, as the classic member's test of that name does: the member
// owns partitions; the node answers every group request NOT_COORDINATOR
// (it is no longer the coordinator) until a FindCoordinator goes through,
// and the first FindCoordinators find their connections closed (the cuts).
// Java's CoordinatorRequestManager sends one FindCoordinator per attempt
// and retries it after retry.backoff.ms, so each failure is the member's to
// see and the next heartbeat that reaches the coordinator comes within a
// few backoffs (here 10 to 50 ms). Lookups that kgo retries inside a
// request, after kgo's own backoff (250 ms doubling to 5 s), are failures
// the member does not see and time in which it sends no heartbeat.
func TestCoordinatorLookupThroughFlap(t *testing.T) {
	t.Parallel()
	const cuts = 6
	s := newScriptBroker(t, 2)
	s.set(4, 0, 1)
	m := startLoopMember(t, s, RetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	dump := m.dumpWith(s)
	eventually(t, "the member owns t[0 1]", m.owns(0, 1), dump)
	var (
		mu     sync.Mutex
		found  bool // a FindCoordinator went through
		failed int
	)
	s.c.ControlKey(kmsg.FindCoordinator.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		if found {
			return nil, nil, false
		}
		s.c.KeepControl()
		s.mu.Lock()
		moved := s.moved
		s.mu.Unlock()
		if !moved {
			return nil, nil, false
		}
		if failed == cuts {
			found = true
			s.mu.Lock()
			s.moved = false
			s.mu.Unlock()
			return nil, nil, false
		}
		failed++
		return nil, errors.New("link cut"), true
	})
	before := len(s.arrivals())
	from := time.Now()
	s.mu.Lock()
	s.moved = true
	s.mu.Unlock()
	var gap time.Duration
	eventually(t, "a heartbeat reaches the coordinator after the cuts", func() bool {
		moved, answered, ok := movedThenAnswered(s.arrivals()[before:])
		gap = answered.at.Sub(moved.at)
		return ok
	}, dump)
	// What the member saw: each failed lookup, as an Error event of its
	// own lookup or as a heartbeat that got no answer.
	n := 0
	for _, e := range m.log.All() {
		if e.At.Before(from) {
			continue
		}
		if e.Kind == clients.Error && strings.HasPrefix(e.Why, "FindCoordinator failed") ||
			e.Kind == clients.Heartbeat && e.Err != "" && e.ErrCode == 0 {
			n++
		}
	}
	t.Logf("%d cut FindCoordinators; the member saw %d failed lookups; %v from the first NOT_COORDINATOR to the next answered heartbeat", cuts, n, gap.Round(time.Millisecond))
	if n < cuts {
		t.Errorf("the member saw %d failed coordinator lookups, want %d (one per attempt, as Java's CoordinatorRequestManager)\n%s", n, cuts, dump())
	}
	if m.Owned().Count() != 2 {
		t.Errorf("the member lost partitions through the cuts\n%s", dump())
	}
}

// TestCoordinatorLookupHeldElsewhere scripts a FindCoordinator that gets
// no answer (a broker that is paused, or a link that drops packets) while
// the coordinator is reachable: the coordinator has moved (the node answers
// NOT_COORDINATOR until the member looks it up), the first lookup that
// reaches a broker other than the coordinator is held for 8 s, and lookups
// that reach the coordinator are cut until then, so that the member must
// find it through the third broker. Java's CoordinatorRequestManager gives
// up on the held lookup after its request timeout and sends the next one
// to another node; a lookup that kgo runs for every request of the client
// at once (loadCoordinator), on the client's context and not the
// request's, keeps every heartbeat waiting for it.
func TestCoordinatorLookupHeldElsewhere(t *testing.T) {
	t.Parallel()
	const hold = 8 * time.Second
	s := newScriptBrokers(t, 2, 3)
	coordinator := s.c.CoordinatorFor("g")
	s.set(4, 0, 1)
	m := startLoopMember(t, s, RetryBackoff(10*time.Millisecond, 50*time.Millisecond), RequestTimeout(time.Second))
	dump := m.dumpWith(s)
	eventually(t, "the member owns t[0 1]", m.owns(0, 1), dump)
	var (
		mu               sync.Mutex
		heldAt, released time.Time
	)
	s.c.ControlKey(kmsg.FindCoordinator.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		s.c.KeepControl()
		s.mu.Lock()
		moved := s.moved
		s.mu.Unlock()
		mu.Lock()
		first, holding := heldAt.IsZero(), released.IsZero()
		mu.Unlock()
		switch {
		case !moved:
			return nil, nil, false
		case s.c.CurrentNode() == coordinator && holding:
			return nil, errors.New("link cut"), true
		case first:
			mu.Lock()
			heldAt = time.Now()
			mu.Unlock()
			s.c.SleepControl(func() { time.Sleep(hold) })
			mu.Lock()
			released = time.Now()
			mu.Unlock()
		}
		s.mu.Lock()
		s.moved = false // found: the member asks the coordinator now
		s.mu.Unlock()
		return nil, nil, false
	})
	before := len(s.arrivals())
	s.mu.Lock()
	s.moved = true
	s.mu.Unlock()
	var answered time.Time
	eventually(t, "a heartbeat is answered after the coordinator moved", func() bool {
		_, a, ok := movedThenAnswered(s.arrivals()[before:])
		answered = a.at
		return ok
	}, dump)
	mu.Lock()
	defer mu.Unlock()
	if heldAt.IsZero() {
		t.Fatalf("no lookup reached a broker other than the coordinator (node %d)\n%s", coordinator, dump())
	}
	t.Logf("lookup held at %v; next answered heartbeat %v after it (released after %v)", heldAt.Format("15:04:05.000"), answered.Sub(heldAt).Round(time.Millisecond), hold)
	if !released.IsZero() && !answered.Before(released) {
		t.Errorf("no heartbeat reached the coordinator while one lookup was held (%v after it, held %v): the member waited for it\n%s", answered.Sub(heldAt).Round(time.Millisecond), hold, dump())
	}
}

// movedThenAnswered finds, among the requests the fake broker received, the
// first heartbeat answered NOT_COORDINATOR and the first heartbeat answered
// without error after it; ok is false until both have arrived.
func movedThenAnswered(as []groupReq) (moved, answered groupReq, ok bool) {
	i := slices.IndexFunc(as, func(a groupReq) bool { return a.hb != nil && a.hbResp.ErrorCode == kerr.NotCoordinator.Code })
	if i < 0 {
		return groupReq{}, groupReq{}, false
	}
	j := slices.IndexFunc(as[i:], func(a groupReq) bool { return a.hb != nil && a.hbResp.ErrorCode == 0 })
	if j < 0 {
		return groupReq{}, groupReq{}, false
	}
	return as[i], as[i+j], true
}
