package assign

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Invariant helpers. Each returns a description of the first violation, or
// "" when the plan keeps the invariant, so that tests and fuzz targets can
// share them.

// violatesValidity checks that every partition of every topic some member
// subscribes to is assigned exactly once (at most once when
// allowWithheld: cooperative-sticky withholds partitions that move), only
// to members subscribed to its topic, that every member has an entry, and
// that partitions are sorted.
//
// The one exception is Java's: the sticky assignors' general builder
// moves a partition back to the member that owned it in an older
// generation without checking that it still subscribes to the topic
// (hand case java-quirk-previous-owner-unsubscribed). For sticky and
// cooperative-sticky, pass the assignor so that such a partition is
// allowed; pass nil otherwise.
func violatesValidity(members []Member, topics map[string]int32, a Assignment, allowWithheld bool, sticky ...Assignor) string {
	olderClaim := map[string]map[tp]bool{}
	if len(sticky) > 0 {
		if s, ok := sticky[0].(stickyAssignor); ok {
			data := make([]memberData, len(members))
			maxGen := int32(defaultGeneration)
			for i := range members {
				data[i] = s.memberData(&members[i])
				maxGen = max(maxGen, data[i].gen())
			}
			for i, m := range members {
				olderClaim[m.ID] = map[tp]bool{}
				if data[i].gen() < maxGen {
					for _, p := range data[i].partitions {
						olderClaim[m.ID][p] = true
					}
				}
			}
		}
	}
	if len(a) != len(members) {
		return fmt.Sprintf("plan has %d members, input has %d", len(a), len(members))
	}
	subscribedBy := map[string]bool{}
	owner := map[tp]string{}
	for _, m := range members {
		got, ok := a[m.ID]
		if !ok {
			return fmt.Sprintf("member %q missing from plan", m.ID)
		}
		for _, t := range m.Topics {
			subscribedBy[t] = true
		}
		for t, ps := range got {
			for _, p := range ps {
				if !slices.Contains(m.Topics, t) && !olderClaim[m.ID][tp{t, p}] {
					return fmt.Sprintf("member %q got %s-%d but subscribes to %v", m.ID, t, p, m.Topics)
				}
			}
			if !slices.IsSorted(ps) {
				return fmt.Sprintf("member %q partitions of %s not sorted: %v", m.ID, t, ps)
			}
			for _, p := range ps {
				if p < 0 || p >= topics[t] {
					return fmt.Sprintf("member %q got %s-%d, which does not exist (%d partitions)", m.ID, t, p, topics[t])
				}
				if prev, dup := owner[tp{t, p}]; dup {
					return fmt.Sprintf("%s-%d assigned to both %q and %q", t, p, prev, m.ID)
				}
				owner[tp{t, p}] = m.ID
			}
		}
	}
	if !allowWithheld {
		for t := range subscribedBy {
			for p := range topics[t] {
				if _, ok := owner[tp{t, p}]; !ok {
					return fmt.Sprintf("%s-%d is subscribed but unassigned", t, p)
				}
			}
		}
	}
	return ""
}

// violatesBalance checks that partition counts differ by at most one.
func violatesBalance(a Assignment) string {
	lo, hi := -1, -1
	var loM, hiM string
	for m := range a {
		n := a.Count(m)
		if lo < 0 || n < lo {
			lo, loM = n, m
		}
		if hi < 0 || n > hi {
			hi, hiM = n, m
		}
	}
	if hi-lo > 1 {
		return fmt.Sprintf("unbalanced: %q has %d partitions, %q has %d", hiM, hi, loM, lo)
	}
	return ""
}

// violatesStickiness checks the constrained sticky promise for identical
// subscriptions: a member whose previous partitions are uncontested keeps
// at least min(len(owned), floor(P/C)) of them.
func violatesStickiness(members []Member, owned []map[string][]int32, topics map[string]int32, a Assignment) string {
	total := 0
	for t, n := range topics {
		if len(members) > 0 && slices.Contains(members[0].Topics, t) {
			total += int(n)
		}
	}
	minQuota := total / len(members)
	claims := map[tp]int{}
	for _, o := range owned {
		for t, ps := range o {
			for _, p := range ps {
				claims[tp{t, p}]++
			}
		}
	}
	for i, m := range members {
		var mine []tp
		for t, ps := range owned[i] {
			for _, p := range ps {
				if claims[tp{t, p}] == 1 && p < topics[t] {
					mine = append(mine, tp{t, p})
				}
			}
		}
		kept := 0
		for _, p := range mine {
			if slices.Contains(a[m.ID][p.topic], p.partition) {
				kept++
			}
		}
		if want := min(len(mine), minQuota); kept < want {
			return fmt.Sprintf("member %q kept %d of its %d partitions, want at least %d", m.ID, kept, len(mine), want)
		}
	}
	return ""
}

