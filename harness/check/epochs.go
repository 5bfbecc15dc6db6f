package check

import (
	"sort"

	"github.com/groupquake/groupquake/harness/history"
)

type epochSeen struct {
	epoch     int32
	pos       int    // position in the history, or -1 for a snapshot outside it
	label     string // where it was seen, for messages
	tentative bool   // a classic generation from a JoinGroup or Heartbeat answer (see EpochMonotonic)
}

const NameEpochMonotonic = "EpochMonotonic"

// EpochMonotonic checks that nothing the group numbers goes backwards: each member's generation or
// member epoch as the coordinator handed it out (join, sync and heartbeat responses, and the epoch
// the member reports with assigned/revoked), and the group epoch, assignment epoch, generation and
// per-member epochs in the observer's descriptions and the saved snapshots. Each member's numbers
// are judged in the order it recorded them; each read of the observer against the reads that ended
// before it began (a describe from its invoke to its completion, a snapshot from HistoryLen to
// HistoryEnd, the final one after every checkpoint): reads that overlap are concurrent, and a
// snapshot taken after events the history lost is not judged. Sentinels (0 for join,
// -1 leave, -2 static leave) are not epochs and are skipped. A coordinator that reloads an older
// state after a failover is what this catches.
//
// Only what Kafka wrote must not go back. A classic coordinator answers JoinGroup from memory and
// writes the generation with the group's record at SyncGroup, answering SyncGroup only once that
// write is committed; so a generation seen in JoinGroup or Heartbeat answers, with no SyncGroup at
// it answered ok before, is tentative: a coordinator that fails over (or a paused one that resumes
// after losing its partition and answers from state it never wrote) loses it, and the new one
// hands out the generation from the log again. Such a step back is excused with a note. Anything
// confirmed (an ok SyncGroup at the generation, a consumer heartbeat answer, an assignment, a
// description) going back is a violation, and so is a tentative generation once a SyncGroup at it
// succeeds.
var EpochMonotonic = register(Checker{Name: NameEpochMonotonic, Place: 40, Groups: ConsumerGroups,
	Asserts: "generations and member, group and assignment epochs never go back, as far as Kafka wrote them",
	judge:   func(in *judging) Verdict { return epochMonotonic(in.f, in.obs) },
	nothing: noEpoch}).Judge

