package light

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Consumer is a lightweight KIP-848 member: ConsumerGroupHeartbeat with
// the server-side assignor, and the least reconciliation a consumer does:
// take the assignment the coordinator sends, give up (after committing)
// what it no longer lists, and acknowledge at once with the next
// heartbeat (Java's ConsumerMembershipManager sends that heartbeat without
// waiting for the interval). Members share pooled connections.
//
// Reactions (KIP-848, ConsumerGroupHeartbeat errors): UNKNOWN_MEMBER_ID and
// FENCED_MEMBER_EPOCH give everything up and rejoin with epoch 0 and the
// same member id; a coordinator error or a broken connection finds the
// coordinator again and resends the full heartbeat, keeping the
// partitions.
type Consumer struct {
	g   *Group
	idx int32
	lifecycle

	co       coord
	memberID string
	epoch    int32
	owned    []int32
	offset   int64
}

// NewConsumer makes consumer-protocol member number idx of the group.
// Its member id is drawn from the group's seed (KIP-1082: the client
// makes its member id, a Uuid in Kafka's base64 form).
func (g *Group) NewConsumer(idx int32) *Consumer {
	var b [16]byte
	g.mu.Lock()
	binary.BigEndian.PutUint64(b[:8], g.rng.Uint64())
	binary.BigEndian.PutUint64(b[8:], g.rng.Uint64())
	g.mu.Unlock()
	id := base64.RawURLEncoding.EncodeToString(b[:])
	c := &Consumer{g: g, idx: idx, memberID: id}
	c.prepare()
	c.st.s.MemberID = id
	return c
}

// Run implements Member.
func (m *Consumer) Run(ctx context.Context) error {
	rctx, end := m.begin(ctx)
	defer end()
	cfg := m.g.cfg
	full := true // send every field: joining, or after an error
	ack := false // the next heartbeat acknowledges what the member owns
	wait := time.Duration(0)
	interval := cfg.HeartbeatInterval
	lastCommit := time.Now()
	for attempt := 0; ; {
		select {
		case <-m.leave:
			return m.doLeave(ctx)
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		sentAck := ack || full
		resp, err := m.heartbeat(rctx, full, sentAck)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if rctx.Err() != nil {
				continue // leaving: the heartbeat was dropped or its answer is moot
			}
			attempt++
			full = true
			m.g.Stats.Error(err)
			switch {
			case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.FencedMemberEpoch):
				m.epoch = 0
				m.revoke(rctx, m.owned, false) // fenced: its commits would be refused
				wait = 0
			default:
				if retriable(err) {
					m.g.forget(m.co)
				}
				wait = backoff(attempt)
			}
			m.st.update(func(s *State) { s.Settled = false })
			continue
		}
		attempt, full = 0, false
		if resp.MemberID != nil && *resp.MemberID != "" {
			m.memberID = *resp.MemberID
		}
		m.epoch = resp.MemberEpoch
		if resp.HeartbeatIntervalMillis > 0 {
			interval = time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
		}
		ack = false
		if resp.Assignment != nil {
			ack = m.reconcile(rctx, resp.Assignment)
		}
		now := time.Now()
		settled := !ack
		m.st.update(func(s *State) {
			s.MemberID, s.Epoch, s.LastOK, s.Settled, s.Owned = m.memberID, m.epoch, now, settled, len(m.owned)
		})
		if cfg.CommitInterval > 0 && time.Since(lastCommit) >= cfg.CommitInterval {
			lastCommit = time.Now()
			_ = m.commit(rctx, m.owned)
		}
		wait = interval
		if ack {
			wait = 0
		}
	}
}

// reconcile applies an assignment and reports whether it changed what
// the member owns (then the next heartbeat must acknowledge it).
func (m *Consumer) reconcile(ctx context.Context, a *kmsg.ConsumerGroupHeartbeatResponseAssignment) bool {
	tid := m.g.topic()
	var next []int32
	for _, t := range a.Topics {
		if t.TopicID == tid {
			next = append(next, t.Partitions...)
		}
	}
	slices.Sort(next)
	next = slices.Compact(next)
	var revoked, added []int32
	for _, p := range m.owned {
		if _, ok := slices.BinarySearch(next, p); !ok {
			revoked = append(revoked, p)
		}
	}
	for _, p := range next {
		if _, ok := slices.BinarySearch(m.owned, p); !ok {
			added = append(added, p)
		}
	}
	if len(revoked) == 0 && len(added) == 0 {
		return false
	}
	m.revoke(ctx, revoked, true)
	m.owned = next
	m.g.Owners.Acquire(m.idx, added, time.Now())
	return true
}

// revoke gives parts up, committing them first when commit is set (what
// a consumer does in onPartitionsRevoked with auto-commit).
func (m *Consumer) revoke(ctx context.Context, parts []int32, commit bool) {
	if len(parts) == 0 {
		return
	}
	if commit {
		_ = m.commit(ctx, parts)
	}
	m.g.Owners.Release(m.idx, parts, time.Now())
	m.owned = slices.DeleteFunc(slices.Clone(m.owned), func(p int32) bool { return slices.Contains(parts, p) })
}

// do sends req to the coordinator and waits for its answer.
func (m *Consumer) do(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	co, err := m.g.coordinator(ctx)
	if err != nil {
		return nil, err
	}
	m.co = co
	return m.g.pool.Do(ctx, co.addr, int(m.idx), req, m.g.cfg.RequestTimeout)
}

func (m *Consumer) heartbeat(ctx context.Context, full, withTopics bool) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	return m.send(ctx, m.epoch, full, withTopics)
}

func (m *Consumer) send(ctx context.Context, epoch int32, full, withTopics bool) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	cfg := m.g.cfg
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(1)
	req.Group, req.MemberID, req.MemberEpoch = cfg.Group, m.memberID, epoch
	req.RebalanceTimeoutMillis = -1
	if full && epoch >= 0 {
		req.RebalanceTimeoutMillis = int32(cfg.RebalanceTimeout.Milliseconds())
		req.SubscribedTopicNames = []string{cfg.Topic}
	}
	if withTopics && epoch >= 0 {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if len(m.owned) > 0 {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.TopicID, t.Partitions = m.g.topic(), slices.Clone(m.owned)
			req.Topics = append(req.Topics, t)
		}
	}
	r, err := m.do(ctx, req)
	if err != nil {
		return nil, err
	}
	return r.(*kmsg.ConsumerGroupHeartbeatResponse), nil
}

func (m *Consumer) commit(ctx context.Context, parts []int32) error {
	if len(parts) == 0 || m.epoch <= 0 {
		return nil
	}
	m.offset++
	r, err := m.do(ctx, commitRequest(m.g.cfg, m.memberID, m.epoch, parts, m.offset))
	if err != nil {
		return err
	}
	return commitErr(r.(*kmsg.OffsetCommitResponse))
}

// doLeave sends the leave heartbeat (member epoch -1) and gives
// everything up.
func (m *Consumer) doLeave(ctx context.Context) error {
	defer m.st.update(func(s *State) { s.Left, s.Settled, s.Owned = true, false, 0 })
	m.revoke(ctx, m.owned, true)
	resp, err := m.send(ctx, -1, false, false)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}
