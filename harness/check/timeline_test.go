package check

import (
	"fmt"
	"slices"
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

// TestShapesOwnershipKeepsEveryOwnership: the ownership intervals over only the events
// ShapesOwnership keeps (what a report streaming a long history holds) are the intervals over the
// whole history, on generated histories of both protocols (fenced zombies, rebalances, faults),
// a recorded mixed-protocol run and the fenced/expired/left fixture above.
func TestShapesOwnershipKeepsEveryOwnership(t *testing.T) {
	t.Parallel()
	type hist struct {
		name   string
		events []history.Event
	}
	var hs []hist
	for _, cfg := range simConfigs(4) {
		events, _, _ := genHistory(t, cfg)
		hs = append(hs, hist{fmt.Sprintf("sim seed %d %s", cfg.seed, cfg.protocol), events})
	}
	loaded, err := history.Load(mixedConversion + "/history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	hs = append(hs, hist{mixedConversion, loaded.Events})
	h := newHist(t)
	h.consume("b", 0, 2, 0) // mentions t-2 first: the partitions' order must not depend on it
	h.assigned("a", 1, 0, 1)
	h.assigned("b", 1, 2)
	h.hb("b", 2, history.OK)
	h.consume("a", 1, 0, 0)
	h.commit("a", 1, history.OK, "", 0, 1)
	h.info("a", history.FFenced, history.Membership{Member: "a", Error: "FENCED_MEMBER_EPOCH"})
	h.lost("a", 1, 0, 1)
	h.assigned("c", 2, 0, 1)
	h.info("b", history.FSessionExpired, history.Membership{Member: "b"})
	h.hb("d", 5, history.OK)
	h.hb("d", 6, history.Fail)
	h.assigned("d", 0, 2) // no epoch of its own: the ownership begins at the heartbeat's
	hs = append(hs, hist{"fixture", h.events()})

	for _, hc := range hs {
		all := Ownerships(hc.events)
		var kept []history.Event
		var end time.Duration
		for i := range hc.events {
			end = max(end, hc.events[i].Time)
			if ShapesOwnership(&hc.events[i]) {
				kept = append(kept, hc.events[i])
			}
		}
		if len(all) == 0 || len(kept) >= len(hc.events) {
			t.Fatalf("%s: %d ownerships, %d of %d events kept: the case proves nothing", hc.name, len(all), len(kept), len(hc.events))
		}
		got := OwnershipsUntil(kept, end)
		if !slices.Equal(got, all) {
			t.Errorf("%s: over the %d kept events of %d:\n got %+v\nwant %+v", hc.name, len(kept), len(hc.events), got, all)
		}
	}
}
