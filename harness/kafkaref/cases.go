package kafkaref

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TopicID is a Kafka topic id.
type TopicID = assignor.TopicID

// AssignCase is one call of a server-side assignor: the group spec (members
// in memberIds() order, each subscription and previous target in Java
// iteration order) and the topics' partition counts.
type AssignCase struct {
	Name     string
	Assignor string // assignor.UniformName or assignor.RangeName
	Spec     assignor.GroupSpec
	// Topics are the topics and their partition counts, in file order.
	Topics []TopicCount
}

// TopicCount is a topic id and its partition count.
type TopicCount struct {
	ID         TopicID
	Partitions int
}

// ReconcileCase is one CurrentAssignmentBuilder.build() per member, every
// member against the same partition owners and target epoch.
type ReconcileCase struct {
	Name                string
	TargetEpoch         int32
	SubscriptionChanged bool
	Topics              []consumergroup.Topic
	Members             []ReconcileMember
	// Owners is the epoch of each partition's current owner (CAB's
	// currentPartitionEpoch); a partition not listed is free (-1).
	Owners map[TopicID]map[int32]int32
}

// ReconcileMember is one member of a ReconcileCase and its target.
type ReconcileMember struct {
	ID         string
	State      records.MemberState
	Epoch      int32
	PrevEpoch  int32
	Subscribed []string
	Assigned   map[TopicID]map[int32]int32
	Pending    map[TopicID]map[int32]int32
	Target     map[TopicID][]int32
}

// Cases is the content of a case file.
type Cases struct {
	Assign    []AssignCase
	Reconcile []ReconcileCase
	Target    []TargetCase
}

// The case file is line oriented; both sides read it (KafkaRef.java says
// the same grammar):
//
//	assign NAME uniform|range Homogeneous|Heterogeneous
//	topic ID PARTITIONS
//	subs S ID,ID,...                  (a subscription, in iteration order)
//	member ID RACK|- S
//	owned MEMBER TOPIC P,P,...        (the previous target, in iteration order)
//	end
//
//	reconcile NAME TARGET_EPOCH true|false   (the flag: subscription changed)
//	topic NAME ID PARTITIONS
//	member ID STATE EPOCH PREV_EPOCH NAME,NAME,...
//	assigned MEMBER TOPIC P:E,...
//	pending MEMBER TOPIC P:E,...
//	target MEMBER TOPIC P,P,...
//	owner TOPIC P:E,...
//	end
//
//	target NAME Homogeneous|Heterogeneous  (a TargetAssignmentBuilder.build, uniform)
//	topic NAME ID PARTITIONS
//	subs S NAME,NAME,...
//	member ID S                       (the group's members, in the order they joined)
//	owned MEMBER TOPIC P,P,...        (the current target)
//	joiner ID S                       (the member that joins)
//	end
//
// Member, topic and partition orders are the file's on both sides.

// Write writes cs in the case-file format.
func Write(w io.Writer, cs Cases) error {
	bw := bufio.NewWriter(w)
	for i := range cs.Assign {
		writeAssign(bw, &cs.Assign[i])
	}
	for i := range cs.Reconcile {
		writeReconcile(bw, &cs.Reconcile[i])
	}
	for i := range cs.Target {
		writeTarget(bw, &cs.Target[i])
	}
	return bw.Flush()
}

func joinTopics(ts []TopicID) string {
	if len(ts) == 0 {
		return "-"
	}
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, ",")
}

func joinInts(ps []int32) string {
	if len(ps) == 0 {
		return "-"
	}
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(p)))
	}
	return b.String()
}

func joinEpochs(m map[int32]int32) string {
	if len(m) == 0 {
		return "-"
	}
	var b strings.Builder
	for i, p := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d", p, m[p])
	}
	return b.String()
}

