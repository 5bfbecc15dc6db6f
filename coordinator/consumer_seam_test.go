package coordinator

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/vectors"
	"github.com/groupquake/groupquake/coordinator/version"
)

// fakeConsumerGroups is a toy consumer-group engine: a group is an epoch
// and a set of members, written as one ConsumerGroupMetadata record. It
// exists to exercise the ConsumerGroups seam, not the KIP-848 rules.
type fakeConsumerGroups struct {
	profile version.Profile
	groups  map[string]*fakeGroup
}

type fakeGroup struct {
	epoch   int32
	members map[string]bool
}

func newFake(p version.Profile) *fakeConsumerGroups {
	return &fakeConsumerGroups{profile: p, groups: map[string]*fakeGroup{}}
}

func (f *fakeConsumerGroups) record(id string, g *fakeGroup) records.Record {
	r, err := records.AsWrittenBy(f.profile, records.Record{
		Key:   records.ConsumerGroupMetadataKey{GroupID: id},
		Value: &records.ConsumerGroupMetadataValue{Epoch: g.epoch},
	})
	if err != nil {
		panic(err)
	}
	return r
}

// Heartbeat: epoch 0 joins (member id = the request's), -1 leaves.
func (f *fakeConsumerGroups) Heartbeat(_ time.Time, _ Client, classic ClassicGroups, _ TopicMetadata, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, []records.Record) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	var recs []records.Record
	g := f.groups[req.Group]
	if g == nil {
		if req.MemberEpoch != 0 {
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			return resp, nil
		}
		if exists, empty := classic.LookupClassic(req.Group); exists {
			if !empty {
				resp.ErrorCode = kerr.GroupIDNotFound.Code
				return resp, nil
			}
			recs = append(recs, classic.ConvertEmptyClassic(req.Group)...)
		}
		g = &fakeGroup{members: map[string]bool{}}
		f.groups[req.Group] = g
	}
	switch req.MemberEpoch {
	case 0:
		g.members[req.MemberID] = true
	case -1:
		delete(g.members, req.MemberID)
	}
	g.epoch++
	resp.MemberEpoch = g.epoch
	return resp, append(recs, f.record(req.Group, g))
}

func (f *fakeConsumerGroups) Describe(_ time.Time, _ TopicMetadata, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	return req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
}

func (f *fakeConsumerGroups) Replay(r records.Record) error {
	k, ok := r.Key.(records.ConsumerGroupMetadataKey)
	if !ok {
		return fmt.Errorf("fake engine: unexpected %s record", r.Type())
	}
	if r.Value == nil {
		delete(f.groups, k.GroupID)
		return nil
	}
	g := f.groups[k.GroupID]
	if g == nil {
		g = &fakeGroup{members: map[string]bool{}}
		f.groups[k.GroupID] = g
	}
	g.epoch = r.Value.(*records.ConsumerGroupMetadataValue).Epoch
	return nil
}

func (f *fakeConsumerGroups) Tick(time.Time) []records.Record { return nil }

func (f *fakeConsumerGroups) Lookup(id string) (ConsumerGroupInfo, bool) {
	g := f.groups[id]
	if g == nil {
		return ConsumerGroupInfo{}, false
	}
	state := "Stable"
	if len(g.members) == 0 {
		state = "Empty"
	}
	return ConsumerGroupInfo{State: state, Empty: len(g.members) == 0, SubscribedTopics: map[string]bool{"sub": true}}, true
}

func (f *fakeConsumerGroups) GroupIDs() []string { return sortedKeys(f.groups) }

func (f *fakeConsumerGroups) ValidateOffsetCommit(c OffsetCommitCheck) error {
	g := f.groups[c.GroupID]
	if c.MemberEpoch < 0 && len(g.members) == 0 {
		return nil
	}
	if !g.members[c.MemberID] {
		return kerr.UnknownMemberID
	}
	if c.MemberEpoch != g.epoch {
		return fmt.Errorf("fake engine: epoch %d, want %d: %w", c.MemberEpoch, g.epoch, kerr.StaleMemberEpoch)
	}
	return nil
}

func (f *fakeConsumerGroups) ValidateOffsetFetch(string, *string, int32) error { return nil }

func (f *fakeConsumerGroups) Delete(id string) ([]records.Record, error) {
	g := f.groups[id]
	if g == nil {
		return nil, kerr.GroupIDNotFound
	}
	if len(g.members) > 0 {
		return nil, kerr.NonEmptyGroup
	}
	delete(f.groups, id)
	return []records.Record{{Key: records.ConsumerGroupMetadataKey{GroupID: id}}}, nil
}

