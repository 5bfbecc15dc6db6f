package light

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients/assign"
)

// Classic is a lightweight classic-protocol member: eager rebalancing with
// the range assignor (Java's RangeAssignor, from clients/assign, when it
// leads), on a connection of its own (see the package doc). It follows
// AbstractCoordinator's reactions: REBALANCE_IN_PROGRESS rejoins with the
// same member id, UNKNOWN_MEMBER_ID rejoins with none, a coordinator error
// or a broken connection finds the coordinator again and keeps the
// partitions (the session is still valid on the new coordinator).
type Classic struct {
	g   *Group
	idx int32
	lifecycle

	co       coord // the coordinator the member last talked to
	memberID string
	gen      int32
	owned    []int32
	offset   int64
}

// NewClassic makes classic member number idx of the group.
func (g *Group) NewClassic(idx int32) *Classic {
	m := &Classic{g: g, idx: idx, gen: -1}
	m.prepare()
	return m
}

// Run implements Member.
func (m *Classic) Run(ctx context.Context) error {
	rctx, end := m.begin(ctx)
	defer end()
	cfg := m.g.cfg
	rejoin := true
	lastCommit := time.Now()
	for attempt := 0; ; {
		select {
		case <-m.leave:
			return m.doLeave(ctx)
		default:
		}
		if ctx.Err() != nil {
			return nil
		}
		if rejoin {
			if err := m.join(rctx); err != nil {
				if rctx.Err() != nil {
					continue // leaving, or the run ends
				}
				if m.react(err) {
					attempt++
					_ = Sleep(ctx, backoff(attempt))
				}
				continue
			}
			rejoin, attempt = false, 0
			lastCommit = time.Now()
			m.commit(rctx) // what a consumer commits once it starts on an assignment
			continue
		}
		wait := cfg.HeartbeatInterval
		if attempt > 0 {
			wait = backoff(attempt)
		}
		select {
		case <-m.leave:
			continue
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		err := m.heartbeat(rctx)
		if err == nil && cfg.CommitInterval > 0 && time.Since(lastCommit) >= cfg.CommitInterval {
			lastCommit = time.Now()
			err = m.commit(rctx)
		}
		if err == nil {
			attempt = 0
			continue
		}
		if rctx.Err() != nil {
			continue // leaving, or the run ends
		}
		if retriable(err) {
			attempt++
			m.react(err)
			continue
		}
		// REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
		// FENCED_INSTANCE_ID: rejoin (react resets what it must).
		m.react(err)
		rejoin = true
	}
}

// backoff is the retry delay after attempt failures: 100ms doubling to 2s.
func backoff(attempt int) time.Duration {
	return min(100*time.Millisecond<<min(attempt, 5), 2*time.Second)
}

// react updates the member after an error and reports whether the next
// attempt should back off.
func (m *Classic) react(err error) bool {
	m.g.Stats.Error(err)
	switch {
	case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.FencedInstanceID):
		m.memberID = ""
		m.gen = -1
		m.revoke()
		return false
	case errors.Is(err, kerr.IllegalGeneration):
		m.gen = -1
		m.revoke()
		return false
	case errors.Is(err, kerr.RebalanceInProgress):
		return false
	case retriable(err):
		m.g.forget(m.co)
		return true
	}
	return true
}

// revoke gives up every partition (eager rebalancing revokes all before
// rejoining).
func (m *Classic) revoke() {
	if len(m.owned) > 0 {
		m.g.Owners.Release(m.idx, m.owned, time.Now())
		m.owned = nil
	}
	m.st.update(func(s *State) { s.Settled, s.Owned = false, 0 })
}

// do sends req to the coordinator on the member's own connection and
// waits for its answer, at most timeout once written.
func (m *Classic) do(ctx context.Context, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	co, err := m.g.coordinator(ctx)
	if err != nil {
		return nil, err
	}
	if m.co.addr != "" && m.co.addr != co.addr {
		m.g.own.Forget(m.co.addr, int(m.idx)) // its own connection to the old coordinator
	}
	m.co = co
	return m.g.own.Do(ctx, co.addr, int(m.idx), req, timeout)
}

func (m *Classic) ok() {
	now := time.Now()
	m.st.update(func(s *State) { s.LastOK = now })
}

