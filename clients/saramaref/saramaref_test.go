package saramaref

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up after a minute", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAssignedWithoutPoll: Sarama's Setup runs when the SyncGroup is
// answered, whether the application polls or not, and the member reports
// the assignment then. The adapter first held Setup until the next Poll
// like Cleanup: a stalled member then reported, 20 s late, an assignment of
// a generation that had ended meanwhile, overlapping the next generation's
// owners (seed 204 of combined on the embedded cluster).
func TestAssignedWithoutPoll(t *testing.T) {
	got, m := clientstest.StartOnFake(t, func(hooks clients.Hooks, seed kgo.Opt) (*Member, error) {
		return New("m1", "g", []string{"t"}, WithHooks(hooks), KgoOpts(seed), SessionTimeout(6*time.Second), HeartbeatInterval(200*time.Millisecond), RebalanceTimeout(10*time.Second))
	})
	waitFor(t, "the assignment, reported without a Poll", func() bool { _, ok := got.First(clients.Assigned); return ok })
	a, _ := got.First(clients.Assigned)
	if a.Partitions.Count() != 3 || a.Generation < 1 || m.Owned().Count() != 3 {
		t.Errorf("Assigned = %+v, Owned = %v: want the 3 partitions at a generation", a, m.Owned())
	}
}

// TestStartWithoutBrokers: sarama.NewConsumerGroup fails when no seed
// broker answers; the member still starts (as a KafkaConsumer, whose
// constructor connects to nothing), reports the failure and tries again.
// The adapter first returned the error from Start, which stopped a run
// whose member was started while its node was killed (seed 202 of
// broker-faults on the embedded cluster).
func TestStartWithoutBrokers(t *testing.T) {
	var got clientstest.Recorder
	m, err := New("m1", "g", []string{"t"}, WithHooks(&got), KgoOpts(kgo.SeedBrokers("127.0.0.1:1")))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatalf("Start with no broker answering: %v, want nil (the member comes up later)", err)
	}
	waitFor(t, "the failure reported", func() bool { _, ok := got.First(clients.Error); return ok })
	if e, _ := got.First(clients.Error); !strings.Contains(e.Why, "NewConsumerGroup") {
		t.Errorf("Error = %+v, want sarama.NewConsumerGroup's failure", e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil || ctx.Err() != nil {
		t.Errorf("Close of a member that never connected: %v (ctx %v)", err, ctx.Err())
	}
}

// TestCleanupKind: a session ends lost when the coordinator said the member
// is out of its generation, as the session's cause or as a heartbeat's
// answer after the session ended on a rebalance (a member that did not
// rejoin within the rebalance timeout), or when its heartbeats failed (the
// member lost contact); revoked when the coordinator asked for a rebalance
// or the member ended it.
func TestCleanupKind(t *testing.T) {
	for _, c := range []struct {
		cause  error
		fenced int16
		want   clients.Kind
	}{
		{nil, 0, clients.Revoked},
		{context.Canceled, 0, clients.Revoked},
		{sarama.ErrRebalanceInProgress, 0, clients.Revoked},
		{sarama.ErrClosedConsumerGroup, 0, clients.Revoked},
		{sarama.ErrSessionConsumeClaimExited, 0, clients.Revoked},
		{errors.New("read tcp: i/o timeout"), 0, clients.Lost},
		{sarama.ErrNotCoordinatorForConsumer, 0, clients.Lost},
		{sarama.ErrUnknownMemberId, 0, clients.Lost},
		{sarama.ErrIllegalGeneration, 0, clients.Lost},
		{sarama.ErrFencedInstancedId, 0, clients.Lost},
		{sarama.ErrRebalanceInProgress, kerr.UnknownMemberID.Code, clients.Lost},
	} {
		if got, why := cleanupKind(c.cause, c.fenced); got != c.want {
			t.Errorf("cleanupKind(%v, %d) = %s (%s), want %s", c.cause, c.fenced, got, why, c.want)
		}
	}
}

// TestDialsOnlyThroughTheLinks: every connection Sarama makes, to the seed and to
// the brokers it learns, goes through the member's dialer, so link faults
// reach all of them (clientstest.DialsOnlyThroughTheLinks).
func TestDialsOnlyThroughTheLinks(t *testing.T) {
	clientstest.DialsOnlyThroughTheLinks(t, func(hooks clients.Hooks, links []kgo.Opt) (clients.Member, error) {
		return New("m1", "g", []string{"t"}, WithHooks(hooks), KgoOpts(links...), SessionTimeout(6*time.Second), HeartbeatInterval(200*time.Millisecond), RebalanceTimeout(10*time.Second))
	})
}