func writeAssign(w *bufio.Writer, c *AssignCase) {
	fmt.Fprintf(w, "assign %s %s %s\n", c.Name, c.Assignor, c.Spec.Subscription)
	for _, t := range c.Topics {
		fmt.Fprintf(w, "topic %s %d\n", t, t.Partitions)
	}
	subs := map[string]string{}
	for _, m := range c.Spec.Members {
		key := joinTopics(m.Topics)
		if _, ok := subs[key]; !ok {
			subs[key] = "s" + strconv.Itoa(len(subs))
			fmt.Fprintf(w, "subs %s %s\n", subs[key], key)
		}
	}
	for _, m := range c.Spec.Members {
		fmt.Fprintf(w, "member %s %s %s\n", m.ID, dash(m.RackID), subs[joinTopics(m.Topics)])
	}
	for _, m := range c.Spec.Members {
		for _, tp := range m.Assignment {
			fmt.Fprintf(w, "owned %s %s %s\n", m.ID, tp.Topic, joinInts(tp.Partitions))
		}
	}
	fmt.Fprintln(w, "end")
}

func (t TopicCount) String() string { return t.ID.String() }

// writeTopics writes a case's topic lines (name, id, partitions) and
// returns the topics' ids in that order.
func writeTopics(w *bufio.Writer, topics []consumergroup.Topic) []TopicID {
	order := make([]TopicID, 0, len(topics))
	for _, t := range topics {
		fmt.Fprintf(w, "topic %s %s %d\n", t.Name, TopicID(t.ID), t.Partitions)
		order = append(order, t.ID)
	}
	return order
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeReconcile(w *bufio.Writer, c *ReconcileCase) {
	fmt.Fprintf(w, "reconcile %s %d %t\n", c.Name, c.TargetEpoch, c.SubscriptionChanged)
	order := writeTopics(w, c.Topics)
	for _, m := range c.Members {
		fmt.Fprintf(w, "member %s %s %d %d %s\n", m.ID, m.State, m.Epoch, m.PrevEpoch, dash(strings.Join(m.Subscribed, ",")))
	}
	for _, m := range c.Members {
		for _, t := range order {
			if ps, ok := m.Assigned[t]; ok {
				fmt.Fprintf(w, "assigned %s %s %s\n", m.ID, t, joinEpochs(ps))
			}
			if ps, ok := m.Pending[t]; ok {
				fmt.Fprintf(w, "pending %s %s %s\n", m.ID, t, joinEpochs(ps))
			}
			if ps, ok := m.Target[t]; ok {
				fmt.Fprintf(w, "target %s %s %s\n", m.ID, t, joinInts(ps))
			}
		}
	}
	for _, t := range order {
		if ps, ok := c.Owners[t]; ok {
			fmt.Fprintf(w, "owner %s %s\n", t, joinEpochs(ps))
		}
	}
	fmt.Fprintln(w, "end")
}

// Read reads a case file. An assign case's InvertedTargetAssignment is
// left nil: groupquake's coordinator does not keep one, and its assignors
// derive which partitions are held from the members' previous targets
// inside the call (the heartbeat's path), so the Go side's time includes
// that; Java's side gets the map built from the same previous targets, as
// Kafka's coordinator keeps it.
func Read(r io.Reader) (Cases, error) {
	var cs Cases
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	var block [][]string
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Split(text, " ")
		if f[0] != "end" {
			block = append(block, f)
			continue
		}
		if len(block) == 0 {
			return cs, fmt.Errorf("case file line %d: end without a case", line)
		}
		var err error
		switch block[0][0] {
		case "assign":
			var c AssignCase
			if c, err = readAssign(block); err == nil {
				cs.Assign = append(cs.Assign, c)
			}
		case "reconcile":
			var c ReconcileCase
			if c, err = readReconcile(block); err == nil {
				cs.Reconcile = append(cs.Reconcile, c)
			}
		case "target":
			var c TargetCase
			if c, err = readTarget(block); err == nil {
				cs.Target = append(cs.Target, c)
			}
		default:
			err = fmt.Errorf("unknown case kind %q: want assign, reconcile or target", block[0][0])
		}
		if err != nil {
			return cs, fmt.Errorf("case file, case ending on line %d: %w", line, err)
		}
		block = nil
	}
	if err := sc.Err(); err != nil {
		return cs, err
	}
	if len(block) > 0 {
		return cs, errors.New("case file ends inside a case (no end line)")
	}
	return cs, nil
}

