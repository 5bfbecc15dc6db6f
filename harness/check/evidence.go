package check

import (
	"slices"
	"sort"
	"strings"

	"github.com/groupquake/groupquake/harness/history"
)

// Evidence of order (docs/checkers-evidence.md). A checker orders two things only on evidence
// that fixes their order, and ranks it:
//
//  1. __consumer_offsets, as a snapshot read it after both writes were acknowledged: the
//     coordinator appends what it applies in the order it applies it, so where every record of
//     one write lies before every record of another, that is their order (logBefore,
//     writtenBefore). It outranks the history: the history places a call where its member
//     recorded it, and a member's invoke and answer can be recorded away from when the request
//     was applied (a request held on a paused node's socket, an answer held back by a frozen
//     member's links, a client that sends one request again on its own).
//  2. The history's real-time order: a call that completed before another was invoked came
//     first; a fact (assigned, consume, …) is a point. A call is only known to have taken
//     effect between its invoke and its completion.
//  3. Nothing else. Two calls that overlap (one invoked before the other completed) are
//     concurrent: the order in which their answers came proves nothing. A read of the observer
//     is a call too: a describe from its invoke to its completion, a snapshot from HistoryLen to
//     HistoryEnd (span).
//
// What no recorded event places is not judged against the history: a snapshot taken after the
// history's last event when events are missing before it (beyond).

// span places an observer's read in the history: it began after the event at position b (-1:
// before every event) and ended before the event at position e (len(f.ev): not before the end).
type span struct {
	b, e int
	// final marks the final snapshot, which the run takes after every checkpoint.
	final, snapshot bool
}

// before reports whether read x certainly ended before read y began.
func (x span) before(y span) bool {
	return x.e <= y.b || x.snapshot && !x.final && y.final
}

// callSpan is a describe's span: from its invoke to its completion (a standalone info is a point).
func (f *facts) callSpan(pos int) span {
	b := pos
	if p := f.partner[pos]; p >= 0 && p < pos {
		b = p
	}
	return span{b: b, e: pos}
}

// placed is a snapshot placed in the history.
type placed struct {
	s     history.Snapshot
	label string
	span
	// beyond: the snapshot was taken after events the history does not hold (its HistoryLen is
	// past the last recorded event): what it shows may come from them, so it is not judged
	// against the history.
	beyond bool
	// unplaced: a checkpoint without HistoryLen (written before it was recorded).
	unplaced bool
}

// snapshots places every snapshot of obs, checkpoints first, in their order.
func (f *facts) snapshots(obs *history.Observations) []placed {
	if obs == nil {
		return nil
	}
	var out []placed
	for i, s := range obs.All() {
		final := i == len(obs.Checkpoints)
		p := placed{s: s, label: "snapshot " + s.Label, span: span{final: final, snapshot: true}}
		switch {
		case s.HistoryLen <= 0:
			// Unknown: the final snapshot counts as taken after the whole history.
			p.b, p.e = len(f.ev)-1, len(f.ev)
			p.unplaced = !final
		default:
			p.beyond = s.HistoryLen > f.lastIndex()+1
			p.b = f.posOfIndex(s.HistoryLen) - 1
			p.e = f.readEnd(s, p.b, final)
		}
		out = append(out, p)
	}
	return out
}

// readEnd is where a snapshot that began after position b ended: HistoryEnd when recorded, else
// for the final snapshot the teardown phase (the run begins it once the final observation is
// written), else the end of the history.
func (f *facts) readEnd(s history.Snapshot, b int, final bool) int {
	if s.HistoryEnd > 0 {
		return max(f.posOfIndex(s.HistoryEnd), b+1)
	}
	if final {
		for _, p := range f.phases[history.PhaseTeardown] {
			if p > b {
				return p
			}
		}
	}
	return len(f.ev)
}

func (f *facts) lastIndex() int64 {
	if len(f.ev) == 0 {
		return -1
	}
	return f.ev[len(f.ev)-1].Index
}