func mustAssign(t testing.TB, a Assignor, members []Member, topics map[string]int32) Assignment {
	t.Helper()
	plan, err := a.Assign(members, topics)
	if err != nil {
		t.Fatalf("%s: %v", a.Name(), err)
	}
	return plan
}

// parsePlan reads "A: t0[0 1] t1[2]\nB: …" (Assignment.String) so expected
// plans in tables read like the Java javadoc.
func parsePlan(s string) Assignment {
	a := Assignment{}
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		id, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
		a[id] = map[string][]int32{}
		rest = strings.TrimSpace(rest)
		for rest != "" {
			open := strings.IndexByte(rest, '[')
			closeIdx := strings.IndexByte(rest, ']')
			topic := strings.TrimSpace(rest[:open])
			ps := []int32{}
			for _, p := range strings.Fields(rest[open+1 : closeIdx]) {
				var n int32
				fmt.Sscan(p, &n)
				ps = append(ps, n)
			}
			a[id][topic] = ps
			rest = strings.TrimSpace(rest[closeIdx+1:])
		}
	}
	return a
}

func samePlan(a, b Assignment) bool { return a.String() == b.String() }

// withOwned returns members whose ownership is the plan: ownedPartitions
// and generation for cooperative-sticky, StickyAssignor user data for
// sticky, as the members would send in their next JoinGroup.
func withOwned(members []Member, plan Assignment, generation int32) []Member {
	out := slices.Clone(members)
	for i := range out {
		owned := plan[out[i].ID]
		out[i].Owned = owned
		out[i].Generation = generation
		out[i].UserData = EncodeStickyUserData(StickyUserData{Owned: owned, Generation: generation})
	}
	return out
}

// genGroup builds a random group from r. It is the seeded generator the
// fuzz targets and the Java reference vectors share.
//
// With invalid set it also claims partitions that do not exist, which Java
// would hand out (see allSubscriptionsEqual); the Java reference vectors
// leave that out.
func genGroup(r *rand.Rand, maxMembers, maxTopics, maxPartitions int, invalid bool) ([]Member, map[string]int32) {
	topicNames := []string{"t0", "t1", "t2", "a.b", "Z-z", "t10", "t_9"}
	nt := 1 + r.IntN(min(maxTopics, len(topicNames)))
	topics := map[string]int32{}
	var names []string
	for _, k := range r.Perm(len(topicNames))[:nt] {
		names = append(names, topicNames[k])
		topics[topicNames[k]] = int32(r.IntN(maxPartitions + 1))
	}
	idPool := []string{"m", "consumer1", "consumer2", "consumer10", "é", "\U0001F600", "\uFFFD", "Aa", "BB", "c-1", "c-2", "rdkafka-x"}
	nm := 1 + r.IntN(maxMembers)
	identical := r.IntN(2) == 0
	var shared []string
	for _, t := range names {
		if r.IntN(3) > 0 || len(shared) == 0 {
			shared = append(shared, t)
		}
	}
	var members []Member
	for i := range nm {
		m := Member{Generation: -1}
		if i < len(idPool) && r.IntN(2) == 0 {
			m.ID = idPool[i] + "-" + fmt.Sprint(r.IntN(100))
		} else {
			m.ID = fmt.Sprintf("member-%d-%04x", i, r.IntN(1<<16))
		}
		if r.IntN(5) == 0 {
			inst := fmt.Sprintf("i%d", r.IntN(nm*2))
			m.InstanceID = &inst
		}
		if r.IntN(4) == 0 {
			// Member racks change nothing while brokers have none
			// (Java's rack-aware paths need replica racks too).
			m.Rack = fmt.Sprintf("rack-%d", r.IntN(3))
		}
		if identical {
			m.Topics = slices.Clone(shared)
		} else {
			for _, t := range names {
				if r.IntN(2) == 0 {
					m.Topics = append(m.Topics, t)
				}
			}
			if len(m.Topics) == 0 {
				m.Topics = []string{names[r.IntN(len(names))]}
			}
		}
		// Also subscribe now and then to a topic without metadata.
		if r.IntN(8) == 0 {
			m.Topics = append(m.Topics, "missing")
		}
		members = append(members, m)
	}
	// Keep ids unique; the pool can repeat after the suffix.
	seen := map[string]bool{}
	for i := range members {
		for seen[members[i].ID] {
			members[i].ID += "x"
		}
		seen[members[i].ID] = true
	}
	// Instance ids unique too, as the broker enforces.
	seenInst := map[string]bool{}
	for i := range members {
		if members[i].InstanceID != nil {
			if seenInst[*members[i].InstanceID] {
				members[i].InstanceID = nil
			} else {
				seenInst[*members[i].InstanceID] = true
			}
		}
	}
	// Ownership: random claims, some conflicting, with generations.
	if r.IntN(3) > 0 {
		for i := range members {
			m := &members[i]
			m.Generation = int32(r.IntN(5)) - 1
			owned := map[string][]int32{}
			// Draw in the order the topics were drawn, never in map
			// order: the same seed must give the same group.
			for _, t := range names {
				limit := topics[t]
				if invalid {
					limit++ // claim partition n, which does not exist
				}
				for p := range limit {
					if r.IntN(len(members)+1) == 0 {
						owned[t] = append(owned[t], p)
					}
				}
			}
			if len(owned) > 0 {
				m.Owned = owned
			}
			ug := m.Generation
			if r.IntN(4) == 0 {
				ug = int32(r.IntN(5)) - 1
			}
			switch r.IntN(6) {
			case 0:
				m.UserData = nil
			case 1:
				m.UserData = []byte{byte(r.IntN(256)), 0xff, 1}
			case 2:
				m.UserData = EncodeCooperativeUserData(ug)
			default:
				m.UserData = EncodeStickyUserData(StickyUserData{Owned: owned, Generation: ug})
			}
		}
	}
	return members, topics
}

