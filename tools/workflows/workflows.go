// Package workflows checks the project's GitHub Actions workflows
// (.github/workflows): actionlint's checks, with the actionlint that go.mod
// pins as a tool, and the project's own rules that actionlint does not know
// (see Rules). Its test runs both over the workflows in the unit tier.
//
// Shellcheck: Lint takes the shellcheck to run the `run:` scripts through,
// and the test passes none, so that its verdict depends only on the pinned
// actionlint and the files, not on whether (or which) shellcheck the machine
// has. `go tool actionlint` runs the same lint by hand and adds shellcheck's
// findings when one is installed (GitHub's Ubuntu runners have one); the
// workflows were last found clean by both with shellcheck 0.9.0.
package workflows

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rhysd/actionlint"
)

// Files returns the workflow files in dir (*.yml and *.yaml), sorted.
func Files(dir string) ([]string, error) {
	var files []string
	for _, pat := range []string{"*.yml", "*.yaml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no workflow file (*.yml, *.yaml) in %s", dir)
	}
	slices.Sort(files)
	return files, nil
}

// Lint runs actionlint over the workflow files in dir and returns its
// findings as "file:line:col: message [rule]". shellcheck is the shellcheck
// executable the run: scripts go through; "" runs none (and no pyflakes
// either: the workflows hold no Python).
func Lint(dir, shellcheck string) ([]string, error) {
	files, err := Files(dir)
	if err != nil {
		return nil, err
	}
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{
		Shellcheck: shellcheck,
		LogWriter:  io.Discard,
	})
	if err != nil {
		return nil, err
	}
	errs, err := l.LintFiles(files, nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out, nil
}

// Parse reads the workflow file at path with actionlint's parser.
func Parse(path string) (*actionlint.Workflow, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	w, errs := actionlint.Parse(b)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %v", path, errs[0])
	}
	return w, nil
}

// Rules checks each workflow file in dir against the project's rules and
// returns what breaks them, as "file[:line]: what is wrong: what to do":
//
//   - the workflow sets permissions: and concurrency: (least privilege; a
//     schedule or a push never runs twice at once over the same runners);
//   - every job has timeout-minutes (GitHub's default is six hours);
//   - no run: script holds a ${{ }} expression: inputs, matrix values and
//     outputs reach scripts through env:, so that a value is data to the
//     shell and never code;
//   - no run: script calls sudo itself: `bash .ci/as-root CMD` runs CMD as
//     root in the runner's environment (sudo alone drops CI, the step
//     summary's path and the Makefile's variables) and hands build/ and Go's
//     caches back afterwards;
//   - a workflow that runs make or .ci/run sets IMAGE_SOURCE: official in its
//     env: (the runners are Ubuntu, where the local image build refuses
//     the host);
//   - a job that runs anything as root (the cluster tiers) uploads
//     build/runs with if: always(), so a failure's run directories are kept.
func Rules(dir string) ([]string, error) {
	files, err := Files(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		w, err := Parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, rules(filepath.Base(f), w)...)
	}
	return out, nil
}

func rules(file string, w *actionlint.Workflow) []string {
	var out []string
	bad := func(pos *actionlint.Pos, format string, args ...any) {
		at := file
		if pos != nil {
			at = fmt.Sprintf("%s:%d", file, pos.Line)
		}
		out = append(out, at+": "+fmt.Sprintf(format, args...))
	}
	if w.Permissions == nil {
		bad(nil, "no top-level permissions: give the jobs only what they need (contents: read)")
	}
	if w.Concurrency == nil {
		bad(nil, "no top-level concurrency: name a group so that two runs of this workflow do not overlap")
	}
	runsMake := false
	for _, id := range slices.Sorted(maps.Keys(w.Jobs)) {
		j := w.Jobs[id]
		if j.TimeoutMinutes == nil {
			bad(j.Pos, "job %s has no timeout-minutes: give it one that fits its steps", id)
		}
		asRoot, keepsRuns := false, false
		for _, s := range j.Steps {
			switch e := s.Exec.(type) {
			case *actionlint.ExecRun:
				if e.Run == nil {
					continue
				}
				script := e.Run.Value
				if strings.Contains(script, "${{") {
					bad(e.Run.Pos, "job %s: a run: script holds a ${{ }} expression: pass the value through env: and use it as \"$NAME\"", id)
				}
				for _, line := range strings.Split(script, "\n") {
					if slices.Contains(strings.Fields(line), "sudo") {
						bad(e.Run.Pos, "job %s: a run: script calls sudo: use `bash .ci/as-root CMD`, which keeps the runner's environment and hands the files back", id)
						break
					}
				}
				if strings.Contains(script, "make ") || strings.Contains(script, ".ci/run") {
					runsMake = true
				}
				if strings.Contains(script, ".ci/as-root") {
					asRoot = true
				}
			case *actionlint.ExecAction:
				if e.Uses == nil || !strings.HasPrefix(e.Uses.Value, "actions/upload-artifact@") {
					continue
				}
				path := e.Inputs["path"]
				if s.If != nil && strings.Contains(s.If.Value, "always()") && path != nil && path.Value != nil &&
					slices.Contains(strings.Fields(path.Value.Value), "build/runs") {
					keepsRuns = true
				}
			}
		}
		if asRoot && !keepsRuns {
			bad(j.Pos, "job %s runs a tier as root but keeps no run directory: add an actions/upload-artifact step with if: always() and build/runs in its path", id)
		}
	}
	if runsMake && envValue(w.Env, "IMAGE_SOURCE") != "official" {
		bad(nil, "runs make or .ci/run without IMAGE_SOURCE: official in the workflow's env: the runners are Ubuntu, where the local image build refuses the host")
	}
	return out
}

func envValue(e *actionlint.Env, name string) string {
	if e == nil {
		return ""
	}
	for _, v := range e.Vars {
		if v.Name != nil && v.Name.Value == name && v.Value != nil {
			return v.Value.Value
		}
	}
	return ""
}
