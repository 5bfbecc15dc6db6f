package check

import (
	"sort"

	"github.com/groupquake/groupquake/harness/history"
)

const NameNoDoubleOwnership = "NoDoubleOwnership"

// NoDoubleOwnership checks that two members never own one partition at once, unless one of them had
// been fenced: its ownership ended in "lost" and, after the other member's ownership began, it
// neither completed a heartbeat, join or sync (which a fenced member cannot) nor had a commit of
// that partition accepted (which would be a zombie commit landing).
var NoDoubleOwnership = register(Checker{Name: NameNoDoubleOwnership, Place: 20, Groups: ConsumerGroups,
	Asserts: "two members with valid sessions never own one partition at the same time",
	judge:   func(in *judging) Verdict { return noDoubleOwnership(in.f) },
	nothing: noOwnership}).Judge

func noDoubleOwnership(f *facts) Verdict {
	v := newVerdict(NameNoDoubleOwnership)
	overlaps, allowed := 0, 0
	byLog := map[int]string{}          // classic heartbeats set aside by the log (fencedExcuse), with why
	expelled := map[string]expulsion{} // revocations the log shows came after an expulsion (fencedExcuse), by member and event
	for tp, ids := range f.byTP {
		var active []int
		for _, bid := range ids {
			b := &f.intervals[bid]
			kept := active[:0]
			for _, aid := range active {
				if f.intervals[aid].end > b.start {
					kept = append(kept, aid)
				}
			}
			active = kept
			for _, aid := range active {
				a := &f.intervals[aid]
				if a.member == b.member {
					continue
				}
				overlaps++
				lo, hi := b.start, min(a.end, b.end)
				why, evidence := f.fencedExcuse(a, b, lo, hi, a.inc < b.inc, byLog, expelled)
				if why == "" {
					allowed++
					continue
				}
				why2, evidence2 := f.fencedExcuse(b, a, lo, hi, b.inc < a.inc, byLog, expelled)
				if why2 == "" {
					allowed++
					continue
				}
				idx := []int64{f.idx(a.start), f.idx(b.start)}
				idx = append(idx, evidence...)
				idx = append(idx, evidence2...)
				msg := "partition %s owned by %s (from event %d, epoch %d, %s) and %s (from event %d, epoch %d, %s) at once from event %d: %s; %s"
				args := []any{f.tps[tp], f.mems[a.member], f.idx(a.start), a.epoch, f.endDesc(a), f.mems[b.member], f.idx(b.start), b.epoch, f.endDesc(b), f.idx(lo), why, why2}
				if x, more, ok := matchOverlap(f, a, b, lo); ok {
					k := Known{Events: idx}
					if more != "" {
						args = append(args, more)
						msg += "; %s"
					}
					if x.Fails() {
						v.failKnown(x, k, idx, msg, args...)
					} else {
						allowed++
						v.noteKnown(x, k, "a known behaviour ("+x.ID+"): "+msg, args...)
					}
					continue
				}
				v.fail(idx, msg, args...)
			}
			active = append(active, bid)
		}
	}
	v.note("%d ownership intervals over %d partitions; %d overlaps, %d excused because one side had been fenced", len(f.intervals), len(f.tps), overlaps, allowed)
	set := make([]int, 0, len(byLog))
	for pos := range byLog {
		set = append(set, pos)
	}
	sort.Ints(set)
	for _, pos := range set {
		v.note("the classic heartbeat answered ok at event %d proves no session during the overlap: %s; a coordinator that had loaded the group would have answered UNKNOWN_MEMBER_ID, so the ok was the blind answer of one still loading it", f.idx(pos), byLog[pos])
	}
	ex := make([]string, 0, len(expelled))
	for k := range expelled {
		ex = append(ex, k)
	}
	sort.Strings(ex)
	for _, k := range ex {
		v.note("%s", expelled[k].note)
	}
	return v.done()
}

