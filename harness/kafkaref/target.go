package kafkaref

import (
	"bufio"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TargetCase is one TargetAssignmentBuilder.build with the uniform
// assignor, as Kafka's TargetAssignmentBuilderBenchmark runs it: a group
// whose members hold a target assignment, and one member that joins.
type TargetCase struct {
	Name             string
	SubscriptionType assignor.SubscriptionType
	Topics           []consumergroup.Topic
	// Members in the order they joined, with their current targets.
	Members []TargetCaseMember
	Joiner  TargetCaseMember
}

// TargetCaseMember is a member of a TargetCase.
type TargetCaseMember struct {
	ID         string
	Subscribed []string
	Target     map[TopicID][]int32
}

func writeTarget(w *bufio.Writer, c *TargetCase) {
	fmt.Fprintf(w, "target %s %s\n", c.Name, c.SubscriptionType)
	order := writeTopics(w, c.Topics)
	subs := map[string]string{}
	sub := func(names []string) string {
		key := dash(strings.Join(names, ","))
		if _, ok := subs[key]; !ok {
			subs[key] = "s" + fmt.Sprint(len(subs))
			fmt.Fprintf(w, "subs %s %s\n", subs[key], key)
		}
		return subs[key]
	}
	for _, m := range c.Members {
		fmt.Fprintf(w, "member %s %s\n", m.ID, sub(m.Subscribed))
	}
	for _, m := range c.Members {
		for _, t := range order {
			if ps, ok := m.Target[t]; ok {
				fmt.Fprintf(w, "owned %s %s %s\n", m.ID, t, joinInts(ps))
			}
		}
	}
	fmt.Fprintf(w, "joiner %s %s\n", c.Joiner.ID, sub(c.Joiner.Subscribed))
	fmt.Fprintln(w, "end")
}

func readTarget(block [][]string) (TargetCase, error) {
	head := block[0]
	if err := need(head, 3); err != nil {
		return TargetCase{}, err
	}
	c := TargetCase{Name: head[1]}
	var err error
	if c.SubscriptionType, err = parseSubscriptionType(head[2]); err != nil {
		return c, err
	}
	subs := map[string][]string{}
	index := map[string]int{}
	joined := false
	err = caseLines(block, "a target case", true, func(t consumergroup.Topic) { c.Topics = append(c.Topics, t) }, func(f []string) (bool, error) {
		switch f[0] {
		case "subs":
			if err := need(f, 3); err != nil {
				return true, err
			}
			var names []string
			if f[2] != "-" {
				names = strings.Split(f[2], ",")
			}
			subs[f[1]] = names
		case "member", "joiner":
			if err := need(f, 3); err != nil {
				return true, err
			}
			names, ok := subs[f[2]]
			if !ok {
				return true, fmt.Errorf("%s %s names subscription %q, which no subs line defined before it", f[0], f[1], f[2])
			}
			m := TargetCaseMember{ID: f[1], Subscribed: names}
			if f[0] == "joiner" {
				c.Joiner, joined = m, true
				return true, nil
			}
			index[m.ID] = len(c.Members)
			c.Members = append(c.Members, m)
		case "owned":
			i, t, ps, err := parseOwned(f, index)
			if err != nil {
				return true, err
			}
			if c.Members[i].Target == nil {
				c.Members[i].Target = map[TopicID][]int32{}
			}
			c.Members[i].Target[t] = ps
		default:
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return c, err
	}
	if !joined {
		return c, fmt.Errorf("target case %s has no joiner line", c.Name)
	}
	return c, nil
}

// NewTargetCase is Kafka's TargetAssignmentBuilderBenchmark at one size:
// topics "topic-0"… of members × ratio / topics partitions each; members
// - 1 members "member0"… subscribed to every topic (Homogeneous) or to
// their bucket's topics (Heterogeneous, AssignorBenchmarkUtils' 5
// buckets), holding the uniform assignor's target of them; and
// "newMember", subscribed to every topic, joining.
func NewTargetCase(name string, st assignor.SubscriptionType, sz Size, seed uint64) (TargetCase, error) {
	rng := rand.New(rand.NewPCG(seed, 0x7461622d6a6d68))
	partitions := sz.Members * sz.Ratio / sz.Topics
	c := TargetCase{Name: name, SubscriptionType: st}
	var all []string
	counts := assignor.PartitionCounts{}
	byName := map[string]TopicID{}
	for i, id := range topicIDs(rng, sz.Topics) {
		n := fmt.Sprintf("topic-%d", i)
		c.Topics = append(c.Topics, consumergroup.Topic{Name: n, ID: id, Partitions: partitions})
		all = append(all, n)
		counts[id] = partitions
		byName[n] = id
	}
	n := sz.Members - 1
	subscription := func(i int) []string {
		if st == assignor.Homogeneous {
			return all
		}
		buckets := min(5, n)
		perTopics := (sz.Topics + buckets - 1) / buckets
		perMembers := (n + buckets - 1) / buckets
		b := i / perMembers
		return all[min(b*perTopics, sz.Topics):min((b+1)*perTopics, sz.Topics)]
	}
	spec := assignor.GroupSpec{Subscription: st}
	var ids []string
	for i := range n {
		m := TargetCaseMember{ID: fmt.Sprintf("member%d", i), Subscribed: subscription(i)}
		c.Members = append(c.Members, m)
		ids = append(ids, m.ID)
	}
	// The initial target: the uniform assignor over the members in the
	// order Kafka's builder iterates them.
	at := map[string]int{}
	for i, m := range c.Members {
		at[m.ID] = i
	}
	for _, id := range assignor.JavaHashMapOrder(ids) {
		ms := assignor.MemberSpec{ID: id}
		for _, name := range c.Members[at[id]].Subscribed {
			ms.Topics = append(ms.Topics, byName[name])
		}
		spec.Members = append(spec.Members, ms)
	}
	u, err := assignor.NewUniform()
	if err != nil {
		return c, err
	}
	res, err := u.Assign(spec, counts)
	if err != nil {
		return c, fmt.Errorf("case %s: the initial target: %w", name, err)
	}
	for i := range c.Members {
		for _, tp := range res.Members[c.Members[i].ID] {
			if c.Members[i].Target == nil {
				c.Members[i].Target = map[TopicID][]int32{}
			}
			c.Members[i].Target[tp.Topic] = slices.Clone(tp.Partitions)
		}
	}
	c.Joiner = TargetCaseMember{ID: "newMember", Subscribed: all}
	return c, nil
}

// Scrambled is c with members named at random (so that Java's HashMap
// order of them is not the order they joined in) and every third member
// without a target yet (so that who gets which partitions depends on that
// order): a harder test of equal results than the benchmark's layout.
func (c TargetCase) Scrambled(seed uint64) TargetCase {
	rng := rand.New(rand.NewPCG(seed, 0x736372616d626c65))
	out := c
	out.Members = slices.Clone(c.Members)
	for i := range out.Members {
		out.Members[i].ID = fmt.Sprintf("m-%08x", rng.Uint32())
		if i%3 == 2 {
			out.Members[i].Target = nil
		}
	}
	return out
}

// GoTarget is the Go side of a target case, ready to run.
type GoTarget struct {
	c *TargetCase
	x *consumergroup.TargetAssignment
}

// PrepareTarget prepares coordinator/consumergroup's target assignment for
// c under the profile of the Kafka release, with the JDK's HashSet order of
// javaMajor.
func PrepareTarget(c *TargetCase, kafka string, javaMajor int) (*GoTarget, error) {
	v, err := version.Parse(kafka)
	if err != nil {
		return nil, err
	}
	idx := newTopicIndex(c.Topics)
	in := consumergroup.TargetAssignmentInput{GroupID: "benchmark-group", SubscriptionType: c.SubscriptionType, Topics: idx,
		Updated: consumergroup.TargetMember{ID: c.Joiner.ID, Subscribed: c.Joiner.Subscribed}}
	for _, m := range c.Members {
		in.Members = append(in.Members, consumergroup.TargetMember{ID: m.ID, Subscribed: m.Subscribed, Target: m.Target})
	}
	x, err := consumergroup.NewTargetAssignment(v.Profile(), consumergroup.Config{Assignors: []string{assignor.UniformName}, JavaVersion: javaMajor}, in)
	if err != nil {
		return nil, err
	}
	return &GoTarget{c: c, x: x}, nil
}

// Run is one build; it returns the number of records (something to keep).
func (g *GoTarget) Run() (int, error) {
	out, err := g.x.Run()
	return len(out.Records), err
}

// Render runs the build once and renders its result as KafkaRef.java's
// print mode does: every member's target after the build (the records'
// for the members whose target changed, the current one for the others)
// and the members that got a record.
func (g *GoTarget) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "target %s\n", g.c.Name)
	out, err := g.x.Run()
	if err != nil {
		b.WriteString("error PartitionAssignorException\nend\n")
		return b.String()
	}
	targets := map[string]map[TopicID][]int32{}
	for _, m := range g.c.Members {
		targets[m.ID] = m.Target
	}
	var changed []string
	for _, r := range out.Records {
		k, ok := r.Key.(records.ConsumerGroupTargetAssignmentMemberKey)
		if !ok {
			continue
		}
		changed = append(changed, k.MemberID)
		a := map[TopicID][]int32{}
		for _, tp := range r.Value.(*records.ConsumerGroupTargetAssignmentMemberValue).TopicPartitions {
			a[tp.TopicID] = tp.Partitions
		}
		targets[k.MemberID] = a
	}
	for _, id := range slices.Sorted(maps.Keys(targets)) {
		fmt.Fprintf(&b, "member %s\n", id)
		byTopic := map[string][]int32{}
		for t, ps := range targets[id] {
			if len(ps) > 0 {
				byTopic[TopicID(t).String()] = slices.Sorted(slices.Values(ps))
			}
		}
		for _, t := range slices.Sorted(maps.Keys(byTopic)) {
			fmt.Fprintf(&b, "  %s %s\n", t, joinInts(byTopic[t]))
		}
	}
	slices.Sort(changed)
	if len(changed) == 0 {
		changed = []string{"-"}
	}
	fmt.Fprintf(&b, "records %s\n", strings.Join(changed, ","))
	b.WriteString("end\n")
	return b.String()
}
