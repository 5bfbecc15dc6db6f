package assignor

import (
	"fmt"
	"slices"
)

// Uniform is Kafka's UniformAssignor, the default server-side assignor: balanced
// first, sticky second. Homogeneous groups go to the homogeneous builder
// (UniformHomogeneousAssignmentBuilder, formerly OptimizedUniformAssignmentBuilder),
// heterogeneous ones to UniformHeterogeneousAssignmentBuilder.
type Uniform struct{ cfg config }

// NewUniform returns the uniform assignor for the configured Kafka version.
func NewUniform(opts ...Opt) (*Uniform, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Uniform{cfg: cfg}, nil
}

// Name implements Assignor.
func (*Uniform) Name() string { return UniformName }

// Assign implements Assignor (UniformAssignor.assign).
func (u *Uniform) Assign(spec GroupSpec, topics SubscribedTopicDescriber) (GroupAssignment, error) {
	return u.assign(&spec, topics, &assignWork{})
}

// AssignInto implements IntoAssignor.
func (u *Uniform) AssignInto(spec GroupSpec, topics SubscribedTopicDescriber, into *GroupAssignment) error {
	if into.work == nil {
		into.work = &assignWork{}
	}
	res, err := u.assign(&spec, topics, into.work)
	into.Members = res.Members
	return err
}

func (u *Uniform) assign(spec *GroupSpec, topics SubscribedTopicDescriber, w *assignWork) (GroupAssignment, error) {
	return validated(spec, u.cfg.javaVersion, func() (GroupAssignment, error) {
		if len(spec.Members) == 0 {
			return GroupAssignment{Members: w.output(0)}, nil
		}
		if spec.Subscription == Homogeneous {
			return assignUniformHomogeneous(spec, topics, u.cfg, w)
		}
		return assignUniformHeterogeneous(spec, topics, u.cfg)
	})
}

// assignUniformHomogeneous is UniformHomogeneousAssignmentBuilder.build.
//
// Invariants it keeps (for a consistent spec, where no partition is held by
// two members):
//  1. Every partition of every subscribed topic ends up with exactly one
//     member, or the call fails with "partitions were left unassigned".
//  2. Member sizes differ by at most one: every member gets minQuota = P/M,
//     and exactly P%M members get one more.
//  3. A member keeps min(quota, what it held) of its previous partitions of
//     subscribed topics, the first ones in its iteration order; only the excess
//     and partitions of unsubscribed topics move.
//  4. From 4.0.1 (KAFKA-18688) a member that already holds the extra partition
//     keeps it: the extra quota slot is given back by members that do not need
//     it, unless they are among the last members that must take it. Before,
//     the first P%M members in iteration order always got the extra slot, so a
//     balanced assignment could still move.
//
// Like Kafka's builder, which hands back a member's previous assignment
// object when it keeps all of it, nothing is copied that need not be: what a
// member keeps is a prefix of its previous partitions, which the output
// shares when it is already in ascending order, and what it is given is a
// run of the list of partitions to assign, which the output shares when the
// run is one topic in ascending order (all slices capped, so appending to one
// copies it). Topics are numbered by their place in the subscription.
func assignUniformHomogeneous(spec *GroupSpec, topics SubscribedTopicDescriber, cfg config, w *assignWork) (GroupAssignment, error) {
	// Kafka copies the first member's subscription into a HashSet: its
	// iteration order decides the order of never-assigned partitions.
	subscribed := javaUUIDSetCopyOrder(spec.Members[0].Topics, cfg.javaVersion)
	out := GroupAssignment{Members: w.output(len(spec.Members))}
	if len(subscribed) == 0 {
		return out, nil
	}
	index := newTopicIndex(len(subscribed))
	counts := make([]int, len(subscribed))
	total, err := countPartitions(subscribed, topics, index, counts)
	if err != nil {
		return GroupAssignment{}, err
	}

	// The partitions to assign, as Kafka's unassignedPartitions list: first
	// those nobody holds (isPartitionAssigned), topic by topic in the
	// subscription's order, ascending; then those the revoke pass takes
	// away, in member order.
	w.pending.copies = w.pending.copies[:0]
	if spec.InvertedTargetAssignment != nil {
		w.pending.addUnheldInverted(spec.InvertedTargetAssignment, subscribed, counts)
	} else {
		w.addUnheldPrevious(spec.Members, index, counts, total)
	}
	w.revokePass(spec, subscribed, index, total, cfg)
	if err := w.fillPass(len(spec.Members)); err != nil {
		return GroupAssignment{}, err
	}
	w.homogeneousOutput(spec.Members, subscribed, out.Members)
	return out, nil
}

