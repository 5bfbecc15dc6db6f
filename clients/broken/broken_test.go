package broken

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
)

func TestWrapUnknownBug(t *testing.T) {
	t.Parallel()
	_, err := Wrap("eats-records", Config{Name: "m"}, func(clients.Hooks) (clients.Member, error) {
		t.Fatal("built a member for an unknown bug")
		return nil, nil
	})
	if err == nil || !strings.Contains(err.Error(), `unknown bug "eats-records"`) {
		t.Fatalf("Wrap with an unknown bug: %v", err)
	}
}

// IgnoreFence swallows the fence events and starts fetching what was lost;
// FetchAfterRevoke forwards the revocation first, then fetches; an
// assignment stops the fetching.
func TestEventsDriveTheBug(t *testing.T) {
	t.Parallel()
	var got []clients.Kind
	hooks := clients.HookFunc(func(e clients.Event) { got = append(got, e.Kind) })
	for _, tc := range []struct {
		bug     Bug
		trigger clients.Kind
		forward bool
	}{
		{IgnoreFence, clients.Lost, false},
		{FetchAfterRevoke, clients.Revoked, true},
	} {
		got = nil
		w := &member{bug: tc.bug, cfg: Config{Hooks: hooks}, next: map[string]map[int32]int64{"t": {0: 7}}, zombie: clients.Partitions{}, firstEpoch: -1, epoch: -1}
		cl, err := newClient(Config{Name: "m", KgoOpts: seeds()}, tc.bug)
		if err != nil {
			t.Fatal(err)
		}
		w.cl = cl
		if tc.bug == IgnoreFence {
			w.onEvent(clients.Event{Kind: clients.Fenced, Err: "UNKNOWN_MEMBER_ID"})
		}
		w.onEvent(clients.Event{Kind: tc.trigger, Partitions: clients.Partitions{"t": {0}}})
		if (len(got) == 1) != tc.forward {
			t.Errorf("%s: forwarded %v", tc.bug, got)
		}
		if w.zombie.Count() != 1 {
			t.Errorf("%s: fetching %v after %s, want t[0]", tc.bug, w.zombie, tc.trigger)
		}
		w.onEvent(clients.Event{Kind: clients.Assigned, Partitions: clients.Partitions{"t": {0}}})
		if w.zombie.Count() != 0 {
			t.Errorf("%s: still fetching %v after the assignment", tc.bug, w.zombie)
		}
		cl.Close()
	}
}

// seeds points a client at a port nothing listens on: the tests never
// reach a broker.
func seeds() []kgo.Opt { return []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")} }
