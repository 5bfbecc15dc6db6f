package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/harness/run"
)

// Output levels of the messages on stderr (results go to stdout at every
// level): -q shows none, the default what a person acts on (progress,
// faults, notes, where the results are), -v also the detail underneath
// (the embedded cluster's wire log, kgo's own log, every connection a fault
// broke, a member's error on its way out).
const (
	levelQuiet = iota
	levelNormal
	levelVerbose
)

// levelFlags are -v and -q, which every command that works for a while
// takes.
type levelFlags struct{ verbose, quiet bool }

func (l *levelFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&l.verbose, "v", false, "verbose: also print the detail underneath the progress (the embedded cluster's wire log, kgo's log, connections a fault broke)")
	fs.BoolVar(&l.quiet, "q", false, "quiet: print only the result (and, on failure, the one line that says why)")
}

// clientLogFlag is --client-log: the level of the members' kgo client log
// that a run writes to its run directory (run.ClientLogFile), apart from
// the console.
type clientLogFlag struct{ name string }

func (c *clientLogFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "client-log", "", "write the log of the members' kgo clients at this level ("+strings.Join(run.ClientLogLevels(), ", ")+") to "+run.ClientLogFile+" in the run directory, each line with the UTC time to the millisecond and the member's name; not part of the plan (default: no "+run.ClientLogFile+"; -v still shows kgo's info lines on stderr)")
}

// level is the kgo log level --client-log names, kgo.LogLevelNone when it
// is not given.
func (c *clientLogFlag) level() (kgo.LogLevel, error) {
	if c.name == "" {
		return kgo.LogLevelNone, nil
	}
	l, err := run.ParseClientLog(c.name)
	if err != nil {
		return l, badInput("--client-log %q: use %s", c.name, strings.Join(run.ClientLogLevels(), ", "))
	}
	return l, nil
}

// console returns the stderr console of the level the flags chose. It
// also takes testcontainers' log (each container created, started,
// stopped), which is detail.
func (l *levelFlags) console(stderr io.Writer) (*console, error) {
	level := levelNormal
	switch {
	case l.verbose && l.quiet:
		return nil, badInput("-v and -q exclude each other: give -v for more detail, -q for the result alone")
	case l.verbose:
		level = levelVerbose
	case l.quiet:
		level = levelQuiet
	}
	c := newConsole(stderr, level)
	tclog.SetDefault(containerLog{c})
	return c, nil
}

// containerLog is testcontainers' logger, writing to a console's detail.
type containerLog struct{ c *console }

func (l containerLog) Printf(format string, args ...any) {
	l.c.Debugf("containers: %s", strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// console writes the messages of one command to stderr at its level, each
// with the time since the command started, and during long silent steps
// says every stillEvery what it is still doing and how far it got.
type console struct {
	w     io.Writer
	level int
	start time.Time
	now   func() time.Time

	mu sync.Mutex
	// last is when the last line was written at the default level;
	// activity is that line, what a silent step is still doing.
	last     time.Time
	activity string
	// workload is the plan's workload length and workloadAt when its phase
	// began (zero outside it): the progress says how far it got.
	workload   time.Duration
	workloadAt time.Time
	// stillEvery is how long a step may stay silent before the console
	// says it is still at it.
	stillEvery time.Duration
}

func newConsole(w io.Writer, level int) *console {
	now := time.Now()
	return &console{w: w, level: level, start: now, now: time.Now, last: now, stillEvery: 15 * time.Second}
}

// detailPrefixes mark the messages shown only with -v: the embedded
// cluster's protocol server, kgo's own log, and a member's error while the
// run takes it down (kgo's INVALID_REQUEST on a connection a fault cut).
var detailPrefixes = []string{"wire: ", "kgo: ", "teardown: member ", "note: teardown: member "}

// detailWords mark the messages about a connection, not the group: a fault
// that cuts links resets connections by design.
var detailWords = []string{"connection reset by peer", "broken pipe", "use of closed network connection", "INVALID_REQUEST"}

// isDetail says whether msg is detail (shown only with -v).
func isDetail(msg string) bool {
	for _, p := range detailPrefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	for _, w := range detailWords {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// Logf is the harness's progress logger: detail goes out only with -v,
// everything else at the default level.
func (c *console) Logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if isDetail(msg) {
		c.write(levelVerbose, msg)
		return
	}
	c.Infof("%s", msg)
}

// Infof writes a message a person acts on (the default level).
func (c *console) Infof(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.mu.Lock()
	if name, ok := strings.CutPrefix(msg, "phase "); ok {
		if name == "workload" {
			c.workloadAt = c.now()
		} else {
			c.workloadAt = time.Time{}
		}
	}
	c.mu.Unlock()
	c.write(levelNormal, msg)
}

// Debugf writes detail (-v only).
func (c *console) Debugf(format string, args ...any) {
	c.write(levelVerbose, fmt.Sprintf(format, args...))
}

func (c *console) write(level int, msg string) { c.put(level, msg, true) }

// put writes msg at level; a line at the default level restarts the
// silence, and becomes the activity a silent step is still at when
// activity is set.
func (c *console) put(level int, msg string, activity bool) {
	if c == nil || c.level < level {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if level == levelNormal {
		c.last = now
		if activity {
			c.activity = msg
		}
	}
	for i, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		if i == 0 {
			fmt.Fprintf(c.w, "groupquake: [%s] %s\n", clock(now.Sub(c.start)), line)
		} else {
			fmt.Fprintf(c.w, "  %s\n", line)
		}
	}
}

// expectWorkload tells the console how long a run's workload lasts, so
// that its progress can say how far the workload got.
func (c *console) expectWorkload(d time.Duration) {
	c.mu.Lock()
	c.workload = d
	c.mu.Unlock()
}

// still returns the line that says what a step silent since c.last is
// still doing, or "" when it has not been silent for stillEvery.
func (c *console) still() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	silent := now.Sub(c.last)
	if c.activity == "" || silent < c.stillEvery {
		return ""
	}
	s := fmt.Sprintf("still at it, %s since: %s", clock(silent), c.activity)
	if !c.workloadAt.IsZero() && c.workload > 0 {
		done := min(now.Sub(c.workloadAt), c.workload)
		s = fmt.Sprintf("workload: %s of %s", clock(done), clock(c.workload))
	}
	return s
}

// watch says, until ctx ends, what a silent step is still doing; the
// returned stop ends it.
func (c *console) watch(ctx context.Context) (stop func()) {
	if c.level < levelNormal {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(c.stillEvery / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if s := c.still(); s != "" {
					c.put(levelNormal, s, false) // the step's own line stays the activity
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// clock renders d as m:ss (h:mm:ss from an hour on).
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// kgoLog is where a run sends its kgo clients' log: detail, so only with -v
// (nil otherwise, which spares the clients the logging).
func kgoLog(c *console) func(string, ...any) {
	if c.level < levelVerbose {
		return nil
	}
	return c.Debugf
}
