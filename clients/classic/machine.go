package classic

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/assign"
	"github.com/groupquake/groupquake/clients/internal/groupreq"
)

// The classic member's decisions, without IO or clock: what to send next
// and how to react to each answer and error of FindCoordinator, JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup and OffsetCommit, eager and cooperative
// revocation, static membership, the session and max.poll.interval timers.
// The machine follows Java's AbstractCoordinator and ConsumerCoordinator
// (Kafka 4.x, clients/src/main/java/org/apache/kafka/clients/consumer/
// internals/) rule for rule; every deviation is named where it happens.
//
// The member (member.go, join.go, heartbeat.go, coordinator.go, offsets.go)
// is the IO loop around it: it sends what the machine builds, feeds it the
// answers and the time, and carries out each outcome, in order and under
// the member's lock: an event is reported, a Revoked or Lost event first
// takes the partitions out of kgo's consumption, a wake signals the join or
// heartbeat goroutine. testdata/machine scripts the machine with no
// network (TestMachineScripts).

type state int8

// The member states of AbstractCoordinator.MemberState.
const (
	unjoined state = iota
	preparing
	completing
	stable
)

func (s state) String() string {
	return [...]string{"UNJOINED", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "STABLE"}[s]
}

// machineConfig is what the machine needs of the member's options.
type machineConfig struct {
	group             string
	topics            []string
	instanceID        *string
	assignors         []assign.Assignor
	protocol          assign.Protocol // EAGER or COOPERATIVE, from the assignors
	sessionTimeout    time.Duration
	rebalanceTimeout  time.Duration
	heartbeatInterval time.Duration
	maxPollInterval   time.Duration
	autoCommit        bool
}

func machineConfigOf(c cfg) machineConfig {
	return machineConfig{
		group: c.group, topics: c.topics, instanceID: c.instanceID, assignors: c.assignors, protocol: c.protocol,
		sessionTimeout: c.sessionTimeout, rebalanceTimeout: c.rebalanceTimeout, heartbeatInterval: c.heartbeatInterval,
		maxPollInterval: c.maxPollInterval, autoCommit: c.autoCommit,
	}
}

// machine is the classic member's group state. Invariants it keeps:
//  1. owned changes only through revoke, lose and assign, each change
//     reported as exactly one event naming exactly the partitions
//     concerned, with the generation it happened in and a why.
//  2. A partition is owned only between a SyncGroup of the member's
//     current generation that gave it and the Revoked or Lost event that
//     gave it up; handsOut says no to every other record.
//  3. An answer is applied only to the generation it was sent with
//     (CoordinatorResponseHandler.generationUnchanged): an answer to an
//     older generation is ignored, or retried at once for a join.
//  4. EAGER revokes everything before JoinGroup; COOPERATIVE revokes only
//     what the new assignment takes away, after SyncGroup, and then rejoins
//     (KIP-429).
//  5. FENCED_INSTANCE_ID and the other fatal errors stop the member: it
//     reports them, loses its partitions and sends nothing more.
type machine struct {
	cfg   machineConfig
	st    state
	gen   Generation
	coord int32 // -1: unknown
	owned clients.Partitions
	// prevAssigned and prevGen are the last assignment SyncGroup gave and
	// its generation: the sticky assignors' user data.
	prevAssigned map[string][]int32
	prevGen      int32
	rejoin       bool
	rejoinWhy    string
	joinPrepare  bool // onJoinPrepare runs before the next JoinGroup
	pollExpired  bool // left on max.poll.interval; rejoin waits for Poll
	revoking     bool // eager auto-commit before revocation: Poll hands out nothing
	fatal        error
	lastPoll     time.Time
	sessionStart time.Time // last heartbeat success or coordinator found
}

func newMachine(cfg machineConfig) *machine {
	return &machine{cfg: cfg, gen: noGeneration(), coord: -1, owned: clients.Partitions{}, prevGen: -1}
}

// outcome is what a step of the machine asks the member to do, in order.
type outcome struct {
	// events to report; a Revoked or Lost one takes its partitions out of
	// consumption first, an Assigned one starts a new high-water mark.
	events []clients.Event
	// wakeJoin: the join loop has something to do (a rejoin, a fatal error).
	wakeJoin bool
	// wakeHeartbeat: the heartbeat loop must look at the state again.
	wakeHeartbeat bool
}

func (o *outcome) add(e clients.Event) { o.events = append(o.events, e) }

// ev is an event of the member's current generation.
func (m *machine) ev(kind clients.Kind, why string) clients.Event {
	return clients.Event{Kind: kind, Generation: m.gen.ID, MemberID: m.gen.MemberID, Why: why}
}

func (m *machine) errEv(kind clients.Kind, err error, why string) clients.Event {
	e := m.ev(kind, why)
	e.ErrCode, e.Err = errCode(err), errName(err)
	return e
}

