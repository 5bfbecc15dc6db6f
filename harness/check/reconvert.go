package check

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/harness/history"
)

// Finding kafka-reconvert-drops-pending-revocation (docs/findings.md): a
// consumer group with classic members is downgraded to a classic group and
// upgraded again. ClassicGroup.fromConsumerGroup writes each classic member
// with its target assignment, not with what it still holds, and
// ConsumerGroup.fromClassicGroup makes that the member's current
// assignment: a partition the classic member had yet to give up is then
// neither its own nor pending revocation, and the next epoch gives it to
// another member while the classic member still holds it.
//
// What shows it is __consumer_offsets (the latest snapshot that read it),
// read in log order (reconvertDrops), and the history's ownerships
// (reconvertMatch): the log must show every step, the history that the
// classic member held the partition from before the downgrade until the
// other member's ownership began. The log alone shows every drop, whether
// the partition went to another member or not (reconvertSightings).

// reconvertDrop is one partition a classic member held when the group was
// downgraded and no longer held, nor had to revoke, once it was upgraded.
type reconvertDrop struct {
	memberID string
	tp       history.TP
	// heldEpoch and heldOff: the member's last current assignment before the
	// downgrade that listed tp (assigned or pending revocation), its member
	// epoch and log offset; its target then (targetOff) did not list tp.
	heldEpoch          int64
	heldOff, targetOff int64
	// downOff and generation: the GroupMetadata the downgrade wrote, with
	// the member in it and tp not in its assignment.
	downOff, generation int64
	// upOff: the GroupMetadata tombstone of the upgrade; upEpoch the epoch
	// the consumer group was written at; afterOff the member's first current
	// assignment after it, which lists tp neither assigned nor pending.
	upOff, upEpoch, afterOff int64
	// toMember, toEpoch, toOff: the first target assignment from the
	// upgrade on (the upgrade's own included) that gives tp to another
	// member, the group epoch it is of; toMember "" when the log shows none.
	toMember string
	toEpoch  int64
	toOff    int64
}

func (d reconvertDrop) String() string {
	s := fmt.Sprintf("__consumer_offsets shows member id %s holding %s at member epoch %d (log offset %d) while its target no longer listed it (log offset %d); "+
		"the downgrade wrote the classic group's generation %d with the member, without it (log offset %d); the upgrade (from log offset %d, epoch %d) left it neither assigned nor pending revocation (log offset %d); ",
		d.memberID, d.tp, d.heldEpoch, d.heldOff, d.targetOff, d.generation, d.downOff, d.upOff, d.upEpoch, d.afterOff)
	if d.toMember == "" {
		return s + "no later target gave it to another member"
	}
	return s + fmt.Sprintf("the target of epoch %d gave it to %s (log offset %d)", d.toEpoch, d.toMember, d.toOff)
}

// memberAssignment is what one consumer-group assignment record of a member
// says, with its log offset.
type memberAssignment struct {
	tps   map[history.TP]bool
	epoch int64
	off   int64
}

// reconvertScan walks the group's records in log order for reconvertDrops.
type reconvertScan struct {
	name     func(raw any) (string, bool) // topic id → topic name
	cur      map[string]memberAssignment  // last current assignment (assigned ∪ pending), kept over its tombstone
	target   map[string]memberAssignment  // last target assignment, kept over its tombstone
	live     int16                        // key type of the live group metadata record (-1: none)
	epoch    int64                        // the consumer group's epoch (ConsumerGroupMetadata)
	classic  bool                         // a downgrade wrote the live classic group, with members
	upgraded bool                         // since the downgrade, the classic group was tombstoned
	// held: per member id of the downgraded group, the partitions it held
	// whose revocation was pending, with what showed it.
	held map[string][]reconvertDrop
	// out: every drop the upgrade showed, in log order; open: the indexes
	// in out of those waiting for the target that gives the partition away.
	out  []reconvertDrop
	open []int
}

