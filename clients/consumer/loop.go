package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/coord"
	"github.com/groupquake/groupquake/clients/internal/groupreq"
)

// defaultInterval is used until the broker names its heartbeat interval
// (the first answer always does).
const defaultInterval = time.Second

// run is the heartbeat goroutine: it sends heartbeats, feeds their answers
// to the machine and starts reconciliations and interval auto-commits on
// goroutines of their own, so that it never waits on an OffsetCommit or an
// OffsetFetch (reconcileAsync, autoCommitAsync). Any change
// here, in the machine or in the ownership helpers must keep these
// invariants:
//
//  1. One heartbeat is in flight at a time and only its answer counts
//     (machine.inflight): an answer that is lost changes nothing but makes
//     the next heartbeat full; an answer that arrives late or twice is
//     dropped.
//  2. The member never owns a partition the broker has not released to
//     it: it adds partitions only from the latest Assignment, and the broker
//     lists a partition there only after its previous owner acknowledged
//     giving it up (CurrentAssignmentBuilder's "unreleased" partitions).
//  3. Reconciliation is commit (auto-commit on), then revoke, then assign:
//     revoked = owned − assigned leaves kgo and Owned() before added =
//     assigned − owned enters, and both are computed against what the
//     member owns now, not what it was last told.
//  4. The acknowledgement is the next heartbeat, sent at once: its
//     TopicPartitions is the new owned set (Java's ACKNOWLEDGING).
//  5. The epoch moves only on an answer. FENCED_MEMBER_EPOCH and
//     UNKNOWN_MEMBER_ID drop everything as lost before the epoch-0 rejoin,
//     with the same member id, is sent.
//  6. Ownership changes exclude Poll (pollMu): no record of a partition is
//     returned once it has been reported Revoked or Lost.
//  7. Partitions kept across a reconciliation are never paused or
//     re-seeked: their consumption goes on throughout.
func (mb *Member) run() {
	defer mb.wg.Done()
	defer mb.flush()
	var next, notBefore, reconcileAt time.Time
	attempts := 0
	lastAuto := mb.cfg.Clock.Now()
	for {
		mb.flush()
		mb.mu.Lock()
		now := mb.cfg.Clock.Now()
		wait := time.Second // wake up at least this often to check the timers
		switch {
		case mb.m.heartbeatNow():
			wait = min(wait, notBefore.Sub(now))
		case !mb.m.skipHeartbeat():
			wait = min(wait, next.Sub(now))
		}
		if mb.m.state == stateReconciling && !mb.m.planning {
			wait = min(wait, reconcileAt.Sub(now))
		}
		if mb.m.inGroup() && mb.m.state != stateLeaving {
			wait = min(wait, mb.lastPoll.Add(mb.cfg.maxPollInterval).Sub(now))
		}
		if mb.cfg.autoCommit && mb.cfg.autoCommitInterval > 0 && len(mb.owned) > 0 {
			wait = min(wait, lastAuto.Add(mb.cfg.autoCommitInterval).Sub(now))
		}
		mb.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-mb.ctx.Done():
				t.Stop()
				return
			case <-mb.kick:
			case <-t.C:
			}
			t.Stop()
		}
		if mb.ctx.Err() != nil {
			return
		}
		now = mb.cfg.Clock.Now()
		mb.checkTimers(now)
		mb.lateRevoke(now) // BugAckBeforeRevoke only
		if mb.cfg.autoCommit && mb.cfg.autoCommitInterval > 0 && now.Sub(lastAuto) >= mb.cfg.autoCommitInterval {
			lastAuto = now
			mb.autoCommitAsync()
		}
		mb.mu.Lock()
		due := !mb.m.skipHeartbeat() && !now.Before(notBefore) && (mb.m.heartbeatNow() || !now.Before(next))
		mb.mu.Unlock()
		if due {
			backoff, unknown := mb.heartbeat()
			if mb.ctx.Err() != nil {
				return
			}
			mb.mu.Lock()
			interval := mb.m.interval
			mb.mu.Unlock()
			if interval <= 0 {
				interval = defaultInterval
			}
			now = mb.cfg.Clock.Now()
			next = now.Add(interval)
			if backoff {
				attempts++
				notBefore = now.Add(mb.backoff(attempts))
			} else {
				attempts = 0
				notBefore = time.Time{}
			}
			if unknown {
				// No heartbeat left: the coordinator is looked up
				// again after the backoff, not the interval.
				next = notBefore
			}
		}
		mb.mu.Lock()
		failed := mb.reconcileFailed
		mb.reconcileFailed = false
		mb.mu.Unlock()
		if failed {
			attempts++
			notBefore = mb.cfg.Clock.Now().Add(mb.backoff(attempts))
			reconcileAt = notBefore
		}
		if !mb.cfg.Clock.Now().Before(reconcileAt) {
			mb.reconcileAsync()
		}
	}
}