// Membership.

// start is the first join: the member found its coordinator.
func (m *machine) start() outcome {
	var o outcome
	m.requestRejoin(&o, "initial join")
	m.joinPrepare = true
	return o
}

// joinNeeded says whether the join loop has a JoinGroup to send.
func (m *machine) joinNeeded() bool { return m.rejoin && !m.pollExpired && m.fatal == nil }

// stableNow is a completed SyncGroup of the current generation with no
// rejoin asked for since.
func (m *machine) stableNow() bool { return m.st == stable && !m.rejoin }

// requestRejoin is AbstractCoordinator.requestRejoin.
func (m *machine) requestRejoin(o *outcome, why string) {
	if !m.rejoin {
		m.rejoinWhy = why
	}
	m.rejoin = true
	o.wakeJoin = true
}

// reset is AbstractCoordinator.resetStateAndRejoin: the generation is
// dropped (and the member id with it unless keepMemberID, as for
// ILLEGAL_GENERATION, whose member id is still valid) and the next join
// runs onJoinPrepare again, which reports the owned partitions lost.
func (m *machine) reset(o *outcome, keepMemberID bool, why string) {
	m.st = unjoined
	if keepMemberID {
		m.gen = Generation{ID: -1, MemberID: m.gen.MemberID}
	} else {
		m.gen = noGeneration()
	}
	m.joinPrepare = true
	m.requestRejoin(o, why)
	o.wakeHeartbeat = true
}

// fail stops the member for good: Java throws the error from poll and the
// application must close the consumer.
func (m *machine) fail(o *outcome, err error, why string) {
	if m.fatal != nil {
		return
	}
	m.fatal = fmt.Errorf("%w: %w", ErrFatal, err)
	kind := clients.Error
	if errors.Is(err, kerr.FencedInstanceID) {
		kind = clients.Fenced
	}
	o.add(m.errEv(kind, err, why))
	m.lose(o, m.owned.Clone(), "member stopped on a fatal error: "+errName(err))
	m.st = unjoined
	o.wakeHeartbeat = true
	o.wakeJoin = true
}

// rebalanceFailed is Java's recordRebalanceFailure: a failed round leaves
// the member UNJOINED (heartbeats stop) unless something else changed it.
func (m *machine) rebalanceFailed(gen Generation) {
	if m.gen == gen && (m.st == preparing || m.st == completing) {
		m.st = unjoined
	}
}

// Ownership.

func (m *machine) revoke(o *outcome, ps clients.Partitions, why string) {
	m.drop(o, ps, clients.Revoked, why)
}

func (m *machine) lose(o *outcome, ps clients.Partitions, why string) {
	m.drop(o, ps, clients.Lost, why)
}

func (m *machine) drop(o *outcome, ps clients.Partitions, kind clients.Kind, why string) {
	ps = normalize(ps)
	if ps.Count() == 0 {
		return
	}
	m.owned = subtract(m.owned, ps)
	e := m.ev(kind, why)
	e.Partitions = ps
	o.add(e)
}

func (m *machine) assign(o *outcome, ps clients.Partitions, why string) {
	ps = normalize(ps)
	if ps.Count() == 0 {
		return
	}
	m.owned = union(m.owned, ps)
	e := m.ev(clients.Assigned, why)
	e.Partitions = ps
	o.add(e)
}

// handsOut says whether Poll may hand out a record of t-p now: only of a
// partition owned in a generation the member still holds and not pending
// an eager revocation. kgo may still hold a batch fetched before a
// revocation, and a fence (a reset generation) is only reported as a loss
// when the member rejoins, as the Java consumer's poll runs
// onPartitionsLost before it returns records.
func (m *machine) handsOut(t string, p int32) bool {
	return !m.revoking && m.gen.ID >= 0 && slices.Contains(m.owned[t], p)
}

// pollAt records a Poll at now without anything else (the end of a Poll,
// the start of the member).
func (m *machine) pollAt(now time.Time) { m.lastPoll = now }

// polled is a Poll: the max.poll.interval liveness signal; after the
// member left on poll expiry, it makes the member rejoin (as
// KafkaConsumer.poll does).
func (m *machine) polled(now time.Time) outcome {
	var o outcome
	m.lastPoll = now
	if m.pollExpired {
		m.pollExpired = false
		m.requestRejoin(&o, "poll called after the member left on max.poll.interval expiry")
	}
	return o
}

// Coordinator.

// foundCoordinator is a FindCoordinator answer naming node; gen is the
// generation the member held when it asked.
func (m *machine) foundCoordinator(node int32, gen Generation, now time.Time) outcome {
	var o outcome
	m.coord = node
	// Heartbeat.resetSessionTimeout on discovery.
	m.sessionStart = now
	e := clients.Event{Kind: clients.FoundCoordinator, Node: node, Generation: gen.ID, MemberID: gen.MemberID, Why: "FindCoordinator answered"}
	o.add(e)
	o.wakeHeartbeat = true
	return o
}

