package check

import (
	"fmt"
	"math"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// A harness stall (history.FStall) is a time the harness process itself
// did not run: its pulse, a goroutine that does nothing but wake at a short
// period, woke a second or more late (a machine starved of CPU, a stopped
// process). The members that run in the harness's process did not run
// either: they sent no heartbeat, and the coordinator may have expired
// their sessions. EventuallyConverges treats such a stall as a fault the
// harness caused:
//
//   - a long stall, one during which a member's session could have expired
//     (at least the session timeout less one heartbeat interval: the last
//     heartbeat before it may have left one interval before it began), is
//     healed at its end: a convergence measured across it counts from its
//     end, with the whole bound, as from a heal;
//   - a short stall delayed every member by its length and no more: the
//     part of it within a measure is added to the bound.
//
// Only stalls the history records count: nothing is inferred from gaps
// between other events (an observer's describe answered late may be a
// slow broker's, not a stalled harness).

// stallAt is one recorded stall: its event's position, and from when to
// when the harness did not run.
type stallAt struct {
	pos      int
	from, to time.Duration
}

func (s stallAt) len() time.Duration { return s.to - s.from }

// stall takes one FStall event into the facts.
func (b *builder) stall(i int, s history.Stall) {
	if s.From < 0 || s.To <= s.From {
		b.f.problem(i, "event %d: a harness stall from %v to %v: it must end after it begins", b.f.ev[i].Index, s.From, s.To)
		return
	}
	b.f.stalls = append(b.f.stalls, stallAt{pos: i, from: s.From, to: s.To})
}

// stallRule is how a run's stalls bear on its convergence measures.
type stallRule struct {
	stalls []stallAt
	// long is the length from which a stall could have let a session
	// expire; 0 when the plan gives no session timeout: then every stall
	// only grows the bound.
	long    time.Duration
	longWhy string
}

func newStallRule(f *facts, p history.Plan) stallRule {
	r := stallRule{stalls: f.stalls}
	r.long, r.longWhy = StallLong(p)
	return r
}

// StallLong is the length from which a harness stall could have let a
// member's session expire under plan p (the session timeout less one
// heartbeat interval, else the session timeout), and how it was worked
// out; 0 when the plan gives no session timeout: every stall then only
// grows a bound.
func StallLong(p history.Plan) (time.Duration, string) {
	switch {
	case p.SessionTimeout <= 0:
		return 0, ""
	case p.HeartbeatInterval > 0 && p.HeartbeatInterval < p.SessionTimeout:
		long := p.SessionTimeout - p.HeartbeatInterval
		return long, fmt.Sprintf("session %s − heartbeat %s = %s", dur(p.SessionTimeout), dur(p.HeartbeatInterval), dur(long))
	default:
		return p.SessionTimeout, "session " + dur(p.SessionTimeout)
	}
}

// stallCount is the rule itself, on the stalls' spans in the order they
// were recorded (by their ends): a measure from from up to at counts from
// the end of the last stall at least long (when long > 0) that ended after
// from and by at (moved is its index, -1 for none), and its bound grows by
// the time of every stall between that start and at (extra; n stalls).
// EventuallyConverges (stallRule.measure) and StallDeadline both count by
// it, so a run's waits and the checker cannot drift apart.
func stallCount(long time.Duration, spans []history.Stall, from, at time.Duration) (start time.Duration, moved int, extra time.Duration, n int) {
	start, moved = from, -1
	for i, s := range spans {
		if long > 0 && s.Len() >= long && s.To > start && s.To <= at {
			start, moved = s.To, i
		}
	}
	for _, s := range spans {
		lo, hi := max(s.From, start), min(s.To, at)
		if hi <= lo {
			continue
		}
		extra += hi - lo
		n++
	}
	return start, moved, extra, n
}

// StallCap is how many times its planned length a wait of the run may last
// once StallDeadline has moved its end: three, so that one stall up to a
// planned length long, beginning anywhere in the planned wait, still
// leaves the whole planned length after its end (the stall may begin just
// before the planned end and last up to one length: 1 + 1 + 1). A harness
// that stalls more than that did not run for most of the wait; the wait
// ends all the same, so a run always stops by itself, and says why.
const StallCap = 3

// StallDeadline is when a wait of the run that began at from, planned to
// last bound, ends once the harness's stalls recorded so far (spans, in
// the order recorded) are counted as EventuallyConverges counts them
// (stallCount): a long stall (StallLong of p) that ended after from
// restarts the wait at its end, with the whole bound; the time of every
// stall after that point is added to it. The deadline is never later than
// from + StallCap×bound; capped says that the cap cut it. Without stalls
// after from it is from + bound.
func StallDeadline(p history.Plan, spans []history.Stall, from, bound time.Duration) (deadline time.Duration, capped bool) {
	long, _ := StallLong(p)
	start, _, extra, _ := stallCount(long, spans, from, math.MaxInt64)
	deadline = start + bound + extra
	if hard := from + StallCap*bound; deadline > hard {
		return hard, true
	}
	return deadline, false
}

func (r stallRule) isLong(s stallAt) bool { return r.long > 0 && s.len() >= r.long }

// maxStallNotes is how many stalls the verdict's notes describe one by one.
const maxStallNotes = 8

// note says, in v's notes, what each stall that ended after the heal does
// to the bound, and that those before it do nothing.
func (r stallRule) note(v *verdict, f *facts, healT time.Duration) {
	before, n := 0, 0
	for _, s := range r.stalls {
		if s.to <= healT {
			before++
			continue
		}
		if n++; n > maxStallNotes {
			continue
		}
		said := fmt.Sprintf("the harness did not run for %s (%s–%s, event %d, the members in its process with it)", dur(s.len()), dur(s.from), dur(s.to), f.idx(s.pos))
		if r.isLong(s) {
			v.note("%s: long enough for a session to expire (%s), so a convergence measured across it counts from its end: the bound counts from %s", said, r.longWhy, dur(s.to))
		} else {
			v.note("%s: too short for a session to expire, so a convergence measured across it gets its length added to the bound", said)
		}
	}
	if n > maxStallNotes {
		v.note("and %d more harness stalls after the heal, counted the same way", n-maxStallNotes)
	}
	if before > 0 {
		v.note("%d harness stall(s) ended before the heal: they do not move the bound", before)
	}
}

// measure is a time to converge corrected for the harness's stalls.
type measure struct {
	// start is where it counts from: the point asked, or the end of the
	// last long stall between that and the point judged (moved says which,
	// -1 for none).
	start time.Duration
	moved int
	bound Bound // grown by the short stalls' time between start and the point judged
	cite  []int64
}

// measure corrects the time from from to at, against bound, for the
// stalls: the last long stall that ended after from and by at moves the
// start to its end; the time of other stalls between the start and at is
// added to the bound.
func (r stallRule) measure(f *facts, from, at time.Duration, bound Bound) measure {
	spans := make([]history.Stall, len(r.stalls))
	for i, s := range r.stalls {
		spans[i] = history.Stall{From: s.from, To: s.to}
	}
	start, moved, extra, n := stallCount(r.long, spans, from, at)
	m := measure{start: start, moved: moved, bound: bound}
	if m.moved >= 0 {
		m.cite = append(m.cite, f.idx(r.stalls[m.moved].pos))
	}
	for _, s := range r.stalls {
		if min(s.to, at) > max(s.from, m.start) {
			m.cite = append(m.cite, f.idx(s.pos))
		}
	}
	if extra > 0 {
		m.bound.Limit += extra
		m.bound.Reason += fmt.Sprintf(" + the harness's stalls %s (%d) = %s", dur(extra), n, dur(m.bound.Limit))
	}
	return m
}

// since says where m counts from when a long stall moved it: "" otherwise.
func (m measure) since(r stallRule, f *facts) string {
	if m.moved < 0 {
		return ""
	}
	s := r.stalls[m.moved]
	return fmt.Sprintf("the end of the harness's stall at event %d (it did not run from %s to %s, %s: long enough for a session to expire), from which the bound counts",
		f.idx(s.pos), dur(s.from), dur(s.to), dur(s.len()))
}

// excess is how far the time from healT to at is over bound once corrected
// for the stalls (≤ 0: within it), the measure, and the words that say
// where it was counted from when that is not the heal. When the stalls
// excuse an overrun of the plain bound, v's notes say so, naming what took
// that long.
func (r stallRule) excess(v *verdict, f *facts, what string, healT, at time.Duration, bound Bound) (time.Duration, measure, string) {
	m := r.measure(f, healT, at, bound)
	over, from := m.overrun(r, f, at)
	if took := at - healT; took > bound.Limit && over <= 0 {
		v.note("%s %s after the heal, over the bound (%s), but the harness did not run for part of it: %s, within the bound (%s)", what, dur(took), bound.Reason, m.countedFrom(r, f, at, "the heal"), m.bound.Reason)
	}
	return over, m, from
}

// overrun is how far at is past m's bound, counted from m's start (≤ 0: within it), and the words
// that say, after how long the wait was, where it was counted from when a long stall moved it
// ("" otherwise).
func (m measure) overrun(r stallRule, f *facts, at time.Duration) (time.Duration, string) {
	from := ""
	if s := m.since(r, f); s != "" {
		from = fmt.Sprintf(" and %s after %s", dur(at-m.start), s)
	}
	return at - m.start - m.bound.Limit, from
}

// countedFrom says, for a note, where the wait until at was counted from: plain (the heal, the
// lapse), or the end of the long stall that moved m.
func (m measure) countedFrom(r stallRule, f *facts, at time.Duration, plain string) string {
	if m.moved < 0 {
		return "counted from " + plain
	}
	return fmt.Sprintf("counted from the end of the harness's stall at event %d, %s", f.idx(r.stalls[m.moved].pos), dur(at-m.start))
}

// against says how the time from the heal (at position heal) to at stands against bound,
// corrected for the stalls as excess counts it, for a violation that fails whatever the time (a
// state judged where the run ended its wait): how far over the bound it is, or how much of the
// bound was left. It adds no note.
func (r stallRule) against(f *facts, heal int, at time.Duration, bound Bound) string {
	healT := f.ev[heal].Time
	m := r.measure(f, healT, at, bound)
	over, from := m.overrun(r, f, at)
	took := fmt.Sprintf("judged %s after the heal (event %d)%s", dur(max(0, at-healT)), f.idx(heal), from)
	if over > 0 {
		return fmt.Sprintf("%s, %s over the bound (%s)", took, dur(over), m.bound.Reason)
	}
	return fmt.Sprintf("%s, within the bound (%s) by %s: the state where the run stopped waiting is judged whatever the time", took, m.bound.Reason, dur(-over))
}
