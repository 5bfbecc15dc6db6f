package classic

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/coord"
)

// Group requests go to the coordinator node through kgo's
// Broker(id).Request, never through Client.Request: kgo's client would
// look the coordinator up itself and silently retry COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS and NOT_COORDINATOR, while the harness wants
// each of those answers in the history and the member to react to them as
// the Java AbstractCoordinator does (mark the coordinator unknown, find it
// again, retry with backoff). FindCoordinator goes to one broker per
// attempt (coord.Find), retried after the member's own backoff.

// ensureCoordinator returns the coordinator's node id, looking it up with
// FindCoordinator until one answers or ctx ends. COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR and transport errors are
// retried with backoff (AbstractCoordinator.ensureCoordinatorReady);
// GROUP_AUTHORIZATION_FAILED is fatal.
func (m *Member) ensureCoordinator(ctx context.Context) (int32, error) {
	m.coordMu.Lock()
	defer m.coordMu.Unlock()
	for attempt := 0; ; attempt++ {
		m.mu.Lock()
		node, fatal := m.mach.coord, m.mach.fatal
		gen := m.mach.gen
		m.mu.Unlock()
		if fatal != nil {
			return -1, fatal
		}
		if node >= 0 {
			return node, nil
		}
		nodeID, err := coord.Find(ctx, m.cl, m.cfg.group, attempt)
		if err == nil {
			m.step(func(s *machine) outcome { return s.foundCoordinator(nodeID, gen, m.cfg.Clock.Now()) })
			return nodeID, nil
		}
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		m.mu.Lock()
		o, stop := m.mach.findCoordinatorFailed(err)
		m.applyLocked(o)
		m.mu.Unlock()
		if stop {
			return -1, m.Err()
		}
		m.emit(clients.Event{Kind: clients.Error, ErrCode: errCode(err), Err: errName(err), Generation: gen.ID, MemberID: gen.MemberID,
			Why: "FindCoordinator failed; retrying after backoff"})
		if err := m.sleep(ctx, m.backoff(attempt)); err != nil {
			return -1, err
		}
	}
}

// markCoordinatorUnknown is machine.markCoordinatorUnknown, under mu.
func (m *Member) markCoordinatorUnknown(why string) {
	m.step(func(s *machine) outcome {
		var o outcome
		s.markCoordinatorUnknown(&o, why)
		return o
	})
}

// coordRequest sends req to the coordinator. A transport error marks the
// coordinator unknown (Java: DisconnectException in
// CoordinatorResponseHandler.onFailure). sent, if not nil, is called once
// the coordinator is known, right before the request leaves: the caller
// reports the call there (clients.Sent). It is not called when the
// coordinator could not be found.
func (m *Member) coordRequest(ctx context.Context, req kmsg.Request, sent func()) (kmsg.Response, error) {
	node, err := m.ensureCoordinator(ctx)
	if err != nil {
		return nil, err
	}
	if sent != nil {
		sent()
	}
	resp, err := m.cl.Broker(int(node)).Request(ctx, req)
	if err != nil {
		if ctx.Err() == nil {
			m.markCoordinatorUnknown(fmt.Sprintf("%s to node %d failed: %v", kmsg.NameForKey(req.Key()), node, err))
		}
		return nil, err
	}
	return resp, nil
}

// backoff is retry.backoff.ms grown exponentially to retry.backoff.max.ms.
func (m *Member) backoff(attempt int) time.Duration {
	d := m.cfg.retryBackoff
	for range min(attempt, 16) {
		d *= 2
		if d >= m.cfg.retryBackoffMax {
			return m.cfg.retryBackoffMax
		}
	}
	return d
}

func (m *Member) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-m.cfg.Clock.After(d):
		return nil
	}
}
