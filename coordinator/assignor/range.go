package assignor

import (
	"fmt"
	"slices"
)

// Range is Kafka's server-side RangeAssignor (rewritten in KAFKA-16944):
// for each topic, its subscribers in a fixed member order take contiguous
// ranges, the first P%N of them one partition more. With equal partition counts
// the topics are co-partitioned.
//
// It is not sticky by design: the previous target assignment is not read. The
// only stability is the member order, which puts static members first, sorted
// by instance id, then dynamic members sorted by member id, so a static member
// that rejoins under a new member id gets the same ranges back.
type Range struct{ cfg config }

// NewRange returns the range assignor. Its behaviour is the same in every
// served version; the options are checked all the same.
func NewRange(opts ...Opt) (*Range, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Range{cfg: cfg}, nil
}

// Name implements Assignor.
func (*Range) Name() string { return RangeName }

// rangeTopic is RangeAssignor.TopicMetadata: a per-topic cursor.
type rangeTopic struct {
	id            TopicID
	numPartitions int
	numMembers    int
	minQuota      int // -1 until computed
	extra         int
	nextRange     int
}

// take hands the next member its range, as RangeAssignor.addPartitionsToAssignment.
func (t *rangeTopic) take(out MemberAssignment) {
	if t.minQuota == -1 {
		t.minQuota = t.numPartitions / t.numMembers
		t.extra = t.numPartitions % t.numMembers
	}
	start, quota := t.nextRange, t.minQuota
	if t.extra > 0 {
		quota++
		t.extra--
	}
	end := min(start+quota, t.numPartitions)
	t.nextRange = end
	if start < end {
		ps := make([]int32, 0, end-start)
		for p := start; p < end; p++ {
			ps = append(ps, int32(p))
		}
		out[t.id] = ps
	}
}

// Assign implements Assignor (RangeAssignor.assign).
//
// Invariants it keeps:
//  1. Every member of the spec is in the output, with an empty assignment if
//     it gets nothing.
//  2. Per topic, its subscribers in range order hold consecutive ranges that
//     cover the topic: the first P%N get P/N+1 partitions, the rest P/N.
//  3. Homogeneous: the first member in range order speaks for all, and every
//     member counts as a subscriber of its topics, whatever it subscribed to.
//  4. The previous target assignment is never read.
func (r *Range) Assign(spec GroupSpec, topics SubscribedTopicDescriber) (GroupAssignment, error) {
	if err := validate(&spec); err != nil {
		return GroupAssignment{}, err
	}
	out := GroupAssignment{Members: make(map[string]MemberAssignment, len(spec.Members))}
	if len(spec.Members) == 0 {
		return out, nil
	}
	order := rangeMemberOrder(spec.Members)

	if spec.Subscription == Homogeneous {
		// Homogeneous: the first member in range order speaks for everyone, and
		// every member counts as a subscriber, as in assignHomogeneousGroup.
		first := &spec.Members[order[0]]
		ts := make([]*rangeTopic, 0, len(first.Topics))
		for _, id := range first.Topics {
			n := topics.NumPartitions(id)
			if n == -1 {
				return GroupAssignment{}, fmt.Errorf("%w: member %q is subscribed to topic %s, which does not exist", ErrPartitionAssignor, first.ID, id)
			}
			ts = append(ts, &rangeTopic{id: id, numPartitions: n, numMembers: len(spec.Members), minQuota: -1})
		}
		for _, i := range order {
			a := make(MemberAssignment, len(ts))
			for _, t := range ts {
				t.take(a)
			}
			out.Members[spec.Members[i].ID] = a
		}
		return out, nil
	}

	// Heterogeneous: a topic's subscriber count is the members that list it;
	// members that subscribe to nothing still get an (empty) entry.
	byID := map[TopicID]*rangeTopic{}
	for _, i := range order {
		m := &spec.Members[i]
		for _, id := range m.Topics {
			t, ok := byID[id]
			if !ok {
				n := topics.NumPartitions(id)
				if n == -1 {
					return GroupAssignment{}, fmt.Errorf("%w: member %q is subscribed to topic %s, which does not exist", ErrPartitionAssignor, m.ID, id)
				}
				t = &rangeTopic{id: id, numPartitions: n, minQuota: -1}
				byID[id] = t
			}
			t.numMembers++
		}
	}
	for _, i := range order {
		m := &spec.Members[i]
		a := make(MemberAssignment, len(m.Topics))
		for _, id := range m.Topics {
			byID[id].take(a)
		}
		out.Members[m.ID] = a
	}
	return out, nil
}

// rangeMemberOrder is RangeAssignor.sortMemberIds: static members first by
// instance id, then the rest by member id, both by Java String.compareTo. The
// sort is stable like List.sort, so equal keys keep memberIds() order.
func rangeMemberOrder(members []MemberSpec) []int {
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ma, mb := &members[a], &members[b]
		switch {
		case ma.InstanceID != "" && mb.InstanceID != "":
			return javaStringCompare(ma.InstanceID, mb.InstanceID)
		case ma.InstanceID != "":
			return -1
		case mb.InstanceID != "":
			return 1
		}
		return javaStringCompare(ma.ID, mb.ID)
	})
	return order
}
