package light

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// heartbeatStub is a stub coordinator of topic "t" (4 partitions) that
// answers every ConsumerGroupHeartbeat at once (epoch 1, no partitions,
// an interval of an hour so that the member sends no other heartbeat on
// its own) and holds every ApiVersions, which the tests use to fill the
// shared connection's window.
func heartbeatStub(t *testing.T) *stub {
	s := newStub(t, holdAll)
	meta := s.coordinatorAnswers("t", 4)
	s.setAnswer(func(r *stubReq) kmsg.Response {
		if resp := meta(r); resp != nil {
			return resp
		}
		if req, ok := r.req.(*kmsg.ConsumerGroupHeartbeatRequest); ok {
			resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
			resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(req.MemberID), 1
			if req.MemberEpoch < 0 {
				resp.MemberEpoch = req.MemberEpoch
			}
			resp.HeartbeatIntervalMillis = 3_600_000
			return resp
		}
		return nil
	})
	return s
}

// fillWindow writes Window requests on the group's one shared connection
// to s, which holds them; it returns a func that answers them.
func fillWindow(t *testing.T, g *Group, s *stub) (release func()) {
	t.Helper()
	done := make(chan error, Window)
	for i := range Window {
		go func() {
			_, err := g.pool.Do(context.Background(), s.addr(), 1000+i, apiVersions(), 0)
			done <- err
		}()
	}
	first := s.next()
	eventually(t, "the connection's window full", func() bool {
		l := g.pool.lane(s.addr(), 0)
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.conns) == 1 && l.conns[0].busy == Window
	})
	return func() {
		first.reply <- kmsg.NewPtrApiVersionsResponse()
		for range Window - 1 {
			s.next().reply <- kmsg.NewPtrApiVersionsResponse()
		}
		for range Window {
			if err := <-done; err != nil {
				t.Errorf("a request filling the window: %v", err)
			}
		}
	}
}

func queueGroup(t *testing.T, s *stub, timeout time.Duration) *Group {
	g, err := NewGroup(Config{Bootstrap: []string{s.addr()}, Group: "g", Topic: "t", Partitions: 4, Conns: 1, RequestTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// TestHeartbeatNotResentWhileQueued: a consumer member whose heartbeat
// waits in the queue several times its request timeout neither gives it
// up nor sends another; once the queue moves, the broker reads that one
// heartbeat, and the member counted no error and dropped nothing.
func TestHeartbeatNotResentWhileQueued(t *testing.T) {
	s := heartbeatStub(t)
	const timeout = 300 * time.Millisecond
	g := queueGroup(t, s, timeout)
	release := fillWindow(t, g, s)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := g.NewConsumer(0)
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	eventually(t, "the member's heartbeat queued", func() bool { return g.pool.queued(s.addr()) == 1 })
	time.Sleep(5 * timeout) // queued past its timeout, five times over
	if n := len(s.requests(kmsg.ConsumerGroupHeartbeat)); n != 0 {
		t.Fatalf("the broker read %d heartbeats while the connection was full, want 0", n)
	}
	if q := g.pool.queued(s.addr()); q != 1 {
		t.Fatalf("%d requests queued, want the member's one heartbeat", q)
	}
	release()
	eventually(t, "the member settled at epoch 1", func() bool { st := m.State(); return st.Settled && st.Epoch == 1 })
	if n := len(s.requests(kmsg.ConsumerGroupHeartbeat)); n != 1 {
		t.Errorf("the broker read %d heartbeats, want 1", n)
	}
	if errs := g.Stats.Errors(); len(errs) > 0 {
		t.Errorf("the member counted errors %v, want none (it gave up its queued heartbeat)", errs)
	}
	if d := g.Stats.DroppedBy(); len(d) > 0 {
		t.Errorf("requests dropped %v, want none", d)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}

// TestLeaveDropsQueuedHeartbeat: a member that leaves while its heartbeat
// waits in the queue drops that heartbeat (never sent) and sends only its
// leave (member epoch -1).
func TestLeaveDropsQueuedHeartbeat(t *testing.T) {
	s := heartbeatStub(t)
	g := queueGroup(t, s, 0)
	release := fillWindow(t, g, s)

	m := g.NewConsumer(0)
	ran := make(chan error, 1)
	go func() { ran <- m.Run(context.Background()) }()
	eventually(t, "the member's heartbeat queued", func() bool { return g.pool.queued(s.addr()) == 1 })
	left := make(chan error, 1)
	go func() { left <- m.Leave(context.Background()) }()
	// The queued heartbeat is dropped; the leave takes its place.
	eventually(t, "the heartbeat dropped", func() bool { return g.Stats.DroppedBy()["ConsumerGroupHeartbeat"] == 1 })
	eventually(t, "the leave queued", func() bool { return g.pool.queued(s.addr()) == 1 })
	release()
	if err := <-left; err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatalf("Run after the leave: %v", err)
	}
	hbs := s.requests(kmsg.ConsumerGroupHeartbeat)
	if len(hbs) != 1 || hbs[0].req.(*kmsg.ConsumerGroupHeartbeatRequest).MemberEpoch != -1 {
		var epochs []int32
		for _, r := range hbs {
			epochs = append(epochs, r.req.(*kmsg.ConsumerGroupHeartbeatRequest).MemberEpoch)
		}
		t.Fatalf("the broker read heartbeats of member epochs %v, want only the leave (-1)", epochs)
	}
}
