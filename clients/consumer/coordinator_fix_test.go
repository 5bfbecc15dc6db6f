package consumer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// slowLookups delays every FindCoordinator's answer by d.
func slowLookups(s *scriptBroker, d time.Duration) {
	s.c.ControlKey(kmsg.FindCoordinator.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		s.c.KeepControl()
		s.c.SleepControl(func() { time.Sleep(d) })
		return nil, nil, false
	})
}

// A slow link: a FindCoordinator and a heartbeat each take 1.5 s, within
// the 2.5 s request timeout (1 s of slack for a loaded machine), but a
// lookup and the heartbeat after it take 3 s together. Java gives each request its own timeout, so the
// heartbeat after a lookup is answered; with one timeout for both, that
// heartbeat times out, the coordinator is forgotten, the next attempt
// looks it up again, and no heartbeat gets through while the latency
// lasts: the member never joins.
func TestLoopLookupAndHeartbeatEachGetTheRequestTimeout(t *testing.T) {
	t.Parallel()
	const d = 1500 * time.Millisecond
	s := newScriptBroker(t, 2)
	s.set(1, 0, 1)
	s.mu.Lock()
	s.hbDelay = d
	s.mu.Unlock()
	slowLookups(s, d)
	m := startLoopMember(t, s, RequestTimeout(2500*time.Millisecond), RetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	dump := m.dumpWith(s)
	eventually(t, "the member joins through the slow link", func() bool {
		return slices.ContainsFunc(m.log.All(), func(e clients.Event) bool { return e.Kind == clients.Joined })
	}, dump)
	eventually(t, "the member owns t[0 1]", m.owns(0, 1), dump)
}

// cutLookups makes every FindCoordinator fail (its connection is cut)
// while *cut is set under s.mu.
func cutLookups(s *scriptBroker, cut *bool) {
	s.c.ControlKey(kmsg.FindCoordinator.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		s.c.KeepControl()
		s.mu.Lock()
		c := *cut
		s.mu.Unlock()
		if c {
			return nil, errors.New("link cut"), true
		}
		return nil, nil, false
	})
}

// A leave while the coordinator is unknown: the member owns t[0 1], the
// coordinator moves (NOT_COORDINATOR) and no FindCoordinator gets through;
// nobody polls, so the poll timer makes the member leave. Java's
// onHeartbeatRequestSkipped completes a leave whose heartbeat cannot be
// sent: the member is out (here STALE, as after a sent poll-timer leave)
// and the next Poll rejoins it. Held in LEAVING until a lookup succeeded,
// the member ignored that Poll (it was not STALE) and, once the lookup
// came back, sent the stale leave late and stayed out for good.
func TestLoopLeaveWithoutCoordinatorCompletes(t *testing.T) {
	t.Parallel()
	s, m, dump := startAssigned(t, false, MaxPollInterval(1500*time.Millisecond), RetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pollUntil(t, ctx, m.Member, "the member never owned t[0 1]", m.owns(0, 1), dump)
	cut := true
	cutLookups(s, &cut)
	s.mu.Lock()
	s.moved = true
	s.mu.Unlock()
	// No Poll from here on: the poll timer expires while no lookup
	// gets through.
	eventually(t, "the poll-timer leave completes while the coordinator is unknown", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.m.state == stateStale
	}, dump)
	i := slices.IndexFunc(m.log.All(), func(e clients.Event) bool { return e.Kind == clients.Left })
	if i < 0 {
		t.Fatalf("no Left event for the leave that was not sent\n%s", dump())
	}
	if e := m.log.All()[i]; e.Call != 0 || e.Err == "" || e.MemberEpoch != leaveEpoch {
		t.Errorf("the unsent leave is reported as %+v, want Call 0 (no request), Err set and epoch %d", e, leaveEpoch)
	}
	pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	m.Poll(pctx)
	pcancel()
	m.mu.Lock()
	st := m.m.state
	m.mu.Unlock()
	if st != stateJoining {
		t.Errorf("state %s after the Poll that follows the poll-timer leave, want %s\n%s", st, stateJoining, dump())
	}
	n := len(s.arrivals())
	s.mu.Lock()
	cut, s.moved = false, false
	s.mu.Unlock()
	eventually(t, "the member rejoins at epoch 0 once the coordinator is found", func() bool {
		return slices.ContainsFunc(s.arrivals()[n:], func(a groupReq) bool { return a.hb != nil && a.hb.MemberEpoch == 0 })
	}, dump)
	for _, a := range s.arrivals()[n:] {
		if a.hb != nil && a.hb.MemberEpoch < 0 {
			t.Errorf("the leave given up while the coordinator was unknown was sent late: %s\n%s", a, dump())
		}
	}
}

// GROUP_AUTHORIZATION_FAILED from FindCoordinator is fatal, as in the
// classic member and in Java (GroupAuthorizationException from poll): the
// member sends no heartbeat, stops looking the coordinator up, and Poll
// says it stopped for good, naming the error. Retried as a passing
// failure, the member looked the coordinator up forever and Poll never
// said why nothing came.
func TestLoopGroupAuthorizationFailedLookupIsFatal(t *testing.T) {
	t.Parallel()
	s := newScriptBroker(t, 2)
	s.c.ControlKey(kmsg.FindCoordinator.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		s.c.KeepControl()
		req := r.(*kmsg.FindCoordinatorRequest)
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.SetVersion(req.GetVersion())
		resp.ErrorCode, resp.NodeID = kerr.GroupAuthorizationFailed.Code, -1
		for _, k := range req.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.ErrorCode = k, -1, kerr.GroupAuthorizationFailed.Code
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp, nil, true
	})
	m := startMember(t, s, false, RetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	dump := m.dumpWith(s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var err error
	for err == nil && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err = m.Poll(pctx)
		pcancel()
	}
	if !errors.Is(err, clients.ErrStopped) || !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("Poll returned %v, want the member stopped for good on GROUP_AUTHORIZATION_FAILED\n%s", err, dump())
	}
	s.mu.Lock()
	n := len(s.finds)
	s.mu.Unlock()
	time.Sleep(300 * time.Millisecond) // six backoffs
	s.mu.Lock()
	after := len(s.finds)
	s.mu.Unlock()
	if after != n {
		t.Errorf("%d FindCoordinators after the member stopped", after-n)
	}
	if hb := heartbeats(s.arrivals()); len(hb) > 0 {
		t.Errorf("heartbeats sent without a coordinator: %v", hb)
	}
}

