package consumergroup_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TestStaticRejoinOwnInstance: a static member's join at epoch 0 with the
// member id that owns its instance id (the retry of a join whose answer was
// lost, the rejoin after FENCED_MEMBER_EPOCH) is refused with
// UNRELEASED_INSTANCE_ID by every served release
// (coordinator/testdata/consumer/static_rejoin_own_instance.txt), and taken
// back in place by a release with version.Profile.StaticRejoinOwnInstance
// (apache/kafka PR #23542), which refuses a join that changes a member's
// instance id instead.
func TestStaticRejoinOwnInstance(t *testing.T) {
	foo := consumergroup.Topic{Name: "foo", ID: topicID("foo"), Partitions: 2}
	hb := func(m *consumergroup.Manager, member, instance string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		req := javaHeartbeat(member, epoch, "foo")
		req.InstanceID = &instance
		return heartbeatAt0(m, req, consumergroup.Topics{foo})
	}
	newManager := func(t *testing.T, fixed bool) *consumergroup.Manager {
		t.Helper()
		p := version.MustParse("4.4.0").Profile()
		p.StaticRejoinOwnInstance = fixed
		m, err := consumergroup.New(p, consumergroup.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if r := hb(m, "A", "ia", 0); r.ErrorCode != 0 || r.MemberEpoch != 2 {
			t.Fatalf("first join: error %d, epoch %d", r.ErrorCode, r.MemberEpoch)
		}
		return m
	}
	for _, v := range version.Served() {
		if v.Profile().StaticRejoinOwnInstance {
			t.Errorf("%v: StaticRejoinOwnInstance set, but every served release refuses the member its own instance id (4.0–4.4 branches)", v)
		}
	}
	t.Run("served releases refuse the retried join", func(t *testing.T) {
		m := newManager(t, false)
		r := hb(m, "A", "ia", 0)
		if r.ErrorCode != kerr.UnreleasedInstanceID.Code || r.ErrorMessage == nil ||
			*r.ErrorMessage != "Static member A with instance id ia cannot join the group because the instance id is owned by A member." {
			t.Fatalf("retried join: error %d %v, want UNRELEASED_INSTANCE_ID naming A as the owner", r.ErrorCode, r.ErrorMessage)
		}
	})
	t.Run("the fix takes the member back at its epoch", func(t *testing.T) {
		m := newManager(t, true)
		if r := hb(m, "A", "ia", 0); r.ErrorCode != 0 || r.MemberEpoch != 2 || r.Assignment == nil {
			t.Fatalf("retried join: error %d, epoch %d, assignment %v; want epoch 2 with its assignment", r.ErrorCode, r.MemberEpoch, r.Assignment)
		}
		if r := hb(m, "A", "ia", 9); r.ErrorCode != kerr.FencedMemberEpoch.Code {
			t.Fatalf("stale heartbeat: error %d, want FENCED_MEMBER_EPOCH", r.ErrorCode)
		}
		if r := hb(m, "A", "ia", 0); r.ErrorCode != 0 || r.MemberEpoch != 2 {
			t.Fatalf("rejoin after FENCED_MEMBER_EPOCH: error %d, epoch %d", r.ErrorCode, r.MemberEpoch)
		}
		if r := hb(m, "A", "ib", 0); r.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("join changing the instance id: error %d, want INVALID_REQUEST", r.ErrorCode)
		}
	})
	t.Run("the fix resets a member back from a temporary leave", func(t *testing.T) {
		m := newManager(t, true)
		if r := hb(m, "A", "ia", -2); r.ErrorCode != 0 || r.MemberEpoch != -2 {
			t.Fatalf("temporary leave: error %d, epoch %d", r.ErrorCode, r.MemberEpoch)
		}
		if r := hb(m, "A", "ia", 0); r.ErrorCode != 0 || r.MemberEpoch != 2 || r.MemberID == nil || *r.MemberID != "A" {
			t.Fatalf("rejoin after the leave: error %d, epoch %d, id %v; want A back at epoch 2", r.ErrorCode, r.MemberEpoch, r.MemberID)
		}
	})
}

// javaHeartbeat is a ConsumerGroupHeartbeat of member of group g at epoch
// as the Java consumer sends it: a join (epoch 0) carries the rebalance
// timeout, the subscription and an empty owned list, other heartbeats none
// of them.
func javaHeartbeat(member string, epoch int32, subscribe ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "g", member, epoch
	req.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 60000
		req.SubscribedTopicNames = subscribe
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return req
}

// heartbeatAt0 sends req to m at time 0 from client c and returns the
// answer.
func heartbeatAt0(m *consumergroup.Manager, req *kmsg.ConsumerGroupHeartbeatRequest, topics consumergroup.Topics) *kmsg.ConsumerGroupHeartbeatResponse {
	resp, _ := m.Heartbeat(time.UnixMilli(0), consumergroup.RequestContext{ClientID: "c", ClientHost: "/127.0.0.1"}, req, topics)
	return resp
}
