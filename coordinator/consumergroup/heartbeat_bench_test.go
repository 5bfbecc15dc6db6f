package consumergroup

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/version"
)

// joinGroup has n members join group "g" on topic t (n partitions, at most
// 500: scale's default) at now
// and heartbeats them, acknowledging what each was given, until every
// member is at the assignment epoch with its target and the group is
// Stable. The assignment interval is 1 s (Kafka's default, KIP-1263), so
// the wave computes a handful of targets, not one per member.
func joinGroup(tb testing.TB, n int) (*Manager, Topics, []string, time.Time) {
	tb.Helper()
	interval := time.Second
	m, err := New(version.MustParse("4.4.0").Profile(), Config{AssignmentInterval: &interval})
	if err != nil {
		tb.Fatal(err)
	}
	var id [16]byte
	copy(id[:], "topic:t")
	topics := Topics{{Name: "t", ID: id, Partitions: min(n, 500)}}
	now := time.UnixMilli(1_700_000_000_000)
	ids := make([]string, n)
	epochs := make([]int32, n)
	owned := make([][]kmsg.ConsumerGroupHeartbeatRequestTopic, n)
	rc := RequestContext{ClientID: "c", ClientHost: "/127.0.0.1"}
	hb := func(i int) {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberEpoch = 1, "g", epochs[i]
		req.RebalanceTimeoutMillis = -1
		if ids[i] == "" {
			req.MemberID = fmt.Sprintf("member-%06d", i)
			req.RebalanceTimeoutMillis = 60000
			req.SubscribedTopicNames = []string{"t"}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		} else {
			req.MemberID = ids[i]
			req.Topics = owned[i]
		}
		resp, _ := m.Heartbeat(now, rc, req, topics)
		if resp.ErrorCode != 0 {
			tb.Fatalf("heartbeat of member %d: error %d", i, resp.ErrorCode)
		}
		ids[i], epochs[i] = *resp.MemberID, resp.MemberEpoch
		if resp.Assignment != nil {
			owned[i] = owned[i][:0]
			for _, t := range resp.Assignment.Topics {
				owned[i] = append(owned[i], kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
			}
		}
	}
	for i := range n {
		hb(i)
	}
	for round := 0; ; round++ {
		if round == 20 {
			tb.Fatalf("%d members: not stable after %d rounds of heartbeats", n, round)
		}
		now = now.Add(2 * interval)
		for i := range n {
			hb(i)
		}
		if g := m.rp.groups["g"]; g.state() == StateStable {
			return m, topics, ids, now
		}
	}
}

// BenchmarkStableHeartbeat measures one heartbeat of a member of a Stable
// group of 100, 1,000 and 10,000 members, with the Tick the server runs
// after every request, the way 10,000 members heartbeating every 5 s ask
// 2,000 times a second:
//
//   - steady: the member is at the assignment epoch and changes nothing (no
//     record is written);
//   - write: the member changes its rebalance timeout, so its metadata
//     record is written and replayed (no epoch bump, no new target).
//
// Each op is a different member in turn. ns/op that stays flat from 100 to
// 10,000 members is a heartbeat whose cost does not grow with the group.
//
//	go test -run '^$' -bench StableHeartbeat ./coordinator/consumergroup/
func BenchmarkStableHeartbeat(b *testing.B) {
	for _, kind := range []string{"steady", "write"} {
		for _, n := range []int{100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/members=%d", kind, n), func(b *testing.B) {
				m, topics, ids, now := joinGroup(b, n)
				epoch := m.rp.groups["g"].epoch
				rc := RequestContext{ClientID: "c", ClientHost: "/127.0.0.1"}
				reqs := make([]*kmsg.ConsumerGroupHeartbeatRequest, n)
				for i, id := range ids {
					req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
					req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "g", id, epoch
					req.RebalanceTimeoutMillis = -1
					reqs[i] = req
				}
				b.ResetTimer()
				for i := range b.N {
					req := reqs[i%n]
					if kind == "write" {
						req.RebalanceTimeoutMillis = int32(60000 + i%2)
					}
					now = now.Add(time.Microsecond)
					resp, _ := m.Heartbeat(now, rc, req, topics)
					if resp.ErrorCode != 0 || resp.MemberEpoch != epoch {
						b.Fatalf("heartbeat %d: error %d, epoch %d, want %d", i, resp.ErrorCode, resp.MemberEpoch, epoch)
					}
					m.Tick(now)
				}
			})
		}
	}
}
