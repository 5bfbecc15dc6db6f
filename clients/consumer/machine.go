package consumer

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// state is the member's state, named after Java's MemberState
// (clients/.../consumer/internals/MemberState.java). PREPARE_LEAVING has no
// counterpart: our leave runs its release synchronously before the leave
// heartbeat is built.
type state int8

const (
	stateUnsubscribed state = iota
	stateJoining
	stateReconciling
	stateAcknowledging
	stateStable
	stateFenced
	stateLeaving
	stateStale
	stateFatal
)

func (s state) String() string {
	switch s {
	case stateUnsubscribed:
		return "UNSUBSCRIBED"
	case stateJoining:
		return "JOINING"
	case stateReconciling:
		return "RECONCILING"
	case stateAcknowledging:
		return "ACKNOWLEDGING"
	case stateStable:
		return "STABLE"
	case stateFenced:
		return "FENCED"
	case stateLeaving:
		return "LEAVING"
	case stateStale:
		return "STALE"
	case stateFatal:
		return "FATAL"
	}
	return fmt.Sprintf("state(%d)", int8(s))
}

// Epochs a ConsumerGroupHeartbeat carries besides real ones
// (ConsumerGroupHeartbeatRequest.JOIN_GROUP_MEMBER_EPOCH and friends).
const (
	joinEpoch        int32 = 0
	leaveEpoch       int32 = -1
	staticLeaveEpoch int32 = -2
)

type topicID = [16]byte

// assignment is Java's AbstractMembershipManager.LocalAssignment: partitions
// by topic id plus a local epoch that changes whenever the broker sends a
// different target. The local epoch is never sent; it exists so that the
// heartbeat after every reconciliation carries the owned partitions again,
// which is the acknowledgement (ConsumerHeartbeatRequestManager.HeartbeatState).
type assignment struct {
	localEpoch int64 // -1: none
	parts      map[topicID][]int32
}

var noAssignment = assignment{localEpoch: -1}

func (a assignment) none() bool { return a.localEpoch == -1 }

func (a assignment) equal(b assignment) bool {
	return a.localEpoch == b.localEpoch && samePartitions(a.parts, b.parts)
}

func samePartitions(a, b map[topicID][]int32) bool {
	return maps.EqualFunc(a, b, slices.Equal[[]int32])
}

// sentFields is Java's HeartbeatState.SentFields: what the last heartbeat
// carried, so that the next one sends only what changed. Any error resets it
// and the next heartbeat is full again.
type sentFields struct {
	rebalanceTimeoutMs int32
	topics             []string // nil: never sent
	regex              *string
	assignor           *string
	local              *assignment
}

func (s *sentFields) reset() { *s = sentFields{rebalanceTimeoutMs: -1} }

// machineConfig is what the machine needs from the member's options.
type machineConfig struct {
	group      string
	memberID   string
	instanceID string
	rack       string
	topics     []string // sorted; nil with a regex
	regex      string
	useRegex   bool
	assignor   string
	// rebalanceTimeoutMs is sent as RebalanceTimeoutMs; Java sends
	// max.poll.interval.ms there, we send the RebalanceTimeout option.
	rebalanceTimeoutMs int32
}

// outcome is what a machine step asks the member to do and to report. The
// machine itself does no IO: the member turns the outcome into kgo calls
// and Hooks events.
type outcome struct {
	events []clients.Event
	// loseAll: drop every owned partition as lost (fenced, fatal, stale),
	// reported at lostAt, the epoch they were held at.
	loseAll string
	lostAt  int32
	// backoff: wait before the next heartbeat (retriable error).
	backoff bool
	// leaveDone: a leave heartbeat was answered.
	leaveDone bool
}

func (o *outcome) add(e clients.Event) { o.events = append(o.events, e) }

// plan is one reconciliation: AbstractMembershipManager.maybeReconcile
// computed, to be carried out by the member (commit, revoke, assign) and
// then confirmed with machine.finish.
type plan struct {
	seq      uint64
	epoch    int32
	target   assignment
	assigned clients.Partitions
	revoke   clients.Partitions
	add      clients.Partitions
}