// countPartitions numbers the subscribed topics in index by their place in
// subscribed, sets counts to each one's partition count and returns their
// total. A topic the metadata does not have is an error.
func countPartitions(subscribed []TopicID, topics SubscribedTopicDescriber, index *topicIndex, counts []int) (int, error) {
	total := 0
	for i, t := range subscribed {
		index.add(t) // i
		n := topics.NumPartitions(t)
		if n == -1 {
			return 0, fmt.Errorf("%w: members are subscribed to topic %s which doesn't exist in the topic metadata", ErrPartitionAssignor, t)
		}
		counts[i] = n
		total += n
	}
	return total, nil
}

// addUnheldInverted adds to l the partitions nobody holds according to the
// inverted target assignment, topic by topic in subscribed's order,
// ascending.
func (l *pendingList) addUnheldInverted(inverted map[TopicID]map[int32]string, subscribed []TopicID, counts []int) {
	free := 0
	for ti, t := range subscribed {
		free += max(counts[ti]-len(inverted[t]), 0)
	}
	l.reserve(free)
	var bits []bool
	for ti, t := range subscribed {
		held := inverted[t]
		n := counts[ti]
		switch {
		case len(held) == 0:
			for p := range int32(n) {
				l.add(int32(ti), p)
			}
		case len(held) <= 2*n:
			// Walking the topic's map once is cheaper than looking
			// each partition up in it.
			bits = append(bits[:0], make([]bool, n)...)
			for p := range held {
				if p >= 0 && int(p) < n {
					bits[p] = true
				}
			}
			for p := range int32(n) {
				if !bits[p] {
					l.add(int32(ti), p)
				}
			}
		default:
			for p := range int32(n) {
				if _, ok := held[p]; !ok {
					l.add(int32(ti), p)
				}
			}
		}
	}
}

// addUnheldPrevious adds to w.pending the partitions no member's previous
// assignment holds, topic by topic in the subscription's order, ascending.
// The held partitions are derived from the members' previous assignments,
// as the coordinator's group state holds them.
func (w *assignWork) addUnheldPrevious(members []MemberSpec, index *topicIndex, counts []int, total int) {
	pending := &w.pending
	// Topic ti's partitions are held[from[ti]:from[ti+1]].
	w.from = resized(w.from, len(counts)+1)
	from := w.from
	for ti := range counts {
		from[ti+1] = from[ti] + counts[ti]
	}
	w.held = resized(w.held, total)
	held := w.held
	heldCount := 0
	for i := range members {
		for _, tp := range members[i].Assignment {
			ti, ok := index.get(tp.Topic)
			if !ok {
				continue
			}
			bits := held[from[ti]:from[ti+1]]
			for _, p := range tp.Partitions {
				if int(p) < len(bits) && !bits[p] {
					bits[p] = true
					heldCount++
				}
			}
		}
	}
	pending.reserve(total - heldCount)
	for ti := range counts {
		bits := held[from[ti]:from[ti+1]]
		for p, h := range bits {
			if !h {
				pending.add(int32(ti), int32(p))
			}
		}
	}
}

// revokePass gives each member, in memberIds() order, its quota (total over
// the members, the remainder as one extra for some), keeps of its previous
// partitions up to the quota and adds the rest to w.pending. It leaves in
// w.kept and w.keptFrom what each member keeps, and in w.unfilled the
// members below their quota, in order.
func (w *assignWork) revokePass(spec *GroupSpec, subscribed []TopicID, index *topicIndex, total int, cfg config) {
	pending := &w.pending
	numMembers := len(spec.Members)
	quotas := newMemberQuotas(total, numMembers, cfg)

	// kept[keptFrom[i]:keptFrom[i+1]] are member i's kept partitions, in
	// the output's form (ascending; a member's own slice when it is).
	kept := resized(w.kept, numMembers)[:0]
	w.keptFrom = resized(w.keptFrom, numMembers+1)
	keptFrom := w.keptFrom
	// unfilled members in order, with their remaining quota.
	unfilledMembers := w.unfilled[:0]

	// Revoke pass: over memberIds() order.
	for i := range spec.Members {
		m := &spec.Members[i]
		keptFrom[i] = int32(len(kept))
		quota, hasExtra := quotas.next()
		assignment := m.Assignment
		if spec.RecordOrder && len(assignment) > 0 && heldOf(assignment, index) > quota {
			// Kafka's order matters only if the member holds more of the
			// subscribed topics than its quota: which it keeps depends on it.
			assignment = JavaAssignmentOrder(assignment, cfg.javaVersion)
		}
		kept, quota = keepUpTo(assignment, quota, subscribed, index, pending, kept)
		if quota = quotas.settle(i, quota, hasExtra); quota > 0 {
			unfilledMembers = append(unfilledMembers, unfilled{i, quota})
		}
	}
	keptFrom[numMembers] = int32(len(kept))
	w.kept, w.unfilled = kept, unfilledMembers
}

