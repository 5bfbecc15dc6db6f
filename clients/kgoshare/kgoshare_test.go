package kgoshare

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
	"github.com/groupquake/groupquake/clients/share"
)

// TestKgoShareReportsItsCalls runs kgo's share consumer as a member on an
// in-process fake cluster (kfake): its ShareGroupHeartbeat, ShareFetch and
// ShareAcknowledge are reported by the clients contract (each Sent
// answered once on its lane, the answer after it), every record it is
// handed was acquired by an answered fetch before Poll returned it at the
// delivery count the answer said, a record released comes back at count
// 2, the acknowledgements it sends are reported, and Close leaves.
func TestKgoShareReportsItsCalls(t *testing.T) {
	c := clientstest.NewCluster(t, kfake.SeedTopics(1, "t"), kfake.BrokerConfigs(map[string]string{"group.share.record.lock.duration.ms": "5000"}))
	defer c.Close()
	c.SetGroupConfigs("g", map[string]string{"share.auto.offset.reset": "earliest"})
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 10 {
		if err := prod.ProduceSync(context.Background(), kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ev := &clientstest.Recorder{}
	m, err := New("m1", "g", KgoOpts(kgo.SeedBrokers(c.ListenAddrs()...), kgo.FetchMaxWait(100*time.Millisecond)), Topics("t"), WithHooks(ev))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	accepted, released := map[int64]bool{}, map[int64]int16{}
	for len(accepted) < 10 && ctx.Err() == nil {
		recs, err := m.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Offset == 3 && r.DeliveryCount == 1 {
				if err := m.Acknowledge([]share.Record{r}, clients.AckRelease); err != nil {
					t.Fatal(err)
				}
				released[r.Offset] = r.DeliveryCount
				continue
			}
			if r.Offset == 3 {
				released[r.Offset] = r.DeliveryCount
			}
			if err := m.Acknowledge([]share.Record{r}, clients.AckAccept); err != nil {
				t.Fatal(err)
			}
			accepted[r.Offset] = true
		}
	}
	if len(accepted) < 10 {
		t.Fatalf("accepted %d of 10 records before the deadline", len(accepted))
	}
	if released[3] != 2 {
		t.Errorf("the released record came back at delivery count %d, want 2", released[3])
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Acknowledge(nil, clients.AckAccept); err != ErrClosed {
		t.Errorf("acknowledge after close: %v, want ErrClosed", err)
	}

	open := map[uint64]clients.Event{}
	lanes := map[string]uint64{}
	acquired := map[int64]int16{}
	var ops []string
	acked := map[string]bool{}
	left := false
	for _, e := range ev.All() {
		lane := "hb"
		if e.Op == clients.OpShareFetch || e.Op == clients.OpShareAck {
			lane = fmt.Sprint("fetch@", e.Share.Node)
			if e.Share.Node < 0 {
				t.Errorf("a %s went to a broker the member could not name: %+v", e.Op, e)
			}
		}
		if e.Kind == clients.Sent {
			if prev, busy := lanes[lane]; busy {
				t.Fatalf("call %d sent on lane %s while call %d is open", e.Call, lane, prev)
			}
			open[e.Call], lanes[lane] = e, e.Call
			ops = append(ops, string(e.Op))
			continue
		}
		sent, ok := open[e.Call]
		if !ok || sent.Op != e.Op || e.At.Before(sent.At) {
			t.Fatalf("answer %+v without its Sent (or before it)", e)
		}
		delete(open, e.Call)
		delete(lanes, lane)
		if e.Share != nil && e.Err == "" {
			for _, a := range e.Share.Acquired {
				for o := a.First; o <= a.Last; o++ {
					acquired[o] = max(acquired[o], a.DeliveryCount)
				}
			}
			for _, a := range e.Share.Acks {
				acked[clients.AckName(a.Type)] = true
			}
		}
		if e.Kind == clients.Left {
			left = true
		}
	}
	for o := range int64(10) {
		if acquired[o] == 0 {
			t.Errorf("offset %d was handed out but no reported answer acquired it", o)
		}
	}
	if acquired[3] != 2 {
		t.Errorf("offset 3 reported acquired at count %d at most, want 2", acquired[3])
	}
	if !acked["accept"] || !acked["release"] {
		t.Errorf("acknowledgements reported %v, want accept and release", acked)
	}
	t.Logf("%d events; acquired %v", len(ev.All()), acquired)
	if !left {
		t.Errorf("no leave reported; ops %s", strings.Join(ops, " "))
	}
}
