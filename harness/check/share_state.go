package check

import (
	"encoding/base64"
	"fmt"
	"slices"
	"sort"

	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/harness/history"
)

const NameShareStateMatchesLog = "ShareStateMatchesLog"

var _ = register(Checker{Name: NameShareStateMatchesLog, Place: 250, Groups: ShareGroups,
	Asserts: "replaying the share group's `__consumer_offsets` and `__share_group_state` records gives the state the brokers describe",
	judge:   func(in *judging) Verdict { return shareStateMatchesLog(in.sf, in.obs, in.plan) }})

// shareStateMatchesLog is the recovery oracle of share groups. Once every
// member has closed, the observer reads the group's share-group records of
// __consumer_offsets and every record of __share_group_state, and what the
// brokers describe (ShareGroupDescribe, DescribeShareGroupOffsets). The
// reference model (coordinator/sharegroup) decodes and replays the records
// as the group coordinator and the share coordinator do when they load
// them, and the checker requires:
//
//   - every record decodes (the codec agrees with what the brokers wrote);
//   - the replayed group has the epoch, assignment epoch and members the
//     group coordinator describes;
//   - every target assignment the coordinator wrote keeps the share
//     assignor's bound: no partition given to more than
//     ceil(members/partitions) members, partitions being those whose
//     share state is initialized then (SimpleAssignor);
//   - each workload partition's replayed share-partition start offset is
//     the one DescribeShareGroupOffsets gives (it reads the share
//     coordinator's state);
//   - every share-partition with state was initialized by the group
//     coordinator (ShareGroupStatePartitionMetadata);
//   - every accept, reject or gap the broker acknowledged in the history is
//     durable: the replayed state has the record below the start offset, or
//     acknowledged or archived (a broker answers an acknowledgement once its
//     state write is done, SharePartition.rollbackOrProcessStateUpdates).
func shareStateMatchesLog(sf *shareFacts, obs *history.Observations, plan history.Plan) Verdict {
	v := newVerdict(NameShareStateMatchesLog)
	if len(sf.f.phases[history.PhaseFinal]) == 0 {
		return skipped(v.Name, "the run never reached its final phase: the group's state was not read")
	}
	var rec *history.ShareRecovery
	if obs != nil {
		rec = obs.ShareRecovery
	}
	if rec == nil {
		v.fail(nil, "the observer read no share-group records after the members closed (observations.json has no share_recovery): the recovery oracle cannot judge the run")
		return v.done()
	}
	for _, e := range rec.Errors {
		v.fail(nil, "the observer could not read the group's state: %s", e)
	}
	if !rec.HasRecords {
		return v.done()
	}
	idOf := shareTopicIDs(rec, plan)
	g, assignments := replayShareGroup(v, rec, plan, idOf)
	describedShareGroup(v, rec, plan, g)
	byTP := replayShareState(v, rec, plan, idOf, g)
	checked := ackedDurable(v, sf, byTP)
	var keys []string
	for tp, s := range byTP {
		keys = append(keys, fmt.Sprintf("%s start %d (%d batches)", tp, s.StartOffset, len(s.Batches)))
	}
	sort.Strings(keys)
	v.note("%d share-group records and %d share state records read; %d target assignments checked against the share assignor's bound; %d acknowledged offsets checked for durability; replayed %v",
		len(rec.GroupRecords), len(rec.StateRecords), assignments, checked, keys)
	return v.done()
}

// shareTopicIDs maps the ids of the plan's topics to their names.
func shareTopicIDs(rec *history.ShareRecovery, plan history.Plan) map[[16]byte]string {
	idOf := map[[16]byte]string{}
	for _, t := range plan.Topics {
		if s, ok := rec.TopicIDs[t.Name]; ok {
			if b, err := base64.RawURLEncoding.DecodeString(s); err == nil && len(b) == 16 {
				var id [16]byte
				copy(id[:], b)
				idOf[id] = t.Name
			}
		}
	}
	return idOf
}