// join runs JoinGroup and SyncGroup once through.
func (m *Classic) join(ctx context.Context) error {
	cfg := m.g.cfg
	m.revoke()
	meta, err := assign.EncodeSubscription(assign.Subscription{Version: 0, Topics: []string{cfg.Topic}, Generation: -1})
	if err != nil {
		return err
	}
	var jr *kmsg.JoinGroupResponse
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(9)
		req.Group = cfg.Group
		req.SessionTimeoutMillis = int32(cfg.SessionTimeout.Milliseconds())
		req.RebalanceTimeoutMillis = int32(cfg.RebalanceTimeout.Milliseconds())
		req.MemberID = m.memberID
		req.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = assign.RangeName, meta
		req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
		// Past its timeout the parked request's connection is broken: the
		// answer may still come, and the connection is out of step.
		r, err := m.do(ctx, req, cfg.RebalanceTimeout+10*time.Second)
		if err != nil {
			return err
		}
		jr = r.(*kmsg.JoinGroupResponse)
		if err := kerr.ErrorForCode(jr.ErrorCode); err != nil {
			if errors.Is(err, kerr.MemberIDRequired) {
				m.memberID = jr.MemberID
				continue
			}
			return err
		}
		break
	}
	m.ok()
	m.memberID, m.gen = jr.MemberID, jr.Generation
	m.st.update(func(s *State) { s.MemberID, s.Epoch = m.memberID, m.gen })

	sreq := kmsg.NewPtrSyncGroupRequest()
	sreq.SetVersion(5)
	sreq.Group, sreq.Generation, sreq.MemberID = cfg.Group, m.gen, m.memberID
	sreq.ProtocolType, sreq.Protocol = kmsg.StringPtr("consumer"), jr.Protocol
	if jr.LeaderID == m.memberID {
		payloads, err := m.lead(jr)
		if err != nil {
			return err
		}
		for id, b := range payloads {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = id, b
			sreq.GroupAssignment = append(sreq.GroupAssignment, a)
		}
	}
	r, err := m.do(ctx, sreq, cfg.RebalanceTimeout+10*time.Second)
	if err != nil {
		return err
	}
	sr := r.(*kmsg.SyncGroupResponse)
	if err := kerr.ErrorForCode(sr.ErrorCode); err != nil {
		return err
	}
	a, err := assign.DecodeAssignment(sr.MemberAssignment)
	if err != nil {
		return fmt.Errorf("member %d generation %d: %w", m.idx, m.gen, err)
	}
	m.owned = slices.Sorted(slices.Values(a.Partitions[cfg.Topic]))
	m.g.Owners.Acquire(m.idx, m.owned, time.Now())
	m.ok()
	m.st.update(func(s *State) { s.Settled, s.Owned = true, len(m.owned) })
	return nil
}

// lead computes the range assignment of the JoinGroup members.
func (m *Classic) lead(jr *kmsg.JoinGroupResponse) (map[string][]byte, error) {
	members := make([]assign.Member, 0, len(jr.Members))
	for _, jm := range jr.Members {
		s, err := assign.DecodeSubscription(jm.ProtocolMetadata)
		if err != nil {
			return nil, fmt.Errorf("subscription of %s: %w", jm.MemberID, err)
		}
		members = append(members, s.Member(jm.MemberID, jm.InstanceID))
	}
	plan, err := assign.Range().Assign(members, map[string]int32{m.g.cfg.Topic: m.g.cfg.Partitions})
	if err != nil {
		return nil, err
	}
	return assign.AssignmentFor(plan, 0)
}

func (m *Classic) heartbeat(ctx context.Context) error {
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(4)
	req.Group, req.Generation, req.MemberID = m.g.cfg.Group, m.gen, m.memberID
	r, err := m.do(ctx, req, m.g.cfg.RequestTimeout)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(r.(*kmsg.HeartbeatResponse).ErrorCode); err != nil {
		if errors.Is(err, kerr.RebalanceInProgress) {
			m.ok() // the session is fine; the member must rejoin
			m.st.update(func(s *State) { s.Settled = false })
		}
		return err
	}
	m.ok()
	return nil
}

// commit commits an advancing offset for every owned partition.
func (m *Classic) commit(ctx context.Context) error {
	if len(m.owned) == 0 {
		return nil
	}
	m.offset++
	req := commitRequest(m.g.cfg, m.memberID, m.gen, m.owned, m.offset)
	r, err := m.do(ctx, req, m.g.cfg.RequestTimeout)
	if err != nil {
		return err
	}
	return commitErr(r.(*kmsg.OffsetCommitResponse))
}

func commitRequest(cfg Config, memberID string, genOrEpoch int32, parts []int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(9)
	req.Group, req.Generation, req.MemberID = cfg.Group, genOrEpoch, memberID
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = cfg.Topic
	for _, p := range parts {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, offset
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{t}
	return req
}

func commitErr(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// doLeave sends LeaveGroup and gives everything up.
func (m *Classic) doLeave(ctx context.Context) error {
	defer m.st.update(func(s *State) { s.Left = true })
	m.revoke()
	if m.memberID == "" {
		return nil
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.SetVersion(5)
	req.Group = m.g.cfg.Group
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = m.memberID
	lm.Reason = kmsg.StringPtr("groupquake scale: one member leaves")
	req.Members = []kmsg.LeaveGroupRequestMember{lm}
	r, err := m.do(ctx, req, 10*time.Second)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(r.(*kmsg.LeaveGroupResponse).ErrorCode)
}