// commitLog is what __consumer_offsets says about the order of the group's writes, from the
// latest snapshot that read it.
type commitLog struct {
	label string
	// upto: the snapshot began after this position, so every write acknowledged at or before it
	// is in the log (unless the coordinator lost it, which DurableCommits judges).
	upto int
	// offsets: per partition and committed offset, the log offsets of its OffsetCommit records.
	offsets map[history.TP]map[int64][]int64
	// epochs: the group's epoch records (ConsumerGroupMetadata's epoch, GroupMetadata's
	// generation, the target assignment's epoch) in log order.
	epochs []logEpoch
	// acked: per partition and offset, the positions of the accepted commits that wrote it,
	// sorted (built on demand).
	acked map[int]map[int64][]int
	// members: per member id, where the log shows it in the group or removed (a
	// ConsumerGroupMemberMetadata record or its tombstone; in or left out of a GroupMetadata).
	members memberLog
}

type logEpoch struct {
	offset int64
	epoch  int64
}

// buildLog indexes the records of the latest snapshot that read __consumer_offsets and that the
// history places (the final one, or a checkpoint with its HistoryLen).
func (f *facts) buildLog(obs *history.Observations) {
	var use *placed
	for i := range f.snaps {
		p := &f.snaps[i]
		if p.s.HasRecords && !p.unplaced {
			use = p
		}
	}
	if use == nil {
		return
	}
	l := &commitLog{label: use.label, upto: use.b, offsets: map[history.TP]map[int64][]int64{}, members: memberLog{}}
	recs := slices.Clone(use.s.Records)
	sort.SliceStable(recs, func(a, b int) bool { return recs[a].Offset < recs[b].Offset })
	classic := map[string]bool{} // member ids of the last GroupMetadata
	for _, r := range recs {
		if recordGroup(r) != obs.Group {
			continue
		}
		switch r.KeyType {
		case history.RecordGroupMetadata:
			now := classicMemberIDs(r)
			for id := range classic {
				if !now[id] {
					l.members.add(id, r.Offset, false)
				}
			}
			for id := range now {
				if !classic[id] {
					l.members.add(id, r.Offset, true)
				}
			}
			classic = now
		case history.RecordConsumerGroupMemberMetadata:
			if id, _ := r.KeyString("memberid"); id != "" {
				l.members.add(id, r.Offset, !r.Tombstone())
			}
		}
	}
	for _, r := range use.s.Records {
		if t, ok := offsetCommitKey(r, obs.Group); ok {
			if r.Tombstone() {
				continue
			}
			if o, ok := r.ValueInt("offset"); ok {
				if l.offsets[t] == nil {
					l.offsets[t] = map[int64][]int64{}
				}
				l.offsets[t][o] = append(l.offsets[t][o], r.Offset)
			}
			continue
		}
		if recordGroup(r) != obs.Group || r.Tombstone() {
			continue
		}
		var e int64
		var ok bool
		switch r.KeyType {
		case history.RecordConsumerGroupMetadata:
			e, ok = r.ValueInt("epoch")
		case history.RecordGroupMetadata:
			e, ok = r.ValueInt("generation")
		case history.RecordConsumerGroupTargetAssignmentMetadata:
			e, ok = r.ValueInt("assignmentepoch")
		}
		if ok {
			l.epochs = append(l.epochs, logEpoch{r.Offset, e})
		}
	}
	for _, byOff := range l.offsets {
		for _, offs := range byOff {
			sort.Slice(offs, func(a, b int) bool { return offs[a] < offs[b] })
		}
	}
	sort.SliceStable(l.epochs, func(a, b int) bool { return l.epochs[a].offset < l.epochs[b].offset })
	f.log = l
}