// findCoordinatorFailed is a FindCoordinator that failed with err:
// GROUP_AUTHORIZATION_FAILED is fatal, anything else is retried after a
// backoff (AbstractCoordinator.ensureCoordinatorReady).
func (m *machine) findCoordinatorFailed(err error) (o outcome, fatal bool) {
	if errors.Is(err, kerr.GroupAuthorizationFailed) {
		m.fail(&o, err, "FindCoordinator: not authorized for the group")
		return o, true
	}
	return o, false
}

// markCoordinatorUnknown is AbstractCoordinator.markCoordinatorUnknown.
func (m *machine) markCoordinatorUnknown(o *outcome, why string) {
	if m.coord < 0 {
		return
	}
	old := m.coord
	m.coord = -1
	e := m.ev(clients.Error, "coordinator marked unknown: "+why)
	e.Node = old
	o.add(e)
}

// isCoordinatorError reports the errors after which Java marks the
// coordinator unknown and looks it up again.
func isCoordinatorError(err error) bool {
	return errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.NotCoordinator)
}

// JoinGroup.

// takeJoinPrepare says whether onJoinPrepare runs before this JoinGroup:
// once per rebalance, before its first JoinGroup, and again only after the
// generation was reset or a round succeeded.
func (m *machine) takeJoinPrepare() bool {
	p := m.joinPrepare
	m.joinPrepare = false
	return p
}

// commitBeforeJoin is the start of ConsumerCoordinator.onJoinPrepare: with
// auto-commit and a valid generation the member commits before it gives
// anything up (maybeAutoCommitOffsetsSync). An EAGER member first marks
// everything pending revocation (maybeMarkPartitionsPendingRevocation), so
// Poll hands out nothing more and the position cannot run ahead of the
// commit.
func (m *machine) commitBeforeJoin() bool {
	valid := m.gen.ID >= 0 && m.gen.MemberID != ""
	if !valid || !m.cfg.autoCommit {
		return false
	}
	if m.cfg.protocol == assign.Eager {
		m.revoking = true
	}
	return true
}

// joinPrepared is the rest of onJoinPrepare, after the commit: if the
// generation was reset (a heartbeat, commit or sync error), what the member
// owned is lost; otherwise EAGER revokes everything and COOPERATIVE only
// what left the subscription (never anything here: the subscription is
// fixed).
func (m *machine) joinPrepared() outcome {
	var o outcome
	m.revoking = false
	switch {
	case m.gen.ID < 0 || m.gen.MemberID == "":
		m.lose(&o, m.owned.Clone(), "rejoining after the generation was reset: "+m.rejoinWhy)
	case m.cfg.protocol == assign.Eager:
		m.revoke(&o, m.owned.Clone(), "eager rebalance: revoke everything before JoinGroup ("+m.rejoinWhy+")")
	default:
		gone := clients.Partitions{}
		for t, ps := range m.owned {
			if !slices.Contains(m.cfg.topics, t) {
				gone[t] = ps
			}
		}
		m.revoke(&o, gone, "cooperative rebalance: revoke partitions of topics no longer subscribed")
	}
	return o
}

// joinRequest builds the JoinGroup to send (PREPARING_REBALANCE from here)
// with the generation it is sent with and the rejoin reason. A member that
// stopped sends nothing (err is its fatal error); a subscription that does
// not encode stops it.
func (m *machine) joinRequest() (req *kmsg.JoinGroupRequest, sent Generation, why string, o outcome, err error) {
	if m.fatal != nil {
		return nil, m.gen, "", o, m.fatal
	}
	m.st = preparing
	sent, why = m.gen, m.rejoinWhy
	req = kmsg.NewPtrJoinGroupRequest()
	req.Group = m.cfg.group
	req.SessionTimeoutMillis = int32(m.cfg.sessionTimeout.Milliseconds())
	req.RebalanceTimeoutMillis = int32(m.cfg.rebalanceTimeout.Milliseconds())
	req.MemberID = sent.MemberID
	req.InstanceID = m.cfg.instanceID
	req.ProtocolType = ProtocolType
	req.Reason = &why
	protos, err := m.joinProtocols()
	if err != nil {
		m.fail(&o, err, "cannot encode the subscription")
		return nil, sent, why, o, err
	}
	req.Protocols = protos
	return req, sent, why, o, nil
}

