package observe

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The observer's OffsetFetch asks for stable offsets, with and without a
// topic list: a read without it is answered from the coordinator's high
// watermark and can go back after a coordinator move.
func TestCommittedAsksForStableOffsets(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var asked, stable atomic.Int32
	c.ControlKey(kmsg.OffsetFetch.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		asked.Add(1)
		if req.(*kmsg.OffsetFetchRequest).RequireStable {
			stable.Add(1)
		}
		return nil, nil, false
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var o kadm.Offsets
	o.Add(kadm.Offset{Topic: "t", Partition: 0, At: 3, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(context.Background(), "g", o); err != nil {
		t.Fatal(err)
	}
	for _, topics := range [][]string{nil, {"t"}} {
		r := &Reader{Admin: adm, Group: "g", Topics: topics}
		got, err := r.Committed(context.Background())
		if err != nil {
			t.Fatalf("topics %v: %v", topics, err)
		}
		if len(got) == 0 || got[0].Offset != 3 {
			t.Errorf("topics %v: read %+v, want t-0 at 3", topics, got)
		}
	}
	if asked.Load() == 0 || stable.Load() != asked.Load() {
		t.Errorf("%d of %d OffsetFetch requests asked for stable offsets, want all", stable.Load(), asked.Load())
	}
}
