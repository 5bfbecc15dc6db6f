package light

import (
	"errors"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Stats counts the requests members sent and the answers they got, per
// API key, and the connections the pools opened. Safe for concurrent use.
type Stats struct {
	sentN     [128]atomic.Int64
	answeredN [128]atomic.Int64
	// droppedN counts requests given up while still queued: never written.
	droppedN [128]atomic.Int64
	// voidN counts requests given up after they were written: the broker
	// answers them into the void.
	voidN [128]atomic.Int64
	// latency[key][b] counts answers whose latency, from the member's
	// asking to the answer (the wait in the queue included), fell in
	// bucket b: quarter-octaves of microseconds. wait[key][b] counts the
	// part spent in the queue, from asking to writing.
	latency [128][latencyBuckets]atomic.Int64
	wait    [128][latencyBuckets]atomic.Int64

	open, peak, dialed atomic.Int64

	mu     sync.Mutex
	errs   map[string]int64
	sample map[string]string
}

// Error counts an error a member got (a Kafka error by its name, a
// transport error or timeout as "transport").
func (s *Stats) Error(err error) {
	if s == nil || err == nil {
		return
	}
	name := "transport"
	var ke *kerr.Error
	if errors.As(err, &ke) {
		name = ke.Message
	}
	s.mu.Lock()
	if s.errs == nil {
		s.errs, s.sample = map[string]int64{}, map[string]string{}
	}
	s.errs[name]++
	s.sample[name] = err.Error() // the latest, to say what a transport error was
	s.mu.Unlock()
}

// Samples returns the latest error text of each error name.
func (s *Stats) Samples() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneMap(s.sample)
}

// Errors returns the errors counted so far by name.
func (s *Stats) Errors() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneMap(s.errs)
}

// cloneMap is a copy of m, never nil.
func cloneMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	maps.Copy(out, m)
	return out
}

func okKey(key int16) bool { return key >= 0 && int(key) < 128 }

func (s *Stats) sent(key int16, waited time.Duration) {
	if s != nil && okKey(key) {
		s.sentN[key].Add(1)
		s.wait[key][bucketOf(waited)].Add(1)
	}
}

func (s *Stats) answered(key int16, d time.Duration) {
	if s != nil && okKey(key) {
		s.answeredN[key].Add(1)
		s.latency[key][bucketOf(d)].Add(1)
	}
}

func (s *Stats) dropped(key int16) {
	if s != nil && okKey(key) {
		s.droppedN[key].Add(1)
	}
}

func (s *Stats) void(key int16) {
	if s != nil && okKey(key) {
		s.voidN[key].Add(1)
	}
}

func (s *Stats) connOpened() {
	if s == nil {
		return
	}
	s.dialed.Add(1)
	n := s.open.Add(1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (s *Stats) connClosed() {
	if s != nil {
		s.open.Add(-1)
	}
}

// Conns returns the connections open now, the most that were open at once
// since the last ResetPeak, and how many were dialed in all.
func (s *Stats) Conns() (open, peak, dialed int64) {
	return s.open.Load(), s.peak.Load(), s.dialed.Load()
}

// ResetPeak starts the peak over from the connections open now.
func (s *Stats) ResetPeak() { s.peak.Store(s.open.Load()) }

const latencyBuckets = 4 * 40

func bucketOf(d time.Duration) int {
	us := float64(d.Microseconds())
	if us < 1 {
		return 0
	}
	return min(int(4*math.Log2(us)), latencyBuckets-1)
}

// bucketTop is the upper bound of bucket b.
func bucketTop(b int) time.Duration {
	return time.Duration(math.Exp2(float64(b+1)/4)) * time.Microsecond
}

// Latencies is a snapshot of a latency histogram of one API.
type Latencies [latencyBuckets]int64

// Latencies returns the histogram of API key's answer times so far, from
// the member's asking (its wait in the queue included) to the answer.
func (s *Stats) Latencies(key int16) Latencies {
	var l Latencies
	for b := range l {
		l[b] = s.latency[key][b].Load()
	}
	return l
}

// Waits returns the histogram of how long API key's requests waited in
// the queue for a connection, from the member's asking to the write.
func (s *Stats) Waits(key int16) Latencies {
	var l Latencies
	for b := range l {
		l[b] = s.wait[key][b].Load()
	}
	return l
}

// Since returns what l counted after earlier.
func (l Latencies) Since(earlier Latencies) Latencies {
	for b := range l {
		l[b] -= earlier[b]
	}
	return l
}

// Quantile returns an upper bound of the q-quantile (within a quarter
// octave), 0 when l is empty.
func (l Latencies) Quantile(q float64) time.Duration {
	var n int64
	for _, c := range l {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for b, c := range l {
		seen += c
		if seen >= max(rank, 1) {
			return bucketTop(b)
		}
	}
	return bucketTop(latencyBuckets - 1)
}

// Answered is the number of answers received so far, over every API.
func (s *Stats) Answered() int64 {
	var n int64
	for i := range s.answeredN {
		n += s.answeredN[i].Load()
	}
	return n
}

// AnsweredBy returns the answers received so far per API name.
func (s *Stats) AnsweredBy() map[string]int64 { return byName(&s.answeredN) }

// DroppedBy returns, per API name, the requests given up while still
// queued, so never sent.
func (s *Stats) DroppedBy() map[string]int64 { return byName(&s.droppedN) }

// VoidBy returns, per API name, the requests given up after they were
// written (their answer, if one comes, is thrown away).
func (s *Stats) VoidBy() map[string]int64 { return byName(&s.voidN) }

func byName(c *[128]atomic.Int64) map[string]int64 {
	out := map[string]int64{}
	for i := range c {
		if n := c[i].Load(); n > 0 {
			out[kmsg.NameForKey(int16(i))] = n
		}
	}
	return out
}
