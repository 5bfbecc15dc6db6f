package consumergroup

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// reconciler is CurrentAssignmentBuilder (CAB): it moves one member's
// current assignment toward the target, one safe step per heartbeat.
//
// Invariants it keeps, which the harness checks on real brokers too:
//  1. A member gives up a partition before anyone else gets it: a partition
//     is added to a member only when no other member holds it
//     (currentPartitionEpoch == -1), or when the member itself holds it
//     pending revocation (KAFKA-19449).
//  2. A member moves to the target epoch only after it acknowledged its
//     revocations: while it still owns partitions pending revocation it
//     stays in UNREVOKED_PARTITIONS at its epoch.
//  3. Kept partitions keep their assignment epoch; newly assigned ones are
//     stamped with the target epoch (KIP-1251).
type reconciler struct {
	profile     version.Profile
	member      *member
	targetEpoch int32
	target      map[TopicID][]int32
	// sub is the member's subscription (CAB.subscribedTopicIds).
	sub subscription
	// hasSubscriptionChanged (KAFKA-19431, 4.2+) forces the assignment to
	// follow the subscription even when nothing else moves.
	hasSubscriptionChanged bool
	partitionEpoch         func(TopicID, int32) int32
	// owned is the request's TopicPartitions; nil means not sent.
	owned []kmsg.ConsumerGroupHeartbeatRequestTopic
}

// build is CAB.build. It returns the member unchanged (same pointer) when
// there is nothing to do, or an *Error (FENCED_MEMBER_EPOCH) for a member
// in an unknown state that still claims partitions.
func (r *reconciler) build() (*member, error) {
	s, changed, err := r.next()
	if err != nil || !changed {
		return r.member, err
	}
	return r.member.withStep(s), nil
}

// step is what a reconciliation changes of a member: Kafka's
// ConsumerGroupMember.Builder(member) with a new state, epochs and
// assignment.
type step struct {
	state            records.MemberState
	epoch, prevEpoch int32
	assigned         assignment
	pending          assignment
}

// withStep is the member after s (a copy that shares everything else; the
// maps of s may be the member's own: members are never changed in place).
func (m *member) withStep(s step) *member {
	c := *m
	c.state, c.epoch, c.prevEpoch = s.state, s.epoch, s.prevEpoch
	c.assigned, c.pending = s.assigned, s.pending
	return &c
}

// next is CAB.build without the member: the step, or changed false when
// CAB returns the member as it is.
func (r *reconciler) next() (s step, changed bool, err error) {
	m := r.member
	subscriptionBound := r.profile.SubscriptionBoundsAssignment && r.hasSubscriptionChanged
	switch m.state {
	case records.MemberStable:
		if m.epoch != r.targetEpoch {
			return r.computeNextAssignment(m.epoch, m.assigned), true, nil
		}
		if subscriptionBound {
			s, changed = r.updateCurrentAssignment(m.epoch, m.assigned)
			return s, changed, nil
		}
		return step{}, false, nil
	case records.MemberUnrevokedPartitions:
		if r.ownsRevokedPartitions(m.pending) {
			if subscriptionBound {
				s, changed = r.updateCurrentAssignment(m.epoch, m.assigned)
				return s, changed, nil
			}
			return step{}, false, nil
		}
		// Before KAFKA-19974 (4.2) the member stepped to epoch+1 first.
		epoch := m.epoch
		if !r.profile.RevocationAckKeepsEpoch {
			epoch++
		}
		return r.computeNextAssignment(epoch, m.assigned), true, nil
	case records.MemberUnreleasedPartitions:
		return r.computeNextAssignment(m.epoch, m.assigned), true, nil
	default:
		if r.owned == nil || len(r.owned) != 0 {
			return step{}, false, errorf(kerr.FencedMemberEpoch, "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin.")
		}
		return r.computeNextAssignment(r.targetEpoch, m.assigned), true, nil
	}
}

// ownsRevokedPartitions is CAB.ownsRevokedPartitions: a member that did not
// say what it owns is assumed to own everything.
func (r *reconciler) ownsRevokedPartitions(pending assignment) bool {
	return ownsRevoked(r.owned, pending)
}

// unreleased reports whether partition p of t, in m's target, is still
// held by another member (partitionEpoch is not -1), so that m must wait
// for it. From OwnPendingRevocationNotUnreleased a partition m itself is
// revoking is not.
func unreleased(profile version.Profile, partitionEpoch func(TopicID, int32) int32, m *member, t TopicID, p int32) bool {
	if partitionEpoch(t, p) == -1 {
		return false
	}
	return !profile.OwnPendingRevocationNotUnreleased || !m.pending.has(t, p)
}

// ownsRevoked is ownsRevokedPartitions of a request's owned partitions
// (nil: not sent).
func ownsRevoked(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, pending assignment) bool {
	if owned == nil {
		return true
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if pending.has(t.TopicID, p) {
				return true
			}
		}
	}
	return false
}

// subscription is CAB.subscribedTopicIds, Kafka's TopicIds view: the set
// of topic ids of the topics a member subscribes to by name, and of the
// topics its regex resolved to. It resolves nothing up front: contains
// looks the id's name up in the metadata, then the name in the member's
// names (member.subscribes) and the regex's (sorted) topics, as
// TopicIds.contains does. It is empty when it names no topic, whether or
// not the named topics exist (TopicIds.isEmpty).
type subscription struct {
	topics TopicMetadata
	member *member
	regex  []string // sorted: the topics the member's regex resolved to
}

func (s subscription) empty() bool { return len(s.member.subscribed) == 0 && len(s.regex) == 0 }

func (s subscription) contains(id TopicID) bool {
	if s.empty() {
		return false
	}
	name, _, ok := s.topics.TopicByID(id)
	if !ok {
		return false
	}
	if s.member.subscribes(name) {
		return true
	}
	_, found := slices.BinarySearch(s.regex, name)
	return found
}

