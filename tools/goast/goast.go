// Package goast names Go declarations as the repository's checks and tools
// print them: the function-length test (funclen_test.go) and the mutation
// tool's mutant ids (tools/mutate).
package goast

import "go/ast"

// FuncName is a declaration's name: Type.Method for a method, whether its
// receiver is a pointer or not, and the type without its type parameters
// (T.Method for a method of T[K]).
func FuncName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
