package consumergroup

import (
	"cmp"
	"time"

	"github.com/groupquake/groupquake/coordinator/internal/timerheap"
	"github.com/groupquake/groupquake/coordinator/records"
)

type timerKind int8

const (
	// sessionTimer is GMM's "session-timeout-<group>-<member>".
	sessionTimer timerKind = iota
	// rebalanceTimer is GMM's "rebalance-timeout-<group>-<member>".
	rebalanceTimer
	// syncTimer is GMM's consumerGroupSyncKey: a classic member of a
	// consumer group that joined must send SyncGroup within its rebalance
	// timeout.
	syncTimer
	// joinTimer is GMM's consumerGroupJoinKey: a classic member told to
	// rejoin (REBALANCE_IN_PROGRESS) must rejoin within its rebalance
	// timeout.
	joinTimer
)

func (k timerKind) String() string {
	switch k {
	case sessionTimer:
		return "session"
	case syncTimer:
		return "sync"
	case joinTimer:
		return "join"
	}
	return "rebalance"
}

type timerKey struct {
	group, member string
	kind          timerKind
}

type timer struct {
	deadline time.Time
	// epoch is the member epoch a rebalance timer was armed at: it fences
	// only a member still at that epoch (GMM.scheduleConsumerGroupRebalanceTimeout).
	epoch int32
	// seq numbers the arming (Manager.setTimer), so that the queue's entry
	// of a timer armed again or cancelled since is told from the live one.
	seq uint64
}

// timerEntry is one arming of a timer in the Manager's queue.
type timerEntry struct {
	k        timerKey
	deadline time.Time
	seq      uint64
}

// timerQueue is a min-heap of armings, earliest deadline first (ties by
// group, member, kind): Tick and NextDeadline look at the due ones only,
// not at every member's timers. An entry whose timer was armed again or
// cancelled since stays in the queue until it comes up and is dropped then
// (or until the queue is rebuilt, setTimer).
type timerQueue = timerheap.Heap[timerEntry]

// Before orders armings by deadline, then group, member, kind and seq.
func (a timerEntry) Before(b timerEntry) bool {
	return cmp.Or(a.deadline.Compare(b.deadline), cmp.Compare(a.k.group, b.k.group),
		cmp.Compare(a.k.member, b.k.member), cmp.Compare(a.k.kind, b.k.kind), cmp.Compare(a.seq, b.seq)) < 0
}

// live reports whether e is the timer's current arming.
func (m *Manager) live(e timerEntry) bool {
	t, ok := m.timers[e.k]
	return ok && t.seq == e.seq
}

// setTimer arms timer k (replacing its arming) and queues it. When the
// queue holds four times more entries than there are timers it is rebuilt
// from the live ones, so that a member's heartbeats, each re-arming its
// session timer, do not grow it without bound.
func (m *Manager) setTimer(k timerKey, t timer) {
	m.timerSeq++
	t.seq = m.timerSeq
	m.timers[k] = t
	m.queue.Push(timerEntry{k: k, deadline: t.deadline, seq: t.seq})
	m.queue.Compact(len(m.timers), m.live)
}

// scheduleSession is GMM.scheduleConsumerGroupSessionTimeout: (re)arm a
// full session timeout.
func (m *Manager) scheduleSession(now time.Time, groupID, memberID string) {
	m.setTimer(timerKey{groupID, memberID, sessionTimer}, timer{deadline: now.Add(m.cfg.SessionTimeout)})
}

// scheduleRebalance is GMM.scheduleConsumerGroupRebalanceTimeout.
func (m *Manager) scheduleRebalance(now time.Time, groupID, memberID string, epoch, timeoutMs int32) {
	m.setTimer(timerKey{groupID, memberID, rebalanceTimer}, timer{
		deadline: now.Add(time.Duration(timeoutMs) * time.Millisecond),
		epoch:    epoch,
	})
}

// scheduleSessionFor is GMM.scheduleConsumerGroupSessionTimeout with the
// session timeout a classic member asked for.
func (m *Manager) scheduleSessionFor(now time.Time, groupID, memberID string, timeoutMs int32) {
	m.setTimer(timerKey{groupID, memberID, sessionTimer}, timer{deadline: now.Add(time.Duration(timeoutMs) * time.Millisecond)})
}