// autoCommitAsync commits what was consumed on a goroutine of its own
// (Java's auto-commit on the interval is a commitAsync), unless the last
// one is still in flight: the heartbeat goroutine does not wait for the
// commit lane.
func (mb *Member) autoCommitAsync() {
	mb.mu.Lock()
	busy := mb.autoCommitting
	mb.mu.Unlock()
	if busy {
		return
	}
	offs, asOf := mb.consumed()
	if len(offs) == 0 {
		return
	}
	mb.mu.Lock()
	mb.autoCommitting = true
	mb.mu.Unlock()
	mb.wg.Add(1)
	go func() {
		defer mb.wg.Done()
		ctx, cancel := context.WithTimeout(mb.ctx, mb.cfg.requestTimeout)
		mb.commit(ctx, offs, asOf, "auto-commit interval elapsed", noRetry, false)
		cancel()
		mb.mu.Lock()
		mb.autoCommitting = false
		mb.mu.Unlock()
	}()
}

// reconcileAsync carries out the next reconciliation on a goroutine of its
// own, unless one is running or none is due, so that heartbeats go on
// while its commit and its OffsetFetch are in flight (the machine's plan is
// taken and finished under mu; a heartbeat meanwhile carries the owned
// partitions as they were, as Java's do). It pokes the loop when done.
func (mb *Member) reconcileAsync() {
	mb.mu.Lock()
	due := !mb.reconciling && mb.m.state == stateReconciling && !mb.m.planning && !mb.m.reconciled()
	if due {
		mb.reconciling = true
	}
	mb.mu.Unlock()
	if !due {
		return
	}
	mb.wg.Add(1)
	go func() {
		defer mb.wg.Done()
		ok := mb.reconcileIfNeeded()
		mb.mu.Lock()
		mb.reconciling = false
		mb.reconcileFailed = !ok
		mb.mu.Unlock()
		mb.flush()
		mb.poke()
	}()
}

// backoff is Java's exponential retry backoff (retry.backoff.ms doubling up
// to retry.backoff.max.ms), without jitter.
func (mb *Member) backoff(attempts int) time.Duration {
	d := mb.cfg.retryBackoff
	for i := 1; i < attempts && d < mb.cfg.retryBackoffMax; i++ {
		d *= 2
	}
	return min(d, mb.cfg.retryBackoffMax)
}

// checkTimers applies the two timers that make the member leave on its own:
// the poll timer (AbstractHeartbeatRequestManager.poll: leave, then STALE
// until the next Poll) and the rebalance timeout (the broker fences a member
// that has not finished revoking by then, so the member leaves and rejoins
// rather than wait to hear it).
func (mb *Member) checkTimers(now time.Time) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if !mb.m.inGroup() || mb.m.state == stateLeaving {
		mb.since = time.Time{}
		return
	}
	if idle := now.Sub(mb.lastPoll); idle > mb.cfg.maxPollInterval {
		epoch := mb.m.epoch
		mb.m.leave(true)
		e := mb.ev(clients.SessionExpired, fmt.Sprintf("no Poll for %v, more than the max poll interval %v: leaving with epoch %d (was %d) and staying out until the next Poll", idle.Round(time.Millisecond), mb.cfg.maxPollInterval, mb.m.epoch, epoch))
		e.MemberEpoch = epoch
		mb.pending = append(mb.pending, e)
		mb.applyLocked(outcome{loseAll: "left after the poll timeout", lostAt: epoch})
		return
	}
	if mb.m.state != stateReconciling {
		mb.since = time.Time{}
		return
	}
	if mb.since.IsZero() {
		mb.since = now
		return
	}
	if took := now.Sub(mb.since); took > mb.cfg.rebalanceTimeout {
		epoch := mb.m.epoch
		mb.m.leave(false)
		e := mb.ev(clients.SessionExpired, fmt.Sprintf("reconciliation unfinished after %v, more than the rebalance timeout %v: the broker fences the member, so it leaves with epoch %d and rejoins", took.Round(time.Millisecond), mb.cfg.rebalanceTimeout, mb.m.epoch))
		e.MemberEpoch = epoch
		mb.pending = append(mb.pending, e)
		mb.rejoinAfterLeave = true
		mb.since = time.Time{}
		mb.applyLocked(outcome{loseAll: "left after the rebalance timeout", lostAt: epoch})
	}
}