// handCase is a named group with the plan we expect. The same groups are
// in the Java reference corpus (javaCases), so each expectation here is
// also Apache Kafka's answer.
type handCase struct {
	name     string
	assignor string
	members  []Member
	topics   map[string]int32
	want     string // Assignment.String form; "" = checked by invariants only
}

func subscribe(id string, topics ...string) Member {
	return Member{ID: id, Topics: topics, Generation: -1}
}

func static(m Member, instance string) Member {
	m.InstanceID = &instance
	return m
}

// owning sets ownership the way each assignor reads it: ownedPartitions and
// generation (cooperative-sticky), StickyAssignor user data (sticky).
func owning(m Member, generation int32, owned map[string][]int32) Member {
	m.Owned = owned
	m.Generation = generation
	m.UserData = EncodeStickyUserData(StickyUserData{Owned: owned, Generation: generation})
	return m
}

func handCases() []handCase {
	t0t1 := map[string]int32{"t0": 3, "t1": 3}
	all4 := []string{"t0", "t1", "t2", "t3"}
	four := map[string]int32{"t0": 2, "t1": 2, "t2": 2, "t3": 2}
	mixed := map[string]int32{"t0": 1, "t1": 2, "t2": 3}
	six := map[string]int32{"t": 6}
	return []handCase{
		// RangeAssignor javadoc.
		{"range-javadoc", RangeName, []Member{subscribe("C0", "t0", "t1"), subscribe("C1", "t0", "t1")}, t0t1,
			"C0: t0[0 1] t1[0 1]\nC1: t0[2] t1[2]"},
		// RangeAssignor javadoc, static membership: the instance ids
		// decide the order whatever the member ids are.
		{"range-javadoc-static", RangeName, []Member{static(subscribe("C3", "t0", "t1"), "I0"), static(subscribe("C2", "t0", "t1"), "I1")}, t0t1,
			"C2: t0[2] t1[2]\nC3: t0[0 1] t1[0 1]"},
		// RoundRobinAssignor javadoc examples.
		{"roundrobin-javadoc-1", RoundRobinName, []Member{subscribe("C0", "t0", "t1"), subscribe("C1", "t0", "t1")}, t0t1,
			"C0: t0[0 2] t1[1]\nC1: t0[1] t1[0 2]"},
		{"roundrobin-javadoc-2", RoundRobinName, []Member{subscribe("C0", "t0"), subscribe("C1", "t0", "t1"), subscribe("C2", "t0", "t1", "t2")}, mixed,
			"C0: t0[0]\nC1: t1[0]\nC2: t1[1] t2[0 1 2]"},
		{"roundrobin-javadoc-3", RoundRobinName, []Member{subscribe("C0", "t0", "t1"), subscribe("C1", "t0", "t1"), subscribe("C2", "t0", "t1")}, t0t1,
			"C0: t0[0] t1[0]\nC1: t0[1] t1[1]\nC2: t0[2] t1[2]"},
		{"roundrobin-javadoc-static", RoundRobinName, []Member{static(subscribe("C5", "t0", "t1"), "I0"), static(subscribe("C3", "t0", "t1"), "I1"), static(subscribe("C4", "t0", "t1"), "I2")}, t0t1,
			"C3: t0[1] t1[1]\nC4: t0[2] t1[2]\nC5: t0[0] t1[0]"},
		// StickyAssignor javadoc, example 1, first round.
		{"sticky-javadoc-1", StickyName, []Member{subscribe("C0", all4...), subscribe("C1", all4...), subscribe("C2", all4...)}, four,
			"C0: t0[0] t1[1] t3[0]\nC1: t0[1] t2[0] t3[1]\nC2: t1[0] t2[1]"},
		// Example 1 after C1 leaves. The javadoc (written for the
		// original KIP-54 algorithm) says C0 gets t2p0 and C2 gets
		// t0p1, t3p1; the constrained algorithm (KAFKA-9987) deals the
		// three freed partitions round robin, C0 first. Both keep every
		// previous partition; the vector corpus confirms Java 4.4.0.
		{"sticky-javadoc-1-c1-leaves", StickyName, []Member{
			owning(subscribe("C0", all4...), 1, map[string][]int32{"t0": {0}, "t1": {1}, "t3": {0}}),
			owning(subscribe("C2", all4...), 1, map[string][]int32{"t1": {0}, "t2": {1}}),
		}, four, "C0: t0[0 1] t1[1] t3[0]\nC2: t1[0] t2[0 1] t3[1]"},
		// StickyAssignor javadoc, example 2.
		{"sticky-javadoc-2", StickyName, []Member{subscribe("C0", "t0"), subscribe("C1", "t0", "t1"), subscribe("C2", "t0", "t1", "t2")}, mixed,
			"C0: t0[0]\nC1: t1[0 1]\nC2: t2[0 1 2]"},
		{"sticky-javadoc-2-c0-leaves", StickyName, []Member{
			owning(subscribe("C1", "t0", "t1"), 1, map[string][]int32{"t1": {0, 1}}),
			owning(subscribe("C2", "t0", "t1", "t2"), 1, map[string][]int32{"t2": {0, 1, 2}}),
		}, mixed, "C1: t0[0] t1[0 1]\nC2: t2[0 1 2]"},
		// The seed example: six partitions, A owns them all, B joins.
		{"seed-range", RangeName, []Member{owning(subscribe("A", "t"), 1, map[string][]int32{"t": {0, 1, 2, 3, 4, 5}}), subscribe("B", "t")}, six,
			"A: t[0 1 2]\nB: t[3 4 5]"},
		{"seed-sticky", StickyName, []Member{owning(subscribe("A", "t"), 1, map[string][]int32{"t": {0, 1, 2, 3, 4, 5}}), subscribe("B", "t")}, six,
			"A: t[0 1 2]\nB: t[3 4 5]"},
		{"seed-cooperative-round1", CooperativeStickyName, []Member{owning(subscribe("A", "t"), 1, map[string][]int32{"t": {0, 1, 2, 3, 4, 5}}), subscribe("B", "t")}, six,
			"A: t[0 1 2]\nB:"},
		{"seed-cooperative-round2", CooperativeStickyName, []Member{owning(subscribe("A", "t"), 2, map[string][]int32{"t": {0, 1, 2}}), owning(subscribe("B", "t"), 2, nil)}, six,
			"A: t[0 1 2]\nB: t[3 4 5]"},
		// AbstractStickyAssignorTest.testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers:
		// consumer3 takes topic2-0 from consumer1.
		{"java-test-max-quota", StickyName, []Member{
			owning(subscribe("consumer1", "topic1", "topic2"), 1, map[string][]int32{"topic1": {0}, "topic2": {0}}),
			owning(subscribe("consumer2", "topic1", "topic2"), 1, map[string][]int32{"topic1": {1}, "topic2": {1}}),
			owning(subscribe("consumer3", "topic1", "topic2"), 1, nil),
		}, map[string]int32{"topic1": 2, "topic2": 2}, "consumer1: topic1[0]\nconsumer2: topic1[1] topic2[1]\nconsumer3: topic2[0]"},
		// The same with cooperative-sticky: topic2-0 moves, so it is
		// withheld from consumer3 this round.
		{"java-test-max-quota-cooperative", CooperativeStickyName, []Member{
			owning(subscribe("consumer1", "topic1", "topic2"), 1, map[string][]int32{"topic1": {0}, "topic2": {0}}),
			owning(subscribe("consumer2", "topic1", "topic2"), 1, map[string][]int32{"topic1": {1}, "topic2": {1}}),
			owning(subscribe("consumer3", "topic1", "topic2"), 1, nil),
		}, map[string]int32{"topic1": 2, "topic2": 2}, "consumer1: topic1[0]\nconsumer2: topic1[1] topic2[1]\nconsumer3:"},
		// AbstractStickyAssignorTest.testMultipleConsumersMixedTopicSubscriptions (general builder).
		{"java-test-mixed-subscriptions", StickyName, []Member{subscribe("consumer1", "topic1"), subscribe("consumer2", "topic1", "topic2"), subscribe("consumer3", "topic1")},
			map[string]int32{"topic1": 3, "topic2": 2}, "consumer1: topic1[0 2]\nconsumer2: topic2[0 1]\nconsumer3: topic1[1]"},
		// The other Java quirk: B owned t1-0 in an older generation and
		// now subscribes only to t2. The general builder prefers to move
		// a partition back to its previous owner (prevAssignment) without
		// checking the subscription, so B gets t1-0.
		{"java-quirk-previous-owner-unsubscribed", StickyName, []Member{
			owning(subscribe("A", "t1"), 2, map[string][]int32{"t1": {0, 1, 2, 3}}),
			owning(subscribe("B", "t2"), 1, map[string][]int32{"t1": {0}}),
			owning(subscribe("C", "t1", "t2"), 2, nil),
		}, map[string]int32{"t1": 4, "t2": 2}, "A: t1[2 3]\nB: t1[0] t2[0]\nC: t1[1] t2[1]"},
		// Java throws NullPointerException: F owned t1-0 in an older
		// generation and now subscribes only to a topic without
		// metadata, so it is set aside as fixed, and the general
		// builder then reads F's assignment to prefer moving t1-0 back.
		{"java-throws-previous-owner-fixed", CooperativeStickyName, []Member{
			owning(subscribe("A", "t1"), 3, map[string][]int32{"t1": {0, 1, 2, 3}}),
			owning(subscribe("C", "t1", "t2"), 3, nil),
			owning(subscribe("F", "gone"), 0, map[string][]int32{"t1": {0}}),
		}, map[string]int32{"t1": 4, "t2": 2}, "ERROR"},
		// Same String hash, same bucket: the one that joined first keeps
		// maxQuota (see TestJoinOrderMatters).
		{"java-order-Aa-first", StickyName, []Member{
			owning(subscribe("Aa", "t"), 1, map[string][]int32{"t": {0, 1, 2, 3}}),
			owning(subscribe("BB", "t"), 1, map[string][]int32{"t": {4, 5, 6}}),
			subscribe("C", "t"),
		}, map[string]int32{"t": 7}, "Aa: t[0 1 2]\nBB: t[4 5]\nC: t[3 6]"},
		{"java-order-BB-first", StickyName, []Member{
			owning(subscribe("BB", "t"), 1, map[string][]int32{"t": {4, 5, 6}}),
			owning(subscribe("Aa", "t"), 1, map[string][]int32{"t": {0, 1, 2, 3}}),
			subscribe("C", "t"),
		}, map[string]int32{"t": 7}, "Aa: t[0 1]\nBB: t[4 5 6]\nC: t[2 3]"},
		// The Java quirk: consumer3 subscribes to nothing but comes first
		// in HashMap order (consumer3, consumer2, consumer1), so Java
		// treats the subscriptions as equal and the constrained builder
		// gives it partitions of "t", which it did not subscribe to.
		{"java-quirk-empty-subscription", StickyName, []Member{subscribe("consumer1", "t"), subscribe("consumer2", "t"), subscribe("consumer3")},
			map[string]int32{"t": 6}, "consumer1: t[0 3]\nconsumer2: t[1 4]\nconsumer3: t[2 5]"},
		// The same members in another order: consumer3 no longer comes
		// first, the subscriptions differ, and it gets nothing.
		{"java-quirk-empty-subscription-other-order", StickyName, []Member{subscribe("consumer3", "t"), subscribe("consumer1", "t"), subscribe("consumer2")},
			map[string]int32{"t": 6}, ""},
	}
}
