package clients_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// The member packages under clients/ configure a member with one option
// shape, franz-go's (kgo.Opt): an interface with one unexported method,
// implemented by a struct that holds the function. The shape is declared
// once, in clients/internal/option,
//
//	type Opt[C any] interface{ apply(*C) }
//	type opt[C any] struct{ fn func(*C) }
//
// and every member package names it for its own configuration,
//
//	type Opt = option.Opt[cfg]
//
// with a cfg that embeds option.Common (directly or through
// adapter.Config), what WithHooks, WithClock and KgoOpts set, or passes
// them on to the process.Member it runs on (clients/java); and one name
// and one signature per concern, whichever package declares it.
// checkOptionShapes holds them to it; TestOptionShapesBite proves each
// rule fails on a made-up package that breaks it.

// concerns are the options whose concern is told by the type they take:
// whatever package declares an option taking that type names it so, and an
// option of that name takes exactly that.
var concerns = []struct{ name, params, what string }{
	{"WithHooks", "clients.Hooks", "the member's events"},
	{"WithLogger", "*slog.Logger", "the member's logger"},
	{"WithClock", "clients.Clock", "the member's clock"},
	{"KgoOpts", "...kgo.Opt", "the options of the member's kgo client (its links)"},
	{"Protocol", "clients.Protocol", "the group protocol"},
}

// forbidden are parameter types that give a concern above another shape.
var forbidden = map[string]string{
	"func() time.Time":       "a clock is a clients.Clock (WithClock), not a function",
	"func(string, ...any)":   "a logger is a *slog.Logger (WithLogger), not a printf function",
	"clients.HookFunc":       "hooks are a clients.Hooks (WithHooks)",
	"func(clients.Event)":    "hooks are a clients.Hooks (WithHooks)",
	"func(e clients.Event)":  "hooks are a clients.Hooks (WithHooks)",
	"[]kgo.Opt":              "kgo options are variadic: KgoOpts(...kgo.Opt)",
	"func(*cfg)":             "an option is an Opt, never the function inside it",
	"map[string]interface{}": "an option is typed",
}

// multiTimer lists the options that may take more than one duration: a
// range, not several timers. Every other timer is one option named after
// its Kafka configuration (SessionTimeout, HeartbeatInterval,
// RebalanceTimeout, MaxPollInterval, ...), never a Timers(a, b, c) whose
// positions mean different timers in different packages.
var multiTimer = map[string]bool{"RetryBackoff": true}

// optionPackage is what checkOptionShapes reads of one package.
type optionPackage struct {
	dir                string
	optDecl, implDecl  string // how Opt and opt are declared ("" when not)
	hasApply           bool   // func (o opt[C]) apply(c *C) { o.fn(c) }
	cfgCommon          bool   // cfg embeds option.Common or adapter.Config
	constructors       map[string][]string
	constructorAt      map[string]string
	usesOpt, declaresO bool
}

// checkOptionShapes reads every package below the root of fsys (test files
// left out) and returns what breaks the option rules, one line each.
func checkOptionShapes(fsys fs.FS) (problems, checked []string, err error) {
	pkgs := map[string]*optionPackage{}
	fset := token.NewFileSet()
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && p != "." {
			return fs.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := path.Dir(p)
		pk := pkgs[dir]
		if pk == nil {
			pk = &optionPackage{dir: dir, constructors: map[string][]string{}, constructorAt: map[string]string{}}
			pkgs[dir] = pk
		}
		readOptions(fset, f, pk)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]map[string]string{} // option name → params → first package
	for _, dir := range slices.Sorted(maps.Keys(pkgs)) {
		pk := pkgs[dir]
		if !pk.usesOpt && !pk.declaresO {
			continue
		}
		checked = append(checked, dir)
		problems = append(problems, checkDecls(pk)...)
		for _, name := range slices.Sorted(maps.Keys(pk.constructors)) {
			params := pk.constructors[name]
			at := pk.constructorAt[name]
			joined := strings.Join(params, ", ")
			for _, c := range concerns {
				if slices.Contains(params, c.params) && name != c.name {
					problems = append(problems, fmt.Sprintf("%s: %s(%s) sets %s: name it %s(%s)", at, name, joined, c.what, c.name, c.params))
				}
				if name == c.name && joined != c.params {
					problems = append(problems, fmt.Sprintf("%s: %s(%s): %s takes exactly (%s), %s", at, name, joined, c.name, c.params, c.what))
				}
			}
			for _, p := range params {
				if why, bad := forbidden[p]; bad {
					problems = append(problems, fmt.Sprintf("%s: %s takes %s: %s", at, name, p, why))
				}
			}
			if n := countOf(params, "time.Duration"); n > 1 && !multiTimer[name] {
				problems = append(problems, fmt.Sprintf("%s: %s(%s) sets %d timers in one option: one option per timer, named after its Kafka configuration (SessionTimeout, HeartbeatInterval, RebalanceTimeout, MaxPollInterval, ...)", at, name, joined, n))
			}
			if byName[name] == nil {
				byName[name] = map[string]string{}
			}
			if len(byName[name]) > 0 {
				if _, same := byName[name][joined]; !same {
					for other, first := range byName[name] {
						problems = append(problems, fmt.Sprintf("%s: %s(%s), but %s declares %s(%s): one option name, one signature", at, name, joined, first, name, other))
					}
				}
			}
			if _, ok := byName[name][joined]; !ok {
				byName[name][joined] = at
			}
		}
	}
	return problems, checked, nil
}

