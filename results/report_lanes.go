package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// What the timeline's lanes above the partitions show, gathered in the digest's one pass over the
// events: records consumed and produced per second, each member's membership over time, and the
// node the history names as the group's coordinator. All of it is what the history records; the
// page infers nothing the checkers would judge.

// fFoundCoordinator is the member's fact "the group's coordinator is node N" (payload
// {"member","node"}): recorded by groupquake's members when FindCoordinator answers, or when a
// ConsumerGroupHeartbeat is answered by another node than before.
const fFoundCoordinator = "found-coordinator"

// fMemberError is a member's fact about an error it met outside a call's completion (payload
// {"member","error"}).
const fMemberError = "error"

// rateBins counts events per time bin of a fixed width; the width doubles whenever the bins would
// pass maxRateBins, so a run of any length is counted in bounded memory.
type rateBins struct {
	width time.Duration
	n     []int64
	total int64
}

const maxRateBins = 1 << 14

func (b *rateBins) add(t time.Duration) {
	if b.width == 0 {
		b.width = 100 * time.Millisecond
	}
	t = max(t, 0)
	i := int(t / b.width)
	for i >= maxRateBins {
		for j := range b.n {
			if j%2 == 0 {
				b.n[j/2] = b.n[j]
			} else {
				b.n[j/2] += b.n[j]
			}
		}
		b.n = b.n[:(len(b.n)+1)/2]
		b.width *= 2
		i = int(t / b.width)
	}
	if i >= len(b.n) {
		b.n = append(b.n, make([]int64, i+1-len(b.n))...)
	}
	b.n[i]++
	b.total++
}

// count is how many events fell in [from, to), the bins cut by the interval counted in proportion.
func (b *rateBins) count(from, to time.Duration) float64 {
	if b.width == 0 || to <= from {
		return 0
	}
	c := 0.0
	for i := max(0, int(from/b.width)); i < len(b.n) && time.Duration(i)*b.width < to; i++ {
		lo, hi := time.Duration(i)*b.width, time.Duration(i+1)*b.width
		part := min(hi, to) - max(lo, from)
		if part > 0 {
			c += float64(b.n[i]) * float64(part) / float64(b.width)
		}
	}
	return c
}

// Membership states of a member's lane.
const (
	stJoining     = "joining"
	stInGroup     = "in group"
	stRebalancing = "rebalancing"
	stOut         = "out of the group"
	stStopped     = "stopped for good"
)

type stateSpan struct {
	state string
	start time.Duration
	event int64
	why   string
}

// memberMark is a membership fact drawn as a glyph on a member's lane: fenced, lost, session
// expired, left, stopped.
type memberMark struct {
	f      string
	t      time.Duration
	event  int64
	detail string
}

// memberTrack is one member's membership over the run.
type memberTrack struct {
	spans []stateSpan
	marks []memberMark
}

func (m *memberTrack) state() string {
	if len(m.spans) == 0 {
		return ""
	}
	return m.spans[len(m.spans)-1].state
}

func (m *memberTrack) set(state string, e *history.Event, why string) {
	if m.state() == state {
		return
	}
	m.spans = append(m.spans, stateSpan{state: state, start: e.Time, event: e.Index, why: why})
}

// maxMarks bounds the glyphs a lane keeps; the page says when it dropped some.
const maxMarks = 2000

func (m *memberTrack) mark(f string, e *history.Event, detail string) bool {
	if len(m.marks) >= maxMarks {
		return false
	}
	m.marks = append(m.marks, memberMark{f: f, t: e.Time, event: e.Index, detail: detail})
	return true
}

// coordSpan is a stretch of the run in which the history names one node as the coordinator: from
// the first event that names it after another, to the next such event.
type coordSpan struct {
	node  int32
	start time.Duration
	event int64
	by    string
	// seen counts the events that named it; last is when the last of them was.
	seen int
	last time.Duration
}

// coordMark is an answer saying the node asked is not (or not yet) the coordinator.
type coordMark struct {
	t     time.Duration
	event int64
	who   string
	err   string
}

// memberOf is the member a process speaks for: the part of its name before any "/" ("m1/hb").
func memberOf(process string) string {
	m, _, _ := strings.Cut(process, "/")
	return m
}

