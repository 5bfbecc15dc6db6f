package assign

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestHandCases(t *testing.T) {
	t.Parallel()
	for _, c := range handCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a, err := ByName(c.assignor)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "ERROR" {
				if _, err := a.Assign(c.members, c.topics); !errors.Is(err, ErrJavaThrows) {
					t.Fatalf("got %v, want ErrJavaThrows", err)
				}
				return
			}
			got := mustAssign(t, a, c.members, c.topics)
			if c.want != "" && !samePlan(got, parsePlan(c.want)) {
				t.Fatalf("got:\n%swant:\n%s", got, parsePlan(c.want))
			}
			if c.name == "java-quirk-empty-subscription" {
				return // Java assigns an unsubscribed topic here
			}
			if v := violatesValidity(c.members, c.topics, got, a.Name() == CooperativeStickyName, a); v != "" {
				t.Fatal(v)
			}
		})
	}
}

func TestChooseProtocol(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		names []string
		want  Protocol
	}{
		{[]string{RangeName}, Eager},
		{[]string{RoundRobinName}, Eager},
		{[]string{StickyName}, Eager},
		{[]string{CooperativeStickyName}, Cooperative},
		{[]string{RangeName, CooperativeStickyName}, Eager},
		{[]string{CooperativeStickyName, RangeName}, Eager},
		{[]string{CooperativeStickyName, CooperativeStickyName}, Cooperative},
	} {
		var as []Assignor
		for _, n := range c.names {
			a, err := ByName(n)
			if err != nil {
				t.Fatal(err)
			}
			as = append(as, a)
		}
		got, err := ChooseProtocol(as)
		if err != nil || got != c.want {
			t.Errorf("ChooseProtocol(%v) = %v, %v; want %v", c.names, got, err, c.want)
		}
	}
	if _, err := ChooseProtocol(nil); err == nil {
		t.Error("ChooseProtocol(nil) succeeded; want an error")
	}
	if _, err := ChooseProtocol([]Assignor{onlyCooperative{}, Range()}); err == nil || !strings.Contains(err.Error(), "no rebalance protocol in common") {
		t.Errorf("disjoint protocols: got %v", err)
	}
}

// onlyCooperative is a custom assignor that supports COOPERATIVE alone.
type onlyCooperative struct{}

func (onlyCooperative) Name() string          { return "only-cooperative" }
func (onlyCooperative) Protocols() []Protocol { return []Protocol{Cooperative} }
func (onlyCooperative) Assign([]Member, map[string]int32) (Assignment, error) {
	return Assignment{}, nil
}

func TestByNameUnknown(t *testing.T) {
	t.Parallel()
	_, err := ByName("uniform")
	if err == nil || !strings.Contains(err.Error(), `"uniform"`) {
		t.Fatalf("ByName(uniform) = %v", err)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	for _, a := range all() {
		_, err := a.Assign([]Member{subscribe("A", "t"), subscribe("A", "t")}, map[string]int32{"t": 1})
		if err == nil || !strings.Contains(err.Error(), `"A" appears twice`) {
			t.Errorf("%s duplicate id: %v", a.Name(), err)
		}
		_, err = a.Assign([]Member{subscribe("A", "t")}, map[string]int32{"t": -1})
		if err == nil || !strings.Contains(err.Error(), "-1") {
			t.Errorf("%s negative count: %v", a.Name(), err)
		}
		plan, err := a.Assign(nil, map[string]int32{"t": 3})
		if err != nil || len(plan) != 0 {
			t.Errorf("%s no members: %v %v", a.Name(), plan, err)
		}
	}
}

func all() []Assignor { return []Assignor{Range(), RoundRobin(), Sticky(), CooperativeSticky()} }

// TestSeedExampleCooperative runs the seed example through the member
// loop: A owns all six partitions, B joins; A revokes what it lost and the
// group rebalances again.
func TestSeedExampleCooperative(t *testing.T) {
	t.Parallel()
	topics := map[string]int32{"t": 6}
	a := CooperativeSticky()
	members := []Member{owning(subscribe("A", "t"), 1, map[string][]int32{"t": {0, 1, 2, 3, 4, 5}}), subscribe("B", "t")}
	round1 := mustAssign(t, a, members, topics)
	if want := parsePlan("A: t[0 1 2]\nB:"); !samePlan(round1, want) {
		t.Fatalf("round 1:\n%swant:\n%s", round1, want)
	}
	if err := ValidateCooperative(members, round1); err != nil {
		t.Fatal(err)
	}
	// A revokes [3 4 5]; both rejoin owning their round-1 assignment.
	round2 := mustAssign(t, a, withOwned(members, round1, 2), topics)
	if want := parsePlan("A: t[0 1 2]\nB: t[3 4 5]"); !samePlan(round2, want) {
		t.Fatalf("round 2:\n%swant:\n%s", round2, want)
	}
	// Eager sticky does it in one round: B gets [3 4 5] at once.
	eager := mustAssign(t, Sticky(), members, topics)
	if !samePlan(eager, round2) {
		t.Fatalf("sticky:\n%swant:\n%s", eager, round2)
	}
	// The plan that eager sticky makes is what cooperative must not do.
	if err := ValidateCooperative(members, eager); err == nil || !strings.Contains(err.Error(), `t-3 from "A" to "B"`) {
		t.Fatalf("ValidateCooperative(eager plan) = %v", err)
	}
}

// TestInvariants runs every assignor over seeded random groups and checks
// what each promises.
func TestInvariants(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		members, topics := genGroup(r, 12, 5, 20, true)
		identical := identicalSubscriptions(members)
		for _, a := range all() {
			assignHolds(t, a, members, topics, identical)
		}
	}
}