// checkDecls holds the package that declares the shape (its Opt takes a
// type parameter) to kgo's, and every other package to naming it.
func checkDecls(pk *optionPackage) []string {
	var problems []string
	if strings.HasPrefix(pk.optDecl, "[") { // the shape's one declaration (clients/internal/option)
		if pk.optDecl != "[C any] interface{ apply(*C) }" {
			problems = append(problems, fmt.Sprintf("%s: Opt is %q: declare it as kgo does, type Opt[C any] interface{ apply(*C) }", pk.dir, pk.optDecl))
		}
		if pk.implDecl != "[C any] struct{ fn func(*C) }" || !pk.hasApply {
			problems = append(problems, fmt.Sprintf("%s: opt is %q (apply method %v): declare type opt[C any] struct{ fn func(*C) } with func (o opt[C]) apply(c *C) { o.fn(c) }, as kgo does", pk.dir, orNone(pk.implDecl), pk.hasApply))
		}
		return problems
	}
	if pk.optDecl != "= option.Opt[cfg]" {
		problems = append(problems, fmt.Sprintf("%s: Opt is %q: name the one shape, type Opt = option.Opt[cfg] (clients/internal/option)", pk.dir, orNone(pk.optDecl)))
	}
	if pk.implDecl != "" {
		problems = append(problems, fmt.Sprintf("%s: declares an opt of its own (%s): build options with option.New", pk.dir, pk.implDecl))
	}
	if !pk.cfgCommon {
		problems = append(problems, fmt.Sprintf("%s: cfg embeds neither option.Common nor adapter.Config (nor passes options on to a process.Member): WithHooks, WithClock and KgoOpts set option.Common", pk.dir))
	}
	return problems
}

func readOptions(fset *token.FileSet, f *ast.File, pk *optionPackage) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok {
					continue
				}
				switch ts.Name.Name {
				case "Opt":
					pk.declaresO = true
					pk.optDecl = typeDecl(ts)
				case "opt":
					pk.implDecl = typeDecl(ts)
				case "cfg":
					pk.cfgCommon = pk.cfgCommon || embedsCommon(ts.Type)
				}
			}
		case *ast.FuncDecl:
			if d.Recv != nil {
				if d.Name.Name == "apply" && len(d.Recv.List) == 1 && types.ExprString(d.Recv.List[0].Type) == "opt[C]" &&
					len(d.Body.List) == 1 && strings.HasSuffix(stmtString(d.Body.List[0]), ".fn(c)") {
					pk.hasApply = true
				}
				continue
			}
			if !d.Name.IsExported() || d.Type.Results == nil || len(d.Type.Results.List) != 1 || types.ExprString(d.Type.Results.List[0].Type) != "Opt" {
				continue
			}
			pk.usesOpt = true
			var params []string
			for _, field := range d.Type.Params.List {
				t := types.ExprString(field.Type)
				n := max(1, len(field.Names))
				for range n {
					params = append(params, t)
				}
			}
			pk.constructors[d.Name.Name] = params
			pos := fset.Position(d.Pos())
			pk.constructorAt[d.Name.Name] = fmt.Sprintf("%s:%d", pos.Filename, pos.Line)
		}
	}
}

