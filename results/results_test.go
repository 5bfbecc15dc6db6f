package results

import (
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/check/checktest"
)

// ev is one event of a hand-written history; sample is the run harness/check's tests measure.
var (
	ev     = checktest.Event
	sample = checktest.Sample
)

func verdicts() []check.Verdict {
	return []check.Verdict{
		{Name: "NoDoubleOwnership", Holds: true, Notes: []string{"checked 2 partitions"}},
		{Name: "NoLostRecords", Holds: false, Violations: []check.Violation{{Message: "record 7 of t-0 never consumed", EventIndexes: []int64{3, 8}}}},
		{Name: "RecoveredStateMatchesLog", Holds: true, Skipped: "no replay function"},
	}
}
