package check

import (
	"sort"

	"github.com/groupquake/groupquake/harness/history"
)

// EpochMonotonic checks that nothing the group numbers goes backwards: each member's generation or
// member epoch as the coordinator handed it out (join, sync and heartbeat responses, and the epoch
// the member reports with assigned/revoked), and the group epoch, assignment epoch, generation and
// per-member epochs in the observer's descriptions and the saved snapshots (each judged where it
// was taken in the history). Sentinels (0 for join,
// -1 leave, -2 static leave) are not epochs and are skipped. A coordinator that reloads an older
// state after a failover is what this catches.
func EpochMonotonic(events []history.Event, obs *history.Observations) Verdict {
	return epochMonotonic(build(events, obs), obs)
}

type epochSeen struct {
	epoch int32
	pos   int    // position in the history, or -1 for a snapshot outside it
	label string // where it was seen, for messages
}

func epochMonotonic(f *facts, obs *history.Observations) Verdict {
	v := newVerdict("EpochMonotonic")
	last := map[string]epochSeen{}
	checked := 0
	see := func(key, what string, e int32, pos int, label string) {
		if e <= 0 {
			return
		}
		checked++
		// A new incarnation of the group numbers everything from the start again.
		key = itoa(int64(f.incAt(pos))) + "/" + key
		prev, ok := last[key]
		if ok && e < prev.epoch {
			v.fail([]int64{f.idx(prev.pos), f.idx(pos)}, "%s went back from %d (%s) to %d (%s)", what, prev.epoch, prev.label, e, label)
		}
		if !ok || e >= prev.epoch {
			last[key] = epochSeen{e, pos, label}
		}
	}
	at := func(pos int) string { return "event " + itoa(f.idx(pos)) }
	// A classic generation is a sequence per membership (member id): Kafka's coordinator writes a
	// generation only with the group's record at SyncGroup, so a coordinator that fails over after
	// answering JoinGroup and before that write forgets both the member and the generation, and
	// hands the same generation numbers out again to the members that rejoin with new ids (seen on
	// 4.4.0 and 4.1.2 with a paused coordinator). The group's own generation, as described, stays
	// one sequence.
	classic := func(m, proto, memberID string) string {
		if proto == history.ProtocolConsumer || memberID == "" {
			return "member/" + m
		}
		return "member/" + m + "/" + memberID
	}
	seeGroup := func(g *history.GroupDescription, pos int, label string) {
		if g == nil {
			return
		}
		see("group/generation", "group generation", g.Generation, pos, label)
		see("group/epoch", "group epoch", g.GroupEpoch, pos, label)
		see("group/assignment-epoch", "assignment epoch", g.AssignmentEpoch, pos, label)
		for _, m := range g.Members {
			see("described/"+m.MemberID, "member epoch of "+m.MemberID+" as described", m.MemberEpoch, pos, label)
		}
	}
	// Snapshots are judged where they were taken, between the events around them: a checkpoint
	// after a restart that shows a newer epoch than a later describe is a step back.
	var snaps []history.Snapshot
	if obs != nil {
		snaps = obs.All()
		sort.SliceStable(snaps, func(a, b int) bool { return snapPos(f, snaps[a]) < snapPos(f, snaps[b]) })
	}
	next := 0
	seeSnapshots := func(upto int) {
		for ; next < len(snaps) && snapPos(f, snaps[next]) <= upto; next++ {
			s := snaps[next]
			seeGroup(s.Group, snapPos(f, s)-1, "snapshot "+s.Label)
		}
	}
	for i := range f.ev {
		seeSnapshots(i)
		e := &f.ev[i]
		switch val := f.vals[i].(type) {
		case history.Heartbeat:
			m := pick(val.Member, e.Process)
			switch {
			case e.Type == history.OK && val.Protocol == history.ProtocolConsumer:
				see("member/"+m, "member epoch of "+m, val.ResultEpoch, i, at(i))
			case e.Type == history.Invoke && val.Protocol != history.ProtocolConsumer:
				// A classic heartbeat says nothing back but its error; an ok means the generation sent
				// was current when it was sent, so it is ordered by its invoke.
				if p := f.partner[i]; p >= 0 && f.ev[p].Type == history.OK {
					see(classic(m, val.Protocol, val.MemberID), "generation of "+m, val.Epoch, i, at(i))
				}
			}
		case history.Join:
			if e.Type == history.OK {
				m := pick(val.Member, e.Process)
				see(classic(m, history.ProtocolClassic, val.MemberID), "generation of "+m, val.Generation, i, at(i))
			}
		case history.Sync:
			if e.Type == history.OK {
				m := pick(val.Member, e.Process)
				see(classic(m, history.ProtocolClassic, val.MemberID), "generation of "+m, val.Generation, i, at(i))
			}
		case history.Assignment:
			if e.F != history.FLost && e.Type != history.Invoke {
				m := pick(val.Member, e.Process)
				see(classic(m, val.Protocol, val.MemberID), "epoch of "+m, val.Epoch, i, at(i)+" ("+e.F+")")
			}
		case history.Describe:
			if e.Type == history.OK || (e.Type == history.Info && f.partner[i] < 0) {
				seeGroup(val.Group, i, at(i)+" (describe)")
			}
		}
	}
	seeSnapshots(len(f.ev))
	v.note("%d epochs checked over %d sequences", checked, len(last))
	v.Notes = append(v.Notes, f.incNotes...)
	return v.done()
}

// snapPos places a snapshot in the history: just after the event it was taken after, or at the end
// when unknown (the final snapshot).
func snapPos(f *facts, s history.Snapshot) int {
	if s.HistoryLen <= 0 {
		return len(f.ev)
	}
	return f.posOfIndex(s.HistoryLen)
}

func pick(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
