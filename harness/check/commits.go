package check

import (
	"sort"

	"github.com/groupquake/groupquake/harness/history"
)

// staleCommitError reports whether a coordinator may reject a stale commit with this error, by the
// group's protocol (OffsetMetadataManager.validateOffsetCommit, ClassicGroup and
// ConsumerGroup.validateOffsetCommit). A classic member inside a consumer group gets
// ILLEGAL_GENERATION; REBALANCE_IN_PROGRESS is the classic answer during CompletingRebalance.
func staleCommitError(protocol, name string) bool {
	switch name {
	case "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", "ILLEGAL_GENERATION":
		return true
	case "REBALANCE_IN_PROGRESS":
		return protocol == history.ProtocolClassic
	case "STALE_MEMBER_EPOCH":
		return protocol != history.ProtocolClassic
	}
	return false
}

// unjudgedCommitError reports whether the error says the request never reached a coordinator that
// could judge it; any commit may get one (CoordinatorOperationExceptionHelper,
// kafka-group-protocol.md §1.2).
func unjudgedCommitError(name string) bool {
	switch name {
	case "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION":
		return true
	}
	return false
}

const NameFencedCommitsRejected = "FencedCommitsRejected"

// FencedCommitsRejected checks every commit against ownership. An accepted commit of partition p at
// generation/epoch e by member m must come from the owner of (p, e), and must not have been sent
// after p had moved on to another member at a newer epoch (a zombie commit). A commit that was stale
// by the same evidence and was rejected must carry an error the protocol names for stale commits
// (or a coordinator-unavailable error that means it was never judged).
var FencedCommitsRejected = register(Checker{Name: NameFencedCommitsRejected, Place: 50, Groups: ConsumerGroups,
	Asserts: "an accepted commit came from the partition's owner at its epoch; a stale or zombie commit is rejected with the error the protocol names",
	judge:   func(in *judging) Verdict { return fencedCommitsRejected(in.f) },
	nothing: noCommit}).Judge

func fencedCommitsRejected(f *facts) Verdict {
	v := newVerdict(NameFencedCommitsRejected)
	accepted, rejected, admin, byLog := 0, 0, 0, 0
	firstByLog := ""
	for id := range f.commits {
		c := &f.commits[id]
		if c.outcome != history.OK && c.outcome != history.Fail {
			continue
		}
		if c.c.Epoch <= 0 {
			admin++
			continue
		}
		if c.accepted() {
			accepted++
		} else {
			rejected++
		}
		m := f.mems[c.member]
		for _, tp := range c.tps {
			stale, idx, logged := f.staleness(c, tp)
			if logged != "" {
				byLog++
				if firstByLog == "" {
					firstByLog = logged
				}
			}
			if c.accepted() {
				if stale != "" {
					v.fail(append([]int64{f.idx(c.inv), f.idx(c.done)}, idx...), "commit of %s by %s at epoch %d (sent at event %d) was accepted at event %d, but %s",
						f.tps[tp], m, c.c.Epoch, f.idx(c.inv), f.idx(c.done), stale)
				}
				continue
			}
			if stale == "" {
				continue
			}
			proto := pick(c.c.Protocol, f.proto[c.member])
			if !staleCommitError(proto, c.c.Error) && !unjudgedCommitError(c.c.Error) {
				v.fail(append([]int64{f.idx(c.inv), f.idx(c.done)}, idx...), "stale commit of %s by %s at epoch %d (%s) was rejected with %q at event %d, which is not an error the %s protocol names for a stale commit",
					f.tps[tp], m, c.c.Epoch, stale, c.c.Error, f.idx(c.done), pick(proto, "unknown"))
			}
			break // one verdict per request: the coordinator rejects a request as a whole
		}
	}
	v.note("%d accepted and %d rejected member commits judged; %d admin commits (epoch ≤ 0) not judged", accepted, rejected, admin)
	if byLog > 0 {
		v.note("%d accepted commit(s) recorded as sent after their partition moved on were written before it did, as __consumer_offsets shows: the log outranks where the history placed them (first: %s)", byLog, firstByLog)
	}
	v.Notes = append(v.Notes, f.incNotes...)
	return v.done()
}