// machine is the KIP-848 member without IO or clock: heartbeat requests out,
// responses in, reconciliation plans out, their completion in. It follows
// Java's AbstractMembershipManager / ConsumerMembershipManager and
// ConsumerHeartbeatRequestManager (Kafka 4.x) rule for rule; every
// deviation is named where it happens.
type machine struct {
	cfg   machineConfig
	state state
	epoch int32
	// current is what the member owns (reconciled); target the latest
	// assignment the broker sent.
	current assignment
	target  assignment
	// names resolves topic ids; the member fills it from metadata.
	names     map[topicID]string
	nextLocal int64
	sent      sentFields
	// seq numbers heartbeats; inflight is the one whose answer counts
	// (0: none). An answer to anything else is stale or repeated.
	seq      uint64
	inflight uint64
	// planSeq numbers plans; planning is set while one is carried out;
	// rejoined records that the member rejoined meanwhile (Java's
	// rejoinedWhileReconciliationInProgress).
	planSeq  uint64
	planning bool
	rejoined bool
	// interval is the broker's heartbeat interval (0 until it says).
	interval time.Duration
	// fatal is the error that made the member FATAL.
	fatal error
	// staleLeave: the leave heartbeat being sent was caused by the poll
	// timer, so the member goes STALE, not UNSUBSCRIBED (Java's
	// isPollTimerExpired).
	staleLeave bool
	// fences counts consecutive fences of epoch-0 rejoins, to back off
	// where Java would spin (see onError).
	fences int
	// joins counts joins: a commit is retried with a newer epoch only
	// within the membership it was made in; joinWhy says why the last
	// join happened.
	joins   int
	joinWhy string
}

func newMachine(cfg machineConfig) *machine {
	m := &machine{cfg: cfg, state: stateUnsubscribed, current: noAssignment, target: noAssignment, names: map[topicID]string{}}
	m.sent.reset()
	return m
}

func (m *machine) ev(kind clients.Kind, why string) clients.Event {
	return clients.Event{Kind: kind, MemberEpoch: m.epoch, GroupEpoch: -1, Generation: -1, Why: why}
}

// join is AbstractMembershipManager.transitionToJoining: epoch 0, no target,
// the next heartbeat is full and goes out at once.
func (m *machine) join(why string) {
	if m.state == stateFatal {
		return
	}
	m.joinWhy = why
	if m.planning {
		m.rejoined = true
	}
	m.epoch = joinEpoch
	m.state = stateJoining
	m.target = noAssignment
	m.joins++
}

// heartbeatNow is AbstractMembershipManager.shouldHeartbeatNow.
func (m *machine) heartbeatNow() bool {
	return m.state == stateJoining || m.state == stateAcknowledging || m.state == stateLeaving
}

// skipHeartbeat is AbstractMembershipManager.shouldSkipHeartbeat.
func (m *machine) skipHeartbeat() bool {
	switch m.state {
	case stateUnsubscribed, stateFatal, stateStale, stateFenced:
		return true
	}
	return false
}

func (m *machine) inGroup() bool {
	switch m.state {
	case stateUnsubscribed, stateFenced, stateFatal, stateStale:
		return false
	}
	return true
}