// written returns the log offsets of the writes of offset o of partition tp, or nil when the log
// cannot stand for all of them: it was read before a commit of o acknowledged at or before
// ackedBy, or it holds fewer records of o than there are accepted commits of o acknowledged
// before it was read (one was lost, or compacted away, and an older record of the same offset
// must not stand for it).
func (f *facts) written(tp int, o int64, ackedBy int) []int64 {
	l := f.log
	if l == nil || ackedBy > l.upto {
		return nil
	}
	recs := l.offsets[f.tps[tp]][o]
	if len(recs) == 0 {
		return nil
	}
	if l.acked == nil {
		l.acked = map[int]map[int64][]int{}
	}
	if l.acked[tp] == nil {
		m := map[int64][]int{}
		for _, id := range f.commitsByTP[tp] {
			c := &f.commits[id]
			if c.accepted() {
				v, _ := c.offsetOf(tp)
				m[v] = append(m[v], c.done)
			}
		}
		for _, ps := range m {
			sort.Ints(ps)
		}
		l.acked[tp] = m
	}
	ps := l.acked[tp][o]
	n := sort.Search(len(ps), func(i int) bool { return ps[i] > l.upto })
	if len(recs) < n {
		return nil
	}
	return recs
}

// logBefore reports whether __consumer_offsets shows every write of offset x of partition tp
// before every write of offset y, for commits acknowledged at or before ackedBy; it returns the
// record offsets that show it, for messages.
func (f *facts) logBefore(tp int, x, y int64, ackedBy int) (string, bool) {
	if x == y {
		return "", false
	}
	xs, ys := f.written(tp, x, ackedBy), f.written(tp, y, ackedBy)
	if len(xs) == 0 || len(ys) == 0 || xs[len(xs)-1] >= ys[0] {
		return "", false
	}
	return "__consumer_offsets (" + f.log.label + ") holds every write of " + itoa(x) + " (" + joinOffsets(xs) + ") before every write of " + itoa(y) + " (" + joinOffsets(ys) + ")", true
}

// writtenBefore reports whether __consumer_offsets shows every write of offset o of partition tp
// before the group reached epoch (or generation) epoch: before its first epoch record at epoch or
// higher. Records of an older incarnation of the group count too, which only ever makes the
// answer no.
func (f *facts) writtenBefore(tp int, o int64, epoch int32, ackedBy int) (string, bool) {
	if epoch <= 0 {
		return "", false
	}
	xs := f.written(tp, o, ackedBy)
	if len(xs) == 0 {
		return "", false
	}
	for _, e := range f.log.epochs {
		if e.epoch >= int64(epoch) {
			if xs[len(xs)-1] < e.offset {
				return "__consumer_offsets (" + f.log.label + ") holds every write of " + itoa(o) + " of " + f.tps[tp].String() + " (" + joinOffsets(xs) + ") before the group reached epoch " + itoa(int64(epoch)) + " (log offset " + itoa(e.offset) + ")", true
			}
			return "", false
		}
	}
	return "", false
}

// removedBefore reports whether __consumer_offsets shows member id removed from the group by the
// time the group reached epoch (or generation) epoch, at or before its first epoch record at epoch
// or higher (a classic group's GroupMetadata leaves the member out in the record of the new
// generation itself), and never in the group again; it says so for messages. Kafka answers a
// write only once its records are replicated (CoordinatorRuntime completes it when the high
// watermark passes them, deferredEventQueue.completeUpTo), so a member that learned the epoch
// was answered after the removal was in every coordinator's log, and a coordinator that had
// loaded it answers the member id's calls UNKNOWN_MEMBER_ID. The log must have been read after
// position pos.
func (f *facts) removedBefore(id string, epoch int32, pos int) (string, bool) {
	l := f.log
	if l == nil || id == "" || epoch <= 0 || pos > l.upto {
		return "", false
	}
	at := int64(-1)
	for _, e := range l.epochs {
		if e.epoch >= int64(epoch) {
			at = e.offset
			break
		}
	}
	ms := l.members[id]
	if at < 0 || len(ms) == 0 {
		return "", false
	}
	last := ms[len(ms)-1]
	if last.in || last.offset > at {
		return "", false
	}
	return "__consumer_offsets (" + l.label + ") shows member id " + id + " removed at log offset " + itoa(last.offset) + ", by the time the group reached epoch " + itoa(int64(epoch)) + " (log offset " + itoa(at) + "), and never back", true
}

func joinOffsets(os []int64) string {
	const most = 4
	parts := make([]string, 0, most+1)
	for i, o := range os {
		if i == most {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, itoa(o))
	}
	s := "log offset"
	if len(os) > 1 {
		s += "s"
	}
	return s + " " + strings.Join(parts, ", ")
}
