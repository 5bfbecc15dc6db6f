package groupquake_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
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

// rules are the import rules of docs/design.md: the coordinator and the history
// are leaves, clients and faults never import the harness, checkers never
// import the cluster.
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
		allowed: func(d string) bool {
			return !under(d, "harness/cluster") && !under(d, "clients") &&
				!strings.HasPrefix(d, "github.com/twmb/franz-go/pkg/kgo") &&
				!strings.HasPrefix(d, "github.com/testcontainers/")
		},
	},
	{
		name:    "results/ reads runs: no cluster, no client",
		applies: func(p string) bool { return under(p, "results") },
		allowed: func(d string) bool {
			return !under(d, "harness/cluster") && !under(d, "clients") &&
				!strings.HasPrefix(d, "github.com/twmb/franz-go/pkg/kgo") &&
				!strings.HasPrefix(d, "github.com/testcontainers/")
		},
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
	}
	for _, p := range bad {
		if v := violations([]pkg{p}); len(v) == 0 {
			t.Errorf("%s depending on %v was not reported", p.ImportPath, p.Deps)
		}
	}
	good := []pkg{
		{module + "/coordinator/records", []string{"encoding/binary", "github.com/twmb/franz-go/pkg/kmsg", module + "/coordinator/version"}},
		{module + "/harness/run", []string{module + "/harness/cluster", module + "/clients/classic"}},
	}
	if v := violations(good); len(v) != 0 {
		t.Errorf("allowed dependencies reported: %v", v)
	}
}
