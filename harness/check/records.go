package check

import (
	"fmt"
	"sort"

	"github.com/groupquake/groupquake/harness/history"
)

type recKey struct {
	tp  int
	off int64
}

type seqKey struct {
	topic string
	seq   int64
}

const NameNoLostRecords = "NoLostRecords"

// NoLostRecords checks that every acknowledged record was consumed by some member at some point of
// the run. A record is matched by (partition, offset) when the acknowledgement carried the offset,
// by (topic, seq) otherwise. Records whose send had an unknown outcome need not be consumed.
var NoLostRecords = register(Checker{Name: NameNoLostRecords, Place: 70, Groups: ConsumerGroups,
	Asserts: "every record the brokers acknowledged to a producer is consumed",
	judge:   func(in *judging) Verdict { return noLostRecords(in.f) },
	nothing: noProduce}).Judge

func noLostRecords(f *facts) Verdict {
	v := newVerdict(NameNoLostRecords)
	byOff := map[recKey]bool{}
	bySeq := map[seqKey]bool{}
	for tp, cs := range f.consumes {
		for _, c := range cs {
			byOff[recKey{tp, c.off}] = true
			bySeq[seqKey{f.tps[tp].Topic, c.seq}] = true
		}
	}
	// The tail of a partition an orphaned classic member holds as its
	// target (finding kafka-classic-join-timeout-orphan) is never consumed:
	// its records past the last one consumed are labelled with the finding.
	orphans := orphanTails(f)
	maxConsumed := map[int]int64{}
	top := map[int]consumeRef{} // each partition's consumption of its highest offset, the first
	for tp, cs := range f.consumes {
		maxConsumed[tp] = -1
		for _, c := range cs {
			if c.off > maxConsumed[tp] {
				top[tp] = c
			}
			maxConsumed[tp] = max(maxConsumed[tp], c.off)
		}
	}
	acked, lost := 0, 0
	for _, pos := range f.produces {
		if f.ev[pos].Type != history.OK {
			continue
		}
		p := f.vals[pos].(history.Produce)
		acked++
		var found bool
		if p.Offset >= 0 {
			tp, ok := f.tpIdx[history.TP{Topic: p.Topic, Partition: p.Partition}]
			found = ok && byOff[recKey{tp, p.Offset}]
		} else {
			found = bySeq[seqKey{p.Topic, p.Seq}]
		}
		if !found {
			lost++
			tp := history.TP{Topic: p.Topic, Partition: p.Partition}
			if o, ok := orphans[tp]; ok && p.Offset >= 0 && p.Offset > consumedUpTo(maxConsumed, f.tpIdx, tp) {
				x, _ := FindingByID(FindingClassicJoinOrphan)
				v.failKnown(x, Known{Member: o.Member, Events: o.Events}, []int64{f.idx(pos)},
					"record %s-%d offset %d (seq %d), acknowledged at event %d, was never consumed: the partition is %s's target, held by the coordinator for an orphaned JoinGroup", p.Topic, p.Partition, p.Offset, p.Seq, f.idx(pos), o.Member)
				continue
			}
			where := "no record of it was consumed at all"
			if i, ok := f.tpIdx[tp]; ok {
				if c, ok := top[i]; ok {
					where = fmt.Sprintf("the highest offset of it consumed is %d, by %s at event %d", c.off, f.mems[c.member], f.idx(c.pos))
				}
			}
			v.fail([]int64{f.idx(pos)}, "record %s-%d offset %d (seq %d), acknowledged at event %d, was never consumed: %s", p.Topic, p.Partition, p.Offset, p.Seq, f.idx(pos), where)
		}
	}
	if acked == 0 {
		v.note("vacuous: no acknowledged produce in the history")
	}
	if lost > 0 && f.lastPhase(history.PhaseFinal) < 0 {
		v.note("the history has no %q phase marker: the run may have stopped before consumers caught up", history.PhaseFinal)
	}
	v.note("%d acknowledged records, %d not consumed", acked, lost)
	return v.done()
}

const NameBoundedDuplicates = "BoundedDuplicates"

// BoundedDuplicates checks that every record consumed more than once is explained: the two
// consumptions belong to different ownerships of the partition (a rebalance happened between them,
// or a fenced member kept reading), and no commit covering the record (offset greater than it) had
// been acknowledged before the later ownership began, because then the new owner must have started
// after it. Re-reading inside one ownership is never explained. A commit counts only if no reset
// may have landed after it before the ownership began: one sent after it completed, or concurrent
// with it (unless __consumer_offsets shows the reset written first), or still in flight.
var BoundedDuplicates = register(Checker{Name: NameBoundedDuplicates, Place: 80, Groups: ConsumerGroups,
	Asserts: "every record consumed twice is explained by a change of ownership not covered by an acknowledged commit",
	judge:   func(in *judging) Verdict { return boundedDuplicates(in.f) },
	nothing: noConsumption}).Judge

