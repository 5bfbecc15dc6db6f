package coordinator

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/coordinator/version"
)

// shareEnv drives one coordinator with share requests and keeps its log.
type shareEnv struct {
	t   *testing.T
	p   version.Profile
	cfg Config
	c   *Coordinator
	now time.Time
	log []records.Record
}

func newShareEnv(t *testing.T, v version.Version, partitions int) *shareEnv {
	t.Helper()
	zero := time.Duration(0)
	// group.share.assignment.interval.ms=0 (4.3+), as the harness's
	// brokers run; TestShareAssignmentInterval sets it.
	cfg := Config{Topics: consumergroup.Topics{{Name: "foo", ID: [16]byte{'T', 'f', 'o', 'o'}, Partitions: partitions}},
		Share: ShareConfig{AssignmentInterval: &zero}}
	return &shareEnv{t: t, p: v.Profile(), cfg: cfg, c: newCoordinator(t, v.Profile(), cfg), now: time.UnixMilli(1_000_000)}
}

// hb sends a ShareGroupHeartbeat of group g and ticks, as the embedded
// broker does after every request.
func (e *shareEnv) hb(member string, epoch int32, subscribe ...string) *kmsg.ShareGroupHeartbeatResponse {
	e.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = "g", member, epoch
	if subscribe != nil {
		req.SubscribedTopicNames = subscribe
	}
	return e.submit(req).(*kmsg.ShareGroupHeartbeatResponse)
}

func (e *shareEnv) submit(req kmsg.Request) kmsg.Response {
	e.t.Helper()
	o, err := e.c.Submit(e.now, Client{ID: "c", Host: "/127.0.0.1"}, req)
	if err != nil {
		e.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	e.log = append(e.log, o.Records...)
	e.tick(0)
	return o.Response
}

func (e *shareEnv) tick(d time.Duration) {
	e.now = e.now.Add(d)
	e.log = append(e.log, e.c.Tick(e.now)...)
}

func (e *shareEnv) describe() kmsg.ShareGroupDescribeResponseGroup {
	e.t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version = 1
	req.GroupIDs = []string{"g"}
	return e.submit(req).(*kmsg.ShareGroupDescribeResponse).Groups[0]
}

// types lists the record types of recs, decoded as the recovery oracle
// decodes share records.
func shareTypes(t *testing.T, recs []records.Record) []int16 {
	t.Helper()
	var out []int16
	for _, r := range recs {
		k, v, err := records.EncodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		gr, err := sharegroup.DecodeGroupRecord(k, v)
		if err != nil {
			t.Fatalf("record %s: %v", r.Type(), err)
		}
		out = append(out, gr.Type)
	}
	return out
}

func assigned(r *kmsg.ShareGroupHeartbeatResponse) []int32 {
	if r.Assignment == nil {
		return nil
	}
	var out []int32
	for _, t := range r.Assignment.TopicPartitions {
		out = append(out, t.Partitions...)
	}
	slices.Sort(out)
	return out
}

// TestShareJoinInitializesThenAssigns: the first heartbeat creates the
// group (records 10, 11, 13, 12, 14) and asks for the share-partitions'
// initialization (15, initializing) without assigning any; the
// initialization writes them initialized (15) on the next Tick; the next
// heartbeat bumps the group epoch and assigns them.
func TestShareJoinInitializesThenAssigns(t *testing.T) {
	e := newShareEnv(t, version.V4_2_1, 3)
	r := e.hb("A", 0, "foo")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment == nil || len(assigned(r)) != 0 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", r)
	}
	if got, want := shareTypes(t, e.log), []int16{10, 11, 13, 12, 14, 15, 15}; !slices.Equal(got, want) {
		t.Fatalf("join wrote record types %v, want %v", got, want)
	}
	r = e.hb("A", 1)
	if r.MemberEpoch != 2 || !slices.Equal(assigned(r), []int32{0, 1, 2}) {
		t.Fatalf("second heartbeat: epoch %d, assignment %v; want 2, [0 1 2]", r.MemberEpoch, assigned(r))
	}
	r = e.hb("A", 2)
	if r.MemberEpoch != 2 || r.Assignment != nil {
		t.Fatalf("steady heartbeat: epoch %d, assignment %v; want 2 and none", r.MemberEpoch, r.Assignment)
	}
	d := e.describe()
	if d.GroupState != "Stable" || d.GroupEpoch != 2 || d.AssignmentEpoch != 2 || d.Assignor != "simple" || len(d.Members) != 1 {
		t.Fatalf("describe: %+v", d)
	}
	if m := d.Members[0]; m.MemberID != "A" || m.MemberEpoch != 2 || m.ClientID != "c" || len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "foo" {
		t.Fatalf("described member: %+v", m)
	}
}

