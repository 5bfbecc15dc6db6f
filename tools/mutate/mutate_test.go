package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerateOperators(t *testing.T) {
	t.Parallel()
	src := []byte(`package p

func f(a, b int, ok bool, s string) bool {
	for i := 0; i < 3; i++ {
		if a == b && !ok {
			continue
		}
		v.fail(i)
		v.note(i)
	}
	switch s {
	case "x", "y":
		return true
	}
	return a >= b || ok
}
`)
	ms, err := generateFile("p/p.go", src, map[string]bool{"fail": true})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]*Mutant{}
	for i := range ms {
		ids[ms[i].ID] = &ms[i]
	}
	want := map[string]string{
		"p/p.go:f:negate:i < 3 → i >= 3":               "i >= 3",
		"p/p.go:f:boundary:i < 3 → i <= 3":             "i <= 3",
		"p/p.go:f:negate:a == b → a != b":              "a != b && !ok",
		"p/p.go:f:logic:a == b && !ok → a == b || !ok": "a == b || !ok",
		"p/p.go:f:not:!ok → ok":                        "a == b && ok",
		"p/p.go:f:if-false:a == b && !ok → false":      "if false && (a == b && !ok) {",
		"p/p.go:f:branch:continue → ":                  "\t\t\t\n",
		"p/p.go:f:delete:v.fail(i) → (deleted)":        "if false { v.fail(i) }",
		"p/p.go:f:case:case \"x\" → dropped":           `case "y":`,
		"p/p.go:f:case:case \"y\" → dropped":           `case "x":`,
		"p/p.go:f:bool:true → false":                   "return false",
		"p/p.go:f:logic:a >= b || ok → a >= b && ok":   "return a >= b && ok",
		"p/p.go:f:negate:a >= b → a < b":               "return a < b || ok",
		"p/p.go:f:boundary:a >= b → a > b":             "return a > b || ok",
	}
	for id, frag := range want {
		m, ok := ids[id]
		if !ok {
			t.Errorf("no mutant %q; got:\n%s", id, listIDs(ms))
			continue
		}
		if got := string(m.apply(src)); !strings.Contains(got, frag) {
			t.Errorf("%s: mutated source lacks %q:\n%s", id, frag, got)
		}
	}
	for _, m := range ms {
		if strings.Contains(m.ID, "note") {
			t.Errorf("v.note is not in delete_calls, yet %s", m.ID)
		}
	}
	if len(ms) != len(want) {
		t.Errorf("%d mutants, want %d:\n%s", len(ms), len(want), listIDs(ms))
	}
}

func listIDs(ms []Mutant) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.ID + "\n")
	}
	return b.String()
}

