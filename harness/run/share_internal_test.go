package run

import (
	"testing"

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