// request builds the next heartbeat as HeartbeatState.buildRequestData does
// (send everything when JOINING, otherwise only what changed since the last
// heartbeat; InstanceId always) and then applies
// onHeartbeatRequestGenerated: ACKNOWLEDGING moves on, LEAVING becomes
// UNSUBSCRIBED or STALE. It returns the request's sequence number, which
// its answer must carry.
func (m *machine) request() (*kmsg.ConsumerGroupHeartbeatRequest, uint64) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group = m.cfg.group
	req.MemberID = m.cfg.memberID
	req.MemberEpoch = m.epoch
	if m.cfg.instanceID != "" {
		req.InstanceID = new(m.cfg.instanceID)
	}
	all := m.state == stateJoining
	req.RebalanceTimeoutMillis = -1
	if all || m.sent.rebalanceTimeoutMs != m.cfg.rebalanceTimeoutMs {
		req.RebalanceTimeoutMillis = m.cfg.rebalanceTimeoutMs
		m.sent.rebalanceTimeoutMs = m.cfg.rebalanceTimeoutMs
	}
	if !m.cfg.useRegex && (all || m.sent.topics == nil || !slices.Equal(m.sent.topics, m.cfg.topics)) {
		req.SubscribedTopicNames = append([]string{}, m.cfg.topics...)
		m.sent.topics = req.SubscribedTopicNames
	}
	if m.cfg.useRegex {
		// Java sends the names too (the subscription, empty for a
		// pattern) when joining: epoch 0 needs names or regex non-null.
		if all {
			req.SubscribedTopicNames = []string{}
		}
		if all || m.sent.regex == nil || *m.sent.regex != m.cfg.regex {
			req.SubscribedTopicRegex = new(m.cfg.regex)
			m.sent.regex = req.SubscribedTopicRegex
		}
	}
	if m.cfg.assignor != "" && (all || m.sent.assignor == nil || *m.sent.assignor != m.cfg.assignor) {
		req.ServerAssignor = new(m.cfg.assignor)
		m.sent.assignor = req.ServerAssignor
	}
	if all || m.sent.local == nil || !m.sent.local.equal(m.current) {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, id := range sortedIDs(m.current.parts) {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.TopicID = id
			t.Partitions = slices.Clone(m.current.parts[id])
			req.Topics = append(req.Topics, t)
		}
		cur := m.current
		m.sent.local = &cur
	}
	if all && m.cfg.rack != "" {
		req.RackID = new(m.cfg.rack)
	}
	m.seq++
	m.inflight = m.seq

	switch m.state {
	case stateAcknowledging:
		if m.reconciled() {
			m.state = stateStable
		} else {
			m.state = stateReconciling
		}
	case stateLeaving:
		if m.staleLeave {
			m.state = stateStale
		} else {
			m.state = stateUnsubscribed
		}
	}
	return req, m.seq
}

// reconciled is AbstractMembershipManager.targetAssignmentReconciled.
func (m *machine) reconciled() bool { return m.current.equal(m.target) }

// onError handles a heartbeat that got no answer (transport error, timeout).
// The broker may or may not have seen it, so the next heartbeat is full
// (AbstractHeartbeatRequestManager.onFailure → resetHeartbeatState); with
// its old epoch and owned partitions the broker accepts it even if the lost
// answer had moved the member on (the previousMemberEpoch rule, KIP-848).
func (m *machine) onError(seq uint64, err error) outcome {
	var o outcome
	if seq != m.inflight {
		return o
	}
	m.inflight = 0
	m.sent.reset()
	e := m.ev(clients.Heartbeat, "heartbeat got no answer; the next one is a full request")
	e.Err = err.Error()
	o.add(e)
	o.backoff = true
	if m.state == stateUnsubscribed || m.state == stateStale {
		o.leaveDone = true
	}
	return o
}

// onResponse handles a heartbeat answer. An answer to anything but the
// heartbeat in flight is dropped: it is stale or repeated, and acting on it
// could resurrect an assignment the member has moved past.
func (m *machine) onResponse(seq uint64, resp *kmsg.ConsumerGroupHeartbeatResponse) outcome {
	var o outcome
	if seq != m.inflight {
		return o
	}
	m.inflight = 0
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return m.onErrorResponse(resp, err)
	}
	if hb := time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond; hb > 0 {
		m.interval = hb
	}
	m.fences = 0
	// AbstractMembershipManager.onHeartbeatSuccess, in its order. An
	// answer to a heartbeat sent before the member chose to leave is
	// ignored: taking its epoch would send the leave heartbeat with it,
	// a plain heartbeat instead of a leave.
	if m.state == stateLeaving {
		return o
	}
	if resp.MemberEpoch < 0 || m.state == stateUnsubscribed || m.state == stateStale {
		if m.state == stateUnsubscribed || m.state == stateStale {
			o.leaveDone = true
		}
		return o
	}
	if !m.inGroup() {
		return o
	}
	wasJoining := m.state == stateJoining
	old := m.epoch
	m.epoch = resp.MemberEpoch
	if wasJoining {
		o.add(m.ev(clients.Joined, fmt.Sprintf("%s: joined with epoch 0, the coordinator gave member epoch %d", m.joinWhy, m.epoch)))
	}
	var assigned *clients.Partitions
	if resp.Assignment != nil {
		parts := map[topicID][]int32{}
		for _, t := range resp.Assignment.Topics {
			ps := slices.Clone(t.Partitions)
			slices.Sort(ps)
			parts[t.TopicID] = slices.Compact(append(parts[t.TopicID], ps...))
		}
		m.processAssignment(parts)
		p := m.partitionsByName(parts)
		assigned = &p
	}
	if assigned != nil || (old != m.epoch && !wasJoining) {
		why := fmt.Sprintf("member epoch %d → %d", old, m.epoch)
		if old == m.epoch {
			why = fmt.Sprintf("member epoch %d unchanged", m.epoch)
		}
		if assigned != nil {
			why += fmt.Sprintf(", target assignment %v (state %s)", *assigned, m.state)
		}
		e := m.ev(clients.Heartbeat, why)
		if assigned != nil {
			e.Partitions = *assigned
		}
		o.add(e)
	}
	return o
}

