package progress

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCounter: lines are counted as they come (also split across writes),
// the count is said at most every Every, and Done says the final count
// once.
func TestCounter(t *testing.T) {
	now := time.Unix(0, 0)
	var said []string
	c := &Counter{
		Step: "image: resolving Kafka 4.4.0 broker jars", Units: "jars downloaded",
		Unit:  func(l string) bool { return strings.HasPrefix(l, "Downloaded from") && strings.Contains(l, ".jar") },
		Every: 5 * time.Second, Now: func() time.Time { return now },
		Logf: func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) },
	}
	fmt.Fprint(c, "[INFO] Scanning for projects...\nDownloaded from central: https://x/kafka-clients-4.4.0.jar (5 MB at 2 MB/s)\nDownloaded from central: https://x/zstd-jni-1.5.6.ja")
	fmt.Fprint(c, "r (6 MB)\nDownloaded from central: https://x/a.pom (1 kB)\n")
	if c.Count() != 2 || len(said) != 0 {
		t.Fatalf("count %d, said %q: want 2 counted, nothing said in the first burst", c.Count(), said)
	}
	now = now.Add(2 * time.Second)
	fmt.Fprint(c, "Downloaded from central: https://x/b.jar (1 kB)\n")
	if len(said) != 0 {
		t.Errorf("said %q within Every", said)
	}
	now = now.Add(4 * time.Second)
	fmt.Fprint(c, "Downloaded from central: https://x/c.jar (1 kB)\n")
	if len(said) != 1 || said[0] != "image: resolving Kafka 4.4.0 broker jars: 4 jars downloaded" {
		t.Errorf("after 6s: %q", said)
	}
	fmt.Fprint(c, "Downloaded from central: https://x/d.jar (1 kB)\n")
	c.Done()
	c.Done()
	if len(said) != 2 || said[1] != "image: resolving Kafka 4.4.0 broker jars: 5 jars downloaded" {
		t.Errorf("Done: %q", said)
	}
}