func (f *fakeConsumerGroups) State() string {
	var b strings.Builder
	for _, id := range sortedKeys(f.groups) {
		fmt.Fprintf(&b, "consumer group %s epoch=%d\n", id, f.groups[id].epoch)
	}
	return b.String()
}

// TestConsumerGroupSeam drives the shell with the fake engine through the
// places where classic groups, offsets and consumer groups meet: converting
// an empty classic group, offset fencing, ListGroups, OffsetDelete,
// DeleteGroups, JoinGroup on an empty consumer group, and replay.
func TestConsumerGroupSeam(t *testing.T) {
	p := version.V4_4_0.Profile()
	newCoord := func() *Coordinator {
		return newCoordinator(t, p, Config{ConsumerGroups: newFake(p), IDs: &vectors.ShortIDs{}})
	}
	c := newCoord()
	now := time.UnixMilli(0)
	var log []records.Record
	do := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		o, err := c.Submit(now, Client{ID: "c", Host: "/h"}, req)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, o.Records...)
		log = append(log, c.Tick(now)...)
		checkReplays(t, c, newCoord(), log)
		return o.Response
	}
	commit := func(member string, epoch int32, topic string) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.MemberID, r.Generation = 9, "g", member, epoch
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = topic
		tp.Partitions = []kmsg.OffsetCommitRequestTopicPartition{kmsg.NewOffsetCommitRequestTopicPartition()}
		r.Topics = []kmsg.OffsetCommitRequestTopic{tp}
		return do(r).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	heartbeat := func(member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch = "g", member, epoch
		return do(r).(*kmsg.ConsumerGroupHeartbeatResponse)
	}

	// A simple classic group, then a consumer member takes the id over.
	if code := commit("", -1, "t"); code != 0 {
		t.Fatalf("simple commit: %v", kerr.ErrorForCode(code))
	}
	if resp := heartbeat("m", 0); resp.ErrorCode != 0 || resp.MemberEpoch != 1 {
		t.Fatalf("join: %+v", resp)
	}
	if c.classic["g"] != nil {
		t.Fatal("the empty classic group was not converted")
	}
	if got := []records.Type{log[1].Type(), log[2].Type()}; !slices.Equal(got, []records.Type{records.TypeGroupMetadata, records.TypeConsumerGroupMetadata}) || !log[1].IsTombstone() {
		t.Fatalf("conversion wrote %v, want the GroupMetadata tombstone then the consumer record", got)
	}

	// Offset fencing goes through the engine; its wrapped error counts.
	if code := commit("m", 7, "t"); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("stale commit: %v", kerr.ErrorForCode(code))
	}
	if code := commit("m", 1, "sub"); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}

	// ListGroups lists it; OffsetDelete respects its subscription.
	lg := do(kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
	if len(lg.Groups) != 1 || lg.Groups[0].GroupType != "consumer" || lg.Groups[0].GroupState != "Stable" {
		t.Fatalf("list: %+v", lg.Groups)
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	for _, topic := range []string{"sub", "t"} {
		tp := kmsg.NewOffsetDeleteRequestTopic()
		tp.Topic = topic
		tp.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{kmsg.NewOffsetDeleteRequestTopicPartition()}
		od.Topics = append(od.Topics, tp)
	}
	odr := do(od).(*kmsg.OffsetDeleteResponse)
	if odr.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code || odr.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", odr.Topics)
	}

	// DeleteGroups: refused while a member is in, then offsets and group go.
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	if r := do(del).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete non-empty: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	heartbeat("m", -1)
	before := len(log)
	if r := do(del).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	var types []string
	for _, r := range log[before:] {
		types = append(types, fmt.Sprintf("%s/%v", r.Type(), r.IsTombstone()))
	}
	if want := []string{"OffsetCommit/true", "ConsumerGroupMetadata/true"}; !slices.Equal(types, want) {
		t.Fatalf("delete wrote %v, want %v", types, want)
	}

	// A classic JoinGroup to an empty consumer group converts it back.
	heartbeat("m", 0)
	heartbeat("m", -1)
	before = len(log)
	j := kmsg.NewPtrJoinGroupRequest()
	j.Group, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = "g", 10000, 10000, "consumer"
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("m")}}
	do(j)
	types = types[:0]
	for _, r := range log[before:] {
		types = append(types, fmt.Sprintf("%s/%v", r.Type(), r.IsTombstone()))
	}
	if want := []string{"ConsumerGroupMetadata/true", "GroupMetadata/false"}; !slices.Equal(types, want) {
		t.Fatalf("join to an empty consumer group wrote %v, want %v", types, want)
	}
}

