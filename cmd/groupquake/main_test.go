package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// call runs the command line in-process and returns its exit status,
// stdout and stderr. The context is cancelled before the call: a command
// that gets past its input checks and reaches for a cluster, an engine or
// the network fails at once instead of starting anything.
func call(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := runMain(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// fixtures writes run directories to judge: a run stopped in its workload
// (plan and history, no observations), one with a corrupt history, one
// whose history is unreadable, an empty one, and a folder holding runs.
type fixtures struct {
	root, killed, corrupt, unreadable, empty, file string
}

func makeFixtures(t *testing.T) fixtures {
	t.Helper()
	root := t.TempDir()
	f := fixtures{
		root:       root,
		killed:     filepath.Join(root, "runs", "killed"),
		corrupt:    filepath.Join(root, "runs", "corrupt"),
		unreadable: filepath.Join(root, "runs", "unreadable"),
		empty:      filepath.Join(root, "empty"),
		file:       filepath.Join(root, "a-file"),
	}
	p, err := run.NewPlan(7, run.Options{Kinds: []string{"kgo-classic"}, Duration: 2 * time.Second, Partitions: 1}, kinds.Default().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var hist bytes.Buffer
	if err := history.Write(&hist, []history.Event{
		{Index: 0, Time: time.Millisecond, Type: history.Info, Process: "harness", F: history.FPhase, Value: history.Phase{Name: history.PhaseSetup}},
		{Index: 1, Time: 2 * time.Millisecond, Type: history.Info, Process: "harness", F: history.FPhase, Value: history.Phase{Name: history.PhaseWorkload}},
	}); err != nil {
		t.Fatal(err)
	}
	write := func(path string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(f.killed, run.PlanFile), plan)
	write(filepath.Join(f.killed, run.HistoryFile), append(hist.Bytes(), `{"index":2,"time":3,"ty`...))
	write(filepath.Join(f.corrupt, run.PlanFile), plan)
	write(filepath.Join(f.corrupt, run.HistoryFile), []byte("this is not an event\n"+hist.String()))
	write(filepath.Join(f.unreadable, run.PlanFile), plan)
	// A directory where the history should be: unreadable even for root.
	if err := os.MkdirAll(filepath.Join(f.unreadable, run.HistoryFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.empty, 0o755); err != nil {
		t.Fatal(err)
	}
	write(f.file, []byte("x"))
	return f
}

// TestBadInput runs every command with bad input: each is refused with exit
// status 2 and one message that says what was wrong, and nothing is started
// or written.
func TestBadInput(t *testing.T) {
	fx := makeFixtures(t)
	out := filepath.Join(t.TempDir(), "never-written")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	runArgs := func(args ...string) []string { return append([]string{"run", "--out", out}, args...) }
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{}, "Usage:"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"--bogus"}, `unknown command "--bogus"`},
		{[]string{"version", "extra"}, "version takes no arguments"},

		{runArgs("extra"), "run takes no arguments"},
		{runArgs("--seed", "abc"), `--seed "abc" is not an unsigned 64-bit integer`},
		{runArgs("--scenario", "nope"), `unknown scenario "nope": known scenarios are baseline`},
		{runArgs("--kafka", "3.9.0"), `unknown Kafka version "3.9.0": served versions are`},
		{runArgs("--kafka", "4.4"), `unknown Kafka version "4.4"`},
		{runArgs("--nodes", "2"), "--nodes 2: a container cluster has 1 or 3 broker nodes"},
		{runArgs("--controllers", "2"), "--controllers 2: separate controller nodes number 0"},
		{runArgs("--embedded", "--nodes", "3"), "--nodes applies to a container cluster"},
		{runArgs("--embedded", "--controllers", "1"), "--controllers applies to a container cluster"},
		{runArgs("--embedded", "--keep"), "--keep applies to a container cluster"},
		{runArgs("--embedded", "--bootstrap", "127.0.0.1:1"), "--embedded and --bootstrap exclude each other"},
		{runArgs("--bootstrap", "127.0.0.1:1", "--nodes", "3"), "with --bootstrap the cluster is yours"},
		{runArgs("--bootstrap", "localhost"), `"localhost" is not host:port`},
		{runArgs("--node-control", "ssh {{.Host}}"), "--node-control drives the nodes of an external cluster: it needs --bootstrap"},
		{runArgs("--bootstrap", "127.0.0.1:1", "--node-control", "ssh {{.Host"), "--node-control: template: node-control:1: unclosed action"},
		{runArgs("--embedded", "--toxiproxy", "127.0.0.1:8474"), "--toxiproxy is not used by the embedded cluster"},
		{runArgs("--toxiproxy", "nohost"), `--toxiproxy "nohost" is not the host:port`},
		{runArgs("--duration", "-5s"), "--duration -5s: the workload needs a positive length"},
		{runArgs("--duration", "0s"), "--duration 0s"},
		{runArgs("--duration", "1m", "--bound", "30s"), "--bound 30s is not longer than --duration 1m0s"},
		{runArgs("--members", "-1"), "--members -1: give 0"},
		{runArgs("--partitions", "-3"), "--partitions -3"},
		{runArgs("--kinds", "nope"), `unknown member kind "nope"`},
		{runArgs("--kinds", "kgo-classic,,kgo-consumer"), "names an empty kind"},
		{runArgs("--faults", "bogus"), "--faults:"},
		{runArgs("--kafka-clients", "4.4.0"), "no Java member kind in --kinds"},
		{runArgs("--kinds", "java-consumer", "--kafka-clients", "3.x"), "--kafka-clients"},
		{runArgs("--java-jvms", "shared"), "--java-jvms shared lays out the Java members' JVMs, but no Java member kind"},
		{runArgs("--kinds", "java-consumer", "--java-jvms", "pooled"), `--java-jvms "pooled": want per-member`},
		{runArgs("--intensity", "xyz"), "--intensity:"},
		{runArgs("--image-source", "nope"), `--image-source "nope": use auto, build or official`},
		{runArgs("--base-port", "70000"), "--base-port 70000"},
		{runArgs("--nodes", "x"), `invalid value "x" for flag -nodes`},
		{[]string{"run", "--out", fx.killed}, "already holds a run"},
		{[]string{"run", "--out", fx.file}, "is a file"},
		{[]string{"run", "--out", wd}, "is a Go source folder"},

		{[]string{"check"}, "check takes one run directory, got 0"},
		{[]string{"check", fx.killed, fx.killed}, "check takes one run directory, got 2"},
		{[]string{"check", filepath.Join(fx.root, "missing")}, "does not exist"},
		{[]string{"check", fx.file}, "is a file, not a run directory"},
		{[]string{"check", fx.empty}, "missing plan.json, history.jsonl"},
		{[]string{"check", fx.unreadable}, "history.jsonl"},
		{[]string{"check", filepath.Join(fx.root, "runs")}, "holds no run itself but 3 run directories below it"},

		{[]string{"replay"}, "replay needs --bootstrap and --group"},
		{[]string{"replay", "--group", "g"}, "replay needs --bootstrap and --group"},
		{[]string{"replay", "--bootstrap", "127.0.0.1:1", "--group", "g", "--kafka", "3.9.0"}, `unknown Kafka version "3.9.0"`},
		{[]string{"replay", "--bootstrap", "nohost", "--group", "g"}, `"nohost" is not host:port`},
		{[]string{"replay", "--bootstrap", "127.0.0.1:1", "--group", "g", "--timeout", "0s"}, "--timeout 0s"},
		{[]string{"replay", "--bootstrap", "127.0.0.1:1", "--group", "g", "extra"}, "replay takes no arguments"},

		{[]string{"image"}, "image needs a subcommand: build or list"},
		{[]string{"image", "nope"}, `unknown image subcommand "nope"`},
		{[]string{"image", "build", "--kafka", "3.9.0"}, `unknown Kafka version "3.9.0"`},
		{[]string{"image", "build", "--kafka", "4.4.0,4.9.1"}, `unknown Kafka version "4.9.1"`},
		{[]string{"image", "build", "--image-source", "nope"}, `--image-source "nope"`},
		{[]string{"image", "build", "extra"}, "image build takes no arguments"},
		{[]string{"image", "list", "extra"}, "image list takes no arguments"},
		{[]string{"engine"}, "engine needs a subcommand: up"},
		{[]string{"engine", "down"}, `unknown engine subcommand "down"`},
		{[]string{"engine", "up", "extra"}, "engine up takes no arguments"},
		{[]string{"sweep", "extra"}, "sweep takes no arguments"},
		// One cluster, or every one: never every one for a --cluster given empty.
		{[]string{"sweep", "--cluster", ""}, "--cluster is empty"},
		{[]string{"sweep", "--cluster", "abc", "--all"}, "give one ID, or --all alone"},

		{[]string{"stats"}, "stats needs at least one run directory"},
		{[]string{"stats", filepath.Join(fx.root, "missing")}, "no such file or directory"},
		{[]string{"stats", fx.empty}, "no run directory (one with a plan.json)"},
		{[]string{"stats", fx.corrupt}, "none of the 1 run directories"},

		{[]string{"report"}, "report needs at least one run directory"},
		{[]string{"report", filepath.Join(fx.root, "missing")}, "no such file or directory"},
		{[]string{"report", fx.empty}, "no run directory (one with a plan.json)"},
		{[]string{"report", "-x", fx.empty}, "flag provided but not defined: -x"},
		// No scorecard of runs none of which could be read: as stats and findings triage (it printed
		// an empty scorecard and exited 0).
		{[]string{"report", "--scorecard", fx.unreadable}, "none of the 1 run directories could be read"},
		{[]string{"report", "--scorecard", "--json", fx.unreadable}, "none of the 1 run directories could be read"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := call(t, tc.args...)
			if code != exitBadInput || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d with %q; stderr:\n%s", code, exitBadInput, tc.want, stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Fatalf("bad input left %s behind (stat: %v)", out, err)
			}
		})
	}
}

