package workflows

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/kinds"
)

// dir is the project's workflows, from this package's directory.
var dir = filepath.Join("..", "..", ".github", "workflows")

// TestWorkflows runs actionlint (without shellcheck: see the package
// comment) and the project's rules over .github/workflows.
func TestWorkflows(t *testing.T) {
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ci.yml", "nightly.yml", "versions.yml"} {
		if !slices.Contains(files, filepath.Join(dir, want)) {
			t.Errorf("no %s among %v", want, files)
		}
	}
	for _, m := range findings(t, dir) {
		t.Error(m)
	}
}

// findings are what actionlint (its messages marked so) and the project's
// rules report over the workflows in d.
func findings(t *testing.T, d string) []string {
	t.Helper()
	lint, err := Lint(d, "")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := Rules(d)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range lint {
		lint[i] = "actionlint: " + m
	}
	return append(lint, rules...)
}

// TestChecksBite lints a workflow that breaks every rule and one of
// actionlint's checks: each must be reported.
func TestChecksBite(t *testing.T) {
	got := strings.Join(findings(t, filepath.Join("testdata", "bad")), "\n")
	for _, want := range []string{
		`unsafe.yml:26:24: "github.event.pull_request.title" is potentially untrusted`, // actionlint's
		"unsafe.yml: no top-level permissions",
		"unsafe.yml: no top-level concurrency",
		"unsafe.yml:10: job hunt has no timeout-minutes",
		"unsafe.yml:15: job hunt: a run: script holds a ${{ }} expression",
		"unsafe.yml:15: job hunt: a run: script calls sudo",
		"unsafe.yml:26: job typo: a run: script holds a ${{ }} expression",
		"unsafe.yml:10: job hunt runs a tier as root but keeps no run directory",
		"unsafe.yml: runs make or .ci/run without IMAGE_SOURCE: official",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in the findings:\n%s", want, got)
		}
	}
	if strings.Contains(got, "job typo has no timeout-minutes") {
		t.Errorf("a job with timeout-minutes was reported without:\n%s", got)
	}
}

// TestUpgradeMatrix checks nightly.yml's rolling upgrades against
// coordinator/version: every pair is one Kafka allows, and every release line
// older than the newest served release is upgraded to it, so a newly served
// release or line shows up here until the matrix names it.
func TestUpgradeMatrix(t *testing.T) {
	w, err := Parse(filepath.Join(dir, "nightly.yml"))
	if err != nil {
		t.Fatal(err)
	}
	j := w.Jobs["upgrade"]
	if j == nil || j.Strategy == nil || j.Strategy.Matrix == nil || j.Strategy.Matrix.Include == nil {
		t.Fatal("nightly.yml has no upgrade job with a matrix of include: rows")
	}
	served := version.Served()
	newest := served[len(served)-1]
	toNewest := map[string]bool{}
	for i, c := range j.Strategy.Matrix.Include.Combinations {
		from, to := assign(c, "from"), assign(c, "to")
		if _, _, err := version.CheckUpgrade(from, to); err != nil {
			t.Errorf("upgrade row %d (%s → %s): %v", i+1, from, to, err)
			continue
		}
		if to == newest.String() {
			toNewest[version.MustParse(from).Line()] = true
		}
	}
	for _, v := range served {
		if v.Line() != newest.Line() && !toNewest[v.Line()] {
			t.Errorf("no upgrade row from release line %s to the newest served release %s", v.Line(), newest)
			toNewest[v.Line()] = true // once per line
		}
	}
}

func assign(c *actionlint.MatrixCombination, key string) string {
	if a, ok := c.Assigns[key]; ok {
		if s, ok := a.Value.(*actionlint.RawYAMLString); ok {
			return s.Value
		}
	}
	return ""
}

// TestScorecardGroupsJoin checks every scorecard group the workflows and the
// Makefile name: each kind is one groupquake knows, and the classic kinds of
// a group share an assignor (kinds.CheckClassicMix); a group that does not would
// run with a member Kafka refuses at every JoinGroup, judging the others only.
func TestScorecardGroupsJoin(t *testing.T) {
	known := map[string]bool{} // the clients' kinds: every kind but the broken and the share kinds
	broken := kinds.Broken()
	for _, k := range kinds.Known() {
		if _, ok := broken[k]; !ok && !kinds.IsShareKind(k) {
			known[k] = true
		}
	}
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	groups := regexp.MustCompile(`SCORECARD_GROUPS *[?]?= *'?([^'\n]+)'?`)
	seen := 0
	for _, f := range append(files, filepath.Join("..", "..", "Makefile")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range groups.FindAllStringSubmatch(string(b), -1) {
			for _, g := range strings.Fields(m[1]) {
				if strings.ContainsAny(g, "$(") {
					continue // a variable, not a group
				}
				seen++
				named := strings.Split(g, ",")
				for _, k := range named {
					if !known[k] {
						t.Errorf("%s: scorecard group %s names %q, not a member kind", f, g, k)
					}
				}
				if err := kinds.CheckClassicMix(named); err != nil {
					t.Errorf("%s: scorecard group %s: %v", f, g, err)
				}
			}
		}
	}
	if seen < 4 {
		t.Errorf("found %d scorecard groups in the workflows and the Makefile, want the nightly's four and the Makefile's default", seen)
	}
}
