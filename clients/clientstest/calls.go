package clientstest

import (
	"testing"

	"github.com/groupquake/groupquake/clients"
)

// CheckCalls holds a member's events to the clients contract on calls:
// each Sent call gets exactly one answer with its call number and op,
// after it, and a lane (join/sync; heartbeat/leave; commits) has one call
// open at a time. check, if not nil, sees each answer (index i in events)
// with the Sent it answers: a test's own rules on the pair. It returns how
// many calls of each op were answered.
func CheckCalls(t testing.TB, events []clients.Event, check func(i int, sent, answer clients.Event)) map[clients.Op]int {
	t.Helper()
	open := map[uint64]clients.Event{}
	busy := map[clients.Lane]uint64{}
	answered := map[clients.Op]int{}
	for i, e := range events {
		if e.Call == 0 {
			continue
		}
		if e.Kind == clients.Sent {
			if _, dup := open[e.Call]; dup {
				t.Errorf("event %d: call %d sent twice", i, e.Call)
			}
			if prev, ok := busy[e.Op.Lane()]; ok {
				t.Errorf("event %d: %s call %d sent while call %d of lane %s had no answer", i, e.Op, e.Call, prev, e.Op.Lane())
			}
			open[e.Call], busy[e.Op.Lane()] = e, e.Call
			continue
		}
		s, ok := open[e.Call]
		if !ok {
			t.Errorf("event %d: %s answers call %d, which is not open", i, e.Kind, e.Call)
			continue
		}
		if s.Op != e.Op {
			t.Errorf("event %d: call %d sent as %s answered as %s", i, e.Call, s.Op, e.Op)
		}
		if check != nil {
			check(i, s, e)
		}
		delete(open, e.Call)
		delete(busy, e.Op.Lane())
		answered[e.Op]++
	}
	for id, s := range open {
		t.Errorf("%s call %d (%s) never answered", s.Op, id, s.Why)
	}
	return answered
}
