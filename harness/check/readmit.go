package check

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// Finding kafka-classic-rejoin-readmitted (docs/findings.md): the coordinator
// removes a classic member of a consumer group whose session expired
// (GroupMetadataManager.removeMember tombstones its current assignment,
// target assignment and subscription, in that order) and gives its
// partitions to the others. When the member comes back with a JoinGroup
// carrying its old member id, classicGroupJoinToConsumerGroup creates it
// again under that id (getOrMaybeSubscribeDynamicConsumerGroupMember with
// createIfNotExists = true; 3.8 calls ConsumerGroup.getOrMaybeCreateMember
// with true itself) instead of answering UNKNOWN_MEMBER_ID, as a classic
// group does (ClassicGroup.validateMember). The member is never told its
// partitions were lost: it holds them until the new generation's
// assignment makes it revoke them, while the members that took them own
// them too.
//
// What shows it is __consumer_offsets (readmissions, read in log order:
// the removal, the partitions given to other member ids, the member id
// written again as a new member) and the history (readmitMatch: the
// member's join after the removal, its silence before it, the revocation
// right after the new generation's SyncGroup).

// readmission is one member id __consumer_offsets shows removed from the
// consumer group and written again as a new member under the same id.
type readmission struct {
	memberID string
	// held: the member's last current assignment before the removal
	// (assigned and pending revocation), at member epoch heldEpoch, log
	// offset heldOff.
	held      map[history.TP]bool
	heldEpoch int64
	heldOff   int64
	// curTomb, targetTomb, subTomb: the tombstones of the removal
	// (current assignment, target assignment, subscription); -1 when the
	// log does not hold one.
	curTomb, targetTomb, subTomb int64
	// subOff: the subscription written again; epoch and backOff: the
	// first current assignment after the removal, at member epoch epoch
	// with previous member epoch 0 (a new member).
	subOff, epoch, backOff int64
	// given: per partition held, the first current assignment after the
	// removal that lists it assigned to another member id.
	given map[history.TP]givenTo
}

// givenTo is a current assignment of another member id listing a
// partition: the member id, its member epoch, the log offset.
type givenTo struct {
	memberID  string
	epoch, at int64
}

func (r readmission) String() string {
	return fmt.Sprintf("__consumer_offsets shows member id %s at member epoch %d (log offset %d) removed (tombstones at log offsets %d, %d, %d) "+
		"and written again as a new member at member epoch %d with previous member epoch 0 (log offsets %d, %d)",
		r.memberID, r.heldEpoch, r.heldOff, r.curTomb, r.targetTomb, r.subTomb, r.epoch, r.subOff, r.backOff)
}

// readmissions returns, in log order, every member id the records of the
// latest placed snapshot that read __consumer_offsets show removed from the
// consumer group (its current assignment, target assignment and
// subscription tombstoned) and then written again as a new member (its
// subscription, then a current assignment with previous member epoch 0 at
// a member epoch above the one it was removed at), with the group neither
// deleted nor converted in between. upto is the position the snapshot
// began after (-1 without one).
func (f *facts) readmissions() ([]readmission, int) {
	if f.readmits == nil {
		f.readmits, f.readmitUpto = f.scanReadmissions()
		if f.readmits == nil {
			f.readmits = []readmission{}
		}
	}
	return f.readmits, f.readmitUpto
}

