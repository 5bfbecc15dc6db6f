package classic

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
		need := m.rejoin && !m.pollExpired && m.fatal == nil
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

// joinOnce is one JoinGroup + SyncGroup round. Invariants:
//  1. onJoinPrepare runs once per rebalance, before its first JoinGroup,
//     and again only after the generation was reset or a round succeeded.
//  2. A response is applied only to the generation it was sent with
//     (CoordinatorResponseHandler.generationUnchanged); a reset that
//     happened meanwhile (heartbeat error, Close) wins.
//  3. Partitions become owned only after a successful SyncGroup of the
//     current generation; under COOPERATIVE, partitions taken away are
//     revoked before anything new is taken, and the member rejoins.
func (m *Member) joinOnce(ctx context.Context) error {
	if _, err := m.ensureCoordinator(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	prepare := m.joinPrepare
	m.joinPrepare = false
	m.mu.Unlock()
	if prepare {
		m.onJoinPrepare(ctx)
	}

	m.mu.Lock()
	if m.fatal != nil {
		m.mu.Unlock()
		return m.fatal
	}
	m.st = preparing
	sent := m.gen
	why := m.rejoinWhy
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = m.cfg.group
	req.SessionTimeoutMillis = int32(m.cfg.sessionTimeout.Milliseconds())
	req.RebalanceTimeoutMillis = int32(m.cfg.rebalanceTimeout.Milliseconds())
	req.MemberID = sent.MemberID
	req.InstanceID = m.cfg.instanceID
	req.ProtocolType = ProtocolType
	req.Reason = &why
	protos, err := m.joinProtocolsLocked()
	m.mu.Unlock()
	if err != nil {
		m.mu.Lock()
		m.failLocked(err, "cannot encode the subscription")
		m.mu.Unlock()
		return err
	}
	req.Protocols = protos

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
		return ctx.Err()
	}
	if err != nil {
		m.setUnjoinedIf(sent)
		if call != 0 {
			answer.Err, answer.Why = err.Error(), "JoinGroup failed in transport; retrying after backoff"
			m.emit(answer)
		} else {
			m.emit(clients.Event{Kind: clients.Error, Err: err.Error(), Generation: sent.ID, MemberID: sent.MemberID, Why: "JoinGroup not sent: the coordinator could not be found; retrying after backoff"})
		}
		return err
	}
	resp := raw.(*kmsg.JoinGroupResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		answer.ErrCode, answer.Err, answer.MemberID = resp.ErrorCode, errName(err), resp.MemberID
		answer.Why = "JoinGroup answered " + errName(err)
		m.emit(answer)
		return m.onJoinError(sent, resp, err)
	}
	protocol := ""
	if resp.Protocol != nil {
		protocol = *resp.Protocol
	}
	leader := resp.LeaderID == resp.MemberID
	answer.Kind = clients.Joined
	answer.Generation, answer.MemberID, answer.Leader = resp.Generation, resp.MemberID, leader
	answer.Why = fmt.Sprintf("JoinGroup answered: generation %d, protocol %s, leader %s (rejoin reason: %s)", resp.Generation, protocol, resp.LeaderID, why)
	m.emit(answer)
	if resp.ProtocolType != nil && *resp.ProtocolType != ProtocolType {
		m.mu.Lock()
		m.failLocked(kerr.InconsistentGroupProtocol, fmt.Sprintf("JoinGroup answered protocol type %q, expected %q", *resp.ProtocolType, ProtocolType))
		m.mu.Unlock()
		return m.Err()
	}

	m.mu.Lock()
	if m.st != preparing || m.gen != sent {
		// Left or reset while the join was in flight (Java's
		// UnjoinedGroupException): start over.
		m.mu.Unlock()
		return fmt.Errorf("JoinGroup answered after the member left or reset: %w", errRetryNow)
	}
	m.gen = Generation{ID: resp.Generation, MemberID: resp.MemberID, Protocol: protocol}
	m.st = completing
	// HeartbeatThread.enable → Heartbeat.resetTimeouts: heartbeats
	// resume with fresh session and poll timers.
	now := m.cfg.clock.Now()
	m.sessionStart, m.lastPoll = now, now
	gen := m.gen
	m.mu.Unlock()
	m.wakeHeartbeat()

	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group = m.cfg.group
	sync.Generation = gen.ID
	sync.MemberID = gen.MemberID
	sync.InstanceID = m.cfg.instanceID
	pt := ProtocolType
	sync.ProtocolType = &pt
	sync.Protocol = &gen.Protocol
	if leader {
		plan, err := m.leaderAssign(ctx, gen, resp)
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
			// Java fails the rebalance (the exception leaves poll) and
			// the member rejoins; the coordinator's sync timer removes
			// the members that never get an assignment.
			m.mu.Lock()
			m.emitLocked(clients.Event{Kind: clients.Error, Err: err.Error(), Why: "leader could not compute the assignment; rejoining after backoff"})
			if m.gen == gen {
				m.st = unjoined
			}
			m.requestRejoinLocked("leader assignment failed")
			m.mu.Unlock()
			return err
		}
		for id, b := range plan {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = id, b
			sync.GroupAssignment = append(sync.GroupAssignment, a)
		}
		slices.SortFunc(sync.GroupAssignment, func(a, b kmsg.SyncGroupRequestGroupAssignment) int {
			return compareStrings(a.MemberID, b.MemberID)
		})
	}
	var scall uint64
	raw, err = m.coordRequest(ctx, sync, func() {
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
		m.mu.Lock()
		m.requestRejoinLocked("SyncGroup failed in transport")
		m.mu.Unlock()
		m.setUnjoinedIf(gen)
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
		return m.onSyncError(gen, err)
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
	if m.st != completing || m.gen != gen {
		// Generation data cleared meanwhile: Java raises
		// ILLEGAL_GENERATION to retry at once.
		m.mu.Unlock()
		return fmt.Errorf("SyncGroup answered after a reset: %w", errRetryNow)
	}
	if sresp.Protocol != nil && *sresp.Protocol != gen.Protocol {
		m.failLocked(kerr.InconsistentGroupProtocol, fmt.Sprintf("SyncGroup answered protocol %q, JoinGroup selected %q", *sresp.Protocol, gen.Protocol))
		m.mu.Unlock()
		return m.Err()
	}
	if derr != nil {
		m.emitLocked(clients.Event{Kind: clients.Error, Err: derr.Error(), Why: "SyncGroup assignment does not decode; rejoining after backoff"})
		m.st = unjoined
		m.requestRejoinLocked("undecodable assignment")
		m.mu.Unlock()
		return derr
	}
	if len(sresp.MemberAssignment) == 0 {
		m.emitLocked(clients.Event{Kind: clients.Error,
			Why: "SyncGroup returned no assignment bytes (the leader left this member out; Java's consumer throws IllegalStateException here): taken as an empty assignment"})
	}
	m.st = stable
	m.rejoin = false
	m.rejoinWhy = ""
	m.joinPrepare = true
	m.sessionStart = m.cfg.clock.Now()
	m.mu.Unlock()
	m.wakeHeartbeat()
	return m.onJoinComplete(ctx, gen, fromMap(assigned.Partitions))
}

// setUnjoinedIf is Java's recordRebalanceFailure: a failed round leaves the
// member UNJOINED (heartbeats stop) unless something else changed it.
func (m *Member) setUnjoinedIf(gen Generation) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen == gen && (m.st == preparing || m.st == completing) {
		m.st = unjoined
	}
}