func need(f []string, n int) error {
	if len(f) != n {
		return fmt.Errorf("line %q has %d fields, want %d", strings.Join(f, " "), len(f), n)
	}
	return nil
}

// caseLines reads the lines of a case's block after its head: each topic
// line with readTopic (named: the lines name their topic), handed to
// topic, every other line with read, which says whether it knows the line;
// what names the case in the error for a line it does not.
func caseLines(block [][]string, what string, named bool, topic func(consumergroup.Topic), read func(f []string) (bool, error)) error {
	for _, f := range block[1:] {
		if f[0] == "topic" {
			t, err := readTopic(f, named)
			if err != nil {
				return err
			}
			topic(t)
			continue
		}
		known, err := read(f)
		if err != nil {
			return err
		}
		if !known {
			return fmt.Errorf("unknown line %q in %s", f[0], what)
		}
	}
	return nil
}

// parseSubscriptionType reads a case's subscription type.
func parseSubscriptionType(s string) (assignor.SubscriptionType, error) {
	switch s {
	case "Homogeneous":
		return assignor.Homogeneous, nil
	case "Heterogeneous":
		return assignor.Heterogeneous, nil
	}
	return 0, fmt.Errorf("subscription type %q: want Homogeneous or Heterogeneous", s)
}

// readTopic reads a line "topic [name] id partitions"; named says whether
// the line names the topic.
func readTopic(f []string, named bool) (consumergroup.Topic, error) {
	var t consumergroup.Topic
	rest := f[1:]
	if named {
		if err := need(f, 4); err != nil {
			return t, err
		}
		t.Name, rest = f[1], f[2:]
	} else if err := need(f, 3); err != nil {
		return t, err
	}
	id, err := assignor.ParseTopicID(rest[0])
	if err != nil {
		return t, err
	}
	n, err := strconv.Atoi(rest[1])
	if err != nil {
		return t, fmt.Errorf("partition count %q: %v", rest[1], err)
	}
	t.ID, t.Partitions = id, n
	return t, nil
}

