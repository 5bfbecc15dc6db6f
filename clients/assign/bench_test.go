package assign

import (
	"fmt"
	"testing"
)

// benchGroup is 100 members over 10 topics of 100 partitions (1000
// partitions). With uniform set, every member subscribes to every topic
// (the constrained builder); otherwise odd members subscribe to the first
// five topics only (the general builder).
func benchGroup(uniform bool) ([]Member, map[string]int32) {
	topics := map[string]int32{}
	var all, half []string
	for i := range 10 {
		name := fmt.Sprintf("topic-%d", i)
		topics[name] = 100
		all = append(all, name)
		if i < 5 {
			half = append(half, name)
		}
	}
	members := make([]Member, 100)
	for i := range members {
		members[i] = subscribe(fmt.Sprintf("consumer-%03d-5f0c2b9e", i), all...)
		if !uniform && i%2 == 1 {
			members[i].Topics = half
		}
	}
	return members, topics
}

// BenchmarkSticky measures sticky and cooperative-sticky on 100 members ×
// 1000 partitions: a fresh group, and the rebalance after one member of a
// settled group leaves (the case stickiness is for).
func BenchmarkSticky(b *testing.B) {
	for _, uniform := range []bool{true, false} {
		for _, a := range []Assignor{Sticky(), CooperativeSticky()} {
			members, topics := benchGroup(uniform)
			settled, err := a.Assign(members, topics)
			if err != nil {
				b.Fatal(err)
			}
			leave := withOwned(members, settled, 1)[1:]
			kind := "uniform"
			if !uniform {
				kind = "mixed"
			}
			for _, c := range []struct {
				name    string
				members []Member
			}{{"fresh", members}, {"member-leaves", leave}} {
				b.Run(fmt.Sprintf("%s/%s/%s", a.Name(), kind, c.name), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := a.Assign(c.members, topics); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

func BenchmarkRangeRoundRobin(b *testing.B) {
	members, topics := benchGroup(false)
	for _, a := range []Assignor{Range(), RoundRobin()} {
		b.Run(a.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Assign(members, topics); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
