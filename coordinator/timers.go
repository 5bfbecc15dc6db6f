package coordinator

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
}

type timer struct {
	key      string
	deadline int64
	seq      uint64
	fire     func()
}

func (t *timers) schedule(key string, deadline int64, fire func()) {
	t.seq++
	t.byKey[key] = &timer{key: key, deadline: deadline, seq: t.seq, fire: fire}
}

func (t *timers) cancel(key string) { delete(t.byKey, key) }

// due removes and returns the earliest timer due at now that was set no
// later than maxSeq, or nil. Tick passes the seq it started with, so a
// timer set by a firing timer waits for the next Tick even with a zero
// delay: time cannot stand still forever.
func (t *timers) due(now int64, maxSeq uint64) *timer {
	var best *timer
	for _, x := range t.byKey {
		if x.deadline > now || x.seq > maxSeq {
			continue
		}
		if best == nil || x.deadline < best.deadline || (x.deadline == best.deadline && x.seq < best.seq) {
			best = x
		}
	}
	if best != nil {
		delete(t.byKey, best.key)
	}
	return best
}

// Timer keys, after GroupMetadataManager's, with a NUL between the parts so
// that no two (group, member) pairs share a key.
func joinKey(group string) string              { return "join\x00" + group }
func syncKey(group string) string              { return "sync\x00" + group }
func heartbeatKey(group, member string) string { return "heartbeat\x00" + group + "\x00" + member }
