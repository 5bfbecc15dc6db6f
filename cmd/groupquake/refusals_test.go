package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// setupOnly writes a run directory whose history stopped in its setup: a
// run that never happened.
func setupOnly(t *testing.T, dir string) {
	t.Helper()
	p, err := run.NewPlan(5, run.Options{Embedded: true, Kinds: []string{"consumer"}, Duration: 2 * time.Second, Partitions: 1}, kinds.Default().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	var h bytes.Buffer
	if err := history.Write(&h, []history.Event{{Index: 0, Time: time.Millisecond, Type: history.Info, Process: "harness", F: history.FPhase, Value: history.Phase{Name: history.PhaseSetup}}}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{run.PlanFile: b, run.HistoryFile: h.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRefusals runs every command with input it cannot honour, as a new
// user would type it: each is refused before anything starts with exit 2
// and one line (what was wrong, what to do), or, when it is not the input
// but the world that is wrong (a cluster that does not answer, a run that
// never got past its setup), exit 3. Each case names the first line of
// the message. No case starts a cluster or writes where it was pointed.
func TestRefusals(t *testing.T) {
	fx := makeFixtures(t)
	tmp := t.TempDir()
	out := filepath.Join(tmp, "never-written")
	closed := closedPort(t)
	never := filepath.Join(tmp, "never-happened")
	setupOnly(t, never)
	aDir := filepath.Join(tmp, "a-dir")
	if err := os.MkdirAll(aDir, 0o755); err != nil {
		t.Fatal(err)
	}
	underFile := filepath.Join(fx.file, "sub")
	runArgs := func(args ...string) []string { return append([]string{"run", "--out", out}, args...) }
	one := func(args ...string) []string { return runArgs(append([]string{"--scenario", "baseline"}, args...)...) }
	upgrade := func(args ...string) []string { return append([]string{"upgrade", "--from", "4.1.2"}, args...) }
	scale := func(args ...string) []string {
		return append([]string{"scale", "--members", "10", "--protocol", "consumer", "--partitions", "4"}, args...)
	}
	diff := func(args ...string) []string { return append([]string{"diff", "--from", "4.1.2"}, args...) }
	long := strings.Repeat("t", 250)
	// A symbolic link to nothing, and a folder this process may not write
	// (root writes through permissions: for root, one that procfs refuses).
	dangling := filepath.Join(tmp, "dangling")
	if err := os.Symlink(filepath.Join(tmp, "no", "such"), dangling); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(tmp, "locked")
	if err := os.MkdirAll(locked, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		locked = "/proc/self"
	}
	// What a run leaves in the instant it claimed its directory: a history, no plan yet.
	claimed := filepath.Join(tmp, "claimed")
	if err := os.MkdirAll(claimed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(claimed, run.HistoryFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args  []string
		code  int
		first string // in the first line of stderr
	}{
		// The cases issue 22 found wrong.
		{upgrade("--image-source", "nope"), 2, `--image-source "nope": use auto, build or official`},
		{upgrade("--out", fx.killed), 2, "already holds a run"},
		{upgrade("--bound", "1s"), 2, "--bound 1s is not longer than the two workloads"},
		{scale("--heap", "-5"), 2, "--heap -5: give each node's JVM heap in MB"},
		{[]string{"report", "-o", aDir, fx.killed}, 2, "-o " + aDir + " is a directory"},
		{[]string{"replay", "--bootstrap", closed, "--group", "g", "--kafka", "4.4.0"}, 3, "(is the cluster up, and --bootstrap its address?)"},
		{runArgs("--kinds", ""), 2, "--kinds is empty: give a value, or leave --kinds out"},
		{runArgs("--kinds", "classic,,consumer"), 2, `--kinds "classic,,consumer" names an empty kind`},
		{runArgs("--kinds", "nope"), 2, "java-classic, java-classic-cooperative, java-consumer, java-consumer-range, java-share, kafkago, kgo-classic"},
		{runArgs("--kinds", "nope"), 2, "broken-consumer-give-up"},
		{upgrade("--kinds", "nope"), 2, "known kinds are broken-classic-fetch-after-revoke"},
		// Share groups (docs/share-groups.md).
		{runArgs("--kinds", "nope"), 2, "broken-share-ignore-delivery-count"},
		{runArgs("--kinds", "sarama-range,sarama-sticky,classic,kgo-classic"), 2, "--kinds sarama-range,sarama-sticky,classic,kgo-classic: the classic member kinds sarama-range, sarama-sticky, classic, kgo-classic share no assignor"},
		{upgrade("--kinds", "kgo-classic,confluent-python"), 2, "(confluent-python: no cooperative-sticky)"},
		{runArgs("--kinds", "share", "--kafka", "4.1.2"), 2, "--kafka 4.1.2: share members need Kafka 4.2.0 or later"},
		{runArgs("--kinds", "share,consumer"), 2, "a group is a share group or a consumer group, never both"},
		{runArgs("--kinds", "share", "--embedded", "--kafka", "4.1.2"), 2, "--kafka 4.1.2: share members need Kafka 4.2.0 or later"},
		{one("--embedded", "--bootstrap", "x:1"), 2, "--embedded and --bootstrap exclude each other"},
		{[]string{"run", "--out", out, "--bootstrap", closed, "--scenario", "baseline", "--duration", "2s"}, 3, "the run never happened (it stopped in its setup"},

		// More, found by trying every command's flags.
		{runArgs("--seed", ""), 2, "--seed is empty"},
		{runArgs("--seed", "-1"), 2, `--seed "-1" is not an unsigned 64-bit integer`},
		{runArgs("--scenario", ""), 2, "--scenario is empty"},
		{[]string{"run", "--out", ""}, 2, "--out is empty"},
		{runArgs("--kafka", ""), 2, "--kafka is empty"},
		{runArgs("--group", ""), 2, "--group is empty"},
		{runArgs("--topic", ""), 2, "--topic is empty"},
		{runArgs("--topic", "my topic"), 2, `--topic "my topic": Kafka topic names hold only ASCII letters, digits`},
		{runArgs("--topic", ".."), 2, `--topic "..": Kafka refuses`},
		{runArgs("--topic", long), 2, "--topic: a Kafka topic name has at most 249 characters, this one 250"},
		{runArgs("--faults", ""), 2, "--faults is empty"},
		{runArgs("--intensity", ""), 2, "--intensity is empty"},
		{runArgs("--kafka-clients", ""), 2, "--kafka-clients is empty"},
		{runArgs("--java-jvms", ""), 2, "--java-jvms is empty"},
		{runArgs("--bootstrap", "127.0.0.1:1", "--node-control", "ssh {{.Hots}} stop"), 2, `--node-control: template: node-control:1:6: executing "node-control" at <.Hots>: map has no entry for key "Hots"`},
		{runArgs("--upgrade-to", "4.4.0", "--kafka", "4.1.2", "--embedded"), 2, "--upgrade-to replaces container nodes: the embedded cluster has no Kafka binaries"},
		// run's flags for the two releases are --kafka and --upgrade-to, not upgrade's --from and --to.
		{runArgs("--kafka", "4.4.0", "--upgrade-to", "4.1.2"), 2, "--upgrade-to 4.1.2 is older than --kafka 4.4.0: an upgrade goes to a newer release"},
		{runArgs("--upgrade-to", "4.4.0"), 2, "--kafka and --upgrade-to are both 4.4.0: an upgrade needs a newer --upgrade-to"},
		{runArgs("--upgrade-to", "3.9.0", "--kafka", "4.1.2"), 2, "--upgrade-to 3.9.0: Kafka 3.9.0 is not served"},
		{upgrade("--to", "4.0.0"), 2, "--to 4.0.0 is older than --from 4.1.2"},
		// A rate of 0 is not "between 0 and 600": the message says which rates are taken.
		{runArgs("--intensity", "0/min"), 2, `intensity "0/min" is neither a level (low, normal, high) nor a rate of faults per minute above 0 and at most 600`},
		{runArgs("--intensity", "HIGH"), 2, `intensity "HIGH" is neither a level (low, normal, high)`},
		{runArgs("--downgrade", "before-finalize"), 2, "--downgrade before-finalize rolls back an upgrade: it needs --upgrade-to"},
		{runArgs("--migration-from", "consumer"), 2, "--migration-from consumer says where a migration starts: it needs --scenario migration"},
		{runArgs("--migration-static"), 2, "--migration-static makes a migration's members static: it needs --scenario migration"},
		{runArgs("--migration-policy", "sideways"), 2, `unknown migration policy "sideways"`},
		{runArgs("--bootstrap", "127.0.0.1:1", "--migration-policy", "upgrade"), 2, "--migration-policy upgrade is a broker setting"},
		{runArgs("--embedded", "--image-source", "build"), 2, "--image-source applies to a container cluster"},
		{runArgs("--client-log", ""), 2, "--client-log is empty"},
		{runArgs("--client-log", "trace"), 2, `--client-log "trace": use debug, info, warn, error`},
		{one("--client-log", "DEBUG"), 2, `--client-log "DEBUG": use debug, info, warn, error`},
		{upgrade("--client-log", "verbose"), 2, `--client-log "verbose": use debug, info, warn, error`},
		{runArgs("--embedded", "--base-port", "9092"), 2, "--base-port applies to a container cluster"},
		{runArgs("--bound", "0s"), 2, "--bound 0s: the run needs a positive bound"},
		{runArgs("--records", "-1"), 2, "--records -1: give 0"},
		{runArgs("--rate", "-1"), 2, "--rate -1: give 0"},
		{runArgs("--duration", "5"), 2, `invalid value "5" for flag -duration`},
		{runArgs("-v", "-q"), 2, "-v and -q exclude each other"},
		{[]string{"run", "extra", "--seed", "1"}, 2, `run takes no arguments, got "extra"`},
		{[]string{"run", "--out", underFile, "--scenario", "baseline"}, 2, "cannot be made: " + fx.file + " is a file"},
		{[]string{"run", "--out", underFile}, 2, "cannot be made: " + fx.file + " is a file"},

		// An --out that cannot be made or written is refused before the run starts, not when it
		// writes its plan (exit 3, after the seed and the rerun command were printed).
		{[]string{"run", "--out", dangling, "--scenario", "baseline", "--embedded"}, 2, "--out: " + dangling + " is a symbolic link to " + filepath.Join(tmp, "no", "such") + ", which does not exist"},
		{[]string{"run", "--out", filepath.Join(locked, "r"), "--scenario", "baseline", "--embedded"}, 2, "--out: " + filepath.Join(locked, "r") + " cannot be written: " + locked + " is not writable"},
		{[]string{"run", "--out", filepath.Join(locked, "c"), "--embedded"}, 2, "cannot be written: " + locked + " is not writable"},
		{upgrade("--out", filepath.Join(locked, "u")), 2, "cannot be written: " + locked + " is not writable"},
		{diff("--embedded", "--out", filepath.Join(locked, "d")), 2, "cannot be written: " + locked + " is not writable"},

		{[]string{"findings", "rerun", "--embedded", "--out", filepath.Join(locked, "f")}, 2, "--out " + filepath.Join(locked, "f") + ": " + filepath.Join(locked, "f")},
		{[]string{"findings", "rerun", "--embedded", "--out", filepath.Join(locked, "f")}, 2, "cannot be written: " + locked + " is not writable"},
		{[]string{"run", "--out", claimed, "--scenario", "baseline", "--embedded"}, 2, "--out: run directory " + claimed + " already holds a history.jsonl without a plan.json"},

		{[]string{"check", "-v", "-q", fx.killed}, 2, "-v and -q exclude each other"},
		{[]string{"check", fx.killed, "--write=maybe"}, 2, `invalid boolean value "maybe" for -write`},
		{[]string{"check", never}, 3, "never happened: it stopped in its setup"},

		{[]string{"report", "-o", "", fx.killed}, 2, "-o is empty"},
		{[]string{"report", "-o", filepath.Join(tmp, "no", "such", "dir", "r.html"), fx.killed}, 2, "does not exist: create it first"},
		{[]string{"report", fx.killed, "-o", aDir}, 2, "is a directory"},

		{upgrade("--from", ""), 2, "--from is empty"},
		{upgrade("--out", fx.file), 2, "is a file"},
		{upgrade("--out", underFile), 2, "cannot be made: " + fx.file + " is a file"},
		{upgrade("--bound", "0s"), 2, "--bound 0s: both runs need a positive bound"},
		{upgrade("--partitions", "0"), 2, "--partitions 0: the workload topic needs at least one partition"},
		{upgrade("--rate", "0"), 2, "--rate 0: the workload needs at least one record per second"},
		{upgrade("--base-port", "-1"), 2, "--base-port -1: give a port from 1 to 65532"},
		{upgrade("--kinds", ""), 2, "--kinds is empty"},
		{upgrade("--kinds", "classic,"), 2, `--kinds "classic," names an empty kind`},
		{upgrade("--kinds", "java-consumer"), 2, "--kinds: java-consumer runs only in groupquake run"},
		{upgrade("--kinds", "broken-consumer-give-up"), 2, "--kinds: broken-consumer-give-up runs only in groupquake run"},
		{upgrade("--scenario", "migration"), 2, "--scenario migration and --upgrade-to are separate runs"},
		{upgrade("--intensity", "lots"), 2, "--intensity:"},
		{upgrade("--baseline", "-1s"), 2, "--duration and --baseline must not be negative"},
		{upgrade("-v", "-q"), 2, "-v and -q exclude each other"},
		{upgrade("extra"), 2, `upgrade takes no arguments, got "extra"`},

		{diff("--timeout", "0s"), 2, "--timeout 0s: give a positive time"},
		{diff("--embedded", "--image-source", "build"), 2, "--image-source applies to the Kafka containers diff starts"},
		{diff("--embedded", "--base-port", "9092"), 2, "--base-port applies to the Kafka containers diff starts"},
		{diff("--base-port", "-1"), 2, "--base-port -1"},
		{diff("--scenarios", ""), 2, "--scenarios is empty"},
		{diff("--out", fx.killed), 2, "already holds a run"},
		{diff("--from", ""), 2, "--from is empty"},

		{[]string{"replay", "--bootstrap", closed, "--group", ""}, 2, "--group is empty"},
		{[]string{"replay", "--bootstrap", "", "--group", "g"}, 2, "--bootstrap is empty"},
		{[]string{"replay", "--bootstrap", closed, "--group", "g", "--kafka", ""}, 2, "--kafka is empty"},
		{[]string{"replay", "--bootstrap", closed, "--group", "g", "-v", "-q"}, 2, "-v and -q exclude each other"},

		{[]string{"image", "build", "--kafka", "4.4.0,"}, 2, `--kafka "4.4.0," names an empty version`},
		{[]string{"image", "build", "--kafka", ""}, 2, "--kafka is empty"},
		{[]string{"image", "build", "-v", "-q"}, 2, "-v and -q exclude each other"},
		{[]string{"engine", "up", "-v", "-q"}, 2, "-v and -q exclude each other"},

		{scale("--heap", "512", "--embedded"), 2, "--heap applies to the container cluster scale starts; --embedded runs in this process"},
		{scale("--kafka", "3.9.0"), 2, `--kafka: unknown Kafka version "3.9.0"`},
		{scale("--kafka", "4.1.2", "--embedded"), 2, "--kafka applies to the container cluster scale starts"},
		{scale("--nodes", "3", "--embedded"), 2, "--nodes applies to the container cluster scale starts"},
		{scale("--via-proxy", "--bootstrap", "127.0.0.1:1"), 2, "--via-proxy applies to the container cluster scale starts; with --bootstrap the cluster is yours"},
		{scale("--bootstrap", "nohost"), 2, `--bootstrap "nohost": "nohost" is not host:port`},
		{scale("--commit-interval", "-1s"), 2, "--commit-interval -1s: give 0 (none) or a positive time"},
		{scale("--steady", "-1s"), 2, "--steady -1s: give 0 (none) or a positive time"},
		{scale("--partitions", "0"), 2, "--partitions 0: the topic needs at least one partition"},
		{scale("--logs", fx.file), 2, "--logs " + fx.file + " is a file"},
		{[]string{"scale", "--members", "10,,20", "--protocol", "consumer", "--partitions", "4"}, 2, `--members "": each size is a whole number`},
		{scale("--logs", ""), 2, "--logs is empty"},

		{[]string{"stats", "-v", "-q", fx.killed}, 2, "-v and -q exclude each other"},
		{[]string{"version", "--json=yes"}, 2, `invalid boolean value "yes" for -json`},
		{[]string{"help", "nope"}, 2, `unknown command "nope"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var code int
			var stdout, stderr string
			if tc.code == exitFailed {
				// The world, not the input: with a live context, so that
				// the command meets the closed port.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var o, e bytes.Buffer
				code = runMain(ctx, tc.args, &o, &e)
				stdout, stderr = o.String(), e.String()
			} else {
				code, stdout, stderr = call(t, tc.args...)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			if code != tc.code || !strings.HasPrefix(last, "groupquake: ") || !strings.Contains(last, tc.first) {
				t.Errorf("exit %d, want %d with %q in the last line; stderr:\n%s", code, tc.code, tc.first, stderr)
			}
			if tc.code == exitBadInput && len(lines) != 1 {
				t.Errorf("bad input takes one line, got %d:\n%s", len(lines), stderr)
			}
			if tc.code == exitFailed && strings.Contains(stdout, "checkers:") {
				t.Errorf("a run that never happened printed a tally:\n%s", stdout)
			}
			if _, err := os.Stat(out); tc.code == exitBadInput && !os.IsNotExist(err) {
				t.Fatalf("bad input left %s behind (stat: %v)", out, err)
			}
			os.RemoveAll(out)
		})
	}
}

// TestRunHelpArgumentNames: the flag package takes a backquoted word of a
// usage for the flag's argument name, so no usage may hold one (run -h
// printed `-keep groupquake sweep --all`).
func TestRunHelpArgumentNames(t *testing.T) {
	for _, c := range append(commands, []string{"upgrade"}, []string{"diff"}, []string{"scale"}, []string{"report"}) {
		code, stdout, _ := call(t, append(append([]string{}, c...), "-h")...)
		if code != exitOK {
			t.Fatalf("%v -h: exit %d", c, code)
		}
		_, flags, _ := strings.Cut(stdout, "\nFlags:\n")
		for _, line := range strings.Split(flags, "\n") {
			// "  -name argname", then the usage after a tab (on this line
			// for a one-letter flag, else on the next).
			head, _, _ := strings.Cut(line, "\t")
			f := strings.Fields(head)
			if len(f) < 2 || !strings.HasPrefix(line, "  -") {
				continue
			}
			switch f[1] {
			case "string", "int", "duration", "uint", "float", "value", "uint64", "int64":
			default:
				t.Errorf("%v -h: flag %s shows %q as its argument:\n%s", c, f[0], strings.Join(f[1:], " "), line)
			}
		}
	}
}

// TestJavaRunThatNeverHappened: a Java member whose kafka-clients lacks
// what the driver needs fails in the run's setup; the run never happened,
// which the command says, with exit 3 and no tally. It needs a JDK and
// Maven (and Maven Central, or kafka-clients 2.0.0 in the cache).
func TestJavaRunThatNeverHappened(t *testing.T) {
	if testing.Short() {
		t.Skip("resolves kafka-clients 2.0.0 with Maven")
	}
	if err := java.CheckJava(); err != nil {
		t.Skip(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"run", "--embedded", "--kinds", "java-consumer", "--kafka-clients", "2.0.0", "--seed", "3", "--duration", "2s", "--out", dir}, &stdout, &stderr)
	// The failure's message is its first line; javac's errors follow it.
	if code != exitFailed || stdout.Len() != 0 || !strings.Contains(stderr.String(), "\ngroupquake: the run never happened (it stopped in its setup") ||
		!strings.Contains(stderr.String(), "compiling Driver.java against") {
		t.Errorf("exit %d, want 3, no tally, and that it never happened:\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// TestRunHelpListsScenarios: run -h says what every scenario does, as the
// plan's list of scenarios says it.
func TestRunHelpListsScenarios(t *testing.T) {
	code, stdout, _ := call(t, "run", "-h")
	if code != exitOK {
		t.Fatalf("run -h: exit %d", code)
	}
	_, list, ok := strings.Cut(stdout, "\nScenarios (--scenario):\n")
	if !ok {
		t.Fatalf("run -h lists no scenarios:\n%s", stdout)
	}
	for _, sc := range run.ScenarioList() {
		if !strings.Contains(list, sc.Name) || !strings.Contains(list, sc.About) {
			t.Errorf("run -h does not say what scenario %s does (%q)", sc.Name, sc.About)
		}
	}
}

// TestMemberCheckRefusals: member-check with a command that cannot be
// started, or a Kafka release groupquake does not serve, is refused with
// exit 2 before anything starts, and leaves no temporary directory. The
// first ran the whole check (a minute on the embedded cluster) and said
// the command broke 6 rules; the second exited 3 once the cluster was to
// start; both left a groupquake-member-check-* directory in TMPDIR.
func TestMemberCheckRefusals(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	missing := filepath.Join(t.TempDir(), "no-such-member")
	for _, tc := range []struct {
		args  []string
		first string
	}{
		{[]string{"member-check", "--run-duration", "0s", "--", missing}, "member-check: the command " + missing + " cannot be started"},
		{[]string{"member-check", "--run-duration", "0s", "--", "groupquake-no-such-command"}, `"groupquake-no-such-command": executable file not found in $PATH`},
		{[]string{"member-check", "--kafka", "9.9", "--run-duration", "0s", "--", "true"}, `--kafka: unknown Kafka version "9.9"`},
		{[]string{"member-check", "--kafka", "9.9", "--impl", "java"}, `--kafka: unknown Kafka version "9.9"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := call(t, tc.args...)
			if code != exitBadInput || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.first) {
				t.Errorf("exit %d, want %d and one line with %q; stderr:\n%s", code, exitBadInput, tc.first, stderr)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("left in TMPDIR: %s", left[0].Name())
			}
		})
	}
}

// TestReportOutNotARegularFile: report -o names a path that exists but is
// no regular file (a pipe standing for a device such as /dev/null, which
// the test must not risk; a symbolic link): refused with exit 2, the path
// left as it was. The page is written to a new file renamed over the path:
// `report -o /dev/null RUN` replaced /dev/null with the page.
func TestReportOutNotARegularFile(t *testing.T) {
	fx := makeFixtures(t)
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(tmp, "target.html")
	if err := os.WriteFile(target, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link.html")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		first string
	}{
		{[]string{"report", "-o", fifo, fx.killed}, "-o " + fifo + " is a device, a pipe or a socket, not a regular file"},
		{[]string{"report", "-o", fifo, filepath.Join(fx.root, "runs")}, "-o " + fifo + " is a device, a pipe or a socket"},
		{[]string{"report", "-o", link, fx.killed}, "-o " + link + " is a symbolic link to " + target + ", not a regular file"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := call(t, tc.args...)
			if code != exitBadInput || !strings.Contains(stderr, tc.first) {
				t.Errorf("exit %d, want %d with %q; stderr:\n%s", code, exitBadInput, tc.first, stderr)
			}
			if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
				t.Errorf("the pipe is gone: %v %v", st.Mode(), err)
			}
			if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the symbolic link is gone: %v %v", st.Mode(), err)
			}
			if b, _ := os.ReadFile(target); string(b) != "mine" {
				t.Errorf("the link's target now holds %d bytes", len(b))
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "*.tmp-*")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
