package groupquake_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/tools/goast"
)

const module = "github.com/groupquake/groupquake"

type pkg struct {
	ImportPath string
	Deps       []string
}

// listPackages returns every package of the module with its transitive
// (non-test) dependencies, as `go list -deps` sees them.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func under(path, dir string) bool {
	full := module + "/" + dir
	return path == full || strings.HasPrefix(path, full+"/")
}

// rule says which dependencies a set of packages may have.
type rule struct {
	name    string
	applies func(path string) bool
	allowed func(dep string) bool
}

// noClusterNoClient allows every dependency but the cluster, the member
// clients, kgo and testcontainers.
func noClusterNoClient(d string) bool {
	return !under(d, "harness/cluster") && !under(d, "clients") &&
		!strings.HasPrefix(d, "github.com/twmb/franz-go/pkg/kgo") &&
		!strings.HasPrefix(d, "github.com/testcontainers/")
}

// rules are the import rules of docs/design.md: the coordinator and the history
// are leaves, clients and faults never import the harness, checkers never
// import the cluster, the member kinds never import the run engine.
var rules = []rule{
	{
		name:    "coordinator/ is a leaf: stdlib, its own packages, franz-go kmsg/kbin/kerr, zeebo/xxh3 (the metadata hash)",
		applies: func(p string) bool { return under(p, "coordinator") },
		allowed: func(d string) bool {
			return isStd(d) || under(d, "coordinator") ||
				strings.HasPrefix(d, "github.com/twmb/franz-go/pkg/kmsg") ||
				strings.HasPrefix(d, "github.com/twmb/franz-go/pkg/kbin") ||
				strings.HasPrefix(d, "github.com/twmb/franz-go/pkg/kerr") ||
				// KIP-1101's XXH3-64 and the CPU feature probe it uses.
				d == "github.com/zeebo/xxh3" || strings.HasPrefix(d, "github.com/klauspost/cpuid/v2")
		},
	},
	{
		name:    "harness/history is a leaf: stdlib only",
		applies: func(p string) bool { return under(p, "harness/history") },
		allowed: isStd,
	},
	{
		name:    "clients/ never imports harness/",
		applies: func(p string) bool { return under(p, "clients") },
		allowed: func(d string) bool { return !under(d, "harness") },
	},
	{
		name:    "faults/ never imports harness/",
		applies: func(p string) bool { return under(p, "faults") },
		allowed: func(d string) bool { return !under(d, "harness") },
	},
	{
		name:    "checkers never import the cluster or a Kafka client",
		applies: func(p string) bool { return under(p, "harness/check") },
		allowed: noClusterNoClient,
	},
	{
		name:    "harness/kinds names the members, it does not run them: no run engine, no cluster (harness/run, cluster, observe, replay; testcontainers)",
		applies: func(p string) bool { return under(p, "harness/kinds") },
		allowed: func(d string) bool {
			return !under(d, "harness/run") && !under(d, "harness/cluster") && !under(d, "harness/observe") &&
				!under(d, "harness/replay") && !strings.HasPrefix(d, "github.com/testcontainers/")
		},
	},
	{
		name:    "results/ reads runs: no cluster, no client",
		applies: func(p string) bool { return under(p, "results") },
		allowed: noClusterNoClient,
	},
}

func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, r := range rules {
			if !r.applies(p.ImportPath) {
				continue
			}
			for _, d := range p.Deps {
				if !r.allowed(d) {
					out = append(out, fmt.Sprintf("%s depends on %s, breaking the rule %q", p.ImportPath, d, r.name))
				}
			}
		}
	}
	return out
}

func TestImportRules(t *testing.T) {
	for _, v := range violations(listPackages(t)) {
		t.Error(v)
	}
}

// TestImportRulesCatchViolations proves the rules bite: made-up packages
// that break each rule must be reported.
func TestImportRulesCatchViolations(t *testing.T) {
	bad := []pkg{
		{module + "/coordinator/wire", []string{"github.com/twmb/franz-go/pkg/kgo"}},
		{module + "/harness/history", []string{module + "/coordinator/records"}},
		{module + "/clients/classic", []string{module + "/harness/history"}},
		{module + "/faults", []string{module + "/harness/cluster"}},
		{module + "/harness/check", []string{module + "/harness/cluster"}},
		{module + "/results", []string{"github.com/testcontainers/testcontainers-go"}},
		{module + "/harness/kinds", []string{module + "/harness/run"}},
		{module + "/harness/kinds", []string{module + "/harness/cluster"}},
	}
	for _, p := range bad {
		if v := violations([]pkg{p}); len(v) == 0 {
			t.Errorf("%s depending on %v was not reported", p.ImportPath, p.Deps)
		}
	}
	good := []pkg{
		{module + "/coordinator/records", []string{"encoding/binary", "github.com/twmb/franz-go/pkg/kmsg", module + "/coordinator/version"}},
		{module + "/harness/run", []string{module + "/harness/cluster", module + "/clients/classic", module + "/harness/kinds"}},
		{module + "/harness/kinds", []string{module + "/clients/java", module + "/harness/check"}},
	}
	if v := violations(good); len(v) != 0 {
		t.Errorf("allowed dependencies reported: %v", v)
	}
}