// staleness says why commit c of tp must not be accepted, or "" when nothing in the history says
// so; logged says what in __consumer_offsets overrode the history's order, when it did.
func (f *facts) staleness(c *commitOp, tp int) (why string, idx []int64, logged string) {
	e := c.c.Epoch
	inc := f.incAt(c.inv)
	pk := pairKey{inc, tp, e}
	owner, ok := f.pairs[pk]
	if ok && len(f.heirs[pk]) > 0 {
		// The pair passed from static member to static member (a static handover, see findInstances): the commit is
		// judged against the committer's own stretch of it, which ends where the next one took over.
		chain := append([]pairOwner{owner}, f.heirs[pk]...)
		for i, o := range chain {
			if o.member != c.member {
				continue
			}
			owner = o
			if i+1 < len(chain) && chain[i+1].pos < c.inv {
				next := chain[i+1]
				return f.tps[tp].String() + " at epoch " + itoa(int64(e)) + " had passed to " + f.mems[next.member] + " under the same instance id (event " + itoa(f.idx(next.pos)) + ") before the commit was sent", []int64{f.idx(next.pos)}, ""
			}
			break
		}
	}
	switch {
	case ok && owner.member != c.member:
		return f.tps[tp].String() + " at epoch " + itoa(int64(e)) + " belonged to " + f.mems[owner.member] + " (event " + itoa(f.idx(owner.pos)) + ")", []int64{f.idx(owner.pos)}, ""
	case ok && owner.from > c.done:
		// The member only reached (tp, e) after the commit completed: the call whose answer gave
		// it the epoch was sent after the commit's answer came. (A call that overlaps the commit
		// proves nothing either way: a heartbeat goroutine may record the answer that gave the
		// epoch after the committing goroutine already used it.)
		return f.mems[c.member] + " only owned " + f.tps[tp].String() + " at epoch " + itoa(int64(e)) + " from event " + itoa(f.idx(owner.pos)) + ", after the commit completed", []int64{f.idx(owner.pos)}, ""
	case !ok:
		return f.mems[c.member] + " never owned " + f.tps[tp].String() + " at epoch " + itoa(int64(e)), nil, ""
	}
	// Did the partition move on to another member at a newer epoch before the commit was sent?
	ids := f.byTP[tp]
	k := sort.Search(len(ids), func(i int) bool { return f.intervals[ids[i]].start >= c.inv })
	if k > 0 {
		last := &f.intervals[ids[k-1]]
		if last.member != c.member && last.inc == inc && last.epoch > e {
			if o, _ := c.offsetOf(tp); c.accepted() {
				// The log outranks where the history placed the commit: written before the group
				// reached the epoch the partition moved at, it landed before the move.
				if how, ok := f.writtenBefore(tp, o, last.epoch, c.done); ok {
					return "", nil, "commit of " + f.tps[tp].String() + " by " + f.mems[c.member] + " sent at event " + itoa(f.idx(c.inv)) + ": " + how
				}
			}
			return f.tps[tp].String() + " had moved to " + f.mems[last.member] + " at epoch " + itoa(int64(last.epoch)) + " (event " + itoa(f.idx(last.start)) + ") before the commit was sent: a zombie commit", []int64{f.idx(last.start)}, ""
		}
	}
	return "", nil, ""
}

