package results

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// genRun writes a synthetic consumer-protocol run of at least n events to path through a
// Recorder: 6 members heartbeating, consuming and committing 12 partitions, a partition moving
// between members every few seconds, a fault every minute, 30s of setup. It returns the events.
func genRun(tb testing.TB, path string, n int) []history.Event {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var now time.Duration
	rec, err := history.NewRecorder(w, func() time.Duration { return now }, history.Retain())
	if err != nil {
		tb.Fatal(err)
	}
	must := func(_ history.Event, err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	const members, parts = 6, 12
	name := func(m int) string { return "m" + strconv.Itoa(m) }
	owner := make([]int, parts)
	epoch := make([]int32, members)
	off := make([]int64, parts)
	must(rec.BeginPhase(history.PhaseSetup, ""))
	now = 30 * time.Second
	must(rec.BeginPhase(history.PhaseWarmup, ""))
	for m := range members {
		epoch[m] = 1
		var ps []int32
		for p := m; p < parts; p += members {
			owner[p] = m
			ps = append(ps, int32(p))
		}
		must(rec.Assigned(name(m), history.Assignment{Member: name(m), Protocol: history.ProtocolConsumer, Epoch: 1, Partitions: history.TPs("t", ps...)}, ""))
	}
	must(rec.BeginPhase(history.PhaseWorkload, ""))
	group := int32(1)
	for tick := 0; rec.Len() < int64(n); tick++ {
		now += 10 * time.Millisecond
		m := tick % members
		hb := history.Heartbeat{Member: name(m), Protocol: history.ProtocolConsumer, Epoch: epoch[m], ResultEpoch: epoch[m]}
		must(rec.Invoke(name(m)+"/hb", history.FHeartbeat, hb, ""))
		must(rec.OK(name(m)+"/hb", hb, ""))
		for p := range parts {
			if owner[p] != m {
				continue
			}
			must(rec.Consumed(name(m), history.Consume{Member: name(m), Topic: "t", Partition: int32(p), Offset: off[p], Seq: off[p], Epoch: epoch[m]}))
			off[p]++
			if tick%50 == m {
				c := history.Commit{Member: name(m), Protocol: history.ProtocolConsumer, Epoch: epoch[m], Offsets: []history.OffsetAt{{Topic: "t", Partition: int32(p), Offset: off[p]}}}
				must(rec.Invoke(name(m)+"/commit", history.FCommit, c, ""))
				must(rec.OK(name(m)+"/commit", c, ""))
			}
		}
		if tick%500 == 499 { // a partition moves to the next member
			p := (tick / 500) % parts
			from, to := owner[p], (owner[p]+1)%members
			group++
			// It commits what it consumed before it gives the partition up (CommittedBeforeRevoked).
			c := history.Commit{Member: name(from), Protocol: history.ProtocolConsumer, Epoch: epoch[from], Offsets: []history.OffsetAt{{Topic: "t", Partition: int32(p), Offset: off[p]}}}
			must(rec.Invoke(name(from)+"/commit", history.FCommit, c, ""))
			must(rec.OK(name(from)+"/commit", c, ""))
			must(rec.Revoked(name(from), history.Assignment{Member: name(from), Protocol: history.ProtocolConsumer, Epoch: epoch[from], Partitions: history.TPs("t", int32(p))}, ""))
			epoch[from], epoch[to] = group, group
			must(rec.Assigned(name(to), history.Assignment{Member: name(to), Protocol: history.ProtocolConsumer, Epoch: group, Partitions: history.TPs("t", int32(p))}, ""))
			owner[p] = to
		}
		if tick%6000 == 3000 {
			v := history.Fault{What: "latency", Target: []string{name(m) + "->broker-1"}}
			must(rec.Invoke("nemesis/"+strconv.Itoa(tick), history.FFaultStart, v, ""))
			must(rec.OK("nemesis/"+strconv.Itoa(tick), v, ""))
			now += time.Millisecond
			must(rec.Invoke("nemesis/"+strconv.Itoa(tick), history.FFaultStop, v, ""))
			must(rec.OK("nemesis/"+strconv.Itoa(tick), v, ""))
		}
	}
	for _, ph := range []string{history.PhaseHeal, history.PhaseQuiesce, history.PhaseFinal, history.PhaseTeardown} {
		now += time.Second
		must(rec.BeginPhase(ph, ""))
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return rec.Events()
}

// countingWriter counts what the report writes.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)

// peakRSS is the process's peak resident set (VmHWM), in MB; 0 where /proc cannot say.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkReport1M is what `groupquake report RUN_DIR` does over a history of 1,000,000 events
// with its verdicts.json: stream history.jsonl through the page (load+render: WriteReportFrom,
// which keeps only the events the page shows and decodes only their payloads), derive the
// ownership timeline from the checkers' facts and write the page (render: WriteReport with the
// events already in memory, as at the end of a run). Run it with
//
//	go test -run '^$' -bench Report1M -benchtime 3x ./results/
//
// peak-RSS-MB is the highest resident set of one iteration (where Linux lets the high-water mark be
// reset; elsewhere it includes generating and judging the history).
func BenchmarkReport1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "history.jsonl")
	events := genRun(b, path, 1_000_000)
	plan := history.Plan{Group: "g", Protocol: history.ProtocolConsumer, Topics: []history.TopicPlan{{Name: "t", Partitions: 12}}}
	rep := check.Judge(events, nil, plan)
	for _, v := range rep.Verdicts {
		if !v.Holds {
			b.Fatalf("%s: %d violations in the generated history (first: %v)", v.Name, len(v.Violations), v.Violations[0])
		}
	}
	n := len(events)
	events = nil
	for _, load := range []bool{true, false} {
		name := "render"
		if load {
			name = "load+render"
		}
		b.Run(name, func(b *testing.B) {
			var evs []history.Event
			if !load {
				l, err := history.Load(path)
				if err != nil {
					b.Fatal(err)
				}
				evs = l.Events
			}
			var out countingWriter
			var peak float64
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				// Each iteration is one report: measure its own peak, without the previous
				// iteration's garbage (Linux resets the high-water mark).
				b.StopTimer()
				runtime.GC()
				debug.FreeOSMemory()
				_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
				b.StartTimer()
				out.n = 0
				r := Report{Title: "1M", Verdicts: rep.Verdicts, Cost: rep.RebalanceCost, Partitions: plan.Partitions()}
				if load {
					f, err := os.Open(path)
					if err != nil {
						b.Fatal(err)
					}
					err = WriteReportFrom(&out, r, f)
					f.Close()
					if err != nil {
						b.Fatal(err)
					}
				} else {
					r.Events = evs
					if err := WriteReport(&out, r); err != nil {
						b.Fatal(err)
					}
				}
				peak = max(peak, peakRSS())
			}
			b.ReportMetric(float64(n), "events")
			b.ReportMetric(float64(out.n)/(1<<20), "html-MB")
			b.ReportMetric(peak, "peak-RSS-MB")
		})
	}
}