func parseTopics(s string) ([]TopicID, error) {
	if s == "-" {
		return nil, nil
	}
	var out []TopicID
	for _, x := range strings.Split(s, ",") {
		t, err := assignor.ParseTopicID(x)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// parseOwned reads an "owned MEMBER TOPIC-ID PARTITIONS" line: the index
// of the member (a member line named it before) and what it owns.
func parseOwned(f []string, index map[string]int) (int, TopicID, []int32, error) {
	if err := need(f, 4); err != nil {
		return 0, TopicID{}, nil, err
	}
	i, ok := index[f[1]]
	if !ok {
		return 0, TopicID{}, nil, fmt.Errorf("owned line for unknown member %q", f[1])
	}
	t, err := assignor.ParseTopicID(f[2])
	if err != nil {
		return 0, TopicID{}, nil, err
	}
	ps, err := parseInts(f[3])
	if err != nil {
		return 0, TopicID{}, nil, err
	}
	return i, t, ps, nil
}

func parseInts(s string) ([]int32, error) {
	if s == "-" {
		return nil, nil
	}
	var out []int32
	for _, x := range strings.Split(s, ",") {
		p, err := strconv.ParseInt(x, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("partition %q: %v", x, err)
		}
		out = append(out, int32(p))
	}
	return out, nil
}

func parseEpochs(s string) (map[int32]int32, error) {
	out := map[int32]int32{}
	if s == "-" {
		return out, nil
	}
	for _, x := range strings.Split(s, ",") {
		ps, es, ok := strings.Cut(x, ":")
		p, err1 := strconv.ParseInt(ps, 10, 32)
		e, err2 := strconv.ParseInt(es, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q is not PARTITION:EPOCH", x)
		}
		out[int32(p)] = int32(e)
	}
	return out, nil
}

func readAssign(block [][]string) (AssignCase, error) {
	head := block[0]
	if err := need(head, 4); err != nil {
		return AssignCase{}, err
	}
	c := AssignCase{Name: head[1], Assignor: head[2]}
	var err error
	if c.Spec.Subscription, err = parseSubscriptionType(head[3]); err != nil {
		return c, err
	}
	subs := map[string][]TopicID{}
	index := map[string]int{}
	err = caseLines(block, "an assign case", false, func(t consumergroup.Topic) {
		c.Topics = append(c.Topics, TopicCount{ID: t.ID, Partitions: t.Partitions})
	}, func(f []string) (bool, error) {
		switch f[0] {
		case "subs":
			if err := need(f, 3); err != nil {
				return true, err
			}
			ts, err := parseTopics(f[2])
			if err != nil {
				return true, err
			}
			subs[f[1]] = ts
		case "member":
			if err := need(f, 4); err != nil {
				return true, err
			}
			ts, ok := subs[f[3]]
			if !ok {
				return true, fmt.Errorf("member %s names subscription %q, which no subs line defined before it", f[1], f[3])
			}
			m := assignor.MemberSpec{ID: f[1], Topics: ts}
			if f[2] != "-" {
				m.RackID = f[2]
			}
			index[m.ID] = len(c.Spec.Members)
			c.Spec.Members = append(c.Spec.Members, m)
		case "owned":
			i, t, ps, err := parseOwned(f, index)
			if err != nil {
				return true, err
			}
			c.Spec.Members[i].Assignment = append(c.Spec.Members[i].Assignment, assignor.TopicPartitions{Topic: t, Partitions: ps})
		default:
			return false, nil
		}
		return true, nil
	})
	return c, err
}

var memberStates = map[string]records.MemberState{}

func init() {
	for _, s := range []records.MemberState{records.MemberStable, records.MemberUnrevokedPartitions, records.MemberUnreleasedPartitions, records.MemberUnknown} {
		memberStates[s.String()] = s
	}
}

func readReconcile(block [][]string) (ReconcileCase, error) {
	head := block[0]
	if err := need(head, 4); err != nil {
		return ReconcileCase{}, err
	}
	c := ReconcileCase{Name: head[1], Owners: map[TopicID]map[int32]int32{}}
	epoch, err := strconv.ParseInt(head[2], 10, 32)
	if err != nil {
		return c, fmt.Errorf("target epoch %q: %v", head[2], err)
	}
	c.TargetEpoch = int32(epoch)
	if c.SubscriptionChanged, err = strconv.ParseBool(head[3]); err != nil {
		return c, fmt.Errorf("subscription-changed flag %q: %v", head[3], err)
	}
	index := map[string]int{}
	err = caseLines(block, "a reconcile case", true, func(t consumergroup.Topic) { c.Topics = append(c.Topics, t) }, func(f []string) (bool, error) {
		switch f[0] {
		case "member":
			if err := need(f, 6); err != nil {
				return true, err
			}
			st, ok := memberStates[f[2]]
			if !ok {
				return true, fmt.Errorf("member state %q: want STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS or UNKNOWN", f[2])
			}
			e, err1 := strconv.ParseInt(f[3], 10, 32)
			pe, err2 := strconv.ParseInt(f[4], 10, 32)
			if err1 != nil || err2 != nil {
				return true, fmt.Errorf("member %s: epochs %q %q are not numbers", f[1], f[3], f[4])
			}
			m := ReconcileMember{ID: f[1], State: st, Epoch: int32(e), PrevEpoch: int32(pe),
				Assigned: map[TopicID]map[int32]int32{}, Pending: map[TopicID]map[int32]int32{}, Target: map[TopicID][]int32{}}
			if f[5] != "-" {
				m.Subscribed = strings.Split(f[5], ",")
			}
			index[m.ID] = len(c.Members)
			c.Members = append(c.Members, m)
		case "assigned", "pending", "target":
			if err := need(f, 4); err != nil {
				return true, err
			}
			i, ok := index[f[1]]
			if !ok {
				return true, fmt.Errorf("%s line for unknown member %q", f[0], f[1])
			}
			t, err := assignor.ParseTopicID(f[2])
			if err != nil {
				return true, err
			}
			m := &c.Members[i]
			if f[0] == "target" {
				if m.Target[t], err = parseInts(f[3]); err != nil {
					return true, err
				}
				return true, nil
			}
			ps, err := parseEpochs(f[3])
			if err != nil {
				return true, err
			}
			if f[0] == "assigned" {
				m.Assigned[t] = ps
			} else {
				m.Pending[t] = ps
			}
		case "owner":
			if err := need(f, 3); err != nil {
				return true, err
			}
			t, err := assignor.ParseTopicID(f[1])
			if err != nil {
				return true, err
			}
			if c.Owners[t], err = parseEpochs(f[2]); err != nil {
				return true, err
			}
		default:
			return false, nil
		}
		return true, nil
	})
	return c, err
}

// GoAssign is the Go side of an assign case, ready to run.
type GoAssign struct {
	a      assignor.Assignor
	spec   assignor.GroupSpec
	topics assignor.PartitionCounts
	// into is the result AssignInto reuses from one Run to the next.
	into assignor.GroupAssignment
}

// PrepareAssign builds groupquake's assignor for c, with the JDK's HashSet
// order of javaMajor (assignor.JavaVersion) and the Kafka release's profile.
func PrepareAssign(c *AssignCase, kafka string, javaMajor int) (*GoAssign, error) {
	a, err := assignor.New(c.Assignor, assignor.KafkaVersion(kafka), assignor.JavaVersion(javaMajor))
	if err != nil {
		return nil, err
	}
	topics := assignor.PartitionCounts{}
	for _, t := range c.Topics {
		topics[t.ID] = t.Partitions
	}
	return &GoAssign{a: a, spec: c.Spec, topics: topics}, nil
}

// Run is one assignment as groupquake's coordinator makes it: AssignInto
// (assignor.IntoAssignor), reusing the memory of the previous Run's result,
// which is then no longer valid; Assign for an assignor without it.
func (g *GoAssign) Run() (assignor.GroupAssignment, error) {
	ia, ok := g.a.(assignor.IntoAssignor)
	if !ok {
		return g.a.Assign(g.spec, g.topics)
	}
	err := ia.AssignInto(g.spec, g.topics, &g.into)
	return g.into, err
}

// RunFresh is one Assign call: a new result, nothing reused.
func (g *GoAssign) RunFresh() (assignor.GroupAssignment, error) { return g.a.Assign(g.spec, g.topics) }

// topicIndex is a TopicMetadata over maps, as the wire server's
// (consumergroup.Topics scans a list, which would charge the Go side for
// the harness's lookup).
type topicIndex struct {
	byName map[string]*consumergroup.Topic
	byID   map[TopicID]*consumergroup.Topic
}

func newTopicIndex(ts []consumergroup.Topic) topicIndex {
	idx := topicIndex{byName: map[string]*consumergroup.Topic{}, byID: map[TopicID]*consumergroup.Topic{}}
	for i := range ts {
		t := &ts[i]
		idx.byName[t.Name], idx.byID[t.ID] = t, t
	}
	return idx
}

func (t topicIndex) TopicByName(name string) ([16]byte, int, bool) {
	x := t.byName[name]
	if x == nil {
		return [16]byte{}, 0, false
	}
	return x.ID, x.Partitions, true
}

func (t topicIndex) TopicByID(id [16]byte) (string, int, bool) {
	x := t.byID[id]
	if x == nil {
		return "", 0, false
	}
	return x.Name, x.Partitions, true
}

// GoReconcile is the Go side of a reconcile case, ready to run.
type GoReconcile struct {
	ids   []string
	steps []*consumergroup.Reconciliation
}

// PrepareReconcile prepares one consumergroup.Reconciliation per member of
// c under the profile of the Kafka release.
func PrepareReconcile(c *ReconcileCase, kafka string) (*GoReconcile, error) {
	v, err := version.Parse(kafka)
	if err != nil {
		return nil, err
	}
	idx := newTopicIndex(c.Topics)
	owners := c.Owners
	epochOf := func(t TopicID, p int32) int32 {
		if e, ok := owners[t][p]; ok {
			return e
		}
		return -1
	}
	g := &GoReconcile{}
	for _, m := range c.Members {
		g.ids = append(g.ids, m.ID)
		g.steps = append(g.steps, consumergroup.NewReconciliation(v.Profile(), consumergroup.ReconcileInput{
			MemberID: m.ID, State: m.State, Epoch: m.Epoch, PrevEpoch: m.PrevEpoch,
			Subscribed: m.Subscribed, Assigned: m.Assigned, Pending: m.Pending,
			TargetEpoch: c.TargetEpoch, Target: m.Target, HasSubscriptionChanged: c.SubscriptionChanged,
			Topics: idx, PartitionEpoch: epochOf,
		}))
	}
	return g, nil
}

// Run reconciles every member once and returns the sum of the new epochs
// (something to keep, so the work is not dropped).
func (g *GoReconcile) Run() (int64, error) {
	var sum int64
	for _, s := range g.steps {
		out, err := s.Run()
		if err != nil {
			return 0, err
		}
		sum += int64(out.Epoch)
	}
	return sum, nil
}

// RenderAssign renders a result as KafkaRef.java's print mode does.
func RenderAssign(name string, res assignor.GroupAssignment, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "assign %s\n", name)
	if err != nil {
		b.WriteString("error PartitionAssignorException\nend\n")
		return b.String()
	}
	for _, id := range slices.Sorted(maps.Keys(res.Members)) {
		fmt.Fprintf(&b, "member %s\n", id)
		byTopic := map[string][]int32{}
		for _, tp := range res.Members[id] {
			if len(tp.Partitions) > 0 {
				byTopic[tp.Topic.String()] = slices.Sorted(slices.Values(tp.Partitions))
			}
		}
		for _, t := range slices.Sorted(maps.Keys(byTopic)) {
			fmt.Fprintf(&b, "  %s %s\n", t, joinInts(byTopic[t]))
		}
	}
	b.WriteString("end\n")
	return b.String()
}

// Render runs every member's step once and renders the results as
// KafkaRef.java's print mode does.
func (g *GoReconcile) Render(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "reconcile %s\n", name)
	for i, s := range g.steps {
		out, err := s.Run()
		if err != nil {
			fmt.Fprintf(&b, "member %s error FencedMemberEpochException\n", g.ids[i])
			continue
		}
		fmt.Fprintf(&b, "member %s %s epoch=%d prev=%d\n", g.ids[i], out.State, out.Epoch, out.PrevEpoch)
		renderEpochs(&b, "assigned", out.Assigned)
		renderEpochs(&b, "pending", out.Pending)
	}
	b.WriteString("end\n")
	return b.String()
}

func renderEpochs(b *strings.Builder, what string, a map[TopicID]map[int32]int32) {
	byTopic := map[string]map[int32]int32{}
	for t, ps := range a {
		if len(ps) > 0 {
			byTopic[t.String()] = ps
		}
	}
	for _, t := range slices.Sorted(maps.Keys(byTopic)) {
		fmt.Fprintf(b, "  %s %s %s\n", what, t, joinEpochs(byTopic[t]))
	}
}