// TestShareHeartbeatErrors: the request checks and GMM's errors, with
// Kafka's messages.
func TestShareHeartbeatErrors(t *testing.T) {
	e := newShareEnv(t, version.V4_2_1, 1)
	check := func(what string, r *kmsg.ShareGroupHeartbeatResponse, code int16, msg string) {
		t.Helper()
		if r.ErrorCode != code || msg == "" && r.ErrorMessage != nil || msg != "" && (r.ErrorMessage == nil || *r.ErrorMessage != msg) {
			t.Errorf("%s: %s %v, want %s %q", what, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, kerr.ErrorForCode(code), msg)
		}
	}
	// KafkaApis.isMemberIdValid, before the coordinator: no message.
	check("empty member id", e.hb("", 0, "foo"), kerr.InvalidRequest.Code, "")
	check("member id of 37", e.hb(strings.Repeat("m", 37), 0, "foo"), kerr.InvalidRequest.Code, "")
	check("blank member id", e.hb(" ", 0, "foo"), kerr.InvalidRequest.Code, "MemberId can't be empty.")
	check("join without topics", e.hb("A", 0), kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request.")
	check("epoch -2", e.hb("A", -2), kerr.InvalidRequest.Code, "MemberEpoch is invalid.")
	check("unknown group", e.hb("A", 1), kerr.GroupIDNotFound.Code, "Share group g not found.")
	check("leave of unknown group", e.hb("A", -1), kerr.GroupIDNotFound.Code, "Group g not found.")
	e.hb("A", 0, "foo")
	e.hb("A", 1) // epoch 2, previous 1
	check("unknown member", e.hb("B", 1), kerr.UnknownMemberID.Code, "Member B is not a member of group g.")
	check("greater epoch", e.hb("A", 3), kerr.FencedMemberEpoch.Code, "The share group member has a greater member epoch (3) than the one known by the group coordinator (2). The member must abandon all its partitions and rejoin.")
	e.hb("B", 0, "foo") // epoch 3, previous 0
	check("smaller epoch", e.hb("B", 1), kerr.FencedMemberEpoch.Code, "The share group member has a smaller member epoch (1) than the one known by the group coordinator (3), and it does not match the previous member epoch (0). The member must abandon all its partitions and rejoin.")
	if r := e.hb("A", 1); r.ErrorCode != 0 || r.MemberEpoch != 3 {
		t.Errorf("previous epoch: %+v, want accepted at epoch 3", r)
	}
}

// TestShareGroupMaxSize: group.share.max.size refuses a new member, not a
// known one.
func TestShareGroupMaxSize(t *testing.T) {
	e := newShareEnv(t, version.V4_2_1, 1)
	e.cfg.Share.MaxSize = 1
	e.c = newCoordinator(t, e.p, e.cfg)
	e.hb("A", 0, "foo")
	if r := e.hb("B", 0, "foo"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Errorf("second member: %+v, want GROUP_MAX_SIZE_REACHED", r)
	}
	if r := e.hb("A", 0, "foo"); r.ErrorCode != 0 {
		t.Errorf("known member rejoining a full group: %+v", r)
	}
}

// TestShareMorePartitionsThanMembersAndSharing: the SimpleAssignor gives
// every member partitions; with more members than partitions, each
// partition goes to ceil(members/partitions) members.
func TestShareMorePartitionsThanMembersAndSharing(t *testing.T) {
	e := newShareEnv(t, version.V4_4_0, 3)
	e.hb("A", 0, "foo")
	e.hb("A", 1)
	rb := e.hb("B", 0, "foo")
	ra := e.hb("A", 2)
	all := slices.Sorted(slices.Values(append(assigned(rb), assigned(ra)...)))
	if len(assigned(rb)) == 0 || !slices.Equal(all, []int32{0, 1, 2}) {
		t.Fatalf("two members over three partitions: A %v, B %v; want a split of [0 1 2]", assigned(ra), assigned(rb))
	}

	e = newShareEnv(t, version.V4_2_1, 1)
	e.hb("A", 0, "foo")
	e.hb("A", 1)
	e.hb("B", 0, "foo")
	e.hb("C", 0, "foo")
	for _, m := range e.describe().Members {
		if len(m.Assignment.TopicPartitions) != 1 {
			t.Errorf("three members over one partition: %s has %v; want the partition shared by all", m.MemberID, m.Assignment.TopicPartitions)
		}
	}
	if b := sharegroup.Bounds(3, 1); b.DesiredSharing != 3 {
		t.Fatalf("Bounds(3,1) = %+v", b)
	}
}

// TestShareLeaveSessionAndReplay: a leave (epoch -1) tombstones the member
// and bumps the epoch; a lapsed session fences a member the same way; a
// coordinator loaded from the log has the same state and re-arms the
// sessions (GMM.onLoaded).
func TestShareLeaveSessionAndReplay(t *testing.T) {
	e := newShareEnv(t, version.V4_2_1, 1)
	e.hb("A", 0, "foo")
	e.hb("A", 1)
	e.hb("B", 0, "foo")
	mark := len(e.log)
	r := e.hb("B", -1)
	if r.ErrorCode != 0 || r.MemberEpoch != -1 || r.MemberID == nil || *r.MemberID != "B" || r.HeartbeatIntervalMillis != 0 {
		t.Fatalf("leave: %+v", r)
	}
	if got, want := shareTypes(t, e.log[mark:]), []int16{14, 13, 10, 11}; !slices.Equal(got, want) {
		t.Fatalf("leave wrote %v, want %v", got, want)
	}
	if d := e.describe(); d.GroupEpoch != 4 || len(d.Members) != 1 {
		t.Fatalf("after the leave: %+v", d)
	}

	// Replay: the log gives the live state.
	full := e.replayAll()
	if live, loaded := e.c.State(), full.State(); !live.Equal(loaded) || loaded.Share == "" {
		t.Fatalf("replay:\nlive:\n%s\nloaded:\n%s", live, loaded)
	}

	// A's session: 45s from its last heartbeat, also on a loaded
	// coordinator.
	e.c = full
	e.log = append(e.log, e.c.Loaded(e.now)...)
	e.tick(44 * time.Second)
	if d := e.describe(); len(d.Members) != 1 {
		t.Fatalf("before the session lapsed: %d members", len(d.Members))
	}
	e.tick(time.Second)
	d := e.describe()
	// 4.2.1: the assignment epoch stays at the last assignment's (3).
	if len(d.Members) != 0 || d.GroupState != "Empty" || d.GroupEpoch != 5 || d.AssignmentEpoch != 3 {
		t.Fatalf("after the session lapsed: %+v", d)
	}
	if r := e.hb("A", 2); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("fenced member's heartbeat: %+v", r)
	}
}

