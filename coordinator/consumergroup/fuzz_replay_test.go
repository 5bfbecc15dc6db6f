package consumergroup_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// FuzzReplay feeds arbitrary sequences of consumer-group records (as a log
// compacted or written by another coordinator could hold) to Replay, then
// heartbeats, describes and ticks: nothing may panic, and a refused record
// must leave the state as it was.
func FuzzReplay(f *testing.F) {
	f.Add([]byte{0, 5, 0, 1, 8, 0, 3, 1, 7, 0, 1, 6, 0, 3})
	f.Add([]byte{3, 5, 1, 2, 8, 1, 4, 2, 8, 2, 4, 2, 5, 1, 0, 3, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		vs := []version.Version{version.V4_0_0, version.V4_2_0, version.V4_3_0}
		p := vs[int(data[0])%len(vs)].Profile()
		data = data[1:]
		m, err := consumergroup.New(p, consumergroup.Config{})
		if err != nil {
			t.Fatal(err)
		}
		foo := [16]byte{'f'}
		topics := consumergroup.Topics{{Name: "foo", ID: foo, Partitions: 4}}
		next := takeFrom(&data)
		parts := func() []int32 {
			b := next()
			var ps []int32
			for i := range 4 {
				if b&(1<<i) != 0 {
					ps = append(ps, int32(i))
				}
			}
			return ps
		}
		for len(data) > 0 {
			op := next()
			member := fmt.Sprintf("m%d", (op>>4)%3)
			tomb := op&0x80 != 0
			// The key; the value, made only for a record that is not a
			// tombstone (it may take input bytes).
			var k records.Key
			var value func() records.Value
			switch op % 6 {
			case 0:
				k, value = records.ConsumerGroupMetadataKey{GroupID: "g"}, func() records.Value { return &records.ConsumerGroupMetadataValue{Epoch: int32(next() % 8)} }
			case 1:
				k, value = records.ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: member}, func() records.Value {
					return &records.ConsumerGroupMemberMetadataValue{SubscribedTopicNames: []string{"foo"}, RebalanceTimeoutMs: 1000}
				}
			case 2:
				k, value = records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: "g"}, func() records.Value {
					return &records.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: int32(next() % 8)}
				}
			case 3:
				k, value = records.ConsumerGroupTargetAssignmentMemberKey{GroupID: "g", MemberID: member}, func() records.Value {
					return &records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []records.TargetAssignmentTopic{{TopicID: foo, Partitions: parts()}}}
				}
			case 4, 5:
				k, value = records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: member}, func() records.Value {
					return &records.ConsumerGroupCurrentMemberAssignmentValue{
						MemberEpoch: int32(next()%8) - 2, PreviousMemberEpoch: int32(next() % 8),
						State:              records.MemberState(next() % 3),
						AssignedPartitions: []records.CurrentAssignmentTopic{{TopicID: foo, Partitions: parts()}},
					}
				}
			}
			r := records.Record{Key: k}
			if !tomb {
				r.Value = value()
			}
			before := m.State()
			if err := m.Replay(r); err != nil && !m.State().Equal(before) {
				t.Fatalf("refused record %v changed the state: %v", r.Key, err)
			}
			if err := m.CheckIndexes(); err != nil {
				t.Fatalf("after record %v: %v", r.Key, err)
			}
		}
		now := time.UnixMilli(1_700_000_000_000)
		m.Loaded(now)
		for i := range 3 {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "g", fmt.Sprintf("m%d", i), int32(i)
			req.RebalanceTimeoutMillis = 1000
			req.SubscribedTopicNames = []string{"foo"}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			m.Heartbeat(now, consumergroup.RequestContext{}, req, topics)
		}
		m.Describe(now, []string{"g"}, topics)
		m.Tick(now.Add(time.Hour))
		_ = m.State().String()
	})
}
