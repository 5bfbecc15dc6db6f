package groupquake_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The Makefile's cluster tier runs CLUSTER_PKGS without -short after the
// unit tier ran every package with -short; the tests named by UNIT_ONLY
// are skipped in the cluster tier, as they did the same work in the unit
// tier. A name there costs coverage when its test does something else
// without -short (checks testing.Short, itself or through a helper such
// as clustertest.Start): TestUnitOnlyRunsOnce refuses it.

// makeVar returns the words of the Makefile variable name (NAME := words,
// continued over lines ending in a backslash), and whether it is there.
func makeVar(makefile, name string) ([]string, bool) {
	lines := strings.Split(makefile, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		rest, ok := strings.CutPrefix(l, name+" :=")
		if !ok {
			continue
		}
		var words []string
		for {
			cont := strings.HasSuffix(rest, "\\")
			words = append(words, strings.Fields(strings.TrimSuffix(rest, "\\"))...)
			if !cont || i+1 >= len(lines) {
				return words, true
			}
			i++
			rest = lines[i]
		}
	}
	return nil, false
}

// goSource is one parsed file: its package's import path and its imports
// by the name the file uses for them.
type goSource struct {
	pkg     string
	test    bool
	file    *ast.File
	imports map[string]string
}

// funcDecl is a function or method declared in a loaded package, or a
// package-level variable's initial value (a function stored in it is
// reached through the variable).
type funcDecl struct {
	src    *goSource
	name   string
	method bool
	body   ast.Node
}

// shortReach finds whether a test reaches testing.Short through the code
// of the module: the test's package with its test files, and every package
// of the module it imports, transitively, without their tests. It is
// conservative where Go's names do not say which function is called: a
// call x.M() may be any method M of a loaded package, a reference to a
// function (not only a call) counts.
type shortReach struct {
	module string
	// dir returns the directory of a package of the module.
	dir     func(importPath string) string
	loaded  map[string]bool
	funcs   map[string]map[string][]funcDecl // import path → name → functions (one, or one per test package of the directory)
	methods map[string][]funcDecl            // method name → methods of every loaded package
}

func newShortReach(module string, dir func(string) string) *shortReach {
	return &shortReach{module: module, dir: dir, loaded: map[string]bool{}, funcs: map[string]map[string][]funcDecl{}, methods: map[string][]funcDecl{}}
}

// load parses the package importPath (with its test files when tests) and,
// transitively, the packages of the module its files import.
func (r *shortReach) load(importPath string, tests bool) error {
	key := importPath
	if tests {
		key += " [tests]"
	}
	if r.loaded[key] {
		return nil
	}
	r.loaded[key] = true
	dir := r.dir(importPath)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var next []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") != tests {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		src := &goSource{pkg: importPath, test: tests, file: f, imports: map[string]string{}}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			local := path.Base(p)
			if im.Name != nil {
				local = im.Name.Name
			}
			src.imports[local] = p
			if p == r.module || strings.HasPrefix(p, r.module+"/") {
				next = append(next, p)
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Body == nil {
					continue
				}
				if d.Recv != nil {
					r.methods[d.Name.Name] = append(r.methods[d.Name.Name], funcDecl{src, d.Name.Name, true, d.Body})
					continue
				}
				r.add(importPath, funcDecl{src, d.Name.Name, false, d.Body})
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						switch {
						case len(vs.Values) == 1: // var a, b = f()
							r.add(importPath, funcDecl{src, n.Name, false, vs.Values[0]})
						case i < len(vs.Values):
							r.add(importPath, funcDecl{src, n.Name, false, vs.Values[i]})
						}
					}
				}
			}
		}
	}
	if tests {
		// A package's own functions are in its test files' reach too.
		if err := r.load(importPath, false); err != nil {
			return err
		}
	}
	for _, p := range next {
		if err := r.load(p, false); err != nil {
			return err
		}
	}
	return nil
}

