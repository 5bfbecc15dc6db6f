package goast

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// FuncName names a function by itself and a method by its receiver's type,
// pointer or not, with or without type parameters.
func TestFuncName(t *testing.T) {
	src := `package p

type T struct{}
type G[K any] struct{}
type M[K comparable, V any] struct{}

func f() {}
func (T) value() {}
func (t *T) pointer() {}
func (g *G[K]) generic() {}
func (m M[K, V]) generic2() {}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok {
			got = append(got, FuncName(fn))
		}
	}
	want := []string{"f", "T.value", "T.pointer", "G.generic", "M.generic2"}
	if !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
}
