package kafkaref

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/groupquake/groupquake/coordinator/version"
)

var defaultKafka = version.Default.String()

var (
	rtOnce sync.Once
	rt     Runtime
	rtErr  error
)

// runtime prepares the Java side once per test binary.
func runtime(tb testing.TB) (Runtime, error) {
	rtOnce.Do(func() {
		rt, rtErr = Prepare(context.Background(), defaultKafka, tb.Logf)
	})
	return rt, rtErr
}

// writeCases writes cs to a file in dir and reads it back: what the Go side
// runs is what the file says, as for the Java side.
func writeCases(t testing.TB, dir, name string, cs Cases) (string, Cases) {
	t.Helper()
	path := filepath.Join(dir, name)
	var buf bytes.Buffer
	if err := Write(&buf, cs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("reading back %s: %v", path, err)
	}
	return path, back
}

// TestCaseFileRoundTrip: a case file read back writes the same bytes, so
// nothing of the input is lost between the generator and the two sides.
func TestCaseFileRoundTrip(t *testing.T) {
	cs, err := SmallCases()
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := Write(&a, cs); err != nil {
		t.Fatal(err)
	}
	back, err := Read(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, back); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatalf("a case file read back writes differently:\n--- written\n%s\n--- rewritten\n%s", a.String(), b.String())
	}
	if len(back.Assign) != len(cs.Assign) || len(back.Reconcile) != len(cs.Reconcile) {
		t.Fatalf("read back %d+%d cases, wrote %d+%d", len(back.Assign), len(back.Reconcile), len(cs.Assign), len(cs.Reconcile))
	}
}

func TestReadRefusesBadFiles(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"no end", "assign x uniform Homogeneous\n", "no end line"},
		{"unknown kind", "foo x\nend\n", "unknown case kind"},
		{"bad subscription type", "assign x uniform Both\nend\n", "Homogeneous or Heterogeneous"},
		{"undefined subscription", "assign x uniform Homogeneous\nmember m - s0\nend\n", "no subs line"},
		{"bad state", "reconcile x 1 false\nmember m RUNNING 1 0 -\nend\n", "member state"},
		{"unknown assign line", "assign x uniform Homogeneous\nfoo 1\nend\n", `unknown line "foo" in an assign case`},
		{"unknown reconcile line", "reconcile x 1 false\nfoo\nend\n", `unknown line "foo" in a reconcile case`},
		{"unknown target line", "target x Homogeneous\nfoo\nend\n", `unknown line "foo" in a target case`},
		{"assign topic fields", "assign x uniform Homogeneous\ntopic t 3 x\nend\n", `line "topic t 3 x" has 4 fields, want 3`},
		{"reconcile topic fields", "reconcile x 1 false\ntopic t 3\nend\n", `line "topic t 3" has 3 fields, want 4`},
		{"target topic fields", "target x Homogeneous\ntopic t 3\nend\n", `line "topic t 3" has 3 fields, want 4`},
		{"target without joiner", "target x Homogeneous\nend\n", "has no joiner line"},
		{"target partition count", "target x Homogeneous\ntopic t AAAAAAAAAAAAAAAAAAAAAA 3x\nend\n", `partition count "3x"`},
		{"reconcile partition count", "reconcile x 1 false\ntopic t AAAAAAAAAAAAAAAAAAAAAA 3x\nend\n", `partition count "3x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read(%q) = %v, want an error saying %q", tc.file, err, tc.want)
			}
		})
	}
}

// splitBlocks splits print output into case name → block.
func splitBlocks(out string) map[string]string {
	blocks := map[string]string{}
	var name string
	var cur strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		if line == "" {
			continue
		}
		if name == "" {
			f := strings.Fields(line)
			if len(f) >= 2 {
				name = f[1]
			}
		}
		cur.WriteString(line)
		if line == "end\n" {
			blocks[name] = cur.String()
			name = ""
			cur.Reset()
		}
	}
	return blocks
}

// TestSameResultsAsKafka runs small inputs of every case kind through
// Kafka's own classes (the kafka-group-coordinator jar of the default
// release) and through groupquake's, from the same case file, and wants the
// very same result: each member's target assignment for the assignors; each
// member's state, epochs, assigned partitions with their epochs and
// partitions pending revocation for the reconciliation. It needs a JDK and
// Maven (the jars are resolved once and cached), like the Java member
// contract; a machine without them fails it and says what to install.
func TestSameResultsAsKafka(t *testing.T) {
	rt, err := runtime(t)
	if err != nil {
		t.Fatalf("Kafka's group coordinator cannot be run on this machine: %v", err)
	}
	cs, err := SmallCases()
	if err != nil {
		t.Fatal(err)
	}
	path, cs := writeCases(t, t.TempDir(), "small.cases", cs)
	out, err := rt.Print(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	java := splitBlocks(out)
	if n := len(cs.Assign) + len(cs.Reconcile) + len(cs.Target); len(java) != n {
		t.Fatalf("Kafka printed %d cases, the file has %d:\n%s", len(java), n, out)
	}
	for i := range cs.Assign {
		c := &cs.Assign[i]
		g, err := PrepareAssign(c, rt.Kafka, rt.JavaMajor)
		if err != nil {
			t.Fatal(err)
		}
		res, err := g.Run()
		if got := RenderAssign(c.Name, res, err); got != java[c.Name] {
			t.Errorf("%s: groupquake's %s assignor differs from Kafka %s's (JDK %d):\n--- groupquake\n%s--- Kafka\n%s",
				c.Name, c.Assignor, rt.Kafka, rt.JavaMajor, got, java[c.Name])
		}
	}
	for i := range cs.Reconcile {
		c := &cs.Reconcile[i]
		g, err := PrepareReconcile(c, rt.Kafka)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Render(c.Name); got != java[c.Name] {
			t.Errorf("%s: groupquake's reconciliation differs from Kafka %s's CurrentAssignmentBuilder:\n--- groupquake\n%s--- Kafka\n%s",
				c.Name, rt.Kafka, got, java[c.Name])
		}
	}
	for i := range cs.Target {
		c := &cs.Target[i]
		g, err := PrepareTarget(c, rt.Kafka, rt.JavaMajor)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Render(); got != java[c.Name] {
			t.Errorf("%s: groupquake's target assignment differs from Kafka %s's TargetAssignmentBuilder (JDK %d):\n--- groupquake\n%s--- Kafka\n%s",
				c.Name, rt.Kafka, rt.JavaMajor, got, java[c.Name])
		}
	}
}

func TestPrepareRefusesABadVersion(t *testing.T) {
	_, err := Prepare(context.Background(), "4.4", nil)
	if err == nil || !strings.Contains(err.Error(), "release number") {
		t.Fatalf("Prepare(4.4) = %v, want an error saying it is not a release number", err)
	}
}
