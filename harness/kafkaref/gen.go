package kafkaref

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
)

// Case generators. Every layout comes from a seed, so a case file can be
// written again identically; the previous targets of the join
// (incremental) cases are groupquake's own full assignment of the same
// group, written into the file, so Kafka starts from the very same state.

// topicIDs draws n topic ids as Uuid.randomUuid would: never one whose
// string form starts with '-'.
func topicIDs(rng *rand.Rand, n int) []TopicID {
	out := make([]TopicID, 0, n)
	for len(out) < n {
		var t TopicID
		for i := range t {
			t[i] = byte(rng.Uint32())
		}
		if strings.HasPrefix(t.String(), "-") || t == (TopicID{}) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// AssignLayout says how the group of an assign case is built.
type AssignLayout struct {
	Members    int
	Topics     int
	Partitions int // per topic
	// Bucketed: heterogeneous subscriptions as Kafka's jmh-benchmarks make
	// them (AssignorBenchmarkUtils.createHeterogeneousBucketedMembers, 5
	// buckets of members each subscribed to its bucket's topics). Else each
	// member subscribes to a random half of the topics (the shape of
	// coordinator/assignor's BenchmarkAssign).
	Bucketed bool
	// Racks gives member i the rack "rack<i%3>" (the jmh isRackAware
	// layout); no 4.x assignor reads it.
	Racks bool
	// MemberPrefix names members <prefix><i>.
	MemberPrefix string
}

// NewAssignCase builds one assign case. join: the group minus one member is
// assigned first (by groupquake's assignor of the same kind), that result
// becomes the previous target, and one new member without an assignment
// joins with the subscription of an existing one (Kafka's jmh INCREMENTAL
// case, and BenchmarkAssign's "join").
func NewAssignCase(name, assignorName string, st assignor.SubscriptionType, l AssignLayout, join bool, seed uint64) (AssignCase, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6b61666b61726566))
	ids := topicIDs(rng, l.Topics)
	c := AssignCase{Name: name, Assignor: assignorName}
	for _, t := range ids {
		c.Topics = append(c.Topics, TopicCount{ID: t, Partitions: l.Partitions})
	}
	c.Spec.Subscription = st
	n := l.Members
	if join {
		n--
	}
	subscription := func(i int) []TopicID {
		switch {
		case st == assignor.Homogeneous:
			return ids
		case l.Bucketed:
			buckets := min(5, l.Members)
			perTopics := (l.Topics + buckets - 1) / buckets
			perMembers := (l.Members + buckets - 1) / buckets
			b := i / perMembers
			return ids[min(b*perTopics, l.Topics):min((b+1)*perTopics, l.Topics)]
		default:
			var ts []TopicID
			for _, j := range rng.Perm(l.Topics)[:max(1, l.Topics/2)] {
				ts = append(ts, ids[j])
			}
			return ts
		}
	}
	rack := func(i int) string {
		if l.Racks {
			return fmt.Sprintf("rack%d", i%3)
		}
		return ""
	}
	for i := range n {
		c.Spec.Members = append(c.Spec.Members, assignor.MemberSpec{ID: fmt.Sprintf("%s%d", l.MemberPrefix, i), RackID: rack(i), Topics: subscription(i)})
	}
	if !join {
		return c, nil
	}
	a, err := assignor.New(assignorName)
	if err != nil {
		return c, err
	}
	prev, err := a.Assign(c.Spec, countsOf(c.Topics))
	if err != nil {
		return c, fmt.Errorf("case %s: the full assignment before the join: %w", name, err)
	}
	for i := range c.Spec.Members {
		c.Spec.Members[i].Assignment = inTopicOrder(prev.Members[c.Spec.Members[i].ID], ids)
	}
	joinerTopics := c.Spec.Members[len(c.Spec.Members)-1].Topics
	c.Spec.Members = append(c.Spec.Members, assignor.MemberSpec{ID: "newMember", RackID: rack(l.Members - 1), Topics: joinerTopics})
	return c, nil
}

func countsOf(ts []TopicCount) assignor.PartitionCounts {
	out := assignor.PartitionCounts{}
	for _, t := range ts {
		out[t.ID] = t.Partitions
	}
	return out
}

// inTopicOrder lists an assignment topic by topic in the file's topic
// order, partitions ascending.
func inTopicOrder(a assignor.MemberAssignment, order []TopicID) []assignor.TopicPartitions {
	var out []assignor.TopicPartitions
	for _, t := range order {
		if ps := a.Partitions(t); len(ps) > 0 {
			out = append(out, assignor.TopicPartitions{Topic: t, Partitions: slices.Sorted(slices.Values(ps))})
		}
	}
	return out
}

// ReconcileScenario is one of Kafka's jmh CurrentAssignmentBuilderBenchmark
// methods.
type ReconcileScenario string

// The four scenarios of CurrentAssignmentBuilderBenchmark.
const (
	StableNoChange                      ReconcileScenario = "stableToStableWithNoChange"
	StableNewTarget                     ReconcileScenario = "stableToStableWithNewTargetAssignment"
	StableSubscriptionChange            ReconcileScenario = "stableToStableWithSubscriptionChange"
	StableToUnrevokedSubscriptionChange ReconcileScenario = "stableToUnrevokedPartitionsWithSubscriptionChange"
)

// ReconcileScenarios lists them in the benchmark's order.
var ReconcileScenarios = []ReconcileScenario{StableNoChange, StableNewTarget, StableSubscriptionChange, StableToUnrevokedSubscriptionChange}

