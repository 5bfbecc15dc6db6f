package kafkaref

import (
	"fmt"

	"github.com/groupquake/groupquake/coordinator/assignor"
)

// Size is one group size of Kafka's ServerSideAssignorBenchmark: members,
// partitions per member (partitionsToMemberRatio) and topics; the
// partitions of each topic are members × ratio / topics.
type Size struct {
	Members, Ratio, Topics int
}

// JMHSizes are the sizes BenchCases takes from ServerSideAssignorBenchmark
// by default: its middle ratio (10) at a small, a middle and its largest
// member count. JMHAllSizes is its whole size matrix.
var JMHSizes = []Size{{100, 10, 10}, {1000, 10, 100}, {10000, 10, 100}}

// JMHAllSizes is every memberCount × partitionsToMemberRatio × topicCount
// of ServerSideAssignorBenchmark (where a topic gets at least one
// partition).
func JMHAllSizes() []Size {
	var out []Size
	for _, m := range []int{100, 500, 1000, 5000, 10000} {
		for _, r := range []int{5, 10, 50} {
			for _, t := range []int{10, 100, 1000} {
				if m*r/t > 0 {
					out = append(out, Size{m, r, t})
				}
			}
		}
	}
	return out
}

// ReconcileSizes are CurrentAssignmentBuilderBenchmark's whole matrix:
// topicCount × partitionsPerTopic.
var ReconcileSizes = [][2]int{{10, 5}, {10, 50}, {100, 5}, {100, 50}, {1000, 5}, {1000, 50}}

// BenchCase is one case of the side-by-side benchmark, built when it is
// timed, so that a benchmark process holds the case it times and no other
// (the Go side's garbage collector then works on what the case needs, as
// the Java side's, which loads one case per JVM).
type BenchCase struct {
	Name string
	// Kind is "assign", "reconcile" or "target".
	Kind  string
	Build func() (Cases, error)
}

// BenchCaseList lists the cases of the side-by-side benchmark:
//
//   - "issue/…": 1000 members over 10 topics of 1000 partitions (10,000 in
//     all), uniform and range, homogeneous and heterogeneous (each member a
//     seeded random half of the topics), a full assignment and a join, the
//     shape of coordinator/assignor's BenchmarkAssign;
//   - "jmh/…": ServerSideAssignorBenchmark's layout (jmh bucketed
//     heterogeneous subscriptions; isRackAware=false, as no 4.x assignor
//     reads racks) at each of sizes, both assignors, both subscription
//     types, FULL and INCREMENTAL;
//   - "cab/…": CurrentAssignmentBuilderBenchmark's four methods at every
//     size it has;
//   - "cab-group/…": the reconciliation of all 1001 members of the issue's
//     homogeneous group after one joined;
//   - "tab/…": Kafka's TargetAssignmentBuilderBenchmark (the uniform
//     assignor, a member joining a group of members - 1 that hold their
//     target) at each of sizes, both subscription types.
func BenchCaseList(sizes []Size) []BenchCase {
	var out []BenchCase
	assign := func(name string, build func() (AssignCase, error)) {
		out = append(out, BenchCase{Name: name, Kind: "assign", Build: func() (Cases, error) {
			c, err := build()
			return Cases{Assign: []AssignCase{c}}, err
		}})
	}
	mode := func(join bool) string {
		if join {
			return "join"
		}
		return "full"
	}
	kinds := []string{assignor.UniformName, assignor.RangeName}
	types := []assignor.SubscriptionType{assignor.Homogeneous, assignor.Heterogeneous}
	for _, a := range kinds {
		for _, st := range types {
			for _, join := range []bool{false, true} {
				name := fmt.Sprintf("issue/%s/%s/%s/m=1000,p=10000,t=10", a, st, mode(join))
				assign(name, func() (AssignCase, error) {
					return NewAssignCase(name, a, st, AssignLayout{Members: 1000, Topics: 10, Partitions: 1000, MemberPrefix: "member-"}, join, 7)
				})
			}
		}
	}
	for _, sz := range sizes {
		for _, a := range kinds {
			for _, st := range types {
				for _, join := range []bool{false, true} {
					p := sz.Members * sz.Ratio / sz.Topics
					name := fmt.Sprintf("jmh/%s/%s/%s/m=%d,p=%d,t=%d", a, st, mode(join), sz.Members, p*sz.Topics, sz.Topics)
					assign(name, func() (AssignCase, error) {
						return NewAssignCase(name, a, st, AssignLayout{Members: sz.Members, Topics: sz.Topics, Partitions: p, Bucketed: true, MemberPrefix: "member"}, join, 11)
					})
				}
			}
		}
	}
	for _, sc := range ReconcileScenarios {
		for _, sz := range ReconcileSizes {
			name := fmt.Sprintf("cab/%s/topics=%d,pps=%d", sc, sz[0], sz[1])
			out = append(out, BenchCase{Name: name, Kind: "reconcile", Build: func() (Cases, error) {
				return Cases{Reconcile: []ReconcileCase{NewMemberReconcileCase(name, sc, sz[0], sz[1], 13)}}, nil
			}})
		}
	}
	const group = "cab-group/join/m=1001,p=10000,t=10"
	out = append(out, BenchCase{Name: group, Kind: "reconcile", Build: func() (Cases, error) {
		g, err := NewGroupReconcileCase(group, 1000, 10, 1000, 17)
		return Cases{Reconcile: []ReconcileCase{g}}, err
	}})
	for _, sz := range sizes {
		for _, st := range types {
			p := sz.Members * sz.Ratio / sz.Topics
			name := fmt.Sprintf("tab/%s/m=%d,p=%d,t=%d", st, sz.Members, p*sz.Topics, sz.Topics)
			out = append(out, BenchCase{Name: name, Kind: "target", Build: func() (Cases, error) {
				c, err := NewTargetCase(name, st, sz, 19)
				return Cases{Target: []TargetCase{c}}, err
			}})
		}
	}
	return out
}

