package java_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
	"github.com/groupquake/groupquake/clients/java"
)

// TestRefusedStaticMemberStopsForGood: a static consumer-protocol
// KafkaConsumer is crashed (its JVM killed, no leave) and a new one with
// the same group.instance.id starts at once, within the crashed one's
// session. The coordinator refuses it UNRELEASED_INSTANCE_ID, KafkaConsumer
// throws UnreleasedInstanceIdException from poll once, and the driver marks
// it as an exception the application cannot go on from: Poll says the
// member stopped for good (clients.ErrStopped), so that its supervisor can
// restart it, where before it went on polling a consumer that would never
// join.
func TestRefusedStaticMemberStopsForGood(t *testing.T) {
	e, rt := javaCluster(t, "refused", 2)
	start := func(links string) *java.Member {
		t.Helper()
		l, err := e.Links(links)
		if err != nil {
			t.Fatal(err)
		}
		m, err := java.New("m1", "refused", []string{"refused"}, java.Protocol(clients.Consumer), java.InstanceID("refused-m1"),
			java.KgoOpts(l.KgoOpts()...), java.MaxPollInterval(20*time.Second), java.WithRuntime(rt))
		return clientstest.StartKilledAtEnd(t, m, err)
	}
	first := start("m1-1")
	deadline := time.Now().Add(time.Minute)
	for first.Owned().Count() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the first consumer never owned both partitions")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		if _, err := first.Poll(ctx); err != nil {
			t.Fatalf("first consumer: %v", err)
		}
		cancel()
	}
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	second := start("m1-2")
	deadline = time.Now().Add(time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatal("the second consumer's poll never said it stopped")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := second.Poll(ctx)
		cancel()
		if err == nil {
			if second.Owned().Count() > 0 {
				t.Fatal("the second consumer was given partitions while the crashed one held the instance id")
			}
			continue
		}
		if !errors.Is(err, clients.ErrStopped) || !strings.Contains(err.Error(), "UnreleasedInstanceIdException") {
			t.Fatalf("the second consumer's poll said %v, want clients.ErrStopped for UnreleasedInstanceIdException", err)
		}
		break
	}
	if _, err := second.Poll(context.Background()); !errors.Is(err, clients.ErrStopped) {
		t.Fatalf("the next poll said %v, want the stop again", err)
	}
}
