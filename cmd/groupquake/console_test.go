package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// TestOutputLevels runs one embedded run with link faults at each level:
// the default shows what a person acts on (phases, faults, where the
// results are), each line with the time since the start, and none of the
// wire underneath (the embedded cluster's protocol log, reset
// connections, kgo's log); -v shows that too; -q nothing but the result.
func TestOutputLevels(t *testing.T) {
	noise := []string{"wire: ", "kgo: ", "connection reset by peer", "INVALID_REQUEST", "use of closed network connection"}
	for _, level := range []string{"", "-v", "-q"} {
		t.Run("level "+level, func(t *testing.T) {
			args := []string{"run", "--embedded", "--scenario", "member-links", "--seed", "5", "--duration", "3s", "--out", filepath.Join(t.TempDir(), "run")}
			if level != "" {
				args = append(args, level)
			}
			var stdout, stderr bytes.Buffer
			code := runMain(context.Background(), args, &stdout, &stderr)
			if code == exitBadInput || code == exitFailed {
				t.Fatalf("exit %d:\n%s", code, stderr.String())
			}
			if !strings.Contains(stdout.String(), fmt.Sprintf("%d checkers: ", len(check.For(check.ConsumerGroups)))) {
				t.Errorf("stdout lacks the tally:\n%s", stdout.String())
			}
			errs := stderr.String()
			switch level {
			case "":
				for _, n := range noise {
					if strings.Contains(errs, n) {
						t.Errorf("the default output holds %q:\n%s", n, errs)
					}
				}
				for _, want := range []string{"phase workload", "nemesis: ", "report: "} {
					if !strings.Contains(errs, want) {
						t.Errorf("the default output lacks %q:\n%s", want, errs)
					}
				}
				for _, l := range strings.Split(strings.TrimSuffix(errs, "\n"), "\n") {
					if !strings.HasPrefix(l, "groupquake: [0:") {
						t.Errorf("line without the elapsed time: %q", l)
					}
				}
			case "-v":
				for _, want := range []string{"wire: serving Kafka 4.4.0", "kgo: ", "phase workload"} {
					if !strings.Contains(errs, want) {
						t.Errorf("-v lacks %q:\n%s", want, errs)
					}
				}
			case "-q":
				if code == exitOK && errs != "" {
					t.Errorf("-q printed messages:\n%s", errs)
				}
			}
		})
	}
}

// TestConsoleStill: a step silent for stillEvery is said to be still at
// it, with how long; during a workload, how far it got; never more often
// than the silence allows, and never with -q.
func TestConsoleStill(t *testing.T) {
	var b bytes.Buffer
	c := newConsole(&b, levelNormal)
	now := c.start
	c.now = func() time.Time { return now }
	c.Infof("image: resolving Kafka 4.4.0 broker jars with Maven")
	now = now.Add(10 * time.Second)
	if s := c.still(); s != "" {
		t.Errorf("after 10s: %q, want nothing yet", s)
	}
	now = now.Add(6 * time.Second)
	if s := c.still(); s != "still at it, 0:16 since: image: resolving Kafka 4.4.0 broker jars with Maven" {
		t.Errorf("after 16s: %q", s)
	}
	c.put(levelNormal, c.still(), false)
	if s := c.still(); s != "" {
		t.Errorf("right after saying so: %q", s)
	}
	now = now.Add(16 * time.Second)
	if s := c.still(); !strings.HasSuffix(s, "since: image: resolving Kafka 4.4.0 broker jars with Maven") {
		t.Errorf("the activity is the step's own line, not the last still line: %q", s)
	}

	c.expectWorkload(20 * time.Second)
	c.Infof("phase workload")
	now = now.Add(16 * time.Second)
	if s := c.still(); s != "workload: 0:16 of 0:20" {
		t.Errorf("in the workload: %q", s)
	}
	c.Infof("phase heal")
	now = now.Add(16 * time.Second)
	if s := c.still(); !strings.HasPrefix(s, "still at it, 0:16 since: phase heal") {
		t.Errorf("after the workload: %q", s)
	}
	if !strings.Contains(b.String(), "groupquake: [0:16] still at it, 0:16 since: image: resolving") {
		t.Errorf("the console wrote:\n%s", b.String())
	}

	var q bytes.Buffer
	quiet := newConsole(&q, levelQuiet)
	quiet.Infof("phase workload")
	quiet.Logf("wire: x")
	if q.Len() != 0 {
		t.Errorf("-q wrote %q", q.String())
	}
}

// TestIsDetail pins which messages only -v shows.
func TestIsDetail(t *testing.T) {
	for msg, want := range map[string]bool{
		"wire: 127.0.0.1:52658: read tcp: read: connection reset by peer; closing the connection": true,
		"kgo: m1: INFO initializing producer id":                                                  true,
		"teardown: member m2: INVALID_REQUEST: ...":                                               true,
		"note: teardown: member m2: context canceled":                                             true,
		"phase workload": false,
		"nemesis: link-reset m3→node 1 at 3.1s for 6.6s":                                           false,
		"image: resolving Kafka 4.4.0 broker jars with Maven (the machine's Maven settings apply)": false,
	} {
		if got := isDetail(msg); got != want {
			t.Errorf("isDetail(%q) = %v, want %v", msg, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0:00", 65 * time.Second: "1:05", 3725 * time.Second: "1:02:05"} {
		if got := clock(d); got != want {
			t.Errorf("clock(%s) = %q, want %q", d, got, want)
		}
	}
}

// TestContainerLog: testcontainers' own log (a line per container created,
// started, stopped) is detail: only -v shows it.
func TestContainerLog(t *testing.T) {
	defer tclog.SetDefault(tclog.Default())
	for _, lv := range []levelFlags{{}, {verbose: true}} {
		var b bytes.Buffer
		if _, err := lv.console(&b); err != nil {
			t.Fatal(err)
		}
		tclog.Printf("🐳 Creating container for image %s\n", "groupquake/kafka:4.4.0")
		shown := strings.Contains(b.String(), "] containers: 🐳 Creating container for image groupquake/kafka:4.4.0\n")
		if shown != lv.verbose {
			t.Errorf("-v %v: wrote %q", lv.verbose, b.String())
		}
	}
}