// TestNoConsumerGroups pins the answers of a coordinator without consumer
// groups (Config.ConsumerGroups = NoConsumerGroups{}; the default engine is
// consumergroup.Manager, see TestDefaultConsumerGroups).
func TestNoConsumerGroups(t *testing.T) {
	c := newCoordinator(t, version.V4_4_0.Profile(), Config{ConsumerGroups: NoConsumerGroups{}})
	for epoch, want := range map[int32]*kerr.Error{0: kerr.UnsupportedVersion, 3: kerr.GroupIDNotFound, -1: kerr.GroupIDNotFound} {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch = "g", "m", epoch
		resp, _, err := c.Handle(time.UnixMilli(0), r)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; got != want.Code {
			t.Errorf("epoch %d: %v, want %v", epoch, kerr.ErrorForCode(got), want)
		}
	}
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{"g"}
	resp, _, err := c.Handle(time.UnixMilli(0), d)
	if err != nil {
		t.Fatal(err)
	}
	if g := resp.(*kmsg.ConsumerGroupDescribeResponse).Groups; len(g) != 1 || g[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("describe: %+v", g)
	}
	if err := c.Replay(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: "g"}, Value: &records.ConsumerGroupMetadataValue{}}); err == nil {
		t.Error("replaying a consumer-group record without an engine succeeded")
	}
	if _, _, err := c.Handle(time.UnixMilli(0), kmsg.NewPtrProduceRequest()); err == nil {
		t.Error("Produce was served")
	}
}

// TestDefaultConsumerGroups checks that a zero Config gives a whole
// coordinator: a consumer member joins, its group is listed beside the
// classic ones, and a coordinator loaded from the log holds the same state.
func TestDefaultConsumerGroups(t *testing.T) {
	p := version.V4_4_0.Profile()
	c := newCoordinator(t, p, Config{})
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version, r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = 1, "g", "m", 0, 10000
	r.SubscribedTopicNames, r.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, recs, err := c.Handle(time.UnixMilli(0), r)
	if err != nil {
		t.Fatal(err)
	}
	hb := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
	if hb.ErrorCode != 0 || hb.MemberEpoch != p.FirstMemberEpoch {
		t.Fatalf("join: error %v, epoch %d; want no error, epoch %d", kerr.ErrorForCode(hb.ErrorCode), hb.MemberEpoch, p.FirstMemberEpoch)
	}
	l, _, err := c.Handle(time.UnixMilli(0), kmsg.NewPtrListGroupsRequest())
	if err != nil {
		t.Fatal(err)
	}
	if gs := l.(*kmsg.ListGroupsResponse).Groups; len(gs) != 1 || gs[0].GroupType != "consumer" {
		t.Fatalf("list: %+v, want one consumer group", gs)
	}
	if c.State().Consumer == "" {
		t.Fatalf("the live state holds no consumer group:\n%s", c.State())
	}
	checkReplays(t, c, newCoordinator(t, p, Config{}), recs)
}

// convertThenFail converts an Empty classic group and then fails the
// heartbeat without returning the tombstone, as an engine whose own
// records failed to apply would.
type convertThenFail struct{ *fakeConsumerGroups }

func (f convertThenFail) Heartbeat(_ time.Time, _ Client, classic ClassicGroups, _ TopicMetadata, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, []records.Record) {
	classic.ConvertEmptyClassic(req.Group)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = kerr.UnknownServerError.Code
	return resp, nil
}

// TestConvertedTombstoneIsWritten: a classic group the engine converted is
// tombstoned in the log even when the engine failed the request.
func TestConvertedTombstoneIsWritten(t *testing.T) {
	p := version.V4_4_0.Profile()
	c := newCoordinator(t, p, Config{ConsumerGroups: convertThenFail{newFake(p)}})
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 9, "g", -1
	tp := kmsg.NewOffsetCommitRequestTopic()
	tp.Topic = "t"
	tp.Partitions = []kmsg.OffsetCommitRequestTopicPartition{kmsg.NewOffsetCommitRequestTopicPartition()}
	commit.Topics = []kmsg.OffsetCommitRequestTopic{tp}
	_, log, err := c.Handle(time.UnixMilli(0), commit)
	if err != nil {
		t.Fatal(err)
	}
	if exists, empty := c.LookupClassic("g"); !exists || !empty {
		t.Fatalf("simple group g: exists=%v empty=%v, want an Empty classic group", exists, empty)
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID = "g", "m"
	_, recs, err := c.Handle(time.UnixMilli(0), hb)
	if err != nil {
		t.Fatal(err)
	}
	if !hasTombstone(recs, records.GroupMetadataKey{Group: "g"}) {
		t.Fatalf("the converted group's tombstone was not written: %v", recs)
	}
	checkReplays(t, c, newCoordinator(t, p, Config{ConsumerGroups: NoConsumerGroups{}}), append(log, recs...))
}