// joinProtocols builds JoinGroup's protocols, one per assignor in
// preference order, as ConsumerCoordinator.metadata does: the subscription
// carries the owned partitions (empty under EAGER, which revoked them) and
// the generation; the sticky assignors' user data carries what they need.
func (m *machine) joinProtocols() ([]kmsg.JoinGroupRequestProtocol, error) {
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

// onJoinError is AbstractCoordinator.JoinGroupResponseHandler for errors.
// The error it returns wraps errRetryNow when Java rejoins at once, is the
// fatal error when the member stopped, and is err otherwise (retried after
// a backoff).
func (m *machine) onJoinError(sent Generation, resp *kmsg.JoinGroupResponse, err error) (outcome, error) {
	var o outcome
	unchanged := m.gen == sent
	if m.st == preparing {
		m.st = unjoined
	}
	switch {
	case errors.Is(err, kerr.MemberIDRequired):
		// KIP-394: the coordinator names our member id; join again
		// with it at once.
		m.gen = Generation{ID: -1, MemberID: resp.MemberID}
		o.add(m.errEv(clients.Error, err, "JoinGroup: MEMBER_ID_REQUIRED, rejoining with the member id the coordinator gave"))
		m.requestRejoin(&o, "need to re-join with the given member-id: "+resp.MemberID)
		return o, fmt.Errorf("%w: %w", err, errRetryNow)
	case errors.Is(err, kerr.UnknownMemberID):
		o.add(m.errEv(clients.Error, err, "JoinGroup: UNKNOWN_MEMBER_ID, rejoining without a member id"))
		if unchanged {
			m.reset(&o, false, "encountered UNKNOWN_MEMBER_ID from JoinGroup response")
			// onJoinPrepare already ran for this rebalance.
		}
		return o, fmt.Errorf("%w: %w", err, errRetryNow)
	case errors.Is(err, kerr.RebalanceInProgress):
		o.add(m.errEv(clients.Error, err, "JoinGroup: REBALANCE_IN_PROGRESS, retrying at once"))
		return o, fmt.Errorf("%w: %w", err, errRetryNow)
	case errors.Is(err, kerr.IllegalGeneration):
		o.add(m.errEv(clients.Error, err, "JoinGroup: ILLEGAL_GENERATION, retrying at once"))
		return o, fmt.Errorf("%w: %w", err, errRetryNow)
	case errors.Is(err, kerr.CoordinatorLoadInProgress):
		o.add(m.errEv(clients.Error, err, "JoinGroup: coordinator still loading the group; retrying after backoff"))
		return o, err
	case isCoordinatorError(err):
		o.add(m.errEv(clients.Error, err, "JoinGroup: coordinator moved or unavailable; finding it again"))
		m.markCoordinatorUnknown(&o, errName(err)+" from JoinGroup")
		return o, err
	case errors.Is(err, kerr.FencedInstanceID),
		errors.Is(err, kerr.InconsistentGroupProtocol),
		errors.Is(err, kerr.InvalidSessionTimeout),
		errors.Is(err, kerr.InvalidGroupID),
		errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.GroupMaxSizeReached),
		errors.Is(err, kerr.UnsupportedVersion):
		m.fail(&o, err, "JoinGroup: fatal "+errName(err))
		return o, m.fatal
	}
	// Java raises a KafkaException from poll for anything else; the
	// member itself is not torn down, so it tries again.
	o.add(m.errEv(clients.Error, err, "JoinGroup: unexpected error; retrying after backoff"))
	return o, err
}

// onJoined is a JoinGroup answered with a generation: the member is
// COMPLETING_REBALANCE in it, with fresh session and poll timers
// (HeartbeatThread.enable → Heartbeat.resetTimeouts), unless it left or was
// reset while the join was in flight (Java's UnjoinedGroupException: start
// over at once) or the answer names another protocol type (fatal).
func (m *machine) onJoined(sent Generation, resp *kmsg.JoinGroupResponse, now time.Time) (o outcome, gen Generation, err error) {
	if resp.ProtocolType != nil && *resp.ProtocolType != ProtocolType {
		m.fail(&o, kerr.InconsistentGroupProtocol, fmt.Sprintf("JoinGroup answered protocol type %q, expected %q", *resp.ProtocolType, ProtocolType))
		return o, gen, m.fatal
	}
	if m.st != preparing || m.gen != sent {
		return o, gen, fmt.Errorf("JoinGroup answered after the member left or reset: %w", errRetryNow)
	}
	protocol := ""
	if resp.Protocol != nil {
		protocol = *resp.Protocol
	}
	m.gen = Generation{ID: resp.Generation, MemberID: resp.MemberID, Protocol: protocol}
	m.st = completing
	m.sessionStart, m.lastPoll = now, now
	o.wakeHeartbeat = true
	return o, m.gen, nil
}

// SyncGroup.

// leaderAssignor is the assignor the coordinator selected for gen, which a
// leader runs (ConsumerCoordinator.onLeaderElected).
func (m *machine) leaderAssignor(gen Generation) (assign.Assignor, error) {
	for _, a := range m.cfg.assignors {
		if a.Name() == gen.Protocol {
			return a, nil
		}
	}
	return nil, fmt.Errorf("coordinator selected assignor %q, which this member does not have", gen.Protocol)
}