func (f *facts) scanReadmissions() (out []readmission, upto int) {
	var use *placed
	for i := range f.snaps {
		if p := &f.snaps[i]; p.s.HasRecords && !p.unplaced {
			use = p
		}
	}
	if use == nil || f.obs == nil {
		return nil, -1
	}
	recs := slices.Clone(use.s.Records)
	slices.SortStableFunc(recs, func(a, b history.Record) int { return cmp.Compare(a.Offset, b.Offset) })
	s := &reconvertScan{name: topicNamer(f.obs.TopicIDs, f.tps)}
	cur := map[string]memberAssignment{}
	removed := map[string]*readmission{} // removed, not (yet) back
	var back []*readmission              // back, in log order
	note := func(r *readmission, id string, assigned map[history.TP]bool, epoch, off int64) {
		if r.memberID == id {
			return
		}
		for tp := range assigned {
			if _, ok := r.given[tp]; !ok && r.held[tp] {
				r.given[tp] = givenTo{id, epoch, off}
			}
		}
	}
	for _, r := range recs {
		if recordGroup(r) != f.obs.Group {
			continue
		}
		id, _ := r.KeyString("memberid")
		switch r.KeyType {
		case history.RecordGroupMetadata:
			clear(removed) // converted to a classic group: not this path
		case history.RecordConsumerGroupMetadata:
			if r.Tombstone() {
				clear(removed) // the group was deleted
			}
		case history.RecordConsumerGroupCurrentMemberAssignment:
			if r.Tombstone() {
				if c, ok := cur[id]; ok {
					removed[id] = &readmission{memberID: id, held: c.tps, heldEpoch: c.epoch, heldOff: c.off,
						curTomb: r.Offset, targetTomb: -1, subTomb: -1, subOff: -1, given: map[history.TP]givenTo{}}
				}
				delete(cur, id)
				continue
			}
			epoch, _ := r.ValueInt("memberepoch")
			prev, okPrev := r.ValueInt("previousmemberepoch")
			assigned := s.partitions(r, "assignedpartitions")
			a := memberAssignment{tps: tpUnion(assigned, s.partitions(r, "partitionspendingrevocation")), epoch: epoch, off: r.Offset}
			cur[id] = a
			if rm, ok := removed[id]; ok {
				delete(removed, id)
				if okPrev && prev == 0 && epoch > rm.heldEpoch && rm.targetTomb >= 0 && rm.subTomb >= 0 && rm.subOff >= 0 {
					rm.epoch, rm.backOff = epoch, r.Offset
					back = append(back, rm)
				}
			}
			for _, rm := range back {
				note(rm, id, assigned, epoch, r.Offset)
			}
			for _, rm := range removed {
				note(rm, id, assigned, epoch, r.Offset)
			}
		case history.RecordConsumerGroupTargetAssignmentMember:
			if rm, ok := removed[id]; ok && r.Tombstone() && rm.targetTomb < 0 {
				rm.targetTomb = r.Offset
			}
		case history.RecordConsumerGroupMemberMetadata:
			rm, ok := removed[id]
			switch {
			case !ok:
			case r.Tombstone() && rm.subTomb < 0:
				rm.subTomb = r.Offset
			case !r.Tombstone() && rm.subTomb >= 0 && rm.subOff < 0:
				rm.subOff = r.Offset
			}
		}
	}
	for _, r := range back {
		out = append(out, *r)
	}
	return out, use.b
}

// tpUnion is the union of two partition sets.
func tpUnion(a, b map[history.TP]bool) map[history.TP]bool {
	out := make(map[history.TP]bool, len(a)+len(b))
	for tp := range a {
		out[tp] = true
	}
	for tp := range b {
		out[tp] = true
	}
	return out
}

// readmitJoin is the history's side of a readmission: member name's
// JoinGroup carrying the member id (invoke inv, answered ok at the
// readmission's epoch at done), the silence before it (from the last
// answer to a heartbeat, join or sync carrying the member id, at last),
// and the SyncGroup of that generation answered after it (sync; -1 when
// none).
type readmitJoin struct {
	name            string
	inv, done, last int
	sync            int
}

// fencingErrors are the answers that tell a classic member it is no longer
// in the group (or no longer in its generation): a member told so has its
// partitions lost, and what follows is its client's doing.
var fencingErrors = []string{"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID", "FENCED_MEMBER_EPOCH"}

// findReadmitJoin finds member name's JoinGroup that came back after
// readmission r, among its joins answered after position from: the first
// join invoked after from and answered (unanswered ones, those whose answer
// is unknown and those answered that the coordinator moved are passed
// over, as are joins answered ok at a generation the member held before
// its removal) must carry r's member id and be answered ok at r's epoch;
// the last answer to a heartbeat, join or sync carrying the member id
// before it must have come at least a session timeout before it was sent,
// and no LeaveGroup carrying the member id may have been sent from from to
// it. It returns the join and the first SyncGroup of the member answered ok
// at that generation after it.
func (f *facts) findReadmitJoin(r readmission, name string, from int) (readmitJoin, bool) {
	if f.session <= 0 {
		return readmitJoin{}, false
	}
	j := readmitJoin{name: name, inv: -1, last: -1, sync: -1}
	for i := from + 1; i < len(f.ev) && j.inv < 0; i++ {
		e := f.ev[i]
		v, ok := f.vals[i].(history.Join)
		if !ok || memberName(v.Member, e.Process) != name || (e.Type != history.OK && e.Type != history.Fail) {
			continue
		}
		inv := f.partner[i]
		if inv < 0 || inv > i || inv <= from {
			continue
		}
		switch {
		case e.Type == history.Fail && CoordinatorMoved(v.Error):
			continue
		case e.Type == history.OK && int64(v.Generation) <= r.heldEpoch:
			continue // a rebalance before the removal
		}
		sent, _ := f.vals[inv].(history.Join)
		if e.Type != history.OK || sent.MemberID == "" || sent.MemberID != r.memberID || int64(v.Generation) != r.epoch {
			return readmitJoin{}, false
		}
		j.inv, j.done = inv, i
	}
	if j.inv < 0 {
		return readmitJoin{}, false
	}
	// The silence before the join: the latest a heartbeat, join or sync
	// carrying the member id can have reached the coordinator is its
	// answer (an answer after the join was sent, or none: the join itself).
	latest := time.Duration(-1)
	for i := range j.inv {
		e := f.ev[i]
		if e.Type != history.Invoke {
			continue
		}
		c, ok := joinSyncHeartbeat(f.vals[i])
		if !ok || c.MemberID != r.memberID {
			continue
		}
		p, at, end := f.partner[i], f.ev[j.inv].Time, -1
		if p > i && p < j.inv {
			at, end = f.ev[p].Time, p
		}
		if at > latest {
			latest, j.last = at, end
		}
	}
	if latest < 0 || f.ev[j.inv].Time-latest < f.session {
		return readmitJoin{}, false
	}
	for i := from + 1; i < j.inv; i++ {
		if v, ok := f.vals[i].(history.Leave); ok && v.MemberID == r.memberID {
			return readmitJoin{}, false
		}
	}
	for i := j.done + 1; i < len(f.ev); i++ {
		if v, ok := f.vals[i].(history.Sync); ok && f.ev[i].Type == history.OK && memberName(v.Member, f.ev[i].Process) == name && int64(v.Generation) == r.epoch {
			j.sync = i
			break
		}
	}
	return j, true
}

