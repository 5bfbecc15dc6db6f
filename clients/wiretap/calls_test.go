package wiretap

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// callsUnder returns a Calls for group g of protocol p and the events it
// reports.
func callsUnder(p clients.Protocol) (*Calls, *[]clients.Event) {
	var got []clients.Event
	at := time.Unix(0, 0)
	now := func() time.Time { at = at.Add(time.Millisecond); return at }
	c := NewCalls(CallsConfig{
		Group: "g", Protocol: p, Client: "the test client",
		Event: func(k clients.Kind) clients.Event {
			return clients.Event{Kind: k, Protocol: p, Member: "m", Generation: -1, MemberEpoch: -1, GroupEpoch: -1, At: now()}
		},
		Now:    now,
		Report: func(e clients.Event) { got = append(got, e) },
	})
	return c, &got
}

func TestCallsReportsSentAndAnswer(t *testing.T) {
	c, got := callsUnder(clients.Classic)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.MemberID = "g", "m-1"
	tok := c.Request(join)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation, resp.MemberID, resp.LeaderID = 3, "m-1", "m-1"
	c.Response(tok, resp)

	other := kmsg.NewPtrHeartbeatRequest()
	other.Group = "another group"
	if tok := c.Request(other); tok != nil {
		t.Errorf("a Heartbeat of another group got token %v, want nil (not reported)", tok)
	}
	if len(*got) != 2 {
		t.Fatalf("reported %d events, want Sent and Joined: %+v", len(*got), *got)
	}
	sent, joined := (*got)[0], (*got)[1]
	if sent.Kind != clients.Sent || sent.Op != clients.OpJoin || sent.Call != 1 || sent.MemberID != "m-1" || sent.Why != "the test client wrote JoinGroup" {
		t.Errorf("Sent = %+v", sent)
	}
	if joined.Kind != clients.Joined || joined.Call != 1 || joined.Generation != 3 || !joined.Leader || !joined.At.After(sent.At) {
		t.Errorf("Joined = %+v (Sent at %v)", joined, sent.At)
	}
	c.Response(tok, resp) // a second answer is dropped
	if len(*got) != 2 {
		t.Errorf("a second answer to one call was reported: %+v", (*got)[2:])
	}
}

