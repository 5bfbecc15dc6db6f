package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/groupquake/groupquake/harness/run"
)

// No command writes over a file of an existing run directory it was not
// asked to rewrite (docs/interrupts.md): a run directory's files are
// written by the run itself and rewritten only by `groupquake check`
// (report.html; verdicts.json with --write) and `groupquake report`
// (report.html). These checks come before anything starts; they are
// exitBadInput errors that say what to do.

// outputFile refuses path, the output of flag, when it lies in a run
// directory, unless it is that run's report.html and mayReport names that
// run (report -o RUN/report.html RUN), or when it is a directory.
func outputFile(flag, path, mayReport string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return badInput("%s %s is a directory: give the file to write", flag, path)
	}
	r := run.RunDirOf(filepath.Dir(path))
	if r == "" {
		return nil
	}
	if abs, err := filepath.Abs(path); err == nil && mayReport != "" && filepath.Base(abs) == run.ReportFile && filepath.Dir(abs) == r {
		if own, err := filepath.Abs(mayReport); err == nil && own == r {
			return nil
		}
	}
	what := "a file"
	if _, err := os.Stat(path); err == nil {
		what = filepath.Base(path)
	}
	return badInput("%s %s: it would write %s inside the run directory %s, whose files only its run and 'groupquake check' write: give a file outside any run directory", flag, path, what, r)
}

// outputDir refuses dir, the output directory of flag, when it is a run
// directory or lies in one, is a file, or already holds one of files (the
// results of an earlier command of the same kind).
func outputDir(flag, dir string, files ...string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return badInput("%s %s is a file: give a new directory", flag, dir)
	}
	if run.IsRunDir(dir) {
		return badInput("%s %s already holds a run (%s), which this command must not write into: give a new directory", flag, dir, run.PlanFile)
	}
	if r := run.RunDirOf(dir); r != "" {
		return badInput("%s %s is inside the run directory %s, which this command must not write into: give a new directory", flag, dir, r)
	}
	var held []string
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			held = append(held, f)
		}
	}
	if len(held) > 0 {
		return badInput("%s %s already holds %s of an earlier run of this command: give a new directory", flag, dir, strings.Join(held, ", "))
	}
	return nil
}
