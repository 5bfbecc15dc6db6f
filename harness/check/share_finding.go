package check

import (
	"fmt"

	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/harness/history"
)

// shareAckErrorApplied sights FindingShareAckErrorApplied: an accept,
// reject or gap answered with an error Kafka may give after the state
// write landed (outcome "maybe", version.ShareAckMayHaveApplied), of a
// record its member held last (no acquisition of it answered after the
// acknowledgement was sent, the last one its own, below the delivery
// count limit), that no other acknowledgement may have settled, and that
// the final state shows settled as the acknowledgement would have: the
// replayed __share_group_state (the run's share_recovery) keeps it in the
// acknowledgement's state or below its start offset, or, without it, the
// final share-partition start offset is past it. Nothing but that
// acknowledgement can have settled such a record: a lapsed lock below the
// limit makes it available again.
func shareAckErrorApplied(f *facts) []Sighting {
	sf := f.shareFacts()
	if !sf.any {
		return nil
	}
	limit := int16(0)
	if f.plan.Share != nil {
		limit = f.plan.Share.DeliveryCountLimit
	}
	var byTP map[history.TP]*sharegroup.PartitionState
	starts := map[history.TP]history.ShareStart{}
	if f.obs != nil {
		if rec := f.obs.ShareRecovery; rec != nil && rec.HasRecords && len(rec.Errors) == 0 {
			byTP = replayShareState(newVerdict("scratch"), rec, f.plan, shareTopicIDs(rec, f.plan), nil)
		}
		for _, s := range f.obs.Final.ShareStarts {
			starts[history.TP{Topic: s.Topic, Partition: s.Partition}] = s
		}
	}
	var out []Sighting
	for i, op := range sf.acks {
		if op.outcome != "maybe" || (op.ack.Type != history.AckAccept && op.ack.Type != history.AckReject && op.ack.Type != "gap") {
			continue
		}
		for o := op.ack.First; o <= op.ack.Last; o++ {
			k := shareKey{op.ack.TP(), o}
			if !sf.heldLastBy(k, op, limit) || sf.otherSettling(k, i) {
				continue
			}
			how := settledAs(byTP, starts, k, op.ack.Type)
			if how == "" {
				continue
			}
			out = append(out, Sighting{Finding: FindingShareAckErrorApplied, Member: op.member,
				Events: []int64{f.idx(op.inv), f.idx(op.ans)},
				What: fmt.Sprintf("%s's %s of %s was answered %s by node %d (events %d–%d), yet it was never delivered again and %s",
					op.member, op.ack.Type, k, op.err, op.node, f.idx(op.inv), f.idx(op.ans), how)})
		}
	}
	return out
}

// heldLastBy says whether op's incarnation acquired k last, below the
// delivery count limit, and no acquisition of k was answered after op was
// sent.
func (sf *shareFacts) heldLastBy(k shareKey, op shareAckOp, limit int16) bool {
	ids := sf.byRecord[k]
	if len(ids) == 0 {
		return false
	}
	for _, id := range ids {
		if sf.acqs[id].ans > op.inv {
			return false
		}
	}
	last := sf.acqs[ids[len(ids)-1]]
	return last.id == op.id && (limit == 0 || last.rng.DeliveryCount < limit)
}

// otherSettling says whether an acknowledgement of k other than sf.acks[i]
// may have settled it.
func (sf *shareFacts) otherSettling(k shareKey, i int) bool {
	for j, op := range sf.acks {
		if j != i && op.mayHaveApplied() && op.final() && op.ack.Type != history.AckRelease && op.ack.Contains(k.tp, k.off) {
			return true
		}
	}
	return false
}

// settledAs says how the final state shows k settled as an
// acknowledgement of type typ leaves it, or "" when it does not.
func settledAs(byTP map[history.TP]*sharegroup.PartitionState, starts map[history.TP]history.ShareStart, k shareKey, typ string) string {
	want, name := sharegroup.StateArchived, "ARCHIVED"
	if typ == history.AckAccept {
		want, name = sharegroup.StateAcknowledged, "ACKNOWLEDGED"
	}
	if byTP != nil {
		st := byTP[k.tp]
		if st == nil {
			return ""
		}
		b, below, ok := st.StateOf(k.off)
		switch {
		case below:
			return fmt.Sprintf("the replayed __share_group_state has its start offset %d past it", st.StartOffset)
		case ok && b.DeliveryState == want:
			return fmt.Sprintf("the replayed __share_group_state keeps it %s at delivery count %d", name, b.DeliveryCount)
		}
		return ""
	}
	if s, ok := starts[k.tp]; ok && s.Error == "" && k.off < s.StartOffset {
		return fmt.Sprintf("the final share-partition start offset %d is past it", s.StartOffset)
	}
	return ""
}
