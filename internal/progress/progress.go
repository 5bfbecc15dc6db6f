// Package progress turns the output of a slow step (Maven resolving jars,
// debootstrap fetching packages, the engine building an image) into a
// count a person can follow: each line that marks one unit done counts,
// and the count is said at most every Every.
package progress

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// Counter is an io.Writer that reads the step's output line by line and
// counts the lines Unit accepts. Safe for concurrent writes.
type Counter struct {
	// Step names the step ("image: resolving Kafka 4.4.0 broker jars");
	// Units names what it counts ("jars downloaded").
	Step, Units string
	// Unit says whether a line of the output marks one unit done.
	Unit func(line string) bool
	// Every is the least time between two reports (default 5s).
	Every time.Duration
	// Logf gets the reports; nil is silent.
	Logf func(format string, args ...any)
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu      sync.Mutex
	n       int
	said    int
	last    time.Time
	partial []byte
}

// Write counts the complete lines of p.
func (c *Counter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		line := string(bytes.TrimRight(c.partial[:i], "\r"))
		c.partial = c.partial[i+1:]
		if c.Unit != nil && c.Unit(line) {
			c.n++
		}
	}
	c.report(false)
	return len(p), nil
}

// Count returns how many units were counted.
func (c *Counter) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Done says the final count, when it is more than the last one said.
func (c *Counter) Done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.report(true)
}

func (c *Counter) report(final bool) {
	if c.Logf == nil || c.n == c.said {
		return
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	every := c.Every
	if every <= 0 {
		every = 5 * time.Second
	}
	t := now()
	if !final && !c.last.IsZero() && t.Sub(c.last) < every {
		return
	}
	if c.last.IsZero() && !final {
		// The first unit starts the clock: a burst of them is said once.
		c.last = t
		return
	}
	c.last, c.said = t, c.n
	c.Logf("%s: %d %s", c.Step, c.n, c.Units)
}

// MavenJars counts the jars Maven downloads, from the lines it writes in
// batch mode (-B): "Downloaded from central: https://.../x-1.0.jar (5 MB at
// 2 MB/s)". Jars already in the local repository are not downloaded, and
// not counted.
func MavenJars(step string, logf func(string, ...any)) *Counter {
	return &Counter{Step: step, Units: "jars downloaded", Logf: logf, Unit: func(l string) bool {
		l = strings.TrimPrefix(l, "[INFO] ")
		if !strings.HasPrefix(l, "Downloaded from ") {
			return false
		}
		url, _, _ := strings.Cut(l, " (")
		return strings.HasSuffix(url, ".jar")
	}}
}
