package run

import (
	"bytes"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/harness/history"
)

// TestShareCoordinatorKey: the key FindCoordinator(SHARE) takes is
// SharePartitionKey.asCoordinatorKey: group, the topic id as Kafka prints
// a Uuid (URL-safe base64, no padding), and the partition.
func TestShareCoordinatorKey(t *testing.T) {
	id := [16]byte{0xfb, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	if got, want := shareCoordinatorKey("g:1", id, 3), "g:1:-_8BAgMEBQYHCAkKCwwNDg:3"; got != want {
		t.Errorf("key %q, want %q", got, want)
	}
}

// TestShapeShare: a share plan gets one producer per partition at its
// share of the rate, and the stall span.
func TestShapeShare(t *testing.T) {
	p := Plan{Producers: []ProducerPlan{{Name: "p0", Rate: 41}}, Topics: []history.TopicPlan{{Name: "t", Partitions: 3}}}
	shapeShare(&p)
	total := 0
	for i, pp := range p.Producers {
		total += pp.Rate
		if len(pp.Partitions) != 1 || pp.Partitions[0] != int32(i) {
			t.Errorf("producer %d writes %v", i, pp.Partitions)
		}
	}
	if len(p.Producers) != 3 || total != 41 || p.Timers.PollInterval != shareStallSpan {
		t.Errorf("producers %+v (total rate %d), poll interval %s", p.Producers, total, p.Timers.PollInterval)
	}
}

// TestShareQuiesceSkipsMaybeApplied: quiesce waits for a record whose
// accept was refused before any state write (INVALID_RECORD_STATE: it
// comes back when its lock lapses), not for one whose accept was answered
// NOT_LEADER_FOR_PARTITION or COORDINATOR_NOT_AVAILABLE, which Kafka may
// answer after the write landed (the record then never comes back).
func TestShareQuiesceSkipsMaybeApplied(t *testing.T) {
	for _, c := range []struct {
		err       string
		unsettled int
	}{{"NOT_LEADER_FOR_PARTITION", 0}, {"COORDINATOR_NOT_AVAILABLE", 0}, {"INVALID_RECORD_STATE", 2}, {"", 0}} {
		var buf bytes.Buffer
		rec, err := history.NewRecorder(&buf, func() time.Duration { return time.Millisecond }, history.Retain())
		if err != nil {
			t.Fatal(err)
		}
		led := newLedger()
		tp := history.TP{Topic: "t", Partition: 0}
		led.ack(tp, 0)
		led.ack(tp, 1)
		s := shareHooks{h: NewShareRecorder(rec, "s1"), led: led, unknown: &unknownAcks{recs: map[history.TP]map[int64]bool{}}}
		acks := []clients.ShareAck{{ShareRange: clients.ShareRange{Topic: "t", Partition: 0, First: 0, Last: 1}, Type: clients.AckAccept}}
		ev := clients.Event{Kind: clients.Sent, Protocol: clients.Share, Member: "s1", MemberID: "id", Call: 1, Op: clients.OpShareAck, Why: "test",
			Share: &clients.ShareCall{Node: 1, SessionEpoch: 1, Acks: acks}}
		s.OnEvent(ev)
		ev.Kind = clients.ShareAcked
		ev.Share = &clients.ShareCall{Node: 1, SessionEpoch: 1, Acks: acks}
		if c.err != "" {
			ev.Share.AckErrs = map[string]map[int32]string{"t": {0: c.err}}
		}
		s.OnEvent(ev)
		if got := s.unknown.unsettled(led); got != c.unsettled {
			t.Errorf("accept answered %q: quiesce waits for %d records, want %d", c.err, got, c.unsettled)
		}
	}
}