// commands are every command and subcommand, as typed.
var commands = [][]string{
	{"run"}, {"check"}, {"replay"}, {"image"}, {"image", "build"}, {"image", "list"},
	{"engine"}, {"engine", "up"}, {"sweep"}, {"stats"}, {"version"}, {"shrink"},
}

// TestHelpAndFlagErrors: -h and --help on any command exit 0 and describe it
// on stdout; an unknown flag exits 2 with one line that names it.
func TestHelpAndFlagErrors(t *testing.T) {
	for _, c := range commands {
		name := strings.Join(c, " ")
		t.Run(name, func(t *testing.T) {
			for _, h := range []string{"-h", "--help"} {
				code, stdout, stderr := call(t, append(append([]string{}, c...), h)...)
				if code != exitOK || !strings.Contains(stdout, "Usage: groupquake "+name) || strings.Count(stdout, "\n") < 4 || stderr != "" {
					t.Errorf("%s %s: exit %d, want 0 with a usage on stdout and nothing on stderr\nstdout:\n%s\nstderr:\n%s", name, h, code, stdout, stderr)
				}
			}
			if len(c) == 1 && (c[0] == "image" || c[0] == "engine") {
				return // their flags belong to the subcommands
			}
			code, _, stderr := call(t, append(append([]string{}, c...), "--nope")...)
			if code != exitBadInput || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "flag provided but not defined: -nope") {
				t.Errorf("%s --nope: exit %d, want 2 and one line naming the flag; stderr:\n%s", name, code, stderr)
			}
		})
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		if code, stdout, _ := call(t, args...); code != exitOK || !strings.Contains(stdout, "groupquake version") {
			t.Errorf("%v: exit %d, want 0 and the command list:\n%s", args, code, stdout)
		}
	}
	if code, stdout, _ := call(t, "help", "check"); code != exitOK || !strings.Contains(stdout, "Usage: groupquake check") {
		t.Errorf("help check: exit %d, want 0 and check's usage:\n%s", code, stdout)
	}
}

