package assignor

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// wildSpec draws a group spec of any shape a caller could hand the assignors,
// valid or not: previous assignments that overlap between members, hold stale
// partitions (beyond the topic's size) or topics nobody subscribes to, list
// partitions in any order; subscriptions shared between members (one slice)
// or equal copies or different; topics missing from the metadata; an
// explicit inverted target assignment that agrees with the members or not;
// and, rarely, duplicates and negative partitions that make it invalid.
func wildSpec(rng *rand.Rand) (GroupSpec, PartitionCounts) {
	topics := PartitionCounts{}
	var all []TopicID
	nTopics := 1 + rng.IntN(6)
	if rng.IntN(4) == 0 {
		nTopics = 9 + rng.IntN(16) // past the small-set paths
	}
	missing := rng.IntN(4) == 0 // some topics missing from the metadata
	stale := rng.IntN(4) == 0   // previous assignments beyond the topics' sizes
	overlap := rng.IntN(3) == 0 // previous assignments that overlap
	for range nTopics {
		id := randomTopicID(rng)
		all = append(all, id)
		if missing && rng.IntN(6) == 0 {
			continue
		}
		topics[id] = rng.IntN(40)
	}
	subset := func() []TopicID {
		var out []TopicID
		for _, i := range rng.Perm(len(all)) {
			if rng.IntN(2) == 0 {
				out = append(out, all[i])
			}
		}
		return out
	}
	spec := GroupSpec{Subscription: SubscriptionType(rng.IntN(2))}
	nMembers := rng.IntN(12)
	if rng.IntN(5) == 0 {
		nMembers = 20 + rng.IntN(60)
	}
	shared := subset()
	prev := shared
	for i := range nMembers {
		m := MemberSpec{ID: fmt.Sprintf("m%d-%x", i, rng.IntN(1<<16))}
		switch rng.IntN(8) {
		case 0:
			m.ID = fmt.Sprintf("ü%d-\U0001F600%x", i, rng.IntN(1<<8)) // Java's UTF-16 order differs from Go's
		case 1:
			m.InstanceID = fmt.Sprintf("i-%x", rng.IntN(64))
		}
		switch rng.IntN(4) {
		case 0:
			m.Topics = shared // the same slice as other members
		case 1:
			m.Topics = slices.Clone(prev) // an equal copy of the previous member's
		case 2:
			m.Topics = subset()
		default:
			m.Topics = slices.Clone(shared)
		}
		prev = m.Topics
		if overlap {
			// The previous target drawn for each member alone: topics of
			// any kind, partitions in any order.
			for _, t := range subset() {
				var ps []int32
				for p := range int32(topics[t] + 2) {
					if rng.IntN(3) == 0 && (stale || int(p) < topics[t]) {
						ps = append(ps, p)
					}
				}
				if len(ps) > 0 || rng.IntN(8) == 0 {
					m.Assignment = append(m.Assignment, TopicPartitions{Topic: t, Partitions: ps})
				}
			}
		}
		spec.Members = append(spec.Members, m)
	}
	if !overlap && len(spec.Members) > 0 {
		// Every partition (and a few beyond when stale) held by at most
		// one member, who may no longer subscribe to its topic.
		held := make([]map[TopicID][]int32, len(spec.Members))
		for _, t := range all {
			for p := range int32(topics[t] + 2) {
				if int(p) >= topics[t] && !stale {
					break
				}
				if i := rng.IntN(len(spec.Members) + 1); i < len(spec.Members) {
					if held[i] == nil {
						held[i] = map[TopicID][]int32{}
					}
					held[i][t] = append(held[i][t], p)
				}
			}
		}
		for i, h := range held {
			for _, t := range all {
				ps, ok := h[t]
				if !ok {
					continue
				}
				if rng.IntN(3) == 0 {
					rng.Shuffle(len(ps), func(a, b int) { ps[a], ps[b] = ps[b], ps[a] })
				}
				spec.Members[i].Assignment = append(spec.Members[i].Assignment, TopicPartitions{Topic: t, Partitions: ps})
			}
			rng.Shuffle(len(spec.Members[i].Assignment), func(a, b int) {
				spec.Members[i].Assignment[a], spec.Members[i].Assignment[b] = spec.Members[i].Assignment[b], spec.Members[i].Assignment[a]
			})
		}
	}
	// Rarely, make it invalid, once or twice.
	for range rng.IntN(2) + 1 {
		if len(spec.Members) == 0 || rng.IntN(10) != 0 {
			break
		}
		i := rng.IntN(len(spec.Members))
		m := &spec.Members[i]
		switch rng.IntN(6) {
		case 0:
			if i > 0 {
				m.ID = spec.Members[rng.IntN(i)].ID
			}
		case 1:
			if len(m.Topics) > 0 {
				m.Topics = append(slices.Clone(m.Topics), m.Topics[rng.IntN(len(m.Topics))])
				rng.Shuffle(len(m.Topics), func(a, b int) { m.Topics[a], m.Topics[b] = m.Topics[b], m.Topics[a] })
			}
		case 2:
			if len(m.Assignment) > 0 {
				m.Assignment = append(m.Assignment, m.Assignment[rng.IntN(len(m.Assignment))])
			}
		case 3:
			if len(m.Assignment) > 0 {
				a := &m.Assignment[rng.IntN(len(m.Assignment))]
				if len(a.Partitions) > 0 {
					a.Partitions = append(slices.Clone(a.Partitions), a.Partitions[rng.IntN(len(a.Partitions))])
				}
			}
		case 4:
			if len(m.Assignment) > 0 {
				a := &m.Assignment[rng.IntN(len(m.Assignment))]
				a.Partitions = append(slices.Clone(a.Partitions), -1-int32(rng.IntN(3)))
			}
		case 5:
			spec.Subscription = SubscriptionType(2 + rng.IntN(5))
		}
	}
	switch rng.IntN(3) {
	case 0: // the inverted target assignment as a coordinator keeps it
		inv := map[TopicID]map[int32]string{}
		for _, m := range spec.Members {
			for _, tp := range m.Assignment {
				if inv[tp.Topic] == nil {
					inv[tp.Topic] = map[int32]string{}
				}
				for _, p := range tp.Partitions {
					inv[tp.Topic][p] = m.ID
				}
			}
		}
		spec.InvertedTargetAssignment = inv
	case 1: // an inverted target assignment that does not agree
		inv := map[TopicID]map[int32]string{}
		for _, t := range all {
			if rng.IntN(2) == 0 {
				inv[t] = map[int32]string{}
				for p := range int32(topics[t]) {
					if rng.IntN(3) == 0 {
						inv[t][p] = "someone"
					}
				}
			}
		}
		spec.InvertedTargetAssignment = inv
	}
	return spec, topics
}