func epochMonotonic(f *facts, obs *history.Observations) Verdict {
	v := newVerdict(NameEpochMonotonic)
	// synced[incarnation/generation] is the first position of an ok SyncGroup at that generation:
	// from there on Kafka has written the generation.
	synced := map[string]int{}
	for i := range f.ev {
		if val, ok := f.vals[i].(history.Sync); ok && f.ev[i].Type == history.OK && val.Generation > 0 {
			k := itoa(int64(f.incAt(i))) + "/" + itoa(int64(val.Generation))
			if _, seen := synced[k]; !seen {
				synced[k] = i
			}
		}
	}
	written := func(inc string, gen int32, before int) bool {
		p, ok := synced[inc+"/"+itoa(int64(gen))]
		return ok && p < before
	}
	last := map[string]epochSeen{}
	checked, forgotten, unwritten := 0, 0, 0
	var firstForgotten, firstUnwritten string
	see := func(key, what string, e int32, pos int, label string, tentative bool) {
		if e <= 0 {
			return
		}
		checked++
		// A new incarnation of the group numbers everything from the start again.
		inc := itoa(int64(f.incAt(pos)))
		key = inc + "/" + key
		prev, ok := last[key]
		if ok && e < prev.epoch {
			switch {
			case tentative:
				// Answered from memory: a coordinator that has lost its partition and not yet noticed
				// answers from state it can no longer write. Judged if a SyncGroup confirms it.
				unwritten++
				if firstUnwritten == "" {
					firstUnwritten = what + " " + itoa(int64(e)) + " at " + label + " after " + itoa(int64(prev.epoch)) + " at " + prev.label
				}
				return
			case prev.tentative && !written(inc, prev.epoch, pos):
				forgotten++
				if firstForgotten == "" {
					firstForgotten = what + " " + itoa(int64(prev.epoch)) + " at " + prev.label + ", then " + itoa(int64(e)) + " at " + label
				}
				last[key] = epochSeen{e, pos, label, tentative}
				return
			}
			v.fail([]int64{f.idx(prev.pos), f.idx(pos)}, "%s went back from %d (%s) to %d (%s)", what, prev.epoch, prev.label, e, label)
		}
		if !ok || e > prev.epoch {
			last[key] = epochSeen{e, pos, label, tentative}
		} else if e == prev.epoch {
			// The latest sighting is cited; the generation stays confirmed once it was.
			last[key] = epochSeen{e, pos, label, tentative && prev.tentative}
		}
	}
	at := func(pos int) string { return "event " + itoa(f.idx(pos)) }
	for i := range f.ev {
		e := &f.ev[i]
		switch val := f.vals[i].(type) {
		case history.Heartbeat:
			m := pick(val.Member, e.Process)
			switch {
			case e.Type == history.OK && val.Protocol == history.ProtocolConsumer:
				see("member/"+m, "member epoch of "+m, val.ResultEpoch, i, at(i), false)
			case e.Type == history.Invoke && val.Protocol != history.ProtocolConsumer:
				// A classic heartbeat says nothing back but its error; an ok means the generation sent
				// was current when it was sent, so it is ordered by its invoke.
				if p := f.partner[i]; p >= 0 && f.ev[p].Type == history.OK {
					see("member/"+m, "generation of "+m, val.Epoch, i, at(i), true)
				}
			}
		case history.Join:
			if e.Type == history.OK {
				m := pick(val.Member, e.Process)
				see("member/"+m, "generation of "+m, val.Generation, i, at(i), true)
			}
		case history.Sync:
			if e.Type == history.OK {
				m := pick(val.Member, e.Process)
				see("member/"+m, "generation of "+m, val.Generation, i, at(i), false)
			}
		case history.Assignment:
			if e.F != history.FLost && e.Type != history.Invoke {
				m := pick(val.Member, e.Process)
				see("member/"+m, "epoch of "+m, val.Epoch, i, at(i)+" ("+e.F+")", false)
			}
		}
	}
	reads, beyond := f.epochReads(v)
	checked += reads
	v.note("%d epochs checked over %d sequences", checked, len(last))
	if beyond > 0 {
		v.note("%d snapshot(s) not judged: taken after events the history does not hold (it ends at event %d)", beyond, f.lastIndex())
	}
	if forgotten > 0 {
		v.note("%d step(s) back from a generation answered to JoinGroup or Heartbeat that no SyncGroup confirmed, so Kafka never wrote it and a failover forgot it: excused (first: %s)", forgotten, firstForgotten)
	}
	if unwritten > 0 {
		v.note("%d lower generation(s) answered to JoinGroup or Heartbeat and not confirmed by a SyncGroup before: not judged, as Kafka had not written them (first: %s)", unwritten, firstUnwritten)
	}
	v.Notes = append(v.Notes, f.incNotes...)
	return v.done()
}

// epochRead is one read of the group by the observer: what it described and when.
type epochRead struct {
	span
	pos int // the position cited for it: the describe's completion, or the event before a snapshot
	// inc is the incarnation of the group where the read ended, incLo where it began: a read
	// in flight while a new incarnation began may have been served by either (rule 2: the
	// order of the answers proves nothing), and is judged in the first it fits.
	inc, incLo int
	label      string
	g          *history.GroupDescription
}

