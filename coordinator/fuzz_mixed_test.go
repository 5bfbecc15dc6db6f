package coordinator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/vectors"
	"github.com/groupquake/groupquake/coordinator/version"
)

// FuzzMixedGroups drives the whole coordinator (shell and the default
// consumergroup.Manager) with classic and consumer-protocol requests over
// two group ids that both protocols fight for, with offset commits from
// both kinds of member, DeleteGroups, ListGroups, timers and restarts.
// After every step nothing may have panicked, the classic invariants must
// hold, and a coordinator loaded from every record written so far (through
// the codec) must hold the live State, consumer groups included.
func FuzzMixedGroups(f *testing.F) {
	f.Add([]byte{4, 0, 0, 1, 0, 2, 0, 3, 1, 4, 0, 5, 0, 6, 1, 7, 0})
	f.Add([]byte{1, 0, 1, 0, 0, 3, 2, 4, 0, 12, 1, 13, 0, 0, 0, 1, 2, 14, 3})
	f.Add([]byte{2, 10, 0, 2, 0, 12, 5, 15, 0, 16, 0, 9, 1, 11, 2, 3, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		runMixed(t, in)
	})
}

// TestMixedGroups runs a deterministic sweep of FuzzMixedGroups inputs so
// that `go test` covers the property without -fuzz.
func TestMixedGroups(t *testing.T) {
	for seed := 0; seed < 200; seed++ {
		runMixed(t, xorshiftInput(seed, 2246822519, 7, 80))
	}
}

// cgMember is what the driver remembers of a consumer-protocol member.
type cgMember struct {
	id     string
	epoch  int32
	owned  []kmsg.ConsumerGroupHeartbeatRequestTopic
	joined bool
}