// expulsion is the note of a revocation that came after its member was expelled, for the lowest
// epoch of another ownership it overlapped (notes must not depend on map order).
type expulsion struct {
	epoch int32
	note  string
}

// expelledBeforeRevoke says whether iv, an ownership its member ended by revoking it, belonged to
// a member id that __consumer_offsets shows removed from the group by the time the group reached
// the epoch of other's ownership, and never back (facts.removedBefore): the member revoked it only
// once it noticed, after the group had gone on without it. A client that ends its generation on
// REBALANCE_IN_PROGRESS and waits for the application to return before it heartbeats or rejoins
// (kafka-go's ConsumerGroup) is expelled at its session timeout while its application is stalled,
// and reports the revocation when the application returns (seed 296807810748457958 on 4.1.2:
// kafka-go member m3, stalled 14.5 s, expelled, and given UNKNOWN_MEMBER_ID on its rejoin right
// after it revoked). Such an ownership is fenced as a lost one is: the checks of a fenced side (no
// session call that succeeded, no commit accepted during the overlap) still apply.
func (f *facts) expelledBeforeRevoke(iv, other *interval) (string, bool) {
	if iv.endKind != endRevoked || iv.end >= len(f.ev) {
		return "", false
	}
	a, ok := f.vals[iv.start].(history.Assignment)
	if !ok || a.MemberID == "" {
		return "", false
	}
	return f.removedBefore(a.MemberID, other.epoch, iv.end)
}

func (f *facts) endDesc(iv *interval) string {
	if iv.end >= len(f.ev) {
		return iv.endKind.String()
	}
	return iv.endKind.String() + " at event " + itoa(f.idx(iv.end))
}

// fencedExcuse says why the overlap [lo, hi) of iv and other is not excused by iv's side having
// been fenced, with the events that show it; "" when it is excused. A classic heartbeat answered
// ok whose member id __consumer_offsets shows removed by the time the group reached other's epoch,
// and never back, proves no session: Kafka answers a classic Heartbeat NONE, blindly, while the
// coordinator loads the group ("The group is still loading, so blindly respond",
// GroupCoordinatorService#heartbeat, every 4.x release), and a coordinator that had loaded it
// answers UNKNOWN_MEMBER_ID (facts.removedBefore; such heartbeats go into byLog, for the notes).
// A later COORDINATOR_LOAD_IN_PROGRESS answer from the same node would not show the heartbeat
// blind: the node may have lost the partition and taken it over again in between (seed
// 2819839347925866097 on 4.4.0: a Java classic member, silent for 12 s through a node stop and a
// node kill, had a heartbeat answered ok before the silence and its next call answered
// COORDINATOR_LOAD_IN_PROGRESS). An ownership begun in an older incarnation of the group than the
// other side's counts as fenced however it ended: the group it was owned in had no member left
// when the new one began (findIncarnations), though its member may not have heard. A call proves iv's session valid during the overlap only if it was sent after the
// overlap began; an accepted commit does not if __consumer_offsets shows it written before the
// group reached the epoch of other's ownership (the log outranks where the history placed it).
func (f *facts) fencedExcuse(iv, other *interval, lo, hi int, older bool, byLog map[int]string, expelled map[string]expulsion) (string, []int64) {
	name := f.mems[iv.member]
	if iv.endKind != endLost && !older {
		why, ok := f.expelledBeforeRevoke(iv, other)
		if !ok {
			return name + " was not fenced (its ownership " + iv.endKind.String() + ")", nil
		}
		key := name + " " + itoa(f.idx(iv.end))
		if x, seen := expelled[key]; !seen || other.epoch < x.epoch {
			expelled[key] = expulsion{other.epoch, name + "'s revocation at event " + itoa(f.idx(iv.end)) + " came after the group had expelled it: " + why + "; its ownership until then counts as fenced"}
		}
	}
	ss := f.sessions[iv.member]
	for k := sort.Search(len(ss), func(i int) bool { return ss[i].inv >= lo }); k < len(ss) && ss[k].inv < hi; k++ {
		e := f.ev[ss[k].done]
		if hb, ok := f.vals[ss[k].done].(history.Heartbeat); ok && hb.Protocol == history.ProtocolClassic {
			if why, ok := f.removedBefore(hb.MemberID, other.epoch, ss[k].done); ok {
				byLog[ss[k].done] = why
				continue
			}
		}
		return name + " still had a valid session: its " + e.F + " sent at event " + itoa(f.idx(ss[k].inv)) + " succeeded at event " + itoa(e.Index), []int64{f.idx(ss[k].inv), e.Index}
	}
	cs := f.commitsByTP[iv.tp] // in invoke order
	k := sort.Search(len(cs), func(i int) bool { return f.commits[cs[i]].inv >= lo })
	for _, cid := range cs[k:] {
		c := &f.commits[cid]
		if c.inv >= hi {
			break
		}
		if c.member != iv.member || !c.accepted() {
			continue
		}
		if o, _ := c.offsetOf(iv.tp); other.inc == iv.inc {
			if _, ok := f.writtenBefore(iv.tp, o, other.epoch, c.done); ok {
				continue // it landed before the other ownership began
			}
		}
		return name + "'s commit of " + f.tps[iv.tp].String() + " sent at event " + itoa(f.idx(c.inv)) + " was accepted at event " + itoa(f.idx(c.done)) + " although it had been fenced", []int64{f.idx(c.inv), f.idx(c.done)}
	}
	return "", nil
}