// heartbeat sends one heartbeat to the coordinator and feeds its answer
// to the machine. It reports whether the next one must back off, and
// unknown when no heartbeat left because the coordinator could not be
// found (findCoordinator).
func (mb *Member) heartbeat() (backoff, unknown bool) {
	// The lookup and the heartbeat each get the request timeout, as each
	// request does in Java: under a latency at which each fits but not
	// both, one timeout for the two would time out every heartbeat that
	// follows a lookup, forget the coordinator, and look it up again.
	lctx, lcancel := context.WithTimeout(mb.ctx, mb.cfg.requestTimeout)
	node, ok := mb.findCoordinator(lctx, mb.ctx)
	lcancel()
	if !ok {
		if mb.ctx.Err() == nil {
			mb.leaveSkipped()
		}
		return true, true
	}
	ctx, cancel := context.WithTimeout(mb.ctx, mb.cfg.requestTimeout)
	defer cancel()
	req, seq, call, op := mb.sendHeartbeat()
	resp, err := mb.send(ctx, node, req)
	if err != nil && mb.ctx.Err() != nil {
		// Closing: Close sends the leave. The answer will not be waited for.
		mb.mu.Lock()
		mb.pending = append(mb.pending, mb.answerEvents(call, op, req, nil, fmt.Errorf("member closing: stopped waiting for the answer: %w", err), nil)...)
		mb.mu.Unlock()
		mb.flush()
		return false, false
	}
	if err == nil && resp.Assignment != nil {
		mb.resolve(assignedIDs(resp))
	}
	if err != nil {
		// Java: a disconnect (a timed-out request is one) makes the
		// coordinator unknown (CoordinatorRequestManager.handleCoordinatorDisconnect).
		mb.forgetCoordinator(node)
	} else if ce := kerr.ErrorForCode(resp.ErrorCode); errors.Is(ce, kerr.NotCoordinator) || errors.Is(ce, kerr.CoordinatorNotAvailable) {
		mb.forgetCoordinator(node)
	}
	mb.mu.Lock()
	defer mb.mu.Unlock()
	var o outcome
	if err != nil {
		o = mb.givesUp(mb.m.onError(seq, err), req.MemberEpoch, err)
	} else {
		o = mb.m.onResponse(seq, resp)
	}
	o.events = mb.answerEvents(call, op, req, resp, err, o.events)
	mb.applyLocked(o)
	if mb.m.state == stateReconciling && mb.since.IsZero() {
		mb.since = mb.cfg.Clock.Now() // the rebalance timeout runs from here
	}
	if req.MemberEpoch < 0 {
		mb.rejoinLocked()
		return false, false
	}
	return o.backoff, false
}

// leaveSkipped completes a leave whose heartbeat could not be sent because
// the coordinator is unknown (machine.leaveSkipped); after a
// rebalance-timeout leave the member rejoins, as it does once the leave is
// sent.
func (mb *Member) leaveSkipped() {
	mb.mu.Lock()
	o := mb.m.leaveSkipped("the coordinator is unknown")
	mb.applyLocked(o)
	if o.leaveDone {
		mb.rejoinLocked()
	}
	mb.mu.Unlock()
	mb.flush()
}

// rejoinLocked rejoins after a rebalance-timeout leave, once the leave is
// sent or given up. mu is held.
func (mb *Member) rejoinLocked() {
	if mb.rejoinAfterLeave && mb.m.state == stateUnsubscribed {
		mb.rejoinAfterLeave = false
		mb.m.sent.reset()
		mb.m.join("rejoin after the rebalance-timeout leave")
	}
}

// sendHeartbeat builds the next heartbeat and reports it sent
// (clients.Sent): a heartbeat, or a leave when its epoch is -1 or -2.
func (mb *Member) sendHeartbeat() (*kmsg.ConsumerGroupHeartbeatRequest, uint64, uint64, clients.Op) {
	mb.mu.Lock()
	req, seq := mb.m.request()
	op := clients.OpHeartbeat
	why := fmt.Sprintf("ConsumerGroupHeartbeat with member epoch %d", req.MemberEpoch)
	if req.MemberEpoch < 0 {
		op = clients.OpLeave
		why = fmt.Sprintf("leave heartbeat with member epoch %d", req.MemberEpoch)
	}
	mb.calls++
	call := mb.calls
	e := mb.ev(clients.Sent, why)
	e.Call, e.Op, e.MemberEpoch = call, op, req.MemberEpoch
	mb.pending = append(mb.pending, e)
	mb.mu.Unlock()
	mb.flush()
	return req, seq, call, op
}

