package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// giveUpPlan is an embedded plan of a broken-consumer-give-up member m1
// beside groupquake's consumer m2, without a supervisor, under three link
// cuts: m1's once, for less than its session, then m2's twice. Only m1's
// (the plan's 1st fault) makes the bug show: its heartbeat gets no answer
// and it stops for good, which EventuallyConverges names; m2 rides out its
// cuts. m1's cut comes first so that ddmin's first half holds it: a
// failing run waits out its quiesce bound, and the test stays short.
func giveUpPlan(t *testing.T) run.Plan {
	t.Helper()
	named := []string{"broken-consumer-give-up", "consumer"}
	o := run.Options{Scenario: run.ScenarioMemberLinks, Kafka: "4.4.0", Embedded: true, Kinds: named, Partitions: 4, Rate: 20,
		Duration: 4 * time.Second, Faults: []faults.Kind{faults.LinkCut}, NoSupervisor: true}
	p, err := run.NewPlan(7, o, kinds.Default().WithBroken(named).Kinds())
	if err != nil {
		t.Fatal(err)
	}
	if p.Members[0].Name != "m1" || p.Members[0].Kind != named[0] {
		t.Fatalf("the plan's first member is %s (%s), want m1 (%s)", p.Members[0].Name, p.Members[0].Kind, named[0])
	}
	cut := func(client string, at, d time.Duration) faults.Fault {
		return faults.Fault{Kind: faults.LinkCut, Node: faults.AllNodes, Client: client, At: at, For: d}
	}
	p.Faults = []faults.Fault{cut("m1", time.Second, 2*time.Second), cut("m2", 500*time.Millisecond, 1500*time.Millisecond), cut("m2", 2500*time.Millisecond, time.Second)}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// writePlan writes p as a plan file in a new temporary folder.
func writePlan(t *testing.T, p run.Plan) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// gq runs the command line args in-process and returns its exit status,
// stdout and stderr.
func gq(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// run --plan refuses a plan file that does not parse or is no plan, and a
// flag that would shape the plan, before anything starts.
func TestRunPlanRefusals(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte("{not json"), 0o644)
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, []byte("{}"), 0o644)
	good := writePlan(t, giveUpPlan(t))
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--plan", garbage}, "is not a valid plan"},
		{[]string{"--plan", empty}, "plan has no group"},
		{[]string{"--plan", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"--plan", good, "--seed", "3"}, "--seed shapes a plan"},
		{[]string{"--plan", good, "--kinds", "consumer"}, "--kinds shapes a plan"},
		// The first refused flag by name, whatever the order; -q and -v with one dash.
		{[]string{"--plan", good, "--seed", "3", "--kinds", "consumer", "--duration", "9s"}, "--duration shapes a plan"},
		{[]string{"--plan", good, "--seed", "3"}, "--client-log, -q, -v)"},
		// --bound is held to the plan's workload (4 s), not to --duration's default.
		{[]string{"--plan", good, "--bound", "4s"}, "--bound 4s is not longer than the workload of --plan " + good + " (4s)"},
		{[]string{"--plan", good, "--bound", "10s", "--out", fakeFailedRun(t, giveUpPlan(t), "NoLostRecords")}, "--out: "},
	} {
		args := append([]string{"run"}, c.args...)
		if !slices.Contains(c.args, "--out") {
			args = append(args, "--out", out)
		}
		code, _, stderr := gq(t, args...)
		if code != exitBadInput || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "--") {
			t.Errorf("run %q: exit %d, %q; want exit 2 saying %q", c.args, code, stderr, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("run %q wrote %s", c.args, out)
		}
	}
}

// run --plan refuses a taken --out before it prepares the member kinds (a
// Java kind's is a Maven build: options checks a given --out first), and
// kinds that cannot be prepared (here: no java on the PATH) are exit 3,
// the command could not be carried out, as a failed build is; so is a
// plain run's --kinds.
func TestRunPlanChecksOutBeforePreparingKinds(t *testing.T) {
	p := giveUpPlan(t)
	p.Members = slices.Clone(p.Members)
	p.Members[1].Kind = kinds.JavaKindNames()[0]
	good := writePlan(t, p)
	taken := fakeFailedRun(t, giveUpPlan(t), "NoLostRecords")
	t.Setenv("PATH", t.TempDir())
	if code, _, stderr := gq(t, "run", "--plan", good, "--out", taken, "-q"); code != exitBadInput || !strings.Contains(stderr, "--out: ") {
		t.Errorf("run --plan into a run directory, no java: exit %d, %q; want exit 2 refusing --out", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{{"run", "--plan", good}, {"run", "--embedded", "--seed", "1", "--kinds", p.Members[1].Kind}} {
		code, _, stderr := gq(t, append(args, "--out", out, "-q")...)
		if code != exitFailed || !strings.Contains(stderr, "preparing the member kinds failed") {
			t.Errorf("%q, no java: exit %d, %q; want exit 3, the kinds could not be prepared", args, code, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%q wrote %s", args, out)
		}
	}
}
