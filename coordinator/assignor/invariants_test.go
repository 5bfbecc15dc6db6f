package assignor

import (
	"fmt"
	"slices"
)

// checkValid is the validity half of Kafka's checkValidityAndBalance, made
// exhaustive: every output member is in the spec; a member only holds
// partitions of topics it subscribes to, within the topic; no partition has
// two owners; and every partition of a topic that someone subscribes to has an
// owner. (For homogeneous specs, "subscribes" means the first member's topics,
// which is all Kafka reads.)
func checkValid(spec GroupSpec, topics SubscribedTopicDescriber, got GroupAssignment) error {
	subs := subscriptionsAsSeen(spec)
	owner := map[refTopicPartition]string{}
	for id, a := range got.Members {
		topicsOf, ok := subs[id]
		if !ok {
			return fmt.Errorf("member %q is in the output but not in the spec", id)
		}
		if err := checkShape(a); err != nil {
			return fmt.Errorf("member %q: %w", id, err)
		}
		for _, tp := range a {
			t, ps := tp.Topic, tp.Partitions
			if !slices.Contains(topicsOf, t) && len(ps) > 0 {
				return fmt.Errorf("member %q holds %v of topic %s it does not subscribe to", id, ps, t)
			}
			n := topics.NumPartitions(t)
			for _, p := range ps {
				if p < 0 || int(p) >= n {
					return fmt.Errorf("member %q holds partition %d of topic %s, which has %d", id, p, t, n)
				}
				k := refTopicPartition{t, p}
				if prev, dup := owner[k]; dup {
					return fmt.Errorf("partition %s-%d is held by both %q and %q", t, p, prev, id)
				}
				owner[k] = id
			}
		}
	}
	for _, ts := range subs {
		for _, t := range ts {
			for p := range int32(topics.NumPartitions(t)) {
				if _, ok := owner[refTopicPartition{t, p}]; !ok {
					return fmt.Errorf("partition %s-%d of a subscribed topic has no owner", t, p)
				}
			}
		}
	}
	return nil
}

func subscriptionsAsSeen(spec GroupSpec) map[string][]TopicID {
	subs := map[string][]TopicID{}
	for _, m := range spec.Members {
		if spec.Subscription == Homogeneous {
			subs[m.ID] = spec.Members[0].Topics
		} else {
			subs[m.ID] = m.Topics
		}
	}
	return subs
}

// checkShape: each topic once, with partitions, strictly ascending.
func checkShape(a MemberAssignment) error {
	seen := map[TopicID]bool{}
	for _, tp := range a {
		if seen[tp.Topic] {
			return fmt.Errorf("topic %s listed twice", tp.Topic)
		}
		seen[tp.Topic] = true
		if len(tp.Partitions) == 0 {
			return fmt.Errorf("topic %s listed without partitions", tp.Topic)
		}
		for i := 1; i < len(tp.Partitions); i++ {
			if tp.Partitions[i] <= tp.Partitions[i-1] {
				return fmt.Errorf("partitions of topic %s not strictly ascending: %v", tp.Topic, tp.Partitions)
			}
		}
	}
	return nil
}

func sizeOf(a MemberAssignment) int { return a.Size() }

// checkHomogeneousBalance: member sizes differ by at most one.
func checkHomogeneousBalance(spec GroupSpec, got GroupAssignment) error {
	lo, hi := -1, -1
	for _, m := range spec.Members {
		n := sizeOf(got.Members[m.ID])
		if lo == -1 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	if hi-lo > 1 {
		return fmt.Errorf("member sizes range from %d to %d: more than one apart", lo, hi)
	}
	return nil
}

// checkTopicBalance is the guarantee the heterogeneous builder gives when it
// converges: for every topic with two or more subscribers, no partition of it
// can move to another subscriber that holds 2+ fewer partitions in total.
func checkTopicBalance(spec GroupSpec, got GroupAssignment) error {
	subscribers := map[TopicID][]string{}
	for _, m := range spec.Members {
		for _, t := range m.Topics {
			subscribers[t] = append(subscribers[t], m.ID)
		}
	}
	for t, ms := range subscribers {
		for _, from := range ms {
			if len(got.Members[from].Partitions(t)) == 0 {
				continue
			}
			for _, to := range ms {
				if sizeOf(got.Members[from])-sizeOf(got.Members[to]) > 1 {
					return fmt.Errorf("topic %s: %q holds %d partitions and could give one to %q with %d",
						t, from, sizeOf(got.Members[from]), to, sizeOf(got.Members[to]))
				}
			}
		}
	}
	return nil
}

// checkSticky: with homogeneous subscriptions unchanged, a member that stays
// keeps min(its previous count, its new count) of its previous partitions of
// subscribed topics. (It may keep fewer only if its previous partitions
// overlapped another member's.)
func checkSticky(prev GroupSpec, got GroupAssignment) error {
	for _, m := range prev.Members {
		held := 0
		kept := 0
		for _, tp := range m.Assignment {
			if !slices.Contains(prev.Members[0].Topics, tp.Topic) {
				continue
			}
			held += len(tp.Partitions)
			for _, p := range tp.Partitions {
				if slices.Contains(got.Members[m.ID].Partitions(tp.Topic), p) {
					kept++
				}
			}
		}
		if want := min(held, sizeOf(got.Members[m.ID])); kept < want {
			return fmt.Errorf("member %q held %d partitions, now has %d, but kept only %d of the old ones", m.ID, held, sizeOf(got.Members[m.ID]), kept)
		}
	}
	return nil
}

// checkUnchangedWhenBalanced: feeding a balanced, valid homogeneous
// assignment back in moves nothing (the property KAFKA-18688 restored).
func checkUnchangedWhenBalanced(prev, got GroupAssignment) error {
	if !equalAssignments(prev.Members, got.Members) {
		return fmt.Errorf("a balanced assignment moved:\nbefore: %s\nafter:  %s", render(prev.Members), render(got.Members))
	}
	return nil
}
