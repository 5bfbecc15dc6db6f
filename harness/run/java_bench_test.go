package run_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/kinds"
)

// BenchmarkMemberStart measures what one member costs to bring up, a Java
// member (its own JVM) beside groupquake's: start-ms is Member.Start (for
// a Java member: the JVM up, the KafkaConsumer constructed and subscribed),
// owned-ms until it owns the topic's partitions (polling every 100ms), and
// for a Java member rss-MB, the JVM's resident memory once it consumes.
// Against the embedded cluster (no Docker); each iteration is a new member
// of a new group.
//
// The kinds suffixed /shared run with --java-jvms shared: each iteration
// starts 4 members, each of its own group, hosted in one new JVM; start-ms
// is their mean (the first pays the JVM's start), next-start-ms the mean
// of the 3 that join the running JVM, and rss-MB the JVM's resident memory
// divided by the 4 members once all consume.
//
//	go test ./harness/run -run '^$' -bench BenchmarkMemberStart -benchtime 5x
func BenchmarkMemberStart(b *testing.B) {
	e := clustertest.Embedded(b, cluster.EmbeddedConfig{Logf: func(string, ...any) {}}) // quiet: benchmarks print every log line
	clustertest.CreateTopic(b, e, "bench", 3)
	tc := &java.Toolchain{}
	if _, err := tc.Prepare(context.Background(), cluster.DefaultKafkaVersion); err != nil {
		b.Fatal(err)
	}
	reg := kinds.Default()
	for n, f := range kinds.Java(tc) {
		reg[n] = f
	}
	for _, kind := range []string{"consumer", "classic-cooperative", "java-consumer", "java-classic-cooperative"} {
		if kinds.IsJavaKind(kind) {
			b.Run(kind+"/shared", func(b *testing.B) { benchShared(b, e, reg[kind], kind) })
		}
		b.Run(kind, func(b *testing.B) {
			var start, owned, rss float64
			for i := range b.N {
				name := kind + "-" + strconv.Itoa(i)
				links, err := e.Links(name)
				if err != nil {
					b.Fatal(err)
				}
				m, err := reg[kind].New(kinds.MemberSpec{
					Name: name, Group: "bench-" + name, Topics: []string{"bench"}, KgoOpts: links.KgoOpts(),
					Hooks: clients.HookFunc(func(clients.Event) {}), SessionTimeout: 6 * time.Second, HeartbeatInterval: 300 * time.Millisecond,
					RebalanceTimeout: 10 * time.Second, KafkaClients: cluster.DefaultKafkaVersion,
				})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				t0 := time.Now()
				if err := m.Start(ctx); err != nil {
					b.Fatal(err)
				}
				start += float64(time.Since(t0).Milliseconds())
				for m.Owned().Count() < 3 && ctx.Err() == nil {
					pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
					m.Poll(pctx)
					pcancel()
				}
				owned += float64(time.Since(t0).Milliseconds())
				if jm, ok := m.(*java.Member); ok {
					rss += rssMB(b, jm.PID())
				}
				m.Close(ctx)
				cancel()
			}
			b.ReportMetric(start/float64(b.N), "start-ms")
			b.ReportMetric(owned/float64(b.N), "owned-ms")
			if rss > 0 {
				b.ReportMetric(rss/float64(b.N), "rss-MB")
			}
		})
	}
}

// hostedPerJVM is how many members a shared iteration hosts in its JVM.
const hostedPerJVM = 4

func benchShared(b *testing.B, e *cluster.Embedded, f kinds.Factory, kind string) {
	var start, next, owned, rss float64
	for i := range b.N {
		var ms []clients.Member
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t0 := time.Now()
		for j := range hostedPerJVM {
			name := kind + "-shared-" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
			links, err := e.Links(name)
			if err != nil {
				b.Fatal(err)
			}
			m, err := f.New(kinds.MemberSpec{
				Name: name, Group: "bench-" + name, Topics: []string{"bench"}, KgoOpts: links.KgoOpts(),
				Hooks: clients.HookFunc(func(clients.Event) {}), SessionTimeout: 6 * time.Second, HeartbeatInterval: 300 * time.Millisecond,
				RebalanceTimeout: 10 * time.Second, KafkaClients: cluster.DefaultKafkaVersion, JavaJVMs: kinds.JavaJVMsShared,
			})
			if err != nil {
				b.Fatal(err)
			}
			s0 := time.Now()
			if err := m.Start(ctx); err != nil {
				b.Fatal(err)
			}
			d := float64(time.Since(s0).Milliseconds())
			start += d
			if j > 0 {
				next += d
			}
			ms = append(ms, m)
		}
		for _, m := range ms {
			for m.Owned().Count() < 3 && ctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
				m.Poll(pctx)
				pcancel()
			}
		}
		owned += float64(time.Since(t0).Milliseconds())
		pid := ms[0].(*java.Member).PID()
		for _, m := range ms {
			if m.(*java.Member).PID() != pid {
				b.Fatalf("%s runs in JVM %d, not the shared %d", m.Name(), m.(*java.Member).PID(), pid)
			}
		}
		rss += rssMB(b, pid) / hostedPerJVM
		for _, m := range ms {
			m.Close(ctx)
		}
		cancel()
	}
	n := float64(b.N)
	b.ReportMetric(start/n/hostedPerJVM, "start-ms")
	b.ReportMetric(next/n/(hostedPerJVM-1), "next-start-ms")
	b.ReportMetric(owned/n, "all-owned-ms")
	b.ReportMetric(rss/n, "rss-MB")
}

// rssMB reads a process's resident set size from /proc.
func rssMB(b *testing.B, pid int) float64 {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatalf("reading the JVM's memory: %v", err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS in /proc status")
	return 0
}
