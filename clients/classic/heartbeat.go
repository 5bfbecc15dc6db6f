package classic

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// heartbeatLoop is AbstractCoordinator.HeartbeatThread. It heartbeats only
// while the member has joined (COMPLETING_REBALANCE or STABLE), and it
// runs the two client-side timers:
//   - session: no successful heartbeat for session.timeout.ms means the
//     coordinator is probably gone, so it is marked unknown and looked up
//     again. The member keeps its partitions: only the coordinator can say
//     the membership ended (UNKNOWN_MEMBER_ID on the next request).
//   - poll: no Poll for max.poll.interval.ms makes the member leave the
//     group on its own (maybeLeaveGroup); it rejoins on the next Poll.
func (m *Member) heartbeatLoop() {
	var nextSend time.Time
	for {
		wait := time.Duration(-1) // -1: until woken
		m.mu.Lock()
		now := m.cfg.clock.Now()
		joined := (m.st == completing || m.st == stable) && m.fatal == nil
		coord := m.coord
		switch {
		case !joined:
			nextSend = time.Time{}
		case coord < 0:
			wait = 0
		case now.Sub(m.sessionStart) > m.cfg.sessionTimeout:
			m.markCoordinatorUnknownLocked(fmt.Sprintf("no successful heartbeat for the session timeout (%v)", m.cfg.sessionTimeout))
			m.sessionStart = now
			wait = 0
		case now.Sub(m.lastPoll) > m.cfg.maxPollInterval:
			m.leaveOnPollExpiry() // unlocks m.mu
			continue
		case now.Before(nextSend):
			wait = nextSend.Sub(now)
		default:
			wait = -2 // send now
		}
		gen := m.gen
		m.mu.Unlock()

		switch wait {
		case -2:
			nextSend = now.Add(m.cfg.heartbeatInterval)
			if !m.heartbeat(gen) {
				// Heartbeat.failHeartbeat: retry after the backoff.
				nextSend = m.cfg.clock.Now().Add(m.cfg.retryBackoff)
			}
			continue
		case 0:
			if _, err := m.ensureCoordinator(m.ctx); err != nil {
				return
			}
			continue
		}
		var timer <-chan time.Time
		if wait > 0 {
			timer = m.cfg.clock.After(wait)
		}
		select {
		case <-m.ctx.Done():
			return
		case <-m.hbWake:
		case <-timer:
		}
	}
}

// leaveOnPollExpiry, called with m.mu held and returning with it released, is the poll-timeout branch of HeartbeatThread.run
// followed by maybeLeaveGroup: report, give up the assignment, send
// LeaveGroup (dynamic members only) and drop the generation. Java reports
// the partitions lost on the next poll; the member reports them now, when
// the coordinator may already hand them to someone else.
func (m *Member) leaveOnPollExpiry() {
	why := fmt.Sprintf("consumer poll timeout has expired: no Poll for more than max.poll.interval (%v)", m.cfg.maxPollInterval)
	m.emitLocked(clients.Event{Kind: clients.SessionExpired, Why: why})
	m.loseLocked(m.owned.Clone(), "left the group on max.poll.interval expiry")
	gen, coord, st := m.gen, m.coord, m.st
	m.pollExpired = true
	m.gen = noGeneration()
	m.st = unjoined
	m.joinPrepare = true
	m.rejoin = true
	m.rejoinWhy = "rejoining after leaving on max.poll.interval expiry"
	if m.cfg.instanceID == nil && coord >= 0 && st != unjoined && gen.MemberID != "" {
		m.mu.Unlock()
		ctx, cancel := context.WithTimeout(m.ctx, m.cfg.sessionTimeout)
		_ = m.leaveGroup(ctx, gen, coord, why)
		cancel()
		m.mu.Lock()
	}
	m.mu.Unlock()
}

// heartbeat sends one Heartbeat and applies the answer as
// AbstractCoordinator.HeartbeatResponseHandler does. It reports whether the
// normal interval applies (false: retry after the backoff).
func (m *Member) heartbeat(sent Generation) bool {
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.sessionTimeout)
	defer cancel()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group = m.cfg.group
	req.Generation = sent.ID
	req.MemberID = sent.MemberID
	req.InstanceID = m.cfg.instanceID
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
	err = kerr.ErrorForCode(resp.ErrorCode)

	m.mu.Lock()
	defer m.mu.Unlock()
	unchanged := m.gen == sent
	ev := clients.Event{Kind: clients.Heartbeat, Op: clients.OpHeartbeat, Call: call, Generation: sent.ID, MemberID: sent.MemberID, ErrCode: resp.ErrorCode}
	if err != nil {
		ev.Err = errName(err)
	}
	switch {
	case err == nil:
		m.sessionStart = m.cfg.clock.Now()
		ev.Why = "heartbeat accepted"
		m.emit(ev)
		return true
	case isCoordinatorError(err):
		ev.Why = "coordinator moved or unavailable; finding it again"
		m.emit(ev)
		m.markCoordinatorUnknownLocked(errName(err) + " from Heartbeat")
		return false
	case errors.Is(err, kerr.RebalanceInProgress):
		// Heartbeating on during a rebalance keeps the session alive.
		// Java rejoins whenever it is STABLE when the answer arrives;
		// the member also requires the generation the heartbeat was
		// sent with, so that an answer overtaken by a whole join and
		// sync does not start a rebalance nobody asked for.
		m.sessionStart = m.cfg.clock.Now()
		if m.st == stable && unchanged {
			ev.Why = "group is rebalancing: rejoin"
			m.emit(ev)
			m.requestRejoinLocked("group is already rebalancing")
		} else {
			ev.Why = "group is rebalancing; ignored while the member is rebalancing too"
			m.emit(ev)
		}
		return true
	case errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.FencedInstanceID):
		if !unchanged {
			ev.Why = "stale heartbeat answer for an older generation; ignored"
			m.emit(ev)
			return true
		}
		ev.Why = "coordinator no longer knows this generation: resetting and rejoining"
		m.emit(ev)
		if errors.Is(err, kerr.FencedInstanceID) {
			m.failLocked(err, "Heartbeat: group instance id fenced by another instance")
			return true
		}
		// The member id stays valid on ILLEGAL_GENERATION.
		m.resetLocked(errors.Is(err, kerr.IllegalGeneration), "encountered "+errName(err)+" from Heartbeat response")
		return true
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		m.emit(ev)
		m.failLocked(err, "Heartbeat: not authorized for the group")
		return true
	}
	ev.Why = "unexpected heartbeat error; retrying after backoff"
	m.emit(ev)
	return false
}
