package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
)

// TestCallsContract runs a member against kfake (franz-go's in-process
// cluster, which serves ConsumerGroupHeartbeat): join, own the topic's
// partitions, commit, close. Every Sent must get exactly one answer of the
// same call and op, after it, with one call per lane at a time; the joining
// heartbeat carries epoch 0 and the leave a negative epoch.
func TestCallsContract(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	log := &eventLog{}
	mb, err := New("m1", "g", KgoOpts(kgo.SeedBrokers(c.ListenAddrs()...)), Topics("t"), WithHooks(log), AutoCommitInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := mb.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for mb.Owned().Count() != 3 {
		pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		mb.Poll(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("the member never owned t's 3 partitions; events: %+v", log.All())
		}
	}
	if perrs, err := mb.Commit(ctx, map[string]map[int32]int64{"t": {0: 0, 1: 0, 2: 0}}); err != nil || len(perrs) > 0 {
		t.Fatalf("commit: %v %v", perrs, err)
	}
	if err := mb.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}

	open := map[uint64]clients.Event{}
	busy := map[clients.Lane]uint64{}
	answered := map[clients.Op]int{}
	for i, e := range log.All() {
		if e.Call == 0 {
			continue
		}
		if e.Kind == clients.Sent {
			if prev, ok := busy[e.Op.Lane()]; ok {
				t.Errorf("event %d: %s call %d sent while call %d of its lane had no answer", i, e.Op, e.Call, prev)
			}
			if e.Op == clients.OpLeave && e.MemberEpoch >= 0 {
				t.Errorf("event %d: leave sent with member epoch %d", i, e.MemberEpoch)
			}
			open[e.Call], busy[e.Op.Lane()] = e, e.Call
			continue
		}
		s, ok := open[e.Call]
		if !ok || s.Op != e.Op {
			t.Errorf("event %d: %s answers call %d (%s), which is not open as that op", i, e.Kind, e.Call, e.Op)
			continue
		}
		if e.Kind == clients.Joined && s.MemberEpoch != 0 {
			t.Errorf("event %d: Joined answers a heartbeat sent with epoch %d, want 0", i, s.MemberEpoch)
		}
		delete(open, e.Call)
		delete(busy, e.Op.Lane())
		answered[e.Op]++
	}
	for id, s := range open {
		t.Errorf("%s call %d never answered (%s)", s.Op, id, s.Why)
	}
	for _, op := range []clients.Op{clients.OpHeartbeat, clients.OpCommit, clients.OpLeave} {
		if answered[op] == 0 {
			t.Errorf("no %s call answered", op)
		}
	}
}