// assignFailed: the leader could not compute the assignment of gen. Java
// fails the rebalance (the exception leaves poll) and the member rejoins;
// the coordinator's sync timer removes the members that never get an
// assignment.
func (m *machine) assignFailed(gen Generation, err error) outcome {
	var o outcome
	e := m.ev(clients.Error, "leader could not compute the assignment; rejoining after backoff")
	e.Err = err.Error()
	o.add(e)
	if m.gen == gen {
		m.st = unjoined
	}
	m.requestRejoin(&o, "leader assignment failed")
	return o
}

// syncRequest builds the SyncGroup of gen; a leader sends plan (member id
// → assignment bytes), sorted by member id.
func (m *machine) syncRequest(gen Generation, plan map[string][]byte) *kmsg.SyncGroupRequest {
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group = m.cfg.group
	sync.Generation = gen.ID
	sync.MemberID = gen.MemberID
	sync.InstanceID = m.cfg.instanceID
	pt := ProtocolType
	sync.ProtocolType = &pt
	sync.Protocol = &gen.Protocol
	for id, b := range plan {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = id, b
		sync.GroupAssignment = append(sync.GroupAssignment, a)
	}
	slices.SortFunc(sync.GroupAssignment, func(a, b kmsg.SyncGroupRequestGroupAssignment) int {
		return cmp.Compare(a.MemberID, b.MemberID)
	})
	return sync
}

// syncFailed: the SyncGroup of gen got no answer; the member rejoins after
// a backoff.
func (m *machine) syncFailed(gen Generation) outcome {
	var o outcome
	m.requestRejoin(&o, "SyncGroup failed in transport")
	m.rebalanceFailed(gen)
	return o
}

// onSyncError is AbstractCoordinator.SyncGroupResponseHandler for errors:
// every error requests a rejoin. The error it returns is as onJoinError's.
func (m *machine) onSyncError(sent Generation, err error) (outcome, error) {
	var o outcome
	unchanged := m.gen == sent
	if unchanged && m.st == completing {
		m.st = unjoined
	}
	m.requestRejoin(&o, errName(err)+" from SyncGroup")
	switch {
	case errors.Is(err, kerr.RebalanceInProgress):
		o.add(m.errEv(clients.Error, err, "SyncGroup: the group began another rebalance; rejoining at once"))
		return o, fmt.Errorf("%w: %w", err, errRetryNow)
	case errors.Is(err, kerr.FencedInstanceID), errors.Is(err, kerr.GroupAuthorizationFailed):
		m.fail(&o, err, "SyncGroup: fatal "+errName(err))
		return o, m.fatal
	case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration):
		o.add(m.errEv(clients.Error, err, "SyncGroup: "+errName(err)+"; rejoining at once"))
		if unchanged {
			// The member id stays valid on ILLEGAL_GENERATION.
			m.reset(&o, errors.Is(err, kerr.IllegalGeneration), "encountered "+errName(err)+" from SyncGroup response")
		}
		return o, fmt.Errorf("%w: %w", err, errRetryNow)
	case isCoordinatorError(err):
		o.add(m.errEv(clients.Error, err, "SyncGroup: coordinator moved or unavailable; finding it again"))
		m.markCoordinatorUnknown(&o, errName(err)+" from SyncGroup")
		return o, err
	}
	o.add(m.errEv(clients.Error, err, "SyncGroup: unexpected error; retrying after backoff"))
	return o, err
}

// onSynced is a SyncGroup of gen answered with an assignment (derr: it does
// not decode): the member is STABLE, unless the generation was cleared
// meanwhile (Java raises ILLEGAL_GENERATION to retry at once) or the answer
// names another protocol than the JoinGroup selected (fatal). Its error is
// as onJoinError's; without one, joinComplete takes the assignment.
func (m *machine) onSynced(gen Generation, resp *kmsg.SyncGroupResponse, derr error, now time.Time) (outcome, error) {
	var o outcome
	if m.st != completing || m.gen != gen {
		// Generation data cleared meanwhile: Java raises
		// ILLEGAL_GENERATION to retry at once.
		return o, fmt.Errorf("SyncGroup answered after a reset: %w", errRetryNow)
	}
	if resp.Protocol != nil && *resp.Protocol != gen.Protocol {
		m.fail(&o, kerr.InconsistentGroupProtocol, fmt.Sprintf("SyncGroup answered protocol %q, JoinGroup selected %q", *resp.Protocol, gen.Protocol))
		return o, m.fatal
	}
	if derr != nil {
		e := m.ev(clients.Error, "SyncGroup assignment does not decode; rejoining after backoff")
		e.Err = derr.Error()
		o.add(e)
		m.st = unjoined
		m.requestRejoin(&o, "undecodable assignment")
		return o, derr
	}
	if len(resp.MemberAssignment) == 0 {
		o.add(m.ev(clients.Error,
			"SyncGroup returned no assignment bytes (the leader left this member out; Java's consumer throws IllegalStateException here): taken as an empty assignment"))
	}
	m.st = stable
	m.rejoin = false
	m.rejoinWhy = ""
	m.joinPrepare = true
	m.sessionStart = now
	o.wakeHeartbeat = true
	return o, nil
}