// replayShareGroup replays the group's share-group records, failing v on a
// record that does not decode and on a target assignment over the share
// assignor's bound; it returns the replayed group (nil when the records
// delete it or have none) and how many target assignments it checked.
func replayShareGroup(v *verdict, rec *history.ShareRecovery, plan history.Plan, idOf map[[16]byte]string) (*sharegroup.Group, int) {
	groups := sharegroup.Groups{}
	assignments, overShared := 0, 0
	for _, r := range rec.GroupRecords {
		gr, err := sharegroup.DecodeGroupRecord(r.Key, r.Value)
		if err != nil {
			v.fail(nil, "__consumer_offsets-%d offset %d does not decode as a share-group record: %v", r.Partition, r.Offset, err)
			continue
		}
		if gr.GroupID != plan.Group {
			continue
		}
		groups.Replay(gr)
		if gr.Type != sharegroup.TypeTargetAssignmentMetadata || gr.Value == nil {
			continue
		}
		g := groups[plan.Group]
		// The assignor shares only the partitions whose share state is
		// initialized (GroupMetadataManager hands it the group's
		// initializedTopics).
		assignable := 0
		for id, ps := range g.Initialized {
			if _, ours := idOf[id]; ours {
				assignable += len(ps)
			}
		}
		if assignable == 0 {
			continue
		}
		assignments++
		b := sharegroup.Bounds(len(g.Members), assignable)
		count := map[history.TP]int{}
		for _, m := range g.Members {
			for _, tp := range m.Target {
				for _, p := range tp.Partitions {
					count[history.TP{Topic: idOf[tp.TopicID], Partition: p}]++
				}
			}
		}
		for tp, n := range count {
			if n > b.DesiredSharing && overShared == 0 {
				v.fail(nil, "the target assignment of assignment epoch %d (__consumer_offsets-%d offset %d) gives %s to %d of %d members, more than the share assignor's ceil(members/partitions) = %d (%d partitions initialized), %d over it",
					g.AssignmentEpoch, r.Partition, r.Offset, tp, n, len(g.Members), b.DesiredSharing, assignable, n-b.DesiredSharing)
			}
			if n > b.DesiredSharing {
				overShared++
			}
		}
	}
	return groups[plan.Group], assignments
}

// describedShareGroup fails v where the replayed group g differs from what
// ShareGroupDescribe says: its epochs and its members.
func describedShareGroup(v *verdict, rec *history.ShareRecovery, plan history.Plan, g *sharegroup.Group) {
	d := rec.Describe
	switch {
	case d == nil:
		v.fail(nil, "the observer has no ShareGroupDescribe of the group")
	case d.Error != "" && g != nil:
		v.fail(nil, "ShareGroupDescribe failed (%s) while the records describe group %s at epoch %d", d.Error, plan.Group, g.Epoch)
	case g == nil && len(rec.GroupRecords) > 0:
		v.fail(nil, "the records delete group %s, while ShareGroupDescribe describes it at epoch %d", plan.Group, d.GroupEpoch)
	case g != nil:
		if g.Epoch != d.GroupEpoch || g.AssignmentEpoch != d.AssignmentEpoch {
			v.fail(nil, "the replayed group is at epoch %d, assignment epoch %d; ShareGroupDescribe says epoch %d, assignment epoch %d",
				g.Epoch, g.AssignmentEpoch, d.GroupEpoch, d.AssignmentEpoch)
		}
		described := map[string]int32{}
		for _, m := range d.Members {
			described[m.MemberID] = m.MemberEpoch
		}
		for id, m := range g.Members {
			e, ok := described[id]
			switch {
			case !ok:
				v.fail(nil, "the records keep member %s, which ShareGroupDescribe does not list", id)
			case m.HasCurrent && m.MemberEpoch != e:
				v.fail(nil, "member %s is at epoch %d in the records, %d in ShareGroupDescribe", id, m.MemberEpoch, e)
			}
			delete(described, id)
		}
		for id := range described {
			v.fail(nil, "ShareGroupDescribe lists member %s, which the records do not have", id)
		}
	}
}

