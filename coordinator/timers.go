package coordinator

import "github.com/groupquake/groupquake/coordinator/internal/timerheap"

// timers is the coordinator's CoordinatorTimer: operations keyed by name,
// each due at a deadline. Setting a key again replaces its operation, as
// CoordinatorTimer.schedule does, so a member has at most one heartbeat
// expiration and a group one join and one sync timer.
//
// Invariant: byKey holds exactly the armed timers; seq strictly increases,
// so (deadline, seq) orders timers totally and Tick is deterministic.
type timers struct {
	byKey map[string]*timer
	seq   uint64
	// queue holds the armed timers by (deadline, seq), so that due looks at
	// the due ones only, not at every member's heartbeat timer (Tick runs
	// after every request). A timer cancelled or set again stays queued
	// until it comes up (it is no longer byKey's then) or the queue is
	// rebuilt (schedule).
	queue timerheap.Heap[*timer]
}

type timer struct {
	key      string
	deadline int64
	seq      uint64
	fire     func()
}

// Before orders timers by (deadline, seq).
func (x *timer) Before(y *timer) bool {
	return x.deadline < y.deadline || (x.deadline == y.deadline && x.seq < y.seq)
}

func (t *timers) live(x *timer) bool { return t.byKey[x.key] == x }

func (t *timers) schedule(key string, deadline int64, fire func()) {
	t.seq++
	x := &timer{key: key, deadline: deadline, seq: t.seq, fire: fire}
	t.byKey[key] = x
	t.queue.Push(x)
	t.queue.Compact(len(t.byKey), t.live)
}

func (t *timers) cancel(key string) { delete(t.byKey, key) }

// due removes and returns the earliest timer due at now that was set no
// later than maxSeq, or nil. Tick passes the seq it started with, so a
// timer set by a firing timer waits for the next Tick even with a zero
// delay: time cannot stand still forever.
func (t *timers) due(now int64, maxSeq uint64) *timer {
	var later []*timer // due, but set during this Tick
	defer func() {
		for _, x := range later {
			t.queue.Push(x)
		}
	}()
	for len(t.queue) > 0 && t.queue[0].deadline <= now {
		x := t.queue.Pop()
		switch {
		case !t.live(x):
		case x.seq > maxSeq:
			later = append(later, x)
		default:
			delete(t.byKey, x.key)
			return x
		}
	}
	return nil
}

// Timer keys, after GroupMetadataManager's, with a NUL between the parts so
// that no two (group, member) pairs share a key.
func joinKey(group string) string              { return "join\x00" + group }
func syncKey(group string) string              { return "sync\x00" + group }
func heartbeatKey(group, member string) string { return "heartbeat\x00" + group + "\x00" + member }