// answerEvents puts the event that answers heartbeat call (the clients
// contract: Heartbeat, Joined for the first epoch, Left for a leave) before
// the machine's events evs. The machine's Joined and Heartbeat events say
// what the answer meant for the epoch and the assignment, so they are folded
// into it; Fenced, Error and the rest follow it as facts.
func (mb *Member) answerEvents(call uint64, op clients.Op, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse, err error, evs []clients.Event) []clients.Event {
	a := mb.ev(clients.Heartbeat, "")
	a.Call, a.Op = call, op
	var whys []string
	switch {
	case err != nil:
		a.Err = err.Error()
		whys = append(whys, "no answer")
	case resp.ErrorCode != 0:
		a.ErrCode, a.Err = resp.ErrorCode, kerrName(kerr.ErrorForCode(resp.ErrorCode))
		whys = append(whys, "answered "+a.Err)
	default:
		a.MemberEpoch = resp.MemberEpoch
	}
	if op == clients.OpLeave {
		a.Kind, a.MemberEpoch = clients.Left, req.MemberEpoch
		whys = append(whys, fmt.Sprintf("leave heartbeat with epoch %d", req.MemberEpoch))
	}
	var rest []clients.Event
	for _, e := range evs {
		if e.Kind == clients.Joined || e.Kind == clients.Heartbeat {
			if e.Kind == clients.Joined && op == clients.OpHeartbeat {
				a.Kind = clients.Joined
			}
			if e.Partitions != nil {
				a.Partitions = e.Partitions
			}
			whys = append(whys, e.Why)
			continue
		}
		rest = append(rest, e)
	}
	if len(whys) == 0 {
		whys = append(whys, fmt.Sprintf("heartbeat answered, member epoch %d", a.MemberEpoch))
	}
	a.Why = strings.Join(whys, "; ")
	return append([]clients.Event{a}, rest...)
}

// findCoordinator returns the coordinator the member knows or, when it
// knows none, sends one FindCoordinator to one broker (coord.Find). A
// failed lookup is reported and retried after the member's backoff (Java's
// CoordinatorRequestManager: one FindCoordinator in flight, retried after
// retry.backoff.ms); no heartbeat is sent meanwhile. GROUP_AUTHORIZATION_FAILED
// is fatal (machine.findCoordinatorFailed).
//
// A lookup that fails once parent has ended (the member closing) is not
// reported.
func (mb *Member) findCoordinator(ctx, parent context.Context) (int32, bool) {
	mb.mu.Lock()
	node, attempt := mb.coordinator, mb.lookups
	if node < 0 {
		mb.lookups++
	}
	mb.mu.Unlock()
	if node >= 0 {
		return node, true
	}
	node, err := coord.Find(ctx, mb.cl, mb.group, attempt)
	if err != nil && parent.Err() != nil {
		return -1, false // closing
	}
	mb.mu.Lock()
	if o, fatal := mb.m.findCoordinatorFailed(err); fatal {
		mb.applyLocked(o)
	} else if err != nil {
		e := mb.ev(clients.Error, "FindCoordinator failed; retrying after backoff")
		if ke, ok := errors.AsType[*kerr.Error](err); ok {
			e.ErrCode, e.Err = ke.Code, kerrName(ke)
		} else {
			e.Err = err.Error()
		}
		mb.pending = append(mb.pending, e)
	} else {
		e := mb.ev(clients.FoundCoordinator, fmt.Sprintf("FindCoordinator: the coordinator is node %d", node))
		e.Node = node
		mb.pending = append(mb.pending, e)
		mb.coordinator = node
	}
	mb.mu.Unlock()
	mb.flush()
	return node, err == nil
}

// forgetCoordinator is Java's markCoordinatorUnknown: the next heartbeat
// looks the coordinator up again. node is the coordinator the failed
// heartbeat went to (one found meanwhile is kept).
func (mb *Member) forgetCoordinator(node int32) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.coordinator == node {
		mb.coordinator = -1
	}
}

// send sends a heartbeat once, to the coordinator node, through kgo's
// Broker(node).Request: kgo neither looks the coordinator up nor retries.
func (mb *Member) send(ctx context.Context, node int32, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	r, err := mb.cl.Broker(int(node)).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp, ok := r.(*kmsg.ConsumerGroupHeartbeatResponse)
	if !ok {
		return nil, fmt.Errorf("heartbeat answered with %T", r)
	}
	return resp, nil
}