// BenchCases builds every case of BenchCaseList.
func BenchCases(sizes []Size) (Cases, error) {
	var cs Cases
	for _, bc := range BenchCaseList(sizes) {
		c, err := bc.Build()
		if err != nil {
			return cs, err
		}
		cs.Assign = append(cs.Assign, c.Assign...)
		cs.Reconcile = append(cs.Reconcile, c.Reconcile...)
		cs.Target = append(cs.Target, c.Target...)
	}
	return cs, nil
}

// SmallCases are small inputs of every kind, for comparing results.
func SmallCases() (Cases, error) {
	var cs Cases
	kinds := []string{assignor.UniformName, assignor.RangeName}
	layouts := []AssignLayout{
		{Members: 7, Topics: 4, Partitions: 9, MemberPrefix: "m"},
		{Members: 12, Topics: 6, Partitions: 5, Bucketed: true, Racks: true, MemberPrefix: "member"},
		{Members: 5, Topics: 3, Partitions: 2, MemberPrefix: "few"},
	}
	n := 0
	for _, a := range kinds {
		for _, st := range []assignor.SubscriptionType{assignor.Homogeneous, assignor.Heterogeneous} {
			for li, l := range layouts {
				for _, join := range []bool{false, true} {
					n++
					name := fmt.Sprintf("small/%s/%s/layout%d/join=%t", a, st, li, join)
					c, err := NewAssignCase(name, a, st, l, join, uint64(n))
					if err != nil {
						return cs, err
					}
					cs.Assign = append(cs.Assign, c)
				}
			}
		}
	}
	for _, sc := range ReconcileScenarios {
		cs.Reconcile = append(cs.Reconcile, NewMemberReconcileCase("small/cab/"+string(sc), sc, 3, 4, 5))
	}
	cs.Reconcile = append(cs.Reconcile,
		NewMissingTopicReconcileCase("small/cab-missing/empty", false, 7),
		NewMissingTopicReconcileCase("small/cab-missing/held", true, 8))
	g, err := NewGroupReconcileCase("small/cab-group/join", 6, 3, 5, 6)
	if err != nil {
		return cs, err
	}
	cs.Reconcile = append(cs.Reconcile, g)
	for i, sz := range []Size{{7, 3, 5}, {12, 2, 6}, {25, 4, 10}} {
		for _, st := range []assignor.SubscriptionType{assignor.Homogeneous, assignor.Heterogeneous} {
			c, err := NewTargetCase(fmt.Sprintf("small/tab/%s/size%d", st, i), st, sz, uint64(20+i))
			if err != nil {
				return cs, err
			}
			s := c.Scrambled(uint64(30 + i))
			s.Name = fmt.Sprintf("small/tab-scrambled/%s/size%d", st, i)
			cs.Target = append(cs.Target, c, s)
		}
	}
	return cs, nil
}
