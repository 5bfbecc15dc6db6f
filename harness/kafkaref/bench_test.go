package kafkaref

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	jmhAll    = flag.Bool("kafkaref.jmh-all", false, "take every size of Kafka's ServerSideAssignorBenchmark (hours), not the default three")
	warmupMs  = flag.Int("kafkaref.java-warmup-ms", 2000, "each side's warm-up per case, before the rounds")
	measureMs = flag.Int("kafkaref.java-measure-ms", 1000, "each side's measured time per round (at least -kafkaref.java-min-iters iterations)")
	minIters  = flag.Int("kafkaref.java-min-iters", 5, "each side's least number of warm-up and of measured iterations per round")
	rounds    = flag.Int("kafkaref.rounds", 5, "rounds per case: in each, Kafka's side is timed, then groupquake's right after")
	goOnly    = flag.Bool("kafkaref.go-only", false, "time the Go side alone (for profiling it)")
	fresh     = flag.Bool("kafkaref.fresh", false, "time groupquake's assignors with Assign (a new result each time) instead of AssignInto (the coordinator's call, reusing the previous result's memory)")
)

func benchList() []BenchCase {
	if *jmhAll {
		return BenchCaseList(JMHAllSizes())
	}
	return BenchCaseList(JMHSizes)
}

// javaSide prepares the Java side, or says once why there is none (the Go
// side is then reported alone).
func javaSide(b *testing.B) (Runtime, bool) {
	if *goOnly {
		b.Logf("-kafkaref.go-only: Kafka's side is not measured")
		return Runtime{}, false
	}
	rt, err := runtime(b)
	if err != nil {
		b.Logf("Kafka's side is not measured (Go only): %v", err)
		return Runtime{}, false
	}
	return rt, true
}

// pair is one case's side-by-side result: the medians over the rounds of
// Kafka's time, groupquake's time and of their ratio within a round.
type pair struct {
	kafkaNs, goNs, ratio float64
}

// pairs caches the side-by-side result per case file: it is measured once
// however often the testing package calls the sub-benchmark.
var pairs sync.Map

// timePair times case name of file on both sides, alternating: one JVM
// serves the case (KafkaRef serve); after both sides warmed up, each round
// times Kafka's side, then groupquake's (run) right after, so the two see
// the same load on a shared machine, and the round's ratio is taken then.
// The medians over -kafkaref.rounds rounds are reported.
func timePair(b *testing.B, rt Runtime, file, name string, run func() error) pair {
	if p, ok := pairs.Load(file); ok {
		return p.(pair)
	}
	srv, err := rt.Serve(context.Background(), file)
	if err != nil {
		b.Fatalf("%s: Kafka's side: %v", name, err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			b.Errorf("%s: Kafka's side: %v", name, err)
		}
	}()
	if _, err := srv.Time(name, *warmupMs, *minIters); err != nil {
		b.Fatalf("%s: Kafka's side: %v", name, err)
	}
	if _, err := timeGo(run, *warmupMs, *minIters); err != nil {
		b.Fatal(err)
	}
	var ks, gs, rs []float64
	for range max(*rounds, 1) {
		k, err := srv.Time(name, *measureMs, *minIters)
		if err != nil {
			b.Fatalf("%s: Kafka's side: %v", name, err)
		}
		g, err := timeGo(run, *measureMs, *minIters)
		if err != nil {
			b.Fatal(err)
		}
		ks, gs, rs = append(ks, k.NsPerOp), append(gs, g), append(rs, g/k.NsPerOp)
	}
	p := pair{kafkaNs: median(ks), goNs: median(gs), ratio: median(rs)}
	b.Logf("%s: rounds (groupquake ns/op, Kafka ns/op): %s", name, roundsText(gs, ks))
	pairs.Store(file, p)
	return p
}