// memberQuotas hands out the homogeneous quotas in memberIds() order: total
// partitions over numMembers members, the remainder as one extra partition
// each for some of them. Before KAFKA-18688 (legacy) the first ones in order
// get the extras; from 4.0.1 a member that does not fill its extra slot
// gives it back for a later member to claim.
type memberQuotas struct {
	numMembers, minQuota, remainingExtra int
	legacy                               bool
}

func newMemberQuotas(total, numMembers int, cfg config) memberQuotas {
	return memberQuotas{
		numMembers:     numMembers,
		minQuota:       total / numMembers,
		remainingExtra: total % numMembers,
		legacy:         !cfg.profile.UniformHomogeneousStable, // before KAFKA-18688
	}
}

// next is the next member's quota, and whether it includes an extra slot
// that settle may still give back.
func (q *memberQuotas) next() (quota int, hasExtra bool) {
	quota = q.minQuota
	if q.remainingExtra > 0 {
		quota++
		if q.legacy {
			q.remainingExtra--
		} else {
			hasExtra = true
		}
	}
	return quota, hasExtra
}

// settle takes member i's quota still to fill once it kept what it could of
// its previous partitions, and returns what it still gets.
func (q *memberQuotas) settle(i, quota int, hasExtra bool) int {
	if !q.legacy && quota > 0 && hasExtra && q.numMembers-i > q.remainingExtra {
		// Give the extra slot back for a later member to claim, unless this
		// member is one of the last remainingExtra members and must take it.
		quota--
		hasExtra = false
	}
	if hasExtra {
		q.remainingExtra--
	}
	return quota
}

// heldOf counts the partitions of assignment that are of subscribed topics
// (those index numbers).
func heldOf(assignment []TopicPartitions, index *topicIndex) int {
	held := 0
	for _, tp := range assignment {
		if _, ok := index.get(tp.Topic); ok {
			held += len(tp.Partitions)
		}
	}
	return held
}

// keepUpTo keeps, in assignment's order, up to quota partitions of the
// subscribed topics in a member's previous assignment: it appends them to
// kept, adds the rest to pending, and returns kept and the quota left
// (negative when none was left before).
func keepUpTo(assignment []TopicPartitions, quota int, subscribed []TopicID, index *topicIndex, pending *pendingList, kept []TopicPartitions) ([]TopicPartitions, int) {
	for _, tp := range assignment {
		ti, ok := index.get(tp.Topic)
		if !ok {
			continue // the whole topic is dropped
		}
		keep := len(tp.Partitions)
		if keep <= quota {
			quota -= keep
		} else {
			keep = max(quota, 0)
			quota -= keep
			for _, p := range tp.Partitions[keep:] {
				pending.add(ti, p)
			}
		}
		if keep > 0 {
			ps := tp.Partitions[:keep:keep]
			if !strictlyAscending(ps) {
				ps = pending.sorted(ps)
			}
			kept = append(kept, TopicPartitions{Topic: subscribed[ti], Partitions: ps})
		}
	}
	return kept, quota
}

// fillPass gives the members left unfilled by the revoke pass, in order,
// the next partitions in line: w.runs[i] is the run of w.pending that
// member i is given. A partition left over is an error: the spec is
// inconsistent.
func (w *assignWork) fillPass(numMembers int) error {
	pending := &w.pending
	w.runs = resized(w.runs, numMembers)
	runs := w.runs
	next := 0
	for _, u := range w.unfilled {
		take := min(u.remaining, len(pending.part)-next)
		runs[u.member] = [2]int32{int32(next), int32(next + take)}
		next += take
	}
	if next < len(pending.part) {
		return fmt.Errorf("%w: partitions were left unassigned (%d of %d); the spec's previous assignments overlap or the inverted target assignment is inconsistent", ErrPartitionAssignor, len(pending.part)-next, len(pending.part))
	}
	return nil
}

// homogeneousOutput sets each member's assignment in out: what it keeps and
// the run it is given.
func (w *assignWork) homogeneousOutput(members []MemberSpec, subscribed []TopicID, out map[string]MemberAssignment) {
	pending, kept, keptFrom, runs := &w.pending, w.kept, w.keptFrom, w.runs
	// A member given nothing holds what it keeps; the others' topics are
	// in one more array, member i's region with room for its kept topics
	// and the stretches of its run.
	bound := 0
	for i := range members {
		if runs[i][0] < runs[i][1] {
			bound += int(keptFrom[i+1]-keptFrom[i]) + pending.stretches(runs[i])
		}
	}
	w.all = resized(w.all, bound)
	all := w.all
	for i := range members {
		a := kept[keptFrom[i]:keptFrom[i+1]:keptFrom[i+1]]
		if runs[i][0] < runs[i][1] {
			n := len(a) + pending.stretches(runs[i])
			region := all[:0:n]
			all = all[n:]
			a = pending.memberAssignment(region, subscribed, a, runs[i])
		}
		out[members[i].ID] = a
	}
}

