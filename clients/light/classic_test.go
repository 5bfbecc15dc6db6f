package light

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients/clientstest"
)

// classicStub answers a lone classic member of group "g" as its
// coordinator: it joins as leader of generation 1, syncs, commits and
// heartbeats; Heartbeat answers NOT_COORDINATOR while moved is set.
func classicStub(t *testing.T, moved *atomic.Bool) *stub {
	s := newStub(t, holdAll)
	s.setAnswer(func(r *stubReq) kmsg.Response {
		switch req := r.req.(type) {
		case *kmsg.JoinGroupRequest:
			resp := kmsg.NewPtrJoinGroupResponse()
			resp.Generation, resp.Protocol, resp.MemberID, resp.LeaderID = 1, kmsg.StringPtr(req.Protocols[0].Name), "m-1", "m-1"
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID, jm.ProtocolMetadata = "m-1", req.Protocols[0].Metadata
			resp.Members = []kmsg.JoinGroupResponseMember{jm}
			return resp
		case *kmsg.SyncGroupRequest:
			resp := kmsg.NewPtrSyncGroupResponse()
			for _, a := range req.GroupAssignment {
				if a.MemberID == req.MemberID {
					resp.MemberAssignment = a.MemberAssignment
				}
			}
			return resp
		case *kmsg.OffsetCommitRequest:
			return commitAccepted(req)
		case *kmsg.HeartbeatRequest:
			resp := kmsg.NewPtrHeartbeatResponse()
			if moved != nil && moved.Load() {
				resp.ErrorCode = kerr.NotCoordinator.Code
			}
			return resp
		}
		return nil
	})
	return s
}

// TestClassicClosesOldConnectionOnMove: a classic member whose coordinator
// moved to another broker closes its own connection to the old one once
// it talks to the new one, so that a group does not hold two connections
// a member (a group of 10,000 would hold 20,000).
func TestClassicClosesOldConnectionOnMove(t *testing.T) {
	var moved atomic.Bool
	a := classicStub(t, &moved)
	b := classicStub(t, nil)
	// a is the bootstrap broker; its FindCoordinator and Metadata name a,
	// or b once the group moved.
	a.mu.Lock()
	answerA := a.answer
	a.mu.Unlock()
	a.setAnswer(func(r *stubReq) kmsg.Response {
		host, port := a.host, a.port
		if moved.Load() {
			host, port = b.host, b.port
		}
		switch req := r.req.(type) {
		case *kmsg.FindCoordinatorRequest:
			resp := kmsg.NewPtrFindCoordinatorResponse()
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Host, c.Port = req.CoordinatorKeys[0], 1, host, port
			resp.Coordinators = append(resp.Coordinators, c)
			return resp
		case *kmsg.MetadataRequest:
			resp := kmsg.NewPtrMetadataResponse()
			br := kmsg.NewMetadataResponseBroker()
			br.NodeID, br.Host, br.Port = 1, host, port
			resp.Brokers = []kmsg.MetadataResponseBroker{br}
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = kmsg.StringPtr("t"), stubTopicID
			resp.Topics = []kmsg.MetadataResponseTopic{mt}
			return resp
		}
		return answerA(r)
	})
	g, err := NewGroup(Config{Bootstrap: []string{a.addr()}, Group: "g", Topic: "t", Partitions: 4, HeartbeatInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := g.NewClassic(0)
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	eventually(t, "the member settled on a", func() bool { return m.State().Settled })
	eventually(t, "heartbeats on a", func() bool { return len(a.requests(kmsg.Heartbeat)) > 0 })

	moved.Store(true)
	eventually(t, "heartbeats on b", func() bool { return len(b.requests(kmsg.Heartbeat)) > 0 })
	eventually(t, "the member's connection to a closed", func() bool {
		for _, c := range a.ended() {
			if c == ClientID {
				return true
			}
		}
		return false
	})
	if open, _, _ := g.Stats.Conns(); open != 2 {
		t.Errorf("%d connections open, want 2 (the lookup's to a, the member's to b)", open)
	}
	cancel()
	<-ran
}

// commitAccepted answers an OffsetCommit with every partition accepted.
func commitAccepted(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	return clientstest.CommitAnswer(req, 0, nil)
}