func runMixed(t *testing.T, in []byte) {
	if len(in) > 300 {
		in = in[:300]
	}
	profiles := []version.Version{version.V4_0_0, version.V4_1_0, version.V4_2_0, version.V4_3_0, version.V4_4_0}
	profile := version.V4_4_0.Profile()
	if len(in) > 0 {
		profile = profiles[int(in[0])%len(profiles)].Profile()
	}
	topics := consumergroup.Topics{
		{Name: "t", ID: topicID("t"), Partitions: 3},
		{Name: "u", ID: topicID("u"), Partitions: 2},
	}
	ids := &vectors.ShortIDs{}
	cfg := Config{
		InitialRebalanceDelay: 100 * time.Millisecond,
		MinSessionTimeout:     100 * time.Millisecond,
		NewMemberJoinTimeout:  2 * time.Second,
		OffsetsRetention:      5 * time.Second,
		Topics:                topics,
		IDs:                   ids,
	}
	cfg.Consumer.SessionTimeout = 2 * time.Second
	cfg.Consumer.HeartbeatInterval = 500 * time.Millisecond
	if profile.AssignmentInterval && len(in) > 1 && in[1]&1 == 0 {
		zero := time.Duration(0)
		cfg.Consumer.AssignmentInterval = &zero
	}
	if len(in) > 1 {
		// group.consumer.migration.policy: which conversions of a group
		// with members may happen (upgrade, downgrade, both, none).
		policies := []string{"bidirectional", "upgrade", "downgrade", "disabled"}
		cfg.Consumer.MigrationPolicy = policies[int(in[1]>>1)%len(policies)]
	}
	c := newCoordinator(t, profile, cfg)
	now := time.UnixMilli(0)
	var log []records.Record
	var classicMembers [2][]string
	gens := [2]int32{}
	consumers := [2][]*cgMember{}
	for g := range consumers {
		for _, id := range []string{"A", "B", "C"} {
			consumers[g] = append(consumers[g], &cgMember{id: fmt.Sprintf("%s%d", id, g)})
		}
	}
	take := func(i *int) byte { return takeByte(in, i) }
	appendLog := func(recs []records.Record) { log = append(log, roundTrip(t, recs)...) }
	load := func() *Coordinator { return replayed(t, newCoordinator(t, profile, cfg), log) }
	orphans := map[string]bool{}
	for i := 2; i < len(in); {
		op, arg := take(&i), take(&i)
		gi := int(arg & 1)
		group := fmt.Sprintf("g%d", gi)
		classicMember := ""
		if ms := classicMembers[gi]; len(ms) > 0 {
			classicMember = ms[int(arg>>1)%len(ms)]
		}
		cm := consumers[gi][int(arg>>1)%3]
		var req kmsg.Request
		switch op % 18 {
		case 0: // classic join
			member := ""
			if arg&0x10 != 0 {
				member = classicMember
			}
			req = fuzzJoin(4, group, member, nil, "range")
		case 1: // classic sync, the leader assigns everyone
			req = leaderSync(group, classicMember, nil, gens[gi], classicMembers[gi])
		case 2: // classic heartbeat
			r := kmsg.NewPtrHeartbeatRequest()
			r.Version = 4
			r.Group, r.MemberID, r.Generation = group, classicMember, gens[gi]
			req = r
		case 3: // classic leave
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Version = 5
			r.Group = group
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = classicMember
			r.Members = []kmsg.LeaveGroupRequestMember{m}
			req = r
		case 4, 5: // classic or admin commit
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Version = 9
			r.Group, r.MemberID, r.Generation = group, classicMember, gens[gi]
			if op%18 == 5 {
				r.MemberID, r.Generation = "", -1
			}
			r.Topics = []kmsg.OffsetCommitRequestTopic{commitTopic(arg)}
			req = r
		case 6, 7: // consumer join (or rejoin)
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Version = 1
			r.Group, r.MemberID, r.MemberEpoch = group, cm.id, 0
			r.RebalanceTimeoutMillis = 1000
			r.SubscribedTopicNames = [][]string{{"t"}, {"t", "u"}}[arg>>4&1]
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			if arg&0x80 != 0 { // a static member, one instance id per slot
				inst := "i-" + cm.id
				r.InstanceID = &inst
			}
			req = r
		case 8, 9, 10: // consumer heartbeat: acknowledges what it was told
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Version = 1
			r.Group, r.MemberID, r.MemberEpoch = group, cm.id, cm.epoch
			r.RebalanceTimeoutMillis = -1
			if arg&0x20 == 0 {
				r.Topics = cm.owned
				if r.Topics == nil {
					r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				}
			}
			if op%18 == 10 && arg&0x40 != 0 {
				r.SubscribedTopicNames = [][]string{{"t"}, {"u"}}[arg>>4&1]
			}
			req = r
		case 11: // consumer leave
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Version = 1
			r.Group, r.MemberID, r.MemberEpoch = group, cm.id, -1
			req = r
		case 12: // commit from a consumer member, at, before or after its epoch
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Version = 9
			r.Group, r.MemberID = group, cm.id
			r.Generation = cm.epoch + int32(arg>>5&3) - 1
			r.Topics = []kmsg.OffsetCommitRequestTopic{commitTopic(arg)}
			req = r
		case 13:
			now = now.Add(time.Duration(arg) * 20 * time.Millisecond)
		case 14:
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{group}
			req = r
		case 15:
			r := kmsg.NewPtrListGroupsRequest()
			r.Version = 5
			req = r
		case 16:
			switch {
			case arg&6 == 4: // a member's OffsetFetch (v9, validateOffsetFetch)
				r := kmsg.NewPtrOffsetFetchRequest()
				r.Version = 9
				g := kmsg.NewOffsetFetchRequestGroup()
				g.Group, g.MemberEpoch = group, cm.epoch
				id := cm.id
				g.MemberID = &id
				r.Groups = []kmsg.OffsetFetchRequestGroup{g}
				req = r
			case arg&2 == 0:
				r := kmsg.NewPtrDescribeGroupsRequest()
				r.Version = 5
				r.Groups = []string{group}
				req = r
			default:
				r := kmsg.NewPtrConsumerGroupDescribeRequest()
				r.Groups = []string{group}
				req = r
			}
		case 17: // coordinator failover: load the log, re-arm timers
			c = load()
			appendLog(c.Loaded(now))
		}
		if req != nil {
			before := c.State().Consumer
			o, err := c.Submit(now, Client{ID: "c", Host: "/h"}, req)
			if j, ok := req.(*kmsg.JoinGroupRequest); ok && j.MemberID != "" && strings.Contains(before, "group "+group+": Empty") {
				if r, ok := o.Response.(*kmsg.JoinGroupResponse); ok && r.ErrorCode == kerr.UnknownMemberID.Code {
					// Kafka removes the empty consumer group without writing
					// its tombstones (handleJoinGroup): from here on the
					// group's replay need not give its live state.
					orphans[group] = true
				}
			}
			if err != nil {
				t.Fatalf("submit %T: %v", req, err)
			}
			appendLog(o.Records)
			learn(o.Response, gi, &classicMembers, &gens)
			if hb, ok := o.Response.(*kmsg.ConsumerGroupHeartbeatResponse); ok {
				learnConsumer(hb, cm)
			}
		}
		appendLog(c.Tick(now))
		for _, done := range c.Completed() {
			learn(done.Response, gi, &classicMembers, &gens)
		}
		checkInvariants(t, c)
		if live, loaded := c.State(), load().State(); !withoutGroups(live, orphans).Equal(withoutGroups(loaded, orphans)) {
			t.Fatalf("%s, step %d: replay differs from live state\nlive:\n%s\nreplayed:\n%s", profile.Version, i, live, loaded)
		}
	}
}