// readmitMatch says whether x, a member's ownership of a partition, and y,
// another member's ownership of it that overlapped it, are the finding:
// x is a classic-protocol member's ownership whose member id
// __consumer_offsets shows removed while holding the partition (at a member
// epoch at or above the one x began at) and written again as a new member
// (readmissions); y's member id is the one the log first shows the
// partition assigned to after the removal, and y began at or after that
// member epoch, in the same incarnation of the group; x's member's first
// JoinGroup answered after x began (findReadmitJoin) carried the member id
// and was answered ok at the epoch of the readmission, before x ended; no
// call carrying the member id was answered with an error that tells a
// member it is out while x lasted; and x ended revoked, at that epoch,
// after the member's first SyncGroup of it and before the member's next
// JoinGroup or SyncGroup. It returns what the log and the history show.
func (f *facts) readmitMatch(x, y *interval, epoch int64) (string, bool) {
	if x.protocol != history.ProtocolClassic || x.member == y.member || x.inc != y.inc || x.tp != y.tp ||
		x.endKind != endRevoked || x.end >= len(f.ev) {
		return "", false
	}
	xID, yID := memberIDAt(f.vals[x.start]), memberIDAt(f.vals[y.start])
	if xID == "" || yID == "" || xID == yID {
		return "", false
	}
	tp := f.tps[x.tp]
	rs, upto := f.readmissions()
	for _, r := range rs {
		g, given := r.given[tp]
		if (epoch > 0 && r.epoch != epoch) || r.memberID != xID || !r.held[tp] || int64(x.epoch) > r.heldEpoch || !given || g.memberID != yID || int64(y.epoch) < g.epoch {
			continue
		}
		name := f.mems[x.member]
		j, ok := f.findReadmitJoin(r, name, x.start)
		if !ok || j.done >= x.end || j.done > upto || j.sync < 0 || j.sync >= x.end {
			continue
		}
		if !f.revokedRightAfter(x, j, r) || f.toldOut(xID, x.start, x.end) {
			continue
		}
		last := fmt.Sprintf("%s after the last heartbeat, join or sync carrying it ended (event %d)", dur(f.ev[j.inv].Time-f.ev[j.last].Time), f.idx(j.last))
		return fmt.Sprintf("%s; the log first shows %s assigned to %s at member epoch %d (log offset %d); %s's JoinGroup as %s (event %d), %s, was answered generation %d (event %d), not UNKNOWN_MEMBER_ID, and %s revoked %s (event %d) after the SyncGroup of generation %d (event %d)",
			r, tp, g.memberID, g.epoch, g.at, name, xID, f.idx(j.inv), last, r.epoch, f.idx(j.done), name, tp, f.idx(x.end), r.epoch, f.idx(j.sync)), true
	}
	return "", false
}

