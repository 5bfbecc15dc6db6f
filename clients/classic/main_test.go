package classic

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the package if any Member goroutine outlives the tests:
// Close must wait for every goroutine it started (a goleak-style check
// restricted to this package's frames).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := memberGoroutines(15 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines of clients/classic still running after every test closed its members:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// memberGoroutines waits up to d for the goroutines running a Member
// method to end and returns the stacks of those that did not.
func memberGoroutines(d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "clients/classic.(*Member)") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
