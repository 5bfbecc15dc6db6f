package assign

import (
	"fmt"
	"slices"
)

// Sticky returns the "sticky" assignor (Java StickyAssignor, KIP-54, with
// the KIP-341 generation fix). It balances partitions as evenly as the
// subscriptions allow and, within that, keeps each member's previous
// partitions. It is EAGER: members revoke everything before rejoining, so
// their previous assignment travels in the StickyAssignor user data
// (EncodeStickyUserData), not in ownedPartitions.
func Sticky() Assignor { return stickyAssignor{} }

// CooperativeSticky returns the "cooperative-sticky" assignor (Java
// CooperativeStickyAssignor, KIP-429). It computes what Sticky computes
// from ownedPartitions and the subscription generation, then withholds
// every partition that moves from one member to another: the previous
// owner revokes it after this round and the follow-up rebalance hands it
// out. It supports COOPERATIVE and EAGER.
func CooperativeSticky() Assignor { return stickyAssignor{cooperative: true} }

type stickyAssignor struct{ cooperative bool }

func (s stickyAssignor) Name() string {
	if s.cooperative {
		return CooperativeStickyName
	}
	return StickyName
}

func (s stickyAssignor) Protocols() []Protocol {
	if s.cooperative {
		return []Protocol{Cooperative, Eager}
	}
	return []Protocol{Eager}
}

// memberData is AbstractStickyAssignor.MemberData: what a member claims it
// owned and in which generation.
type memberData struct {
	partitions []tp
	generation int32
	hasGen     bool
}

func (d memberData) gen() int32 {
	if d.hasGen {
		return d.generation
	}
	return defaultGeneration
}

// defaultGeneration is AbstractStickyAssignor.DEFAULT_GENERATION.
const defaultGeneration = -1

// memberData is StickyAssignor.memberData / CooperativeStickyAssignor.
// memberData.
func (s stickyAssignor) memberData(m *Member) memberData {
	if !s.cooperative {
		// StickyAssignor always reads the user data: an eager member
		// has revoked everything, so its ownedPartitions are empty.
		if len(m.UserData) == 0 {
			return memberData{}
		}
		u, ok := decodeStickyUserDataJava(m.UserData)
		if !ok {
			// Java ignores a previous assignment it cannot parse.
			return memberData{generation: defaultGeneration, hasGen: true}
		}
		return memberData{partitions: u.partitions, generation: u.generation, hasGen: u.hasGeneration}
	}
	owned := ownedList(m.Owned)
	if m.Generation >= 0 {
		return memberData{partitions: owned, generation: m.Generation, hasGen: true}
	}
	// A pre-v2 subscription: the generation is the cooperative user data.
	if m.UserData == nil {
		return memberData{partitions: owned}
	}
	if g, ok := decodeCooperativeUserData(m.UserData); ok {
		return memberData{partitions: owned, generation: g, hasGen: true}
	}
	return memberData{partitions: owned, generation: defaultGeneration, hasGen: true}
}

// ownedList flattens ownedPartitions the way a Java member serializes them:
// topics sorted, partitions in the order given (duplicates kept, because
// Java treats a partition claimed twice as a conflict).
func ownedList(owned map[string][]int32) []tp {
	var out []tp
	for _, t := range sortedKeys(owned) {
		for _, p := range owned[t] {
			out = append(out, tp{t, p})
		}
	}
	return out
}

// stickyRun is one AbstractStickyAssignor.assignPartitions call.
type stickyRun struct {
	g *group
	// order is the Java iteration order of subscriptions and of
	// consumerToOwnedPartitions (both HashMaps filled in that order).
	order []int
	data  []memberData
	// owned is consumerToOwnedPartitions: each member's previous
	// partitions that still exist, after resolving conflicting claims.
	owned [][]tp
	// multi is partitionsWithMultiplePreviousOwners.
	multi map[tp]bool
	// transferring is partitionsTransferringOwnership (constrained path):
	// partition → new owner, for partitions that the plan takes from a
	// member that still owns them.
	transferring map[tp]int
	// reversedMoves counts the general builder's moves that undid an
	// earlier move (PartitionMovements); tests use it to make sure the
	// Java vectors exercise that path; reversedChoices counts those where
	// Java's HashSet iteration order picked among several partitions.
	reversedMoves, reversedChoices int
}