func (e *shareEnv) replayAll() *Coordinator {
	e.t.Helper()
	return replayed(e.t, newCoordinator(e.t, e.p, e.cfg), roundTrip(e.t, e.log))
}

// TestShareRecordsReplayInOracle: the records the coordinator writes are
// what package sharegroup's replay (the recovery oracle) reads back: the
// group's epoch, members, targets and initialized share-partitions.
func TestShareRecordsReplayInOracle(t *testing.T) {
	e := newShareEnv(t, version.V4_4_0, 2)
	e.hb("A", 0, "foo")
	e.hb("A", 1)
	e.hb("B", 0, "foo")
	gs := sharegroup.Groups{}
	for _, r := range e.log {
		k, v, err := records.EncodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		gr, err := sharegroup.DecodeGroupRecord(k, v)
		if err != nil {
			t.Fatal(err)
		}
		gs.Replay(gr)
	}
	g := gs["g"]
	if g == nil || g.Epoch != 3 || g.AssignmentEpoch != 3 || len(g.Members) != 2 || len(g.Initialized) != 1 {
		t.Fatalf("oracle replay: %+v", g)
	}
	n := 0
	for _, m := range g.Members {
		if m.MemberEpoch != 0 && m.MemberEpoch != 2 && m.MemberEpoch != 3 {
			t.Errorf("member %s epoch %d", m.ID, m.MemberEpoch)
		}
		for _, tp := range m.Target {
			n += len(tp.Partitions)
		}
	}
	if n != 2 {
		t.Errorf("targets hold %d partitions, want the 2 split between A and B", n)
	}
}

