package machine

import (
	"runtime"
	"testing"
)

// The process's own readings move with what it holds: 64 MiB kept alive
// and touched shows in the heap in use, and the resident set holds it.
func TestUseReadings(t *testing.T) {
	runtime.GC()
	heap0, rss0 := HeapInUse(), ResidentSet()
	if heap0 == 0 || rss0 == 0 {
		t.Fatalf("heap in use %d, resident set %d: want both above 0", heap0, rss0)
	}
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = byte(i)
	}
	heap1, rss1 := HeapInUse(), ResidentSet()
	// The heap grows by what is held; the resident set holds it (its
	// growth is not measured: the runtime may have kept freed pages).
	if heap1 < heap0+60<<20 || rss1 < heap1 {
		t.Errorf("after holding 64 MiB: heap in use %d → %d, resident set %d → %d: want the heap up by 60 MiB or more and the resident set above it",
			heap0, heap1, rss0, rss1)
	}
	runtime.KeepAlive(b)
}

func TestThis(t *testing.T) {
	m := This()
	if m.FDs == 0 || m.Memory == 0 {
		t.Fatalf("This() = %+v: want an open-file limit and memory above 0", m)
	}
}