func (s stickyAssignor) Assign(members []Member, topics map[string]int32) (Assignment, error) {
	plan, _, err := s.assign(members, topics)
	return plan, err
}

func (s stickyAssignor) assign(members []Member, topics map[string]int32) (Assignment, *stickyRun, error) {
	g, err := newGroup(members, topics)
	if err != nil {
		return nil, nil, err
	}
	if len(members) == 0 {
		return Assignment{}, &stickyRun{}, nil
	}
	r := &stickyRun{g: g, order: g.javaOrder(), multi: map[tp]bool{}}
	r.data = make([]memberData, len(members))
	for i := range members {
		r.data[i] = s.memberData(&members[i])
	}
	var plan [][]tp
	if r.allSubscriptionsEqual() {
		r.transferring = map[tp]int{}
		plan, err = r.constrained()
	} else {
		plan, err = r.general()
	}
	if err != nil {
		return nil, nil, err
	}
	if s.cooperative {
		plan = r.adjustCooperative(plan)
	}
	out := g.emptyAssignment()
	for i, ps := range plan {
		for _, p := range ps {
			out.add(members[i].ID, p)
		}
	}
	return out.finish(), r, nil
}

// allSubscriptionsEqual is AbstractStickyAssignor.allSubscriptionsEqual: it
// reports whether every member subscribes to the same topics, and fills
// owned and multi.
//
// Invariants it establishes, relied on by both builders:
//  1. a partition is in at most one member's owned list;
//  2. it is kept by the claimant with the highest generation; two claimants
//     with the same generation both lose it and it lands in multi;
//  3. owned lists hold only partitions that exist.
//
// Java quirks kept on purpose: the "other" claimant's generation is read
// from its subscription's generationId, not from its member data; and a
// member with an empty subscription met first in map order does not count
// as different, so the constrained builder then gives it partitions of
// topics it does not subscribe to.
//
// One deliberate difference: Java keeps claimed partitions whose index is
// out of range (a topic recreated with fewer partitions) and would then hand
// out partitions that do not exist; we drop them (invariant 3).
func (r *stickyRun) allSubscriptionsEqual() bool {
	equal := true
	var first map[string]bool
	r.owned = make([][]tp, len(r.g.members))
	ownerOf := map[tp]int{}
	for _, i := range r.order {
		sub := r.g.subscribed[i]
		if len(first) == 0 {
			first = sub
		} else if equal && !sameSet(first, sub) {
			equal = false
		}
		gen := r.data[i].gen()
		for _, p := range r.data[i].partitions {
			n, ok := r.g.partitionsPerTopic[p.topic]
			if !ok || p.partition < 0 || p.partition >= n {
				continue
			}
			other, claimed := ownerOf[p]
			if !claimed {
				r.owned[i] = append(r.owned[i], p)
				ownerOf[p] = i
				continue
			}
			otherGen := r.g.members[other].Generation
			if otherGen < 0 {
				otherGen = defaultGeneration
			}
			switch {
			case gen == otherGen:
				r.multi[p] = true
				r.owned[other] = removeFirst(r.owned[other], p)
				ownerOf[p] = i
			case gen > otherGen:
				r.owned[i] = append(r.owned[i], p)
				r.owned[other] = removeFirst(r.owned[other], p)
				ownerOf[p] = i
			}
		}
	}
	return equal
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for t := range b {
		if !a[t] {
			return false
		}
	}
	return true
}

func removeFirst(ps []tp, p tp) []tp {
	if k := slices.Index(ps, p); k >= 0 {
		return slices.Delete(ps, k, k+1)
	}
	return ps
}

func tpCompare(a, b tp) int {
	if c := javaCompare(a.topic, b.topic); c != 0 {
		return c
	}
	return int(a.partition) - int(b.partition)
}

