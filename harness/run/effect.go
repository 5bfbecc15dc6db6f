package run

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/history"
)

// effectMeter watches the history as it is written (a Recorder tap) and
// keeps the few counters that say what a fault did to the group: calls of
// each member that failed or got no answer, fences and expiries, partitions
// that changed hands, coordinator moves, producer sends that failed, and
// what share members' records went through (share_effect.go). The
// nemesis reads it when a fault starts and when it ends, so each fault's
// stop carries its observed effect, and a fault that changed nothing says
// so.
type effectMeter struct {
	clock func() time.Duration

	mu       sync.Mutex
	failed   map[string]int // member → completed join/sync/heartbeat/commit/leave calls that failed or got no answer
	fenced   map[string]int // member → fenced, session-expired or lost events
	assigned map[string]int // member → assigned events
	lastLoss map[string]time.Duration
	// coordinator is the node each member last found as coordinator;
	// moves counts changes of it.
	coordinator map[string]int32
	moves       int
	produceFail int
	// handedOver is, per member, when another member was last assigned
	// partitions after this one lost or gave up some.
	gaveUp     map[string]time.Duration
	handedOver map[string]time.Duration
	// lastChange is when a member last reported an ownership or membership
	// change (assigned, revoked, lost, fenced, left, expired, stopped for
	// good, restarted by its supervisor): quiesce waits for a quiet spell
	// after it.
	lastChange time.Duration
	share      shareEffects
}

func newEffectMeter(clock func() time.Duration) *effectMeter {
	return &effectMeter{
		clock:  clock,
		failed: map[string]int{}, fenced: map[string]int{}, assigned: map[string]int{},
		lastLoss: map[string]time.Duration{}, coordinator: map[string]int32{},
		gaveUp: map[string]time.Duration{}, handedOver: map[string]time.Duration{},
		share: newShareEffects(),
	}
}

// member is the member a process speaks for ("m1/hb" → "m1").
func member(process string) string {
	m, _, _ := strings.Cut(process, "/")
	return m
}

// tap is the Recorder tap.
func (m *effectMeter) tap(e history.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	who := member(e.Process)
	switch e.F {
	case history.FAssigned, history.FRevoked, history.FLost, history.FFenced, history.FLeft, history.FSessionExpired,
		history.FStopped, history.FRestart:
		m.lastChange = e.Time
	}
	switch e.F {
	case history.FShareHeartbeat, history.FShareFetch, history.FShareAck:
		if e.Type == history.Fail || e.Type == history.Info {
			m.failed[who]++
		}
		m.shareTap(e, who)
	case history.FJoin, history.FSync, history.FHeartbeat, history.FCommit, history.FLeave:
		if e.Type == history.Fail || e.Type == history.Info {
			m.failed[who]++
		}
	case history.FFenced, history.FSessionExpired, history.FLost:
		m.fenced[who]++
		m.lastLoss[who] = e.Time
		m.gaveUp[who] = e.Time
	case history.FRevoked, history.FLeft:
		m.gaveUp[who] = e.Time
	case history.FAssigned:
		m.assigned[who]++
		for other, t := range m.gaveUp {
			if other != who && t <= e.Time {
				m.handedOver[other] = e.Time
			}
		}
	case history.FProduce:
		if e.Type == history.Fail || e.Type == history.Info {
			m.produceFail++
		}
	case "found-coordinator":
		if v, ok := e.Value.(map[string]any); ok {
			var n int32
			switch x := v["node"].(type) {
			case int32:
				n = x
			case float64: // a value read back from JSON
				n = int32(x)
			default:
				return
			}
			if old, seen := m.coordinator[who]; seen && old != n {
				m.moves++
			}
			m.coordinator[who] = n
		}
	}
}

// effectMark is the meter's reading when a fault started.
type effectMark struct {
	at                  time.Duration
	failed, fenced, asg map[string]int
	moves, produceFail  int
	coordinator         map[string]int32
	share               shareMark
}

func (m *effectMeter) mark() effectMark {
	m.mu.Lock()
	defer m.mu.Unlock()
	return effectMark{
		at: m.clock(), failed: maps.Clone(m.failed), fenced: maps.Clone(m.fenced), asg: maps.Clone(m.assigned),
		moves: m.moves, produceFail: m.produceFail, coordinator: maps.Clone(m.coordinator),
		share: m.share.mark(),
	}
}

func diff(now, then map[string]int) (total int, by map[string]int) {
	by = map[string]int{}
	for k, v := range now {
		if d := v - then[k]; d > 0 {
			by[k] = d
			total += d
		}
	}
	return total, by
}

func perMember(by map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
	}
	return strings.Join(parts, ", ")
}

// since says what happened to the group from mark until now, for fault f:
// its effect, and, when nothing at all happened, why it counts as having
// had no effect.
func (m *effectMeter) since(mk effectMark, f faults.Fault) (effect, none string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	failed, failedBy := diff(m.failed, mk.failed)
	fenced, fencedBy := diff(m.fenced, mk.fenced)
	moved, movedBy := diff(m.assigned, mk.asg)
	moves := m.moves - mk.moves
	prod := m.produceFail - mk.produceFail
	var parts []string
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d member calls failed or got no answer (%s)", failed, perMember(failedBy)))
	}
	if fenced > 0 {
		parts = append(parts, fmt.Sprintf("%d fenced, expired or lost (%s)", fenced, perMember(fencedBy)))
	}
	if moved > 0 {
		parts = append(parts, fmt.Sprintf("%d assignments handed out (%s)", moved, perMember(movedBy)))
	}
	if moves > 0 {
		var to []string
		for _, k := range slices.Sorted(maps.Keys(m.coordinator)) {
			if m.coordinator[k] != mk.coordinator[k] {
				to = append(to, fmt.Sprintf("%s found node %d", k, m.coordinator[k]))
			}
		}
		parts = append(parts, fmt.Sprintf("the coordinator moved %d times (%s)", moves, strings.Join(to, ", ")))
	}
	if prod > 0 {
		parts = append(parts, fmt.Sprintf("%d produce calls failed or got no answer", prod))
	}
	// What happened to the member a link or churn fault targeted.
	who := f.Member
	if who == "" {
		who = f.Client
	}
	parts = append(parts, m.share.since(mk.share, who, mk.at)...)
	if who != "" {
		if t, ok := m.lastLoss[who]; ok && t >= mk.at {
			parts = append(parts, fmt.Sprintf("%s was fenced, expired or lost its partitions %s after the fault began", who, (t-mk.at).Round(time.Millisecond)))
		}
		if t, ok := m.handedOver[who]; ok && t >= mk.at {
			parts = append(parts, fmt.Sprintf("partitions %s gave up went to other members %s after the fault began", who, (t-mk.at).Round(time.Millisecond)))
		}
	}
	if len(parts) == 0 {
		if f.Kind == faults.MemberJoin {
			return "", "" // its effect is the join at its heal, which comes after this reading
		}
		return "", "no member call failed, nobody was fenced or expired, no partition changed hands, no share record came back without a release, the coordinator did not move"
	}
	return strings.Join(parts, "; "), ""
}

// quietFor is how long no member has reported an ownership or membership
// change.
func (m *effectMeter) quietFor() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.clock() - m.lastChange
}
