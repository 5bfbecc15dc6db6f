package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/groupquake/groupquake/tools/goast"
)

// Mutant is one small deliberate bug: bytes [start, end) of File replaced by Replacement.
type Mutant struct {
	// ID is stable across edits elsewhere in the file: file, enclosing function, operator, the
	// original and replaced text, and #n when the same text occurs more than once in the function.
	ID          string
	File        string
	Line        int
	Func        string
	Op          string
	Original    string
	Replacement string
	Why         string
	Equivalent  string
	start, end  int
}

// Operators of the generator. Each one removes or weakens a rule the way a real bug would:
//
//	negate     a comparison becomes its negation (== ↔ !=, < ↔ >=, > ↔ <=)
//	boundary   a comparison moves its boundary (< ↔ <=, > ↔ >=)
//	logic      && ↔ ||
//	not        a ! is dropped
//	if-false   an if's condition becomes false: the rule (or guard) it opens is gone
//	delete     a call statement to one of Spec.DeleteCalls is deleted (a violation never recorded)
//	branch     a continue or break is deleted (a guard that skipped a case no longer does)
//	bool       true ↔ false
//	case       one value is dropped from a case list of several
var negated = map[token.Token]token.Token{
	token.EQL: token.NEQ, token.NEQ: token.EQL,
	token.LSS: token.GEQ, token.GEQ: token.LSS,
	token.GTR: token.LEQ, token.LEQ: token.GTR,
}

var boundary = map[token.Token]token.Token{
	token.LSS: token.LEQ, token.LEQ: token.LSS,
	token.GTR: token.GEQ, token.GEQ: token.GTR,
}

// generate returns the mutants of every non-test Go file of the package directory dir
// (module-relative) under root, or of the one file dir names when it ends in .go (a package whose
// tests take long is mutated where its rules are, so that the run stays bounded).
func generate(root, dir string, deleteCalls []string) ([]Mutant, error) {
	del := map[string]bool{}
	for _, c := range deleteCalls {
		del[c] = true
	}
	var files []string
	if strings.HasSuffix(dir, ".go") {
		if strings.HasSuffix(dir, "_test.go") {
			return nil, fmt.Errorf("auto entry %s is a test file: name the code whose rules the tests must hold", dir)
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir))); err != nil {
			return nil, fmt.Errorf("auto entry %s: %v (the file moved? update the mutant list)", dir, err)
		}
		files = []string{dir}
	} else {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil {
			return nil, fmt.Errorf("package directory %s: %v", dir, err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			files = append(files, path.Join(dir, name))
		}
	}
	var out []Mutant
	for _, rel := range files {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		ms, err := generateFile(rel, src, del)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

func generateFile(rel string, src []byte, del map[string]bool) ([]Mutant, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %v", rel, err)
	}
	tf := fset.File(file.Pos())
	off := func(p token.Pos) int { return tf.Offset(p) }
	text := func(n ast.Node) string { return string(src[off(n.Pos()):off(n.End())]) }

	var out []Mutant
	for _, d := range file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		fn := goast.FuncName(fd)
		seen := map[string]int{}
		addShown := func(op string, start, end int, repl, before, after string) {
			orig := string(src[start:end])
			base := fmt.Sprintf("%s:%s:%s:%s → %s", rel, fn, op, before, after)
			seen[base]++
			id := base
			if n := seen[base]; n > 1 {
				id = fmt.Sprintf("%s #%d", base, n)
			}
			out = append(out, Mutant{ID: id, File: rel, Line: tf.Line(token.Pos(tf.Base() + start)), Func: fn, Op: op,
				Original: orig, Replacement: repl, start: start, end: end})
		}
		// add records the mutant replacing [start, end) by repl; [ss, se) is the text shown in
		// its ID, before and after the mutation (the whole comparison, not only its operator).
		add := func(op string, start, end int, repl string, ss, se int) {
			addShown(op, start, end, repl, oneLine(string(src[ss:se])), oneLine(string(src[ss:start])+repl+string(src[end:se])))
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BinaryExpr:
				p := off(x.OpPos)
				l := len(x.Op.String())
				if t, ok := negated[x.Op]; ok {
					add("negate", p, p+l, t.String(), off(x.Pos()), off(x.End()))
				}
				if t, ok := boundary[x.Op]; ok {
					add("boundary", p, p+l, t.String(), off(x.Pos()), off(x.End()))
				}
				switch x.Op {
				case token.LAND:
					add("logic", p, p+l, "||", off(x.Pos()), off(x.End()))
				case token.LOR:
					add("logic", p, p+l, "&&", off(x.Pos()), off(x.End()))
				}
			case *ast.UnaryExpr:
				if x.Op == token.NOT {
					add("not", off(x.OpPos), off(x.OpPos)+1, "", off(x.Pos()), off(x.End()))
				}
			case *ast.IfStmt:
				// "false && (cond)" rather than "false" keeps every variable of cond used, so the
				// mutant compiles.
				c := text(x.Cond)
				addShown("if-false", off(x.Cond.Pos()), off(x.Cond.End()), "false && ("+c+")", oneLine(c), "false")
			case *ast.ExprStmt:
				if c, ok := x.X.(*ast.CallExpr); ok && del[calleeName(c)] {
					// Wrapped in "if false" rather than cut, so that its arguments stay used.
					addShown("delete", off(x.Pos()), off(x.End()), "if false { "+text(x)+" }", oneLine(text(x)), "(deleted)")
				}
			case *ast.BranchStmt:
				if (x.Tok == token.CONTINUE || x.Tok == token.BREAK) && x.Label == nil {
					add("branch", off(x.Pos()), off(x.End()), "", off(x.Pos()), off(x.End()))
				}
			case *ast.Ident:
				switch x.Name {
				case "true":
					add("bool", off(x.Pos()), off(x.End()), "false", off(x.Pos()), off(x.End()))
				case "false":
					add("bool", off(x.Pos()), off(x.End()), "true", off(x.Pos()), off(x.End()))
				}
			case *ast.CaseClause:
				if len(x.List) > 1 {
					for i := range x.List {
						var rest []string
						for j, e := range x.List {
							if j != i {
								rest = append(rest, text(e))
							}
						}
						addShown("case", off(x.List[0].Pos()), off(x.List[len(x.List)-1].End()), strings.Join(rest, ", "), "case "+oneLine(text(x.List[i])), "dropped")
					}
				}
			}
			return true
		})
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].start < out[b].start })
	return out, nil
}

func calleeName(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// oneLine collapses whitespace and shortens long text for IDs and tables.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 90 {
		s = string(r[:87]) + "..."
	}
	return s
}

// apply returns src with the mutant applied.
func (m *Mutant) apply(src []byte) []byte {
	out := make([]byte, 0, len(src)+len(m.Replacement))
	out = append(out, src[:m.start]...)
	out = append(out, m.Replacement...)
	return append(out, src[m.end:]...)
}
