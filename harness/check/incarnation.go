package check

import (
	"fmt"
	"strings"

	"github.com/groupquake/groupquake/harness/history"
)

// Incarnations of the group. Kafka numbers a group's epochs from the group's creation: a group
// deleted and created again, or an empty consumer group converted to a classic group by a classic
// JoinGroup (GroupMetadataManager.classicGroupJoinToClassicGroup → maybeDeleteEmptyConsumerGroup
// writes the ConsumerGroup tombstones, then GroupMetadata at generation 0 and 1) starts over at
// generation or epoch 1. The checkers keyed by epoch judge each incarnation on its own.
//
// A new incarnation is never guessed. It begins at the first successful join (JoinGroup, or a
// ConsumerGroupHeartbeat or SyncGroup answered) after a moment at which the history proves the
// group had no member, and only when that join's epoch does not go past the epochs already seen
// (otherwise the epochs simply continue and nothing needs excusing), and only as many times, in
// order, as the decoded __consumer_offsets log shows the group deleted or converted while empty:
// the group's metadata record tombstoned, and the next one a classic group without members or an
// epoch below the one before the tombstone, of the type the joining member's protocol makes (a
// classic JoinGroup makes a classic group, a ConsumerGroupHeartbeat a consumer group) (Kafka converts a group with members together with
// them and its epoch: ConsumerGroup.fromClassicGroup, ClassicGroup.fromConsumerGroup). Without the
// log, nothing is excused and the verdicts say so.
//
// The group had no member at a position when an observer's describe answered an Empty or Dead
// group without members, and no member made a join, sync or heartbeat call since the describe was
// sent; or when every member whose join, sync or heartbeat was answered (ok, or an unknown
// outcome) has since reported its membership over (fenced, session-expired, left, lost), and no
// such call is still open: checked when a membership ends, and when the last open call is answered
// that its caller is not a member (notAMember). A member the history shows only through its assignments proves nothing:
// the history does not show who else was in the group.
//
// Members cut off from the coordinator (a whole-cluster outage) may never hear that their sessions
// expired: their heartbeats go unanswered, and the history cannot prove the group empty. The log
// can: a join at the epoch the next reset's new group gives its first member begins a new
// incarnation when every other member the history still counts has its member id removed in
// __consumer_offsets before that reset (a ConsumerGroupMemberMetadata tombstone, or left out of a
// GroupMetadata). A reset is also a classic group's GroupMetadata written straight after an empty
// consumer group's records without their tombstones, which Kafka writes when a JoinGroup with a
// member id it does not know converts the group (testdata/kafka-4.4.0-migration-outage), and any
// new group after the tombstone of a classic group without members, which Kafka deletes when a
// ConsumerGroupHeartbeat comes (a consumer group at epoch 1 after generation 0). Resets with no
// member written between them are one reset for the members: the group between never had one
// (testdata/kafka-4.1.2-migration-outage: a classic JoinGroup answered MEMBER_ID_REQUIRED left a
// memberless classic group, which the next consumer-protocol join replaced). A consumer-protocol
// join that the log proves a restart is anchored in the log: the n-th answered join from epoch 0
// of a member id must be the n-th time the log adds that member id, after the reset (the first
// join of the run, at the same epoch, is not the restart); and a member of the new group answered
// before the joiner (its member id only in the log after the reset) does not count as still in
// the old one.

// groupReset is one deletion or conversion of the empty group that __consumer_offsets shows.
type groupReset struct {
	offset      int64 // the tombstone's offset in __consumer_offsets
	last, first int32 // the epoch or generation before the tombstone, and the next one written
	// protocol is the new group's type: classic when its first record is GroupMetadata.
	protocol string
}

func (r groupReset) String() string {
	return fmt.Sprintf("__consumer_offsets offset %d: epoch %d, then a %s group at %d", r.offset, r.last, r.protocol, r.first)
}

// recordGroup is the group a record's key names (GroupMetadataKey{group},
// ConsumerGroup*Key{groupId}).
func recordGroup(r history.Record) string {
	if g, ok := r.KeyString("groupid"); ok {
		return g
	}
	g, _ := r.KeyString("group")
	return g
}

