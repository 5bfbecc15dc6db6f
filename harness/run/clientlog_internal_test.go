package run

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestParseClientLog: each level by name, and a bad one refused naming
// the accepted ones.
func TestParseClientLog(t *testing.T) {
	for name, want := range map[string]kgo.LogLevel{"debug": kgo.LogLevelDebug, "info": kgo.LogLevelInfo, "warn": kgo.LogLevelWarn, "error": kgo.LogLevelError} {
		if got, err := ParseClientLog(name); err != nil || got != want {
			t.Errorf("ParseClientLog(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	for _, bad := range []string{"", "DEBUG", "trace", "none"} {
		if _, err := ParseClientLog(bad); err == nil || !strings.Contains(err.Error(), "use debug, info, warn, error") {
			t.Errorf("ParseClientLog(%q) = %v; want a refusal naming debug, info, warn, error", bad, err)
		}
	}
}

// clientLogged is the logger a kgo client built with opts has.
func clientLogged(t *testing.T, opts []kgo.Opt) kgo.Logger {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers("127.0.0.1:1"))...) // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	l, _ := cl.OptValue(kgo.WithLogger).(kgo.Logger)
	return l
}

// TestKgoOptsClientLog: Config.ClientLog's level reaches a member's kgo
// client, whose lines land in ClientLogFile with the time to the
// millisecond and the member's name; a producer's client gets no file
// logger, and without ClientLog or KgoLog no logger at all.
func TestKgoOptsClientLog(t *testing.T) {
	dir := t.TempDir()
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC) }
	cl, err := openClientLog(dir, kgo.LogLevelDebug, now)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{cfg: Config{ClientLog: kgo.LogLevelDebug}, clientLog: cl}

	l := clientLogged(t, r.kgoOpts("m1", nil, true))
	if l == nil || l.Level() != kgo.LogLevelDebug {
		t.Fatalf("member m1's kgo client logs at %v; want debug", l)
	}
	if p := clientLogged(t, r.kgoOpts("p0", nil, false)); p != nil && p.Level() != kgo.LogLevelNone {
		t.Errorf("producer p0's kgo client logs at %v; want nothing (ClientLog is the members')", p.Level())
	}
	if opts := (&runner{}).kgoOpts("m1", nil, true); len(opts) != 0 {
		t.Errorf("without ClientLog or KgoLog kgoOpts added %d options; want none", len(opts))
	}
	l.Log(kgo.LogLevelDebug, "wrote request", "broker", 1, "bytes_written", 42)
	if err := cl.close(); err != nil {
		t.Fatal(err)
	}
	l.Log(kgo.LogLevelDebug, "after close") // dropped, not a panic
	b, err := os.ReadFile(filepath.Join(dir, ClientLogFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "2026-01-02T03:04:05.678Z m1 DEBUG wrote request broker=1 bytes_written=42\n"; string(b) != want {
		t.Errorf("%s holds %q; want %q", ClientLogFile, b, want)
	}
}

// TestKgoLoggerLevels: the file gets the lines at its level and below;
// -v's logf only kgo's info lines and below, whatever the file's level.
func TestKgoLoggerLevels(t *testing.T) {
	dir := t.TempDir()
	cl, err := openClientLog(dir, kgo.LogLevelWarn, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	var terminal []string
	l := kgoLogger{name: "m2", file: cl, logf: func(f string, a ...any) { terminal = append(terminal, f) }}
	if l.Level() != kgo.LogLevelInfo {
		t.Errorf("with -v and a warn file the logger asks kgo for %v; want info", l.Level())
	}
	for _, lv := range []kgo.LogLevel{kgo.LogLevelDebug, kgo.LogLevelInfo, kgo.LogLevelWarn, kgo.LogLevelError} {
		l.Log(lv, "line")
	}
	cl.close()
	b, _ := os.ReadFile(filepath.Join(dir, ClientLogFile))
	if !regexp.MustCompile(`^\S+\.\d{3}Z m2 WARN line\n\S+\.\d{3}Z m2 ERROR line\n$`).Match(b) {
		t.Errorf("a warn %s holds %q; want the WARN and ERROR lines only", ClientLogFile, b)
	}
	if len(terminal) != 3 {
		t.Errorf("-v's logf got %d lines; want 3 (info, warn, error)", len(terminal))
	}
}
