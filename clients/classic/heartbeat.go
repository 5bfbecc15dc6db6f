package classic

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// heartbeatLoop is AbstractCoordinator.HeartbeatThread: it asks the
// machine what to do at each moment (machine.heartbeatTick: heartbeat,
// find the coordinator, leave on the poll timer, wait) and does it.
func (m *Member) heartbeatLoop() {
	var nextSend time.Time
	for {
		m.mu.Lock()
		now := m.cfg.Clock.Now()
		act, wait, o := m.mach.heartbeatTick(now, nextSend)
		m.applyLocked(o)
		gen := m.mach.gen
		if act == tickLeave {
			m.leaveOnPollExpiry() // unlocks m.mu
			continue
		}
		m.mu.Unlock()

		var timer <-chan time.Time
		switch act {
		case tickIdle:
			nextSend = time.Time{} // until woken
		case tickSend:
			nextSend = now.Add(m.cfg.heartbeatInterval)
			if !m.heartbeat(gen) {
				// Heartbeat.failHeartbeat: retry after the backoff.
				nextSend = m.cfg.Clock.Now().Add(m.cfg.retryBackoff)
			}
			continue
		case tickFind:
			if _, err := m.ensureCoordinator(m.ctx); err != nil {
				return
			}
			continue
		case tickWait:
			timer = m.cfg.Clock.After(wait)
		}
		select {
		case <-m.ctx.Done():
			return
		case <-m.hbWake:
		case <-timer:
		}
	}
}

// leaveOnPollExpiry, called with m.mu held and returning with it released,
// carries out machine.leaveOnPollExpiry: report, give up the assignment
// and, for a dynamic member, send LeaveGroup.
func (m *Member) leaveOnPollExpiry() {
	o, leave, gen, coord, why := m.mach.leaveOnPollExpiry()
	m.applyLocked(o)
	m.mu.Unlock()
	if leave {
		ctx, cancel := context.WithTimeout(m.ctx, m.cfg.sessionTimeout)
		_ = m.leaveGroup(ctx, gen, coord, why)
		cancel()
	}
}

// heartbeat sends one Heartbeat of gen sent and has the machine apply the
// answer (machine.onHeartbeat). It reports whether the normal interval
// applies (false: retry after the backoff).
func (m *Member) heartbeat(sent Generation) bool {
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.sessionTimeout)
	defer cancel()
	m.mu.Lock()
	req := m.mach.heartbeatRequest(sent)
	m.mu.Unlock()
	var call uint64
	raw, err := m.coordRequest(ctx, req, func() {
		call = m.sent(clients.OpHeartbeat, clients.Event{Generation: sent.ID, MemberID: sent.MemberID, Why: "Heartbeat"})
	})
	if err != nil {
		answer := clients.Event{Kind: clients.Heartbeat, Op: clients.OpHeartbeat, Call: call, Err: err.Error(), Generation: sent.ID, MemberID: sent.MemberID,
			Why: "Heartbeat failed in transport; retrying after backoff"}
		switch {
		case call == 0 && m.ctx.Err() != nil:
			return true
		case call == 0:
			answer.Kind, answer.Op, answer.Why = clients.Error, "", "Heartbeat not sent: the coordinator could not be found; retrying after backoff"
		case m.ctx.Err() != nil:
			answer.Why = "member closing: stopped waiting for the Heartbeat answer"
			m.emit(answer)
			return true
		}
		m.emit(answer)
		return false
	}
	resp := raw.(*kmsg.HeartbeatResponse)
	m.mu.Lock()
	defer m.mu.Unlock()
	answer := clients.Event{Kind: clients.Heartbeat, Op: clients.OpHeartbeat, Call: call, Generation: sent.ID, MemberID: sent.MemberID}
	o, normal := m.mach.onHeartbeat(sent, resp, answer, m.cfg.Clock.Now())
	m.applyLocked(o)
	return normal
}