// lanes gathers what the lanes show.
type lanes struct {
	consumed, produced rateBins
	members            map[string]*memberTrack
	memberOrder        []string
	coord              []coordSpan
	coordMarks         []coordMark
	droppedMarks       int
}

func (l *lanes) member(name string) *memberTrack {
	if l.members == nil {
		l.members = map[string]*memberTrack{}
	}
	m, ok := l.members[name]
	if !ok {
		m = &memberTrack{}
		l.members[name] = m
		l.memberOrder = append(l.memberOrder, name)
	}
	return m
}

// add takes what the lanes need of e. It decodes a payload only where the digest has it decoded
// already, or for the rare events it reads (coordinator facts, membership ends).
func (l *lanes) add(e *history.Event) {
	switch e.F {
	case history.FConsume:
		l.consumed.add(e.Time)
		return
	case history.FProduce:
		if e.Type == history.OK {
			l.produced.add(e.Time)
		}
		return
	case history.FDescribe:
		if e.Type == history.OK {
			if n, ok := describedCoordinator(e); ok {
				l.coordinator(n, e, "the observer's describe")
			}
		}
		return
	case fFoundCoordinator:
		if v, err := payload[struct {
			Member string `json:"member"`
			Node   *int32 `json:"node"`
		}](e); err == nil && v.Node != nil {
			who := v.Member
			if who == "" {
				who = memberOf(e.Process)
			}
			l.coordinator(*v.Node, e, who)
		}
		return
	case fMemberError:
		if v, err := payload[struct {
			Error string `json:"error"`
		}](e); err == nil && check.CoordinatorMoved(v.Error) {
			l.notCoordinator(e, v.Error)
		}
		return
	case history.FJoin, history.FSync, history.FHeartbeat, history.FLeave, history.FCommit:
		// A call: its completion may say the node asked is not the coordinator.
		if e.Type == history.Fail || e.Type == history.Info {
			if err := callError(e); check.CoordinatorMoved(err) {
				l.notCoordinator(e, err)
			}
		}
		if e.F == history.FCommit || e.F == history.FLeave {
			return
		}
	case history.FAssigned, history.FLost, history.FFenced, history.FSessionExpired, history.FLeft, history.FStopped:
	case history.FRestart:
		// Its supervisor's restart: scheduled and cancelled change nothing
		// the stop before did not show.
		if v, err := payload[history.Restart](e); err != nil || v.Action != history.RestartStarted {
			return
		}
	default:
		return
	}
	m := l.member(memberOf(e.Process))
	cur := m.state()
	switch e.F {
	case history.FJoin:
		if e.Type == history.Invoke {
			switch cur {
			case stInGroup:
				m.set(stRebalancing, e, "JoinGroup sent while in the group")
			case stJoining, stRebalancing:
			default:
				m.set(stJoining, e, "JoinGroup sent")
			}
		}
	case history.FSync:
		if e.Type == history.OK {
			m.set(stInGroup, e, "SyncGroup answered")
		}
	case history.FHeartbeat:
		switch e.Type {
		case history.Invoke:
			if cur == "" || cur == stOut {
				m.set(stJoining, e, "heartbeat sent to join")
			}
		case history.OK:
			if cur == stInGroup || cur == stRebalancing {
				return
			}
			if hb, err := payload[history.Heartbeat](e); err == nil && hb.Protocol == history.ProtocolConsumer && hb.ResultEpoch > 0 {
				m.set(stInGroup, e, "ConsumerGroupHeartbeat answered with a member epoch")
			}
		}
	case history.FAssigned:
		if cur != stInGroup && cur != stRebalancing {
			m.set(stInGroup, e, "assigned partitions")
		}
	case history.FLost:
		l.keep(m.mark(e.F, e, partitionsOf(e)))
	case history.FFenced, history.FSessionExpired, history.FLeft, history.FStopped:
		detail := e.Why
		if v, err := payload[history.Membership](e); err == nil && v.Error != "" {
			detail = strings.TrimSpace(v.Error + " " + detail)
		}
		l.keep(m.mark(e.F, e, detail))
		if e.F == history.FStopped {
			m.set(stStopped, e, detail)
		} else {
			m.set(stOut, e, e.F)
		}
	case history.FRestart:
		v, _ := payload[history.Restart](e)
		detail := fmt.Sprintf("by its supervisor (attempt %d, after %s)", v.Attempt, v.Backoff)
		l.keep(m.mark(e.F, e, detail))
		m.set(stJoining, e, "restarted "+detail)
	}
}

