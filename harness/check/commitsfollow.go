package check

import (
	"encoding/json"
	"sort"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/history"
)

const NameCommitsFollowConsumed = "CommitsFollowConsumed"

// CommitsFollowConsumed checks that a member commits only positions it reached. Every commit of
// partition p by member m at offset c that may have been written (accepted, or of unknown outcome)
// is one of:
//
//	(a) a position m started from: a committed offset of p that m read (its offset-fetch), or one
//	    the group may have held when m took p: a commit of p, by any member, sent before the first
//	    record of p m consumed after it last took p (before the commit's answer if it consumed
//	    none since), or the log's start, 0, where nothing was committed (every member kind the
//	    workload runs starts at auto.offset.reset=earliest, on a topic the run created);
//	(b) one past a record of p that m consumed before the commit was answered;
//	(c) an offset m itself had committed for p before.
//
// (b) and (c) count only what m's current incarnation did: a crash, a restart or a leave by the
// nemesis (healed at the fault's stop) and a restart by the member's supervisor start a new
// process, whose positions come from the committed offsets again.
//
// A commit ahead of anything m consumed is the client bug that makes the next owner skip
// records (a commit before the records are handed out, one past more than the last record, a
// stale position after a seek); NoLostRecords sees only its end effect, and nothing when the
// skipped records were consumed by someone else.
//
// The bound of (b) is the commit's answer, not its request: the workload writes a Poll's records
// after Poll returned, and a member may commit the position that Poll reached (an auto-commit on
// its own goroutine) before the records are written. Of the 23,069 commits of the 188 real
// consumer-group runs first judged (Kafka 4.1.2 and 4.4.0), 229 were such commits, each with its
// record written before the answer; none needed a record written after it, and every one was
// one past a record its member had consumed. Offsets are consecutive: the workload writes
// without transactions, so no control record sits between two records. Reset commits (the
// workload rewinding a partition) are not judged; their offsets count as commits for (a) and
// (c). A commit certainly not written (rejected, or a partition error that proves it) is not
// judged.
var CommitsFollowConsumed = register(Checker{Name: NameCommitsFollowConsumed, Place: 140, Groups: ConsumerGroups,
	Asserts: "a member commits only positions it reached: one past a record it consumed, the committed offset it started from, or an offset it had committed",
	judge:   func(in *judging) Verdict { return commitsFollowConsumed(in.f) },
	nothing: noCommit}).Judge

// reachedBy counts how the judged commits were explained, for the verdict's note.
type reachedBy struct {
	consumed, consumedLate, started, recommitted, reset, unwritten int
}

func commitsFollowConsumed(f *facts) Verdict {
	v := newVerdict(NameCommitsFollowConsumed)
	incs := f.memberIncarnations()
	fetched := f.offsetFetches()
	var n reachedBy
	judged := 0
	for tp := range f.tps {
		x := f.reachIndex(tp, fetched[tp])
		for _, id := range f.commitsByTP[tp] {
			c := &f.commits[id]
			switch {
			case !c.maybe():
				n.unwritten++
				continue
			case c.c.Reset:
				n.reset++
				continue
			}
			judged++
			if f.commitReached(x, c, id, tp, incs, &n) {
				continue
			}
			f.commitAhead(v, c, tp, incs)
		}
	}
	if judged == 0 {
		v.note("vacuous: no commit that may have been written in the history")
	}
	v.note("%d commits judged: %d one past a record the member consumed before the answer (%d of them with the record written only after the commit was sent), %d at a position the member started from, %d repeating the member's own earlier commit",
		judged, n.consumed, n.consumedLate, n.started, n.recommitted)
	v.note("not judged: %d reset commits, %d commits certainly not written", n.reset, n.unwritten)
	return v.done()
}

// memberAt is a member and an offset of one partition.
type memberAt struct {
	m   int
	off int64
}

// reached indexes one partition's history for commitReached, every list of positions in history
// order: where each member consumed each offset, read it as the committed offset, and sent a
// commit of it that may have been written; the commits of each offset by anyone; and the first
// record each member consumed in each of its ownerships (ownership -1: owning none).
type reached struct {
	consumed, fetched, sent map[memberAt][]int
	commits                 map[int64][]int // commit ids, in invoke order
	first                   map[[2]int]int  // (member, ownership) → position
}

