package assignor

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// groupGen draws random groups from a seeded stream and evolves them round by
// round the way a group evolves: members join and leave, topics grow,
// subscriptions change, and each round's output is the next round's previous
// target assignment.
type groupGen struct {
	rng    *rand.Rand
	topics PartitionCounts
	ids    []TopicID
	next   int
}

func newGroupGen(seed1, seed2 uint64) *groupGen {
	g := &groupGen{rng: rand.New(rand.NewPCG(seed1, seed2)), topics: PartitionCounts{}}
	for range 1 + g.rng.IntN(6) {
		g.addTopic()
	}
	return g
}

func (g *groupGen) addTopic() {
	id := randomTopicID(g.rng)
	g.topics[id] = g.rng.IntN(13)
	g.ids = append(g.ids, id)
}

func (g *groupGen) subset() []TopicID {
	var out []TopicID
	for _, i := range g.rng.Perm(len(g.ids)) {
		if g.rng.IntN(2) == 0 {
			out = append(out, g.ids[i])
		}
	}
	return out
}

func (g *groupGen) newMember(topics []TopicID) MemberSpec {
	g.next++
	m := MemberSpec{ID: fmt.Sprintf("m-%d-%x", g.next, g.rng.Uint32())}
	if g.rng.IntN(4) == 0 {
		m.InstanceID = fmt.Sprintf("i-%x", g.rng.Uint32())
	}
	m.Topics = slices.Clone(topics)
	return m
}

// initial returns a first spec with no previous assignment.
func (g *groupGen) initial(st SubscriptionType) GroupSpec {
	spec := GroupSpec{Subscription: st}
	shared := g.subset()
	for range 1 + g.rng.IntN(10) {
		if st == Homogeneous {
			spec.Members = append(spec.Members, g.newMember(shared))
		} else {
			spec.Members = append(spec.Members, g.newMember(g.subset()))
		}
	}
	return spec
}

// evolve applies one random change and installs prev as previous targets, in
// a random iteration order (the invariants hold for any order).
func (g *groupGen) evolve(spec GroupSpec, prev GroupAssignment) GroupSpec {
	out := GroupSpec{Subscription: spec.Subscription}
	for _, m := range spec.Members {
		m.Assignment = g.shuffled(prev.Members[m.ID])
		out.Members = append(out.Members, m)
	}
	switch g.rng.IntN(6) {
	case 0: // join
		topics := g.subset()
		if spec.Subscription == Homogeneous && len(out.Members) > 0 {
			topics = out.Members[0].Topics
		}
		out.Members = append(out.Members, g.newMember(topics))
	case 1: // leave
		if len(out.Members) > 1 {
			i := g.rng.IntN(len(out.Members))
			out.Members = slices.Delete(out.Members, i, i+1)
		}
	case 2: // partitions added
		t := g.ids[g.rng.IntN(len(g.ids))]
		g.topics[t] += 1 + g.rng.IntN(4)
	case 3: // subscription change
		if spec.Subscription == Homogeneous {
			topics := g.subset()
			for i := range out.Members {
				out.Members[i].Topics = slices.Clone(topics)
			}
		} else {
			i := g.rng.IntN(len(out.Members))
			out.Members[i].Topics = g.subset()
		}
	case 4: // a new topic, subscribed by some
		g.addTopic()
	case 5: // members iterated in another order (a new HashMap layout)
		g.rng.Shuffle(len(out.Members), func(i, j int) { out.Members[i], out.Members[j] = out.Members[j], out.Members[i] })
	}
	return out
}

func (g *groupGen) shuffled(a MemberAssignment) []TopicPartitions {
	var tps []TopicPartitions
	for _, t := range slices.SortedFunc(maps.Keys(asMap(a)), compareTopicIDs) {
		ps := slices.Clone(a.Partitions(t))
		g.rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		tps = append(tps, TopicPartitions{Topic: t, Partitions: ps})
	}
	g.rng.Shuffle(len(tps), func(i, j int) { tps[i], tps[j] = tps[j], tps[i] })
	return tps
}

func deepCopySpec(s GroupSpec) GroupSpec {
	out := s
	out.Members = make([]MemberSpec, len(s.Members))
	for i, m := range s.Members {
		m.Topics = slices.Clone(m.Topics)
		m.Assignment = slices.Clone(m.Assignment)
		for j := range m.Assignment {
			m.Assignment[j].Partitions = slices.Clone(m.Assignment[j].Partitions)
		}
		out.Members[i] = m
	}
	return out
}

// checkRound runs one assignor on one spec and checks every invariant that
// applies to it.
func checkRound(a Assignor, version string, spec GroupSpec, topics PartitionCounts) (GroupAssignment, error) {
	before := deepCopySpec(spec)
	got, err := a.Assign(spec, topics)
	if err != nil {
		return got, fmt.Errorf("assign: %w", err)
	}
	if !reflect.DeepEqual(before, spec) {
		return got, fmt.Errorf("the spec was modified")
	}
	again, err := a.Assign(spec, topics)
	if err != nil || !equalAssignments(got.Members, again.Members) {
		return got, fmt.Errorf("not deterministic: %v\n%s\n%s", err, render(got.Members), render(again.Members))
	}
	if err := checkValid(spec, topics, got); err != nil {
		return got, err
	}
	switch {
	case a.Name() == RangeName:
		if err := checkRangeShape(spec, got); err != nil {
			return got, err
		}
	case spec.Subscription == Homogeneous:
		if err := checkHomogeneousBalance(spec, got); err != nil {
			return got, err
		}
		if err := checkSticky(spec, got); err != nil {
			return got, err
		}
	default:
		if err := checkTopicBalance(spec, got); err != nil {
			return got, err
		}
	}
	return got, nil
}

