package main

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/results"
)

const statsUsage = `Usage: groupquake stats DIR...

Reads run directories (a DIR that holds no plan.json is searched for run
directories below it) and prints, per scenario, how hard the nemesis pushed
the group during the workload phase: faults and membership changes per
minute, the share of the time under a fault or mid-rebalance, rebalances and
coordinator moves per run.

Exit status: 0, or 2 when no readable run directory is found.
`

// cmdStats measures the nemesis's pressure over run directories: what the
// README's table of scenario families is made from.
func cmdStats(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stats", statsUsage)
	roots, con, err := parseWithConsole(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(roots) == 0 {
		return badInput("stats needs at least one run directory (see 'groupquake stats -h')")
	}
	dirs, err := runDirs(roots)
	if err != nil {
		return err
	}
	var runs []check.Pressure
	var cut []string // the runs that never reached their final phase
	for _, d := range dirs {
		plan, err := run.LoadPlan(filepath.Join(d, run.PlanFile))
		if err != nil {
			con.Infof("skipping %s: %v", d, err)
			continue
		}
		loaded, err := history.Load(filepath.Join(d, run.HistoryFile))
		if err != nil {
			con.Infof("skipping %s: %v", d, err)
			continue
		}
		runs = append(runs, check.MeasurePressure(plan.Options.Scenario, loaded.Events))
		if !slices.ContainsFunc(check.Phases(loaded.Events), func(m check.PhaseMark) bool { return m.Name == history.PhaseFinal }) {
			cut = append(cut, d)
		}
	}
	if len(runs) == 0 {
		return badInput("none of the %d run directories under %s could be read (see above)", len(dirs), strings.Join(roots, " "))
	}
	if len(cut) > 0 {
		// They count as runs, measured up to where they stopped: say so.
		con.Infof("note: %d of the %d runs stopped before their end (interrupted, killed, or stopped by --bound), measured up to where they stopped: %s", len(cut), len(runs), strings.Join(cut, ", "))
	}
	return results.WritePressure(stdout, runs)
}