// Close's leave goes where the member's own lookup says the coordinator
// is, as its heartbeats do, so that the history's found-coordinator events
// show where it went. Here the coordinator moves from the node kfake names
// (which kgo's own lookup, made for the OffsetFetch of the join, found and
// keeps) to another node, which only the member's lookups name; every other
// node answers NOT_COORDINATOR. Through kgo's client the leave went first
// to the node kgo kept.
func TestLoopCloseLeavesThroughTheMembersCoordinator(t *testing.T) {
	t.Parallel()
	s := newScriptBrokers(t, 2, 3)
	old := s.c.CoordinatorFor("g")
	s.set(1, 0, 1)
	m := startLoopMember(t, s, RetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	dump := m.dumpWith(s)
	eventually(t, "the member owns t[0 1]", m.owns(0, 1), dump)
	moved := (old + 1) % 3
	var host string
	var port int32
	mctx, mcancel := context.WithTimeout(context.Background(), 10*time.Second)
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(mctx, m.cl)
	mcancel()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range meta.Brokers {
		if b.NodeID == moved {
			host, port = b.Host, b.Port
		}
	}
	if host == "" {
		t.Fatalf("node %d unknown to the member's client", moved)
	}
	s.c.ControlKey(kmsg.FindCoordinator.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		s.c.KeepControl()
		req := r.(*kmsg.FindCoordinatorRequest)
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.SetVersion(req.GetVersion())
		resp.NodeID, resp.Host, resp.Port = moved, host, port
		for _, k := range req.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Host, c.Port = k, moved, host, port
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp, nil, true
	})
	s.mu.Lock()
	s.coordinator = moved
	s.mu.Unlock()
	n := len(s.arrivals())
	eventually(t, "a heartbeat is answered by the new coordinator", func() bool {
		return slices.ContainsFunc(s.arrivals()[n:], func(a groupReq) bool {
			return a.hb != nil && a.node == moved && a.hbResp.ErrorCode == 0
		})
	}, dump)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	var leaves []groupReq
	for _, a := range s.arrivals() {
		if a.hb != nil && a.hb.MemberEpoch < 0 {
			leaves = append(leaves, a)
		}
	}
	if len(leaves) != 1 || leaves[0].node != moved {
		t.Errorf("leave heartbeats arrived at %v, want one at node %d, the coordinator the member found (kgo's was node %d)\n%s", nodes(leaves), moved, old, dump())
	}
	// The history says where the leave went: the last found-coordinator
	// before the leave's Sent names that node.
	evs := m.log.All()
	iSent := slices.IndexFunc(evs, func(e clients.Event) bool { return e.Kind == clients.Sent && e.Op == clients.OpLeave })
	found := int32(-1)
	for _, e := range evs[:max(iSent, 0)] {
		if e.Kind == clients.FoundCoordinator {
			found = e.Node
		}
	}
	if iSent < 0 || found != moved {
		t.Errorf("the leave's Sent follows found-coordinator node %d, want %d\n%s", found, moved, dump())
	}
}

func nodes(as []groupReq) []int32 {
	var out []int32
	for _, a := range as {
		out = append(out, a.node)
	}
	return out
}

// The rebalance-timeout leave while the coordinator is unknown: the
// reconciliation cannot finish (the committed offsets cannot be read), the
// coordinator moves and no FindCoordinator gets through. The leave is given
// up unsent and the member rejoins at once, as after a sent one; it is not
// held in LEAVING until a lookup succeeds, and the leave is never sent late.
func TestLoopRebalanceTimeoutLeaveWithoutCoordinatorRejoins(t *testing.T) {
	t.Parallel()
	s := stuckBroker(t)
	m := startMember(t, s, false, RebalanceTimeout(1500*time.Millisecond), RetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	dump := m.dumpWith(s)
	eventually(t, "the member joins", func() bool {
		return slices.ContainsFunc(m.log.All(), func(e clients.Event) bool { return e.Kind == clients.Joined })
	}, dump)
	cut := true
	cutLookups(s, &cut)
	s.mu.Lock()
	s.moved = true
	s.mu.Unlock()
	eventually(t, "the member rejoins after the rebalance-timeout leave while the coordinator is unknown", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.m.state == stateJoining && m.m.joinWhy == "rejoin after the rebalance-timeout leave"
	}, dump)
	if !slices.ContainsFunc(m.log.All(), func(e clients.Event) bool { return e.Kind == clients.Left && e.Call == 0 }) {
		t.Errorf("no Left event for the leave that was not sent\n%s", dump())
	}
	n := len(s.arrivals())
	s.mu.Lock()
	cut, s.moved, s.fetchErr = false, false, 0
	s.mu.Unlock()
	eventually(t, "the member owns t[0 1] again", func() bool { return m.Owned().Count() == 2 }, dump)
	for _, a := range s.arrivals()[n:] {
		if a.hb != nil && a.hb.MemberEpoch < 0 {
			t.Errorf("the leave given up while the coordinator was unknown was sent late: %s\n%s", a, dump())
		}
	}
}
