package consumergroup_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/version"
)

// fuzzClient is a crude consumer: it believes the last epoch and
// assignment the coordinator gave it, and the fuzzer decides what it
// reports as owned (the truth, a stale superset, or nothing).
type fuzzClient struct {
	id       string
	instance string
	epoch    int32
	owned    map[[16]byte][]int32
	prev     map[[16]byte][]int32
	joined   bool
}

func (c *fuzzClient) ownedTopics(m map[[16]byte][]int32) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
	for _, id := range ids {
		out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: slices.Clone(m[id])})
	}
	return out
}

// takeFrom hands out *data a byte at a time, taking it off *data; 0 once
// *data is empty.
func takeFrom(data *[]byte) func() byte {
	return func() byte {
		if len(*data) == 0 {
			return 0
		}
		b := (*data)[0]
		*data = (*data)[1:]
		return b
	}
}

// runHeartbeatFuzz interprets data as a sequence of heartbeats, leaves,
// timer ticks, metadata changes and restarts against one group, and checks
// after every step that the log replays to the live state and that no
// partition has two owners at one epoch, and that epochs never go back.
// subset is the names whose bit is set in mask, an empty list for none.
func subset(names []string, mask byte) []string {
	sub := []string{}
	for i, n := range names {
		if mask&(1<<i) != 0 {
			sub = append(sub, n)
		}
	}
	return sub
}

func runHeartbeatFuzz(t *testing.T, data []byte) {
	versions := []version.Version{version.V4_0_0, version.V4_0_2, version.V4_1_0, version.V4_2_0, version.V4_3_0, version.V4_4_0}
	if len(data) == 0 {
		return
	}
	v := versions[int(data[0])%len(versions)]
	data = data[1:]
	cfg := consumergroup.Config{SessionTimeout: 10 * time.Second, MinSessionTimeout: time.Second, HeartbeatInterval: time.Second, MinHeartbeatInterval: time.Second, JavaVersion: 17}
	if v.Profile().AssignmentInterval {
		d := 500 * time.Millisecond
		cfg.AssignmentInterval = &d
	}
	e := newEnv(t, v, cfg)
	e.topics = consumergroup.Topics{{Name: "foo", ID: topicID("foo"), Partitions: 3}, {Name: "bar", ID: topicID("bar"), Partitions: 2}}
	names := []string{"foo", "bar", "baz"}
	clients := make([]*fuzzClient, 4)
	for i := range clients {
		clients[i] = &fuzzClient{id: fmt.Sprintf("m%d", i)}
		if i >= 2 {
			clients[i].instance = fmt.Sprintf("i%d", i)
		}
	}
	groupEpoch, assignmentEpoch := int32(-1), int32(-1)
	generation := 0
	memberEpochs := map[string]int32{}

	next := takeFrom(&data)
	for steps := 0; len(data) > 0 && steps < 80; steps++ {
		op := next()
		c := clients[int(op>>4)%len(clients)]
		switch op % 12 {
		case 0, 1, 2, 3, 4: // heartbeat
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Version = 1
			req.Group = "g"
			req.MemberID = c.id
			req.RebalanceTimeoutMillis = -1
			if c.instance != "" {
				req.InstanceID = &c.instance
			}
			if !c.joined {
				// A static member that rejoins uses a fresh member id.
				if c.instance != "" {
					c.id = fmt.Sprintf("%s.%d", c.id[:2], steps)
					req.MemberID = c.id
				}
				req.MemberEpoch = 0
				req.RebalanceTimeoutMillis = int32(1000 + int(next())*20)
				mask := next()
				req.SubscribedTopicNames = subset(names, mask)
				req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				if mask&0x10 != 0 {
					a := []string{"uniform", "range"}[mask>>5&1]
					req.ServerAssignor = &a
				}
			} else {
				req.MemberEpoch = c.epoch
				switch next() % 6 {
				case 0:
					req.Topics = nil
				case 1:
					union := map[[16]byte][]int32{}
					for id, ps := range c.prev {
						union[id] = slices.Clone(ps)
					}
					for id, ps := range c.owned {
						union[id] = slices.Compact(slices.Sorted(slices.Values(append(union[id], ps...))))
					}
					req.Topics = c.ownedTopics(union)
				case 2:
					req.MemberEpoch = c.epoch + 1 - int32(next()%3)
					req.Topics = c.ownedTopics(c.owned)
				case 3:
					req.SubscribedTopicNames = subset(names, next())
					req.Topics = c.ownedTopics(c.owned)
				default:
					req.Topics = c.ownedTopics(c.owned)
				}
			}
			resp, recs := e.m.Heartbeat(e.now, consumergroup.RequestContext{ClientID: c.id, ClientHost: "/127.0.0.1"}, req, e.topics)
			e.writeRecords(recs)
			if resp.ErrorCode == kerr.UnknownServerError.Code {
				t.Fatalf("Kafka %s, step %d: UNKNOWN_SERVER_ERROR: %s", v, steps, *resp.ErrorMessage)
			}
			switch {
			case resp.ErrorCode == 0:
				c.joined = true
				c.epoch = resp.MemberEpoch
				if resp.Assignment != nil {
					c.prev = c.owned
					c.owned = map[[16]byte][]int32{}
					for _, tp := range resp.Assignment.Topics {
						c.owned[tp.TopicID] = slices.Clone(tp.Partitions)
					}
				}
			case resp.ErrorCode == kerr.FencedMemberEpoch.Code || resp.ErrorCode == kerr.UnknownMemberID.Code:
				c.joined, c.owned, c.prev = false, nil, nil
			case resp.ErrorCode == kerr.UnreleasedInstanceID.Code:
				c.joined = false
			}
		case 5: // leave, or a static member's temporary leave
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Version = 1
			req.Group, req.MemberID, req.MemberEpoch = "g", c.id, -1
			if c.instance != "" {
				req.InstanceID = &c.instance
				if op&0x80 == 0 {
					req.MemberEpoch = -2
				}
			}
			_, recs := e.m.Heartbeat(e.now, consumergroup.RequestContext{ClientID: c.id}, req, e.topics)
			e.writeRecords(recs)
			c.joined, c.owned, c.prev = false, nil, nil
		case 6, 7, 8: // time passes
			e.now = e.now.Add(time.Duration(next()) * 50 * time.Millisecond)
			recs, _ := e.m.TickVerbose(e.now)
			e.writeRecords(recs)
		case 9: // metadata changes: a topic grows, is deleted, or is
			// created again (with a new id: Kafka never shrinks a topic)
			i := int(next()) % len(names)
			n := int(next() % 5)
			cur := slices.IndexFunc(e.topics, func(tp consumergroup.Topic) bool { return tp.Name == names[i] })
			switch {
			case n == 0 && cur >= 0:
				e.topics = slices.Delete(e.topics, cur, cur+1)
			case n > 0 && cur >= 0 && n > e.topics[cur].Partitions:
				e.topics[cur].Partitions = n
			case n > 0 && cur < 0:
				generation++
				id := topicID(names[i])
				id[15] = byte(generation)
				e.topics = append(e.topics, consumergroup.Topic{Name: names[i], ID: id, Partitions: n})
			}
			e.topics = slices.Clone(e.topics)
			e.m.SetTopics(e.topics)
		case 10: // failover
			m, err := e.replayed()
			if err != nil {
				t.Fatalf("step %d: %v", steps, err)
			}
			m.SetTopics(e.topics)
			m.Loaded(e.now)
			e.m = m
		case 11: // describe and a commit check must not panic
			e.m.Describe(e.now, []string{"g", ""}, e.topics)
			_ = e.m.ValidateOffsetCommit(consumergroup.OffsetCommitCheck{GroupID: "g", MemberID: c.id, MemberEpoch: c.epoch - int32(op>>6), APIVersion: 9,
				Partitions: []consumergroup.CommitPartition{{Topic: "foo", TopicID: topicID("foo"), Partition: 0}}})
		}

		if diff := e.replayDiff(); diff != "" {
			t.Fatalf("Kafka %s, step %d: %s", v, steps, diff)
		}
		s := e.m.State()
		if err := consumergroup.CheckInvariants(s); err != nil {
			t.Fatalf("Kafka %s, step %d: %v", v, steps, err)
		}
		if err := e.m.CheckIndexes(); err != nil {
			t.Fatalf("Kafka %s, step %d: %v", v, steps, err)
		}
		seen := map[string]bool{}
		for _, g := range s.Groups {
			if g.Epoch < groupEpoch || g.AssignmentEpoch < assignmentEpoch {
				t.Fatalf("Kafka %s, step %d: group epoch %d→%d, assignment epoch %d→%d: epochs went back", v, steps, groupEpoch, g.Epoch, assignmentEpoch, g.AssignmentEpoch)
			}
			groupEpoch, assignmentEpoch = g.Epoch, g.AssignmentEpoch
			for _, m := range s.Groups[0].Members {
				seen[m.ID] = true
				// A member's epoch only grows, except for a static member's
				// temporary leave (-2) and its way back.
				if old, ok := memberEpochs[m.ID]; ok && old >= 0 && m.Epoch >= 0 && m.Epoch < old {
					t.Fatalf("Kafka %s, step %d: member %s epoch went back from %d to %d", v, steps, m.ID, old, m.Epoch)
				}
				memberEpochs[m.ID] = m.Epoch
			}
		}
		for id := range memberEpochs {
			if !seen[id] {
				delete(memberEpochs, id) // removed; the id may come back at 0
			}
		}
	}
}

