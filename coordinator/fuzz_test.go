package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/vectors"
	"github.com/groupquake/groupquake/coordinator/version"
)

// FuzzRequestSequences drives a coordinator with request sequences decoded
// from the fuzz input, over two groups, a handful of members and small
// timers. After every step it checks that nothing panicked, that the
// classic groups keep their invariants (classicGroup doc comment) and that
// replaying every record written so far, through the codec, gives the live
// State.
func FuzzRequestSequences(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 0, 1, 3, 9, 4, 5, 6, 7, 8})
	f.Add([]byte{0, 1, 0, 1, 1, 1, 2, 1, 9, 9, 3, 0, 4, 1, 10, 5})
	f.Add([]byte{6, 0, 6, 1, 0, 2, 2, 2, 7, 0, 8, 1, 11, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		runSequence(t, in)
	})
}

// TestRequestSequences runs the fuzz seeds and a deterministic sweep, so
// `go test` covers the property without -fuzz.
func TestRequestSequences(t *testing.T) {
	for seed := 0; seed < 300; seed++ {
		runSequence(t, xorshiftInput(seed, 2654435761, 1, 60))
	}
}

// xorshiftInput is input number seed of a deterministic sweep: size bytes
// of a xorshift32 that starts at uint32(seed*mul + add).
func xorshiftInput(seed, mul, add, size int) []byte {
	in := make([]byte, size)
	x := uint32(seed*mul + add)
	for i := range in {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		in[i] = byte(x)
	}
	return in
}

func runSequence(t *testing.T, in []byte) {
	// Every step replays the whole log, so long inputs cost quadratic
	// time; 200 steps reach every state.
	if len(in) > 400 {
		in = in[:400]
	}
	profile := version.V4_4_0.Profile()
	if len(in) > 0 && in[0]&1 == 1 {
		profile = version.V4_0_0.Profile()
	}
	ids := &vectors.ShortIDs{}
	cfg := Config{
		InitialRebalanceDelay: 100 * time.Millisecond,
		MinSessionTimeout:     100 * time.Millisecond,
		MaxGroupSize:          3,
		NewMemberJoinTimeout:  2 * time.Second,
		OffsetsRetention:      5 * time.Second,
		IDs:                   ids,
	}
	c := newCoordinator(t, profile, cfg)
	now := time.UnixMilli(0)
	var log []records.Record
	// Member ids the coordinator handed out, per group, to reuse.
	var members [2][]string
	gens := [2]int32{}
	take := func(i *int) byte { return takeByte(in, i) }
	appendLog := func(recs []records.Record) { log = append(log, roundTrip(t, recs)...) }
	for i := 0; i < len(in); {
		op, arg := take(&i), take(&i)
		gi := int(arg & 1)
		group := fmt.Sprintf("g%d", gi)
		member := ""
		if ms := members[gi]; len(ms) > 0 {
			member = ms[int(arg>>1)%len(ms)]
			if arg&0x40 != 0 {
				member = "stale"
			}
		}
		var inst *string
		if arg&0x20 != 0 {
			s := fmt.Sprintf("i%d", arg>>6&1)
			inst = &s
		}
		var req kmsg.Request
		switch op % 12 {
		case 0, 1:
			joining := ""
			if op%12 == 1 {
				joining = member
			}
			r := fuzzJoin(int16(arg%10), group, joining, inst, []string{"range", "roundrobin"}[:1+int(arg>>4&1)]...)
			if lo, _, _ := apiVersions(profile, r.Key()); r.Version < lo {
				r.Version = lo // 4.0.0 has no JoinGroup v0–v1 (KIP-896)
			}
			req = r
		case 2:
			req = leaderSync(group, member, inst, gens[gi], members[gi])
		case 3:
			r := kmsg.NewPtrHeartbeatRequest()
			r.Version = 4
			r.Group, r.MemberID, r.InstanceID, r.Generation = group, member, inst, gens[gi]
			req = r
		case 4:
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Version = int16(arg % 6)
			r.Group, r.MemberID = group, member
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID, m.InstanceID = member, inst
			if arg&0x10 != 0 {
				m.MemberID = ""
			}
			r.Members = []kmsg.LeaveGroupRequestMember{m}
			req = r
		case 5, 6:
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Version = int16(2 + arg%8)
			r.Group, r.MemberID, r.InstanceID = group, member, inst
			r.Generation = gens[gi]
			if op%12 == 6 {
				r.Generation, r.MemberID, r.InstanceID = -1, "", nil
			}
			r.RetentionTimeMillis = -1
			if arg&0x10 != 0 {
				r.RetentionTimeMillis = 3000
			}
			r.Topics = []kmsg.OffsetCommitRequestTopic{commitTopic(arg)}
			req = r
		case 7:
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Version = 8
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = group
			r.Groups = []kmsg.OffsetFetchRequestGroup{g}
			req = r
		case 8:
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = group
			tp := kmsg.NewOffsetDeleteRequestTopic()
			tp.Topic = "u"
			p := kmsg.NewOffsetDeleteRequestTopicPartition()
			tp.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{p}
			r.Topics = []kmsg.OffsetDeleteRequestTopic{tp}
			req = r
		case 9:
			now = now.Add(time.Duration(arg) * 20 * time.Millisecond)
		case 10:
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{group}
			req = r
		case 11:
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{group}
			req = r
		}
		if req != nil {
			o, err := c.Submit(now, Client{ID: "c", Host: "/h"}, req)
			if err != nil {
				t.Fatalf("submit %T: %v", req, err)
			}
			appendLog(o.Records)
			learn(o.Response, gi, &members, &gens)
		}
		appendLog(c.Tick(now))
		for _, done := range c.Completed() {
			learn(done.Response, gi, &members, &gens)
		}
		checkInvariants(t, c)
		if live, loaded := c.State(), replayed(t, newCoordinator(t, profile, cfg), log).State(); !live.Equal(loaded) {
			t.Fatalf("step %d: replay differs from live state\nlive:\n%s\nreplayed:\n%s", i, live, loaded)
		}
	}
}