// acceptedByTP lists, per partition, the accepted commits in completion order: the order in which
// the coordinator acknowledged them.
func (f *facts) acceptedByTP(tp int) []int {
	var out []int
	for _, id := range f.commitsByTP[tp] {
		if f.commits[id].accepted() {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(a, b int) bool { return f.commits[out[a]].done < f.commits[out[b]].done })
	return out
}

const NameCommittedOffsetMonotonic = "CommittedOffsetMonotonic"

// CommittedOffsetMonotonic checks that committed offsets never go back unless a commit marked Reset
// moved them: (a) an accepted commit sent after another accepted commit of the same partition had
// completed is not lower, unless __consumer_offsets shows it written first (the log outranks the
// order of the answers); (b) no read of committed offsets by the observer (describe events and
// saved snapshots) shows less than a read that ended before it began; (c) the OffsetCommit records
// of __consumer_offsets in each snapshot do not go back in log order (a tombstone starts over).
// Reads and commits that overlap are concurrent and never ordered; a snapshot taken after events
// the history lost is not judged against it.
var CommittedOffsetMonotonic = register(Checker{Name: NameCommittedOffsetMonotonic, Place: 60, Groups: ConsumerGroups,
	Asserts: "committed offsets never go back unless the workload reset them",
	judge:   func(in *judging) Verdict { return committedOffsetMonotonic(in.f, in.obs) },
	nothing: noCommitOrRead}).Judge

func committedOffsetMonotonic(f *facts, obs *history.Observations) Verdict {
	v := newVerdict(NameCommittedOffsetMonotonic)
	resets := f.resetsMaybeApplied()
	pairs, byLog, firstByLog := f.acceptedCommitsMonotonic(v, resets)
	reads := f.observerReadsMonotonic(v, resets)
	records, beyond := f.offsetRecordsMonotonic(v, obs, resets)
	v.note("%d ordered commit pairs, %d observer reads and %d OffsetCommit records checked", pairs, reads, records)
	if byLog > 0 {
		v.note("%d commit(s) answered after a higher one but written before it, as __consumer_offsets shows: the log outranks the order of the answers (first: %s)", byLog, firstByLog)
	}
	if beyond > 0 {
		v.note("%d snapshot(s) not judged: taken after events the history does not hold (it ends at event %d), which may have moved the offsets", beyond, f.lastIndex())
	}
	return v.done()
}

// commitResets are the reset commits (the workload rewinding a partition)
// that may have applied.
type commitResets struct {
	spans map[int][]int          // partition → positions (invoke, completion) of each reset
	value map[int]map[int64]bool // partition → the offsets resets committed
}

func (f *facts) resetsMaybeApplied() commitResets {
	r := commitResets{spans: map[int][]int{}, value: map[int]map[int64]bool{}}
	for id := range f.commits {
		c := &f.commits[id]
		if !c.c.Reset || !c.maybe() {
			continue
		}
		for i, tp := range c.tps {
			end := c.done
			if end < 0 {
				end = len(f.ev)
			}
			r.spans[tp] = append(r.spans[tp], c.inv, end)
			if r.value[tp] == nil {
				r.value[tp] = map[int64]bool{}
			}
			r.value[tp][c.offs[i]] = true
		}
	}
	return r
}

// between says whether a reset that may have applied was in flight after position lo
// (an invoke, or the event a snapshot began after) and before position hi.
func (r commitResets) between(tp, lo, hi int) bool {
	s := r.spans[tp]
	for i := 0; i < len(s); i += 2 {
		if s[i] < hi && s[i+1] > lo {
			return true
		}
	}
	return false
}

// acceptedCommitsMonotonic judges accepted commits in real-time order: a
// commit sent after another was answered does not go back from it, unless
// a reset came between or the log shows it written first.
func (f *facts) acceptedCommitsMonotonic(v *verdict, resets commitResets) (pairs, byLog int, firstByLog string) {
	for tp := range f.tps {
		acc := f.acceptedByTP(tp)
		bestAt := f.highestSoFar(tp, acc)
		for _, id := range acc {
			c := &f.commits[id]
			// Only the commits that completed before c was sent: acc is in completion order, but
			// a call sent early and answered late (a request held on a paused node, an answer on a
			// frozen member's links) overlaps the commits answered meanwhile.
			j := sort.Search(len(acc), func(i int) bool { return f.commits[acc[i]].done >= c.inv })
			best := -1
			if j > 0 {
				best = bestAt[j-1]
			}
			if best < 0 || c.c.Reset {
				continue
			}
			pairs++
			b := &f.commits[best]
			bo, _ := b.offsetOf(tp)
			co, _ := c.offsetOf(tp)
			if co >= bo || resets.between(tp, b.inv, c.done) {
				continue
			}
			// The answers say c went back from b; the log may say c was written first. Then every
			// other commit completed before c was sent is a candidate.
			var how string
			b, how = f.wentBackFrom(tp, c, acc[:j], resets.between)
			if b == nil {
				byLog++
				if firstByLog == "" {
					firstByLog = "commit of " + itoa(co) + " by " + f.mems[c.member] + " sent at event " + itoa(f.idx(c.inv)) + ": " + how
				}
				continue
			}
			bo, _ = b.offsetOf(tp)
			v.fail([]int64{f.idx(b.done), f.idx(c.inv), f.idx(c.done)}, "committed offset of %s went back from %d (commit by %s acknowledged at event %d) to %d (commit by %s sent at event %d, acknowledged at event %d)",
				f.tps[tp], bo, f.mems[b.member], f.idx(b.done), co, f.mems[c.member], f.idx(c.inv), f.idx(c.done))
		}
	}
	return pairs, byLog, firstByLog
}

// highestSoFar: bestAt[i] is the highest commit among acc[:i+1] since the last reset among them
// (a reset counts as the highest when it completes).
func (f *facts) highestSoFar(tp int, acc []int) []int {
	bestAt := make([]int, len(acc))
	for i, id := range acc {
		bestAt[i] = id
		if i == 0 || f.commits[id].c.Reset {
			continue
		}
		bo, _ := f.commits[bestAt[i-1]].offsetOf(tp)
		if do, _ := f.commits[id].offsetOf(tp); do < bo {
			bestAt[i] = bestAt[i-1]
		}
	}
	return bestAt
}

// offsetRead is one read of a partition's committed offset by the observer.
type offsetRead struct {
	span
	label string
	idx   []int64
	off   int64
}

// observerReadsMonotonic judges what the observer read (describes and snapshots), each read
// against the reads that ended before it began.
func (f *facts) observerReadsMonotonic(v *verdict, resets commitResets) (reads int) {
	byTP := map[history.TP][]offsetRead{}
	for _, pos := range f.describes {
		d := f.vals[pos].(history.Describe)
		if !d.HasCommitted {
			continue
		}
		reads++
		r := offsetRead{f.callSpan(pos), "describe at event " + itoa(f.idx(pos)), []int64{f.idx(pos)}, 0}
		for _, o := range d.Committed {
			if o.Offset >= 0 {
				r.off = o.Offset
				byTP[o.TP()] = append(byTP[o.TP()], r)
			}
		}
	}
	for _, s := range f.snaps {
		if !s.s.HasCommitted || s.beyond {
			continue
		}
		reads++
		for _, o := range s.s.Committed {
			if o.Offset >= 0 {
				byTP[o.TP()] = append(byTP[o.TP()], offsetRead{s.span, s.label, nil, o.Offset})
			}
		}
	}
	for _, t := range sortedTPs(byTP) {
		f.readsOfOnePartition(v, t, byTP[t], resets)
	}
	return reads
}

// readsOfOnePartition fails every read of t lower than an earlier one that no reset may have
// undone.
func (f *facts) readsOfOnePartition(v *verdict, t history.TP, rs []offsetRead, resets commitResets) {
	tp, known := f.tpIdx[t]
	// Without resets, the highest read that ended before r began: a prefix maximum over the
	// reads by their end (and every checkpoint, for the final snapshot).
	sort.SliceStable(rs, func(a, b int) bool { return rs[a].e < rs[b].e })
	top := make([]int, len(rs))
	for i := range rs {
		top[i] = i
		if i > 0 && rs[top[i-1]].off > rs[i].off {
			top[i] = top[i-1]
		}
	}
	for _, r := range rs {
		// The highest earlier read that no reset may have undone before r.
		var from *offsetRead
		consider := func(p *offsetRead) {
			if !p.before(r.span) || p.off <= r.off || known && resets.between(tp, p.b, r.e) {
				return
			}
			if from == nil || p.off > from.off || p.off == from.off && p.e > from.e {
				from = p
			}
		}
		if known && len(resets.spans[tp]) > 0 {
			for i := range rs {
				consider(&rs[i])
			}
		} else {
			if k := sort.Search(len(rs), func(i int) bool { return rs[i].e > r.b }); k > 0 {
				consider(&rs[top[k-1]])
			}
			if r.final {
				for i := range rs {
					if rs[i].snapshot {
						consider(&rs[i])
					}
				}
			}
		}
		if from != nil {
			v.fail(append(append([]int64(nil), from.idx...), r.idx...), "committed offset of %s read by the observer went back from %d (%s) to %d (%s)",
				t, from.off, from.label, r.off, r.label)
		}
	}
}

// offsetRecordsMonotonic judges the __consumer_offsets records of every snapshot in log order;
// beyond counts the snapshots taken after the end of the history, which are not judged.
func (f *facts) offsetRecordsMonotonic(v *verdict, obs *history.Observations, resets commitResets) (records, beyond int) {
	for _, s := range f.snaps {
		if s.beyond {
			if s.s.HasRecords || s.s.HasCommitted {
				beyond++
			}
			continue
		}
		last := map[history.TP]int64{}
		for _, rec := range s.s.Records {
			t, ok := offsetCommitKey(rec, obs.Group)
			if !ok {
				continue
			}
			if rec.Tombstone() {
				delete(last, t)
				continue
			}
			off, ok := rec.ValueInt("offset")
			if !ok {
				continue
			}
			records++
			p, had := last[t]
			last[t] = off
			if !had || off >= p {
				continue
			}
			if tp, known := f.tpIdx[t]; known && resets.value[tp][off] {
				continue
			}
			v.fail(nil, "snapshot %s: OffsetCommit records of %s go back from %d to %d at __consumer_offsets offset %d", s.s.Label, t, p, off, rec.Offset)
		}
	}
	return records, beyond
}

// wentBackFrom returns the highest commit among done (accepted commits of tp completed before c
// was sent) that c's lower offset went back from: not a reset, no reset between them, and not
// shown by __consumer_offsets written after c. nil when there is none, with what the log showed.
func (f *facts) wentBackFrom(tp int, c *commitOp, done []int, resetBetween func(tp, lo, hi int) bool) (*commitOp, string) {
	co, _ := c.offsetOf(tp)
	var from *commitOp
	var how string
	for _, id := range done {
		d := &f.commits[id]
		do, _ := d.offsetOf(tp)
		if d.c.Reset || do <= co || resetBetween(tp, d.inv, c.done) {
			continue
		}
		if h, ok := f.logBefore(tp, co, do, max(c.done, d.done)); ok {
			if how == "" {
				how = h
			}
			continue
		}
		if fo, _ := from.offsetOfOr(tp); from == nil || do >= fo {
			from = d
		}
	}
	return from, how
}

// offsetOfOr is offsetOf on a commit that may be nil.
func (c *commitOp) offsetOfOr(tp int) (int64, bool) {
	if c == nil {
		return 0, false
	}
	return c.offsetOf(tp)
}

func sortedTPs[V any](m map[history.TP]V) []history.TP {
	out := make([]history.TP, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	history.SortTPs(out)
	return out
}

// offsetCommitKey returns the partition of an OffsetCommit record of group (any group when group is
// empty).
func offsetCommitKey(r history.Record, group string) (history.TP, bool) {
	if r.KeyType != history.RecordOffsetCommit && r.KeyType != history.RecordLegacyOffsetCommit {
		return history.TP{}, false
	}
	if g, _ := r.KeyString("group"); group != "" && g != group {
		return history.TP{}, false
	}
	topic, ok1 := r.KeyString("topic")
	part, ok2 := r.KeyInt("partition")
	if !ok1 || !ok2 {
		return history.TP{}, false
	}
	return history.TP{Topic: topic, Partition: int32(part)}, true
}

const NameDurableCommits = "DurableCommits"

// DurableCommits checks that every read of committed offsets (the observer's describe events, the
// checkpoints, for example after broker restarts, and the final observation) shows, for each
// partition with an acknowledged commit before the read, a value some commit could have left there:
// the latest acknowledged commit, a commit acknowledged concurrently with it or with the read, or a
// commit whose outcome is unknown. Anything else, including no committed offset at all, means an
// acknowledged commit was lost. A commit acknowledged before the read is superseded by one sent
// after it completed, unless __consumer_offsets shows the later one written first (the log
// outranks the history). A snapshot taken after events the history lost is not judged.
var DurableCommits = register(Checker{Name: NameDurableCommits, Place: 100, Groups: ConsumerGroups,
	Asserts: "every read of committed offsets shows the latest acknowledged commit, or one that could have superseded it",
	judge:   func(in *judging) Verdict { return durableCommits(in.f, in.obs) },
	nothing: noCommitOrRead}).Judge

func durableCommits(f *facts, obs *history.Observations) Verdict {
	d := &durability{f: f, v: newVerdict(NameDurableCommits), idx: make([]*tpIndex, len(f.tps))}
	v := d.v
	for _, pos := range f.describes {
		ds := f.vals[pos].(history.Describe)
		if !ds.HasCommitted {
			continue
		}
		s := f.callSpan(pos)
		d.judge(s.b, s.e+1, "describe at event "+itoa(f.idx(pos)), []int64{f.idx(pos)}, ds.Committed)
	}
	unplaced, beyond := 0, 0
	for _, s := range f.snaps {
		switch {
		case !s.s.HasCommitted:
			if s.final {
				v.note("the final observation has no committed offsets: durability at the end was not checked")
			}
		case s.unplaced:
			unplaced++
		case s.beyond:
			beyond++
		case s.final:
			d.judge(s.b+1, s.e, "final snapshot", nil, s.s.Committed)
		default:
			d.judge(s.b+1, s.e, "checkpoint "+s.s.Label, nil, s.s.Committed)
		}
	}
	if obs == nil {
		v.note("no observations: only the observer's describe events were checked")
	}
	if unplaced > 0 {
		v.note("%d checkpoints without history_len were not checked", unplaced)
	}
	if beyond > 0 {
		v.note("%d snapshot(s) not checked: taken after events the history does not hold (it ends at event %d), whose commits may be what they show", beyond, f.lastIndex())
	}
	if d.byLog > 0 {
		v.note("%d value(s) read were written after a commit answered later, as __consumer_offsets shows: the log outranks the order of the answers (first: %s)", d.byLog, d.firstByLog)
	}
	v.note("%d reads of committed offsets checked, %d partition values judged", d.reads, d.partitions)
	return v.done()
}

// durability is DurableCommits at work: the commits indexed per partition,
// and what the reads judged so far counted.
type durability struct {
	f          *facts
	v          *verdict
	idx        []*tpIndex
	byLog      int    // values read that the log shows written after a commit answered later
	firstByLog string // the first of them, for the note
	byLogWhy   string // why the log says the value read was superseded, for the message
	reads      int
	partitions int
}

// tpIndex is one partition's accepted commits in completion order, the running max of their
// invoke positions (to tell which are superseded), and all commits by offset.
type tpIndex struct {
	acc    []int
	maxInv []int
	byOff  map[int64][]int
	// laterWrite[i]: the latest first record, in __consumer_offsets, of an offset that one of
	// acc[:i+1] wrote and that the log stands for (-1: none), to tell whether the log shows a
	// write after every write of another offset.
	laterWrite []int64
}

func (d *durability) index(tp int) *tpIndex {
	if d.idx[tp] != nil {
		return d.idx[tp]
	}
	f := d.f
	t := &tpIndex{acc: f.acceptedByTP(tp), byOff: map[int64][]int{}}
	m := -1
	for _, id := range t.acc {
		m = max(m, f.commits[id].inv)
		t.maxInv = append(t.maxInv, m)
	}
	for _, id := range f.commitsByTP[tp] {
		o, _ := f.commits[id].offsetOf(tp)
		t.byOff[o] = append(t.byOff[o], id)
	}
	if f.log != nil {
		w := int64(-1)
		for _, id := range t.acc {
			e := &f.commits[id]
			eo, _ := e.offsetOf(tp)
			if recs := f.written(tp, eo, e.done); len(recs) > 0 {
				w = max(w, recs[0])
			}
			t.laterWrite = append(t.laterWrite, w)
		}
	}
	d.idx[tp] = t
	return t
}

// superseded says whether c, acknowledged before the read, was superseded by one of acc (the
// commits acknowledged before the read): shown by the log written after every write of c's
// offset, or sent after c completed, of another offset, and not shown by the log written
// before c.
func (d *durability) superseded(tp int, c *commitOp, acc []int, maxInv int) bool {
	f := d.f
	val, _ := c.offsetOf(tp)
	if f.log != nil {
		// The log outranks the answers: a write after every write of val, of a commit
		// acknowledged before the read, is what the read had to show at least.
		if xs := f.written(tp, val, c.done); len(xs) > 0 && d.index(tp).laterWrite[len(acc)-1] > xs[len(xs)-1] {
			if d.byLogWhy == "" {
				d.byLogWhy = "; __consumer_offsets (" + f.log.label + ") holds a write acknowledged before the read (log offset " + itoa(d.index(tp).laterWrite[len(acc)-1]) + ") after every write of " + itoa(val) + " (" + joinOffsets(xs) + ")"
			}
			return true
		}
	}
	if maxInv <= c.done {
		return false
	}
	if f.log == nil {
		return true // (a commit of the same offset that superseded c is a candidate itself)
	}
	how := ""
	// Only a commit that completed after c can have been sent after c completed.
	for i := len(acc) - 1; i >= 0 && f.commits[acc[i]].done > c.done; i-- {
		e := &f.commits[acc[i]]
		eo, _ := e.offsetOf(tp)
		if e.inv <= c.done || eo == val {
			continue
		}
		h, ok := f.logBefore(tp, eo, val, max(e.done, c.done))
		if !ok {
			return true
		}
		if how == "" {
			how = h
		}
	}
	if how != "" {
		d.byLog++
		if d.firstByLog == "" {
			d.firstByLog = "offset " + itoa(val) + " of " + f.tps[tp].String() + " by " + f.mems[c.member] + ": " + how
		}
	}
	return false
}

// judge judges a read that began after every commit acknowledged before position lo and
// before every commit sent from position hi on.
func (d *durability) judge(lo, hi int, label string, at []int64, committed []history.OffsetAt) {
	f := d.f
	d.reads++
	got := map[int]int64{}
	for _, o := range committed {
		if o.Offset < 0 {
			continue // OffsetFetch's "no committed offset"
		}
		if tp, ok := f.tpIdx[o.TP()]; ok {
			got[tp] = o.Offset
		}
	}
	for tp := range f.tps {
		t := d.index(tp)
		k := sort.Search(len(t.acc), func(i int) bool { return f.commits[t.acc[i]].done >= lo })
		if k == 0 {
			continue // nothing acknowledged before the read
		}
		d.partitions++
		last := &f.commits[t.acc[k-1]]
		lastOff, _ := last.offsetOf(tp)
		val, ok := got[tp]
		if !ok {
			d.v.fail(append([]int64{f.idx(last.done)}, at...), "%s shows no committed offset for %s, but a commit of offset %d by %s was acknowledged at event %d",
				label, f.tps[tp], lastOff, f.mems[last.member], f.idx(last.done))
			continue
		}
		d.byLogWhy = ""
		if !d.explained(tp, t, k, val, lo, hi) {
			d.v.fail(append([]int64{f.idx(last.done)}, at...), "%s shows %s at offset %d, but the latest acknowledged commit before it was offset %d by %s (acknowledged at event %d) and no commit that could have superseded it wrote %d%s",
				label, f.tps[tp], val, lastOff, f.mems[last.member], f.idx(last.done), val, d.byLogWhy)
		}
	}
}

// explained says whether a commit may have written val, the offset a read of tp showed: one of
// unknown outcome or acknowledged while the read was going on, or one acknowledged before it
// (t.acc[:k]) that nothing superseded.
func (d *durability) explained(tp int, t *tpIndex, k int, val int64, lo, hi int) bool {
	cands := t.byOff[val]
	for c := len(cands) - 1; c >= 0; c-- { // the latest first: it is the likeliest
		x := &d.f.commits[cands[c]]
		if x.inv >= hi || !x.maybe() {
			continue
		}
		if !x.accepted() || x.done >= lo {
			return true // unknown outcome, or acknowledged while the read was going on
		}
		// Acknowledged before the read: it must not have been superseded by a commit that was
		// sent after it completed and acknowledged before the read.
		if !d.superseded(tp, x, t.acc[:k], t.maxInv[k-1]) {
			return true
		}
	}
	return false
}