// joinComplete is ConsumerCoordinator.onJoinComplete: take the assignment
// of gen. Under COOPERATIVE, what the member owned and was not given again
// is revoked first and the member rejoins at once so that the follow-up
// rebalance can give it away (KIP-429). added is what the member must start
// consuming.
func (m *machine) joinComplete(gen Generation, assigned clients.Partitions) (o outcome, added clients.Partitions) {
	if m.gen != gen {
		return o, nil
	}
	for t := range assigned {
		if !slices.Contains(m.cfg.topics, t) {
			m.requestRejoin(&o, fmt.Sprintf("assignment includes topic %s, which the member does not subscribe to", t))
			return o, nil
		}
	}
	revoked := subtract(m.owned, assigned)
	added = subtract(assigned, m.owned)
	if revoked.Count() > 0 {
		why := "cooperative rebalance: revoke what the new assignment takes away"
		if m.cfg.protocol == assign.Eager {
			why = "assignment no longer includes these"
		}
		m.revoke(&o, revoked, why)
		if m.cfg.protocol == assign.Cooperative {
			m.requestRejoin(&o, "need to revoke partitions and re-join")
		}
	}
	m.prevAssigned = map[string][]int32(assigned.Clone())
	m.prevGen = gen.ID
	m.assign(&o, added, fmt.Sprintf("SyncGroup of generation %d gave these", gen.ID))
	return o, added
}

// consumes says whether the partitions added in gen are still to be
// consumed: the member holds gen and has not stopped.
func (m *machine) consumes(gen Generation) bool { return m.gen == gen && m.fatal == nil }

// Heartbeat.

// tick is what the heartbeat thread does next.
type tick int8

const (
	tickIdle  tick = iota // not joined: wait until woken
	tickFind              // find the coordinator
	tickLeave             // max.poll.interval expired: leave (leaveOnPollExpiry)
	tickWait              // wait until the next heartbeat is due
	tickSend              // send a heartbeat now
)

// heartbeatTick is AbstractCoordinator.HeartbeatThread's decision at now,
// with the next heartbeat due at nextSend. It heartbeats only while the
// member has joined (COMPLETING_REBALANCE or STABLE), and it runs the two
// client-side timers:
//   - session: no successful heartbeat for session.timeout.ms means the
//     coordinator is probably gone, so it is marked unknown and looked up
//     again. The member keeps its partitions: only the coordinator can say
//     the membership ended (UNKNOWN_MEMBER_ID on the next request).
//   - poll: no Poll for max.poll.interval.ms makes the member leave the
//     group on its own (maybeLeaveGroup); it rejoins on the next Poll.
func (m *machine) heartbeatTick(now, nextSend time.Time) (tick, time.Duration, outcome) {
	var o outcome
	joined := (m.st == completing || m.st == stable) && m.fatal == nil
	switch {
	case !joined:
		return tickIdle, 0, o
	case m.coord < 0:
		return tickFind, 0, o
	case now.Sub(m.sessionStart) > m.cfg.sessionTimeout:
		m.markCoordinatorUnknown(&o, fmt.Sprintf("no successful heartbeat for the session timeout (%v)", m.cfg.sessionTimeout))
		m.sessionStart = now
		return tickFind, 0, o
	case now.Sub(m.lastPoll) > m.cfg.maxPollInterval:
		return tickLeave, 0, o
	case now.Before(nextSend):
		return tickWait, nextSend.Sub(now), o
	}
	return tickSend, 0, o
}

// leaveOnPollExpiry is the poll-timeout branch of HeartbeatThread.run
// followed by maybeLeaveGroup: report, give up the assignment and drop the
// generation; a dynamic member that had joined sends LeaveGroup with gen to
// coord (leave), a static one keeps its membership until its session ends.
// Java reports the partitions lost on the next poll; the member reports
// them now, when the coordinator may already hand them to someone else.
func (m *machine) leaveOnPollExpiry() (o outcome, leave bool, gen Generation, coord int32, why string) {
	why = fmt.Sprintf("consumer poll timeout has expired: no Poll for more than max.poll.interval (%v)", m.cfg.maxPollInterval)
	o.add(m.ev(clients.SessionExpired, why))
	m.lose(&o, m.owned.Clone(), "left the group on max.poll.interval expiry")
	gen, coord, st := m.gen, m.coord, m.st
	m.pollExpired = true
	m.gen = noGeneration()
	m.st = unjoined
	m.joinPrepare = true
	m.rejoin = true
	m.rejoinWhy = "rejoining after leaving on max.poll.interval expiry"
	leave = m.cfg.instanceID == nil && coord >= 0 && st != unjoined && gen.MemberID != ""
	return o, leave, gen, coord, why
}

