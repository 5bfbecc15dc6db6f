package check

import (
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

// TestNothingToJudgeIsNotAHold: a run interrupted in its warm-up before any
// member joined holds its phases and nothing else. Every checker that needs
// members, records or commits to judge says it had nothing to judge
// (skipped), none of them holds: "hold" there was a claim without evidence.
// The same history with a member that owned, consumed and committed, and a
// produced record, is judged by each of them (none skipped), and a violation
// is never turned into a skip.
func TestNothingToJudgeIsNotAHold(t *testing.T) {
	t.Parallel()
	wants := map[string]string{
		NameNoDoubleOwnership:        "no member owned a partition in the history",
		NameValidPartitionEpoch:      "no member owned a partition in the history",
		NameEpochMonotonic:           "no member and no read of the group gave an epoch in the history",
		NameFencedCommitsRejected:    "no commit was made in the history",
		NameCommittedOffsetMonotonic: "no commit was made and no committed offset was read (no observer read, no final observations)",
		NameNoLostRecords:            "no record was produced in the history",
		NameBoundedDuplicates:        "no record was consumed in the history",
		NameDurableCommits:           "no commit was made and no committed offset was read (no observer read, no final observations)",
		NameConsumedOnlyOwned:        "no record was consumed in the history",
		NameCommittedBeforeRevoked:   "no record was consumed in the history",
		NameCommitsFollowConsumed:    "no commit was made in the history",
	}
	t.Run("interrupted in its warm-up", func(t *testing.T) {
		h := newHist(t)
		h.phase(history.PhaseSetup)
		h.phase(history.PhaseWarmup)
		h.info("harness", history.FPhase, history.Phase{Name: history.PhaseTeardown, Stopped: "interrupted by SIGINT in its warmup phase at 1s"})
		rep := Judge(h.events(), nil, history.Plan{})
		seen := 0
		for _, v := range rep.Verdicts {
			why, ok := wants[v.Name]
			if !ok {
				continue
			}
			seen++
			if v.Skipped == "" {
				t.Errorf("%s holds with nothing to judge (notes %v): want it skipped, %q", v.Name, v.Notes, nothingPrefix+why)
				continue
			}
			mustJudgeNothing(t, v, why)
		}
		if seen != len(wants) {
			t.Errorf("judged %d of the %d checkers that need something to judge", seen, len(wants))
		}
	})
	t.Run("a member that owned, consumed and committed", func(t *testing.T) {
		h := newHist(t)
		h.phase(history.PhaseSetup)
		h.joinHb("a", 1)
		h.assigned("a", 1, 0)
		h.produce(0, 0)
		h.consume("a", 1, 0, 0)
		h.commit("a", 1, history.OK, "", 0, 1)
		h.revoked("a", 1, 0)
		for _, v := range All(h.events(), nil, history.Plan{}) {
			if _, ok := wants[v.Name]; ok && strings.HasPrefix(v.Skipped, nothingPrefix) {
				t.Errorf("%s says it had nothing to judge in a history that holds some: %s", v.Name, v.Skipped)
			}
		}
	})
	t.Run("a violation stands", func(t *testing.T) {
		// A commit of one member, accepted at an epoch it never held, and no record consumed:
		// CommitsFollowConsumed fails it, ConsumedOnlyOwned has nothing to judge.
		h := newHist(t)
		h.commit("a", 1, history.OK, "", 0, 5)
		v := CommitsFollowConsumed(h.events(), nil)
		if v.Holds || v.Skipped != "" {
			t.Fatalf("got %+v", v)
		}
		mustJudgeNothing(t, ConsumedOnlyOwned(h.events(), nil), "no record was consumed in the history")
	})
}
