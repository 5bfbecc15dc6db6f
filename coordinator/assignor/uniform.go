package assignor

import "fmt"

// Uniform is Kafka's UniformAssignor, the default server-side assignor: balanced
// first, sticky second. Homogeneous groups go to the homogeneous builder
// (UniformHomogeneousAssignmentBuilder, formerly OptimizedUniformAssignmentBuilder),
// heterogeneous ones to UniformHeterogeneousAssignmentBuilder.
type Uniform struct{ cfg config }

// NewUniform returns the uniform assignor for the configured Kafka version.
func NewUniform(opts ...Opt) (*Uniform, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Uniform{cfg: cfg}, nil
}

// Name implements Assignor.
func (*Uniform) Name() string { return UniformName }

// Assign implements Assignor (UniformAssignor.assign).
func (u *Uniform) Assign(spec GroupSpec, topics SubscribedTopicDescriber) (GroupAssignment, error) {
	if err := validate(&spec); err != nil {
		return GroupAssignment{}, err
	}
	if len(spec.Members) == 0 {
		return GroupAssignment{Members: map[string]MemberAssignment{}}, nil
	}
	if spec.Subscription == Homogeneous {
		return assignUniformHomogeneous(&spec, topics, u.cfg)
	}
	return assignUniformHeterogeneous(&spec, topics)
}

type topicPartition struct {
	topic     TopicID
	partition int32
}

// assignUniformHomogeneous is UniformHomogeneousAssignmentBuilder.build.
//
// Invariants it keeps (for a consistent spec, where no partition is held by
// two members):
//  1. Every partition of every subscribed topic ends up with exactly one
//     member, or the call fails with "partitions were left unassigned".
//  2. Member sizes differ by at most one: every member gets minQuota = P/M,
//     and exactly P%M members get one more.
//  3. A member keeps min(quota, what it held) of its previous partitions of
//     subscribed topics, the first ones in its iteration order; only the excess
//     and partitions of unsubscribed topics move.
//  4. From 4.0.1 (KAFKA-18688) a member that already holds the extra partition
//     keeps it: the extra quota slot is given back by members that do not need
//     it, unless they are among the last members that must take it. Before,
//     the first P%M members in iteration order always got the extra slot, so a
//     balanced assignment could still move.
func assignUniformHomogeneous(spec *GroupSpec, topics SubscribedTopicDescriber, cfg config) (GroupAssignment, error) {
	// Kafka copies the first member's subscription into a HashSet: its
	// iteration order decides the order of never-assigned partitions.
	subscribed := javaUUIDSetCopyOrder(spec.Members[0].Topics, cfg.javaVersion)
	out := GroupAssignment{Members: make(map[string]MemberAssignment, len(spec.Members))}
	if len(subscribed) == 0 {
		return out, nil
	}
	isSubscribed := make(map[TopicID]bool, len(subscribed))
	for _, t := range subscribed {
		isSubscribed[t] = true
	}
	checker := newAssignedChecker(spec, topics.NumPartitions)

	var unassigned []topicPartition
	total := 0
	for _, t := range subscribed {
		n := topics.NumPartitions(t)
		if n == -1 {
			return GroupAssignment{}, fmt.Errorf("%w: members are subscribed to topic %s which doesn't exist in the topic metadata", ErrPartitionAssignor, t)
		}
		for p := range int32(n) {
			if !checker.assigned(t, p) {
				unassigned = append(unassigned, topicPartition{t, p})
			}
		}
		total += n
	}

	numMembers := len(spec.Members)
	minQuota := total / numMembers
	remainingExtra := total % numMembers
	legacy := !cfg.profile.UniformHomogeneousStable // before KAFKA-18688

	type unfilled struct {
		member    int
		remaining int
	}
	var unfilledMembers []unfilled
	targets := make([]map[TopicID]map[int32]struct{}, numMembers)

	// Revoke pass: over memberIds() order.
	for i := range spec.Members {
		m := &spec.Members[i]
		quota := minQuota
		hasExtra := false
		if remainingExtra > 0 {
			quota++
			if legacy {
				remainingExtra--
			} else {
				hasExtra = true
			}
		}
		target := make(map[TopicID]map[int32]struct{}, len(m.Assignment))
		for _, tp := range m.Assignment {
			if !isSubscribed[tp.Topic] {
				continue // the whole topic is dropped
			}
			kept := make(map[int32]struct{}, min(len(tp.Partitions), max(quota, 0)))
			if len(tp.Partitions) <= quota {
				quota -= len(tp.Partitions)
				for _, p := range tp.Partitions {
					kept[p] = struct{}{}
				}
			} else {
				for _, p := range tp.Partitions {
					if quota > 0 {
						quota--
						kept[p] = struct{}{}
					} else {
						unassigned = append(unassigned, topicPartition{tp.Topic, p})
					}
				}
			}
			if len(kept) > 0 {
				target[tp.Topic] = kept
			}
		}
		if !legacy && quota > 0 && hasExtra && numMembers-i > remainingExtra {
			// Give the extra slot back for a later member to claim, unless this
			// member is one of the last remainingExtra members and must take it.
			quota--
			hasExtra = false
		}
		if quota > 0 {
			unfilledMembers = append(unfilledMembers, unfilled{i, quota})
		}
		if hasExtra {
			remainingExtra--
		}
		targets[i] = target
	}

	// Fill pass: unfilled members in order take the next partitions in line.
	next := 0
	for _, u := range unfilledMembers {
		target := targets[u.member]
		for k := 0; k < u.remaining && next < len(unassigned); k++ {
			tp := unassigned[next]
			next++
			set, ok := target[tp.topic]
			if !ok {
				set = map[int32]struct{}{}
				target[tp.topic] = set
			}
			set[tp.partition] = struct{}{}
		}
	}
	if next < len(unassigned) {
		return GroupAssignment{}, fmt.Errorf("%w: partitions were left unassigned (%d of %d); the spec's previous assignments overlap or the inverted target assignment is inconsistent", ErrPartitionAssignor, len(unassigned)-next, len(unassigned))
	}
	for i := range spec.Members {
		out.Members[spec.Members[i].ID] = toMemberAssignment(targets[i])
	}
	return out, nil
}
