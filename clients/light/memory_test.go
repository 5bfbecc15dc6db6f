package light

import (
	"context"

	"hash/fnv"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/internal/machine"
)

// BenchmarkConsumerMemory measures what a consumer-protocol member costs
// this process: N members join a stub coordinator on loopback (it keeps
// nothing per member: each gets epoch 1 and one partition, Kafka's
// default heartbeat interval of 5 s, commits every 5 s), and once every
// member is settled the Go heap in use and the resident set above what
// they were before, divided by N, are reported as heap-B/member and
// rss-B/member. The stub's side of the shared connections (at most
// MaxShared) counts in too. Run with -benchtime 1x.
func BenchmarkConsumerMemory(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				heap, rss := consumerMemory(b, n)
				b.ReportMetric(heap, "heap-B/member")
				b.ReportMetric(rss, "rss-B/member")
			}
		})
	}
}

func consumerMemory(b *testing.B, n int) (heapPerMember, rssPerMember float64) {
	const parts = 500
	s := newStub(b, holdAll)
	s.forget = true
	meta := s.coordinatorAnswers("t", parts)
	s.setAnswer(func(r *stubReq) kmsg.Response {
		if resp := meta(r); resp != nil {
			return resp
		}
		switch req := r.req.(type) {
		case *kmsg.ConsumerGroupHeartbeatRequest:
			resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
			resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis = kmsg.StringPtr(req.MemberID), 1, 5000
			h := fnv.New32a()
			h.Write([]byte(req.MemberID))
			a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = stubTopicID, []int32{int32(h.Sum32() % parts)}
			a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{t}
			resp.Assignment = &a
			return resp
		case *kmsg.OffsetCommitRequest:
			return commitAccepted(req)
		}
		b.Errorf("stub: unexpected %s", kmsg.NameForKey(r.req.Key()))
		return kmsg.NewPtrApiVersionsResponse()
	})

	debug.FreeOSMemory()
	heap0, rss0 := machine.HeapInUse(), machine.ResidentSet()
	g, err := NewGroup(Config{Bootstrap: []string{s.addr()}, Group: "g", Topic: "t", Partitions: parts, CommitInterval: 5 * time.Second, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	members := make([]*Consumer, n)
	var wg sync.WaitGroup
	for i := range members {
		members[i] = g.NewConsumer(int32(i))
		wg.Go(func() { _ = members[i].Run(ctx) })
	}
	deadline := time.Now().Add(5 * time.Minute)
	for settled := 0; settled < n; {
		settled = 0
		for _, m := range members {
			if st := m.State(); st.Settled && st.Epoch == 1 {
				settled++
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d members settled after 5 minutes", settled, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	debug.FreeOSMemory()
	heap1, rss1 := machine.HeapInUse(), machine.ResidentSet()
	open, _, _ := g.Stats.Conns()
	b.Logf("%d members settled: heap in use %d → %d MB, resident set %d → %d MB, %d connections, %d goroutines",
		n, heap0>>20, heap1>>20, rss0>>20, rss1>>20, open, runtime.NumGoroutine())
	cancel()
	wg.Wait()
	g.Close()
	return float64(int64(heap1)-int64(heap0)) / float64(n), float64(int64(rss1)-int64(rss0)) / float64(n)
}