// processAssignment is AbstractMembershipManager.processAssignmentReceived.
func (m *machine) processAssignment(parts map[topicID][]int32) {
	switch m.state {
	case stateJoining, stateReconciling, stateAcknowledging, stateStable:
	default:
		return // Java's canHandleNewAssignment
	}
	if m.target.none() || !samePartitions(m.target.parts, parts) {
		m.nextLocal++
		m.target = assignment{localEpoch: m.nextLocal, parts: parts}
	}
	if !m.reconciled() {
		m.state = stateReconciling
	} else if m.state == stateReconciling || m.state == stateJoining {
		m.state = stateStable
	}
}

// onErrorResponse follows AbstractHeartbeatRequestManager.onErrorResponse and
// ConsumerHeartbeatRequestManager.handleSpecificExceptionInResponse.
func (m *machine) onErrorResponse(resp *kmsg.ConsumerGroupHeartbeatResponse, err error) outcome {
	var o outcome
	m.sent.reset()
	msg := ""
	if resp.ErrorMessage != nil {
		msg = ": " + *resp.ErrorMessage
	}
	report := func(kind clients.Kind, why string) {
		e := m.ev(kind, why)
		e.ErrCode = resp.ErrorCode
		e.Err = kerrName(err)
		o.add(e)
	}
	switch {
	case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorNotAvailable),
		errors.Is(err, kerr.CoordinatorLoadInProgress):
		report(clients.Heartbeat, "coordinator moved, unavailable or loading; retry after a backoff"+msg)
		o.backoff = true
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		// Surfaced, but the member keeps its state so that it
		// recovers once the ACLs are fixed.
		report(clients.Error, "heartbeat: not authorized for a subscribed topic; the member stays as it is"+msg)
		o.backoff = true
	case errors.Is(err, kerr.FencedMemberEpoch), errors.Is(err, kerr.UnknownMemberID):
		if m.state == stateUnsubscribed || m.state == stateStale {
			o.leaveDone = true
			return o
		}
		// transitionToFenced: lose everything, keep the member id,
		// rejoin with epoch 0 at once. Java resets the backoff here;
		// when the rejoin itself is fenced (Kafka before 4.2 keeps
		// fencing epoch 0 from a known id until the session expires,
		// KAFKA-19233) Java would spin, so repeated fences back off.
		fencedAt := m.epoch
		report(clients.Fenced, fmt.Sprintf("coordinator fenced member epoch %d (%s); dropping everything as lost and rejoining with epoch 0 and the same member id%s", fencedAt, kerrName(err), msg))
		if fencedAt == joinEpoch {
			m.fences++
		}
		o.backoff = m.fences > 0
		m.state = stateFenced
		m.epoch = joinEpoch
		m.current = noAssignment
		o.loseAll = fmt.Sprintf("fenced at member epoch %d (%s)", fencedAt, kerrName(err))
		o.lostAt = fencedAt
		m.join(fmt.Sprintf("rejoin after %s at epoch %d", kerrName(err), fencedAt))
	case errors.Is(err, kerr.GroupIDNotFound) && (m.state == stateUnsubscribed || m.state == stateStale):
		o.leaveDone = true
	default:
		// Fatal, as Java: GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST,
		// GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR,
		// UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID,
		// UNSUPPORTED_VERSION, INVALID_REGULAR_EXPRESSION,
		// GROUP_ID_NOT_FOUND and anything unexpected
		// (AbstractHeartbeatRequestManager.handleFatalFailure).
		prev := m.state
		o.lostAt = m.epoch
		m.fatal = fmt.Errorf("%w: consumer group %s: heartbeat failed fatally: %w%s", clients.ErrStopped, m.cfg.group, err, msg)
		m.state = stateFatal
		report(clients.Error, fmt.Sprintf("fatal heartbeat error %s%s; the member stops (Java transitionToFatal)", kerrName(err), msg))
		if prev != stateUnsubscribed && prev != stateStale && prev != stateLeaving {
			m.current = noAssignment
			o.loseAll = "fatal heartbeat error " + kerrName(err)
		}
		if prev == stateUnsubscribed || prev == stateStale {
			o.leaveDone = true
		}
	}
	return o
}