// epochReads judges the numbers in the observer's reads (describes and snapshots), each against
// the highest the reads that ended before it began showed, in the same incarnation of the group.
// It returns how many numbers it judged, and how many snapshots it left unjudged because the
// history lost events before them.
func (f *facts) epochReads(v *verdict) (checked, beyond int) {
	var rs []epochRead
	for _, pos := range f.describes {
		if d := f.vals[pos].(history.Describe); d.Group != nil {
			sp := f.callSpan(pos)
			rs = append(rs, epochRead{sp, pos, f.incAt(pos), f.incCertainAt(sp.b), "event " + itoa(f.idx(pos)) + " (describe)", d.Group})
		}
	}
	for _, s := range f.snaps {
		switch {
		case s.beyond:
			beyond++
		case s.s.Group != nil:
			p := max(s.b, 0)
			rs = append(rs, epochRead{s.span, p, f.incAt(p), f.incAt(p), s.label, s.s.Group})
		}
	}
	// Walk the reads by where they began, folding in each read once it ended before the next one
	// began (every checkpoint before the final snapshot).
	byB := make([]int, len(rs))
	byE := make([]int, len(rs))
	for i := range rs {
		byB[i], byE[i] = i, i
	}
	sort.SliceStable(byB, func(a, b int) bool { return rs[byB[a]].b < rs[byB[b]].b })
	sort.SliceStable(byE, func(a, b int) bool { return rs[byE[a]].e < rs[byE[b]].e })
	type high struct {
		epoch int32
		read  int
	}
	type key struct {
		inc    int
		number readNumber
		member string
	}
	top := map[key]high{}
	folded := make([]bool, len(rs))
	fold := func(i int) {
		if folded[i] {
			return
		}
		folded[i] = true
		r := &rs[i]
		each(r.g, func(n readNumber, member string, e int32) {
			k := key{r.inc, n, member}
			if h, ok := top[k]; !ok || e > h.epoch || e == h.epoch && r.e >= rs[h.read].e {
				top[k] = high{e, i}
			}
		})
	}
	next := 0
	for _, i := range byB {
		r := &rs[i]
		for ; next < len(byE) && rs[byE[next]].e <= r.b; next++ {
			fold(byE[next])
		}
		if r.final {
			for j := range rs {
				if rs[j].snapshot && !rs[j].final {
					fold(j)
				}
			}
		}
		// A read that began in an earlier incarnation than it ended in belongs to the first of
		// them it fits; one that fits none is judged where it ended.
		for c := r.incLo; c < r.inc; c++ {
			fits := true
			each(r.g, func(n readNumber, member string, e int32) {
				if h, ok := top[key{c, n, member}]; ok && e < h.epoch {
					fits = false
				}
			})
			if fits {
				r.inc = c
				break
			}
		}
		each(r.g, func(n readNumber, member string, e int32) {
			checked++
			h, ok := top[key{r.inc, n, member}]
			if ok && e < h.epoch {
				p := &rs[h.read]
				v.fail([]int64{f.idx(p.pos), f.idx(r.pos)}, "%s went back from %d (%s) to %d (%s)", n.what(member), h.epoch, p.label, e, r.label)
			}
		})
	}
	return checked, beyond
}

// readNumber is one of the numbers a description holds that must not go back.
type readNumber uint8

const (
	groupGeneration readNumber = iota
	groupEpoch
	assignmentEpoch
	describedMemberEpoch
)

func (n readNumber) what(member string) string {
	switch n {
	case groupGeneration:
		return "group generation"
	case groupEpoch:
		return "group epoch"
	case assignmentEpoch:
		return "assignment epoch"
	}
	return "member epoch of " + member + " as described"
}

// each calls fn with every number of g that must not go back (a member's with its member id).
func each(g *history.GroupDescription, fn func(n readNumber, member string, e int32)) {
	if g.Generation > 0 {
		fn(groupGeneration, "", g.Generation)
	}
	if g.GroupEpoch > 0 {
		fn(groupEpoch, "", g.GroupEpoch)
	}
	if g.AssignmentEpoch > 0 {
		fn(assignmentEpoch, "", g.AssignmentEpoch)
	}
	for _, m := range g.Members {
		if m.MemberEpoch > 0 {
			fn(describedMemberEpoch, m.MemberID, m.MemberEpoch)
		}
	}
}

func pick(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
