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
//
// Only what Kafka wrote must not go back. A classic coordinator answers JoinGroup from memory and
// writes the generation with the group's record at SyncGroup, answering SyncGroup only once that
// write is committed; so a generation seen in JoinGroup or Heartbeat answers, with no SyncGroup at
// it answered ok before, is tentative: a coordinator that fails over (or a paused one that resumes
// after losing its partition and answers from state it never wrote) loses it, and the new one
// hands out the generation from the log again. Such a step back is excused with a note. Anything
// confirmed (an ok SyncGroup at the generation, a consumer heartbeat answer, an assignment, a
// description) going back is a violation, and so is a tentative generation once a SyncGroup at it
// succeeds.
func EpochMonotonic(events []history.Event, obs *history.Observations) Verdict {
	return epochMonotonic(build(events, obs), obs)
}

type epochSeen struct {
	epoch     int32
	pos       int    // position in the history, or -1 for a snapshot outside it
	label     string // where it was seen, for messages
	tentative bool   // a classic generation from a JoinGroup or Heartbeat answer (see EpochMonotonic)
}

func epochMonotonic(f *facts, obs *history.Observations) Verdict {
	v := newVerdict("EpochMonotonic")
	// synced[incarnation/generation] is the first position of an ok SyncGroup at that generation:
	// from there on Kafka has written the generation.
	synced := map[string]int{}
	for i := range f.ev {
		if val, ok := f.vals[i].(history.Sync); ok && f.ev[i].Type == history.OK && val.Generation > 0 {
			k := itoa(int64(f.incAt(i))) + "/" + itoa(int64(val.Generation))
			if _, seen := synced[k]; !seen {
				synced[k] = i
			}
		}
	}
	written := func(inc string, gen int32, before int) bool {
		p, ok := synced[inc+"/"+itoa(int64(gen))]
		return ok && p < before
	}
	last := map[string]epochSeen{}
	checked, forgotten, unwritten := 0, 0, 0
	var firstForgotten, firstUnwritten string
	see := func(key, what string, e int32, pos int, label string, tentative bool) {
		if e <= 0 {
			return
		}
		checked++
		// A new incarnation of the group numbers everything from the start again.
		inc := itoa(int64(f.incAt(pos)))
		key = inc + "/" + key
		prev, ok := last[key]
		if ok && e < prev.epoch {
			switch {
			case tentative:
				// Answered from memory: a coordinator that has lost its partition and not yet noticed
				// answers from state it can no longer write. Judged if a SyncGroup confirms it.
				unwritten++
				if firstUnwritten == "" {
					firstUnwritten = what + " " + itoa(int64(e)) + " at " + label + " after " + itoa(int64(prev.epoch)) + " at " + prev.label
				}
				return
			case prev.tentative && !written(inc, prev.epoch, pos):
				forgotten++
				if firstForgotten == "" {
					firstForgotten = what + " " + itoa(int64(prev.epoch)) + " at " + prev.label + ", then " + itoa(int64(e)) + " at " + label
				}
				last[key] = epochSeen{e, pos, label, tentative}
				return
			}
			v.fail([]int64{f.idx(prev.pos), f.idx(pos)}, "%s went back from %d (%s) to %d (%s)", what, prev.epoch, prev.label, e, label)
		}
		if !ok || e > prev.epoch {
			last[key] = epochSeen{e, pos, label, tentative}
		} else if e == prev.epoch {
			// The latest sighting is cited; the generation stays confirmed once it was.
			last[key] = epochSeen{e, pos, label, tentative && prev.tentative}
		}
	}
	at := func(pos int) string { return "event " + itoa(f.idx(pos)) }
	seeGroup := func(g *history.GroupDescription, pos int, label string) {
		if g == nil {
			return
		}
		see("group/generation", "group generation", g.Generation, pos, label, false)
		see("group/epoch", "group epoch", g.GroupEpoch, pos, label, false)
		see("group/assignment-epoch", "assignment epoch", g.AssignmentEpoch, pos, label, false)
		for _, m := range g.Members {
			see("described/"+m.MemberID, "member epoch of "+m.MemberID+" as described", m.MemberEpoch, pos, label, false)
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
				see("member/"+m, "member epoch of "+m, val.ResultEpoch, i, at(i), false)
			case e.Type == history.Invoke && val.Protocol != history.ProtocolConsumer:
				// A classic heartbeat says nothing back but its error; an ok means the generation sent
				// was current when it was sent, so it is ordered by its invoke.
				if p := f.partner[i]; p >= 0 && f.ev[p].Type == history.OK {
					see("member/"+m, "generation of "+m, val.Epoch, i, at(i), true)
				}
			}
		case history.Join:
			if e.Type == history.OK {
				m := pick(val.Member, e.Process)
				see("member/"+m, "generation of "+m, val.Generation, i, at(i), true)
			}
		case history.Sync:
			if e.Type == history.OK {
				m := pick(val.Member, e.Process)
				see("member/"+m, "generation of "+m, val.Generation, i, at(i), false)
			}
		case history.Assignment:
			if e.F != history.FLost && e.Type != history.Invoke {
				m := pick(val.Member, e.Process)
				see("member/"+m, "epoch of "+m, val.Epoch, i, at(i)+" ("+e.F+")", false)
			}
		case history.Describe:
			if e.Type == history.OK || (e.Type == history.Info && f.partner[i] < 0) {
				seeGroup(val.Group, i, at(i)+" (describe)")
			}
		}
	}
	seeSnapshots(len(f.ev))
	v.note("%d epochs checked over %d sequences", checked, len(last))
	if forgotten > 0 {
		v.note("%d step(s) back from a generation answered to JoinGroup or Heartbeat that no SyncGroup confirmed, so Kafka never wrote it and a failover forgot it: excused (first: %s)", forgotten, firstForgotten)
	}
	if unwritten > 0 {
		v.note("%d lower generation(s) answered to JoinGroup or Heartbeat and not confirmed by a SyncGroup before: not judged, as Kafka had not written them (first: %s)", unwritten, firstUnwritten)
	}
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