// constrained is AbstractStickyAssignor.ConstrainedAssignmentBuilder, used
// when all subscriptions are equal. With P partitions and C members,
// minQuota = P/C, maxQuota = ceil(P/C), and exactly P%C members end at
// maxQuota.
//
// Invariants:
//  1. a member keeps min(len(owned), minQuota) of its owned partitions, or
//     maxQuota of them while fewer than P%C members have claimed maxQuota
//     (members are visited in Java map order, which decides who);
//  2. a member keeps its lowest partitions by (partition, topic);
//  3. the rest go round robin (topics sorted, partitions ascending) first to
//     members under minQuota, sorted by id, then to members at minQuota
//     until P%C members are at maxQuota;
//  4. a partition assigned to a member other than the one that had to give
//     it up is recorded in transferring.
func (r *stickyRun) constrained() ([][]tp, error) {
	n := len(r.g.members)
	total := 0
	for _, c := range r.g.partitionsPerTopic {
		total += int(c)
	}
	minQuota, maxQuota := total/n, (total+n-1)/n
	expectedOverMin := total % n
	currentOverMin := 0

	assignment := make([][]tp, n)
	assigned := map[tp]bool{}
	maybeRevoked := map[tp]int{}
	var under, exactlyMin []int

	for _, i := range r.order {
		owned := slices.Clone(r.owned[i])
		slices.SortFunc(owned, func(a, b tp) int {
			if a.partition != b.partition {
				return int(a.partition) - int(b.partition)
			}
			return javaCompare(a.topic, b.topic)
		})
		owned = slices.DeleteFunc(owned, func(p tp) bool { return r.multi[p] })
		keep := func(k int) {
			assignment[i] = append(assignment[i], owned[:k]...)
			for _, p := range owned[:k] {
				assigned[p] = true
			}
			for _, p := range owned[k:] {
				maybeRevoked[p] = i
			}
		}
		switch {
		case len(owned) < minQuota:
			keep(len(owned))
			under = append(under, i)
		case len(owned) >= maxQuota && currentOverMin < expectedOverMin:
			currentOverMin++
			if currentOverMin == expectedOverMin {
				exactlyMin = exactlyMin[:0]
			}
			keep(maxQuota)
		default:
			keep(minQuota)
			if currentOverMin < expectedOverMin {
				exactlyMin = append(exactlyMin, i)
			}
		}
	}

	byID := func(x, y int) int { return javaCompare(r.g.members[x].ID, r.g.members[y].ID) }
	slices.SortFunc(under, byID)
	slices.SortFunc(exactlyMin, byID)

	var unassigned []tp
	for _, t := range sortedKeys(r.g.partitionsPerTopic) {
		for p := range r.g.partitionsPerTopic[t] {
			if !assigned[tp{t, p}] {
				unassigned = append(unassigned, tp{t, p})
			}
		}
	}

	assignNew := func(p tp, i int) int {
		assignment[i] = append(assignment[i], p)
		if prev, ok := maybeRevoked[p]; (ok && prev != i) || r.multi[p] {
			r.transferring[p] = i
		}
		return len(assignment[i])
	}

	// assignRoundRobin: pos walks `under` like Java's LinkedList
	// iterator, restarting from the head when it runs off the end.
	pos := 0
	for _, p := range unassigned {
		var c int
		fromUnder := false
		switch {
		case pos < len(under):
			c, fromUnder = under[pos], true
			pos++
		case len(under) == 0 && len(exactlyMin) == 0:
			return nil, fmt.Errorf("sticky constrained assignment ran out of members with %d partitions left; this is a bug (Java throws IllegalStateException here)", len(unassigned))
		case len(under) == 0:
			c = exactlyMin[0]
			exactlyMin = exactlyMin[1:]
		default:
			pos = 0
			c, fromUnder = under[0], true
			pos++
		}
		count := assignNew(p, c)
		switch {
		case count == minQuota:
			if fromUnder {
				pos--
				under = slices.Delete(under, pos, pos+1)
			}
			exactlyMin = append(exactlyMin, c)
		case count == maxQuota:
			currentOverMin++
		}
	}

	// verifyUnfilledMembers
	if len(under) > 0 {
		if currentOverMin != expectedOverMin {
			return nil, fmt.Errorf("sticky constrained assignment: %d members above minQuota %d, expected %d, and no partitions left; this is a bug", currentOverMin, minQuota, expectedOverMin)
		}
		for _, i := range under {
			if len(assignment[i]) != minQuota {
				return nil, fmt.Errorf("sticky constrained assignment: member %q has %d partitions, below minQuota %d, and no partitions left; this is a bug", r.g.members[i].ID, len(assignment[i]), minQuota)
			}
		}
	}
	return assignment, nil
}