func TestHandMutantMustBeUnique(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("x := 1\nx := 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := handMutants(dir, []HandMutant{{Name: "n", File: "a.go", Original: "x := 1", Replacement: "x := 2"}})
	if err == nil || !strings.Contains(err.Error(), "occurs 2 times") {
		t.Fatalf("err = %v, want one that says the snippet occurs 2 times", err)
	}
}

// An auto entry may name one file: only that file's mutants are made, the same as the package's
// mutants of that file; a test file or a missing one is an error that says what to fix.
func TestAutoSingleFile(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	pkg, err := generate(root, "tools/mutate/testdata/fixture", nil)
	if err != nil {
		t.Fatal(err)
	}
	one, err := generate(root, "tools/mutate/testdata/fixture/fixture.go", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) == 0 || len(one) != len(pkg) {
		t.Fatalf("%d mutants of fixture.go alone, %d of its package (which has no other file)", len(one), len(pkg))
	}
	for i := range one {
		if one[i].ID != pkg[i].ID {
			t.Errorf("mutant %d: %s alone, %s from the package", i, one[i].ID, pkg[i].ID)
		}
	}
	for file, want := range map[string]string{
		"tools/mutate/testdata/fixture/fixture_test.go": "is a test file",
		"tools/mutate/testdata/fixture/gone.go":         "update the mutant list",
	} {
		if _, err := generate(root, file, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("auto entry %s: err = %v, want one that says %q", file, err, want)
		}
	}
}

func TestStaleEquivalentIsAnError(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	spec, err := loadSpec(filepath.Join(root, "tools/mutate/testdata/fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec.Equivalent = append(spec.Equivalent, EquivalentMutant{ID: "tools/mutate/testdata/fixture/fixture.go:Gone:negate:x → y", Why: "gone"})
	if _, err := mutants(root, spec); err == nil || !strings.Contains(err.Error(), "names no mutant") {
		t.Fatalf("err = %v, want a stale-equivalent error", err)
	}
}

// The whole tool on the fixture package: each mutant gets the outcome its comment in fixture.json
// predicts, the score and the exit code follow from them, and no file of the tree changes.
func TestRunOnFixture(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	before := treeHash(t, filepath.Join(root, "tools/mutate/testdata"))
	summary := filepath.Join(t.TempDir(), "summary.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-C", root, "-mutants", filepath.Join(root, "tools/mutate/testdata/fixture.json"), "-j", "2", "-min-score", "0.8", "-json", summary}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit code %d, want 1 (score 3/4 is below 0.8)\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if after := treeHash(t, filepath.Join(root, "tools/mutate/testdata")); after != before {
		t.Fatal("the fixture tree changed during the run")
	}
	data, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	want := map[string]Status{
		"tools/mutate/testdata/fixture/fixture.go:Max:if-false:a > b → false":       Killed,
		"tools/mutate/testdata/fixture/fixture.go:Max:negate:a > b → a <= b":        Killed,
		"tools/mutate/testdata/fixture/fixture.go:Max:boundary:a > b → a >= b":      Equivalent,
		"tools/mutate/testdata/fixture/fixture.go:Positive:negate:x > 0 → x <= 0":   Killed,
		"tools/mutate/testdata/fixture/fixture.go:Positive:boundary:x > 0 → x >= 0": Survived,
		"hand:does not compile": Stillborn,
	}
	if len(s.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(s.Results), len(want), s.Results)
	}
	for _, r := range s.Results {
		if want[r.ID] != r.Status {
			t.Errorf("%s: %s, want %s (output %s)", r.ID, r.Status, want[r.ID], r.Output)
		}
	}
	if s.Killed != 3 || s.Survived != 1 || s.Total != 4 || s.Stillborn != 1 || s.Equivalent != 1 || s.Score != 0.75 || s.Pass {
		t.Fatalf("summary %+v", s)
	}
	if !strings.Contains(stdout.String(), "killed 3/4") || !strings.Contains(stdout.String(), "Positive:boundary:x > 0 → x >= 0") {
		t.Fatalf("table:\n%s", stdout.String())
	}

	// The same run with a lower bar passes; -run selects by ID.
	stdout.Reset()
	code = run([]string{"-C", root, "-mutants", filepath.Join(root, "tools/mutate/testdata/fixture.json"), "-run", "Positive", "-min-score", "0.5"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "killed 1/2") {
		t.Fatalf("exit code %d, want 0 with killed 1/2:\n%s\n%s", code, stdout.String(), stderr.String())
	}
}

// Without -min-score the list's min_score is the bar: a list whose score dropped below the one it
// records fails; -min-score still overrides it; a min_score that is no fraction is refused.
func TestListMinScore(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "tools/mutate/testdata/fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	write := func(min float64) string {
		spec["min_score"] = min
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "list.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	list := write(0.8)
	var stdout, stderr bytes.Buffer
	// -run Positive: killed 1/2.
	if code := run([]string{"-C", root, "-mutants", list, "-run", "Positive"}, &stdout, &stderr); code != 1 || !strings.Contains(stdout.String(), "minimum 80.0%: FAIL") {
		t.Fatalf("exit %d, want 1 below the list's min_score 0.8:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"-C", root, "-mutants", list, "-run", "Positive", "-min-score", "0.5"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, want 0 with -min-score 0.5 overriding the list:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"-C", root, "-mutants", write(90), "-list"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "min_score 90 is not a fraction") {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
}

func TestBadFlags(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-min-score", "95", "-mutants", "x.json"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "not a fraction") {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from the test's directory: %v", err)
	}
	return root
}

func treeHash(t *testing.T, dir string) [32]byte {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		h.Write([]byte(p))
		h.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}
