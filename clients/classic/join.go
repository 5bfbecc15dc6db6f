package classic

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/assign"
)

// errRetryNow marks a join failure after which Java rejoins at once, with
// no backoff (AbstractCoordinator.joinGroupIfNeeded: UnknownMemberId,
// RebalanceInProgress, IllegalGeneration, MemberIdRequired).
var errRetryNow = errors.New("rejoin at once")

// manage is the main thread of the Java consumer as far as the group goes:
// AbstractCoordinator.joinGroupIfNeeded, run whenever a rejoin is needed.
func (m *Member) manage() {
	failures := 0
	for {
		m.mu.Lock()
		need := m.mach.joinNeeded()
		m.mu.Unlock()
		if !need {
			select {
			case <-m.ctx.Done():
				return
			case <-m.wake:
				continue
			}
		}
		err := m.joinOnce(m.ctx)
		switch {
		case err == nil:
			failures = 0
		case m.ctx.Err() != nil || m.Err() != nil:
			return
		case errors.Is(err, errRetryNow):
			failures = 0
		default:
			if m.sleep(m.ctx, m.backoff(failures)) != nil {
				return
			}
			failures++
		}
	}
}

// joinOnce is one JoinGroup + SyncGroup round: it sends what the machine
// builds and feeds it the answers. What the round keeps true is the
// machine's (machine.go): onJoinPrepare once per rebalance, answers applied
// only to the generation they were sent with, partitions owned only after
// a SyncGroup of the current generation.
func (m *Member) joinOnce(ctx context.Context) error {
	if _, err := m.ensureCoordinator(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	prepare := m.mach.takeJoinPrepare()
	m.mu.Unlock()
	if prepare {
		m.onJoinPrepare(ctx)
	}

	gen, leader, resp, err := m.joinGroup(ctx)
	if err != nil {
		return err
	}
	var plan map[string][]byte
	if leader {
		plan, err = m.leaderAssign(ctx, gen, resp)
		if err != nil && ctx.Err() != nil {
			// Closing while the leader computed the assignment: as
			// after a JoinGroup, the member stays COMPLETING_REBALANCE
			// with its generation, so Close sends LeaveGroup and the
			// group rebalances at once instead of waiting for the
			// leader's session to expire (Java closes on the thread
			// that joins, so a close never cuts its rebalance short).
			m.emit(clients.Event{Kind: clients.Error, Err: err.Error(), Generation: gen.ID, MemberID: gen.MemberID, Why: "member closing: the leader stopped computing the assignment"})
			return ctx.Err()
		}
		if err != nil {
			m.step(func(s *machine) outcome { return s.assignFailed(gen, err) })
			return err
		}
	}
	return m.syncGroup(ctx, gen, plan)
}

// joinGroup sends the JoinGroup and takes its answer: the generation the
// member joined, and whether it leads it.
func (m *Member) joinGroup(ctx context.Context) (gen Generation, leader bool, resp *kmsg.JoinGroupResponse, err error) {
	m.mu.Lock()
	req, sent, why, o, err := m.mach.joinRequest()
	m.applyLocked(o)
	m.mu.Unlock()
	if err != nil {
		return gen, false, nil, err
	}

	var call uint64
	raw, err := m.coordRequest(ctx, req, func() {
		call = m.sent(clients.OpJoin, clients.Event{Generation: sent.ID, MemberID: sent.MemberID, Why: "JoinGroup (rejoin reason: " + why + ")"})
	})
	// A JoinGroup that failed is answered by an Error event, one that
	// succeeded by Joined (the clients contract).
	answer := clients.Event{Kind: clients.Error, Op: clients.OpJoin, Call: call, Generation: sent.ID, MemberID: sent.MemberID}
	if ctx.Err() != nil {
		// Closing: the join is still pending at the coordinator, so the
		// member stays PREPARING_REBALANCE and Close sends LeaveGroup.
		if call != 0 {
			answer.Err, answer.Why = ctx.Err().Error(), "member closing: stopped waiting for the JoinGroup answer"
			m.emit(answer)
		}
		return gen, false, nil, ctx.Err()
	}
	if err != nil {
		m.mu.Lock()
		m.mach.rebalanceFailed(sent)
		m.mu.Unlock()
		if call != 0 {
			answer.Err, answer.Why = err.Error(), "JoinGroup failed in transport; retrying after backoff"
			m.emit(answer)
		} else {
			m.emit(clients.Event{Kind: clients.Error, Err: err.Error(), Generation: sent.ID, MemberID: sent.MemberID, Why: "JoinGroup not sent: the coordinator could not be found; retrying after backoff"})
		}
		return gen, false, nil, err
	}
	resp = raw.(*kmsg.JoinGroupResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		answer.ErrCode, answer.Err, answer.MemberID = resp.ErrorCode, errName(err), resp.MemberID
		answer.Why = "JoinGroup answered " + errName(err)
		m.emit(answer)
		m.mu.Lock()
		o, err := m.mach.onJoinError(sent, resp, err)
		m.applyLocked(o)
		m.mu.Unlock()
		return gen, false, nil, err
	}
	protocol := ""
	if resp.Protocol != nil {
		protocol = *resp.Protocol
	}
	leader = resp.LeaderID == resp.MemberID
	answer.Kind = clients.Joined
	answer.Generation, answer.MemberID, answer.Leader = resp.Generation, resp.MemberID, leader
	answer.Why = fmt.Sprintf("JoinGroup answered: generation %d, protocol %s, leader %s (rejoin reason: %s)", resp.Generation, protocol, resp.LeaderID, why)
	m.emit(answer)

	m.mu.Lock()
	o, gen, err = m.mach.onJoined(sent, resp, m.cfg.Clock.Now())
	m.applyLocked(o)
	m.mu.Unlock()
	if err != nil {
		return gen, false, nil, err
	}
	return gen, leader, resp, nil
}

// syncGroup sends the SyncGroup of gen (with the leader's plan) and takes
// its answer: the assignment, and the consuming of what it added.
func (m *Member) syncGroup(ctx context.Context, gen Generation, plan map[string][]byte) error {
	m.mu.Lock()
	sync := m.mach.syncRequest(gen, plan)
	m.mu.Unlock()
	var scall uint64
	raw, err := m.coordRequest(ctx, sync, func() {
		scall = m.sent(clients.OpSync, clients.Event{Generation: gen.ID, MemberID: gen.MemberID, Why: "SyncGroup"})
	})
	sanswer := clients.Event{Kind: clients.Error, Op: clients.OpSync, Call: scall, Generation: gen.ID, MemberID: gen.MemberID}
	if ctx.Err() != nil {
		if scall != 0 {
			sanswer.Err, sanswer.Why = ctx.Err().Error(), "member closing: stopped waiting for the SyncGroup answer"
			m.emit(sanswer)
		}
		return ctx.Err()
	}
	if err != nil {
		m.step(func(s *machine) outcome { return s.syncFailed(gen) })
		if scall != 0 {
			sanswer.Err, sanswer.Why = err.Error(), "SyncGroup failed in transport; retrying after backoff"
			m.emit(sanswer)
		} else {
			m.emit(clients.Event{Kind: clients.Error, Err: err.Error(), Generation: gen.ID, MemberID: gen.MemberID, Why: "SyncGroup not sent: the coordinator could not be found; retrying after backoff"})
		}
		return err
	}
	sresp := raw.(*kmsg.SyncGroupResponse)
	if err := kerr.ErrorForCode(sresp.ErrorCode); err != nil {
		sanswer.ErrCode, sanswer.Err, sanswer.Why = sresp.ErrorCode, errName(err), "SyncGroup answered "+errName(err)
		m.emit(sanswer)
		m.mu.Lock()
		o, err := m.mach.onSyncError(gen, err)
		m.applyLocked(o)
		m.mu.Unlock()
		return err
	}
	assigned, derr := assign.DecodeAssignment(sresp.MemberAssignment)
	sanswer.Kind = clients.Synced
	sanswer.Why = fmt.Sprintf("SyncGroup answered the assignment of generation %d", gen.ID)
	if derr == nil {
		sanswer.Partitions = fromMap(assigned.Partitions)
	} else {
		sanswer.Why += " (it does not decode)"
	}
	m.emit(sanswer)
	m.mu.Lock()
	o, err := m.mach.onSynced(gen, sresp, derr, m.cfg.Clock.Now())
	m.applyLocked(o)
	m.mu.Unlock()
	if err != nil {
		return err
	}
	m.mu.Lock()
	o, added := m.mach.joinComplete(gen, fromMap(assigned.Partitions))
	m.applyLocked(o)
	m.mu.Unlock()
	if added.Count() == 0 {
		return nil
	}
	return m.startConsuming(ctx, gen, added)
}

// leaderAssign is ConsumerCoordinator.onLeaderElected: decode every
// member's subscription, read the partition counts of all subscribed
// topics and run the selected assignor. A static leader rejoining a stable
// group gets SkipAssignment (JoinGroup v9+, KIP-814) and keeps the current
// assignment by sending none.
func (m *Member) leaderAssign(ctx context.Context, gen Generation, resp *kmsg.JoinGroupResponse) (map[string][]byte, error) {
	if resp.SkipAssignment {
		return nil, nil
	}
	m.mu.Lock()
	assignor, err := m.mach.leaderAssignor(gen)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	members := make([]assign.Member, 0, len(resp.Members))
	topicSet := map[string]bool{}
	for _, jm := range resp.Members {
		sub, err := assign.DecodeSubscription(jm.ProtocolMetadata)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", jm.MemberID, err)
		}
		members = append(members, sub.Member(jm.MemberID, jm.InstanceID))
		for _, t := range sub.Topics {
			topicSet[t] = true
		}
	}
	counts, err := m.partitionCounts(ctx, topicSet)
	if err != nil {
		return nil, err
	}
	plan, err := assignor.Assign(members, counts)
	if err != nil {
		return nil, err
	}
	if m.cfg.protocol == assign.Cooperative && assignor.Name() != assign.CooperativeStickyName {
		if err := assign.ValidateCooperative(members, plan); err != nil {
			return nil, err
		}
	}
	return assign.AssignmentFor(plan, assign.HighestProtocolVersion)
}

// partitionCounts asks a broker for the partition count of every topic.
// Missing topics are left out, as Java's leader leaves out topics its
// metadata does not have.
func (m *Member) partitionCounts(ctx context.Context, topics map[string]bool) (map[string]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	for t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return nil, fmt.Errorf("metadata for the assignment: %w", err)
	}
	out := map[string]int32{}
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		out[*t.Topic] = int32(len(t.Partitions))
	}
	return out, nil
}

// onJoinPrepare is ConsumerCoordinator.onJoinPrepare: commit (with
// auto-commit) what Poll handed out, then give up partitions before
// JoinGroup as the machine says (machine.joinPrepared).
func (m *Member) onJoinPrepare(ctx context.Context) {
	m.mu.Lock()
	commit := m.mach.commitBeforeJoin()
	m.mu.Unlock()
	if commit {
		// Java keeps retrying the commit for at most the rebalance
		// timeout (joinPrepareTimer) and then joins anyway.
		cctx, cancel := context.WithTimeout(ctx, m.cfg.rebalanceTimeout)
		_ = m.commitPositions(cctx, "auto-commit before rejoining")
		cancel()
	}
	m.step((*machine).joinPrepared)
}