// heartbeatRequest builds the Heartbeat of gen.
func (m *machine) heartbeatRequest(gen Generation) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group = m.cfg.group
	req.Generation = gen.ID
	req.MemberID = gen.MemberID
	req.InstanceID = m.cfg.instanceID
	return req
}

// onHeartbeat applies a Heartbeat answer as
// AbstractCoordinator.HeartbeatResponseHandler does; sent is the generation
// the heartbeat carried, answer the event that reports the answer (the
// caller set its call; it goes out first, with a why). normal says whether
// the next heartbeat goes out after the interval (false: after the
// backoff).
func (m *machine) onHeartbeat(sent Generation, resp *kmsg.HeartbeatResponse, answer clients.Event, now time.Time) (o outcome, normal bool) {
	err := kerr.ErrorForCode(resp.ErrorCode)
	unchanged := m.gen == sent
	answer.ErrCode = resp.ErrorCode
	if err != nil {
		answer.Err = errName(err)
	}
	report := func(why string) {
		answer.Why = why
		o.add(answer)
	}
	switch {
	case err == nil:
		m.sessionStart = now
		report("heartbeat accepted")
		return o, true
	case isCoordinatorError(err):
		report("coordinator moved or unavailable; finding it again")
		m.markCoordinatorUnknown(&o, errName(err)+" from Heartbeat")
		return o, false
	case errors.Is(err, kerr.RebalanceInProgress):
		// Heartbeating on during a rebalance keeps the session alive.
		// Java rejoins whenever it is STABLE when the answer arrives;
		// the member also requires the generation the heartbeat was
		// sent with, so that an answer overtaken by a whole join and
		// sync does not start a rebalance nobody asked for.
		m.sessionStart = now
		if m.st == stable && unchanged {
			report("group is rebalancing: rejoin")
			m.requestRejoin(&o, "group is already rebalancing")
		} else {
			report("group is rebalancing; ignored while the member is rebalancing too")
		}
		return o, true
	case errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.FencedInstanceID):
		if !unchanged {
			report("stale heartbeat answer for an older generation; ignored")
			return o, true
		}
		report("coordinator no longer knows this generation: resetting and rejoining")
		if errors.Is(err, kerr.FencedInstanceID) {
			m.fail(&o, err, "Heartbeat: group instance id fenced by another instance")
			return o, true
		}
		// The member id stays valid on ILLEGAL_GENERATION.
		m.reset(&o, errors.Is(err, kerr.IllegalGeneration), "encountered "+errName(err)+" from Heartbeat response")
		return o, true
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		o.add(answer)
		m.fail(&o, err, "Heartbeat: not authorized for the group")
		return o, true
	}
	report("unexpected heartbeat error; retrying after backoff")
	return o, false
}

// OffsetCommit.

// commitGate decides whether a generation-scoped commit (the member's own
// or the application's Commit) may go out, and with which generation.
// Outside a stable generation nothing is sent: REBALANCE_IN_PROGRESS while
// a rebalance runs (Java's RebalanceInProgressException), ErrNotInGroup
// otherwise (CommitFailedException); refused is the event that reports it.
func (m *machine) commitGate(offsets map[string]map[int32]int64, app bool) (gen Generation, refused *clients.Event, err error) {
	gen = m.gen
	switch {
	case m.fatal != nil:
		return gen, nil, m.fatal
	case m.st == preparing || m.st == completing:
		e := clients.Event{Kind: clients.CommitFailed, ErrCode: kerr.RebalanceInProgress.Code, Err: kerr.RebalanceInProgress.Message, App: app,
			Generation: gen.ID, MemberID: gen.MemberID, Offsets: offsets, Why: "commit refused locally: a rebalance is in progress"}
		return gen, &e, fmt.Errorf("commit: %w", kerr.RebalanceInProgress)
	case m.st != stable:
		e := clients.Event{Kind: clients.CommitFailed, Err: ErrNotInGroup.Error(), Generation: gen.ID, MemberID: gen.MemberID, Offsets: offsets, App: app,
			Why: "commit refused locally: the member is not part of an active generation"}
		return gen, &e, fmt.Errorf("commit: %w", ErrNotInGroup)
	}
	return gen, nil, nil
}

// commitRequest builds the OffsetCommit of offsets with gen; the instance
// id goes along when the member id is set.
func (m *machine) commitRequest(gen Generation, offsets map[string]map[int32]int64) *kmsg.OffsetCommitRequest {
	var instanceID *string
	if gen.MemberID != "" {
		instanceID = m.cfg.instanceID
	}
	return groupreq.OffsetCommit(m.cfg.group, gen.MemberID, instanceID, gen.ID, offsets, nil)
}

