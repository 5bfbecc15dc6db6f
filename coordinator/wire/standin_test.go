package wire

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// standIn is a minimal Coordinator for the server's tests, independent of
// the reference coordinator: it serves OffsetCommit and OffsetFetch (any
// group, no membership checks), writes OffsetCommit records, replays them,
// and parks Heartbeat until the next Tick so the parking path is covered.
// ListGroups lists groups with offsets. DeleteGroups returns a record no
// partition can take, to make an append fail.
type standIn struct {
	topics   Topics
	offsets  map[string]map[string]map[int32]int64 // group → topic → partition → offset
	next     Ticket
	parked   []parkedReq
	done     []Completion
	replayed int

	// calls counts Submit calls; read by tests under mu.
	mu    sync.Mutex
	calls int
}

type parkedReq struct {
	ticket Ticket
	req    *kmsg.HeartbeatRequest
}

func newStandIn(_ version.Version, t Topics) (Coordinator, error) {
	return &standIn{topics: t, offsets: map[string]map[string]map[int32]int64{}}, nil
}

func (c *standIn) Submit(now time.Time, _ Client, req kmsg.Request) (Outcome, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	c.next++
	o := Outcome{Ticket: c.next}
	switch r := req.(type) {
	case *kmsg.OffsetCommitRequest:
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range r.Topics {
			name := rt.Topic
			if r.Version >= 10 {
				name, _, _ = c.topics.TopicByID(rt.TopicID)
			}
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				if name == "" {
					sp.ErrorCode = kerr.UnknownTopicID.Code
				} else {
					v := records.NewOffsetCommitValue(3)
					v.Offset, v.CommitTimestamp = rp.Offset, now.UnixMilli()
					if rp.Metadata != nil {
						v.Metadata = *rp.Metadata
					}
					rec := records.Record{Key: records.OffsetCommitKey{Group: r.Group, Topic: name, Partition: rp.Partition}, Value: v}
					o.Records = append(o.Records, rec)
					c.apply(rec)
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		o.Response = resp
	case *kmsg.OffsetFetchRequest:
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		if r.Version < 8 {
			return o, fmt.Errorf("stand-in: OffsetFetch v%d is not served", r.Version)
		}
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			byTopic := c.offsets[g.Group]
			names := make([]string, 0, len(byTopic))
			for n := range byTopic {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				id, _, _ := c.topics.TopicByName(n)
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.TopicID = n, id
				ps := make([]int32, 0, len(byTopic[n]))
				for p := range byTopic[n] {
					ps = append(ps, p)
				}
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				for _, p := range ps {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset = p, byTopic[n][p]
					rp.LeaderEpoch = -1
					empty := ""
					rp.Metadata = &empty
					rt.Partitions = append(rt.Partitions, rp)
				}
				rg.Topics = append(rg.Topics, rt)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		o.Response = resp
	case *kmsg.HeartbeatRequest:
		c.parked = append(c.parked, parkedReq{o.Ticket, r})
	case *kmsg.DeleteGroupsRequest:
		// A record the server cannot route: its append fails.
		o.Response = r.ResponseKind()
		o.Records = append(o.Records, records.Record{Key: records.OtherKey{Type: 99}})
	case *kmsg.ListGroupsRequest:
		resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
		for g := range c.offsets {
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState = g, "consumer", "Empty"
			resp.Groups = append(resp.Groups, lg)
		}
		o.Response = resp
	default:
		return o, fmt.Errorf("stand-in: %s is not served", kmsg.NameForKey(req.Key()))
	}
	return o, nil
}

func (c *standIn) apply(r records.Record) {
	k := r.Key.(records.OffsetCommitKey)
	if c.offsets[k.Group] == nil {
		c.offsets[k.Group] = map[string]map[int32]int64{}
	}
	if c.offsets[k.Group][k.Topic] == nil {
		c.offsets[k.Group][k.Topic] = map[int32]int64{}
	}
	if r.Value == nil {
		delete(c.offsets[k.Group][k.Topic], k.Partition)
		return
	}
	c.offsets[k.Group][k.Topic][k.Partition] = r.Value.(*records.OffsetCommitValue).Offset
}

func (c *standIn) Completed() []Completion {
	out := c.done
	c.done = nil
	return out
}

func (c *standIn) Tick(time.Time) []records.Record {
	for _, p := range c.parked {
		resp := p.req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		c.done = append(c.done, Completion{p.ticket, resp})
	}
	c.parked = nil
	return nil
}

func (c *standIn) Replay(r records.Record) error {
	if _, ok := r.Key.(records.OffsetCommitKey); !ok {
		return fmt.Errorf("stand-in: cannot replay %v", r.Type())
	}
	c.apply(r)
	c.replayed++
	return nil
}

func (c *standIn) Loaded(time.Time) []records.Record { return nil }