// TestCallsLaneSupersedes: a request written before the answer to the
// previous one of its lane gives that one an unknown outcome.
func TestCallsLaneSupersedes(t *testing.T) {
	c, got := callsUnder(clients.Consumer)
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "g", "m-1", 4
	first := c.Request(hb)
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "g", "m-1", -1
	c.Request(leave)
	c.Response(first, kmsg.NewPtrConsumerGroupHeartbeatResponse()) // too late
	var kinds []string
	for _, e := range *got {
		kinds = append(kinds, string(e.Kind)+"/"+string(e.Op))
	}
	want := []string{"sent/heartbeat", "heartbeat/heartbeat", "sent/leave"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	if ans := (*got)[1]; ans.Call != 1 || ans.ErrCode != 0 || !strings.Contains(ans.Err, "the test client wrote ConsumerGroupHeartbeat before this request's answer came") {
		t.Errorf("the superseded heartbeat's answer = %+v, want no answer (Err without ErrCode)", ans)
	}
}

func TestCallsConsumerAssignmentNamesTopics(t *testing.T) {
	c, got := callsUnder(clients.Consumer)
	id := [16]byte{1}
	md := kmsg.NewPtrMetadataRequest()
	mdResp := kmsg.NewPtrMetadataResponse()
	mt := kmsg.NewMetadataResponseTopic()
	name := "orders"
	mt.Topic, mt.TopicID = &name, id
	mdResp.Topics = append(mdResp.Topics, mt)
	c.Response(c.Request(md), mdResp)

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberEpoch = "g", 0
	tok := c.Request(hb)
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.MemberEpoch = 5
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
	at.TopicID, at.Partitions = id, []int32{2, 0, 2}
	a.Topics = append(a.Topics, at)
	resp.Assignment = &a
	c.Response(tok, resp)
	ans := (*got)[len(*got)-1]
	if ans.Kind != clients.Heartbeat || ans.MemberEpoch != 5 || !reflect.DeepEqual(ans.Partitions, clients.Partitions{"orders": {0, 2}}) {
		t.Errorf("heartbeat answer = %+v, want member epoch 5 and orders [0 2]", ans)
	}
}

func TestCallsCommits(t *testing.T) {
	commit := func(c *Calls, app bool, codes ...int16) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "g", 7
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "orders"
		resp := kmsg.NewPtrOffsetCommitResponse()
		respT := kmsg.NewOffsetCommitResponseTopic()
		respT.Topic = "orders"
		for i, code := range codes {
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset = int32(i), int64(10+i)
			rt.Partitions = append(rt.Partitions, p)
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = int32(i), code
			respT.Partitions = append(respT.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp.Topics = append(resp.Topics, respT)
		c.SetApp(app)
		c.Response(c.Request(req), resp)
	}
	fenced := kerr.FencedMemberEpoch.Code

	c, got := callsUnder(clients.Consumer)
	commit(c, true, fenced, fenced)
	sent, ans := (*got)[0], (*got)[1]
	if !sent.App || sent.MemberEpoch != 7 || sent.Generation != -1 || !reflect.DeepEqual(sent.Offsets, map[string]map[int32]int64{"orders": {0: 10, 1: 11}}) {
		t.Errorf("consumer commit Sent = %+v, want App, member epoch 7 and the offsets", sent)
	}
	if ans.Kind != clients.CommitFailed || ans.Err != "FENCED_MEMBER_EPOCH" || ans.ErrCode != fenced {
		t.Errorf("a commit rejected on every partition answered %+v, want CommitFailed FENCED_MEMBER_EPOCH", ans)
	}

	c, got = callsUnder(clients.Classic)
	commit(c, false, 0, kerr.OffsetMetadataTooLarge.Code)
	sent, ans = (*got)[0], (*got)[1]
	if sent.App || sent.Generation != 7 || sent.MemberEpoch != -1 {
		t.Errorf("classic commit Sent = %+v, want not App and generation 7", sent)
	}
	if ans.Kind != clients.Committed || !reflect.DeepEqual(ans.PartitionErrs, map[string]map[int32]string{"orders": {1: "OFFSET_METADATA_TOO_LARGE"}}) {
		t.Errorf("a commit with one refused partition answered %+v, want Committed with that partition's error", ans)
	}

	c, got = callsUnder(clients.Classic)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = "g"
	c.Lost(c.Request(req), errors.New("connection closed"))
	if ans := (*got)[1]; ans.Kind != clients.CommitFailed || ans.ErrCode != 0 || ans.Err != "connection closed" {
		t.Errorf("a commit without an answer answered %+v, want CommitFailed with no error code", ans)
	}
}

func TestCommitRejected(t *testing.T) {
	resp := func(codes ...int16) *kmsg.OffsetCommitResponse {
		r := kmsg.NewPtrOffsetCommitResponse()
		rt := kmsg.NewOffsetCommitResponseTopic()
		for i, c := range codes {
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition, p.ErrorCode = int32(i), c
			rt.Partitions = append(rt.Partitions, p)
		}
		r.Topics = append(r.Topics, rt)
		return r
	}
	gen := kerr.IllegalGeneration.Code
	if name, code, all := CommitRejected(resp(gen, gen)); !all || code != gen || name != "ILLEGAL_GENERATION" {
		t.Errorf("every partition ILLEGAL_GENERATION: %s %d %v", name, code, all)
	}
	for _, codes := range [][]int16{{}, {0, gen}, {gen, kerr.UnknownMemberID.Code}} {
		if _, _, all := CommitRejected(resp(codes...)); all {
			t.Errorf("codes %v read as a commit rejected as a whole", codes)
		}
	}
	if got := ErrName(errors.New("i/o timeout")); got != "i/o timeout" {
		t.Errorf("ErrName of a transport error = %q, want its text", got)
	}
}

// TestCallsLookups: with Lookups, the answers of the group's FindCoordinator
// and OffsetFetch are reported as facts (call 0); without it, or for
// another group, nothing is reported.
func TestCallsLookups(t *testing.T) {
	c, got := callsUnder(clients.Classic)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	if tok := c.Request(fc); tok != nil {
		t.Fatalf("without Lookups a FindCoordinator got token %v, want nil", tok)
	}
	c.cfg.Lookups = true
	other := kmsg.NewPtrFindCoordinatorRequest()
	other.CoordinatorKey = "another group"
	if tok := c.Request(other); tok != nil {
		t.Errorf("a FindCoordinator of another group got token %v, want nil", tok)
	}
	fresp := kmsg.NewPtrFindCoordinatorResponse()
	fresp.NodeID = 2
	c.Response(c.Request(fc), fresp)

	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g"
	oresp := kmsg.NewPtrOffsetFetchResponse()
	oresp.Topics = []kmsg.OffsetFetchResponseTopic{{Topic: "t", Partitions: []kmsg.OffsetFetchResponseTopicPartition{{Partition: 0, Offset: 7}, {Partition: 1, Offset: -1}}}}
	c.Response(c.Request(of), oresp)
	bad := kmsg.NewPtrOffsetFetchResponse()
	bad.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	c.Response(c.Request(of), bad)

	if len(*got) != 3 {
		t.Fatalf("reported %d events, want 3: %+v", len(*got), *got)
	}
	found, fetched, failed := (*got)[0], (*got)[1], (*got)[2]
	if found.Kind != clients.FoundCoordinator || found.Node != 2 || found.Call != 0 {
		t.Errorf("FindCoordinator's answer = %+v", found)
	}
	if want := map[string]map[int32]int64{"t": {0: 7, 1: -1}}; fetched.Kind != clients.Fetched || !reflect.DeepEqual(fetched.Offsets, want) {
		t.Errorf("OffsetFetch's answer = %+v, want Fetched %v", fetched, want)
	}
	if failed.Kind != clients.Error || failed.Err != "COORDINATOR_LOAD_IN_PROGRESS" {
		t.Errorf("failed OffsetFetch = %+v", failed)
	}
}
