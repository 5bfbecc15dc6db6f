package consumer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/clients"
)

// slowHooks reports every event to log, the answers that carry a Kafka
// error only after a pause: the reporting of a fatal answer is then still
// under way when Poll is next called.
func slowHooks(log *eventLog) clients.Hooks {
	return clients.HookFunc(func(e clients.Event) {
		if e.ErrCode != 0 {
			time.Sleep(300 * time.Millisecond)
		}
		log.OnEvent(e)
	})
}

// pollUntilStopped polls m until it says it stopped for good and returns
// that error with what the member had reported at that moment.
func pollUntilStopped(t *testing.T, m *Member, log *eventLog, dump func() string) (error, []clients.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := m.Poll(pctx)
		pcancel()
		if errors.Is(err, clients.ErrStopped) {
			return err, log.All()
		}
		if ctx.Err() != nil {
			t.Fatalf("Poll never said the member stopped for good (last %v)\n%s", err, dump())
		}
	}
}

// A static member restarted within the session of its crashed incarnation
// is refused UNRELEASED_INSTANCE_ID at its first heartbeat (the run on
// Kafka 4.4.0, seed 4445707194870300430, m1). The member stops for good;
// Poll must say so only after the answer is reported: the harness records
// the stop when Poll says it, and the stop's cause must precede it in the
// history (it did not: "stopped" was recorded, then the answer).
func TestLoopFatalAnswerIsReportedBeforePollSaysStopped(t *testing.T) {
	t.Parallel()
	s := newScriptBroker(t, 2)
	s.failNext(kerr.UnreleasedInstanceID.Code, 1, 0, 1)
	log := &eventLog{}
	m := startMember(t, s, false, InstanceID("g-m1"), WithHooks(slowHooks(log)))
	dump := func() string { return loopMember{m.Member, log}.dumpWith(s)() }
	err, seen := pollUntilStopped(t, m.Member, log, dump)
	if !errors.Is(err, kerr.UnreleasedInstanceID) {
		t.Fatalf("Poll said %v, want UNRELEASED_INSTANCE_ID", err)
	}
	if !slices.ContainsFunc(seen, func(e clients.Event) bool {
		return e.Kind == clients.Heartbeat && e.ErrCode == kerr.UnreleasedInstanceID.Code
	}) {
		t.Errorf("Poll said the member stopped before the answer UNRELEASED_INSTANCE_ID was reported\n%s", dump())
	}
}

// The same with partitions owned when the fatal answer comes: their loss is
// reported before Poll says the member stopped.
func TestLoopFatalAnswerLossIsReportedBeforePollSaysStopped(t *testing.T) {
	t.Parallel()
	s := newScriptBroker(t, 2)
	s.set(1, 0, 1)
	log := &eventLog{}
	m := startMember(t, s, false, WithHooks(slowHooks(log)))
	dump := func() string { return loopMember{m.Member, log}.dumpWith(s)() }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pollUntil(t, ctx, m.Member, "the member never owned t[0 1]", m.owns(0, 1), dump)
	s.failNext(kerr.GroupIDNotFound.Code, 1, 0, 1)
	err, seen := pollUntilStopped(t, m.Member, log, dump)
	if !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("Poll said %v, want GROUP_ID_NOT_FOUND", err)
	}
	iAnswer := slices.IndexFunc(seen, func(e clients.Event) bool {
		return e.Kind == clients.Heartbeat && e.ErrCode == kerr.GroupIDNotFound.Code
	})
	iLost := slices.IndexFunc(seen, func(e clients.Event) bool {
		return e.Kind == clients.Lost && slices.Equal(e.Partitions[loopTopic], []int32{0, 1})
	})
	if iAnswer < 0 || iLost < 0 {
		t.Errorf("Poll said the member stopped before the answer (at %d) and the loss of t[0 1] (at %d) were reported\n%s", iAnswer, iLost, dump())
	}
}