// checkRangeShape: per topic, subscribers in range order hold contiguous,
// consecutive ranges whose sizes differ by at most one, larger ones first.
func checkRangeShape(spec GroupSpec, got GroupAssignment) error {
	order := rangeMemberOrder(spec.Members)
	subs := subscriptionsAsSeen(spec)
	perTopic := map[TopicID][]string{}
	for _, i := range order {
		id := spec.Members[i].ID
		topics := subs[id]
		if spec.Subscription == Homogeneous {
			topics = spec.Members[order[0]].Topics
		}
		for _, t := range topics {
			perTopic[t] = append(perTopic[t], id)
		}
	}
	for t, ms := range perTopic {
		next := int32(0)
		prevSize := -1
		for _, id := range ms {
			ps := got.Members[id].Partitions(t)
			for k, p := range ps {
				if p != next+int32(k) {
					return fmt.Errorf("range: %q holds %v of %s, not the range starting at %d", id, ps, t, next)
				}
			}
			next += int32(len(ps))
			if prevSize != -1 && (len(ps) > prevSize || prevSize-len(ps) > 1) && len(ps) > 0 {
				return fmt.Errorf("range: %s sizes out of order at %q", t, id)
			}
			prevSize = len(ps)
		}
	}
	return nil
}

func assignorsUnderTest(t testing.TB) map[string]Assignor {
	return map[string]Assignor{
		"uniform-4.0.0": mustUniform(t, KafkaVersion("4.0.0")),
		"uniform-4.4.0": mustUniform(t),
		"range":         mustRange(t),
	}
}

// runRounds evolves one random group through a few rounds under every
// assignor and both subscription types.
func runRounds(t testing.TB, seed1, seed2 uint64) {
	t.Helper()
	for name, a := range assignorsUnderTest(t) {
		for _, st := range []SubscriptionType{Homogeneous, Heterogeneous} {
			g := newGroupGen(seed1, seed2)
			spec := g.initial(st)
			for round := range 6 {
				got, err := checkRound(a, name, spec, g.topics)
				if err != nil {
					t.Fatalf("seed (%d,%d) %s %s round %d: %v\nspec: %+v", seed1, seed2, name, st, round, err, spec)
				}
				// From 4.0.1 on, and for heterogeneous groups, feeding a
				// balanced assignment straight back moves nothing.
				if a.Name() == UniformName && (name != "uniform-4.0.0" || st == Heterogeneous) {
					again, err := a.Assign(withPrevious(spec, got), g.topics)
					if err != nil {
						t.Fatalf("seed (%d,%d) %s %s round %d re-run: %v", seed1, seed2, name, st, round, err)
					}
					if err := checkUnchangedWhenBalanced(got, again); err != nil {
						t.Fatalf("seed (%d,%d) %s %s round %d: %v", seed1, seed2, name, st, round, err)
					}
				}
				spec = g.evolve(spec, got)
			}
		}
	}
}

// Seeded property test: 200 random groups, 6 rounds each.
func TestPropertyRandomGroups(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 40
	}
	for seed := range uint64(n) {
		runRounds(t, seed, 0x9E3779B97F4A7C15)
	}
}

// FuzzAssignors drives the same generator from fuzzed seeds, and also feeds
// arbitrary (possibly overlapping or stale) previous assignments, where the
// only requirements are: no panic, determinism, and a valid result or an error.
func FuzzAssignors(f *testing.F) {
	for _, s := range [][2]uint64{{0, 0}, {1, 2}, {42, 7}, {1 << 63, 3}} {
		f.Add(s[0], s[1], false)
		f.Add(s[0], s[1], true)
	}
	f.Fuzz(func(t *testing.T, seed1, seed2 uint64, garbage bool) {
		if !garbage {
			runRounds(t, seed1, seed2)
			return
		}
		g := newGroupGen(seed1, seed2)
		for _, st := range []SubscriptionType{Homogeneous, Heterogeneous} {
			spec := g.initial(st)
			for i := range spec.Members {
				for _, t := range g.subset() {
					n := g.topics[t] + 2
					var ps []int32
					for p := range int32(n) {
						if g.rng.IntN(3) == 0 {
							ps = append(ps, p)
						}
					}
					if len(ps) > 0 {
						spec.Members[i].Assignment = append(spec.Members[i].Assignment, TopicPartitions{t, ps})
					}
				}
			}
			for name, a := range assignorsUnderTest(t) {
				got1, err1 := a.Assign(spec, g.topics)
				got2, err2 := a.Assign(spec, g.topics)
				if (err1 == nil) != (err2 == nil) || (err1 == nil && !equalAssignments(got1.Members, got2.Members)) {
					t.Fatalf("%s: not deterministic: %v / %v", name, err1, err2)
				}
			}
		}
	})
}