// reconvertDrops returns, in the order the upgrades showed them, every
// partition the records show a classic member holding with its revocation
// pending when the group was downgraded, that the upgrade after it left
// neither assigned to it nor pending revocation, with the first target
// from the upgrade on that gave it to another member when there is one.
func reconvertDrops(obs *history.Observations, tps []history.TP) []reconvertDrop {
	var recs []history.Record
	for _, s := range obs.All() {
		if s.HasRecords {
			recs = s.Records
		}
	}
	if len(recs) == 0 {
		return nil
	}
	recs = slices.Clone(recs)
	slices.SortStableFunc(recs, func(a, b history.Record) int { return cmp.Compare(a.Offset, b.Offset) })
	s := &reconvertScan{name: topicNamer(obs.TopicIDs, tps), cur: map[string]memberAssignment{}, target: map[string]memberAssignment{},
		live: -1, held: map[string][]reconvertDrop{}}
	for _, r := range recs {
		if recordGroup(r) == obs.Group {
			s.record(r)
		}
	}
	return s.out
}

func (s *reconvertScan) record(r history.Record) {
	mid, _ := r.KeyString("memberid")
	switch r.KeyType {
	case history.RecordConsumerGroupMetadata:
		if r.Tombstone() {
			return
		}
		s.epoch, _ = r.ValueInt("epoch")
		if s.upgraded && s.live != history.RecordConsumerGroupMetadata {
			for id, ds := range s.held {
				for i := range ds {
					ds[i].upEpoch = s.epoch // the epoch the upgrade wrote the consumer group at
				}
				s.held[id] = ds
			}
		}
		s.live = history.RecordConsumerGroupMetadata
	case history.RecordGroupMetadata:
		s.groupMetadata(r)
	case history.RecordConsumerGroupTargetAssignmentMember:
		if r.Tombstone() {
			return
		}
		a := memberAssignment{tps: s.partitions(r, "topicpartitions"), epoch: s.epoch, off: r.Offset}
		s.target[mid] = a
		s.giveAway(mid, a)
	case history.RecordConsumerGroupCurrentMemberAssignment:
		if r.Tombstone() {
			if s.upgraded {
				delete(s.held, mid) // it left the upgraded group: nothing dropped
			}
			return
		}
		epoch, _ := r.ValueInt("memberepoch")
		a := memberAssignment{tps: s.partitions(r, "assignedpartitions"), epoch: epoch, off: r.Offset}
		for tp := range s.partitions(r, "partitionspendingrevocation") {
			a.tps[tp] = true
		}
		s.cur[mid] = a
		if s.upgraded {
			s.afterUpgrade(mid, a)
		}
	}
}

// groupMetadata takes a classic group's record: a downgrade when the live
// group was a consumer group, a new generation, or the tombstone that
// begins an upgrade.
func (s *reconvertScan) groupMetadata(r history.Record) {
	if r.Tombstone() {
		if s.live == history.RecordGroupMetadata && s.classic {
			s.upgraded = true
			for id, ds := range s.held {
				for i := range ds {
					ds[i].upOff = r.Offset
				}
				s.held[id] = ds
			}
		}
		s.live = -1
		return
	}
	members := classicMemberIDs(r)
	gen, _ := r.ValueInt("generation")
	if s.live == history.RecordConsumerGroupMetadata {
		// A downgrade: the consumer group's records were tombstoned and the
		// classic group written with its members.
		s.classic, s.upgraded, s.held = len(members) > 0, false, map[string][]reconvertDrop{}
		written := classicAssignments(r)
		for id := range members {
			cur, ok := s.cur[id]
			if !ok {
				continue
			}
			tgt, as := s.target[id], written[id]
			for _, tp := range sortedTPs(cur.tps) {
				if !tgt.tps[tp] && as != nil && !as[tp] {
					s.held[id] = append(s.held[id], reconvertDrop{memberID: id, tp: tp, heldEpoch: cur.epoch, heldOff: cur.off,
						targetOff: tgt.off, downOff: r.Offset, generation: gen})
				}
			}
		}
	} else {
		for id := range s.held {
			if !members[id] {
				delete(s.held, id) // it left the classic group
			}
		}
	}
	s.live = history.RecordGroupMetadata
}

// classicAssignments decodes the assignment of each member of a
// GroupMetadata value (a ConsumerProtocolAssignment, versions 0 to 3 alike
// up to user_data); a member whose bytes do not decode has none.
func classicAssignments(r history.Record) map[string]map[history.TP]bool {
	out := map[string]map[history.TP]bool{}
	for _, mm := range groupMembers(r) {
		var id string
		var raw []byte
		for mk, mv := range mm {
			switch strings.ToLower(mk) {
			case "memberid":
				id, _ = mv.(string)
			case "assignment":
				if s, ok := mv.(string); ok {
					raw, _ = base64.StdEncoding.DecodeString(s)
				}
			}
		}
		if as, ok := decodeAssignment(raw); ok && id != "" {
			out[id] = as
		}
	}
	return out
}