func boundedDuplicates(f *facts) Verdict {
	v := newVerdict(NameBoundedDuplicates)
	dups, unowned := 0, 0
	maxPerOwnership := 0
	for tp, cs := range f.consumes {
		committedBefore := f.floor(tp)
		prev := map[int64]consumeRef{}
		perOwnership := map[int]int{}
		for _, c := range cs {
			if c.interval < 0 {
				unowned++
			}
			p, again := prev[c.off]
			prev[c.off] = c
			if !again {
				continue
			}
			dups++
			perOwnership[c.interval]++
			maxPerOwnership = max(maxPerOwnership, perOwnership[c.interval])
			if c.interval < 0 || c.interval == p.interval {
				what := "within one ownership by " + f.mems[c.member]
				if c.interval < 0 {
					what = "by " + f.mems[c.member] + ", which did not own the partition"
				}
				v.fail([]int64{f.idx(p.pos), f.idx(c.pos)}, "record %s offset %d consumed at event %d and again at event %d %s, with no rebalance between",
					f.tps[tp], c.off, f.idx(p.pos), f.idx(c.pos), what)
				continue
			}
			iv := &f.intervals[c.interval]
			floor, cid := committedBefore(iv.start)
			if floor > c.off {
				cm := &f.commits[cid]
				v.fail([]int64{f.idx(p.pos), f.idx(cm.done), f.idx(iv.start), f.idx(c.pos)}, "record %s offset %d consumed at event %d and again by %s at event %d, although offset %d was committed (acknowledged at event %d) before that ownership began at event %d",
					f.tps[tp], c.off, f.idx(p.pos), f.mems[c.member], f.idx(c.pos), floor, f.idx(cm.done), f.idx(iv.start))
			}
		}
	}
	if unowned > 0 {
		v.note("%d records were consumed by members that did not own the partition at the time", unowned)
	}
	v.note("%d duplicate consumptions; at most %d of them within one ownership", dups, maxPerOwnership)
	return v.done()
}

// floor returns, for partition tp, what was certainly committed before a position: the highest
// offset of a commit acknowledged before it that no reset may have replaced since (a reset that
// may have applied, sent before the position and not certainly before the commit: completed before
// the commit was sent, or shown written first by __consumer_offsets), and that commit; -1 when
// nothing was.
func (f *facts) floor(tp int) func(pos int) (int64, int) {
	acc := f.acceptedByTP(tp) // completion order
	var resets []int
	for _, id := range f.commitsByTP[tp] {
		if c := &f.commits[id]; c.c.Reset && c.maybe() {
			resets = append(resets, id)
		}
	}
	// Without resets the floor is the running highest.
	top := make([]int, len(acc))
	for i, id := range acc {
		top[i] = id
		if i > 0 {
			o, _ := f.commits[id].offsetOf(tp)
			if p, _ := f.commits[top[i-1]].offsetOf(tp); p > o {
				top[i] = top[i-1]
			}
		}
	}
	replaced := func(c *commitOp, pos int) bool {
		co, _ := c.offsetOf(tp)
		for _, rid := range resets {
			r := &f.commits[rid]
			if r == c || r.inv >= pos || r.done >= 0 && r.done < c.inv {
				continue
			}
			ro, _ := r.offsetOf(tp)
			if ro == co {
				continue
			}
			if r.accepted() {
				if _, ok := f.logBefore(tp, ro, co, max(r.done, c.done)); ok {
					continue
				}
			}
			return true
		}
		return false
	}
	return func(pos int) (int64, int) {
		k := sort.Search(len(acc), func(i int) bool { return f.commits[acc[i]].done >= pos })
		if k == 0 {
			return -1, -1
		}
		if len(resets) == 0 {
			o, _ := f.commits[top[k-1]].offsetOf(tp)
			return o, top[k-1]
		}
		best, from := int64(-1), -1
		for _, id := range acc[:k] {
			c := &f.commits[id]
			if o, _ := c.offsetOf(tp); o > best && !replaced(c, pos) {
				best, from = o, id
			}
		}
		return best, from
	}
}

// consumedUpTo is the highest offset of tp any member consumed, -1 if none.
func consumedUpTo(maxConsumed map[int]int64, tpIdx map[history.TP]int, tp history.TP) int64 {
	i, ok := tpIdx[tp]
	if !ok {
		return -1
	}
	if o, ok := maxConsumed[i]; ok {
		return o
	}
	return -1
}