// add indexes f, a package-level name of importPath.
func (r *shortReach) add(importPath string, f funcDecl) {
	if r.funcs[importPath] == nil {
		r.funcs[importPath] = map[string][]funcDecl{}
	}
	r.funcs[importPath][f.name] = append(r.funcs[importPath][f.name], f)
}

// tests returns the functions named name in the test files of the loaded
// package importPath.
func (r *shortReach) tests(importPath, name string) []funcDecl {
	var out []funcDecl
	for _, f := range r.funcs[importPath][name] {
		if _, fn := f.body.(*ast.BlockStmt); fn && f.src.test {
			out = append(out, f)
		}
	}
	return out
}

// path returns how from reaches testing.Short (the functions called, the
// test first), or nil when it does not.
func (r *shortReach) path(from funcDecl) []string {
	type step struct {
		f    funcDecl
		prev *step
	}
	seen := map[ast.Node]bool{from.body: true}
	queue := []*step{{f: from}}
	name := func(f funcDecl) string {
		n := f.name
		if f.method {
			n = "(method) " + n
		}
		return path.Base(f.src.pkg) + "." + n
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		var hit bool
		var calls []funcDecl
		ast.Inspect(s.f.body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok {
					if p, ok := s.f.src.imports[x.Name]; ok {
						if p == "testing" && n.Sel.Name == "Short" {
							hit = true
						}
						calls = append(calls, r.funcs[p][n.Sel.Name]...)
						return false
					}
				}
				calls = append(calls, r.methods[n.Sel.Name]...)
			case *ast.Ident:
				calls = append(calls, r.funcs[s.f.src.pkg][n.Name]...)
			}
			return true
		})
		if hit {
			var out []string
			for p := s; p != nil; p = p.prev {
				out = append([]string{name(p.f)}, out...)
			}
			return append(out, "testing.Short")
		}
		for _, c := range calls {
			if !seen[c.body] {
				seen[c.body] = true
				queue = append(queue, &step{f: c, prev: s})
			}
		}
	}
	return nil
}

// unitOnlyProblems says what is wrong with unitOnly, the tests the cluster
// tier skips, given the packages of the cluster tier (loaded with their
// tests): a name no package has, or a test that checks testing.Short.
func unitOnlyProblems(r *shortReach, clusterPkgs, unitOnly []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, name := range unitOnly {
		if seen[name] {
			out = append(out, fmt.Sprintf("UNIT_ONLY names %s twice", name))
			continue
		}
		seen[name] = true
		if !regexp.MustCompile(`^Test[A-Za-z0-9_]*$`).MatchString(name) {
			out = append(out, fmt.Sprintf("UNIT_ONLY names %q: a test function's name, nothing else (it becomes one alternative of the cluster tier's -skip)", name))
			continue
		}
		found := false
		for _, p := range clusterPkgs {
			for _, f := range r.tests(p, name) {
				found = true
				if via := r.path(f); via != nil {
					out = append(out, fmt.Sprintf("UNIT_ONLY names %s of %s, which checks testing.Short (%s): it does more without -short, and the cluster tier is where it does it; take it out of UNIT_ONLY", name, p, strings.Join(via, " → ")))
				}
			}
		}
		if !found {
			out = append(out, fmt.Sprintf("UNIT_ONLY names %s, and no package of CLUSTER_PKGS has such a test: a stale name hides nothing and says something false; take it out", name))
		}
	}
	return out
}

