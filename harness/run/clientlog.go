package run

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ClientLogFile is the members' kgo client log in a run directory, written
// only when Config.ClientLog asks for it (groupquake run --client-log).
const ClientLogFile = "client.log"

// clientLogLevels are the levels Config.ClientLog takes, by name, most
// detailed first.
var clientLogLevels = []struct {
	name  string
	level kgo.LogLevel
}{
	{"debug", kgo.LogLevelDebug},
	{"info", kgo.LogLevelInfo},
	{"warn", kgo.LogLevelWarn},
	{"error", kgo.LogLevelError},
}

// ClientLogLevels are the names ParseClientLog accepts.
func ClientLogLevels() []string {
	var out []string
	for _, l := range clientLogLevels {
		out = append(out, l.name)
	}
	return out
}

// ParseClientLog is the kgo log level named s (debug, info, warn, error).
func ParseClientLog(s string) (kgo.LogLevel, error) {
	for _, l := range clientLogLevels {
		if l.name == s {
			return l.level, nil
		}
	}
	return kgo.LogLevelNone, fmt.Errorf("unknown client log level %q: use %s", s, strings.Join(ClientLogLevels(), ", "))
}

// clientLog is ClientLogFile, open for a run: every member's kgo client
// writes its lines there, each with the time to the millisecond and the
// member's name. Lines written after close are dropped (a client may log
// while it closes).
type clientLog struct {
	level kgo.LogLevel
	now   func() time.Time

	mu     sync.Mutex
	f      *os.File
	closed bool
}

// openClientLog creates ClientLogFile in dir for lines at level and below.
func openClientLog(dir string, level kgo.LogLevel, now func() time.Time) (*clientLog, error) {
	f, err := os.OpenFile(filepath.Join(dir, ClientLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the client log: %w", err)
	}
	return &clientLog{level: level, now: now, f: f}, nil
}

func (c *clientLog) write(name string, level kgo.LogLevel, msg string, keyvals []any) {
	var b strings.Builder
	b.WriteString(c.now().UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	fmt.Fprintf(&b, " %s %s %s", name, level, msg)
	writeKeyvals(&b, keyvals)
	b.WriteByte('\n')
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.f.WriteString(b.String()) // a lost log line is no reason to stop a run
	}
}

func (c *clientLog) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.f.Close()
}

func writeKeyvals(b *strings.Builder, keyvals []any) {
	for i := 0; i+1 < len(keyvals); i += 2 {
		fmt.Fprintf(b, " %v=%v", keyvals[i], keyvals[i+1])
	}
}

// kgoLogger is the kgo.Logger of the client of name: its lines at kgo's
// info level and below go to logf (Config.KgoLog, groupquake run -v), and,
// for a member, its lines at file's level and below to file
// (Config.ClientLog). Either may be nil.
type kgoLogger struct {
	name string
	logf func(string, ...any)
	file *clientLog
}

func (l kgoLogger) Level() kgo.LogLevel {
	lv := kgo.LogLevelNone
	if l.logf != nil {
		lv = kgo.LogLevelInfo
	}
	if l.file != nil && l.file.level > lv {
		lv = l.file.level
	}
	return lv
}

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if l.logf != nil && level <= kgo.LogLevelInfo {
		var b strings.Builder
		writeKeyvals(&b, keyvals)
		l.logf("kgo: %s: %s %s%s", l.name, level, msg, b.String())
	}
	if l.file != nil && level <= l.file.level {
		l.file.write(l.name, level, msg, keyvals)
	}
}

// kgoOpts are opts plus, when Config.KgoLog is set or, for a member,
// Config.ClientLog, a logger that sends the log of the kgo client of name
// there.
func (r *runner) kgoOpts(name string, opts []kgo.Opt, member bool) []kgo.Opt {
	l := kgoLogger{name: name, logf: r.cfg.KgoLog}
	if member {
		l.file = r.clientLog
	}
	if l.Level() == kgo.LogLevelNone {
		return opts
	}
	return append(slices.Clone(opts), kgo.WithLogger(l))
}