// TestShareVersionPendingCheck: 4.2 asks on every heartbeat whether an
// initialized partition is unassigned; 4.3+ (KIP-1263) only when no
// assignment is pending. After a member holding one of two partitions
// leaves, 4.2's next heartbeat bumps the group epoch once more (5) than
// 4.4's; 4.4 also stamps the assignment with its time.
func TestShareVersionPendingCheck(t *testing.T) {
	for _, tc := range []struct {
		v     version.Version
		epoch int32
		ts    bool
	}{{version.V4_2_1, 5, false}, {version.V4_4_0, 5, true}} {
		// 4.4 starts a group at epoch 1 (InitialGroupEpoch), so its
		// epochs are one ahead, and then one behind 4.2's after the leave.
		first := version.V4_2_1.Profile().FirstMemberEpoch
		off := tc.v.Profile().FirstMemberEpoch - first
		e := newShareEnv(t, tc.v, 2)
		e.hb("A", 0, "foo")
		e.hb("A", 1+off)
		e.hb("B", 0, "foo")
		e.hb("A", -1)
		mark := len(e.log)
		r := e.hb("B", 3+off)
		if r.MemberEpoch != tc.epoch || !slices.Equal(assigned(r), []int32{0, 1}) {
			t.Errorf("%s: B after A left: epoch %d, assignment %v; want %d, [0 1]", tc.v, r.MemberEpoch, assigned(r), tc.epoch)
		}
		var ts int64 = -1
		for _, rec := range e.log[mark:] {
			k, v, _ := records.EncodeRecord(rec)
			gr, _ := sharegroup.DecodeGroupRecord(k, v)
			if m, ok := gr.Value.(*sharegroup.TargetAssignmentMetadataValue); ok {
				ts = m.AssignmentTimestamp
			}
		}
		if (ts == e.now.UnixMilli()) != tc.ts || ts == -1 {
			t.Errorf("%s: assignment timestamp %d (now %d), stamped want %v", tc.v, ts, e.now.UnixMilli(), tc.ts)
		}
	}
}

// TestShareAssignmentInterval: from 4.3 (KIP-1263) a share group's target
// assignment is computed at most every group.share.assignment.interval.ms
// (1s by default); the next heartbeat after it computes it.
func TestShareAssignmentInterval(t *testing.T) {
	e := newShareEnv(t, version.V4_4_0, 1)
	e.cfg.Share.AssignmentInterval = nil // the default, 1s
	e.c = newCoordinator(t, e.p, e.cfg)
	e.hb("A", 0, "foo") // epoch 2 (4.4: a new group starts at 1)
	if r := e.hb("A", 2); r.MemberEpoch != 2 || r.Assignment != nil {
		t.Fatalf("within the interval: %+v, want epoch 2 and no assignment", r)
	}
	e.tick(time.Second)
	if r := e.hb("A", 2); r.MemberEpoch != 3 || !slices.Equal(assigned(r), []int32{0}) {
		t.Fatalf("after the interval: epoch %d, assignment %v; want 3, [0]", r.MemberEpoch, assigned(r))
	}
}

// TestShareNotServedBefore42: share groups are not production-ready before
// 4.2, and the reference refuses the API as a broker that does not
// advertise it.
func TestShareNotServedBefore42(t *testing.T) {
	c := newCoordinator(t, version.V4_1_2.Profile(), Config{})
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	if _, err := c.Submit(time.UnixMilli(0), Client{}, req); err == nil || !strings.Contains(err.Error(), "not served by Kafka 4.1.2") {
		t.Fatalf("4.1.2 ShareGroupHeartbeat: %v", err)
	}
}

// TestShareGroupIDsOfOtherTypes: a share heartbeat or describe of a
// consumer group's id is GROUP_ID_NOT_FOUND ("is not a share group"), an
// empty id in a describe INVALID_GROUP_ID.
func TestShareGroupIDsOfOtherTypes(t *testing.T) {
	e := newShareEnv(t, version.V4_4_0, 1)
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Version = 1
	cg.Group, cg.MemberID, cg.RebalanceTimeoutMillis, cg.SubscribedTopicNames = "g", "C", 60000, []string{"foo"}
	cg.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := e.submit(cg).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("consumer join: %+v", r)
	}
	if r := e.hb("S", 0, "foo"); r.ErrorCode != kerr.GroupIDNotFound.Code || *r.ErrorMessage != "Group g is not a share group." {
		t.Errorf("share join of a consumer group: %+v", r)
	}
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version = 1
	req.GroupIDs = []string{"g", ""}
	gs := e.submit(req).(*kmsg.ShareGroupDescribeResponse).Groups
	if len(gs) != 2 || gs[0].ErrorCode != kerr.InvalidGroupID.Code || gs[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("describe: %+v", gs)
	}
}