// findCoordinatorFailed is a FindCoordinator that failed with err:
// GROUP_AUTHORIZATION_FAILED is fatal, as in clients/classic (Java's
// CoordinatorRequestManager hands a GroupAuthorizationException to the
// application, which poll throws); anything else is retried after a
// backoff, and fatal says which.
func (m *machine) findCoordinatorFailed(err error) (o outcome, fatal bool) {
	if !errors.Is(err, kerr.GroupAuthorizationFailed) || m.state == stateFatal {
		return o, false
	}
	prev := m.state
	o.lostAt = m.epoch
	m.fatal = fmt.Errorf("%w: consumer group %s: FindCoordinator failed fatally: %w", clients.ErrStopped, m.cfg.group, err)
	m.state = stateFatal
	e := m.ev(clients.Error, fmt.Sprintf("fatal FindCoordinator error %s: not authorized for the group; the member stops (Java GroupAuthorizationException)", kerrName(err)))
	e.ErrCode, e.Err = kerr.GroupAuthorizationFailed.Code, kerrName(err)
	o.add(e)
	switch prev {
	case stateUnsubscribed, stateStale:
		o.leaveDone = true
	case stateLeaving:
	default:
		m.current = noAssignment
		o.loseAll = "fatal FindCoordinator error " + kerrName(err)
	}
	return o, true
}

// giveUp (BugGiveUpOnNoAnswer) stops the member for good on a heartbeat
// that got no answer, as the fatal errors do.
func (m *machine) giveUp(o outcome, err error) outcome {
	if m.state == stateFatal || m.state == stateUnsubscribed || m.state == stateStale {
		return o
	}
	o.lostAt = m.epoch
	o.loseAll = "gave up on a heartbeat without an answer"
	o.backoff = false
	m.current = noAssignment
	m.fatal = fmt.Errorf("%w: consumer group %s: heartbeat got no answer and the member gave up (deliberate bug): %w", clients.ErrStopped, m.cfg.group, err)
	m.state = stateFatal
	o.add(m.ev(clients.Error, "heartbeat got no answer: the member gives up for good (deliberate bug "+string(BugGiveUpOnNoAnswer)+")"))
	return o
}

// leaveSkipped is AbstractMembershipManager.onHeartbeatRequestSkipped: a
// leave heartbeat that cannot be sent because the coordinator is unknown
// (no FindCoordinator answered) is given up, and the member moves on as if
// it had been sent, so that it is not held in LEAVING until a lookup
// succeeds (a leave is a best effort; the coordinator expires the member
// after its session). The transition is the one request gives a leave:
// UNSUBSCRIBED, or STALE after a poll-timer leave, which the next Poll
// ends (Java has no such case: its poll timer is checked only while the
// coordinator is known, and the leave is built at once).
func (m *machine) leaveSkipped(why string) outcome {
	var o outcome
	if m.state != stateLeaving {
		return o
	}
	if m.staleLeave {
		m.state = stateStale
	} else {
		m.state = stateUnsubscribed
	}
	m.sent.reset()
	o.leaveDone = true
	e := m.ev(clients.Left, fmt.Sprintf("leave heartbeat with epoch %d not sent: %s; the member is out without it (Java onHeartbeatRequestSkipped), state %s", m.epoch, why, m.state))
	e.Err = why
	o.add(e)
	return o
}