const NameValidPartitionEpoch = "ValidPartitionEpoch"

// ValidPartitionEpoch checks that a (partition, member epoch) pair, or (partition, generation) in
// classic groups, has at most one owner over the whole run: the broker refuses to build a state
// with two (ConsumerGroup.addPartitionEpochs throws), and a classic assignment that hands one
// partition to two members in one generation is wrong.
var ValidPartitionEpoch = register(Checker{Name: NameValidPartitionEpoch, Place: 30, Groups: ConsumerGroups,
	Asserts: "a (partition, member epoch or generation) pair has one owner over the whole run",
	judge:   func(in *judging) Verdict { return validPartitionEpoch(in.f) },
	nothing: noOwnership}).Judge

func validPartitionEpoch(f *facts) Verdict {
	v := newVerdict(NameValidPartitionEpoch)
	seen := map[[4]int]bool{}
	for _, c := range f.conflicts {
		k := [4]int{c.inc, c.tp, int(c.epoch), c.second.member}
		if seen[k] {
			continue
		}
		seen[k] = true
		where := ""
		if c.inc > 0 {
			where = " of the group's incarnation " + itoa(int64(c.inc)) + " (from event " + itoa(f.idx(f.incs[c.inc-1].start)) + ")"
		}
		idx := []int64{f.idx(c.first.pos), f.idx(c.second.pos)}
		msg := "partition %s at epoch %d%s owned by %s (event %d) and by %s (event %d)"
		args := []any{f.tps[c.tp], c.epoch, where, f.mems[c.first.member], f.idx(c.first.pos), f.mems[c.second.member], f.idx(c.second.pos)}
		if x, more, ok := matchPair(f, c); ok {
			if more != "" {
				msg, args = msg+": %s", append(args, more)
			}
			if x.Fails() {
				v.failKnown(x, Known{Events: idx}, idx, msg, args...)
			} else {
				v.noteKnown(x, Known{Events: idx}, "a known behaviour ("+x.ID+"): "+msg, args...)
			}
			continue
		}
		v.fail(idx, msg, args...)
	}
	v.note("%d (partition, epoch) pairs owned; %d passed from a static member to the next holder of its instance id", len(f.pairs), f.handovers)
	v.Notes = append(v.Notes, f.incNotes...)
	return v.done()
}