// exactlyEqual: the same members, each with the same topics and the same
// partitions (the fast output listing each topic once, with partitions,
// ascending; the reference never lists an empty topic).
func exactlyEqual(ref map[string]refMemberAssignment, fast map[string]MemberAssignment) bool {
	if len(ref) != len(fast) || (ref == nil) != (fast == nil) {
		return false
	}
	for id, ma := range ref {
		mb, ok := fast[id]
		if !ok || len(ma) != len(mb) || checkShape(mb) != nil {
			return false
		}
		for t, ps := range ma {
			if !slices.Equal(ps, mb.Partitions(t)) {
				return false
			}
		}
	}
	return true
}

func renderRef(a map[string]refMemberAssignment) string {
	out := map[string]MemberAssignment{}
	for id, m := range a {
		var ma MemberAssignment
		for t, ps := range m {
			ma = append(ma, TopicPartitions{Topic: t, Partitions: ps})
		}
		out[id] = ma
	}
	return render(out)
}

type refCase struct {
	name string
	fast Assignor
	ref  func(GroupSpec, SubscribedTopicDescriber) (refGroupAssignment, error)
	// javaVersion is the assignor's, for specs in record order.
	javaVersion int
	// into is reused by AssignInto from one spec to the next.
	into *GroupAssignment
}

func refCases(t testing.TB) []refCase {
	var out []refCase
	for _, opts := range [][]Opt{{}, {KafkaVersion("4.0.0")}, {JavaVersion(17)}} {
		u := mustUniform(t, opts...)
		out = append(out, refCase{fmt.Sprintf("uniform%v", u.cfg), u, func(s GroupSpec, d SubscribedTopicDescriber) (refGroupAssignment, error) {
			return refUniformAssign(u, s, d)
		}, u.cfg.javaVersion, &GroupAssignment{}})
	}
	out = append(out, refCase{"range", mustRange(t), refRangeAssign, DefaultJavaVersion, &GroupAssignment{}})
	return out
}

