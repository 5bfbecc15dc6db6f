package check

import (
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
// the checkers make, per partition (in the order partitions first appear) and by start.
func Ownerships(events []history.Event) []Ownership {
	f := build(events, nil) // the ownership intervals do not depend on the log
	var last time.Duration
	for i := range events {
		last = max(last, events[i].Time)
	}
	out := make([]Ownership, 0, len(f.intervals))
	for tp, ids := range f.byTP {
		for _, id := range ids {
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
