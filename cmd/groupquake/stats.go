package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
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
	var dirs []string
	for _, root := range roots {
		if _, err := os.Stat(root); err != nil {
			return badInput("%s: %v", root, err)
		}
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == run.PlanFile {
				dirs = append(dirs, filepath.Dir(p))
			}
			return nil
		})
	}
	if len(dirs) == 0 {
		return badInput("no run directory (one with a %s) under %s: give directories that groupquake run wrote, or a folder above them", run.PlanFile, strings.Join(roots, " "))
	}
	var runs []check.Pressure
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
	}
	if len(runs) == 0 {
		return badInput("none of the %d run directories under %s could be read (see above)", len(dirs), strings.Join(roots, " "))
	}
	return results.WritePressure(stdout, runs)
}
