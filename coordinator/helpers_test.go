package coordinator

import (
	"testing"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// newCoordinator is New(p, cfg), failing t on an error.
func newCoordinator(t testing.TB, p version.Profile, cfg Config) *Coordinator {
	t.Helper()
	c, err := New(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// replayed is fresh after replaying log, as a coordinator loads it; a
// record fresh refuses fails t.
func replayed(t testing.TB, fresh *Coordinator, log []records.Record) *Coordinator {
	t.Helper()
	for _, r := range log {
		if err := fresh.Replay(r); err != nil {
			t.Fatalf("replay %s: %v", fmtRecord(r), err)
		}
	}
	return fresh
}

// checkReplays fails t unless fresh, after replaying log, holds live's
// state.
func checkReplays(t testing.TB, live, fresh *Coordinator, log []records.Record) {
	t.Helper()
	if l, r := live.State(), replayed(t, fresh, log).State(); !l.Equal(r) {
		t.Fatalf("replay differs\nlive:\n%s\nreplayed:\n%s", l, r)
	}
}