// onJoinError is AbstractCoordinator.JoinGroupResponseHandler for errors.
func (m *Member) onJoinError(sent Generation, resp *kmsg.JoinGroupResponse, err error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	unchanged := m.gen == sent
	if m.st == preparing {
		m.st = unjoined
	}
	ev := clients.Event{Kind: clients.Error, ErrCode: errCode(err), Err: errName(err)}
	switch {
	case errors.Is(err, kerr.MemberIDRequired):
		// KIP-394: the coordinator names our member id; join again
		// with it at once.
		m.gen = Generation{ID: -1, MemberID: resp.MemberID}
		ev.Why = "JoinGroup: MEMBER_ID_REQUIRED, rejoining with the member id the coordinator gave"
		m.emitLocked(ev)
		m.requestRejoinLocked("need to re-join with the given member-id: " + resp.MemberID)
		return fmt.Errorf("%w: %w", err, errRetryNow)
	case errors.Is(err, kerr.UnknownMemberID):
		ev.Why = "JoinGroup: UNKNOWN_MEMBER_ID, rejoining without a member id"
		m.emitLocked(ev)
		if unchanged {
			m.resetLocked(false, "encountered UNKNOWN_MEMBER_ID from JoinGroup response")
			// onJoinPrepare already ran for this rebalance.
		}
		return fmt.Errorf("%w: %w", err, errRetryNow)
	case errors.Is(err, kerr.RebalanceInProgress):
		ev.Why = "JoinGroup: REBALANCE_IN_PROGRESS, retrying at once"
		m.emitLocked(ev)
		return fmt.Errorf("%w: %w", err, errRetryNow)
	case errors.Is(err, kerr.IllegalGeneration):
		ev.Why = "JoinGroup: ILLEGAL_GENERATION, retrying at once"
		m.emitLocked(ev)
		return fmt.Errorf("%w: %w", err, errRetryNow)
	case errors.Is(err, kerr.CoordinatorLoadInProgress):
		ev.Why = "JoinGroup: coordinator still loading the group; retrying after backoff"
		m.emitLocked(ev)
		return err
	case isCoordinatorError(err):
		ev.Why = "JoinGroup: coordinator moved or unavailable; finding it again"
		m.emitLocked(ev)
		m.markCoordinatorUnknownLocked(errName(err) + " from JoinGroup")
		return err
	case errors.Is(err, kerr.FencedInstanceID),
		errors.Is(err, kerr.InconsistentGroupProtocol),
		errors.Is(err, kerr.InvalidSessionTimeout),
		errors.Is(err, kerr.InvalidGroupID),
		errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.GroupMaxSizeReached),
		errors.Is(err, kerr.UnsupportedVersion):
		m.failLocked(err, "JoinGroup: fatal "+errName(err))
		return m.fatal
	}
	// Java raises a KafkaException from poll for anything else; the
	// member itself is not torn down, so it tries again.
	ev.Why = "JoinGroup: unexpected error; retrying after backoff"
	m.emitLocked(ev)
	return err
}