// updateCurrentAssignment is CAB.updateCurrentAssignment (4.2+): drop the
// topics the member no longer subscribes to, without looking at the target.
// Like Kafka, it copies the maps only when it drops a topic.
func (r *reconciler) updateCurrentAssignment(memberEpoch int32, assigned assignment) (step, bool) {
	m := r.member
	var newAssigned, newPending assignment
	if r.sub.empty() && len(m.pending) == 0 {
		// Kafka compares maps by identity here, and a member's map is never
		// the empty singleton it builds, so this branch always goes on.
		newAssigned, newPending = assignment{}, assigned
	} else {
		removed := false
		newAssigned, newPending = assigned, m.pending
		for t, ps := range assigned {
			if r.sub.contains(t) {
				continue
			}
			if !removed {
				removed = true
				newAssigned = maps.Clone(assigned)
				newPending = make(assignment, len(m.pending)+1)
				maps.Copy(newPending, m.pending)
			}
			delete(newAssigned, t)
			if existing, ok := newPending[t]; ok {
				merged := maps.Clone(existing)
				maps.Copy(merged, ps)
				newPending[t] = merged
			} else {
				newPending[t] = ps
			}
		}
		if !removed {
			return step{}, false
		}
	}
	s := step{state: m.state, epoch: m.epoch, prevEpoch: m.prevEpoch, assigned: newAssigned, pending: m.pending}
	// 4.3+ (#21325): updateMemberEpoch(memberEpoch) moves the previous
	// epoch up too; 4.2 leaves both epochs alone.
	if r.profile.UnsubscribeUpdatesPreviousEpoch {
		s.prevEpoch, s.epoch = m.epoch, memberEpoch
	}
	if len(newPending) != 0 && r.ownsRevokedPartitions(newPending) {
		s.state = records.MemberUnrevokedPartitions
		s.pending = newPending
	}
	return s, true
}

// computeNextAssignment is CAB.computeNextAssignment. Per topic of the
// target or of the current assignment: the partitions kept (current ∩
// target), revoked (current − kept) and to assign (target − kept −
// unreleased). A topic whose current partitions are all kept and that gets
// nothing more shares the member's map (Kafka copies it; neither changes
// it).
func (r *reconciler) computeNextAssignment(memberEpoch int32, assigned assignment) step {
	m := r.member
	hasUnreleased := false
	newAssigned := make(assignment, max(len(r.target), len(assigned)))
	newPending := assignment{}
	var pendingAssign []toAssign

	topic := func(t TopicID, targetPs []int32) {
		current := assigned[t]
		if r.profile.SubscriptionBoundsAssignment && !r.sub.contains(t) {
			// No longer subscribed: the target counts as empty.
			targetPs = nil
		}
		if !strictlyAscending(targetPs) {
			// A set, as Kafka's target is (the coordinator's targets are
			// sorted already).
			targetPs = slices.Compact(slices.Sorted(slices.Values(targetPs)))
		}
		var keep map[int32]int32
		kept := 0
		var assign []int32
		for _, p := range targetPs {
			if _, ok := current[p]; ok {
				kept++
				continue
			}
			if unreleased(r.profile, r.partitionEpoch, m, t, p) {
				hasUnreleased = true
				continue
			}
			assign = append(assign, p)
		}
		switch {
		case kept == len(current) && kept > 0 && len(assign) == 0:
			// Every current partition is in the target, and nothing is
			// added.
			keep = current
		case kept > 0 || len(assign) > 0:
			keep = make(map[int32]int32, kept+len(assign))
			for _, p := range targetPs {
				if e, ok := current[p]; ok {
					keep[p] = e
				}
			}
		}
		if len(keep) < len(current) {
			revoke := make(map[int32]int32, len(current)-len(keep))
			for p, e := range current {
				if _, ok := keep[p]; !ok {
					revoke[p] = e
				}
			}
			newPending[t] = revoke
		}
		if len(keep) > 0 || len(assign) > 0 {
			if keep == nil {
				keep = make(map[int32]int32, len(assign))
			}
			newAssigned[t] = keep
		}
		if len(assign) > 0 {
			pendingAssign = append(pendingAssign, toAssign{t, assign})
		}
	}
	for t, ps := range r.target {
		topic(t, ps)
	}
	for t := range assigned {
		if _, ok := r.target[t]; !ok {
			topic(t, nil)
		}
	}

	switch {
	case len(newPending) > 0 && r.ownsRevokedPartitions(newPending):
		// Kept partitions only: the ones to assign wait for the revocation.
		for _, x := range pendingAssign {
			if keep := newAssigned[x.topic]; len(keep) == 0 {
				delete(newAssigned, x.topic)
			}
		}
		return step{state: records.MemberUnrevokedPartitions, epoch: memberEpoch, prevEpoch: m.epoch, assigned: newAssigned, pending: newPending}
	case len(pendingAssign) > 0:
		for _, x := range pendingAssign {
			keep := newAssigned[x.topic]
			for _, p := range x.partitions {
				keep[p] = r.targetEpoch
			}
		}
	default:
	}
	s := step{state: records.MemberStable, epoch: r.targetEpoch, prevEpoch: m.epoch, assigned: newAssigned, pending: assignment{}}
	if hasUnreleased {
		s.state = records.MemberUnreleasedPartitions
	}
	return s
}

// toAssign is a topic's partitions to assign.
type toAssign struct {
	topic      TopicID
	partitions []int32
}

func strictlyAscending(ps []int32) bool {
	for i := 1; i < len(ps); i++ {
		if ps[i] <= ps[i-1] {
			return false
		}
	}
	return true
}