// TestShareSessionTimeout: a share member is fenced
// group.share.session.timeout.ms (45s) after its last heartbeat, which
// renews the session (GMM.scheduleShareGroupSessionTimeout).
func TestShareSessionTimeout(t *testing.T) {
	e := newShareEnv(t, version.V4_2_1, 1)
	e.hb("A", 0, "foo")
	e.tick(30 * time.Second)
	e.hb("B", 0, "foo")
	e.tick(15 * time.Second)
	if d := e.describe(); len(d.Members) != 1 || d.Members[0].MemberID != "B" {
		t.Fatalf("45s after A's last heartbeat: %+v, want only B", d.Members)
	}
	e.hb("B", 2) // at 45s: B's session now ends at 90s
	e.tick(44 * time.Second)
	if d := e.describe(); len(d.Members) != 1 {
		t.Fatalf("at 89s: %+v, want B (its session renewed at 45s)", d.Members)
	}
	e.tick(time.Second)
	if d := e.describe(); len(d.Members) != 0 {
		t.Fatalf("at 90s: %+v, want no member", d.Members)
	}
}

// TestShareEpochsByRelease: from 4.3 a new share group starts at epoch 1
// (ModernGroup, KAFKA-20268), so its first member joins at epoch 2; from
// 4.4 the last member's leave also moves the assignment epoch to the new
// group epoch (KAFKA-20442). Both answered so by Kafka 4.2.1 and 4.4.0
// (share/members.txt in the differential run).
func TestShareEpochsByRelease(t *testing.T) {
	for _, tc := range []struct {
		v                       version.Version
		first, emptyAssignEpoch int32
	}{{version.V4_2_1, 1, 1}, {version.V4_4_0, 2, 3}} {
		e := newShareEnv(t, tc.v, 1)
		if r := e.hb("A", 0, "foo"); r.MemberEpoch != tc.first {
			t.Errorf("%s: first member's epoch %d, want %d", tc.v, r.MemberEpoch, tc.first)
		}
		e.hb("A", -1)
		if d := e.describe(); d.GroupEpoch != tc.first+1 || d.AssignmentEpoch != tc.emptyAssignEpoch {
			t.Errorf("%s: emptied group at epoch %d, assignment epoch %d; want %d, %d", tc.v, d.GroupEpoch, d.AssignmentEpoch, tc.first+1, tc.emptyAssignEpoch)
		}
	}
}

// TestShareIDForOtherProtocols: a share group's id refuses the other
// protocols as Kafka does (GMM.classicGroupJoin: INCONSISTENT_GROUP_PROTOCOL;
// getOrMaybeCreateConsumerGroup: "is not a consumer group"), DescribeGroups
// says it is not a classic group, and ListGroups lists it as a share group.
func TestShareIDForOtherProtocols(t *testing.T) {
	e := newShareEnv(t, version.V4_4_0, 1)
	e.hb("A", 0, "foo")
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version = 9
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "g", 10000, 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	if r := e.submit(join).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.InconsistentGroupProtocol.Code || r.MemberID != "" {
		t.Errorf("JoinGroup of a share group's id: %v member %q", kerr.ErrorForCode(r.ErrorCode), r.MemberID)
	}
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Version = 1
	cg.Group, cg.MemberID, cg.RebalanceTimeoutMillis, cg.SubscribedTopicNames = "g", "C", 60000, []string{"foo"}
	cg.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := e.submit(cg).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != kerr.GroupIDNotFound.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Group g is not a consumer group." {
		t.Errorf("ConsumerGroupHeartbeat of a share group's id: %+v", r)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version = 6
	dg.Groups = []string{"g"}
	if d := e.submit(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; d.ErrorCode != kerr.GroupIDNotFound.Code || *d.ErrorMessage != "Group g is not a classic group." {
		t.Errorf("DescribeGroups of a share group: %+v", d)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	lg.TypesFilter = []string{"share"}
	if gs := e.submit(lg).(*kmsg.ListGroupsResponse).Groups; len(gs) != 1 || gs[0].GroupType != "share" || gs[0].ProtocolType != "share" || gs[0].GroupState != "Stable" {
		t.Errorf("ListGroups types=share: %+v", gs)
	}
}