// logResets returns, in log order, the deletions or conversions of the empty group that the
// latest snapshot holding __consumer_offsets records shows; ok is false when no snapshot read the
// log.
func logResets(obs *history.Observations) (resets []groupReset, ids memberLog, ok bool) {
	ids = memberLog{}
	var recs []history.Record
	for _, s := range obs.All() {
		if s.HasRecords {
			recs, ok = s.Records, true
		}
	}
	live := int16(-1) // key type of the group's live metadata record
	var epoch int32
	pending := false // the live metadata record was tombstoned
	var tomb history.Record
	classic := map[string]bool{} // member ids of the last GroupMetadata
	// liveEmpty: the live metadata record is a classic group without members (one a conversion
	// or a JoinGroup that never completed left); emptyTomb: such a record was tombstoned.
	liveEmpty, emptyTomb := false, false
	// member: a member was written since the last reset; a reset that follows one with no member
	// in between is the same reset for the members (the group in between never had one).
	member, memberAtTomb := true, true
	for _, r := range recs {
		if recordGroup(r) != obs.Group {
			continue
		}
		var e int64
		switch r.KeyType {
		case history.RecordGroupMetadata:
			e, _ = r.ValueInt("generation")
			now := classicMemberIDs(r)
			for id := range classic {
				if !now[id] {
					ids.add(id, r.Offset, false)
				}
			}
			for id := range now {
				ids.add(id, r.Offset, true)
			}
			classic = now
		case history.RecordConsumerGroupMetadata:
			e, _ = r.ValueInt("epoch")
		case history.RecordConsumerGroupMemberMetadata:
			if id, _ := r.KeyString("memberid"); id != "" {
				ids.add(id, r.Offset, !r.Tombstone())
			}
			member = member || !r.Tombstone()
			continue
		default:
			continue
		}
		if !r.Tombstone() && r.KeyType == history.RecordGroupMetadata && live == history.RecordConsumerGroupMetadata && !pending && classicMembers(r) == 0 {
			// An empty consumer group replaced by a classic group without its tombstones:
			// Kafka drops them when a JoinGroup with a member id it does not know converts the
			// group (coordinator/testdata/consumer/mixed_empty_conversion_unknown_member.txt).
			pending, tomb = true, r
		}
		if r.Tombstone() {
			if r.KeyType == live {
				pending, tomb, live, emptyTomb, memberAtTomb = true, r, -1, liveEmpty, member
			}
			continue
		}
		// A new group after the tombstone of an empty classic group is a new incarnation whatever
		// its epoch: Kafka deletes an empty classic group when a ConsumerGroupHeartbeat comes
		// (GroupMetadataManager.getOrMaybeCreateConsumerGroup), and the new consumer group's first
		// epoch, 1, is above the empty classic group's generation 0 (seen on 4.1.2: a classic
		// JoinGroup converted the empty consumer group and got MEMBER_ID_REQUIRED, then a consumer
		// heartbeat replaced the memberless classic group, testdata/kafka-4.1.2-migration-outage).
		if pending && (e < int64(epoch) || emptyTomb || r.KeyType == history.RecordGroupMetadata && classicMembers(r) == 0) {
			proto := history.ProtocolConsumer
			if r.KeyType == history.RecordGroupMetadata {
				proto = history.ProtocolClassic
			}
			next := groupReset{offset: tomb.Offset, last: epoch, first: int32(e), protocol: proto}
			if n := len(resets); n > 0 && !memberAtTomb {
				next.offset, next.last = resets[n-1].offset, resets[n-1].last
				resets[n-1] = next
			} else {
				resets = append(resets, next)
			}
			member = false
		}
		if r.KeyType == history.RecordGroupMetadata && classicMembers(r) > 0 {
			member = true
		}
		liveEmpty = r.KeyType == history.RecordGroupMetadata && classicMembers(r) == 0
		pending, live, epoch = false, r.KeyType, int32(e)
	}
	return resets, ids, ok
}

// memberLog is, per member id, where the log shows it in the group (true) or removed (false), in
// log order.
type memberLog map[string][]memberMark

type memberMark struct {
	offset int64
	in     bool
}

func (l memberLog) add(id string, off int64, in bool) { l[id] = append(l[id], memberMark{off, in}) }

// outBefore reports whether the log shows member id removed before offset off, and not back in
// the group since.
func (l memberLog) outBefore(id string, off int64) bool {
	out := false
	for _, m := range l[id] {
		if m.offset >= off {
			break
		}
		out = !m.in
	}
	return out
}

// addedAfter reports whether the n-th time (from 1) the log adds member id to the group, after
// none or its removal, is after offset off.
func (l memberLog) addedAfter(id string, n int, off int64) bool {
	k, in := 0, false
	for _, m := range l[id] {
		if m.in && !in {
			if k++; k == n {
				return m.offset > off
			}
		}
		in = m.in
	}
	return false
}