// timeGo is KafkaRef.loop on the Go side: run for at least ms milliseconds
// and minIters iterations, reading the clock after batches that double
// until one takes 100µs, and the time per run.
func timeGo(run func() error, ms, minIters int) (float64, error) {
	limit := time.Duration(ms) * time.Millisecond
	start := time.Now()
	n, batch := 0, 1
	for {
		for range batch {
			if err := run(); err != nil {
				return 0, err
			}
		}
		n += batch
		elapsed := time.Since(start)
		if n >= minIters && elapsed >= limit {
			return float64(elapsed.Nanoseconds()) / float64(n), nil
		}
		if elapsed < 100*time.Microsecond*time.Duration(n)/time.Duration(batch) {
			batch *= 2
		}
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func roundsText(gs, ks []float64) string {
	var b strings.Builder
	for i := range gs {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "(%.0f, %.0f)", gs[i], ks[i])
	}
	return b.String()
}

// timeBoth times run, groupquake's side of case name: the benchmark's ns/op
// (testing.B's loop, for benchstat), and with the Java side beside it, the
// rounds of timePair: kafka-ns/op and go-ns/op (the medians of each side's
// rounds) and go/kafka (the median of the rounds' ratios, groupquake's time
// over Kafka's, below 1 when groupquake is faster).
func timeBoth(b *testing.B, rt Runtime, haveJava bool, file, name string, run func() error) {
	var p pair
	if haveJava {
		p = timePair(b, rt, file, name, run)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
	if haveJava {
		b.ReportMetric(p.kafkaNs, "kafka-ns/op")
		b.ReportMetric(p.goNs, "go-ns/op")
		b.ReportMetric(p.ratio, "go/kafka")
	}
}

func caseFile(name string) string {
	return strings.NewReplacer("/", "_", "=", "", ",", "_").Replace(name) + ".cases"
}

// BenchmarkAssignVsKafka runs every assign case of BenchCaseList through
// groupquake's assignor (the benchmark's ns/op) and, when a JDK and Maven
// are there, through Kafka's own (UniformAssignor / RangeAssignor of the
// default release) in alternating rounds (timePair): kafka-ns/op, go-ns/op
// and go/kafka, groupquake's time over Kafka's. Both sides read the case's
// file. Each side calls its assignor as its coordinator does: Kafka's
// assign(), groupquake's AssignInto (GoAssign.Run; -kafkaref.fresh: Assign).
//
//	go test -run '^$' -bench AssignVsKafka ./harness/kafkaref/
func BenchmarkAssignVsKafka(b *testing.B) {
	benchVsKafka(b, "assign", func(back Cases, javaMajor int) (func() error, error) {
		g, err := PrepareAssign(&back.Assign[0], defaultKafka, javaMajor)
		if err != nil {
			return nil, err
		}
		if *fresh {
			return func() error { _, err := g.RunFresh(); return err }, nil
		}
		return func() error { _, err := g.Run(); return err }, nil
	})
}

// BenchmarkReconcileVsKafka does the same for the reconciliation:
// coordinator/consumergroup's reconciler against Kafka's
// CurrentAssignmentBuilder, one build() per member of the case per op.
//
//	go test -run '^$' -bench ReconcileVsKafka ./harness/kafkaref/
func BenchmarkReconcileVsKafka(b *testing.B) {
	benchVsKafka(b, "reconcile", func(back Cases, _ int) (func() error, error) {
		g, err := PrepareReconcile(&back.Reconcile[0], defaultKafka)
		if err != nil {
			return nil, err
		}
		return func() error { _, err := g.Run(); return err }, nil
	})
}

// BenchmarkTargetVsKafka does the same for the target assignment:
// coordinator/consumergroup's TargetAssignment (the heartbeat's target
// assignment builder) against Kafka's TargetAssignmentBuilder, as Kafka's
// TargetAssignmentBuilderBenchmark runs it (uniform assignor, one member
// joining), one build() per op.
//
//	go test -run '^$' -bench TargetVsKafka ./harness/kafkaref/
func BenchmarkTargetVsKafka(b *testing.B) {
	benchVsKafka(b, "target", func(back Cases, javaMajor int) (func() error, error) {
		g, err := PrepareTarget(&back.Target[0], defaultKafka, javaMajor)
		if err != nil {
			return nil, err
		}
		return func() error { _, err := g.Run(); return err }, nil
	})
}

// benchVsKafka times every bench case of kind through groupquake's side,
// which prepare builds from the case as read back from its file, and, when
// a JDK and Maven are there, through Kafka's (timeBoth).
func benchVsKafka(b *testing.B, kind string, prepare func(back Cases, javaMajor int) (func() error, error)) {
	rt, haveJava := javaSide(b)
	javaMajor := 21
	if haveJava {
		javaMajor = rt.JavaMajor
	}
	dir := b.TempDir()
	for _, bc := range benchList() {
		if bc.Kind != kind {
			continue
		}
		b.Run(bc.Name, func(b *testing.B) {
			cs, err := bc.Build()
			if err != nil {
				b.Fatal(err)
			}
			file, back := writeCases(b, dir, caseFile(bc.Name), cs)
			run, err := prepare(back, javaMajor)
			if err != nil {
				b.Fatal(err)
			}
			timeBoth(b, rt, haveJava, file, bc.Name, run)
		})
	}
}