// TestVersion: --version and the version command print the module version
// and every served Kafka version, which coordinator/version lists.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, stdout, _ := call(t, args...)
		if code != exitOK || !strings.Contains(stdout, "groupquake ") || !strings.Contains(stdout, "default "+version.Default.String()) {
			t.Errorf("%v: exit %d:\n%s", args, code, stdout)
		}
		for _, v := range version.Served() {
			if !strings.Contains(stdout, v.String()) {
				t.Errorf("%v does not list Kafka %s:\n%s", args, v, stdout)
			}
		}
	}
	code, stdout, _ := call(t, "version", "--json")
	var v versionInfo
	if err := json.Unmarshal([]byte(stdout), &v); code != exitOK || err != nil {
		t.Fatalf("version --json: exit %d, %v:\n%s", code, err, stdout)
	}
	if len(v.Kafka) != len(version.Served()) || v.Version == "" || v.Module != "github.com/groupquake/groupquake" {
		t.Errorf("version --json = %+v", v)
	}
}

// TestCheckKilledRun: a run stopped in its workload is judged up to where
// it stopped; the checkers that need the end of the run or its final
// observations say so in user terms, and the summary counts them as
// skipped, not as holding.
func TestCheckKilledRun(t *testing.T) {
	fx := makeFixtures(t)
	code, stdout, stderr := call(t, "check", fx.killed)
	if code != exitFailed || !strings.Contains(stderr, "was cut short, so it does not hold") {
		t.Fatalf("exit %d, want 3 (nothing violated up to where it stopped, but cut short: not a hold):\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"note: observations.json is absent",
		"truncated line",
		"SKIP  RecoveredStateMatchesLog: observations.json is absent",
		`SKIP  NoLostRecords: the run was killed, or ended by an error, in its workload phase`,
		"note: the run was killed, or ended by an error, in its workload phase (begun at 0s; last event 1, at 0s); judged up to there",
		// Its history holds two phases: only HistoryWellFormed had anything to judge.
		"14 checkers: 1 hold, 0 violated, 13 skipped",
		"SKIP  NoDoubleOwnership: nothing to judge: no member owned a partition in the history",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("check does not say %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "WithReplay") || strings.Contains(stdout, "checkers hold") {
		t.Errorf("check speaks of the API or counts a skipped checker as holding:\n%s", stdout)
	}

	// --json, also after the directory: stdout is one JSON document.
	code2, stdout, _ := call(t, "check", fx.killed, "--json")
	var j judgementJSON
	if err := json.Unmarshal([]byte(stdout), &j); err != nil {
		t.Fatalf("check --json is not JSON (%v):\n%s", err, stdout)
	}
	if j.Tally == nil {
		t.Fatalf("check --json has no tally:\n%s", stdout)
	}
	if code2 != code || j.Seed != 7 || j.Dir != fx.killed || len(j.Verdicts) != j.Tally.Total || j.Tally.Total == 0 ||
		j.Tally.Hold+len(j.Tally.Violated)+len(j.Tally.Skipped) != j.Tally.Total || !strings.Contains(strings.Join(j.Tally.Skipped, ","), "RecoveredStateMatchesLog") ||
		!strings.HasPrefix(j.Rerun, "groupquake run --seed 7 ") {
		t.Errorf("check --json (exit %d, text exit %d) = %+v", code2, code, j)
	}
}

// TestRunEmbeddedClientLog runs one short plan on the embedded cluster with
// --client-log debug: the run directory's client log holds kgo's debug
// lines of its kgo-classic member and of its classic member (groupquake's
// own, on a kgo client), each with the time to the millisecond and the
// member's name, and stderr holds none of them; plan.json is the plan
// without the flag, byte for byte.
func TestRunEmbeddedClientLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	args := []string{"run", "--embedded", "--scenario", "baseline", "--seed", "11", "--duration", "2s", "--kinds", "kgo-classic,classic", "--members", "2"}
	code := runMain(context.Background(), append(args, "--client-log", "debug", "--out", dir), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, run.ClientLogFile))
	if err != nil {
		t.Fatalf("--client-log debug wrote no %s: %v", run.ClientLogFile, err)
	}
	line := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (m\d+) DEBUG \S`)
	members := map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(string(b), -1) {
		members[m[1]] = true
	}
	var p run.Plan
	pb, err := os.ReadFile(filepath.Join(dir, run.PlanFile))
	if err != nil || json.Unmarshal(pb, &p) != nil {
		t.Fatalf("plan.json: %v", err)
	}
	for _, m := range p.Members {
		if !members[m.Name] {
			t.Errorf("%s holds no kgo debug line of member %s (%s):\n%.2000s", run.ClientLogFile, m.Name, m.Kind, b)
		}
	}
	if strings.Contains(stderr.String(), " DEBUG ") {
		t.Errorf("kgo's debug lines reached stderr:\n%.2000s", stderr.String())
	}
	plain, err := run.NewPlan(11, p.Options, kinds.Default().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.MarshalIndent(plain, "", "  ")
	if strings.TrimSpace(string(pb)) != string(want) {
		t.Errorf("plan.json differs from the plan without --client-log:\n%s\nwant:\n%s", pb, want)
	}
}

// TestRunEmbeddedJSON runs one short plan (--scenario) on the embedded
// cluster (no Docker) with --json: stdout holds the verdicts as JSON, the
// exit status is what they say, and stderr ends with the run's report.
func TestRunEmbeddedJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"run", "--embedded", "--scenario", "baseline", "--seed", "11", "--duration", "2s", "--out", dir, "--json"}, &stdout, &stderr)
	var j judgementJSON
	if err := json.Unmarshal(stdout.Bytes(), &j); err != nil {
		t.Fatalf("run --json (exit %d) printed no JSON (%v):\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	validateJSON(t, "run", stdout.Bytes())
	want := exitOK
	if j.Tally != nil && len(j.Tally.Violated) > 0 {
		want = exitViolation
	}
	if j.Error != "" {
		want = exitFailed
	}
	if code != want || j.Dir != dir || j.Seed != 11 || len(j.Verdicts) == 0 || j.Events == 0 || !strings.Contains(j.Rerun, "--embedded") ||
		j.Report != filepath.Join(dir, run.ReportFile) || !strings.HasSuffix(stderr.String(), "] report: "+j.Report+"\n") {
		t.Errorf("exit %d (verdicts say %d): %+v\nstderr:\n%s", code, want, j, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, run.VerdictsFile)); err != nil {
		t.Errorf("the run wrote no %s: %v", run.VerdictsFile, err)
	}
}