// assignHolds assigns members to topics with a and fails t unless the plan
// is valid, keeps the cooperative rule (cooperative-sticky) and, with
// identical subscriptions, is balanced (round-robin and sticky). It
// returns the plan, and false when Java's assignor would throw instead.
func assignHolds(t *testing.T, a Assignor, members []Member, topics map[string]int32, identical bool) (Assignment, bool) {
	t.Helper()
	plan, err := a.Assign(members, topics)
	if errors.Is(err, ErrJavaThrows) {
		return plan, false
	}
	if err != nil {
		t.Fatalf("%s: %v", a.Name(), err)
	}
	coop := a.Name() == CooperativeStickyName
	if v := violatesValidity(members, topics, plan, coop, a); v != "" {
		t.Fatalf("%s: %s\ninput %v\nplan:\n%s", a.Name(), v, members, plan)
	}
	if coop {
		if err := ValidateCooperative(members, plan); err != nil {
			t.Fatalf("cooperative-sticky broke the cooperative rule: %v\nplan:\n%s", err, plan)
		}
	}
	if identical && (a.Name() == RoundRobinName || a.Name() == StickyName) {
		if v := violatesBalance(plan); v != "" {
			t.Fatalf("%s with identical subscriptions: %s\nplan:\n%s", a.Name(), v, plan)
		}
	}
	return plan, true
}

func identicalSubscriptions(members []Member) bool {
	for _, m := range members[1:] {
		a, b := slices.Sorted(slices.Values(m.Topics)), slices.Sorted(slices.Values(members[0].Topics))
		if !slices.Equal(a, b) {
			return false
		}
	}
	return true
}

// TestStickiness: with identical subscriptions, a member keeps what it
// owned up to the quota, round after round, as members come and go.
func TestStickiness(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		topics := map[string]int32{"t0": int32(1 + r.IntN(30)), "t1": int32(r.IntN(30))}
		var members []Member
		for i := range 1 + r.IntN(8) {
			members = append(members, subscribe(string(rune('A'+i)), "t0", "t1"))
		}
		for _, a := range []Assignor{Sticky(), CooperativeSticky()} {
			cur := slices.Clone(members)
			plan := mustAssign(t, a, cur, topics)
			for gen := int32(1); gen < 6; gen++ {
				cur = withOwned(cur, plan, gen)
				switch r.IntN(3) {
				case 0:
					cur = append(cur, subscribe(string(rune('a'+gen)), "t0", "t1"))
				case 1:
					if len(cur) > 1 {
						k := r.IntN(len(cur))
						cur = slices.Delete(cur, k, k+1)
					}
				}
				owned := make([]map[string][]int32, len(cur))
				for i, m := range cur {
					owned[i] = m.Owned
				}
				plan = mustAssign(t, a, cur, topics)
				if v := violatesStickiness(cur, owned, topics, plan); v != "" {
					t.Fatalf("%s generation %d: %s\nplan:\n%s", a.Name(), gen, v, plan)
				}
				if a.Name() == StickyName {
					if v := violatesBalance(plan); v != "" {
						t.Fatalf("sticky generation %d: %s", gen, v)
					}
				}
			}
		}
	}
}