// fuzzJoin is the JoinGroup the fuzzers send: a consumer subscribed to t
// offering protocols, with a 1s session and a 500ms rebalance timeout.
func fuzzJoin(v int16, group, member string, inst *string, protocols ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = v
	r.Group, r.MemberID, r.InstanceID = group, member, inst
	r.SessionTimeoutMillis = 1000
	r.RebalanceTimeoutMillis = 500
	r.ProtocolType = "consumer"
	for _, n := range protocols {
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = n, subscription([]string{"t"})
		r.Protocols = append(r.Protocols, p)
	}
	return r
}

// leaderSync is the SyncGroup v5 the fuzzers' leaders send: every join
// selects range, and the leader assigns each of members its own id as
// bytes.
func leaderSync(group, member string, inst *string, gen int32, members []string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group, r.MemberID, r.InstanceID, r.Generation = group, member, inst, gen
	// Mandatory from v5 (KIP-559).
	r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for _, m := range members {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = m, []byte(m)
		r.GroupAssignment = append(r.GroupAssignment, a)
	}
	return r
}

// learn remembers member ids and generations from join responses.
func learn(r kmsg.Response, gi int, members *[2][]string, gens *[2]int32) {
	if j, ok := r.(*kmsg.JoinGroupResponse); ok && j.MemberID != "" {
		members[gi] = append(members[gi], j.MemberID)
		if j.ErrorCode == 0 {
			gens[gi] = j.Generation
		}
	}
}

func checkInvariants(t *testing.T, c *Coordinator) {
	t.Helper()
	for id, g := range c.classic {
		awaiting := 0
		protocols := map[string]int{}
		for _, m := range g.members.vals {
			if m.awaitingJoin.waiting() {
				awaiting++
			}
			for _, p := range m.protocols {
				protocols[p.name]++
			}
			if m.instanceID != nil && g.staticMembers[*m.instanceID] != m.id {
				t.Fatalf("group %s: static member %s not mapped", id, m.id)
			}
		}
		if awaiting != g.numAwaitingJoin {
			t.Fatalf("group %s: numAwaitingJoin %d, %d members awaiting", id, g.numAwaitingJoin, awaiting)
		}
		for name, n := range g.supportedProtocols {
			if protocols[name] != n {
				t.Fatalf("group %s: supportedProtocols[%s]=%d, members list it %d times", id, name, n, protocols[name])
			}
		}
		if len(g.staticMembers) > g.members.len() {
			t.Fatalf("group %s: %d static members, %d members", id, len(g.staticMembers), g.members.len())
		}
		if g.leader != nil && !g.members.has(*g.leader) {
			t.Fatalf("group %s: leader %s is not a member", id, *g.leader)
		}
		if g.members.len() > 0 && g.leader == nil {
			t.Fatalf("group %s: members but no leader", id)
		}
		for m := range g.pendingSync {
			if !g.members.has(m) && !g.replaced[m] {
				t.Fatalf("group %s: pending sync %s is not a member", id, m)
			}
		}
		for m := range g.pendingJoin {
			if g.members.has(m) {
				t.Fatalf("group %s: pending member %s is a member", id, m)
			}
		}
		if (g.in(Empty)) != (g.members.len() == 0) && !(g.in(Empty) && g.members.len() == 0) {
			if g.in(Empty) {
				t.Fatalf("group %s: Empty with %d members", id, g.members.len())
			}
		}
	}
}

// takeByte is the fuzz input's byte at *i, moving i on; 0 past its end.
func takeByte(in []byte, i *int) byte {
	if *i >= len(in) {
		return 0
	}
	b := in[*i]
	*i++
	return b
}

// roundTrip encodes recs as __consumer_offsets records and decodes them
// back, as a coordinator that loads them reads them.
func roundTrip(t *testing.T, recs []records.Record) []records.Record {
	t.Helper()
	var out []records.Record
	for _, r := range recs {
		k, v, err := records.EncodeRecord(r)
		if err != nil {
			t.Fatalf("encode %v: %v", r.Key, err)
		}
		back, err := records.DecodeRecord(k, v)
		if err != nil {
			t.Fatalf("decode %v: %v", r.Key, err)
		}
		out = append(out, back)
	}
	return out
}
