package assignor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchGroup is 1000 members over 10 topics of 1000 partitions (10000 in all).
// Homogeneous: every member subscribes to every topic. Heterogeneous: each
// member subscribes to a random half of the topics (fixed seed).
func benchGroup(b *testing.B, st SubscriptionType) (GroupSpec, PartitionCounts) {
	b.Helper()
	const members, numTopics, partitions = 1000, 10, 1000
	rng := rand.New(rand.NewPCG(7, 11))
	topics := PartitionCounts{}
	var all []TopicID
	for range numTopics {
		id := randomTopicID(rng)
		topics[id] = partitions
		all = append(all, id)
	}
	spec := GroupSpec{Subscription: st}
	for i := range members {
		m := MemberSpec{ID: fmt.Sprintf("member-%04d", i), Topics: all}
		if st == Heterogeneous {
			m.Topics = nil
			for _, j := range rng.Perm(numTopics)[:numTopics/2] {
				m.Topics = append(m.Topics, all[j])
			}
		}
		spec.Members = append(spec.Members, m)
	}
	return spec, topics
}

func benchAssign(b *testing.B, a Assignor, st SubscriptionType, incremental bool) {
	spec, topics := benchGroup(b, st)
	if incremental {
		// The steady state after a join: everyone has a previous target and
		// one new member has none.
		prev, err := a.Assign(spec, topics)
		if err != nil {
			b.Fatal(err)
		}
		spec = withPrevious(spec, prev)
		joiner := spec.Members[0]
		joiner.ID, joiner.Assignment = "member-new", nil
		spec.Members = append(spec.Members, joiner)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Assign(spec, topics); err != nil {
			b.Fatal(err)
		}
	}
}

// go test -run '^$' -bench . -benchtime 20x ./coordinator/assignor/
func BenchmarkAssign(b *testing.B) {
	uniform, err := NewUniform()
	if err != nil {
		b.Fatal(err)
	}
	rng, err := NewRange()
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range []Assignor{uniform, rng} {
		for _, st := range []SubscriptionType{Homogeneous, Heterogeneous} {
			for _, incremental := range []bool{false, true} {
				mode := "full"
				if incremental {
					mode = "join"
				}
				b.Run(fmt.Sprintf("%s/%s/1000m×10000p/%s", a.Name(), st, mode), func(b *testing.B) {
					benchAssign(b, a, st, incremental)
				})
			}
		}
	}
}