func assignedIDs(resp *kmsg.ConsumerGroupHeartbeatResponse) []topicID {
	var ids []topicID
	for _, t := range resp.Assignment.Topics {
		ids = append(ids, t.TopicID)
	}
	return ids
}

// resolve learns the names of topic ids it does not know yet from metadata
// (Java: findResolvableAssignmentAndTriggerMetadataUpdate). It reports
// whether every id is known afterwards.
func (mb *Member) resolve(ids []topicID) bool {
	mb.mu.Lock()
	var missing []topicID
	for _, id := range ids {
		if _, ok := mb.m.names[id]; !ok {
			missing = append(missing, id)
		}
	}
	mb.mu.Unlock()
	if len(missing) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(mb.ctx, mb.cfg.requestTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest() // nil Topics: every topic
	resp, err := req.RequestWith(ctx, mb.cl)
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if err != nil {
		e := mb.ev(clients.Error, fmt.Sprintf("metadata to resolve assigned topic ids failed; reconciliation waits: %v", err))
		e.Err = err.Error()
		mb.pending = append(mb.pending, e)
		return false
	}
	for _, t := range resp.Topics {
		if t.Topic != nil && t.TopicID != (topicID{}) {
			mb.m.names[t.TopicID] = *t.Topic
			mb.ids[*t.Topic] = t.TopicID
		}
	}
	for _, id := range missing {
		if _, ok := mb.m.names[id]; !ok {
			return false
		}
	}
	return true
}

// reconcileIfNeeded carries out a reconciliation if the machine has one.
// It reports false when one is due but could not be carried out (names or
// offsets missing), so that the loop retries after a backoff.
func (mb *Member) reconcileIfNeeded() bool {
	mb.mu.Lock()
	p, unresolved, ok := mb.m.nextPlan(mb.owned)
	mb.mu.Unlock()
	if len(unresolved) > 0 {
		if !mb.resolve(unresolved) {
			return false
		}
		mb.mu.Lock()
		p, _, ok = mb.m.nextPlan(mb.owned)
		mb.mu.Unlock()
	}
	if !ok {
		return true
	}
	return mb.reconcile(p)
}

// reconcile is the second half of AbstractMembershipManager.maybeReconcile
// and revokeAndAssign: commit what was consumed (auto-commit, bounded by the
// rebalance timeout; a failed commit does not stop the reconciliation, as
// in Java), revoke, fetch the committed offsets of the added partitions,
// assign, then acknowledge with the next heartbeat. Between steps the plan
// is checked again: a fence or a leave meanwhile aborts it.
func (mb *Member) reconcile(p plan) bool {
	ctx, cancel := context.WithTimeout(mb.ctx, mb.cfg.rebalanceTimeout)
	defer cancel()
	p = mb.deferRevoke(p) // BugAckBeforeRevoke only
	// Pause what is being revoked before committing, so that the commit
	// covers every record handed out of it (Java's
	// markPendingRevocationToPauseFetching).
	mb.lockOwnership()
	mb.revoking = p.revoke.Clone()
	mb.unlockOwnership()
	defer func() {
		mb.mu.Lock()
		mb.revoking = nil
		mb.mu.Unlock()
	}()
	if mb.cfg.autoCommit && !mb.skipsCommitBeforeRevoke() {
		if offs, asOf := mb.consumed(); len(offs) > 0 {
			mb.commit(ctx, offs, asOf, fmt.Sprintf("auto-commit before reconciling to epoch %d (revoking %v)", p.epoch, p.revoke), retryIfNewer, false)
		}
	}
	mb.lockOwnership()
	if !mb.m.valid(p) {
		mb.m.finish(p, false)
		mb.unlockOwnership()
		return true
	}
	if p.revoke.Count() > 0 {
		if !mb.keepsConsuming(p.revoke) {
			mb.cl.RemoveConsumePartitions(p.revoke.Clone())
		}
		mb.giveUpLocked(p.revoke, true)
		e := mb.ev(clients.Revoked, fmt.Sprintf("reconciling to epoch %d: owned − assigned, given up after the commit", p.epoch))
		e.Partitions = p.revoke.Clone()
		mb.pending = append(mb.pending, e)
	}
	mb.unlockOwnership()
	mb.flush()

	var offsets map[string]map[int32]int64
	if p.add.Count() > 0 {
		var err error
		offsets, err = mb.fetchCommitted(ctx, p.add)
		if err != nil {
			mb.mu.Lock()
			mb.m.finish(p, false)
			e := mb.ev(clients.Error, fmt.Sprintf("reconciling to epoch %d: committed offsets of %v unknown, assignment retried: %v", p.epoch, p.add, err))
			e.Err = err.Error()
			mb.pending = append(mb.pending, e)
			mb.mu.Unlock()
			return false
		}
	}
	mb.lockOwnership()
	defer mb.poke()
	defer mb.unlockOwnership()
	if !mb.m.valid(p) {
		mb.m.finish(p, false)
		return true
	}
	if p.add.Count() > 0 {
		mb.reassigned(p.add)
		mb.ownSeq++
		add := map[string]map[int32]kgo.Offset{}
		for t, ps := range p.add {
			add[t] = map[int32]kgo.Offset{}
			if mb.positions[t] == nil {
				mb.positions[t] = map[int32]int64{}
			}
			for _, x := range ps {
				o, ok := offsets[t][x]
				if ok && o >= 0 {
					add[t][x] = kgo.NewOffset().At(o)
					mb.positions[t][x] = o
					setOffset(mb.committed, t, x, o)
				} else {
					// auto.offset.reset=earliest: the harness counts
					// every record.
					add[t][x] = kgo.NewOffset().AtStart()
					mb.positions[t][x] = -1
				}
				mb.takeLocked(t, x, mb.ownSeq)
			}
			slices.Sort(mb.owned[t])
			mb.owned[t] = slices.Compact(mb.owned[t])
		}
		mb.cl.AddConsumePartitions(add)
		e := mb.ev(clients.Assigned, fmt.Sprintf("reconciling to epoch %d: assigned − owned, released to this member by the broker", p.epoch))
		e.Partitions = p.add.Clone()
		mb.pending = append(mb.pending, e)
	}
	mb.m.finish(p, true)
	return true
}

// commit sends an OffsetCommit with the member's epoch and reports it.
// STALE_MEMBER_EPOCH (the broker moved the member on before the member
// heard of it; Kafka 4.3+ accepts an older epoch for partitions assigned at
// or before it, KIP-1251, earlier versions do not) is retried as
// retryStale says, with the newer epoch.
//
// Every commit of the member goes through here and keeps two rules, so
// that an older offset never lands after a newer one was acknowledged:
//
//  1. The lane (commitMu): one OffsetCommit of the member is in flight at a
//     time. kgo's Client.Request resends a commit on coordinator errors and
//     lost connections until ctx ends; all of that happens inside the lane,
//     so no other commit of this member can be sent between two attempts
//     of one request. (A chaos run on Kafka 4.4.0 saw an auto-commit of
//     offset 61, unanswered while a node was paused, resent and acknowledged
//     after the application's commit of 62: the two ran concurrently.)
//  2. The high-water mark (sentHigh): per partition, the highest offset sent
//     since the partition was assigned. An offset below it is never sent,
//     neither as a new commit nor as a retry (STALE_MEMBER_EPOCH waits for
//     the new epoch outside the lane, and another commit may be sent
//     meanwhile): it gets Superseded instead.
//
// What no client can rule out: an attempt whose answer never came and that
// kgo abandoned may still sit in a paused broker's socket buffer; if the
// next commit goes out on another connection, the broker may apply the old
// one after it. Such a commit is reported as having no answer (unknown).
func (mb *Member) commit(ctx context.Context, offsets map[string]map[int32]int64, asOf uint64, why string, retryStale staleRetry, app bool) (map[string]map[int32]string, error) {
	// all is the last answer for every partition: one dropped from a
	// retry keeps its STALE_MEMBER_EPOCH.
	all := map[string]map[int32]string{}
	mb.mu.Lock()
	joins := mb.m.joins
	mb.mu.Unlock()
	for {
		if !mb.commitMu.TryLock() {
			if mb.laneWait != nil {
				mb.laneWait()
			}
			mb.commitMu.Lock()
		}
		mb.mu.Lock()
		// Ownership is judged here, with the epoch the request carries:
		// while the commit waited (for the lane, or on a loaded machine
		// between its caller's snapshot and here), a reconciliation may
		// have revoked a partition and the heartbeat acknowledged it with
		// a newer epoch. Kafka checks only the member's epoch, not what it
		// owns (before 4.3 and at the current epoch since, KIP-1251), so
		// a revoked partition sent now would be accepted under the new
		// epoch over its new owner's commits.
		owned, gone := mb.ownedAsOfLocked(offsets, asOf)
		for t, ps := range gone {
			for p, e := range ps {
				setErr(all, t, p, e)
			}
		}
		send := map[string]map[int32]int64{}
		for t, ps := range owned {
			for p, o := range ps {
				if hi, ok := mb.sentHigh[t][p]; ok && o < hi {
					setErr(all, t, p, Superseded)
					continue
				}
				setOffset(send, t, p, o)
				setOffset(mb.sentHigh, t, p, o)
			}
		}
		if len(send) == 0 {
			mb.mu.Unlock()
			mb.commitMu.Unlock()
			return all, nil
		}
		offsets = send
		epoch := mb.m.epoch
		ids := maps.Clone(mb.ids)
		names := maps.Clone(mb.m.names)
		mb.mu.Unlock()
		req := mb.commitRequest(offsets, epoch, ids)
		mb.mu.Lock()
		mb.calls++
		call := mb.calls
		se := mb.ev(clients.Sent, why)
		se.Call, se.Op, se.App, se.MemberEpoch, se.Offsets = call, clients.OpCommit, app, epoch, offsets
		mb.pending = append(mb.pending, se)
		mb.mu.Unlock()
		mb.flush()
		resp, err := mb.sendCommit(ctx, req)
		mb.mu.Lock()
		if err != nil {
			e := mb.ev(clients.CommitFailed, why+": OffsetCommit got no answer")
			e.Call, e.Op, e.App = call, clients.OpCommit, app
			e.MemberEpoch = epoch
			e.Offsets = offsets
			e.Err = err.Error()
			mb.pending = append(mb.pending, e)
			mb.mu.Unlock()
			mb.flush()
			mb.commitMu.Unlock() // after the outcome is reported: it precedes the next commit
			return nil, err
		}
		perr, stale := mb.answeredLocked(resp, offsets, names, all)
		e := mb.ev(clients.Committed, why)
		e.Call, e.Op, e.App = call, clients.OpCommit, app
		e.MemberEpoch = epoch
		e.Offsets = offsets
		if len(perr) > 0 {
			e.PartitionErrs = perr
		}
		mb.pending = append(mb.pending, e)
		retry := stale && retryStale != noRetry && ctx.Err() == nil
		mb.mu.Unlock()
		mb.flush()
		mb.commitMu.Unlock()
		if retry && retryStale == retryIfNewer {
			retry = mb.newerEpoch(epoch, joins)
		} else if retry {
			retry = mb.awaitNewerEpoch(ctx, epoch, joins)
		}
		if !retry {
			return all, nil
		}
		// The retry goes through the same ownership check: a partition
		// the member gave up meanwhile is not committed under the new
		// epoch (it keeps its STALE_MEMBER_EPOCH).
		mb.mu.Lock()
		still, _ := mb.ownedAsOfLocked(offsets, asOf)
		mb.mu.Unlock()
		if len(still) == 0 {
			return all, nil
		}
		offsets = still
		why += fmt.Sprintf(" (retried: STALE_MEMBER_EPOCH at epoch %d)", epoch)
	}
}

// giveUpLocked drops rev from what the member owns, with the positions and
// committed offsets it kept of them, and with sent the highest offsets sent
// of them too.
func (mb *Member) giveUpLocked(rev clients.Partitions, sent bool) {
	for t, ps := range rev {
		mb.owned[t] = slices.DeleteFunc(mb.owned[t], func(x int32) bool { return slices.Contains(ps, x) })
		if len(mb.owned[t]) == 0 {
			delete(mb.owned, t)
		}
		for _, x := range ps {
			delete(mb.positions[t], x)
			delete(mb.committed[t], x)
			if sent {
				delete(mb.sentHigh[t], x)
			}
		}
	}
}

// commitRequest is the OffsetCommit of offsets at the member's epoch.
func (mb *Member) commitRequest(offsets map[string]map[int32]int64, epoch int32, ids map[string][16]byte) *kmsg.OffsetCommitRequest {
	var instanceID *string
	if mb.cfg.instanceID != "" {
		instanceID = new(mb.cfg.instanceID)
	}
	return groupreq.OffsetCommit(mb.group, mb.m.cfg.memberID, instanceID, epoch, offsets, ids)
}

// answeredLocked reads an OffsetCommit answer: it records the offsets
// accepted as committed, and in all the last answer of every partition of
// offsets (an error, or none). It returns the partitions' errors and
// whether one is STALE_MEMBER_EPOCH.
func (mb *Member) answeredLocked(resp *kmsg.OffsetCommitResponse, offsets map[string]map[int32]int64, names map[[16]byte]string, all map[string]map[int32]string) (map[string]map[int32]string, bool) {
	perr := map[string]map[int32]string{}
	stale := false
	for _, rt := range resp.Topics {
		t := rt.Topic
		if t == "" {
			t = names[rt.TopicID]
		}
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				setErr(perr, t, rp.Partition, kerrName(err))
				stale = stale || errors.Is(err, kerr.StaleMemberEpoch)
			} else if _, ok := offsets[t][rp.Partition]; ok {
				setOffset(mb.committed, t, rp.Partition, offsets[t][rp.Partition])
			}
		}
	}
	for t, ps := range offsets {
		for p := range ps {
			if e, ok := perr[t][p]; ok {
				setErr(all, t, p, e)
			} else if all[t] != nil {
				delete(all[t], p)
				if len(all[t]) == 0 {
					delete(all, t)
				}
			}
		}
	}
	return perr, stale
}

