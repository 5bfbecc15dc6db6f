package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/results"
)

// cmdStats measures the nemesis's pressure over run directories: what the
// README's table of scenario families is made from.
func cmdStats(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: groupquake stats DIR...

Reads run directories (a DIR that holds no plan.json is searched for run
directories below it) and prints, per scenario, how hard the nemesis pushed
the group during the workload phase: faults and membership changes per
minute, the share of the time under a fault or mid-rebalance, rebalances and
coordinator moves per run. Exit status: 0, or 2 when no run directory is found.`)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitError{exitBadDir, "stats needs at least one run directory"}
	}
	var dirs []string
	for _, root := range fs.Args() {
		if _, err := os.Stat(root); err != nil {
			return exitError{exitBadDir, fmt.Sprintf("%s: %v", root, err)}
		}
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == run.PlanFile {
				dirs = append(dirs, filepath.Dir(p))
			}
			return nil
		})
	}
	if len(dirs) == 0 {
		return exitError{exitBadDir, fmt.Sprintf("no run directory (one with a %s) under %v", run.PlanFile, fs.Args())}
	}
	var runs []results.Pressure
	for _, d := range dirs {
		plan, err := run.LoadPlan(filepath.Join(d, run.PlanFile))
		if err != nil {
			fmt.Fprintf(stderr, "groupquake: skipping %s: %v\n", d, err)
			continue
		}
		loaded, err := history.Load(filepath.Join(d, run.HistoryFile))
		if err != nil {
			fmt.Fprintf(stderr, "groupquake: skipping %s: %v\n", d, err)
			continue
		}
		runs = append(runs, results.MeasurePressure(plan.Options.Scenario, loaded.Events))
	}
	return results.WritePressure(stdout, runs)
}