// commitAnswer reads an OffsetCommit answer to offsets: landed are the
// offsets the coordinator took, failed the partitions it refused by error
// name, first the first of those errors, and retry whether Java retries the
// commit (coordinator moves and loads, timeouts).
func commitAnswer(resp *kmsg.OffsetCommitResponse, offsets map[string]map[int32]int64) (landed map[string]map[int32]int64, failed map[string]map[int32]string, first error, retry bool) {
	landed = map[string]map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			perr := kerr.ErrorForCode(p.ErrorCode)
			if perr == nil {
				setOffset(landed, t.Topic, p.Partition, offsets[t.Topic][p.Partition])
				continue
			}
			if failed == nil {
				failed = map[string]map[int32]string{}
			}
			if failed[t.Topic] == nil {
				failed[t.Topic] = map[int32]string{}
			}
			failed[t.Topic][p.Partition] = errName(perr)
			if first == nil {
				first = perr
			}
			if isCoordinatorError(perr) || errors.Is(perr, kerr.CoordinatorLoadInProgress) || errors.Is(perr, kerr.RequestTimedOut) {
				retry = true
			}
		}
	}
	return landed, failed, first, retry
}

// onCommitError is the membership part of ConsumerCoordinator
// OffsetCommitResponseHandler, for the member's own commits sent with gen
// sent. After ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID Java resets the
// generation and fails with CommitFailedException, unless the member has
// meanwhile moved on to a new generation and is rebalancing: then the
// commit fails with REBALANCE_IN_PROGRESS and nothing is reset (the error
// it returns).
func (m *machine) onCommitError(sent Generation, err error) (outcome, error) {
	var o outcome
	switch {
	case errors.Is(err, kerr.FencedInstanceID):
		m.fail(&o, err, "OffsetCommit: group instance id fenced by another instance")
	case errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.UnknownMemberID):
		if m.gen != sent && m.st == preparing {
			return o, fmt.Errorf("commit: %w (the member already joined a newer rebalance; answered %w)", kerr.RebalanceInProgress, err)
		}
		m.reset(&o, errors.Is(err, kerr.IllegalGeneration), "encountered "+errName(err)+" from OffsetCommit response")
	}
	return o, nil
}

// Close.

// commitOnClose: with auto-commit, a stable member commits before it gives
// its assignment up.
func (m *machine) commitOnClose() bool { return m.fatal == nil && m.st == stable && m.cfg.autoCommit }

// leavePrepare is ConsumerCoordinator.onLeavePrepare and maybeLeaveGroup:
// what the member owns is lost when the generation is gone or a rebalance
// is in progress, revoked otherwise; a dynamic member that joined sends
// LeaveGroup with gen to coord (leave). A static member sends none
// (KIP-345): its membership lasts until its session times out, so a restart
// within the session keeps the assignment.
func (m *machine) leavePrepare() (o outcome, leave bool, gen Generation, coord int32) {
	if m.gen.ID == -1 || m.gen.MemberID == "" || m.fatal != nil || m.st == preparing || m.st == completing {
		m.lose(&o, m.owned.Clone(), "closing without a valid generation")
	} else {
		m.revoke(&o, m.owned.Clone(), "closing: giving up the assignment before leaving")
	}
	gen, coord = m.gen, m.coord
	leave = m.cfg.instanceID == nil && coord >= 0 && m.st != unjoined && gen.MemberID != "" && m.fatal == nil
	return o, leave, gen, coord
}

// leaveRequest builds the LeaveGroup of gen.
func (m *machine) leaveRequest(gen Generation, why string) *kmsg.LeaveGroupRequest {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = m.cfg.group
	req.MemberID = gen.MemberID
	mi := kmsg.NewLeaveGroupRequestMember()
	mi.MemberID = gen.MemberID
	mi.InstanceID = m.cfg.instanceID
	mi.Reason = &why
	req.Members = append(req.Members, mi)
	return req
}

// closed: the member left; nothing of its generation remains.
func (m *machine) closed() { m.gen, m.st = noGeneration(), unjoined }

// Partitions arithmetic.

// normalize returns sorted partitions without empty topics.
func normalize(p clients.Partitions) clients.Partitions {
	out := clients.Partitions{}
	for t, ps := range p {
		if len(ps) > 0 {
			s := slices.Clone(ps)
			slices.Sort(s)
			out[t] = slices.Compact(s)
		}
	}
	return out
}

func subtract(a, b clients.Partitions) clients.Partitions {
	return normalize(a.Minus(b))
}

func union(a, b clients.Partitions) clients.Partitions {
	out := a.Clone()
	for t, ps := range b {
		out[t] = append(out[t], ps...)
	}
	return normalize(out)
}
