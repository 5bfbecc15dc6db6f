package sharegroup

import (
	"cmp"
	"slices"
	"sort"
)

// PartitionState is a share-partition's persisted state as the share
// coordinator holds it after replaying __share_group_state
// (ShareCoordinatorShard.replay): the last snapshot with every later
// update merged in.
type PartitionState struct {
	SnapshotEpoch, StateEpoch, LeaderEpoch int32
	// StartOffset is the share-partition start offset: every offset below
	// it is settled.
	StartOffset           int64
	DeliveryCompleteCount int32
	// Batches are the states of offsets at or past StartOffset,
	// non-overlapping and sorted.
	Batches []StateBatch
}

// StateOf returns the delivery state and count the persisted state gives
// offset o: below the start offset it is settled (archived or
// acknowledged, ok false); past it, the batch covering it, or ok false
// when none does (never delivered, or delivered and not persisted since).
func (s PartitionState) StateOf(o int64) (b StateBatch, below, ok bool) {
	if o < s.StartOffset {
		return StateBatch{}, true, false
	}
	i := sort.Search(len(s.Batches), func(i int) bool { return s.Batches[i].LastOffset >= o })
	if i < len(s.Batches) && s.Batches[i].FirstOffset <= o {
		return s.Batches[i], false, true
	}
	return StateBatch{}, false, false
}

// States replays __share_group_state records into each share-partition's
// state.
type States map[StateKey]*PartitionState

// Replay applies one record: a snapshot replaces the share-partition's
// state (a tombstone deletes it), an update is merged into it
// (ShareCoordinatorShard.handleShareSnapshot, handleShareUpdate, merge).
func (st States) Replay(r StateRecord) {
	switch v := r.Value.(type) {
	case nil:
		if r.Type == TypeShareSnapshot {
			delete(st, r.Key)
		}
	case *SnapshotValue:
		prev := st[r.Key]
		s := &PartitionState{SnapshotEpoch: v.SnapshotEpoch, StateEpoch: v.StateEpoch, LeaderEpoch: v.LeaderEpoch,
			StartOffset: v.StartOffset, DeliveryCompleteCount: v.DeliveryCompleteCount, Batches: slices.Clone(v.StateBatches)}
		if prev != nil {
			// The shard keeps the highest leader and state epochs seen.
			s.LeaderEpoch, s.StateEpoch = max(s.LeaderEpoch, prev.LeaderEpoch), max(s.StateEpoch, prev.StateEpoch)
		}
		st[r.Key] = s
	case *UpdateValue:
		prev := st[r.Key]
		if prev == nil {
			st[r.Key] = &PartitionState{SnapshotEpoch: v.SnapshotEpoch, LeaderEpoch: v.LeaderEpoch, StartOffset: v.StartOffset,
				DeliveryCompleteCount: v.DeliveryCompleteCount, Batches: Combine(nil, v.StateBatches, v.StartOffset)}
			return
		}
		start := prev.StartOffset
		if v.StartOffset != -1 {
			start = v.StartOffset
		}
		leader := prev.LeaderEpoch
		if v.LeaderEpoch != -1 {
			leader = max(leader, v.LeaderEpoch)
		}
		st[r.Key] = &PartitionState{SnapshotEpoch: prev.SnapshotEpoch, StateEpoch: prev.StateEpoch, LeaderEpoch: leader,
			StartOffset: start, DeliveryCompleteCount: v.DeliveryCompleteCount, Batches: Combine(prev.Batches, v.StateBatches, start)}
	}
}

// Combine is PersisterStateBatchCombiner.combineStateBatches (4.4): the
// batches so far and the new ones, clipped at start (-1: no clipping),
// merged so that on every offset the batch with the highest delivery
// count wins, then the highest delivery state; adjacent ranges of one
// (state, count) coalesce.
func Combine(soFar, next []StateBatch, start int64) []StateBatch {
	var in []StateBatch
	for _, src := range [][]StateBatch{soFar, next} {
		for _, b := range src {
			switch {
			case start != -1 && b.LastOffset < start:
			case start == -1 || b.FirstOffset >= start:
				in = append(in, b)
			default:
				b.FirstOffset = start
				in = append(in, b)
			}
		}
	}
	if len(in) <= 1 {
		return in
	}
	type event struct {
		at    int64
		begin bool
		b     StateBatch
	}
	var evs []event
	for _, b := range in {
		evs = append(evs, event{b.FirstOffset, true, b}, event{b.LastOffset + 1, false, b})
	}
	slices.SortStableFunc(evs, func(x, y event) int {
		if c := cmp.Compare(x.at, y.at); c != 0 {
			return c
		}
		switch {
		case x.begin == y.begin:
			return 0
		case !x.begin:
			return -1 // ends before begins at one offset
		}
		return 1
	})
	type prio struct {
		count int16
		state int8
	}
	better := func(a, b prio) bool { return a.count > b.count || (a.count == b.count && a.state > b.state) }
	active := map[prio]int{}
	var out []StateBatch
	var open *prio
	var from int64
	emit := func(to int64, w prio) {
		if n := len(out); n > 0 && out[n-1].LastOffset+1 == from && out[n-1].DeliveryState == w.state && out[n-1].DeliveryCount == w.count {
			out[n-1].LastOffset = to
			return
		}
		out = append(out, StateBatch{FirstOffset: from, LastOffset: to, DeliveryState: w.state, DeliveryCount: w.count})
	}
	for i := 0; i < len(evs); {
		at := evs[i].at
		if open != nil && at > from {
			emit(at-1, *open)
		}
		for ; i < len(evs) && evs[i].at == at; i++ {
			p := prio{evs[i].b.DeliveryCount, evs[i].b.DeliveryState}
			if evs[i].begin {
				active[p]++
			} else if active[p]--; active[p] == 0 {
				delete(active, p)
			}
		}
		open = nil
		for p := range active {
			if open == nil || better(p, *open) {
				q := p
				open = &q
			}
		}
		from = at
	}
	return out
}
