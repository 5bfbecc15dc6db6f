package option

import (
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients"
)

type testCfg struct {
	Common
	n []int
}

func TestApplyInOrder(t *testing.T) {
	add := func(i int) Opt[testCfg] { return New(func(c *testCfg) { c.n = append(c.n, i) }) }
	var c testCfg
	Apply(&c, add(1), add(2), add(3))
	if len(c.n) != 3 || c.n[0] != 1 || c.n[1] != 2 || c.n[2] != 3 {
		t.Fatalf("options applied as %v, want [1 2 3]", c.n)
	}
}

func TestDefaultsKeepWhatWasSet(t *testing.T) {
	var c Common
	c.Defaults()
	if _, wall := c.Clock.(clients.WallClock); !wall || c.Hooks == nil {
		t.Fatalf("defaults: clock %T, hooks %v; want the wall clock and hooks", c.Clock, c.Hooks)
	}
	c.Hooks.OnEvent(clients.Event{}) // drops it
	var got []clients.Event
	set := Common{Hooks: clients.HookFunc(func(e clients.Event) { got = append(got, e) }), Clock: clients.ClockFunc(func() time.Time { return time.Unix(7, 0) })}
	set.Defaults()
	set.Hooks.OnEvent(clients.Event{Member: "m1"})
	if len(got) != 1 || set.Clock.Now() != time.Unix(7, 0) {
		t.Fatalf("Defaults replaced what was set: %d events, clock at %v", len(got), set.Clock.Now())
	}
}