// joinsAfter reports whether the log shows member id in the group only from after offset off.
func (l memberLog) joinsAfter(id string, off int64) bool {
	ms := l[id]
	return len(ms) > 0 && ms[0].offset > off && ms[0].in
}

// groupMembers are the members of a GroupMetadata value, each as decoded
// (none for a tombstone).
func groupMembers(r history.Record) []map[string]any {
	for k, v := range r.Value {
		if strings.EqualFold(k, "members") {
			ms, _ := v.([]any)
			out := make([]map[string]any, 0, len(ms))
			for _, m := range ms {
				mm, _ := m.(map[string]any)
				out = append(out, mm)
			}
			return out
		}
	}
	return nil
}

// classicMemberIDs are the member ids of a GroupMetadata value (none for a tombstone).
func classicMemberIDs(r history.Record) map[string]bool {
	out := map[string]bool{}
	for _, mm := range groupMembers(r) {
		for mk, mv := range mm {
			if id, ok := mv.(string); ok && strings.EqualFold(mk, "memberid") && id != "" {
				out[id] = true
			}
		}
	}
	return out
}

// classicMembers counts the members of a GroupMetadata value.
func classicMembers(r history.Record) int { return len(groupMembers(r)) }

// incarnation is one start of the group's epochs over.
type incarnation struct {
	start int // position of the invoke of the join that began it
	empty int // position of the event proving the group had no member before it
	epoch int32
	reset groupReset
}

// findIncarnations finds where the group's epochs start over (see above) and says, in f.incNotes,
// what was excused and what was not.
func (f *facts) findIncarnations(obs *history.Observations) {
	x := &incFinder{f: f, memberID: map[string]string{}, live: map[string]bool{}, open: map[string]int{}, active: map[string]int{}, empty: noEvent, joins: map[string]int{}}
	x.resets, x.removed, x.logRead = logResets(obs)
	for i := range f.ev {
		x.event(i)
	}
	if x.used < len(x.resets) {
		f.incNotes = append(f.incNotes, fmt.Sprintf("__consumer_offsets shows %d deletions or conversions of the empty group, %d of them matched by a restart of epochs in the history", len(x.resets), x.used))
	}
}

// noEvent is incFinder.empty when nothing proves the group empty.
const noEvent = -1

// incFinder walks the history for findIncarnations: who is in the group,
// the highest epoch of the current incarnation, and the deletions or
// conversions of the empty group that __consumer_offsets shows, used in
// order.
type incFinder struct {
	f        *facts
	resets   []groupReset
	removed  memberLog // where each member id left the group
	logRead  bool
	memberID map[string]string // member → the member id its latest answered call carried
	used     int               // resets matched so far
	top      int32             // highest epoch seen in the current incarnation
	live     map[string]bool   // member → answered a join, sync or heartbeat since its membership last ended
	open     map[string]int    // member → its join, sync and heartbeat calls not answered yet
	active   map[string]int    // member → position of its latest join, sync or heartbeat event
	ever     bool              // some member was seen in the group
	empty    int               // the latest event proving the group had no member, since the last join
	// joins counts, per member id, the consumer-protocol joins from epoch 0 answered so far; the
	// n-th is the n-th time the log adds the member id (ConsumerGroupMemberMetadata after none or
	// a tombstone).
	joins map[string]int
}

func (x *incFinder) raise(e int32) { x.top = max(x.top, e) }

// members counts the members live or with a call open.
func (x *incFinder) members() int {
	n := 0
	for m, l := range x.live {
		if l || x.open[m] > 0 {
			n++
		}
	}
	return n
}

// ended: m's membership ended at pos.
func (x *incFinder) ended(m string, pos int) {
	x.live[m] = false
	if x.ever && x.members() == 0 {
		x.empty = pos
	}
}

// gone says whether the log shows every member but joiner that the history cannot rule out
// removed before reset r: its member id tombstoned (a consumer group's member), or left out of
// a GroupMetadata (a classic group's), at a lower offset. A removed member id cannot come back
// (its calls get UNKNOWN_MEMBER_ID), so members cut off from the coordinator, whose sessions
// expired while their heartbeats went unanswered, are proven out by the log alone.
// At least one such member is needed: a log proves nothing about members the history does not
// show in the group.
func (x *incFinder) gone(joiner string, r groupReset) bool {
	n := 0
	for m, l := range x.live {
		if m == joiner || !l && x.open[m] == 0 {
			continue
		}
		if id := x.memberID[m]; id != "" && x.removed.joinsAfter(id, r.offset) {
			// A member of the new group, answered before the joiner: the log shows its
			// member id only after the reset.
			continue
		}
		if x.memberID[m] == "" || !x.removed.outBefore(x.memberID[m], r.offset) {
			return false
		}
		n++
	}
	return n > 0
}