// decodeAssignment reads a ConsumerProtocolAssignment's partitions.
func decodeAssignment(b []byte) (map[history.TP]bool, bool) {
	out := map[history.TP]bool{}
	if len(b) < 6 {
		return nil, false
	}
	b = b[2:] // version
	n := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	for range max(n, 0) {
		if len(b) < 2 {
			return nil, false
		}
		l := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+l+4 {
			return nil, false
		}
		topic := string(b[2 : 2+l])
		b = b[2+l:]
		k := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if k < 0 || len(b) < 4*int(k) {
			return nil, false
		}
		for i := range int(k) {
			out[history.TP{Topic: topic, Partition: int32(binary.BigEndian.Uint32(b[4*i:]))}] = true
		}
		b = b[4*int(k):]
	}
	return out, true
}

// afterUpgrade compares a downgraded member's first current assignment
// after the upgrade with what it held.
func (s *reconvertScan) afterUpgrade(id string, a memberAssignment) {
	ds, ok := s.held[id]
	if !ok {
		return
	}
	delete(s.held, id)
	if a.epoch <= 0 {
		return // not the converted member: a join of its own
	}
	for _, d := range ds {
		if !a.tps[d.tp] {
			d.afterOff = a.off
			if d.toMember == "" {
				s.open = append(s.open, len(s.out))
			}
			s.out = append(s.out, d)
		}
	}
}

// giveAway notes target a, of member id, on the drops it gives the
// partition away for: from the upgrade on, the first target that gives the
// partition to another member, whether it came before the dropped member's
// first current assignment after the upgrade (the upgrade's own targets,
// written before the members' current assignments) or after it.
func (s *reconvertScan) giveAway(id string, a memberAssignment) {
	if s.upgraded {
		for mid, ds := range s.held {
			for i := range ds {
				if d := &ds[i]; d.toMember == "" && id != d.memberID && a.tps[d.tp] {
					d.toMember, d.toEpoch, d.toOff = id, a.epoch, a.off
				}
			}
			s.held[mid] = ds
		}
	}
	kept := s.open[:0]
	for _, i := range s.open {
		if d := &s.out[i]; id != d.memberID && a.tps[d.tp] {
			d.toMember, d.toEpoch, d.toOff = id, a.epoch, a.off
			continue
		}
		kept = append(kept, i)
	}
	s.open = kept
}

// partitions reads a consumer-group record's list of topic partitions
// (field name: AssignedPartitions, PartitionsPendingRevocation,
// TopicPartitions), naming topics by s.name; partitions of topics it cannot
// name are left out.
func (s *reconvertScan) partitions(r history.Record, name string) map[history.TP]bool {
	out := map[history.TP]bool{}
	var list []any
	for k, v := range r.Value {
		if strings.EqualFold(k, name) {
			list, _ = v.([]any)
		}
	}
	for _, t := range list {
		tm, _ := t.(map[string]any)
		var topic string
		var ok bool
		var ps []any
		for k, v := range tm {
			switch strings.ToLower(k) {
			case "topicid":
				topic, ok = s.name(v)
			case "partitions":
				ps, _ = v.([]any)
			}
		}
		if !ok {
			continue
		}
		for _, p := range ps {
			if n, ok := history.Int(p); ok {
				out[history.TP{Topic: topic, Partition: int32(n)}] = true
			}
		}
	}
	return out
}

// topicNamer names a record's topic id (16 numbers as the records' JSON
// has them, or Kafka's string form) by the observations' topic ids; without
// those, a run of one topic names every id with it.
func topicNamer(ids map[string]string, tps []history.TP) func(raw any) (string, bool) {
	byID := map[[16]byte]string{}
	for name, s := range ids {
		if b, err := base64.RawURLEncoding.DecodeString(s); err == nil && len(b) == 16 {
			byID[[16]byte(b)] = name
		}
	}
	only := ""
	if len(ids) == 0 {
		for i, tp := range tps {
			if i == 0 {
				only = tp.Topic
			} else if tp.Topic != only {
				only = ""
				break
			}
		}
	}
	return func(raw any) (string, bool) {
		if only != "" {
			return only, true
		}
		var id [16]byte
		switch v := raw.(type) {
		case string:
			b, err := base64.RawURLEncoding.DecodeString(v)
			if err != nil || len(b) != 16 {
				return "", false
			}
			id = [16]byte(b)
		case []any:
			if len(v) != 16 {
				return "", false
			}
			for i, x := range v {
				n, ok := history.Int(x)
				if !ok || n < 0 || n > 255 {
					return "", false
				}
				id[i] = byte(n)
			}
		default:
			return "", false
		}
		name, ok := byID[id]
		return name, ok
	}
}