// TestUnitOnlyRunsOnce: every test the cluster tier skips (the Makefile's
// UNIT_ONLY) exists in CLUSTER_PKGS and does the same work with and
// without -short, so the unit tier already ran all of it.
func TestUnitOnlyRunsOnce(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	unitOnly, ok := makeVar(string(mk), "UNIT_ONLY")
	if !ok || len(unitOnly) == 0 {
		t.Fatal("the Makefile has no UNIT_ONLY := list of tests")
	}
	patterns, ok := makeVar(string(mk), "CLUSTER_PKGS")
	if !ok || len(patterns) == 0 {
		t.Fatal("the Makefile has no CLUSTER_PKGS := list of packages")
	}
	if !strings.Contains(string(mk), "-skip '$(UNIT_ONLY_SKIP)'") {
		t.Error("the cluster tier's go test does not pass -skip '$(UNIT_ONLY_SKIP)'")
	}
	out, err := exec.Command("go", append([]string{"list"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", patterns, err)
	}
	pkgs := strings.Fields(string(out))
	r := newShortReach(module, func(p string) string { return "." + strings.TrimPrefix(p, module) })
	for _, p := range pkgs {
		if err := r.load(p, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range unitOnlyProblems(r, pkgs, unitOnly) {
		t.Error(p)
	}
}

// TestUnitOnlyProblemsBite: on a made-up module, tests that check
// testing.Short directly, through a helper of another package, through a
// method, a function passed as a value or one kept in a variable are
// refused, so is a name no package has or one that is no test's; a test
// that never checks it is not.
func TestUnitOnlyProblemsBite(t *testing.T) {
	const mod = "example.com/m"
	root := t.TempDir()
	files := map[string]string{
		"helper/helper.go": `package helper
import "testing"
func Start(t *testing.T) { if testing.Short() { t.Skip() } }
func Pure() int { return 1 }`,
		"p/p.go": `package p
func Work() int { return 2 }`,
		"p/p_test.go": `package p_test
import (
	"testing"
	"example.com/m/helper"
	. "example.com/m/p"
)
type env struct{}
func (env) boot(t *testing.T) { helper.Start(t) }
func local(t *testing.T) { env{}.boot(t) }
func each(t *testing.T, fn func(*testing.T)) { fn(t) }
var start, other = helper.Start, 1
var TestNotAFunc = 1
func TestDirect(t *testing.T) { if testing.Short() { t.Skip() } }
func TestViaHelper(t *testing.T) { t.Run("x", func(t *testing.T) { helper.Start(t) }) }
func TestViaMethod(t *testing.T) { local(t) }
func TestViaValue(t *testing.T) { each(t, local) }
func TestViaVar(t *testing.T) { start(t) }
func TestPure(t *testing.T) { _ = helper.Pure() + Work() }`,
	}
	for name, src := range files {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newShortReach(mod, func(p string) string { return filepath.Join(root, strings.TrimPrefix(p, mod)) })
	if err := r.load(mod+"/p", true); err != nil {
		t.Fatal(err)
	}
	pkgs := []string{mod + "/p"}
	if got := unitOnlyProblems(r, pkgs, []string{"TestPure"}); len(got) != 0 {
		t.Errorf("TestPure refused: %v", got)
	}
	for _, bad := range []string{"TestDirect", "TestViaHelper", "TestViaMethod", "TestViaValue", "TestViaVar", "TestGone", "TestNotAFunc", "local", "TestPure|TestDirect"} {
		if got := unitOnlyProblems(r, pkgs, []string{bad}); len(got) != 1 {
			t.Errorf("%s: %d problems %v, want 1", bad, len(got), got)
		} else {
			t.Logf("%s: %s", bad, got[0])
		}
	}
	if got := unitOnlyProblems(r, pkgs, []string{"TestPure", "TestPure"}); len(got) != 1 {
		t.Errorf("a name twice: %v, want 1 problem", got)
	}
}

// clusterTargets returns the Makefile's targets whose recipe runs tests
// that may start real clusters (gotestsum or go test without -short), each
// with how many test commands its recipe runs and whether the recipe goes
// through swept.
func clusterTargets(makefile string) (map[string]int, map[string]bool) {
	tests, swept := map[string]int{}, map[string]bool{}
	target := ""
	for _, l := range strings.Split(makefile, "\n") {
		if !strings.HasPrefix(l, "\t") {
			// A target's line names it; any other line (a variable, a
			// comment, a blank) ends the recipe before it.
			target = ""
			if name, _, ok := strings.Cut(l, ":"); ok && !strings.ContainsAny(name, " =$#") {
				target = name
			}
			continue
		}
		if target == "" {
			continue
		}
		if n := strings.Count(l, "$(GOTESTSUM)") + strings.Count(l, "$(GO) test "); n > 0 && !strings.Contains(l, " -short ") {
			tests[target] += n
		}
		if strings.Contains(l, "$(call swept,") {
			swept[target] = true
		}
	}
	return tests, swept
}

// TestClusterTargetsSweepWhateverHappens: every Makefile target that runs
// tests against real clusters runs `groupquake sweep` after them whether they
// passed or failed (a test binary that panics or times out never removes the
// clusters its tests shared), and the target's exit status is the tests': a
// fake go records what each recipe runs and exits as told.
func TestClusterTargetsSweepWhateverHappens(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine: the Makefile's recipes cannot be run")
	}
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	tests, swept := clusterTargets(string(makefile))
	for _, must := range []string{"cluster-tests", "hunt", "share-hunt", "soak", "java", "migration", "upgrade", "share-upgrade", "goclients", "bench"} {
		if tests[must] == 0 {
			t.Errorf("target %s runs no real-cluster tests by the Makefile's text: clusterTargets misreads it", must)
		}
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	fake := filepath.Join(dir, "go")
	script := `#!/bin/sh
case "$*" in
"tool gotestsum"*|"test "*) echo tests >> "$FAKE_LOG"; exit "$FAKE_TESTS" ;;
"run ./cmd/groupquake sweep") echo sweep >> "$FAKE_LOG"; exit "$FAKE_SWEEP" ;;
"run ./cmd/groupquake image build"*) exit 0 ;;
"run ./tools/versions"*) echo 0.0.0; exit 0 ;;
esac
echo "unexpected: go $*" >> "$FAKE_LOG"; exit 99
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for target, n := range tests {
		if !swept[target] {
			t.Errorf("target %s runs real-cluster tests but not through $(call swept,...): a panicking test binary would leave its clusters", target)
			continue
		}
		for _, c := range []struct {
			tests, sweep string
			fails        string // what make says of the recipe's exit status; "" for success
		}{
			{tests: "0", sweep: "0"},
			{tests: "1", sweep: "0", fails: "Error 1"},
			{tests: "2", sweep: "1", fails: "Error 2"},
			{tests: "0", sweep: "1", fails: "Error 1"},
		} {
			os.Remove(log)
			// -o: the prerequisites are taken as made (python-member may pip
			// install, images builds Kafka images).
			cmd := exec.Command("make", "-s", "-o", "build", "-o", "python-member", "-o", "engine", "-o", "images",
				target, "GO="+fake, "VERSIONS=0.0.0")
			cmd.Env = append(notMake(os.Environ()), "FAKE_LOG="+log, "FAKE_TESTS="+c.tests, "FAKE_SWEEP="+c.sweep)
			out, err := cmd.CombinedOutput()
			ran, _ := os.ReadFile(log)
			name := fmt.Sprintf("%s: tests exit %s, sweep exits %s", target, c.tests, c.sweep)
			want := strings.Repeat("tests,", n) + "sweep"
			if c.tests != "0" {
				want = "tests,sweep" // the recipe stops at the first failing test command
			}
			if got := strings.Join(strings.Fields(string(ran)), ","); got != want {
				t.Errorf("%s: the recipe ran %s, want %s\n%s", name, got, want, out)
			}
			switch {
			case c.fails == "" && err != nil:
				t.Errorf("%s: make failed: %v\n%s", name, err, out)
			case c.fails != "" && (err == nil || !strings.Contains(string(out), "] "+c.fails)):
				t.Errorf("%s: make said %v, want its recipe's %s\n%s", name, err, c.fails, out)
			}
		}
	}
}

// notMake is env without what a make running this test passes to the
// makes it starts (the unit tier runs under make test): its flags and
// command-line variables.
func notMake(env []string) []string {
	var out []string
	for _, kv := range env {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		out = append(out, kv)
	}
	return out
}