func (f *facts) reachIndex(tp int, fetched []fetchRead) *reached {
	x := &reached{consumed: map[memberAt][]int{}, fetched: map[memberAt][]int{}, sent: map[memberAt][]int{},
		commits: map[int64][]int{}, first: map[[2]int]int{}}
	for _, r := range f.consumes[tp] {
		x.consumed[memberAt{r.member, r.off}] = append(x.consumed[memberAt{r.member, r.off}], r.pos)
		if _, ok := x.first[[2]int{r.member, r.interval}]; !ok {
			x.first[[2]int{r.member, r.interval}] = r.pos
		}
	}
	for _, r := range fetched {
		x.fetched[memberAt{r.member, r.off}] = append(x.fetched[memberAt{r.member, r.off}], r.pos)
	}
	for _, id := range f.commitsByTP[tp] {
		if o := &f.commits[id]; o.maybe() {
			off, _ := o.offsetOf(tp)
			x.sent[memberAt{o.member, off}] = append(x.sent[memberAt{o.member, off}], o.inv)
			x.commits[off] = append(x.commits[off], id)
		}
	}
	return x
}

// firstIn is the first of the ascending positions ps in [lo, hi), if any.
func firstIn(ps []int, lo, hi int) (int, bool) {
	k := sort.SearchInts(ps, lo)
	if k < len(ps) && ps[k] < hi {
		return ps[k], true
	}
	return 0, false
}

// commitReached reports whether commit id of tp is a position its member reached, by (b), (a) or
// (c), counting which in n.
func (f *facts) commitReached(x *reached, c *commitOp, id, tp int, incs [][]int, n *reachedBy) bool {
	off, _ := c.offsetOf(tp)
	m, answered := c.member, c.answeredAt(len(f.ev))
	from := incarnationStart(incs[m], c.inv)
	if pos, ok := firstIn(x.consumed[memberAt{m, off - 1}], from, answered); ok {
		n.consumed++
		if pos > c.inv {
			n.consumedLate++
		}
		return true
	}
	if f.startedFrom(x, c, id, tp, off, from) {
		n.started++
		return true
	}
	// (c) counts a commit that may have been written, and so was judged itself: a wrong
	// position is reported once, not at every retry, and a rejected one excuses nothing.
	if _, ok := firstIn(x.sent[memberAt{m, off}], from, c.inv); ok {
		n.recommitted++
		return true
	}
	return false
}

// startedFrom reports whether off is a position member m of commit c may have started from in
// tp: the log's start, a committed offset it read in its incarnation (from on), or a commit of tp
// that may have been written before m started reading tp the last time it took it.
func (f *facts) startedFrom(x *reached, c *commitOp, id, tp int, off int64, from int) bool {
	if off == 0 {
		return true
	}
	answered := c.answeredAt(len(f.ev))
	if _, ok := firstIn(x.fetched[memberAt{c.member, off}], from, answered); ok {
		return true
	}
	upTo := answered
	if pos, ok := x.first[[2]int{c.member, f.lastOwnershipBefore(c.member, tp, answered)}]; ok {
		upTo = min(upTo, pos)
	}
	// The commits of off in invoke order: the first that is not c itself.
	for _, oid := range x.commits[off] {
		if oid != id {
			return f.commits[oid].inv < upTo
		}
	}
	return false
}

