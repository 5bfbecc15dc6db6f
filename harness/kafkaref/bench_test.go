package kafkaref

import (
	"context"
	"flag"
	"strings"
	"sync"
	"testing"
)

var (
	jmhAll    = flag.Bool("kafkaref.jmh-all", false, "take every size of Kafka's ServerSideAssignorBenchmark (hours), not the default three")
	warmupMs  = flag.Int("kafkaref.java-warmup-ms", 2000, "the Java side's warm-up per case, in one JVM per case")
	measureMs = flag.Int("kafkaref.java-measure-ms", 2000, "the Java side's measured time per case (at least -kafkaref.java-min-iters iterations)")
	minIters  = flag.Int("kafkaref.java-min-iters", 5, "the Java side's least number of warm-up and of measured iterations per case")
	goOnly    = flag.Bool("kafkaref.go-only", false, "time the Go side alone (for profiling it)")
)

var (
	benchOnce  sync.Once
	benchCases Cases
	benchErr   error
)

func loadBenchCases() (Cases, error) {
	benchOnce.Do(func() {
		sizes := JMHSizes
		if *jmhAll {
			sizes = JMHAllSizes()
		}
		benchCases, benchErr = BenchCases(sizes)
	})
	return benchCases, benchErr
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

// javaTimings caches the Java side's time per case file: the JVM runs once
// per case, however often the testing package calls the sub-benchmark.
var javaTimings sync.Map

func javaTime(b *testing.B, rt Runtime, file, name string) (Timing, bool) {
	if t, ok := javaTimings.Load(file); ok {
		return t.(Timing), true
	}
	res, err := rt.Time(context.Background(), file, *warmupMs, *measureMs, *minIters)
	if err != nil {
		b.Fatalf("%s: Kafka's side: %v", name, err)
	}
	t, ok := res[name]
	if !ok {
		b.Fatalf("%s: Kafka's side printed no time for the case", name)
	}
	javaTimings.Store(file, t)
	return t, true
}

// timeBoth times run, groupquake's side of case name (the benchmark's
// ns/op), and with the Java side beside it reports Kafka's ns/op for the
// case's file and groupquake's time over Kafka's.
func timeBoth(b *testing.B, rt Runtime, haveJava bool, file, name string, run func() error) {
	var java Timing
	if haveJava {
		java, _ = javaTime(b, rt, file, name)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
	if haveJava {
		goNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(java.NsPerOp, "kafka-ns/op")
		b.ReportMetric(goNs/java.NsPerOp, "go/kafka")
	}
}

func caseFile(name string) string {
	return strings.NewReplacer("/", "_", "=", "", ",", "_").Replace(name) + ".cases"
}

// BenchmarkAssignVsKafka runs every assign case of BenchCases through
// groupquake's assignor (the benchmark's ns/op) and, when a JDK and Maven
// are there, through Kafka's own (UniformAssignor / RangeAssignor of the
// default release, one JVM per case, timed after a warm-up): kafka-ns/op and
// go/kafka, groupquake's time over Kafka's. Both sides read the case's file.
//
//	go test -run '^$' -bench AssignVsKafka ./harness/kafkaref/
func BenchmarkAssignVsKafka(b *testing.B) {
	cs, err := loadBenchCases()
	if err != nil {
		b.Fatal(err)
	}
	rt, haveJava := javaSide(b)
	javaMajor := 21
	if haveJava {
		javaMajor = rt.JavaMajor
	}
	dir := b.TempDir()
	for i := range cs.Assign {
		c := cs.Assign[i]
		b.Run(c.Name, func(b *testing.B) {
			file, back := writeCases(b, dir, caseFile(c.Name), Cases{Assign: []AssignCase{c}})
			g, err := PrepareAssign(&back.Assign[0], defaultKafka, javaMajor)
			if err != nil {
				b.Fatal(err)
			}
			timeBoth(b, rt, haveJava, file, c.Name, func() error { _, err := g.Run(); return err })
		})
	}
}

// BenchmarkReconcileVsKafka does the same for the reconciliation:
// coordinator/consumergroup's reconciler against Kafka's
// CurrentAssignmentBuilder, one build() per member of the case per op.
//
//	go test -run '^$' -bench ReconcileVsKafka ./harness/kafkaref/
func BenchmarkReconcileVsKafka(b *testing.B) {
	cs, err := loadBenchCases()
	if err != nil {
		b.Fatal(err)
	}
	rt, haveJava := javaSide(b)
	dir := b.TempDir()
	for i := range cs.Reconcile {
		c := cs.Reconcile[i]
		b.Run(c.Name, func(b *testing.B) {
			file, back := writeCases(b, dir, caseFile(c.Name), Cases{Reconcile: []ReconcileCase{c}})
			g, err := PrepareReconcile(&back.Reconcile[0], defaultKafka)
			if err != nil {
				b.Fatal(err)
			}
			timeBoth(b, rt, haveJava, file, c.Name, func() error { _, err := g.Run(); return err })
		})
	}
}
