// Command mutate measures how well a package's tests hold its rules: it applies small deliberate
// bugs (mutants) one at a time and runs a test command against each. A mutant the tests do not
// notice ("survived") is a rule that no test needs; every checker rule must have a history that
// fails because of that rule alone (docs/design.md, "What is checked").
//
// The module tree is never written: each mutant reaches the go command as a -overlay file (set
// through GOFLAGS), so an interrupted run leaves nothing to restore. Mutants come from a list file
// (tools/mutate/mutants/*.json, see Spec): generated ones for the packages it names and hand-written
// ones, with the mutants known to be equivalent listed beside them with the reason.
//
//	go run ./tools/mutate -mutants tools/mutate/mutants/check.json -min-score 0.95 -json build/mutate.json
//
// It exits 1 when the score (killed / (killed + survived)) is below -min-score (by default the
// list's min_score: the score last measured, so that it does not drop), 2 on a usage or
// setup error (for example when the tests fail without any mutant), 130 when interrupted.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// flags are mutate's command line.
type flags struct {
	list, test, jsonOut, only, root string
	minScore                        float64
	jobs                            int
	limit                           time.Duration
	listOnly                        bool
}

// parseFlags parses mutate's command line; on an error the flag package has
// said what was wrong on stderr.
func parseFlags(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.list, "mutants", "", "mutant list (JSON, see tools/mutate/spec.go); required")
	fs.StringVar(&f.test, "test", "", "test command run with sh -c at the module root (default: the list's \"test\")")
	fs.Float64Var(&f.minScore, "min-score", -1, "exit 1 when killed/(killed+survived) is below this fraction (0–1; default: the list's \"min_score\", else 0)")
	fs.StringVar(&f.jsonOut, "json", "", "write the machine-readable summary to this file (\"-\" for stdout)")
	fs.StringVar(&f.only, "run", "", "run only the mutants whose ID matches this regular expression")
	fs.IntVar(&f.jobs, "j", 1, "mutants run at once")
	fs.DurationVar(&f.limit, "timeout", 0, "time limit per mutant (default: 5× the unmutated run + 1m)")
	fs.BoolVar(&f.listOnly, "list", false, "print the mutants' IDs and exit without running anything")
	fs.StringVar(&f.root, "C", ".", "module root (the directory holding go.mod)")
	return f, fs.Parse(args)
}

// run is the mutate command: it loads and selects the mutants, times the
// unmutated test run, runs each mutant's tests and prints the summary; it
// returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mutate: "+format+"\n", a...)
		return 2
	}
	if o.list == "" {
		return fail("-mutants is required: for example -mutants tools/mutate/mutants/check.json")
	}
	if (o.minScore < 0 && o.minScore != -1) || o.minScore > 1 {
		return fail("-min-score %v is not a fraction: give a value from 0 to 1 (0.9 means 90%%)", o.minScore)
	}
	absRoot, err := filepath.Abs(o.root)
	if err != nil {
		return fail("%v", err)
	}
	if _, err := os.Stat(filepath.Join(absRoot, "go.mod")); err != nil {
		return fail("%s holds no go.mod: run from the module root or pass -C", absRoot)
	}
	spec, err := loadSpec(o.list)
	if err != nil {
		return fail("%v", err)
	}
	if o.minScore == -1 {
		o.minScore = spec.MinScore
	}
	ms, err := mutants(absRoot, spec)
	if err != nil {
		return fail("%v", err)
	}
	if ms, err = matching(ms, o.only); err != nil {
		return fail("-run: %v", err)
	}
	if o.listOnly {
		listMutants(stdout, ms)
		return 0
	}
	command := o.test
	if command == "" {
		command = spec.Test
	}
	if command == "" {
		return fail("no test command: give -test or set \"test\" in %s", o.list)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tmp, err := os.MkdirTemp("", "groupquake-mutate-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	r := &runner{root: absRoot, test: command, timeout: o.limit, tmp: tmp, log: stderr}
	base, err := r.baseline(ctx)
	if err != nil {
		return interruptedOr(ctx, stderr, fail, err)
	}
	if r.timeout == 0 {
		r.timeout = 5*base + time.Minute
	}
	fmt.Fprintf(stderr, "mutate: %d mutants; unmutated run took %s, limit per mutant %s\n", len(ms), base.Round(time.Millisecond), r.timeout)
	results, err := r.runAll(ctx, ms, o.jobs)
	if err != nil {
		return interruptedOr(ctx, stderr, fail, err)
	}
	s := summarize(command, results, o.minScore)
	table(stdout, s)
	if o.jsonOut != "" {
		if err := writeSummary(stdout, o.jsonOut, s); err != nil {
			return fail("%v", err)
		}
	}
	if !s.Pass {
		return 1
	}
	return 0
}

// matching keeps the mutants whose ID matches the regular expression only
// (all of them when only is empty).
func matching(ms []Mutant, only string) ([]Mutant, error) {
	if only == "" {
		return ms, nil
	}
	re, err := regexp.Compile(only)
	if err != nil {
		return nil, err
	}
	var kept []Mutant
	for _, m := range ms {
		if re.MatchString(m.ID) {
			kept = append(kept, m)
		}
	}
	return kept, nil
}

// listMutants prints each mutant's place and ID, and why it is equivalent
// where it is.
func listMutants(stdout io.Writer, ms []Mutant) {
	for _, m := range ms {
		eq := ""
		if m.Equivalent != "" {
			eq = "  [equivalent: " + m.Equivalent + "]"
		}
		fmt.Fprintf(stdout, "%s:%d  %s%s\n", m.File, m.Line, m.ID, eq)
	}
}

// interruptedOr is the exit status of a run that failed with err: 130 when
// it was interrupted (the module tree is restored before), else fail's.
func interruptedOr(ctx context.Context, stderr io.Writer, fail func(string, ...any) int, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "mutate: interrupted; the module tree was never changed")
		return 130
	}
	return fail("%v", err)
}

// writeSummary writes s as JSON to the file path, or to stdout for "-".
func writeSummary(stdout io.Writer, path string, s Summary) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if path == "-" {
		_, err = stdout.Write(data)
	} else {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	return nil
}

// mutants lists the spec's mutants: generated ones first (in file order), then hand-written ones;
// equivalence reasons are attached by ID, and an equivalence that names no mutant is an error, so a
// stale list is noticed.
func mutants(root string, spec *Spec) ([]Mutant, error) {
	var ms []Mutant
	for _, dir := range spec.Auto {
		g, err := generate(root, dir, spec.DeleteCalls)
		if err != nil {
			return nil, err
		}
		ms = append(ms, g...)
	}
	h, err := handMutants(root, spec.Mutants)
	if err != nil {
		return nil, err
	}
	ms = append(ms, h...)
	byID := map[string]int{}
	for i, m := range ms {
		if _, dup := byID[m.ID]; dup {
			return nil, fmt.Errorf("two mutants share the ID %q: rename a hand mutant", m.ID)
		}
		byID[m.ID] = i
	}
	for _, e := range spec.Equivalent {
		i, ok := byID[e.ID]
		if !ok {
			return nil, fmt.Errorf("equivalent mutant %q names no mutant (the code changed?): update or remove it; `mutate -list` prints the current IDs", e.ID)
		}
		if e.Why == "" {
			return nil, fmt.Errorf("equivalent mutant %q: say why it cannot change behaviour", e.ID)
		}
		ms[i].Equivalent = e.Why
	}
	return ms, nil
}
