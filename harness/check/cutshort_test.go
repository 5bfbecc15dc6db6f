package check

import (
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

// TestCutShortHistoryRules: a history that ends before its observations is judged up to where it
// ends: a snapshot taken after events the history does not hold is not judged against it, what
// the recorded events prove still fails, and what the loader set aside fails HistoryWellFormed.
func TestCutShortHistoryRules(t *testing.T) {
	t.Parallel()
	// a consumes offset 4 and commits 5 (acknowledged at event 3); the lost part of the history
	// committed 9, which the final snapshot, taken after event 99, shows.
	cut := func(t *testing.T) (*hist, *history.Observations) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.consume("a", 1, 0, 4)
		h.commit("a", 1, history.OK, "", 0, 5)
		g := &history.GroupDescription{Protocol: history.ProtocolConsumer, State: "Stable", GroupEpoch: 1}
		h.describe(g, off(0, 5))
		obs := &history.Observations{Group: "g", Final: history.Snapshot{Label: "final", HistoryLen: 100,
			HasCommitted: true, Committed: []history.OffsetAt{off(0, 9)}, Group: g,
			HasRecords: true, Records: []history.Record{offsetRec(3, 0, 9), offsetRec(4, 0, 3)}}}
		return h, obs
	}
	t.Run("a snapshot beyond the history's end is not judged against it", func(t *testing.T) {
		h, obs := cut(t)
		for _, v := range []Verdict{DurableCommits(h.events(), obs), CommittedOffsetMonotonic(h.events(), obs), EpochMonotonic(h.events(), obs)} {
			mustHold(t, v)
			if !strings.Contains(notesOf(v), "taken after events the history does not hold (it ends at event 5)") {
				t.Fatalf("%s notes: %v", v.Name, v.Notes)
			}
		}
	})
	t.Run("the same snapshot placed at the history's end is judged", func(t *testing.T) {
		h, obs := cut(t)
		obs.Final.HistoryLen = 6
		mustFailOnce(t, DurableCommits(h.events(), obs), []int64{3}, "final snapshot shows t-0 at offset 9")
		if v := CommittedOffsetMonotonic(h.events(), obs); v.Holds || !strings.Contains(v.Violations[0].Message, "go back from 9 to 3") {
			t.Fatalf("got %+v", v)
		}
	})
	t.Run("what the recorded events prove still fails", func(t *testing.T) {
		h, obs := cut(t)
		inv, done := h.commit("a", 1, history.OK, "", 0, 2) // back from 5, in the recorded part
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), obs), []int64{3, inv, done}, "went back from 5")
		c := h.consume("a", 1, 0, 3)
		again := h.consume("a", 1, 0, 3)
		mustFailOnce(t, BoundedDuplicates(h.events(), obs), []int64{c, again}, "within one ownership")
	})
	t.Run("what the loader set aside fails HistoryWellFormed, and nothing else", func(t *testing.T) {
		h, obs := cut(t)
		flaws := []history.Flaw{{Index: 6, Message: "events 6 to 6 are missing: no line holds them"}}
		vs := All(h.events(), obs, history.Plan{}, WithFlaws(flaws, 94))
		for _, v := range vs {
			switch {
			case v.Name == "HistoryWellFormed":
				if x := mustCite(t, v, 6); !strings.Contains(x.Message, "events 6 to 6 are missing") || !strings.Contains(notesOf(v), "94 complete events") {
					t.Fatalf("HistoryWellFormed: %+v", v)
				}
			case !v.Holds:
				t.Errorf("%s: %+v", v.Name, v.Violations)
			}
		}
	})
}
