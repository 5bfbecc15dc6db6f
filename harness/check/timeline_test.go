package check

import (
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// TestOwnershipsEndWhereTheCheckersEndThem: a fenced member's ownership ends at the "fenced" event
// (not at a later "lost", which it reports only when it learns of it), an expired one at the
// session expiry, a clean leave is not a loss, and what is still owned stays open.
func TestOwnershipsEndWhereTheCheckersEndThem(t *testing.T) {
	h := newHist(t)
	h.phase(history.PhaseWarmup)
	aAssigned := h.assigned("a", 1, 0, 1)
	bAssigned := h.assigned("b", 1, 2)
	fenced := h.info("a", history.FFenced, history.Membership{Member: "a", Error: "FENCED_MEMBER_EPOCH"})
	h.lost("a", 1, 0, 1) // after the fence: ends nothing more
	cAssigned := h.assigned("c", 2, 0, 1)
	expired := h.info("b", history.FSessionExpired, history.Membership{Member: "b"})
	left := h.info("c", history.FLeft, history.Membership{Member: "c"})
	dAssigned := h.assigned("d", 3, 2)
	evs := h.events()

	got := Ownerships(evs)
	type want struct {
		tp         string
		member     string
		start, end int64
		endF       string
		lost       bool
	}
	wants := []want{
		{"t-0", "a", aAssigned, fenced, history.FFenced, true},
		{"t-0", "c", cAssigned, left, history.FLeft, false},
		{"t-1", "a", aAssigned, fenced, history.FFenced, true},
		{"t-1", "c", cAssigned, left, history.FLeft, false},
		{"t-2", "b", bAssigned, expired, history.FSessionExpired, true},
		{"t-2", "d", dAssigned, -1, "", false},
	}
	if len(got) != len(wants) {
		t.Fatalf("got %d ownerships, want %d: %+v", len(got), len(wants), got)
	}
	byIndex := map[int64]time.Duration{}
	for _, e := range evs {
		byIndex[e.Index] = e.Time
	}
	for i, w := range wants {
		g := got[i]
		if g.Partition.String() != w.tp || g.Member != w.member || g.StartEvent != w.start || g.EndEvent != w.end || g.EndF != w.endF || g.Lost != w.lost {
			t.Errorf("ownership %d = %+v, want %+v", i, g, w)
			continue
		}
		if g.Start != byIndex[w.start] {
			t.Errorf("ownership %d starts at %s, want the time of event %d (%s)", i, g.Start, w.start, byIndex[w.start])
		}
		if w.end >= 0 && g.End != byIndex[w.end] {
			t.Errorf("ownership %d ends at %s, want the time of event %d (%s)", i, g.End, w.end, byIndex[w.end])
		}
		if w.end < 0 && (!g.Open() || g.End != evs[len(evs)-1].Time) {
			t.Errorf("ownership %d should be open to the end (%s): %+v", i, evs[len(evs)-1].Time, g)
		}
	}
}