// scheduleClassic arms a classic member's sync or join timer;
// ifAbsent keeps an armed one (Timer.scheduleIfAbsent).
func (m *Manager) scheduleClassic(now time.Time, groupID, memberID string, kind timerKind, timeoutMs int32, ifAbsent bool) {
	k := timerKey{groupID, memberID, kind}
	if _, ok := m.timers[k]; ok && ifAbsent {
		return
	}
	m.setTimer(k, timer{deadline: now.Add(time.Duration(timeoutMs) * time.Millisecond)})
}

// cancelTimers is GMM.cancelTimers: all four timers of a member.
func (m *Manager) cancelTimers(groupID, memberID string) {
	for _, k := range []timerKind{sessionTimer, rebalanceTimer, syncTimer, joinTimer} {
		delete(m.timers, timerKey{groupID, memberID, k})
	}
}

// Expired is one timer that fired in Tick, for logs and vectors.
type Expired struct {
	Group, Member string
	// Kind is "session" or "rebalance".
	Kind string
	// Fenced: the member was removed. A rebalance timer of a member that
	// left the epoch it was armed at, or of a member already gone, fires
	// without effect.
	Fenced bool
}

// Tick completes the regex resolutions scheduled at or before now (by
// group; see regex.go), then fires every timer whose deadline is not after
// now, earliest first (ties by group, member, kind), each as its own write
// as in Kafka: a
// session timeout fences the member (GMM.consumerGroupFenceMemberOperation);
// a rebalance timeout fences it if it is still at the epoch the timer was
// armed at; a classic member's sync and join timeouts fence it. It returns the records written, in order.
func (m *Manager) Tick(now time.Time) []records.Record {
	recs, _ := m.TickVerbose(now)
	return recs
}

// TickVerbose is Tick that also says which timers fired.
func (m *Manager) TickVerbose(now time.Time) ([]records.Record, []Expired) {
	type due struct {
		k timerKey
		t timer
	}
	// The queue gives the due timers in the order they fire.
	var fired []due
	for len(m.queue) > 0 && !m.queue[0].deadline.After(now) {
		e := m.queue.Pop()
		if m.live(e) {
			fired = append(fired, due{e.k, m.timers[e.k]})
		}
	}
	// Regex resolutions scheduled by earlier heartbeats complete first:
	// Kafka's executor runs them at once and writes their results.
	out := m.runRegexTasks(now)
	var expired []Expired
	for _, d := range fired {
		// A timer fired earlier in this loop may have cancelled or replaced it.
		if cur, ok := m.timers[d.k]; !ok || cur != d.t {
			continue
		}
		delete(m.timers, d.k)
		e := Expired{Group: d.k.group, Member: d.k.member, Kind: d.k.kind.String()}
		g, ok := m.rp.groups[d.k.group]
		if ok {
			if mb, ok := g.members[d.k.member]; ok && (d.k.kind != rebalanceTimer || mb.epoch == d.t.epoch) {
				recs, downgrade := m.fenceMembers(g, []*member{mb})
				if err := m.applyAll(g.id, recs); err != nil {
					panic("consumergroup: replaying our own fence records failed: " + err.Error())
				}
				m.cancelTimers(g.id, mb.id)
				if downgrade != nil {
					recs = append(recs, downgrade()...)
				}
				out = append(out, recs...)
				e.Fenced = true
			}
		}
		expired = append(expired, e)
	}
	return out, expired
}

// NextDeadline returns the earliest armed timer or scheduled regex
// resolution, or ok=false, so a host can sleep until then.
func (m *Manager) NextDeadline() (time.Time, bool) {
	for len(m.queue) > 0 && !m.live(m.queue[0]) {
		m.queue.Pop()
	}
	var best time.Time
	ok := false
	if len(m.queue) > 0 {
		best, ok = m.queue[0].deadline, true
	}
	for _, t := range m.regexTasks {
		if !ok || t.at.Before(best) {
			best, ok = t.at, true
		}
	}
	return best, ok
}