// leave is transitionToSendingLeaveGroup: epoch -1, or -2 for a static
// member (ConsumerMembershipManager.leaveGroupEpoch), nothing owned, and
// the leave heartbeat goes out at once. stale says the poll timer caused
// it (the member then waits in STALE until the next poll).
func (m *machine) leave(stale bool) bool {
	if m.state == stateFatal || m.state == stateUnsubscribed || m.state == stateStale {
		return false
	}
	if m.state == stateFenced {
		m.state = stateUnsubscribed
		return false
	}
	m.staleLeave = stale
	m.epoch = leaveEpoch
	if m.cfg.instanceID != "" {
		m.epoch = staticLeaveEpoch
	}
	m.current = noAssignment
	m.target = noAssignment
	m.state = stateLeaving
	if m.planning {
		m.rejoined = true
	}
	return true
}

// rejoinStale is maybeRejoinStaleMember: the next poll after a poll-timer
// leave rejoins.
func (m *machine) rejoinStale() bool {
	m.staleLeave = false
	if m.state != stateStale {
		return false
	}
	m.sent.reset()
	m.join("rejoin on the first Poll after the poll-timeout leave")
	return true
}

// nextPlan is the first half of AbstractMembershipManager.maybeReconcile:
// with a target different from what is owned, resolve its topic ids
// (unresolved ones wait: ok false and the ids), compute revoked = owned −
// assigned and added = assigned − owned, and hand the plan out.
//
// owned is what the member holds now by name (Java's
// subscriptions.assignedPartitions()): after a plan that revoked but could
// not assign, it is less than current, and the retry revokes nothing twice.
func (m *machine) nextPlan(owned clients.Partitions) (p plan, unresolved []topicID, ok bool) {
	if m.state != stateReconciling || m.planning || m.reconciled() {
		return p, nil, false
	}
	resolved := map[topicID][]int32{}
	for id, ps := range m.target.parts {
		if _, ok := m.names[id]; ok {
			resolved[id] = ps
		} else {
			unresolved = append(unresolved, id)
		}
	}
	target := assignment{localEpoch: m.target.localEpoch, parts: resolved}
	if !m.current.none() && samePartitions(resolved, m.current.parts) {
		if len(unresolved) > 0 || m.current.localEpoch == target.localEpoch {
			// Java acknowledges the resolvable part (bumping the
			// local epoch) only when nothing is missing; we wait
			// for the names instead of acknowledging twice.
			return p, unresolved, false
		}
		m.current = target
		m.state = stateAcknowledging
		return p, nil, false
	}
	if len(unresolved) > 0 {
		return p, unresolved, false
	}
	assigned := m.partitionsByName(resolved)
	m.planSeq++
	m.planning = true
	m.rejoined = false
	return plan{
		seq:      m.planSeq,
		epoch:    m.epoch,
		target:   target,
		assigned: assigned,
		revoke:   owned.Minus(assigned),
		add:      assigned.Minus(owned),
	}, nil, true
}

// valid is Java's maybeAbortReconciliation, negated: the plan still applies
// only while the member is reconciling it and has not rejoined or left.
func (m *machine) valid(p plan) bool {
	return m.planning && m.planSeq == p.seq && m.state == stateReconciling && !m.rejoined
}

// finish ends a plan: carried out in full (done) and still valid, it becomes
// the current assignment and the member acknowledges it with the next
// heartbeat, sent at once.
func (m *machine) finish(p plan, done bool) bool {
	ok := done && m.valid(p)
	if m.planSeq == p.seq {
		m.planning = false
		m.rejoined = false
	}
	if ok {
		m.current = p.target
		m.state = stateAcknowledging
	}
	return ok
}

// partitionsByName maps topic ids to names; ids without a name are left out.
func (m *machine) partitionsByName(parts map[topicID][]int32) clients.Partitions {
	out := clients.Partitions{}
	for id, ps := range parts {
		if name, ok := m.names[id]; ok && len(ps) > 0 {
			out[name] = slices.Clone(ps)
		}
	}
	return out
}

func sortedIDs(parts map[topicID][]int32) []topicID {
	ids := slices.Collect(maps.Keys(parts))
	slices.SortFunc(ids, func(a, b topicID) int {
		for i := range a {
			if a[i] != b[i] {
				return int(a[i]) - int(b[i])
			}
		}
		return 0
	})
	return ids
}

// kerrName is the Kafka name of err (FENCED_MEMBER_EPOCH), or its text.
func kerrName(err error) string {
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		return ke.Message
	}
	return err.Error()
}
