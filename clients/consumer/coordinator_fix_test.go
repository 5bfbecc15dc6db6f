package consumer

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// slowLookups delays every FindCoordinator's answer by d.
func slowLookups(s *scriptBroker, d time.Duration) {
	s.c.ControlKey(kmsg.FindCoordinator.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		s.c.KeepControl()
		s.c.SleepControl(func() { time.Sleep(d) })
		return nil, nil, false
	})
}

// A slow link: a FindCoordinator and a heartbeat each take 600 ms, well
// within the 1 s request timeout, but a lookup and the heartbeat after it
// take 1.2 s together. Java gives each request its own timeout, so the
// heartbeat after a lookup is answered; with one timeout for both, that
// heartbeat times out, the coordinator is forgotten, the next attempt
// looks it up again, and no heartbeat gets through while the latency
// lasts: the member never joins.
func TestLoopLookupAndHeartbeatEachGetTheRequestTimeout(t *testing.T) {
	t.Parallel()
	const d = 600 * time.Millisecond
	s := newScriptBroker(t, 2)
	s.set(1, 0, 1)
	s.mu.Lock()
	s.hbDelay = d
	s.mu.Unlock()
	slowLookups(s, d)
	m := startLoopMember(t, s, RequestTimeout(time.Second), RetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	dump := m.dumpWith(s)
	eventually(t, "the member joins through the slow link", func() bool {
		return slices.ContainsFunc(m.log.All(), func(e clients.Event) bool { return e.Kind == clients.Joined })
	}, dump)
	eventually(t, "the member owns t[0 1]", m.owns(0, 1), dump)
}