// withoutGroups is s without the consumer groups named in gs (the blocks
// of ConsumerGroups.State() that begin "group <id>:"), nor the classic
// groups of those ids.
func withoutGroups(s State, gs map[string]bool) State {
	if len(gs) == 0 {
		return s
	}
	var keep []string
	skip := false
	for _, l := range strings.SplitAfter(s.Consumer, "\n") {
		if strings.HasPrefix(l, "group ") {
			id, _, _ := strings.Cut(strings.TrimPrefix(l, "group "), ":")
			skip = gs[id]
		}
		if !skip {
			keep = append(keep, l)
		}
	}
	s.Consumer = strings.Join(keep, "")
	// A classic group that only live state has: an offset commit without
	// a generation made it where the log still holds the consumer group.
	var cl []ClassicGroupState
	for _, g := range s.Classic {
		if !gs[g.Group] {
			cl = append(cl, g)
		}
	}
	s.Classic = cl
	return s
}

// commitTopic is the fuzz drivers' offset commit: topic t or u, partition 0
// or 1, at offset arg.
func commitTopic(arg byte) kmsg.OffsetCommitRequestTopic {
	tp := kmsg.NewOffsetCommitRequestTopic()
	tp.Topic = []string{"t", "u"}[arg>>2&1]
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch = int32(arg>>3&1), int64(arg), -1
	tp.Partitions = []kmsg.OffsetCommitRequestTopicPartition{p}
	return tp
}

// learnConsumer keeps the member's epoch and assignment as a client
// would: it owns what it was last given; a fenced or unknown member starts
// over from a join.
func learnConsumer(r *kmsg.ConsumerGroupHeartbeatResponse, m *cgMember) {
	switch r.ErrorCode {
	case 0:
		if r.MemberEpoch < 0 {
			*m = cgMember{id: m.id}
			return
		}
		m.epoch, m.joined = r.MemberEpoch, true
		if r.Assignment != nil {
			m.owned = nil
			for _, t := range r.Assignment.Topics {
				m.owned = append(m.owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: append([]int32(nil), t.Partitions...)})
			}
		}
	case kerr.UnknownMemberID.Code, kerr.FencedMemberEpoch.Code:
		*m = cgMember{id: m.id}
	}
}
