package assign

import "slices"

// Range returns the "range" assignor (Java RangeAssignor). Per topic, the
// members subscribed to it are sorted by MemberInfo (instance id first, then
// member id); each gets a contiguous range of P/C partitions and the first
// P%C get one more. Topics are independent, so members that sort first get
// the extra partition of every topic.
func Range() Assignor { return rangeAssignor{} }

type rangeAssignor struct{}

func (rangeAssignor) Name() string          { return RangeName }
func (rangeAssignor) Protocols() []Protocol { return []Protocol{Eager} }

func (rangeAssignor) Assign(members []Member, topics map[string]int32) (Assignment, error) {
	g, err := newGroup(members, topics)
	if err != nil {
		return nil, err
	}
	out := g.emptyAssignment()
	// Java builds each topic's member list by iterating the subscriptions
	// HashMap and then sorts it stably; the map order only matters for
	// members that compare equal (a duplicated instance id).
	order := g.javaOrder()
	for topic, n := range g.partitionsPerTopic {
		var consumers []int
		for _, i := range order {
			if g.subscribed[i][topic] {
				consumers = append(consumers, i)
			}
		}
		slices.SortStableFunc(consumers, func(x, y int) int { return g.memberInfoCompare(x, y) })
		per, extra := int(n)/len(consumers), int(n)%len(consumers)
		next := int32(0)
		for k, i := range consumers {
			count := per
			if k < extra {
				count++
			}
			for range count {
				out.add(members[i].ID, tp{topic, next})
				next++
			}
		}
	}
	return out.finish(), nil
}

// javaOrder is the iteration order of the leader's subscriptions HashMap
// (ConsumerCoordinator.onLeaderElected fills it in JoinGroup response order).
func (g *group) javaOrder() []int {
	ids := make([]string, len(g.members))
	for i, m := range g.members {
		ids[i] = m.ID
	}
	return javaHashMapOrder(ids)
}

func (g *group) memberInfoCompare(x, y int) int {
	switch {
	case memberInfoLess(&g.members[x], &g.members[y]):
		return -1
	case memberInfoLess(&g.members[y], &g.members[x]):
		return 1
	}
	return 0
}