// typeDecl prints what follows a type's name: "= T" for an alias, its
// type parameters and its type otherwise.
func typeDecl(ts *ast.TypeSpec) string {
	if ts.Assign.IsValid() {
		return "= " + types.ExprString(ts.Type)
	}
	decl := oneLine(types.ExprString(ts.Type), ts.Type)
	if ts.TypeParams == nil {
		return decl
	}
	var params []string
	for _, f := range ts.TypeParams.List {
		for _, n := range f.Names {
			params = append(params, n.Name+" "+types.ExprString(f.Type))
		}
	}
	return "[" + strings.Join(params, ", ") + "] " + decl
}

// embedsCommon says whether a cfg struct embeds option.Common or
// adapter.Config, or, for a member that is a process.Member (clients/java),
// holds the process options its own options pass on ([]process.Opt).
func embedsCommon(e ast.Expr) bool {
	st, ok := e.(*ast.StructType)
	if !ok {
		return false
	}
	for _, f := range st.Fields.List {
		t := types.ExprString(f.Type)
		if len(f.Names) == 0 && (t == "option.Common" || t == "adapter.Config") || t == "[]process.Opt" {
			return true
		}
	}
	return false
}

// oneLine prints an interface or struct type the way this file spells the
// expected ones.
func oneLine(s string, e ast.Expr) string {
	var fields *ast.FieldList
	kind := ""
	switch t := e.(type) {
	case *ast.InterfaceType:
		fields, kind = t.Methods, "interface"
	case *ast.StructType:
		fields, kind = t.Fields, "struct"
	default:
		return s
	}
	var parts []string
	for _, f := range fields.List {
		if ft, ok := f.Type.(*ast.FuncType); ok && kind == "interface" && len(f.Names) == 1 {
			parts = append(parts, f.Names[0].Name+strings.TrimPrefix(types.ExprString(ft), "func"))
			continue
		}
		var names []string
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		parts = append(parts, strings.TrimSpace(strings.Join(names, ", ")+" "+types.ExprString(f.Type)))
	}
	return kind + "{ " + strings.Join(parts, "; ") + " }"
}

