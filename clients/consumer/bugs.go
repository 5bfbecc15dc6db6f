package consumer

import (
	"fmt"
	"slices"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/option"
)

// Bug is a deliberate defect a member can be built with (WithBug), so that
// suites/bite can prove the checker that names it catches it. A member
// built without WithBug has none, and no registry a seed draws from sets one
// (harness/kinds.Broken names these kinds; only an explicit
// --kinds picks them).
//
// Every bug lives in this file. The member reaches it only at a few named
// seams, each a no-op for the zero Bug: deferRevoke and lateRevoke around a
// reconciliation, skipsCommitBeforeRevoke before it, giveUp on a heartbeat
// without an answer, keepsConsuming, reassigned and zombieRecord where
// partitions leave, come back and are polled.
type Bug string

const (
	// BugAckBeforeRevoke acknowledges a reconciliation (the next heartbeat
	// lists the new assignment, without the revoked partitions) before it
	// gives the revoked partitions up: it keeps consuming them for
	// ackBeforeRevokeLag and reports Revoked only then. The broker releases
	// a partition to its next owner as soon as the acknowledgement says it
	// is no longer owned (CurrentAssignmentBuilder), so two members hold it
	// at once: NoDoubleOwnership catches it.
	BugAckBeforeRevoke Bug = "ack-before-revoke"
	// BugSkipCommitBeforeRevoke revokes without the commit Java's member
	// makes first (ConsumerMembershipManager's
	// autoCommitSyncBeforeRevocation), so the next owner re-reads what this
	// member handed out since its last commit: CommittedBeforeRevoked
	// catches it.
	BugSkipCommitBeforeRevoke Bug = "skip-commit-before-revoke"
	// BugGiveUpOnNoAnswer stops for good when a heartbeat gets no answer
	// (a connection refused or cut, a timeout), which Java retries after a
	// backoff: the member drops out of the group for the rest of the run
	// while the others take its partitions, the group Stable and every
	// partition owned. EventuallyConverges catches it: a member the harness
	// runs is not in the group at the end.
	BugGiveUpOnNoAnswer Bug = "give-up-on-no-answer"
	// BugFetchAfterRevoke keeps consuming and handing out the records of
	// a partition after the member reported revoking it, until the
	// partition is assigned to it again: ConsumedOnlyOwned catches it.
	BugFetchAfterRevoke Bug = "fetch-after-revoke"
)

// Bugs lists the bugs a consumer member can be built with.
func Bugs() []Bug {
	return []Bug{BugAckBeforeRevoke, BugSkipCommitBeforeRevoke, BugGiveUpOnNoAnswer, BugFetchAfterRevoke}
}

// ackBeforeRevokeLag is how long BugAckBeforeRevoke keeps acknowledged
// revocations: several broker heartbeat intervals
// (group.consumer.heartbeat.interval.ms is 500 ms in the harness's
// clusters), so the next owner has been told before this member lets go.
const ackBeforeRevokeLag = 3 * time.Second

// WithBug builds the member with one deliberate defect. Never for real use.
func WithBug(b Bug) Opt { return option.New(func(c *cfg) { c.bug = b }) }

func (b Bug) check() error {
	if b == "" || slices.Contains(Bugs(), b) {
		return nil
	}
	return fmt.Errorf("unknown bug %q: the consumer member carries one of %q", string(b), Bugs())
}

// skipsCommitBeforeRevoke (BugSkipCommitBeforeRevoke) says the
// reconciliation revokes without committing first.
func (mb *Member) skipsCommitBeforeRevoke() bool { return mb.cfg.bug == BugSkipCommitBeforeRevoke }

// givesUp (BugGiveUpOnNoAnswer) turns the outcome of a heartbeat of epoch
// that got no answer into stopping for good.
func (mb *Member) givesUp(o outcome, epoch int32, err error) outcome {
	if mb.cfg.bug != BugGiveUpOnNoAnswer || epoch < 0 {
		return o
	}
	return mb.m.giveUp(o, err)
}

