package run

import (
	"testing"

	"github.com/groupquake/groupquake/harness/check"
)

// TestJudgeMixedConversion judges the saved run of TestEmbedded broker-faults/mixed seed 7 (kept
// with the checkers' tests) as `groupquake check` does, with the coordinator's replay: the group
// was emptied by a node pause and converted by a classic member's JoinGroup, and every checker,
// RecoveredStateMatchesLog included, must hold.
func TestJudgeMixedConversion(t *testing.T) {
	t.Parallel()
	j, err := Judge("../check/testdata/mixed-conversion-seed-7")
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Report.Verdicts) != len(check.For(check.ConsumerGroups)) {
		t.Fatalf("want %d verdicts (one per consumer-group checker), got %d", len(check.For(check.ConsumerGroups)), len(j.Report.Verdicts))
	}
	for _, v := range j.Report.Verdicts {
		if !v.Holds || v.Skipped != "" {
			t.Errorf("%s: holds %v, skipped %q, violations %+v", v.Name, v.Holds, v.Skipped, v.Violations)
		}
	}
}