// commitAhead fails commit c of tp, citing what its member had consumed of tp.
func (f *facts) commitAhead(v *verdict, c *commitOp, tp int, incs [][]int) {
	off, _ := c.offsetOf(tp)
	m, answered := c.member, c.answeredAt(len(f.ev))
	from := incarnationStart(incs[m], c.inv)
	idx := []int64{f.idx(c.inv)}
	if c.done >= 0 {
		idx = append(idx, f.idx(c.done))
	}
	var top *consumeRef
	for k, r := range f.consumes[tp] {
		if r.member == m && r.pos >= from && r.pos < answered && (top == nil || r.off > top.off) {
			top = &f.consumes[tp][k]
		}
	}
	had := "it had consumed no record of it"
	if top != nil {
		idx = append(idx, f.idx(top.pos))
		had = "the highest record of it it had consumed was offset " + itoa(top.off) + " (event " + itoa(f.idx(top.pos)) + ")"
	}
	if from >= 0 {
		had += " since its process started again (event " + itoa(f.idx(from)) + ")"
	}
	v.fail(idx, "%s committed %s at offset %d (sent at event %d, %s), a position it never reached: %s; it did not start there (it read no committed offset %d, and no commit of %d was sent before it began reading the partition) and had not committed %d before",
		f.mems[m], f.tps[tp], off, f.idx(c.inv), c.answerSaid(f), had, off, off, off)
}

// answeredAt is the position of the commit's answer, or end for a commit never answered.
func (c *commitOp) answeredAt(end int) int {
	if c.done < 0 {
		return end
	}
	return c.done
}

// answerSaid says how the commit ended, for a message.
func (c *commitOp) answerSaid(f *facts) string {
	switch {
	case c.done < 0:
		return "never answered"
	case c.accepted():
		return "accepted at event " + itoa(f.idx(c.done))
	}
	return "of unknown outcome at event " + itoa(f.idx(c.done))
}

// fetchRead is a committed offset a member read of a partition (an offset-fetch fact: the
// committed offsets of partitions it was given).
type fetchRead struct {
	pos, member int
	off         int64
}

// offsetFetches lists, per partition, the committed offsets members said they read (-1 where
// nothing was committed: it matches no commit, and the member starts at the log's start).
func (f *facts) offsetFetches() [][]fetchRead {
	out := make([][]fetchRead, len(f.tps))
	for i := range f.ev {
		e := &f.ev[i]
		if e.F != history.FOffsetFetch || e.Type != history.Info {
			continue
		}
		var p struct {
			Member  string             `json:"member"`
			Offsets []history.OffsetAt `json:"offsets"`
		}
		raw, ok := f.vals[i].(json.RawMessage)
		if !ok {
			raw, _ = json.Marshal(f.vals[i])
		}
		if json.Unmarshal(raw, &p) != nil {
			continue
		}
		m, ok := f.memIdx[pick(p.Member, e.Process)]
		if !ok {
			continue // a member the history shows nothing else of commits nothing
		}
		for _, o := range p.Offsets {
			if tp, known := f.tpIdx[o.TP()]; known {
				out[tp] = append(out[tp], fetchRead{i, m, o.Offset})
			}
		}
	}
	return out
}

// memberIncarnations lists, per member, the positions where a new process of it starts: the
// heal (the stop's invoke) of a member-crash, member-restart or member-leave fault aimed at it,
// and its supervisor's restart. Facts the history does not hold are not made up: a member or a
// partition only an offset-fetch names is left out.
func (f *facts) memberIncarnations() [][]int {
	out := make([][]int, len(f.mems))
	for i := range f.ev {
		e := &f.ev[i]
		var names []string
		switch v := f.vals[i].(type) {
		case history.Fault:
			// The old process is gone once the fault's start completed, and the new one
			// starts once its stop is sent: the stop's invoke lies between.
			if e.F == history.FFaultStop && e.Type == history.Invoke && restartsMember(v.What) {
				names = v.Target
			}
		case history.Restart:
			if v.Action == history.RestartStarted {
				names = []string{pick(v.Member, e.Process)}
			}
		}
		for _, name := range names {
			if m, ok := f.memIdx[name]; ok {
				out[m] = append(out[m], i)
			}
		}
	}
	return out
}

// restartsMember reports whether a fault of that kind ends a member's process or its membership,
// with a new one at its heal (faults/churn.go).
func restartsMember(what string) bool { return faults.StartsAnew(faults.Kind(what)) }

// incarnationStart is where the incarnation that was running at pos began: the last start at or
// before pos, -1 for the member's first, which began before the history.
func incarnationStart(starts []int, pos int) int {
	k := sort.SearchInts(starts, pos+1)
	if k == 0 {
		return -1
	}
	return starts[k-1]
}