// joinedAfter anchors a restart the log proves to the log: a consumer-protocol join begins the
// new group of reset r only when the log adds its member id, that time, after r.
func (x *incFinder) joinedAfter(id, proto string, r groupReset) bool {
	return proto != history.ProtocolConsumer || x.removed.addedAfter(id, x.joins[id], r.offset)
}

// restart: m's answered call at i handed out epoch got, not above the incarnation's top; a new
// incarnation begins when the log shows the empty group deleted or converted, else a note says
// why not.
func (x *incFinder) restart(i int, m, proto string, got int32) {
	f := x.f
	if x.empty == noEvent {
		// Proven by the log (gone): the new incarnation begins with this join.
		r := x.resets[x.used]
		x.used++
		f.incs = append(f.incs, incarnation{start: f.partner[i], empty: f.partner[i], epoch: got, reset: r})
		f.incNotes = append(f.incNotes, fmt.Sprintf("a new incarnation of the group from event %d: %s joined at epoch %d (epochs up to %d before), every other member the history still counted had been removed by then as __consumer_offsets shows (sessions expired while they could not reach the coordinator), and it shows the empty group deleted or converted (%s); epochs are judged per incarnation", f.idx(f.partner[i]), m, got, x.top, r))
		x.top = 0
		return
	}
	start := max(f.partner[i], x.empty+1)
	switch {
	case !x.logRead:
		f.incNotes = append(f.incNotes, fmt.Sprintf("epochs start over at event %d (%s at epoch %d after the group had no member at event %d, with epochs up to %d before): not excused, because no snapshot read __consumer_offsets to show the group deleted or converted", f.idx(i), m, got, f.idx(x.empty), x.top))
	case x.used >= len(x.resets):
		f.incNotes = append(f.incNotes, fmt.Sprintf("epochs start over at event %d (%s at epoch %d after the group had no member at event %d, with epochs up to %d before): not excused, because __consumer_offsets shows %d deletions or conversions of the empty group and all were used before", f.idx(i), m, got, f.idx(x.empty), x.top, len(x.resets)))
	case x.resets[x.used].protocol != proto:
		f.incNotes = append(f.incNotes, fmt.Sprintf("epochs start over at event %d (%s at epoch %d after the group had no member at event %d, with epochs up to %d before): not excused, because %s joined with the %s protocol and the next deletion __consumer_offsets shows made a %s group (%s)", f.idx(i), m, got, f.idx(x.empty), x.top, m, proto, x.resets[x.used].protocol, x.resets[x.used]))
	default:
		r := x.resets[x.used]
		x.used++
		f.incs = append(f.incs, incarnation{start: start, empty: x.empty, epoch: got, reset: r})
		f.incNotes = append(f.incNotes, fmt.Sprintf("a new incarnation of the group from event %d: the group had no member at event %d, %s joined at epoch %d (epochs up to %d before), and __consumer_offsets shows the empty group deleted or converted (%s); epochs are judged per incarnation", f.idx(start), f.idx(x.empty), m, got, x.top, r))
		x.top = 0
	}
}

// call takes m's join, sync or heartbeat event i (an answered one handed out epoch got).
func (x *incFinder) call(i int, m, proto string, got int32, id string) {
	f := x.f
	e := &f.ev[i]
	x.active[m] = i
	if e.Type != history.Invoke && f.partner[i] >= 0 {
		x.open[m]--
	}
	switch e.Type {
	case history.Invoke:
		x.open[m]++
		if _, listed := x.live[m]; !listed {
			x.live[m] = false // counted while the call is open
		}
	case history.OK, history.Info:
		x.live[m], x.ever = true, true
		if e.Type == history.OK && got > 0 && got <= x.top {
			// The log alone proves a restart only of a join at the epoch the next reset's new
			// group gives its first member: generation 1 of a classic group written at 0, the
			// group epoch of a consumer group.
			if x.empty != noEvent || x.used < len(x.resets) && x.resets[x.used].protocol == proto && got == firstEpoch(x.resets[x.used]) && x.gone(m, x.resets[x.used]) && x.joinedAfter(id, proto, x.resets[x.used]) {
				x.restart(i, m, proto, got)
			}
		}
		if e.Type == history.OK && id != "" {
			x.memberID[m] = id
		}
		if e.Type == history.OK {
			x.empty = noEvent
		}
		x.raise(got)
	}
}