// revokedRightAfter says whether x's revocation was the readmitted
// member's answer to the new generation's assignment: reported at the
// readmission's epoch, after the first SyncGroup of it (whose assignment,
// when the member recorded it, does not list the partition) and before the
// member's next JoinGroup or SyncGroup.
func (f *facts) revokedRightAfter(x *interval, j readmitJoin, r readmission) bool {
	a, ok := f.vals[x.end].(history.Assignment)
	if !ok || f.ev[x.end].F != history.FRevoked || int64(a.Epoch) != r.epoch {
		return false
	}
	if s, ok := f.vals[j.sync].(history.Sync); !ok || slices.Contains(s.Assignment, f.tps[x.tp]) {
		return false
	}
	for i := j.sync + 1; i < x.end; i++ {
		if f.ev[i].Type != history.Invoke {
			continue
		}
		switch v := f.vals[i].(type) {
		case history.Join:
			if memberName(v.Member, f.ev[i].Process) == j.name {
				return false
			}
		case history.Sync:
			if memberName(v.Member, f.ev[i].Process) == j.name {
				return false
			}
		}
	}
	return true
}

// toldOut says whether a call carrying member id id was answered, between
// positions lo and hi, with an error that tells a member it is out of the
// group or its generation (fencingErrors).
func (f *facts) toldOut(id string, lo, hi int) bool {
	for i := lo + 1; i < hi; i++ {
		if f.ev[i].Type == history.Invoke {
			continue
		}
		c, ok := f.vals[i].(history.GroupCall)
		if !ok {
			continue
		}
		cf := c.Call()
		if cf.MemberID == "" {
			if p := f.partner[i]; p >= 0 {
				if ci, ok := f.vals[p].(history.GroupCall); ok {
					cf.MemberID = ci.Call().MemberID
				}
			}
		}
		if cf.MemberID == id && slices.Contains(fencingErrors, cf.Error) {
			return true
		}
		if cm, ok := f.vals[i].(history.Commit); ok && cm.MemberID == id {
			for _, pe := range cm.PartitionErrors {
				if slices.Contains(fencingErrors, pe.Error) {
					return true
				}
			}
		}
	}
	return false
}

// readmitOverlap: a's side of a NoDoubleOwnership overlap with b is the
// readmitted classic member's (readmitMatch).
func readmitOverlap(f *facts, a, b *interval, _ int) (string, bool) {
	return f.readmitMatch(a, b, 0)
}

// readmitPair: one owner of a ValidPartitionEpoch conflict at the epoch of
// a readmission is the readmitted classic member, through an ownership
// still open when it registered the pair, and the other holds the
// partition through an ownership open at its own registration; the two
// ownerships are the finding's (readmitMatch).
func readmitPair(f *facts, c pairConflict) (string, bool) {
	for _, o := range [][2]pairOwner{{c.first, c.second}, {c.second, c.first}} {
		x, y := f.openAt(o[0], c.tp), f.openAt(o[1], c.tp)
		if x == nil || y == nil {
			continue
		}
		if why, ok := f.readmitMatch(x, y, int64(c.epoch)); ok {
			return why, true
		}
	}
	return "", false
}

// openAt is o's member's ownership of partition tp that is open at o's
// position (begun at or before it, ended after it), nil when none.
func (f *facts) openAt(o pairOwner, tp int) *interval {
	for _, id := range f.byTP[tp] {
		if iv := &f.intervals[id]; iv.member == o.member && iv.start <= o.pos && iv.end > o.pos {
			return iv
		}
	}
	return nil
}

// readmitSightings sights FindingClassicRejoinReadmitted wherever the log
// shows a member id removed and written again as a new member and the
// history shows the JoinGroup that brought it back (findReadmitJoin, from
// the member's first call carrying the member id), whether or not an
// overlap followed.
func readmitSightings(f *facts) []Sighting {
	rs, upto := f.readmissions()
	var out []Sighting
	for _, r := range rs {
		name := f.nameOfMemberID(r.memberID)
		if name == "" {
			continue
		}
		// The member's last call carrying the member id answered ok at a
		// generation at or below the one it was removed at: the joins
		// after it are those findReadmitJoin weighs.
		from := -1
		for i, e := range f.ev {
			if e.Type != history.OK {
				continue
			}
			switch v := f.vals[i].(type) {
			case history.Join:
				if v.MemberID == r.memberID && int64(v.Generation) <= r.heldEpoch {
					from = i
				}
			case history.Sync:
				if v.MemberID == r.memberID && int64(v.Generation) <= r.heldEpoch {
					from = i
				}
			}
		}
		if from < 0 {
			continue
		}
		j, ok := f.findReadmitJoin(r, name, from)
		if !ok || j.done > upto {
			continue
		}
		ev := []int64{f.idx(j.inv), f.idx(j.done)}
		out = append(out, Sighting{Finding: FindingClassicRejoinReadmitted, Member: name, Events: ev,
			What: fmt.Sprintf("%s; %s's JoinGroup as %s (event %d) was answered generation %d (event %d), not UNKNOWN_MEMBER_ID",
				r, name, r.memberID, f.idx(j.inv), r.epoch, f.idx(j.done))})
	}
	return out
}
