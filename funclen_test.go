package groupquake_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/tools/goast"
)

// maxFuncLines is the longest a non-test function or method may be, counted
// from its func keyword to its closing brace. A longer one does several jobs:
// split it into named steps.
const maxFuncLines = 120

// longFunc is one function declaration: where it is, its name (Type.Method
// for a method) and how many lines it spans.
type longFunc struct {
	File  string
	Line  int
	Name  string
	Lines int
}

func (f longFunc) String() string {
	return fmt.Sprintf("%s:%d %s is %d lines", f.File, f.Line, f.Name, f.Lines)
}

// longFuncs returns the functions of one Go source over maxFuncLines.
func longFuncs(name string, src []byte) ([]longFunc, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var long []longFunc
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
		if n := end - start + 1; n > maxFuncLines {
			long = append(long, longFunc{File: name, Line: start, Name: goast.FuncName(fn), Lines: n})
		}
	}
	return long, nil
}

// TestNoLongFunctions: no non-test function of the repository is over
// maxFuncLines. There are no exceptions.
func TestNoLongFunctions(t *testing.T) {
	var long []longFunc
	for _, f := range trackedFiles(t) {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || strings.Contains("/"+f, "/testdata/") {
			continue
		}
		src, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue // deleted in the working tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		fs, err := longFuncs(f, src)
		if err != nil {
			t.Errorf("parse %s: %v", f, err)
			continue
		}
		long = append(long, fs...)
	}
	sort.Slice(long, func(i, j int) bool { return long[i].Lines > long[j].Lines })
	for _, l := range long {
		t.Errorf("%s, over %d: split it into named steps", l, maxFuncLines)
	}
}

// TestLongFuncsBites: a function of maxFuncLines+1 lines is caught, named
// with its receiver, and one of maxFuncLines is not.
func TestLongFuncsBites(t *testing.T) {
	body := func(name string, lines int) string {
		return name + " {\n" + strings.Repeat("\tx++\n", lines-2) + "}\n"
	}
	src := "package p\n\ntype T[K any] struct{}\n\nvar x int\n\n" +
		body("func ok()", maxFuncLines) +
		body("func long()", maxFuncLines+1) +
		body("func (t *T[K]) method()", maxFuncLines+1)
	long, err := longFuncs("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range long {
		got = append(got, l.String())
	}
	want := []string{
		fmt.Sprintf("p.go:%d long is %d lines", 7+maxFuncLines, maxFuncLines+1),
		fmt.Sprintf("p.go:%d T.method is %d lines", 7+2*maxFuncLines+1, maxFuncLines+1),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("long functions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