// onSyncError is AbstractCoordinator.SyncGroupResponseHandler for errors:
// every error requests a rejoin.
func (m *Member) onSyncError(sent Generation, err error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	unchanged := m.gen == sent
	if unchanged && m.st == completing {
		m.st = unjoined
	}
	m.requestRejoinLocked(errName(err) + " from SyncGroup")
	ev := clients.Event{Kind: clients.Error, ErrCode: errCode(err), Err: errName(err)}
	switch {
	case errors.Is(err, kerr.RebalanceInProgress):
		ev.Why = "SyncGroup: the group began another rebalance; rejoining at once"
		m.emitLocked(ev)
		return fmt.Errorf("%w: %w", err, errRetryNow)
	case errors.Is(err, kerr.FencedInstanceID), errors.Is(err, kerr.GroupAuthorizationFailed):
		m.failLocked(err, "SyncGroup: fatal "+errName(err))
		return m.fatal
	case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration):
		ev.Why = "SyncGroup: " + errName(err) + "; rejoining at once"
		m.emitLocked(ev)
		if unchanged {
			// The member id stays valid on ILLEGAL_GENERATION.
			m.resetLocked(errors.Is(err, kerr.IllegalGeneration), "encountered "+errName(err)+" from SyncGroup response")
		}
		return fmt.Errorf("%w: %w", err, errRetryNow)
	case isCoordinatorError(err):
		ev.Why = "SyncGroup: coordinator moved or unavailable; finding it again"
		m.emitLocked(ev)
		m.markCoordinatorUnknownLocked(errName(err) + " from SyncGroup")
		return err
	}
	ev.Why = "SyncGroup: unexpected error; retrying after backoff"
	m.emitLocked(ev)
	return err
}

