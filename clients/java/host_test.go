package java_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
)

// events records what each hosted member reports.
type events struct{ clientstest.Recorder }

// leaves counts the leave requests (LeaveGroup, or a ConsumerGroupHeartbeat
// at epoch -1 or -2) member sent after index from: the member reports a
// request when its gateway writes it towards the broker, so an unreported
// one never left.
func (e *events) leaves(member string, from int) int {
	n := 0
	for _, ev := range e.All()[from:] {
		if ev.Member == member && ev.Kind == clients.Sent && ev.Op == clients.OpLeave {
			n++
		}
	}
	return n
}

func (e *events) len() int { return len(e.All()) }

// javaCluster checks that the Java member kinds can run here, starts an
// embedded cluster with topic (partitions partitions) and prepares the
// Java client of the cluster's Kafka version.
func javaCluster(t *testing.T, topic string, partitions int32) (*cluster.Embedded, java.Runtime) {
	t.Helper()
	if err := java.CheckJava(); err != nil {
		t.Fatalf("the Java member kinds cannot be tested on this machine: %v", err)
	}
	e := clustertest.Embedded(t, cluster.EmbeddedConfig{})
	clustertest.CreateTopic(t, e, topic, partitions)
	rt, err := (&java.Toolchain{Logf: t.Logf}).Prepare(context.Background(), cluster.DefaultKafkaVersion)
	if err != nil {
		t.Fatal(err)
	}
	return e, rt
}

// TestHostedMembers runs four Java members of both protocols (two groups)
// in one shared JVM against the embedded cluster: they share the process
// and each consumes; a crash of one member of each group (Kill) sends no
// leave and leaves the other members and the JVM running; a restart of a
// crashed member in the same JVM is a fresh consumer (a new member id);
// a frozen member answers nothing until thawed while another polls on.
func TestHostedMembers(t *testing.T) {
	e, rt := javaCluster(t, "hosted", 4)
	host := java.NewHost(rt, nil)
	evs := &events{}
	incarnation := 0
	member := func(name string, p clients.Protocol) *java.Member {
		t.Helper()
		incarnation++
		links, err := e.Links(name + "-" + strconv.Itoa(incarnation))
		if err != nil {
			t.Fatal(err)
		}
		m, err := java.New(name, "hosted-"+string(p), []string{"hosted"}, java.Protocol(p), java.WithHooks(evs),
			java.KgoOpts(links.KgoOpts()...), java.SessionTimeout(6*time.Second), java.HeartbeatInterval(500*time.Millisecond), java.MaxPollInterval(20*time.Second), java.Hosted(host))
		return clientstest.StartKilledAtEnd(t, m, err)
	}
	poll := func(ms ...*java.Member) {
		t.Helper()
		for _, m := range ms {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			_, err := m.Poll(ctx)
			cancel()
			if err != nil {
				t.Fatalf("%s: %v", m.Name(), err)
			}
		}
	}
	pollUntil := func(what string, done func() bool, ms ...*java.Member) {
		t.Helper()
		for end := time.Now().Add(90 * time.Second); !done(); {
			if time.Now().After(end) {
				t.Fatalf("no %s within 90s", what)
			}
			poll(ms...)
		}
	}
	a1, a2 := member("a1", clients.Classic), member("a2", clients.Classic)
	c1, c2 := member("c1", clients.Consumer), member("c2", clients.Consumer)
	all := []*java.Member{a1, a2, c1, c2}
	owns := func(ms ...*java.Member) func() bool {
		return func() bool {
			n := 0
			for _, m := range ms {
				if m.Owned().Count() == 0 {
					return false
				}
				n += m.Owned().Count()
			}
			return n == 4
		}
	}
	pollUntil("both groups sharing the partitions", func() bool { return owns(a1, a2)() && owns(c1, c2)() }, all...)
	pid := a1.PID()
	for _, m := range all {
		if m.PID() != pid || pid == 0 {
			t.Fatalf("%s runs in JVM %d, a1 in %d: want one shared JVM", m.Name(), m.PID(), pid)
		}
	}
	memberID := func(name string) string {
		all := evs.All()
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].Member == name && all[i].Kind == clients.Assigned && all[i].MemberID != "" {
				return all[i].MemberID
			}
		}
		return ""
	}
	oldA1 := memberID("a1")

	// Crash one member of each group.
	from := evs.len()
	for _, m := range []*java.Member{a1, c1} {
		if err := m.Kill(); err != nil {
			t.Fatalf("crashing %s: %v", m.Name(), err)
		}
	}
	// The others go on in the same JVM; the classic survivor takes the
	// crashed member's partitions once its session expires.
	pollUntil("a2 owning every partition after a1's crash", func() bool { return a2.Owned().Count() == 4 }, a2, c2)
	for range 10 {
		poll(c2)
	}
	if _, err := os.FindProcess(pid); err != nil || a2.PID() != pid || c2.PID() != pid {
		t.Fatalf("the shared JVM %d did not outlive the crashes (a2 in %d, c2 in %d)", pid, a2.PID(), c2.PID())
	}
	for _, name := range []string{"a1", "c1"} {
		if n := evs.leaves(name, from); n > 0 {
			t.Errorf("crashed %s sent %d leave requests: a crash must not leave the group", name, n)
		}
	}

	// A restart is a fresh consumer in the same JVM.
	a1 = member("a1", clients.Classic)
	pollUntil("the restarted a1 sharing the partitions", owns(a1, a2), a1, a2, c2)
	if a1.PID() != pid {
		t.Errorf("the restarted a1 runs in JVM %d, not the shared %d", a1.PID(), pid)
	}
	if id := memberID("a1"); id == "" || id == oldA1 {
		t.Errorf("the restarted a1 has member id %q, its crashed incarnation had %q: want a fresh consumer", id, oldA1)
	}

	// A frozen member answers nothing until thawed; the others poll on.
	if err := a2.Freeze(true); err != nil {
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := a2.Poll(ctx)
		answered <- err
	}()
	for range 10 {
		poll(c2)
	}
	select {
	case err := <-answered:
		t.Fatalf("frozen a2 answered its poll (err %v) before the thaw", err)
	default:
	}
	if err := a2.Freeze(false); err != nil {
		t.Fatal(err)
	}
	if err := <-answered; err != nil {
		t.Errorf("a2's poll after the thaw: %v", err)
	}

	// A clean close leaves, as in a JVM of its own.
	from = evs.len()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c2.Close(ctx); err != nil {
		t.Errorf("closing c2: %v", err)
	}
	if evs.leaves("c2", from) == 0 {
		t.Error("c2 closed without a leave heartbeat")
	}
}