// replayShareState replays the share coordinator's state records of the
// group, failing v on a record that does not decode, on state of a
// partition the group never initialized, and on a start offset
// DescribeShareGroupOffsets disagrees with; it returns the replayed state
// of each workload partition.
func replayShareState(v *verdict, rec *history.ShareRecovery, plan history.Plan, idOf map[[16]byte]string, g *sharegroup.Group) map[history.TP]*sharegroup.PartitionState {
	states := sharegroup.States{}
	for _, r := range rec.StateRecords {
		sr, err := sharegroup.DecodeStateRecord(r.Key, r.Value)
		if err != nil {
			v.fail(nil, "__share_group_state-%d offset %d does not decode: %v", r.Partition, r.Offset, err)
			continue
		}
		if sr.Key.GroupID == plan.Group {
			states.Replay(sr)
		}
	}
	byTP := map[history.TP]*sharegroup.PartitionState{}
	for k, s := range states {
		name, known := idOf[k.TopicID]
		if !known {
			continue
		}
		tp := history.TP{Topic: name, Partition: k.Partition}
		byTP[tp] = s
		if g != nil && !slices.Contains(g.Initialized[k.TopicID], k.Partition) {
			v.fail(nil, "%s has share state in __share_group_state, but the group's ShareGroupStatePartitionMetadata does not list it as initialized", tp)
		}
	}
	for _, s := range rec.Starts {
		tp := history.TP{Topic: s.Topic, Partition: s.Partition}
		if s.Error != "" {
			v.fail(nil, "DescribeShareGroupOffsets of %s failed: %s", tp, s.Error)
			continue
		}
		st := byTP[tp]
		replayed := int64(-1)
		if st != nil {
			replayed = st.StartOffset
		}
		if replayed != s.StartOffset {
			v.fail(nil, "%s: the replayed __share_group_state gives start offset %d; DescribeShareGroupOffsets says %d", tp, replayed, s.StartOffset)
		}
	}
	return byTP
}

// ackedDurable fails v for each accept, reject or gap the broker
// acknowledged that the replayed state byTP does not keep, and returns how
// many acknowledged offsets it checked.
func ackedDurable(v *verdict, sf *shareFacts, byTP map[history.TP]*sharegroup.PartitionState) int {
	checked, lost := 0, 0
	for _, op := range sf.acks {
		if op.outcome != "ok" || (op.ack.Type != history.AckAccept && op.ack.Type != history.AckReject && op.ack.Type != "gap") {
			continue
		}
		st := byTP[op.ack.TP()]
		for o := op.ack.First; o <= op.ack.Last; o++ {
			checked++
			if st == nil {
				lost++
				if lost == 1 {
					v.fail([]int64{sf.f.idx(op.inv), sf.f.idx(op.ans)}, "the broker acknowledged %s's %s of %s@%d, but __share_group_state has no state for %s",
						op.member, op.ack.Type, op.ack.TP(), o, op.ack.TP())
				}
				continue
			}
			b, below, ok := st.StateOf(o)
			if below || (ok && (b.DeliveryState == sharegroup.StateAcknowledged || b.DeliveryState == sharegroup.StateArchived)) {
				continue
			}
			lost++
			if lost <= 3 {
				what := "no state batch covers it"
				if ok {
					what = fmt.Sprintf("its state batch %d–%d is in delivery state %d at count %d", b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount)
				}
				v.fail([]int64{sf.f.idx(op.inv), sf.f.idx(op.ans)}, "the broker acknowledged %s's %s of %s@%d, but the replayed __share_group_state does not keep it: start offset %d, %s",
					op.member, op.ack.Type, op.ack.TP(), o, st.StartOffset, what)
			}
		}
	}
	if lost > 3 {
		v.note("%d acknowledged records in all are not kept by the replayed state", lost)
	}
	return checked
}