func (l *lanes) keep(ok bool) {
	if !ok {
		l.droppedMarks++
	}
}

func (l *lanes) coordinator(node int32, e *history.Event, by string) {
	if n := len(l.coord); n > 0 && l.coord[n-1].node == node {
		l.coord[n-1].seen++
		l.coord[n-1].last = e.Time
		return
	}
	l.coord = append(l.coord, coordSpan{node: node, start: e.Time, event: e.Index, by: by, seen: 1, last: e.Time})
}

func (l *lanes) notCoordinator(e *history.Event, err string) {
	if len(l.coordMarks) >= maxMarks {
		l.droppedMarks++
		return
	}
	l.coordMarks = append(l.coordMarks, coordMark{t: e.Time, event: e.Index, who: e.Process, err: err})
}

// describedCoordinator is the node that answered the observer's describe, when it says.
func describedCoordinator(e *history.Event) (int32, bool) {
	raw, ok := e.Value.(json.RawMessage)
	if !ok {
		// In memory: the payload as the observer gave it.
		v, err := history.TypedValue(*e)
		if d, ok := v.(history.Describe); err == nil && ok && d.Group != nil && d.Group.Coordinator != nil {
			return *d.Group.Coordinator, true
		}
		return 0, false
	}
	// Streamed: the payload left raw; decode only the node, and only when it is there.
	if !bytes.Contains(raw, []byte(`"coordinator"`)) {
		return 0, false
	}
	var d struct {
		Group *struct {
			Coordinator *int32 `json:"coordinator"`
		} `json:"group"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || d.Group == nil || d.Group.Coordinator == nil {
		return 0, false
	}
	return *d.Group.Coordinator, true
}

// callError is the Kafka error a call's completion names.
func callError(e *history.Event) string {
	v, err := history.TypedValue(*e)
	if err != nil {
		return ""
	}
	if c, ok := v.(history.GroupCall); ok {
		return c.Call().Error
	}
	return ""
}

func partitionsOf(e *history.Event) string {
	a, err := payload[history.Assignment](e)
	if err != nil {
		return ""
	}
	s := make([]string, len(a.Partitions))
	for i, tp := range a.Partitions {
		s[i] = tp.String()
	}
	return strings.Join(s, " ")
}

// payload is e's payload as a T, whatever form it is in: the typed struct, a pointer to it, raw
// JSON, or any other value (a map an in-memory writer passed), which goes through JSON.
func payload[T any](e *history.Event) (T, error) {
	v, err := history.ValueAs[T](*e)
	if err == nil || e.Value == nil {
		return v, err
	}
	if _, raw := e.Value.(json.RawMessage); raw {
		return v, err
	}
	b, merr := json.Marshal(e.Value)
	if merr != nil {
		return v, merr
	}
	var t T
	return t, json.Unmarshal(b, &t)
}

// concerns names the members and partitions an event speaks of, from its payload (its process
// when the payload names no member).
func concerns(e *history.Event) (member string, tps []history.TP) {
	v, err := history.TypedValue(*e)
	if err == nil {
		if c, ok := v.(history.GroupCall); ok { // Join, Sync, Heartbeat, Leave, Commit
			member = c.Call().Member
		}
		switch v := v.(type) {
		case history.Assignment:
			member, tps = v.Member, v.Partitions
		case history.Consume:
			member, tps = v.Member, []history.TP{v.TP()}
		case history.Commit:
			for _, o := range v.Offsets {
				tps = append(tps, o.TP())
			}
		case history.Heartbeat:
			tps = v.Assignment
		case history.Sync:
			tps = v.Assignment
		case history.Membership:
			member = v.Member
		case history.ShareFetch:
			member, tps = v.Member, shareTPs(v)
		case history.ShareHeartbeat:
			member = v.Member
		case history.Produce:
			return "", []history.TP{{Topic: v.Topic, Partition: v.Partition}}
		case history.Fault, history.Phase, history.Describe, history.Stall:
			return "", nil
		}
	}
	if member == "" {
		switch p := memberOf(e.Process); p {
		case "harness", "nemesis", "observer":
		default:
			member = p
		}
	}
	return member, tps
}