// TestCooperativeConverges: like Java's CooperativeStickyAssignorTest, keep
// rebalancing while someone revokes; within a few rounds the plan is
// complete, and balanced when subscriptions are identical.
func TestCooperativeConverges(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	a := CooperativeSticky()
	for range 200 {
		members, topics := genGroup(r, 10, 4, 25, false)
		gen := int32(10)
		plan, err := a.Assign(members, topics)
		if errors.Is(err, ErrJavaThrows) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for rounds := 0; revokes(members, plan); rounds++ {
			if rounds > 4 {
				t.Fatalf("no convergence after %d rounds:\n%s", rounds, plan)
			}
			gen++
			members = withOwned(members, plan, gen)
			if plan, err = a.Assign(members, topics); err != nil {
				t.Fatal(err)
			}
			if err := ValidateCooperative(members, plan); err != nil {
				t.Fatal(err)
			}
		}
		// One more round from the settled state: nothing is withheld.
		members = withOwned(members, plan, gen+1)
		plan = mustAssign(t, a, members, topics)
		if v := violatesValidity(members, topics, plan, false, a); v != "" {
			t.Fatalf("settled plan: %s\n%s", v, plan)
		}
		if identicalSubscriptions(members) {
			if v := violatesBalance(plan); v != "" {
				t.Fatalf("settled plan: %s\n%s", v, plan)
			}
		}
	}
}

// revokes reports whether any member loses a partition it owns.
func revokes(members []Member, plan Assignment) bool {
	for _, m := range members {
		for t, ps := range m.Owned {
			for _, p := range ps {
				if !slices.Contains(plan[m.ID][t], p) {
					return true
				}
			}
		}
	}
	return false
}

// TestDeterministic: the same input gives the same plan, and range and
// roundrobin do not depend on the JoinGroup order at all.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for range 100 {
		members, topics := genGroup(r, 10, 4, 20, true)
		shuffled := slices.Clone(members)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, a := range all() {
			p1, err1 := a.Assign(members, topics)
			p2, err2 := a.Assign(members, topics)
			if (err1 == nil) != (err2 == nil) || p1.String() != p2.String() {
				t.Fatalf("%s not deterministic", a.Name())
			}
			if a.Name() == RangeName || a.Name() == RoundRobinName {
				p3 := mustAssign(t, a, shuffled, topics)
				if p1.String() != p3.String() {
					t.Fatalf("%s depends on member order:\n%s\nvs\n%s", a.Name(), p1, p3)
				}
			}
		}
	}
}

// TestJoinOrderMatters documents why the input order is part of the input:
// Java's sticky assignors walk a HashMap of members, and the first member
// in that order that owns enough keeps the extra partition. HashMap order
// is bucket order, so it is usually neither the join order nor the id
// order; "Aa" and "BB" share a String hash, so between them the join order
// decides (hand cases java-order-*, confirmed by the Java vectors).
func TestJoinOrderMatters(t *testing.T) {
	t.Parallel()
	cases := map[string]handCase{}
	for _, c := range handCases() {
		cases[c.name] = c
	}
	aa, bb := cases["java-order-Aa-first"], cases["java-order-BB-first"]
	if aa.want == bb.want {
		t.Fatal("the two join orders should give different plans")
	}
	for _, c := range []handCase{aa, bb} {
		if got := mustAssign(t, Sticky(), c.members, c.topics); !samePlan(got, parsePlan(c.want)) {
			t.Errorf("%s: got\n%swant\n%s", c.name, got, parsePlan(c.want))
		}
	}
}

func TestJavaStrings(t *testing.T) {
	t.Parallel()
	// Values from java.lang.String.hashCode.
	for s, want := range map[string]int32{"": 0, "hello": 99162322, "consumer1": -421004549, "\U0001F600": 1772899, "Aa": 2112, "BB": 2112} {
		if got := javaStringHash(s); got != want {
			t.Errorf("javaStringHash(%q) = %d, want %d", s, got, want)
		}
	}
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"a", "b", -1}, {"b", "a", 1}, {"a", "a", 0}, {"a", "ab", -1}, {"B", "a", -1},
		// U+1F600 is a surrogate pair (0xD83D…) in UTF-16 and sorts
		// before U+FFFD there, unlike in UTF-8 bytes.
		{"\U0001F600", "\uFFFD", -1}, {"x\U0001F600", "x\uE000", -1},
		{"é", "z", 1},
	} {
		if got := javaCompare(c.a, c.b); got != c.want {
			t.Errorf("javaCompare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