// reconvertMatch says whether x, a member's ownership of a partition, and
// the ownership another member y began at epoch yEpoch (in incarnation
// yInc; yID its member id where the history says it) are the finding: x is
// a classic-protocol member's, begun at or before the member epoch the log
// shows it holding the partition at when the group was downgraded, of the
// member id the log shows dropped (reconvertDrops), and y's began at or
// after the epoch whose target gave the partition to another member than
// x's. It returns what the log shows.
func (f *facts) reconvertMatch(x *interval, y int, yEpoch int32, yInc int, yID string) (string, bool) {
	if x.protocol != history.ProtocolClassic || x.inc != yInc || x.member == y || f.obs == nil {
		return "", false
	}
	xID := memberIDAt(f.vals[x.start])
	if xID == "" || xID == yID {
		return "", false
	}
	for _, d := range f.reconvertDrops() {
		if d.toMember != "" && d.memberID == xID && d.tp == f.tps[x.tp] && int64(x.epoch) <= d.heldEpoch && int64(yEpoch) >= d.toEpoch {
			return d.String(), true
		}
	}
	return "", false
}

// reconvertDrops is reconvertDrops of the facts' observations, read once.
func (f *facts) reconvertDrops() []reconvertDrop {
	if f.drops == nil {
		if f.obs != nil {
			f.drops = reconvertDrops(f.obs, f.tps)
		}
		if f.drops == nil {
			f.drops = []reconvertDrop{}
		}
	}
	return f.drops
}

// reconvertSightings sights FindingReconvertDropsRevocation from
// __consumer_offsets alone: one sighting per partition a downgrade and an
// upgrade took from a classic member without a revocation
// (reconvertDrops), whether a later target gave it to another member or
// not, and whether or not a violation followed (the holder may have let it
// go, or crashed, before the other member took it). The sighting names the
// member whose calls carry the member id, when the history has one; the
// log offsets it cites are in What, there being no event to cite.
func reconvertSightings(f *facts) []Sighting {
	var out []Sighting
	for _, d := range f.reconvertDrops() {
		out = append(out, Sighting{Finding: FindingReconvertDropsRevocation, Member: f.nameOfMemberID(d.memberID), What: d.String()})
	}
	return out
}

// nameOfMemberID is the member whose first assignment or group call in the
// history carries member id id, "" when none does.
func (f *facts) nameOfMemberID(id string) string {
	for i, v := range f.vals {
		if memberIDAt(v) != id {
			continue
		}
		member := ""
		switch c := v.(type) {
		case history.Assignment:
			member = c.Member
		case history.GroupCall:
			member = c.Call().Member
		}
		return memberName(member, f.ev[i].Process)
	}
	return ""
}

// memberIDAt is the member id an assignment fact or a group call carries.
func memberIDAt(v any) string {
	if a, ok := v.(history.Assignment); ok {
		return a.MemberID
	}
	return carriedMemberID(v)
}

// reconvertOverlap: a's side of a NoDoubleOwnership overlap with b is the
// finding's classic member (reconvertMatch).
func reconvertOverlap(f *facts, a, b *interval, _ int) (string, bool) {
	return f.reconvertMatch(a, b.member, b.epoch, b.inc, memberIDAt(f.vals[b.start]))
}

// reconvertPair: one owner of a ValidPartitionEpoch conflict, x, is the
// finding's classic member, holding the partition since before the
// downgrade through an ownership that was still open when it registered
// the pair, and the other, y, is the member the partition went to.
func reconvertPair(f *facts, c pairConflict) (string, bool) {
	for _, o := range [][2]pairOwner{{c.first, c.second}, {c.second, c.first}} {
		x, y := o[0], o[1]
		for _, id := range f.byTP[c.tp] {
			iv := &f.intervals[id]
			if iv.member != x.member || iv.start > x.pos || iv.end <= x.pos {
				continue
			}
			if why, ok := f.reconvertMatch(iv, y.member, c.epoch, c.inc, memberIDAt(f.vals[y.pos])); ok {
				return why, true
			}
		}
	}
	return "", false
}