// The rule between harness/check and results (docs/design.md: analysis lives in harness/check;
// results only presents): results declares no exported function or method that computes from a
// history, that is none named Measure..., and none that takes a []history.Event and returns a type
// results declares. What a history says comes computed from harness/check; results lays it out.
const historyImport = module + "/harness/history"

// computesFromHistory names the exported functions and methods of one package's sources (file name
// to source) that break the rule above.
func computesFromHistory(files map[string][]byte) ([]string, error) {
	fset := token.NewFileSet()
	var parsed []*ast.File
	declared := map[string]bool{}
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, sp := range g.Specs {
					declared[sp.(*ast.TypeSpec).Name.Name] = true
				}
			}
		}
	}
	var out []string
	for _, f := range parsed {
		hist := importName(f, historyImport)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() {
				continue
			}
			where := fmt.Sprintf("%s %s", fset.Position(fn.Pos()), goast.FuncName(fn))
			switch {
			case strings.HasPrefix(fn.Name.Name, "Measure"):
				out = append(out, where+" is named Measure...: it measures")
			case hist != "" && takesEvents(fn.Type, hist) && returnsDeclared(fn.Type, declared):
				out = append(out, where+" takes a []history.Event and returns a type results declares: it computes")
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// importName is the name file f knows the package path by, "" when it does not import it.
func importName(f *ast.File, path string) string {
	for _, im := range f.Imports {
		if p, err := strconv.Unquote(im.Path.Value); err != nil || p != path {
			continue
		}
		if im.Name != nil {
			return im.Name.Name
		}
		return filepath.Base(path)
	}
	return ""
}

// takesEvents says whether one of ft's parameters is a []history.Event (or ...history.Event), with
// history the name the file imports it by.
func takesEvents(ft *ast.FuncType, history string) bool {
	for _, p := range ft.Params.List {
		var elt ast.Expr
		switch t := p.Type.(type) {
		case *ast.ArrayType:
			if t.Len == nil {
				elt = t.Elt
			}
		case *ast.Ellipsis:
			elt = t.Elt
		}
		if sel, ok := elt.(*ast.SelectorExpr); ok && sel.Sel.Name == "Event" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == history {
				return true
			}
		}
	}
	return false
}

// returnsDeclared says whether one of ft's results names a type of declared, alone or inside a
// pointer, slice, map or the like (a type of another package, history.Event, does not count).
func returnsDeclared(ft *ast.FuncType, declared map[string]bool) bool {
	if ft.Results == nil {
		return false
	}
	found := false
	for _, r := range ft.Results.List {
		ast.Inspect(r.Type, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				return false
			case *ast.Ident:
				found = found || declared[x.Name]
			}
			return !found
		})
	}
	return found
}

// TestLayoutResultsPresents: results computes nothing from a history (the rule above).
func TestLayoutResultsPresents(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("results", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		if files[n], err = os.ReadFile(n); err != nil {
			t.Fatal(err)
		}
	}
	if len(files) == 0 {
		t.Fatal("no source in results/")
	}
	bad, err := computesFromHistory(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s: results only presents; move it to harness/check and pass results what it computes", b)
	}
}

// TestLayoutResultsPresentsBites: a made-up results that measures, or computes a type of its own
// from the events (under any import name of history, variadic too), is caught; functions that lay
// out computed values, index the events or compute unexported are not.
func TestLayoutResultsPresentsBites(t *testing.T) {
	bad := `package results

import (
	"io"

	h "github.com/groupquake/groupquake/harness/history"
)

type EpochSeen struct{ Epoch int32 }
type Span struct{}

func MeasurePressure(scenario string) int { return 0 }
func Epochs(events []h.Event) []EpochSeen { return nil }
func (s Span) Faults(w io.Writer, events ...h.Event) (*Span, error) { return nil, nil }
`
	good := `package results

import (
	"io"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

type Report struct{ Events []history.Event }

func WritePressure(w io.Writer, runs []check.Pressure) error { return nil }
func WriteReport(w io.Writer, r Report) error { return nil }
func IndexEvents(events []history.Event) map[int64]history.Event { return nil }
func Epochs(events []history.Event) []check.EpochSeen { return nil }
func measure(events []history.Event) Report { return Report{} }
`
	got, err := computesFromHistory(map[string][]byte{"bad.go": []byte(bad), "good.go": []byte(good)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"bad.go:12:1 MeasurePressure is named Measure...: it measures",
		"bad.go:13:1 Epochs takes a []history.Event and returns a type results declares: it computes",
		"bad.go:14:1 Span.Faults takes a []history.Event and returns a type results declares: it computes",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reported:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