func FuzzHeartbeats(f *testing.F) {
	f.Add([]byte{3, 0x00, 0x10, 0x33, 0x20, 0x11, 0x00, 0x21, 0x00, 0x06, 40, 0x00, 0x04, 0x10, 0x04})
	f.Add([]byte{0, 0x00, 0x10, 0x03, 0x10, 0x10, 0x01, 0x20, 0x20, 0x07, 0x30, 0x30, 0x07, 0x25, 0x06, 200, 0x06, 200, 0x0a, 0x00})
	f.Add([]byte{4, 0x20, 0x10, 0x03, 0x30, 0x10, 0x03, 0x25, 0x20, 0x10, 0x03, 0x09, 0x00, 0x04, 0x00, 0x00, 0x30, 0x00})
	f.Add([]byte{5, 0x20, 0x10, 0x17, 0x30, 0x10, 0x37, 0x25, 0x2a, 0x20, 0x10, 0x03, 0x0b, 0x06, 250})
	f.Fuzz(runHeartbeatFuzz)
}

// TestRandomHeartbeats runs the fuzz body over deterministic pseudo-random
// inputs, so `go test` covers more than the seeds without -fuzz.
func TestRandomHeartbeats(t *testing.T) {
	state := uint64(0x9e3779b97f4a7c15)
	for i := range 60 {
		data := make([]byte, 120)
		for j := range data {
			state ^= state << 13
			state ^= state >> 7
			state ^= state << 17
			data[j] = byte(state)
		}
		data[0] = byte(i)
		t.Run(fmt.Sprint(i), func(t *testing.T) { runHeartbeatFuzz(t, data) })
	}
}
