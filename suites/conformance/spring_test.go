package conformance

import (
	"context"
	"errors"
	"flag"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/clients/process"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/membercheck"
)

var springKafka = flag.Bool("spring-kafka", false, "TestSpringKafkaMemberCheck: run member-check on the Spring Kafka member (the nightly's make java; over a minute, so not in the cluster tier)")

// TestSpringKafkaMemberCheck runs member-check's scenario, in both group
// protocols and with a short contract run each, on the Spring Kafka member
// (clients/java/spring: a listener container on the default kafka-clients)
// against the embedded cluster: every rule and every checker must hold. It
// needs a JDK and Maven (Maven Central, once per version), no Docker. It
// takes about a minute and a half, so it runs only with -spring-kafka (make
// java, the nightly workflow).
func TestSpringKafkaMemberCheck(t *testing.T) {
	if !*springKafka {
		t.Skip("runs with -spring-kafka (make java)")
	}
	if err := java.CheckJava(); err != nil {
		t.Fatalf("this test needs the Spring member's runtime: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	version := cluster.DefaultKafkaVersion
	rt, err := (&java.Toolchain{Logf: t.Logf}).PrepareSpring(ctx, version, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("spring-kafka %s, kafka-clients %s", rt.SpringKafka, rt.KafkaClients)
	rep, err := membercheck.Check(ctx, membercheck.Config{
		Command: rt.Command(java.JVMFlags), Kafka: version, Logf: t.Logf,
		RunDuration: 10 * time.Second, Seed: 1, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("member-check could not be carried out: %v", err)
	}
	memberCheckHolds(t, rep)
}

// TestSpringFencedContainerStopsForGood: a static Spring member (classic
// protocol) owns the partitions; a second process with the same
// group.instance.id joins and takes its place, so the first one's
// consumer is fenced (FENCED_INSTANCE_ID) and its container stops on its
// own (ConsumerStoppedEvent, reason FENCED). The member must say it
// stopped for good: Poll returns clients.ErrStopped, and again on the
// next poll, so that its supervisor starts a new process. A few seconds
// on the embedded cluster (no Docker), so it runs in the cluster tier.
func TestSpringFencedContainerStopsForGood(t *testing.T) {
	if testing.Short() {
		t.Skip("the cluster tier's: it runs JVMs of the Spring member (a JDK and Maven)")
	}
	if err := java.CheckJava(); err != nil {
		t.Fatalf("this test needs the Spring member's runtime: %v", err)
	}
	rt, err := (&java.Toolchain{Logf: t.Logf}).PrepareSpring(context.Background(), cluster.DefaultKafkaVersion, "")
	if err != nil {
		t.Fatal(err)
	}
	e := clustertest.Embedded(t, cluster.EmbeddedConfig{})
	clustertest.CreateTopic(t, e, "fenced", 2)
	start := func(links string) *process.Member {
		t.Helper()
		l, err := e.Links(links)
		if err != nil {
			t.Fatal(err)
		}
		m, err := process.New("m1", "fenced", []string{"fenced"}, process.Protocol(clients.Classic), process.InstanceID("fenced-m1"),
			process.Start(rt.Command(java.JVMFlags).Starter()), process.Client("spring-kafka"), process.KgoOpts(l.KgoOpts()...),
			process.SessionTimeout(10*time.Second), process.HeartbeatInterval(500*time.Millisecond))
		return clientstest.StartKilledAtEnd(t, m, err)
	}
	poll := func(m *process.Member) error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := m.Poll(ctx)
		return err
	}
	first := start("m1-1")
	deadline := time.Now().Add(time.Minute)
	for first.Owned().Count() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the first member never owned both partitions")
		}
		if err := poll(first); err != nil {
			t.Fatalf("first member: %v", err)
		}
	}
	second := start("m1-2")
	deadline = time.Now().Add(time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatal("the fenced member's poll never said it stopped")
		}
		if err := poll(second); err != nil {
			t.Fatalf("second member: %v", err)
		}
		err := poll(first)
		if err == nil {
			continue
		}
		if !errors.Is(err, clients.ErrStopped) {
			t.Fatalf("the fenced member's poll said %v, want clients.ErrStopped", err)
		}
		t.Logf("the fenced member stopped: %v", err)
		break
	}
	if err := poll(first); !errors.Is(err, clients.ErrStopped) {
		t.Fatalf("the next poll said %v, want the stop again", err)
	}
}