// pendingList is the homogeneous builder's list of partitions to assign,
// as two parallel arrays (topic number, partition), and the array that
// sorted copies of kept partitions are cut from.
type pendingList struct {
	topic, part []int32
	copies      []int32
}

// sorted is a sorted copy of ps, cut from l.copies (capped: appending to it
// copies it).
func (l *pendingList) sorted(ps []int32) []int32 {
	if cap(l.copies)-len(l.copies) < len(ps) {
		l.copies = make([]int32, 0, max(len(ps), 1024))
	}
	n := len(l.copies)
	l.copies = append(l.copies, ps...)
	s := l.copies[n : n+len(ps) : n+len(ps)]
	slices.Sort(s)
	return s
}

// reserve makes room for n partitions and a few more (what the revoke pass
// adds to a balanced group).
func (l *pendingList) reserve(n int) {
	l.topic = resized(l.topic, n+16)[:0]
	l.part = resized(l.part, n+16)[:0]
}

// unfilled is a member below its quota after the revoke pass.
type unfilled struct {
	member    int
	remaining int
}

// assignWork is the memory of the uniform homogeneous and the range
// builders: fresh for Assign, kept from one call to the next by AssignInto
// (the output's map and arrays among it).
type assignWork struct {
	members  map[string]MemberAssignment
	ranges   rangeOut
	keys     []rangeKey
	order    []int
	pending  pendingList
	from     []int
	held     []bool
	kept     []TopicPartitions
	keptFrom []int32
	runs     [][2]int32
	all      []TopicPartitions
	unfilled []unfilled
}

// output is the output's map, for n members.
func (w *assignWork) output(n int) map[string]MemberAssignment {
	if w.members == nil {
		w.members = make(map[string]MemberAssignment, n)
	} else {
		clear(w.members)
	}
	return w.members
}

// resized is s with length n and zero values, reusing its array when it
// is large enough.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func (l *pendingList) add(topic, part int32) {
	l.topic = append(l.topic, topic)
	l.part = append(l.part, part)
}

// stretches is the number of stretches of one topic in the run
// [run[0], run[1]).
func (l *pendingList) stretches(run [2]int32) int {
	n := 0
	for k := run[0]; k < run[1]; k++ {
		if k == run[0] || l.topic[k] != l.topic[k-1] {
			n++
		}
	}
	return n
}

// memberAssignment is one member's output, built in out (empty, with room
// for its kept topics and the stretches of its run): the partitions it keeps
// (in the output's form already) and the run [run[0], run[1]) of the list
// it is given, each topic once, its partitions ascending.
func (l *pendingList) memberAssignment(out []TopicPartitions, subscribed []TopicID, kept []TopicPartitions, run [2]int32) MemberAssignment {
	out = append(out, kept...)
	// Partitions a member is given may repeat what it keeps, or repeat in
	// the list, when the spec's previous assignments overlap or its inverted
	// target assignment disagrees with them: the member holds them once, as
	// in Kafka's sets.
	var unsorted []int
	for k := run[0]; k < run[1]; {
		// One stretch of the run in the same topic.
		ti := l.topic[k]
		end := k + 1
		for end < run[1] && l.topic[end] == ti {
			end++
		}
		t := subscribed[ti]
		stretch := l.part[k:end:end]
		k = end
		j := slices.IndexFunc(out, func(x TopicPartitions) bool { return x.Topic == t })
		if j >= 0 {
			// The member keeps partitions of t, or t comes back later in
			// the run: append (the capped slices copy on the first append).
			merged := append(out[j].Partitions, stretch...)
			if !strictlyAscending(merged) {
				unsorted = append(unsorted, j)
			}
			out[j].Partitions = merged
			continue
		}
		if !strictlyAscending(stretch) {
			stretch = slices.Clone(stretch)
			unsorted = append(unsorted, len(out))
		}
		out = append(out, TopicPartitions{Topic: t, Partitions: stretch})
	}
	for _, j := range unsorted {
		slices.Sort(out[j].Partitions)
		out[j].Partitions = slices.Compact(out[j].Partitions)
	}
	return out[:len(out):len(out)]
}

func strictlyAscending(ps []int32) bool {
	for i := 1; i < len(ps); i++ {
		if ps[i] <= ps[i-1] {
			return false
		}
	}
	return true
}