// event takes event i.
func (x *incFinder) event(i int) {
	f := x.f
	e := &f.ev[i]
	switch v := f.vals[i].(type) {
	case history.Membership:
		if e.F == history.FFenced || e.F == history.FSessionExpired || e.F == history.FLeft {
			x.ended(pick(v.Member, e.Process), i)
		}
	case history.Assignment:
		if e.F == history.FLost {
			x.ended(pick(v.Member, e.Process), i)
		} else {
			x.raise(v.Epoch)
		}
	case history.Describe:
		if g := v.Group; e.Type == history.OK && g != nil {
			x.raise(max(g.GroupEpoch, g.Generation, g.AssignmentEpoch))
			if g.Error == "" && len(g.Members) == 0 && (g.State == "Empty" || g.State == "Dead") {
				// The coordinator answered that nobody is in the group: whoever made no
				// call since the describe was sent is out.
				for m := range x.live {
					if x.active[m] < f.partner[i] {
						x.live[m] = false
					}
				}
				if x.members() == 0 {
					x.empty = i
				}
			}
		}
	default:
		if hb, ok := v.(history.Heartbeat); ok && e.Type == history.OK && hb.Protocol == history.ProtocolConsumer && hb.Epoch == 0 && hb.MemberID != "" {
			x.joins[hb.MemberID]++
		}
		if m, proto, got, ok := sessionCall(e, v); ok {
			x.call(i, m, proto, got, callMemberID(v))
			if c, _ := joinSyncHeartbeat(v); e.Type == history.Fail && notAMember[c.Error] && x.empty == noEvent && x.ever && x.members() == 0 {
				// The last call that kept the group from being proven empty was answered
				// that its caller is not a member (a joiner's JoinGroup in flight while the
				// last member's session ended, answered MEMBER_ID_REQUIRED).
				x.empty = i
			}
		}
	}
}

// notAMember are the errors with which Kafka answers a join, sync or heartbeat whose caller is
// not a member of the group; an error that may answer a member (REBALANCE_IN_PROGRESS,
// ILLEGAL_GENERATION, or one after a write that may have landed) is not one of them.
var notAMember = map[string]bool{"UNKNOWN_MEMBER_ID": true, "MEMBER_ID_REQUIRED": true, "FENCED_MEMBER_EPOCH": true}

// sessionCall says whether event e is a join, sync or heartbeat call, and gives its member, its
// protocol and the epoch the coordinator handed out when it is a successful completion.
func sessionCall(e *history.Event, v any) (string, string, int32, bool) {
	switch v := v.(type) {
	case history.Join:
		return pick(v.Member, e.Process), history.ProtocolClassic, v.Generation, true
	case history.Sync:
		return pick(v.Member, e.Process), history.ProtocolClassic, v.Generation, true
	case history.Heartbeat:
		if v.Protocol == history.ProtocolConsumer {
			return pick(v.Member, e.Process), v.Protocol, v.ResultEpoch, true
		}
		return pick(v.Member, e.Process), history.ProtocolClassic, v.Epoch, true
	}
	return "", "", 0, false
}

// firstEpoch is the generation or member epoch the first member of r's new group gets.
func firstEpoch(r groupReset) int32 {
	if r.protocol == history.ProtocolClassic {
		return r.first + 1
	}
	return r.first
}

// callMemberID is the member id a join, sync or heartbeat payload carries.
func callMemberID(v any) string {
	c, _ := joinSyncHeartbeat(v)
	return c.MemberID
}

// incAt is the incarnation of the group at position pos: how many restarts began at or before it.
// incCertainAt is the incarnation the group had certainly reached at pos:
// one begins at its join's invoke (incAt), but a read that began before
// that join was answered may still have been served by the incarnation
// before it.
func (f *facts) incCertainAt(pos int) int {
	n := 0
	for _, in := range f.incs {
		done := in.start
		if p := f.partner[in.start]; p > in.start {
			done = p
		}
		if done <= pos {
			n++
		}
	}
	return n
}

func (f *facts) incAt(pos int) int {
	n := 0
	for _, in := range f.incs {
		if in.start <= pos {
			n++
		}
	}
	return n
}