// keepsConsuming (BugFetchAfterRevoke) says whether the partitions a
// reconciliation revokes stay consumed: they become zombies, handed out by
// Poll although the member reported them revoked. mu is held.
func (mb *Member) keepsConsuming(revoked clients.Partitions) bool {
	if mb.cfg.bug != BugFetchAfterRevoke {
		return false
	}
	if mb.zombie == nil {
		mb.zombie = clients.Partitions{}
	}
	for t, ps := range revoked {
		mb.zombie[t] = slices.Compact(slices.Sorted(slices.Values(append(mb.zombie[t], ps...))))
	}
	return true
}

// reassigned (BugFetchAfterRevoke) stops consuming the zombies among
// partitions assigned again, so that they are added back at the committed
// offset as any assigned partition. mu is held.
func (mb *Member) reassigned(add clients.Partitions) {
	again := clients.Partitions{}
	for t, ps := range add {
		for _, x := range ps {
			if slices.Contains(mb.zombie[t], x) {
				again[t] = append(again[t], x)
				mb.zombie[t] = slices.DeleteFunc(mb.zombie[t], func(y int32) bool { return y == x })
			}
		}
	}
	if again.Count() > 0 {
		mb.cl.RemoveConsumePartitions(again)
	}
}

// zombieRecord (BugFetchAfterRevoke) says whether Poll hands out a record
// of t-p although the member does not own it. mu is held.
func (mb *Member) zombieRecord(t string, p int32) bool { return slices.Contains(mb.zombie[t], p) }

// lateRevocation holds what BugAckBeforeRevoke acknowledged as revoked but
// still owns, and when it lets go.
type lateRevocation struct {
	parts clients.Partitions
	at    time.Time
}

// deferRevoke (BugAckBeforeRevoke) takes the revocations out of plan p and
// keeps them for lateRevoke: the reconciliation then acknowledges the new
// assignment while the member still owns and consumes them.
func (mb *Member) deferRevoke(p plan) plan {
	if mb.cfg.bug != BugAckBeforeRevoke || p.revoke.Count() == 0 {
		return p
	}
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.late.parts.Count() == 0 {
		mb.late = lateRevocation{parts: clients.Partitions{}, at: mb.cfg.Clock.Now().Add(ackBeforeRevokeLag)}
	}
	for t, ps := range p.revoke {
		mb.late.parts[t] = slices.Compact(slices.Sorted(slices.Values(append(mb.late.parts[t], ps...))))
	}
	p.revoke = clients.Partitions{}
	return p
}

// lateRevoke (BugAckBeforeRevoke) gives up, once their time has come, the
// partitions whose revocation was acknowledged earlier, unless the current
// assignment holds them again.
func (mb *Member) lateRevoke(now time.Time) {
	mb.mu.Lock()
	due := mb.late.parts.Count() > 0 && !now.Before(mb.late.at)
	mb.mu.Unlock()
	if !due {
		return
	}
	mb.lockOwnership()
	current := mb.m.partitionsByName(mb.m.current.parts)
	rev := clients.Partitions{}
	for t, ps := range mb.late.parts {
		for _, x := range ps {
			if slices.Contains(mb.owned[t], x) && !slices.Contains(current[t], x) {
				rev[t] = append(rev[t], x)
			}
		}
	}
	mb.late = lateRevocation{}
	if rev.Count() > 0 {
		mb.cl.RemoveConsumePartitions(rev.Clone())
		mb.giveUpLocked(rev, false)
		e := mb.ev(clients.Revoked, fmt.Sprintf("deliberate bug %s: given up %v after the acknowledgement", mb.cfg.bug, ackBeforeRevokeLag))
		e.Partitions = rev
		mb.pending = append(mb.pending, e)
	}
	mb.unlockOwnership()
	mb.flush()
}
