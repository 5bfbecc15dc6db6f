package consumergroup

// The reconciliation as it was before it was made as fast as Kafka's
// (the subscription resolved into a set of ids up front, every map copied),
// with one fix: an empty subscription is one that names no topic, not one
// whose topics do not resolve (TopicIds.isEmpty; the vectors of
// testdata/reconcile and harness/kafkaref's small/cab-missing cases show
// the difference). TestReconcilerSameAsReference runs both on random
// members and wants the same member back.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// refReconciler is the earlier reconciler.
type refReconciler struct {
	profile     version.Profile
	member      *member
	targetEpoch int32
	target      map[TopicID][]int32
	// subscribedIDs are the ids of the member's subscribed topics that exist;
	// namesEmpty says the member subscribes to no name at all.
	subscribedIDs map[TopicID]bool
	namesEmpty    bool
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
func (r *refReconciler) build() (*member, error) {
	m := r.member
	subscriptionBound := r.profile.SubscriptionBoundsAssignment && r.hasSubscriptionChanged
	switch m.state {
	case records.MemberStable:
		if m.epoch != r.targetEpoch {
			return r.computeNextAssignment(m.epoch, m.assigned), nil
		}
		if subscriptionBound {
			return r.updateCurrentAssignment(m.epoch, m.assigned), nil
		}
		return m, nil
	case records.MemberUnrevokedPartitions:
		if r.ownsRevokedPartitions(m.pending) {
			if subscriptionBound {
				return r.updateCurrentAssignment(m.epoch, m.assigned), nil
			}
			return m, nil
		}
		// Before KAFKA-19974 (4.2) the member stepped to epoch+1 first.
		epoch := m.epoch
		if !r.profile.RevocationAckKeepsEpoch {
			epoch++
		}
		return r.computeNextAssignment(epoch, m.assigned), nil
	case records.MemberUnreleasedPartitions:
		return r.computeNextAssignment(m.epoch, m.assigned), nil
	default:
		if r.owned == nil || len(r.owned) != 0 {
			return nil, errorf(kerr.FencedMemberEpoch, "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin.")
		}
		return r.computeNextAssignment(r.targetEpoch, m.assigned), nil
	}
}

// ownsRevokedPartitions is CAB.ownsRevokedPartitions. It was the very code
// the reconciler still runs (ownsRevoked), so the reference runs it too.
func (r *refReconciler) ownsRevokedPartitions(pending assignment) bool {
	return ownsRevoked(r.owned, pending)
}

// updateCurrentAssignment is CAB.updateCurrentAssignment (4.2+): drop the
// topics the member no longer subscribes to, without looking at the target.
func (r *refReconciler) updateCurrentAssignment(memberEpoch int32, assigned assignment) *member {
	m := r.member
	var newAssigned, newPending assignment
	if r.namesEmpty && len(m.pending) == 0 {
		// Kafka compares maps by identity here, and a member's map is never
		// the empty singleton it builds, so this branch always goes on.
		newAssigned, newPending = assignment{}, assigned.clone()
	} else {
		removed := false
		newAssigned, newPending = assigned.clone(), m.pending.clone()
		for t, ps := range assigned {
			if r.subscribedIDs[t] {
				continue
			}
			removed = true
			delete(newAssigned, t)
			if newPending[t] == nil {
				newPending[t] = map[int32]int32{}
			}
			for p, e := range ps {
				newPending[t][p] = e
			}
		}
		if !removed {
			return m
		}
	}
	out := m.clone()
	// 4.3+ (#21325): updateMemberEpoch(memberEpoch) moves the previous
	// epoch up too; 4.2 leaves both epochs alone.
	if r.profile.UnsubscribeUpdatesPreviousEpoch {
		out.prevEpoch, out.epoch = m.epoch, memberEpoch
	}
	out.assigned = newAssigned
	if len(newPending) != 0 && r.ownsRevokedPartitions(newPending) {
		out.state = records.MemberUnrevokedPartitions
		out.pending = newPending
	}
	return out
}

// computeNextAssignment is CAB.computeNextAssignment. Whether a partition
// is unreleased was the very code the reconciler still runs (unreleased),
// so the reference runs it too.
func (r *refReconciler) computeNextAssignment(memberEpoch int32, assigned assignment) *member {
	m := r.member
	hasUnreleased := false
	newAssigned, newPending := assignment{}, assignment{}
	pendingAssign := map[TopicID][]int32{}

	topics := map[TopicID]bool{}
	for t := range r.target {
		topics[t] = true
	}
	for t := range assigned {
		topics[t] = true
	}
	for t := range topics {
		target := map[int32]bool{}
		if r.subscribedIDs[t] || !r.profile.SubscriptionBoundsAssignment {
			for _, p := range r.target[t] {
				target[p] = true
			}
		}
		keep, revoke := map[int32]int32{}, map[int32]int32{}
		for p, e := range assigned[t] {
			if target[p] {
				keep[p] = e
			} else {
				revoke[p] = e
			}
		}
		for p := range target {
			if _, ok := keep[p]; ok {
				continue
			}
			if unreleased(r.profile, r.partitionEpoch, m, t, p) {
				hasUnreleased = true
				continue
			}
			pendingAssign[t] = append(pendingAssign[t], p)
		}
		if len(keep) > 0 {
			newAssigned[t] = keep
		}
		if len(revoke) > 0 {
			newPending[t] = revoke
		}
	}

	out := m.clone()
	switch {
	case len(newPending) > 0 && r.ownsRevokedPartitions(newPending):
		out.state = records.MemberUnrevokedPartitions
		out.prevEpoch, out.epoch = m.epoch, memberEpoch
		out.assigned, out.pending = newAssigned, newPending
	case len(pendingAssign) > 0:
		for t, ps := range pendingAssign {
			if newAssigned[t] == nil {
				newAssigned[t] = map[int32]int32{}
			}
			for _, p := range ps {
				newAssigned[t][p] = r.targetEpoch
			}
		}
		out.state = records.MemberStable
		if hasUnreleased {
			out.state = records.MemberUnreleasedPartitions
		}
		out.prevEpoch, out.epoch = m.epoch, r.targetEpoch
		out.assigned, out.pending = newAssigned, assignment{}
	default:
		out.state = records.MemberStable
		if hasUnreleased {
			out.state = records.MemberUnreleasedPartitions
		}
		out.prevEpoch, out.epoch = m.epoch, r.targetEpoch
		out.assigned, out.pending = newAssigned, assignment{}
	}
	return out
}