func stmtString(s ast.Stmt) string {
	if es, ok := s.(*ast.ExprStmt); ok {
		return types.ExprString(es.X)
	}
	return ""
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func orNone(s string) string {
	if s == "" {
		return "not declared"
	}
	return s
}

// TestOptionShapes holds every member package under clients/ to one option
// shape: kgo's Opt, one name and one signature per concern.
func TestOptionShapes(t *testing.T) {
	dir := os.Getenv("GROUPQUAKE_OPTION_SHAPES_DIR") // another tree's clients/, to see the rules fail on it
	if dir == "" {
		dir = "."
	}
	problems, checked, err := checkOptionShapes(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	// The members that take options today; a package that grows them is
	// checked as well.
	for _, want := range []string{"classic", "consumer", "share", "kgoshare", "kgoref", "java", "saramaref", "kafkagoref", "process", "internal/option"} {
		if !slices.Contains(checked, want) {
			t.Errorf("package %s was not checked (checked: %v): does it still declare Opt?", want, checked)
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestOptionShapesBite proves each rule of checkOptionShapes with a made-up
// member package that breaks it beside one that keeps it.
func TestOptionShapesBite(t *testing.T) {
	const header = "package %s\n\nimport (\n\t\"log/slog\"\n\t\"time\"\n\n\t\"github.com/twmb/franz-go/pkg/kgo\"\n\n\t\"github.com/groupquake/groupquake/clients\"\n)\n\nvar _ = slog.Logger{}\nvar _ = time.Second\nvar _ kgo.Opt\nvar _ clients.Hooks\n\n"
	const good = "type Opt = option.Opt[cfg]\n\ntype cfg struct{ option.Common }\n\n" +
		"func WithHooks(h clients.Hooks) Opt { return opt{func(*cfg) {}} }\n" +
		"func WithLogger(l *slog.Logger) Opt { return opt{func(*cfg) {}} }\n" +
		"func WithClock(cl clients.Clock) Opt { return opt{func(*cfg) {}} }\n" +
		"func KgoOpts(o ...kgo.Opt) Opt { return opt{func(*cfg) {}} }\n" +
		"func SessionTimeout(d time.Duration) Opt { return opt{func(*cfg) {}} }\n" +
		"func RetryBackoff(base, max time.Duration) Opt { return opt{func(*cfg) {}} }\n"
	pkg := func(name, body string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(fmt.Sprintf(header, name) + body)}
	}
	cases := []struct {
		name, body, want string
	}{
		{"kept", "", ""},
		{"own-shape", strings.Replace(good, "type Opt = option.Opt[cfg]", "type Opt interface{ apply(*cfg) }", 1), "name the one shape, type Opt = option.Opt[cfg]"},
		{"struct-opt", strings.Replace(good, "type Opt = option.Opt[cfg]", "type Opt struct{ Hooks clients.Hooks }", 1), "name the one shape"},
		{"own-opt", "type opt struct{ fn func(*cfg) }\n", "declares an opt of its own"},
		{"no-common", strings.Replace(good, "type cfg struct{ option.Common }", "type cfg struct{ hooks clients.Hooks }", 1), "cfg embeds neither option.Common nor adapter.Config"},
		{"adapter-config", strings.Replace(good, "type cfg struct{ option.Common }", "type cfg struct {\n\tadapter.Config\n\tbalancers []string\n}", 1), ""},
		{"process-pass", strings.Replace(good, "type cfg struct{ option.Common }", "type cfg struct {\n\tprotocol clients.Protocol\n\tpass     []process.Opt\n}", 1), ""},
		{"shape-func", "type Opt[C any] interface{ apply(*C) }\n\ntype opt[C any] func(*C)\n\nfunc (o opt[C]) apply(c *C) { o(c) }\n", "declare type opt[C any] struct{ fn func(*C) }"},
		{"shape-exported", "type Opt[C any] interface{ Apply(*C) }\n\ntype opt[C any] struct{ fn func(*C) }\n\nfunc (o opt[C]) Apply(c *C) { o.fn(c) }\n", "declare it as kgo does, type Opt[C any] interface{ apply(*C) }"},
		{"shape-kept", "type Opt[C any] interface{ apply(*C) }\n\ntype opt[C any] struct{ fn func(*C) }\n\nfunc (o opt[C]) apply(c *C) { o.fn(c) }\n", ""},
		{"hooks-named-otherwise", "func Hooks(h clients.Hooks) Opt { return opt{func(*cfg) {}} }\n", "name it WithHooks(clients.Hooks)"},
		{"logger-named-otherwise", "func Logger(l *slog.Logger) Opt { return opt{func(*cfg) {}} }\n", "name it WithLogger(*slog.Logger)"},
		{"clock-as-func", "func Clock(now func() time.Time) Opt { return opt{func(*cfg) {}} }\n", "a clock is a clients.Clock"},
		{"timers-in-one", "func Timers(session, heartbeat, poll time.Duration) Opt { return opt{func(*cfg) {}} }\n", "sets 3 timers in one option"},
		{"kgo-opts-slice", "func Links(o []kgo.Opt) Opt { return opt{func(*cfg) {}} }\n", "kgo options are variadic"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := good
			switch {
			case strings.HasPrefix(c.body, "type Opt") || strings.Contains(c.body, "type Opt ="):
				body = c.body
			default:
				body += c.body
			}
			problems, _, err := checkOptionShapes(fstest.MapFS{"one/one.go": pkg("one", body)})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(problems, "\n")
			switch {
			case c.want == "" && got != "":
				t.Fatalf("a package that keeps the rules fails them:\n%s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Fatalf("want a problem saying %q, got:\n%s", c.want, got)
			}
		})
	}
	// Two packages that agree on everything but one option's signature.
	other := strings.Replace(good, "func SessionTimeout(d time.Duration) Opt", "func SessionTimeout(ms int32) Opt", 1)
	problems, _, err := checkOptionShapes(fstest.MapFS{"a/a.go": pkg("a", good), "b/b.go": pkg("b", other)})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(problems, "\n"); !strings.Contains(got, "one option name, one signature") {
		t.Fatalf("two packages with SessionTimeout of different signatures pass:\n%s", got)
	}
}
