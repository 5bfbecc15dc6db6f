package history

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recordMix appends the i-th event of a cycle of 20 shaped like a run's
// history (a 4.1.2 → 4.4.0 rolling upgrade's history.jsonl: about half
// produce calls, a quarter consume facts, a tenth each commits and
// heartbeats): 5 produce invoke/ok pairs, 6 consumes, a commit of 3
// partitions and a heartbeat, each as an invoke and its completion. Process
// names carry tag, so that parallel writers keep their own calls open.
func recordMix(r *Recorder, tag string, i int64) error {
	member, producer := "m"+tag, "producer"+tag
	seq := i / 20
	var err error
	switch k := i % 20; {
	case k < 10 && k%2 == 0:
		_, err = r.Invoke(producer, FProduce, Produce{Topic: "gq-orders", Partition: int32(seq % 12), Seq: seq*5 + k/2, Offset: -1}, "")
	case k < 10:
		_, err = r.OK(producer, Produce{Topic: "gq-orders", Partition: int32(seq % 12), Seq: seq*5 + k/2, Offset: seq * 3, Acked: true}, "")
	case k < 16:
		_, err = r.Consumed(member, Consume{Member: member, Protocol: ProtocolConsumer, Topic: "gq-orders", Partition: int32(seq % 12), Offset: seq*6 + k, Seq: seq*6 + k, Epoch: 7})
	case k == 16:
		_, err = r.Invoke(member, FCommit, Commit{Member: member, MemberID: "Xq3kTz8uQ1uR2c7mZ0pW5A", Protocol: ProtocolConsumer, Epoch: 7, Offsets: []OffsetAt{
			{Topic: "gq-orders", Partition: 0, Offset: seq}, {Topic: "gq-orders", Partition: 4, Offset: seq}, {Topic: "gq-orders", Partition: 8, Offset: seq}}}, "periodic")
	case k == 17:
		_, err = r.OK(member, Commit{Member: member, MemberID: "Xq3kTz8uQ1uR2c7mZ0pW5A", Protocol: ProtocolConsumer, Epoch: 7, Offsets: []OffsetAt{
			{Topic: "gq-orders", Partition: 0, Offset: seq}, {Topic: "gq-orders", Partition: 4, Offset: seq}, {Topic: "gq-orders", Partition: 8, Offset: seq}}}, "")
	case k == 18:
		_, err = r.Invoke(member, FHeartbeat, Heartbeat{Member: member, MemberID: "Xq3kTz8uQ1uR2c7mZ0pW5A", Protocol: ProtocolConsumer, Epoch: 7}, "")
	default:
		_, err = r.OK(member, Heartbeat{Member: member, MemberID: "Xq3kTz8uQ1uR2c7mZ0pW5A", Protocol: ProtocolConsumer, Epoch: 7, ResultEpoch: 7}, "")
	}
	return err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.w.Write(p)
}

// recordEvents is how many events one iteration of BenchmarkRecord
// appends: `make bench` runs 3 iterations.
const recordEvents = 100_000

// BenchmarkRecord measures appending events as a run does (harness/run:
// one Recorder over history.jsonl opened O_APPEND and unbuffered, one
// Write per event, the run's monotonic clock, a tap), 100,000 events an
// iteration: "file" from one writer, "file-parallel" from one writer per
// core at once (members, producers and the nemesis share the one lock),
// "discard" the encoding alone. ns/event is the time to append one,
// B/event the history's size per event, B-alloc/event what recording one
// allocates. Run it with
//
//	go test -run '^$' -bench 'Record|Read' -benchtime 3x ./harness/history/
func BenchmarkRecord(b *testing.B) {
	open := func(b *testing.B) io.Writer {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "history.jsonl"), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		return f
	}
	bench := func(b *testing.B, w io.Writer, writers int) {
		cw := &countingWriter{w: w}
		var taps atomic.Int64
		r, err := NewRecorder(cw, SinceClock(time.Now()), Tap(func(Event) { taps.Add(1) }))
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for b.Loop() {
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for wr := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tag := strconv.Itoa(wr)
					for i := range int64(recordEvents / writers) {
						if err := recordMix(r, tag, i); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		n := r.Len()
		if n != int64(b.N*recordEvents/writers*writers) || taps.Load() != n {
			b.Fatalf("recorded %d events (tapped %d), want %d", n, taps.Load(), b.N*recordEvents)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
		b.ReportMetric(float64(cw.n.Load())/float64(n), "B/event")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(n), "B-alloc/event")
	}
	b.Run("file", func(b *testing.B) { bench(b, open(b), 1) })
	b.Run("file-parallel", func(b *testing.B) { bench(b, open(b), runtime.GOMAXPROCS(0)) })
	b.Run("discard", func(b *testing.B) { bench(b, io.Discard, 1) })
}