// joinProtocolsLocked builds JoinGroup's protocols, one per assignor in
// preference order, as ConsumerCoordinator.metadata does: the
// subscription carries the owned partitions (empty under EAGER, which
// revoked them) and the generation; the sticky assignors' user data
// carries what they need.
func (m *Member) joinProtocolsLocked() ([]kmsg.JoinGroupRequestProtocol, error) {
	var out []kmsg.JoinGroupRequestProtocol
	for _, a := range m.cfg.assignors {
		sub := assign.Subscription{
			Version:    assign.HighestProtocolVersion,
			Topics:     m.cfg.topics,
			Owned:      map[string][]int32(m.owned.Clone()),
			Generation: m.gen.ID,
		}
		// Both sticky assignors remember what onAssignment last gave
		// them: StickyAssignor the partitions and generation (no user
		// data before its first assignment), CooperativeStickyAssignor
		// the generation only (-1 before the first).
		switch a.Name() {
		case assign.StickyName:
			if m.prevAssigned != nil {
				sub.UserData = assign.EncodeStickyUserData(assign.StickyUserData{Owned: m.prevAssigned, Generation: m.prevGen})
			}
		case assign.CooperativeStickyName:
			sub.UserData = assign.EncodeCooperativeUserData(m.prevGen)
		}
		b, err := assign.EncodeSubscription(sub)
		if err != nil {
			return nil, err
		}
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = a.Name(), b
		out = append(out, p)
	}
	return out, nil
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
	var assignor assign.Assignor
	for _, a := range m.cfg.assignors {
		if a.Name() == gen.Protocol {
			assignor = a
		}
	}
	if assignor == nil {
		return nil, fmt.Errorf("coordinator selected assignor %q, which this member does not have", gen.Protocol)
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
// auto-commit), then give up partitions before JoinGroup. If the
// generation was reset (a heartbeat, commit or sync error), what the
// member owned is lost; otherwise EAGER revokes everything and COOPERATIVE
// only what left the subscription (never anything here: the subscription
// is fixed).
func (m *Member) onJoinPrepare(ctx context.Context) {
	m.mu.Lock()
	valid := m.gen.ID >= 0 && m.gen.MemberID != ""
	m.mu.Unlock()
	if valid && m.cfg.autoCommit {
		if m.cfg.protocol == assign.Eager {
			// maybeMarkPartitionsPendingRevocation: Poll hands out
			// nothing more of partitions about to be revoked, so the
			// position cannot run ahead of the commit below.
			m.mu.Lock()
			m.revoking = true
			m.mu.Unlock()
		}
		// Java keeps retrying the commit for at most the rebalance
		// timeout (joinPrepareTimer) and then joins anyway.
		cctx, cancel := context.WithTimeout(ctx, m.cfg.rebalanceTimeout)
		_ = m.commitPositions(cctx, "auto-commit before rejoining")
		cancel()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.revoking = false
	switch {
	case m.gen.ID < 0 || m.gen.MemberID == "":
		m.loseLocked(m.owned.Clone(), "rejoining after the generation was reset: "+m.rejoinWhy)
	case m.cfg.protocol == assign.Eager:
		m.revokeLocked(m.owned.Clone(), "eager rebalance: revoke everything before JoinGroup ("+m.rejoinWhy+")")
	default:
		var gone clients.Partitions = clients.Partitions{}
		for t, ps := range m.owned {
			if !slices.Contains(m.cfg.topics, t) {
				gone[t] = ps
			}
		}
		m.revokeLocked(gone, "cooperative rebalance: revoke partitions of topics no longer subscribed")
	}
}

// onJoinComplete is ConsumerCoordinator.onJoinComplete: take the new
// assignment. Under COOPERATIVE, what the member owned and was not given
// again is revoked first and the member rejoins at once so that the
// follow-up rebalance can give it away (KIP-429).
func (m *Member) onJoinComplete(ctx context.Context, gen Generation, assigned clients.Partitions) error {
	m.mu.Lock()
	if m.gen != gen {
		m.mu.Unlock()
		return nil
	}
	for t := range assigned {
		if !slices.Contains(m.cfg.topics, t) {
			m.requestRejoinLocked(fmt.Sprintf("assignment includes topic %s, which the member does not subscribe to", t))
			m.mu.Unlock()
			return nil
		}
	}
	revoked := subtract(m.owned, assigned)
	added := subtract(assigned, m.owned)
	if revoked.Count() > 0 {
		why := "cooperative rebalance: revoke what the new assignment takes away"
		if m.cfg.protocol == assign.Eager {
			why = "assignment no longer includes these"
		}
		m.revokeLocked(revoked, why)
		if m.cfg.protocol == assign.Cooperative {
			m.requestRejoinLocked("need to revoke partitions and re-join")
		}
	}
	m.prevAssigned = map[string][]int32(assigned.Clone())
	m.prevGen = gen.ID
	m.assignLocked(added, fmt.Sprintf("SyncGroup of generation %d gave these", gen.ID))
	m.mu.Unlock()
	if added.Count() == 0 {
		return nil
	}
	return m.startConsuming(ctx, gen, added)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
