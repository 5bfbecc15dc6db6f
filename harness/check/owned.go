package check

import (
	"sort"

	"github.com/groupquake/groupquake/harness/history"
)

const NameConsumedOnlyOwned = "ConsumedOnlyOwned"

// ConsumedOnlyOwned checks that every record a member consumed was of a partition that member owned
// at that moment: between its "assigned" and the "revoked", "lost", "fenced", "session-expired" or
// "left" that ended the ownership. clients.Member's contract is that Poll never hands out a record
// of a partition the member has not been given or has already given up, and a member reports
// "revoked" before it acknowledges the revocation (KIP-848: the acknowledging heartbeat; classic:
// the JoinGroup after onPartitionsRevoked), so a consumption written after the ownership ended is a
// member still reading a partition that may already be someone else's.
//
// One excuse: a record whose offset is below an offset the member itself committed for that
// partition while it owned it, in its last ownership before the consumption. The member then
// handed the record out before it gave the partition up (a commit names the position, which only
// moves when Poll hands a record out), and only the history wrote the consumption late.
var ConsumedOnlyOwned = register(Checker{Name: NameConsumedOnlyOwned, Place: 110, Groups: ConsumerGroups,
	Asserts: "every record a member consumed was of a partition it owned at that moment",
	judge:   func(in *judging) Verdict { return consumedOnlyOwned(in.f) },
	nothing: noConsumption}).Judge

func consumedOnlyOwned(f *facts) Verdict {
	v := newVerdict(NameConsumedOnlyOwned)
	consumed, excused := 0, 0
	for tp, cs := range f.consumes {
		for _, c := range cs {
			consumed++
			if c.interval >= 0 {
				continue
			}
			last := f.lastOwnershipBefore(c.member, tp, c.pos)
			if last < 0 {
				v.fail([]int64{f.idx(c.pos)}, "%s consumed %s offset %d at event %d, but had never been assigned %s",
					f.mems[c.member], f.tps[tp], c.off, f.idx(c.pos), f.tps[tp])
				continue
			}
			iv := &f.intervals[last]
			if f.committedPast(c.member, tp, c.off, iv.start, iv.end) {
				excused++
				continue
			}
			v.fail([]int64{f.idx(iv.start), f.idx(iv.end), f.idx(c.pos)}, "%s consumed %s offset %d at event %d, but did not own it then: its ownership from event %d ended (%s at event %d)",
				f.mems[c.member], f.tps[tp], c.off, f.idx(c.pos), f.idx(iv.start), iv.endKind, f.idx(iv.end))
		}
	}
	if consumed == 0 {
		v.note("vacuous: no record consumed in the history")
	}
	v.note("%d consumptions checked; %d written after the ownership ended but covered by the member's own commit made while it owned the partition", consumed, excused)
	return v.done()
}

// lastOwnershipBefore returns the id of member m's last ownership interval of tp that began before
// pos, or -1.
func (f *facts) lastOwnershipBefore(m, tp, pos int) int {
	ids := f.byTP[tp] // in start order
	k := sort.Search(len(ids), func(i int) bool { return f.intervals[ids[i]].start >= pos })
	for i := k - 1; i >= 0; i-- {
		if f.intervals[ids[i]].member == m {
			return ids[i]
		}
	}
	return -1
}

// committedPast reports whether member m sent a commit of tp at an offset above off (any outcome:
// the offset proves the position had passed off) with its invoke in [lo, hi).
func (f *facts) committedPast(m, tp int, off int64, lo, hi int) bool {
	for i := range f.commits {
		c := &f.commits[i]
		if c.member != m || c.inv < lo || c.inv >= hi {
			continue
		}
		for _, o := range c.c.Offsets {
			if t, known := f.tpIdx[o.TP()]; known && t == tp && o.Offset > off {
				return true
			}
		}
	}
	return false
}

const NameCommittedBeforeRevoked = "CommittedBeforeRevoked"

// CommittedBeforeRevoked checks that a KIP-848 member that commits on its own (auto-commit: its
// commits appear on its own commit process, not the driver's) sends, before it reports revoking a
// partition, a commit of that partition covering every record of it the member consumed in that
// ownership: Java's ConsumerMembershipManager commits synchronously before revoking
// (autoCommitSyncBeforeRevocation, bounded by the rebalance timeout), and a failed commit does not
// stop the revocation, so any outcome counts as sent. Skipping it makes the next owner re-read what
// this member already handed out. Classic members are not judged: Java's cooperative rebalance
// commits in onJoinPrepare and revokes later in onJoinComplete, with records handed out between.
// Ownerships ended by "lost", "fenced" or a leave are not clean hand-offs and are not judged.
var CommittedBeforeRevoked = register(Checker{Name: NameCommittedBeforeRevoked, Place: 120, Groups: ConsumerGroups,
	Asserts: "a KIP-848 member that commits on its own commits what it consumed before it gives a partition up",
	judge:   func(in *judging) Verdict { return committedBeforeRevoked(in.f) },
	nothing: noConsumption}).Judge

func committedBeforeRevoked(f *facts) Verdict {
	v := newVerdict(NameCommittedBeforeRevoked)
	autoCommits := make([]bool, len(f.mems))
	for i := range f.commits {
		c := &f.commits[i]
		if c.process == f.mems[c.member]+"/commit" {
			autoCommits[c.member] = true
		}
	}
	// The highest offset consumed in each ownership interval.
	top := make(map[int]int64, len(f.intervals))
	for _, cs := range f.consumes {
		for _, c := range cs {
			if c.interval < 0 {
				continue
			}
			if o, ok := top[c.interval]; !ok || c.off > o {
				top[c.interval] = c.off
			}
		}
	}
	judged := 0
	for id := range f.intervals {
		iv := &f.intervals[id]
		if !autoCommits[iv.member] || f.proto[iv.member] != history.ProtocolConsumer || iv.endKind != endRevoked || iv.end >= len(f.ev) || f.ev[iv.end].F != history.FRevoked {
			continue
		}
		off, ok := top[id]
		if !ok {
			continue
		}
		judged++
		if f.committedPast(iv.member, iv.tp, off, iv.start, iv.end) {
			continue
		}
		v.fail([]int64{f.idx(iv.start), f.idx(iv.end)}, "%s revoked %s at event %d without first sending a commit covering offset %d, the last record of it it consumed since it was assigned it at event %d: the next owner re-reads what it handed out",
			f.mems[iv.member], f.tps[iv.tp], f.idx(iv.end), off, f.idx(iv.start))
	}
	n := 0
	for _, a := range autoCommits {
		if a {
			n++
		}
	}
	v.note("%d members commit on their own; %d clean revocations of consumed partitions judged", n, judged)
	return v.done()
}
