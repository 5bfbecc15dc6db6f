package assign

import "slices"

// RoundRobin returns the "roundrobin" assignor (Java RoundRobinAssignor).
// All partitions of all subscribed topics, topics sorted and partitions
// ascending, are dealt to the members sorted by MemberInfo in a circle; a
// member not subscribed to a partition's topic is skipped, and the next
// partition starts where the circle stopped. With identical subscriptions
// the counts differ by at most one.
func RoundRobin() Assignor { return roundRobinAssignor{} }

type roundRobinAssignor struct{}

func (roundRobinAssignor) Name() string          { return RoundRobinName }
func (roundRobinAssignor) Protocols() []Protocol { return []Protocol{Eager} }

func (roundRobinAssignor) Assign(members []Member, topics map[string]int32) (Assignment, error) {
	g, err := newGroup(members, topics)
	if err != nil {
		return nil, err
	}
	out := g.emptyAssignment()
	circle := g.javaOrder()
	slices.SortStableFunc(circle, func(x, y int) int { return g.memberInfoCompare(x, y) })
	// Invariant: every topic in partitionsPerTopic has a subscriber, so the
	// skip loop below ends within one turn of the circle.
	pos := 0
	for _, topic := range sortedKeys(g.partitionsPerTopic) {
		for p := range g.partitionsPerTopic[topic] {
			for !g.subscribed[circle[pos]][topic] {
				pos = (pos + 1) % len(circle)
			}
			out.add(members[circle[pos]].ID, tp{topic, p})
			pos = (pos + 1) % len(circle)
		}
	}
	return out.finish(), nil
}
