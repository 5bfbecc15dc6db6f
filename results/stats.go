package results

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/groupquake/groupquake/harness/check"
)

// WritePressure prints one row per scenario: the runs' mean pressure
// (check.MeasurePressure of each run).
func WritePressure(w io.Writer, runs []check.Pressure) error {
	by := map[string][]check.Pressure{}
	for _, r := range runs {
		by[r.Scenario] = append(by[r.Scenario], r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\truns\tfaults/min\tmembership changes/min\tunder a fault\tmid-rebalance\tunder a fault or mid-rebalance\trebalances/run\tcoordinator moves/run")
	for _, sc := range slices.Sorted(maps.Keys(by)) {
		rs := by[sc]
		var mins, faults, churn, uf, mr, busy, reb, moves float64
		for _, r := range rs {
			mins += r.Workload.Minutes()
			faults += float64(r.Faults)
			churn += float64(r.Churn)
			uf += r.UnderFault
			mr += r.MidRebalance
			busy += r.Busy
			reb += float64(r.Rebalances)
			moves += float64(r.CoordinatorMoves)
		}
		n := float64(len(rs))
		perMin := func(x float64) float64 {
			if mins == 0 {
				return 0
			}
			return x / mins
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.0f%%\t%.0f%%\t%.0f%%\t%.1f\t%.1f\n", sc, len(rs), perMin(faults), perMin(churn), 100*uf/n, 100*mr/n, 100*busy/n, reb/n, moves/n)
	}
	return tw.Flush()
}
