package share

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// heartbeatLoop keeps the membership: epoch 0 joins, then one heartbeat
// per interval the coordinator gives; a fence (UNKNOWN_MEMBER_ID,
// FENCED_MEMBER_EPOCH) rejoins at epoch 0 with the same member id, as
// Java's ShareMembershipManager does.
func (m *Member) heartbeatLoop() {
	for m.ctx.Err() == nil {
		wait := m.heartbeat()
		select {
		case <-m.ctx.Done():
			return
		case <-m.kick:
		case <-time.After(wait):
		}
	}
}

// heartbeat sends one ShareGroupHeartbeat and says how long to wait before
// the next.
func (m *Member) heartbeat() time.Duration {
	m.mu.Lock()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.memberID, m.epoch
	if m.epoch == 0 || m.fullNext {
		req.SubscribedTopicNames = slices.Clone(m.cfg.topics)
	}
	interval := m.hbInterval
	m.mu.Unlock()

	call := m.nextCall()
	sent := m.ev(clients.Sent, "share heartbeat")
	if req.MemberEpoch == 0 {
		sent.Why = "share heartbeat at epoch 0: join"
	}
	resp, code, a := m.heartbeatCall(m.ctx, req, call, clients.OpHeartbeat, sent, clients.Heartbeat, "")
	if a.Err != "" {
		a.Why = "share heartbeat failed: " + a.Err
		m.mu.Lock()
		// The answer may have been lost after the coordinator bumped the
		// epoch and changed the assignment: it accepts the previous epoch
		// again, but sends the assignment only to a full request
		// (GroupMetadataManager.shareGroupHeartbeat, isFullRequest), so the
		// next heartbeat is one, as Java's AbstractHeartbeatRequestManager
		// makes it (onFailure, onErrorResponse: resetHeartbeatState).
		m.fullNext = true
		fenced := code == kerr.UnknownMemberID.Code || code == kerr.FencedMemberEpoch.Code
		if fenced {
			m.epoch = 0
			m.assigned, m.unresolved = map[tp]bool{}, nil
			a.Why += "; rejoin at epoch 0 with the same member id"
		}
		m.mu.Unlock()
		m.emit(a)
		if fenced {
			return 0
		}
		return max(interval, 100*time.Millisecond)
	}

	m.mu.Lock()
	m.epoch, m.fullNext = resp.MemberEpoch, false
	if resp.HeartbeatIntervalMillis > 0 {
		m.hbInterval = time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
	}
	a.MemberEpoch = resp.MemberEpoch
	a.Why = fmt.Sprintf("share heartbeat answered, member epoch %d", resp.MemberEpoch)
	if resp.Assignment != nil {
		m.applyAssignmentLocked(resp.Assignment.TopicPartitions)
		a.Partitions = m.assignedLocked()
		a.Why += fmt.Sprintf(", assignment of %d partitions", a.Partitions.Count())
		if len(m.unresolved) > 0 {
			a.Why += fmt.Sprintf(" (%d topic ids not known yet: metadata next)", len(m.unresolved))
		}
	}
	interval = m.hbInterval
	m.mu.Unlock()
	m.emit(a)
	return interval
}

func (m *Member) assignedLocked() clients.Partitions {
	out := clients.Partitions{}
	for p := range m.assigned {
		out[p.topic] = append(out[p.topic], p.partition)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// heartbeatCall reports req sent (sent, as call of op, at the epoch req
// carries), sends it within the request timeout and returns the answer,
// its error code and the answer event (kind, why) carrying the error, for
// the caller to complete and emit.
func (m *Member) heartbeatCall(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest, call uint64, op clients.Op, sent clients.Event, kind clients.Kind, why string) (*kmsg.ShareGroupHeartbeatResponse, int16, clients.Event) {
	sent.Call, sent.Op, sent.MemberEpoch = call, op, req.MemberEpoch
	m.emit(sent)
	ctx, cancel := context.WithTimeout(ctx, m.cfg.requestTimeout)
	resp, err := m.sendHeartbeat(ctx, req)
	cancel()
	a := m.ev(kind, why)
	a.Call, a.Op = call, op
	var code int16
	if err == nil {
		code = resp.ErrorCode
	}
	a.Err, a.ErrCode = errName(code, err)
	return resp, code, a
}

// leave sends the leave heartbeat (epoch -1) once.
func (m *Member) leave(ctx context.Context) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	m.mu.Lock()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.memberID, -1
	m.mu.Unlock()
	call := m.nextCall()
	sent := m.ev(clients.Sent, "close: leave the share group (epoch -1)")
	_, _, a := m.heartbeatCall(ctx, req, call, clients.OpLeave, sent, clients.Left, "left the share group")
	a.MemberEpoch = -1
	if a.Err != "" {
		a.Why = "leave heartbeat failed: " + a.Err
	}
	m.emit(a)
}