// How commit treats STALE_MEMBER_EPOCH.
type staleRetry int8

const (
	noRetry staleRetry = iota
	// retryIfNewer retries only if the member already knows a newer
	// epoch: used on the heartbeat goroutine, which cannot wait for one.
	retryIfNewer
	// awaitNewer waits (until ctx ends) for the heartbeat to bring a
	// newer epoch, as Java's commitSync does
	// (CommitRequestManager.isStaleEpochErrorAndValidEpochAvailable).
	awaitNewer
)

// newerEpoch reports whether the member holds an epoch newer than than
// within the same membership: after a fence and rejoin, offsets consumed
// under the old membership are never committed under the new one.
func (mb *Member) newerEpoch(than int32, joins int) bool {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.m.joins == joins && mb.m.epoch != than && mb.m.epoch > 0
}

func (mb *Member) awaitNewerEpoch(ctx context.Context, than int32, joins int) bool {
	for {
		if mb.newerEpoch(than, joins) {
			return true
		}
		mb.mu.Lock()
		in := mb.m.inGroup() && !mb.closed && mb.m.joins == joins
		mb.mu.Unlock()
		if !in {
			return false
		}
		t := time.NewTimer(mb.cfg.retryBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// fetchCommitted reads the committed offsets of parts with the member's id
// and epoch (OffsetFetch v9+). STALE_MEMBER_EPOCH is retried while the
// member has learned a newer epoch meanwhile; OffsetFetch has no KIP-1251
// relaxation, the epoch must be exact.
func (mb *Member) fetchCommitted(ctx context.Context, parts clients.Partitions) (map[string]map[int32]int64, error) {
	for {
		mb.mu.Lock()
		epoch := mb.m.epoch
		ids := maps.Clone(mb.ids)
		names := maps.Clone(mb.m.names)
		mb.mu.Unlock()
		req := kmsg.NewPtrOffsetFetchRequest()
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = mb.group
		g.MemberID = new(mb.m.cfg.memberID)
		g.MemberEpoch = epoch
		for _, t := range parts.Topics() {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic = t
			gt.TopicID = ids[t]
			gt.Partitions = slices.Clone(parts[t])
			g.Topics = append(g.Topics, gt)
		}
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, mb.cl)
		if err == nil && len(resp.Groups) != 1 {
			err = fmt.Errorf("OffsetFetch answered %d groups for one", len(resp.Groups))
		}
		if err == nil {
			err = kerr.ErrorForCode(resp.Groups[0].ErrorCode)
		}
		out := map[string]map[int32]int64{}
		if err == nil {
			for _, rt := range resp.Groups[0].Topics {
				t := rt.Topic
				if t == "" {
					t = names[rt.TopicID]
				}
				for _, rp := range rt.Partitions {
					if perr := kerr.ErrorForCode(rp.ErrorCode); perr != nil && err == nil {
						err = fmt.Errorf("%s[%d]: %w", t, rp.Partition, perr)
					}
					setOffset(out, t, rp.Partition, rp.Offset)
				}
			}
		}
		mb.mu.Lock()
		retry := errors.Is(err, kerr.StaleMemberEpoch) && mb.m.epoch != epoch && mb.m.epoch > 0 && ctx.Err() == nil
		if err == nil {
			e := mb.ev(clients.Fetched, fmt.Sprintf("committed offsets of newly assigned %v", parts))
			e.MemberEpoch = epoch
			e.Offsets = out
			mb.pending = append(mb.pending, e)
		}
		mb.mu.Unlock()
		mb.flush()
		if !retry {
			return out, err
		}
	}
}
