package check

import (
	"cmp"
	"slices"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// Ownership is one stretch during which a member owned a partition, exactly as the checkers see
// it: it begins at the member's "assigned" and ends at its "revoked" or "lost", or at the "fenced",
// "session-expired" or "left" that ended every ownership the member held. The report draws these,
// so a timeline never shows an ownership the checkers had already ended (or the reverse).
type Ownership struct {
	Partition history.TP
	Member    string
	// Protocol is the one the member last reported when the ownership began.
	Protocol string
	// Epoch is the generation or member epoch the member held when the ownership began.
	Epoch      int32
	Start, End time.Duration
	StartEvent int64
	// EndEvent is the event that ended the ownership, -1 when it was still owned when the
	// history ended (End is then the last event's time).
	EndEvent int64
	// EndF is the F of the event that ended it (revoked, lost, fenced, session-expired, left);
	// empty while open.
	EndF string
	// Lost says the ownership ended without a clean revocation: lost, fenced or expired.
	Lost bool
}

// Open reports whether the ownership had not ended when the history did.
func (o Ownership) Open() bool { return o.EndEvent < 0 }

// Ownerships returns every ownership interval of the history, from the same pass over the history
// the checkers make, per partition (in the order of their first ownership) and by start.
func Ownerships(events []history.Event) []Ownership {
	var last time.Duration
	for i := range events {
		last = max(last, events[i].Time)
	}
	return OwnershipsUntil(events, last)
}

// ShapesOwnership reports whether the ownership intervals depend on e: the completions that
// assign, revoke or lose partitions and the membership ends (they open and close intervals), and
// the successful heartbeats, joins and syncs (they set the epoch an interval begins at). Every other
// event, and the calls of these still in flight, only feeds the other checkers' facts, so
// OwnershipsUntil over the events this keeps, with the history's end, is Ownerships over all of
// them: a report streaming a history of millions of events keeps only these.
func ShapesOwnership(e *history.Event) bool {
	switch e.F {
	case history.FAssigned, history.FRevoked, history.FLost, history.FFenced, history.FSessionExpired, history.FLeft:
		return e.Type == history.OK || e.Type == history.Info
	case history.FHeartbeat, history.FJoin, history.FSync:
		return e.Type == history.OK
	}
	return false
}

// OwnershipsUntil is Ownerships for a history that ends at end: an ownership still open is drawn to
// there. events may be the whole history or only the events ShapesOwnership keeps.
func OwnershipsUntil(events []history.Event, end time.Duration) []Ownership {
	f := build(events, nil) // the ownership intervals do not depend on the log
	last := end
	out := make([]Ownership, 0, len(f.intervals))
	// Partitions in the order of their first ownership (then by name), which the events that
	// ShapesOwnership drops cannot change: the pass registers a partition at its first mention,
	// a consumption or a commit included.
	var tps []int
	for tp, ids := range f.byTP {
		if len(ids) > 0 {
			tps = append(tps, tp)
		}
	}
	slices.SortFunc(tps, func(a, b int) int {
		ta, tb := f.tps[a], f.tps[b]
		return cmp.Or(cmp.Compare(f.intervals[f.byTP[a][0]].start, f.intervals[f.byTP[b][0]].start),
			cmp.Compare(ta.Topic, tb.Topic), cmp.Compare(ta.Partition, tb.Partition))
	})
	for _, tp := range tps {
		for _, id := range f.byTP[tp] {
			iv := &f.intervals[id]
			o := Ownership{
				Partition: f.tps[tp], Member: f.mems[iv.member], Protocol: iv.protocol, Epoch: iv.epoch,
				Start: f.ev[iv.start].Time, StartEvent: f.idx(iv.start), End: last, EndEvent: -1,
			}
			if iv.end < len(f.ev) {
				e := &f.ev[iv.end]
				o.End, o.EndEvent, o.EndF, o.Lost = e.Time, e.Index, e.F, iv.endKind == endLost
			}
			out = append(out, o)
		}
	}
	return out
}
