package assign

import (
	"fmt"
	"slices"
)

// adjustCooperative is CooperativeStickyAssignor.adjustAssignment: a
// partition that the plan gives to a new member while another member still
// owns it is left out of this round.
//
// Invariant (KIP-429): in a cooperative round no partition is both revoked
// from one member and added to another. The owner sees the partition
// missing from its assignment, revokes it and rejoins; in that follow-up
// rebalance nobody owns it and it is assigned normally.
//
// Which partitions move comes from the constrained builder's record
// (transferring) when all subscriptions are equal. Otherwise Java computes
// it from the raw ownedPartitions of every subscription: added to a member
// but not in its ownedPartitions, and in some member's ownedPartitions but
// not assigned to it.
func (r *stickyRun) adjustCooperative(plan [][]tp) [][]tp {
	moving := r.transferring
	if moving == nil {
		moving = map[tp]int{}
		revoked := map[tp]bool{}
		for i := range r.g.members {
			owned := map[tp]bool{}
			for _, p := range ownedList(r.g.members[i].Owned) {
				owned[p] = true
			}
			planned := map[tp]bool{}
			for _, p := range plan[i] {
				planned[p] = true
				if !owned[p] {
					moving[p] = i
				}
			}
			for p := range owned {
				if !planned[p] {
					revoked[p] = true
				}
			}
		}
		for p := range moving {
			if !revoked[p] {
				delete(moving, p)
			}
		}
	}
	for p, i := range moving {
		plan[i] = slices.DeleteFunc(plan[i], func(q tp) bool { return q == p })
	}
	return plan
}

// ValidateCooperative is ConsumerCoordinator.validateCooperativeAssignment:
// under the COOPERATIVE protocol no partition may be added to one member
// while it is revoked from another in the same round, because the new
// owner would start consuming before the old one stops. Java's leader runs
// this check on every assignor except cooperative-sticky (which keeps the
// rule by construction) and fails the rebalance on a violation.
func ValidateCooperative(members []Member, plan Assignment) error {
	added := map[tp]string{}
	revoked := map[tp]string{}
	for _, m := range members {
		owned := map[tp]bool{}
		for _, p := range ownedList(m.Owned) {
			owned[p] = true
		}
		planned := map[tp]bool{}
		for t, ps := range plan[m.ID] {
			for _, p := range ps {
				planned[tp{t, p}] = true
				if !owned[tp{t, p}] {
					added[tp{t, p}] = m.ID
				}
			}
		}
		for p := range owned {
			if !planned[p] {
				revoked[p] = m.ID
			}
		}
	}
	var bad []tp
	for p := range added {
		if _, ok := revoked[p]; ok {
			bad = append(bad, p)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.SortFunc(bad, tpCompare)
	p := bad[0]
	return fmt.Errorf("cooperative assignment moves %d partitions in one round, first %s-%d from %q to %q: the owner must revoke it before another member is given it",
		len(bad), p.topic, p.partition, revoked[p], added[p])
}
