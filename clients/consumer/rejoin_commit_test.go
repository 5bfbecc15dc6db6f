package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestStaleCommitIsNotRetriedInANewMembership: the application's commit is
// answered STALE_MEMBER_EPOCH and waits for a newer epoch; meanwhile the
// member is fenced and rejoins (a new membership) and is given the
// partition again. The offset was consumed under the old membership, so it
// is not retried under the new one: the commit returns STALE_MEMBER_EPOCH.
func TestStaleCommitIsNotRetriedInANewMembership(t *testing.T) {
	s := newScriptedOffsets()
	mb := commitMember(t, s, &eventLog{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	type result struct {
		perrs map[string]map[int32]string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		perrs, err := mb.Commit(ctx, map[string]map[int32]int64{"t": {0: 61}})
		done <- result{perrs, err}
	}()
	a := <-s.arrivals
	if a.req.Generation != 5 {
		t.Fatalf("commit sent with epoch %d, want 5", a.req.Generation)
	}
	// The fence and the rejoin happen before the answer is read: the
	// member holds t-0 again, at epoch 7 of its second membership.
	mb.mu.Lock()
	mb.m.epoch, mb.m.joins = 7, 2
	mb.mu.Unlock()
	a.answer <- scriptedAnswer{code: kerr.StaleMemberEpoch.Code}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("commit: %v", r.err)
		}
		if got := r.perrs["t"][0]; got != kerr.StaleMemberEpoch.Message {
			t.Fatalf("commit returned %q for t-0, want STALE_MEMBER_EPOCH", got)
		}
	case b := <-s.arrivals:
		b.answer <- scriptedAnswer{}
		<-done
		t.Fatalf("the commit of 61 was retried with epoch %d in the new membership", b.req.Generation)
	}
}
