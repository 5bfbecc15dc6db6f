package check

import (
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

// NoLostRecords checks that every acknowledged record was consumed by some member at some point of
// the run. A record is matched by (partition, offset) when the acknowledgement carried the offset,
// by (topic, seq) otherwise. Records whose send had an unknown outcome need not be consumed.
func NoLostRecords(events []history.Event, obs *history.Observations) Verdict {
	return noLostRecords(build(events, obs))
}

func noLostRecords(f *facts) Verdict {
	v := newVerdict("NoLostRecords")
	byOff := map[recKey]bool{}
	bySeq := map[seqKey]bool{}
	for tp, cs := range f.consumes {
		for _, c := range cs {
			byOff[recKey{tp, c.off}] = true
			bySeq[seqKey{f.tps[tp].Topic, c.seq}] = true
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
			v.fail([]int64{f.idx(pos)}, "record %s-%d offset %d (seq %d), acknowledged at event %d, was never consumed", p.Topic, p.Partition, p.Offset, p.Seq, f.idx(pos))
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

// BoundedDuplicates checks that every record consumed more than once is explained: the two
// consumptions belong to different ownerships of the partition (a rebalance happened between them,
// or a fenced member kept reading), and no commit covering the record (offset greater than it) had
// been acknowledged before the later ownership began, because then the new owner must have started
// after it. Re-reading inside one ownership is never explained.
func BoundedDuplicates(events []history.Event, obs *history.Observations) Verdict {
	return boundedDuplicates(build(events, obs))
}

func boundedDuplicates(f *facts) Verdict {
	v := newVerdict("BoundedDuplicates")
	dups, unowned := 0, 0
	maxPerOwnership := 0
	for tp, cs := range f.consumes {
		// Committed floor over time: accepted commits in completion order with the running value
		// (a reset replaces it, otherwise the highest).
		acc := f.acceptedByTP(tp)
		floorAt := make([]int64, len(acc))
		for i, id := range acc {
			c := &f.commits[id]
			o, _ := c.offsetOf(tp)
			if i > 0 && !c.c.Reset && floorAt[i-1] > o {
				o = floorAt[i-1]
			}
			floorAt[i] = o
		}
		committedBefore := func(pos int) (int64, int) {
			k := sort.Search(len(acc), func(i int) bool { return f.commits[acc[i]].done >= pos })
			if k == 0 {
				return -1, -1
			}
			return floorAt[k-1], acc[k-1]
		}
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