// sameAsReference runs spec through every assignor and its reference and
// wants the same outcome: the same error message, or the same assignment,
// with the spec left as it was.
func sameAsReference(t testing.TB, cases []refCase, spec GroupSpec, topics PartitionCounts, what string) {
	t.Helper()
	for _, c := range cases {
		before := deepCopySpec(spec)
		refSpec := deepCopySpec(spec)
		if spec.RecordOrder {
			// The reference is given Kafka's order itself.
			refSpec.RecordOrder = false
			for i := range refSpec.Members {
				refSpec.Members[i].Assignment = JavaAssignmentOrder(refSpec.Members[i].Assignment, c.javaVersion)
			}
		}
		want, werr := c.ref(refSpec, topics)
		got, gerr := c.fast.Assign(spec, topics)
		// AssignInto, reusing what the previous spec's call left, gives the
		// same.
		ierr := c.fast.(IntoAssignor).AssignInto(spec, topics, c.into)
		switch {
		case (ierr == nil) != (gerr == nil) || (ierr != nil && ierr.Error() != gerr.Error()):
			t.Fatalf("%s %s: AssignInto error %v, Assign error %v", what, c.name, ierr, gerr)
		case gerr == nil && !reflect.DeepEqual(asMaps(got.Members), asMaps(c.into.Members)):
			t.Fatalf("%s %s: AssignInto gives\n%s\nAssign\n%s", what, c.name, render(c.into.Members), render(got.Members))
		}
		if !reflect.DeepEqual(before, deepCopySpec(spec)) {
			t.Fatalf("%s %s: the spec was modified", what, c.name)
		}
		switch {
		case (werr == nil) != (gerr == nil):
			t.Fatalf("%s %s: reference error %v, fast error %v\nspec: %+v", what, c.name, werr, gerr, spec)
		case werr != nil && werr.Error() != gerr.Error():
			t.Fatalf("%s %s: reference error %q, fast error %q\nspec: %+v", what, c.name, werr, gerr, spec)
		case werr == nil && !exactlyEqual(want.Members, got.Members):
			t.Fatalf("%s %s: differs from the reference\nreference: %s\nfast:      %s\nspec: %+v", what, c.name, renderRef(want.Members), render(got.Members), spec)
		}
	}
}

// TestSameAsReference: the assignors give exactly what their earlier,
// map-based implementations (reference_test.go) gave, on evolving groups
// (each round's output the next round's previous target, members shuffled,
// joining, leaving) and on wild specs (overlapping, stale, unsorted and
// invalid inputs), so the speed-up changed no result and no error.
func TestSameAsReference(t *testing.T) {
	cases := refCases(t)
	n := 3000
	if testing.Short() {
		n = 600
	}
	for seed := range uint64(n) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		spec, topics := wildSpec(rng)
		sameAsReference(t, cases, spec, topics, fmt.Sprintf("wild seed %d", seed))
		spec.RecordOrder = true
		sameAsReference(t, cases, spec, topics, fmt.Sprintf("wild seed %d in record order", seed))
	}
	rounds := 120
	if testing.Short() {
		rounds = 30
	}
	for seed := range uint64(rounds) {
		for _, st := range []SubscriptionType{Homogeneous, Heterogeneous} {
			for _, c := range cases {
				g := newGroupGen(seed, 0xd1ff)
				spec := g.initial(st)
				for round := range 8 {
					sameAsReference(t, []refCase{c}, spec, g.topics, fmt.Sprintf("seed %d %s round %d", seed, st, round))
					got, err := c.fast.Assign(spec, g.topics)
					if err != nil {
						break
					}
					spec = g.evolve(spec, got)
				}
			}
		}
	}
}

// FuzzSameAsReference is TestSameAsReference's wild specs from fuzzed seeds.
func FuzzSameAsReference(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 63} {
		f.Add(s, s^0x5eed)
	}
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		rng := rand.New(rand.NewPCG(s1, s2))
		spec, topics := wildSpec(rng)
		spec.RecordOrder = rng.IntN(2) == 0
		sameAsReference(t, refCases(t), spec, topics, fmt.Sprintf("seed (%d,%d)", s1, s2))
	})
}

func asMaps(a map[string]MemberAssignment) map[string]map[TopicID][]int32 {
	out := map[string]map[TopicID][]int32{}
	for id, m := range a {
		out[id] = asMap(m)
	}
	return out
}