func reconcileTopics(rng *rand.Rand, n, partitions int) []consumergroup.Topic {
	var out []consumergroup.Topic
	for i, id := range topicIDs(rng, n) {
		out = append(out, consumergroup.Topic{Name: fmt.Sprintf("topic-%d", i), ID: id, Partitions: partitions})
	}
	return out
}

// NewMemberReconcileCase is Kafka's CurrentAssignmentBuilderBenchmark: one
// STABLE member at epoch 10 owning every partition of its topics, a target
// of all of them, and the scenario's epoch and subscription.
func NewMemberReconcileCase(name string, sc ReconcileScenario, topics, partitionsPerTopic int, seed uint64) ReconcileCase {
	rng := rand.New(rand.NewPCG(seed, 0x6361622d6a6d68))
	c := ReconcileCase{Name: name, Topics: reconcileTopics(rng, topics, partitionsPerTopic), TargetEpoch: 10}
	m := ReconcileMember{ID: "member", State: records.MemberStable, Epoch: 10, PrevEpoch: 10,
		Assigned: map[TopicID]map[int32]int32{}, Pending: map[TopicID]map[int32]int32{}, Target: map[TopicID][]int32{}}
	for _, t := range c.Topics {
		m.Subscribed = append(m.Subscribed, t.Name)
		m.Assigned[t.ID] = map[int32]int32{}
		for p := range int32(partitionsPerTopic) {
			m.Assigned[t.ID][p] = 10
			m.Target[t.ID] = append(m.Target[t.ID], p)
		}
	}
	switch sc {
	case StableNewTarget:
		c.TargetEpoch = 11
	case StableSubscriptionChange:
		c.SubscriptionChanged = true
	case StableToUnrevokedSubscriptionChange:
		c.SubscriptionChanged = true
		m.Subscribed = m.Subscribed[:len(m.Subscribed)-1]
	}
	c.Members = []ReconcileMember{m}
	return c
}

// NewMissingTopicReconcileCase is one STABLE member at the target epoch
// whose subscription changed to a topic that does not exist: it holds
// nothing, or held (two partitions of the one topic that exists). Kafka
// tells an empty subscription from one whose names do not resolve
// (TopicIds.isEmpty asks the names).
func NewMissingTopicReconcileCase(name string, held bool, seed uint64) ReconcileCase {
	rng := rand.New(rand.NewPCG(seed, 0x6d697373696e67))
	c := ReconcileCase{Name: name, Topics: reconcileTopics(rng, 1, 3), TargetEpoch: 10, SubscriptionChanged: true}
	m := ReconcileMember{ID: "member", State: records.MemberStable, Epoch: 10, PrevEpoch: 9, Subscribed: []string{"no-such-topic"},
		Assigned: map[TopicID]map[int32]int32{}, Pending: map[TopicID]map[int32]int32{}, Target: map[TopicID][]int32{}}
	if held {
		t := c.Topics[0].ID
		m.Assigned[t] = map[int32]int32{0: 10, 1: 10}
		m.Target[t] = []int32{0, 1}
	}
	c.Members = []ReconcileMember{m}
	return c
}

// NewGroupReconcileCase is the reconciliation a join starts in a
// homogeneous group of members members over topics × partitions: every
// member STABLE at epoch 10 with its share of groupquake's uniform
// assignment, the target (epoch 11) the uniform assignment after one more
// member joined, and that new member (epoch 0, nothing assigned) last.
// Partitions are owned at epoch 10 by their current holder. One op
// reconciles every member once.
func NewGroupReconcileCase(name string, members, topics, partitions int, seed uint64) (ReconcileCase, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6361622d67726f75))
	c := ReconcileCase{Name: name, Topics: reconcileTopics(rng, topics, partitions), TargetEpoch: 11, Owners: map[TopicID]map[int32]int32{}}
	var ids []TopicID
	var names []string
	counts := assignor.PartitionCounts{}
	for _, t := range c.Topics {
		ids = append(ids, t.ID)
		names = append(names, t.Name)
		counts[t.ID] = t.Partitions
	}
	u, err := assignor.NewUniform()
	if err != nil {
		return c, err
	}
	spec := assignor.GroupSpec{Subscription: assignor.Homogeneous}
	for i := range members {
		spec.Members = append(spec.Members, assignor.MemberSpec{ID: fmt.Sprintf("member%d", i), Topics: ids})
	}
	before, err := u.Assign(spec, counts)
	if err != nil {
		return c, err
	}
	for i := range spec.Members {
		spec.Members[i].Assignment = inTopicOrder(before.Members[spec.Members[i].ID], ids)
	}
	spec.Members = append(spec.Members, assignor.MemberSpec{ID: "newMember", Topics: ids})
	after, err := u.Assign(spec, counts)
	if err != nil {
		return c, err
	}
	for _, ms := range spec.Members {
		m := ReconcileMember{ID: ms.ID, State: records.MemberStable, Epoch: 10, PrevEpoch: 9, Subscribed: names,
			Assigned: map[TopicID]map[int32]int32{}, Pending: map[TopicID]map[int32]int32{}, Target: map[TopicID][]int32{}}
		if ms.ID == "newMember" {
			m.Epoch, m.PrevEpoch = 0, -1
		}
		for _, tp := range ms.Assignment {
			m.Assigned[tp.Topic] = map[int32]int32{}
			for _, p := range tp.Partitions {
				m.Assigned[tp.Topic][p] = 10
				if c.Owners[tp.Topic] == nil {
					c.Owners[tp.Topic] = map[int32]int32{}
				}
				c.Owners[tp.Topic][p] = 10
			}
		}
		for _, tp := range after.Members[ms.ID] {
			m.Target[tp.Topic] = slices.Sorted(slices.Values(tp.Partitions))
		}
		c.Members = append(c.Members, m)
	}
	return c, nil
}
