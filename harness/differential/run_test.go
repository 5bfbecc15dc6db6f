package differential

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/differential/difftest"

	"github.com/groupquake/groupquake/coordinator/version"
)

func writeVector(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// parseVector writes a vector file named name and parses it.
func parseVector(t *testing.T, name, text string) []Section {
	t.Helper()
	secs, err := ParseFile(writeVector(t, t.TempDir(), name, text), name)
	if err != nil {
		t.Fatal(err)
	}
	return secs
}

// heartbeatSection is a vector section: new with newArgs, then a member's
// first consumer-group heartbeat subscribing to foo.
func heartbeatSection(newArgs, member string) string {
	return "new " + newArgs + "\n----\nok\n\nconsumer-group-heartbeat member=" + member + " epoch=0 subscribe=(foo)\n----\nok\n"
}

// ParseFile splits a file into sections at every `new`, keeps each step's
// file:line and expected output, and skips comments and blank lines.
func TestParseFile(t *testing.T) {
	secs := parseVector(t, "classic/x.txt", `# a comment
new version=4.4.0
----
ok

join client=a v=3
----
#1 join member=a-1 gen=1
leader=a-1

new version=4.1.2
----
ok

# between blocks
sync member=a-1 gen=1
----
#1 sync ok

state
----
empty
`)
	if len(secs) != 2 {
		t.Fatalf("%d sections, want 2: %+v", len(secs), secs)
	}
	a, b := secs[0], secs[1]
	if a.Name() != "classic/x.txt" || b.Name() != "classic/x.txt#1" || a.New == nil || a.New.Pos != "classic/x.txt:2" {
		t.Errorf("names %q %q, first new %+v", a.Name(), b.Name(), a.New)
	}
	if len(a.Steps) != 1 || a.Steps[0].Pos != "classic/x.txt:6" || a.Steps[0].Cmd != "join" || a.Steps[0].Expected != "#1 join member=a-1 gen=1\nleader=a-1" {
		t.Errorf("first section steps %+v", a.Steps)
	}
	if argVal(a.Steps[0].Args, "client", "") != "a" || !hasArg(a.Steps[0].Args, "v") || hasArg(a.Steps[0].Args, "member") {
		t.Errorf("join args %+v", a.Steps[0].Args)
	}
	if len(b.Steps) != 2 || b.Steps[0].Pos != "classic/x.txt:16" || b.Steps[1].Cmd != "state" || b.Steps[1].Expected != "empty" {
		t.Errorf("second section steps %+v", b.Steps)
	}
}

// Malformed vectors and empty folders are refused with where and what.
func TestParseFileErrors(t *testing.T) {
	dir := t.TempDir()
	p := writeVector(t, dir, "bad/y.txt", "new version=4.4.0\nok\n")
	if _, err := ParseFile(p, "bad/y.txt"); err == nil || !strings.Contains(err.Error(), "bad/y.txt:1") || !strings.Contains(err.Error(), "----") {
		t.Errorf("command without ----: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDir(dir, "empty"); err == nil || !strings.Contains(err.Error(), "no vectors in") {
		t.Errorf("empty folder: %v", err)
	}
}

// The report counts outcomes and prints differences with both answers.
func TestReportString(t *testing.T) {
	r := Report{Target: "kfake", Version: "4.4.0", Notes: []string{"n1"}, Results: []Result{
		{Pos: "a.txt:1", Command: "join", Ticket: 1, Outcome: Same},
		{Pos: "a.txt:5", Command: "sync", Ticket: 2, Outcome: Different, Reference: "sync ok", Target: "sync REBALANCE_IN_PROGRESS", Why: "w"},
		{Pos: "a.txt:9", Command: "state", Outcome: Skipped, Why: "internal state"},
	}}
	if r.Count(Same) != 1 || r.Count(Different) != 1 || r.Count(Skipped) != 1 {
		t.Errorf("counts %d %d %d", r.Count(Same), r.Count(Different), r.Count(Skipped))
	}
	s := r.String()
	for _, want := range []string{
		"differential run against kfake 4.4.0: 1 same, 1 different, 1 skipped\n",
		"note: n1\n",
		"same a.txt:1 join (#1)\n",
		"different a.txt:5 sync (#2)\n  reference: sync ok\n  target:    sync REBALANCE_IN_PROGRESS\n  why: w\n",
		"skipped a.txt:9 state: internal state\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

// Run tells an answer that agrees with the reference from one that does
// not, on one kfake target: the first joins of classic/protocols.txt are
// the same, its describe differs (kfake reports ClientHost as ip:port), and
// consumer/restart_timers.txt's first join differs (kfake gives the first
// member epoch 1 where Kafka 4.4, with assignment interval 0, gives 2); the
// tick that moves time ends that section.
func TestRunTellsSameFromDifferent(t *testing.T) {
	var secs []Section
	for _, f := range []string{"classic/protocols.txt", "consumer/restart_timers.txt"} {
		s, err := ParseFile(filepath.Join("..", "..", "coordinator", "testdata", f), f)
		if err != nil {
			t.Fatal(err)
		}
		secs = append(secs, s...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := difftest.Kfake(t, Settings("4.4.0"))
	rep, err := Run(ctx, Target{Name: "kfake", Version: "4.4.0", Addr: addr}, secs, Options{Wait: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	byPos := map[string]Result{}
	for _, x := range rep.Results {
		if _, ok := byPos[x.Pos]; !ok {
			byPos[x.Pos] = x
		}
	}
	for pos, want := range map[string]Outcome{
		"classic/protocols.txt:12":       Same,
		"classic/protocols.txt:17":       Same,
		"classic/protocols.txt:48":       Same, // names member b-2: the target's id is substituted
		"classic/protocols.txt:52":       Different,
		"consumer/restart_timers.txt:10": Different,
		"consumer/restart_timers.txt:29": Skipped,
	} {
		if x, ok := byPos[pos]; !ok || x.Outcome != want {
			t.Errorf("%s is %q, want %q", pos, x.Outcome, want)
		}
	}
	if x := byPos["classic/protocols.txt:52"]; x.Reference == x.Target {
		t.Errorf("a difference with equal answers: %+v", x)
	}
	if x := byPos["consumer/restart_timers.txt:10"]; !strings.Contains(x.Reference, "epoch=2") || !strings.Contains(x.Target, "epoch=1") {
		t.Errorf("kfake's first join: reference %q, target %q; want epoch 2 against epoch 1", x.Reference, x.Target)
	}
	if x := byPos["consumer/restart_timers.txt:29"]; !strings.Contains(x.Why, "clock is real") {
		t.Errorf("the tick that moves time was skipped because %q, want the target's real clock", x.Why)
	}
	if t.Failed() {
		t.Logf("report:\n%s", rep)
	}
}

// A section needing other consumer-group settings is skipped naming the
// setting, and the steps a target cannot replay end the section with the
// reason, the same in Run and Model.
func TestSectionLimits(t *testing.T) {
	secs := parseVector(t, "consumer/x.txt", `new version=4.4.0 topics=(foo:2) assignors=(range)
----
ok

consumer-group-heartbeat member=A epoch=0 subscribe=(foo)
----
ok

new version=4.4.0 topics=(foo:2) assignors=(uniform, range) consumer-heartbeat=5s
----
ok

consumer-group-heartbeat member=A epoch=0 subscribe=(foo)
----
ok

set-topics topics=(foo:3)
----
ok

consumer-group-heartbeat member=A epoch=1
----
ok
`)
	if why := needsBrokerSetting(*secs[0].New); !strings.Contains(why, "assignors=range") || !strings.Contains(why, "uniform,range") {
		t.Errorf("assignors=(range): %q", why)
	}
	if why := needsBrokerSetting(*secs[1].New); why != "" {
		t.Errorf("the targets' own settings: %q", why)
	}
	rs, err := Model(version.MustParse("4.4.0").Profile(), secs, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, string(r.Outcome)+" "+r.Pos+" "+r.Why)
	}
	want := []string{
		"skipped consumer/x.txt:5 section needs broker setting assignors=range; the target runs uniform,range (differential.Settings)",
		"same consumer/x.txt:13 ",
		"skipped consumer/x.txt:17 after set-topics at consumer/x.txt:17: the vector deletes topics or adds partitions, which a broker's group coordinator sees only when its metadata image catches up, at no step the runner can pin (section ends)",
		"skipped consumer/x.txt:21 after set-topics at consumer/x.txt:17: the vector deletes topics or adds partitions, which a broker's group coordinator sees only when its metadata image catches up, at no step the runner can pin (section ends)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Model:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A confined regex quoted back in a target's error message reads as the
// vector's; a regex that does not parse goes as written.
func TestRegexNames(t *testing.T) {
	tn := &targetNames{ns: "d007-"}
	if got := tn.Regex("foo)"); got != "foo)" {
		t.Errorf("Regex(foo)) = %q, want it unconfined", got)
	}
	if got := tn.Regex("f.o"); got != "d007-(?:f.o)" {
		t.Errorf("Regex(f.o) = %q", got)
	}
	n := targetNorm{n: tn}
	if got := n.Text("SubscribedTopicRegex `d007-(?:f.o)` is not valid"); got != "SubscribedTopicRegex `f.o` is not valid" {
		t.Errorf("Text: %q", got)
	}
}

// A section that repeats an earlier one's requests with only another
// pinned release is compared once; another setting or another request
// makes it a section of its own.
func TestSameRequestsComparedOnce(t *testing.T) {
	secs := parseVector(t, "consumer/y.txt", strings.Join([]string{
		heartbeatSection("version=4.1.0 topics=(foo:2)", "A"),
		heartbeatSection("version=4.2.0 topics=(foo:2)", "A"), // another release only
		heartbeatSection("version=4.2.0 topics=(foo:3)", "A"), // another topic setting
		heartbeatSection("version=4.4.0 topics=(foo:2)", "B"), // another member
	}, "\n"))
	sent := map[string]string{}
	var got []string
	for _, s := range secs {
		got = append(got, sameRequests(sent, s))
	}
	if got[0] != "" || !strings.HasPrefix(got[1], "the requests of consumer/y.txt again") || got[2] != "" || got[3] != "" {
		t.Errorf("sameRequests: %q", got)
	}
}

// A section of share-group requests is compared only with releases where
// share groups are production-ready: Kafka 4.1 advertises
// ShareGroupHeartbeat v1 (preview) where the reference serves nothing.
func TestShareSectionsFrom42(t *testing.T) {
	secs := parseVector(t, "share/x.txt", `new version=4.2.1 topics=(foo:1)
----
ok

share-group-heartbeat member=A epoch=0 subscribe=(foo)
----
ok
`)
	for v, want := range map[string]string{
		"4.1.2": "share groups are preview in Kafka 4.1.2: the share vectors are compared with releases where they are production-ready (4.2 and later)",
		"4.0.2": "share groups are early access in Kafka 4.0.2",
		"4.2.1": "",
		"4.4.0": "",
	} {
		why := shareBefore42(version.MustParse(v).Profile(), secs[0])
		if (want == "") != (why == "") || !strings.HasPrefix(why, want) {
			t.Errorf("Kafka %s: %q, want %q", v, why, want)
		}
	}
	consumer := parseVector(t, "consumer/y.txt", heartbeatSection("version=4.4.0 topics=(foo:1)", "A"))
	if why := shareBefore42(version.MustParse("4.1.2").Profile(), consumer[0]); why != "" {
		t.Errorf("a consumer section on 4.1.2: %q", why)
	}
}
