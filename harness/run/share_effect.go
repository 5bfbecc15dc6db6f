package run

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// shareEffects is the effect meter's part for share members (KIP-932):
// they own no partitions, so what a fault does to them shows in their
// records. A record a member acquired comes back to be acquired again (by
// another member, or by the same one at a higher delivery count) without
// that member having released it only when its acquisition lock lapsed or
// its share session ended: a member that stalled, froze, crashed or lost
// its connections. Releases of the acknowledgement policy, which send
// records back on purpose in every share run, do not count. Beside that:
// acknowledgements the broker refused because the record was no longer the
// member's (its lock lapsed), and share heartbeats fenced or expired.
type shareEffects struct {
	// held is, per record acquired and not settled, the member that last
	// acquired it and whether it sent the record back (a release).
	held map[shareRecord]shareHold
	// lapsed counts, per member, its records that came back without a
	// release; lapsedAt is when the last one was acquired again.
	lapsed   map[string]int
	lapsedAt map[string]time.Duration
	// refused counts, per member, acknowledged partitions refused with
	// INVALID_RECORD_STATE.
	refused map[string]int
	// assignment is each member's last share assignment; reassigned counts
	// the changes after its first.
	assignment map[string]string
	reassigned map[string]int
}

type shareRecord struct {
	topic     string
	partition int32
	offset    int64
}

type shareHold struct {
	member   string
	released bool
}

func newShareEffects() shareEffects {
	return shareEffects{
		held: map[shareRecord]shareHold{}, lapsed: map[string]int{}, lapsedAt: map[string]time.Duration{},
		refused: map[string]int{}, assignment: map[string]string{}, reassigned: map[string]int{},
	}
}

// payloadOf is an event's payload as a T: a pointer as the recorder writes
// it, a value as a history read back decodes it.
func payloadOf[T any](v any) (T, bool) {
	switch x := v.(type) {
	case *T:
		if x != nil {
			return *x, true
		}
	case T:
		return x, true
	}
	var zero T
	return zero, false
}

// shareTap reads one share event into the meter (m.mu held).
func (m *effectMeter) shareTap(e history.Event, who string) {
	s := &m.share
	switch e.F {
	case history.FShareHeartbeat:
		hb, ok := payloadOf[history.ShareHeartbeat](e.Value)
		if !ok || e.Type == history.Invoke {
			return
		}
		if e.Type == history.Fail && (strings.Contains(hb.Error, "FENCED_MEMBER_EPOCH") || strings.Contains(hb.Error, "UNKNOWN_MEMBER_ID")) {
			// Fenced, or its session expired: the coordinator dropped it.
			m.fenced[who]++
			m.lastLoss[who] = e.Time
		}
		if e.Type == history.OK && hb.HasAssignment {
			a := fmt.Sprint(hb.Assignment)
			if old, seen := s.assignment[who]; seen && old != a {
				s.reassigned[who]++
			}
			s.assignment[who] = a
		}
	case history.FShareFetch, history.FShareAck:
		v, ok := payloadOf[history.ShareFetch](e.Value)
		if !ok {
			return
		}
		if e.Type == history.Invoke {
			s.sent(who, v)
			return
		}
		s.answered(who, v, e)
		if e.Type == history.OK {
			s.acquired(who, v, e.Time)
		}
	}
}

// sent marks the records who sends back (release) as released: a later
// acquisition of them is the release's doing, whether it is recorded
// before or after the release's answer.
func (s *shareEffects) sent(who string, v history.ShareFetch) {
	for _, a := range v.Acks {
		if a.Type != history.AckRelease {
			continue
		}
		for o := a.First; o <= a.Last; o++ {
			r := shareRecord{a.Topic, a.Partition, o}
			if h, ok := s.held[r]; ok && h.member == who {
				s.held[r] = shareHold{member: who, released: true}
			}
		}
	}
}

// answered settles the records an answered accept or reject covered, and
// counts the acknowledgements refused because the record was no longer
// the member's.
func (s *shareEffects) answered(who string, v history.ShareFetch, e history.Event) {
	if e.Type != history.OK {
		return
	}
	refused := map[history.TP]bool{}
	for _, pe := range v.AckErrors {
		if strings.Contains(pe.Error, "INVALID_RECORD_STATE") {
			s.refused[who]++
		}
		refused[history.TP{Topic: pe.Topic, Partition: pe.Partition}] = true
	}
	for _, a := range v.Acks {
		if (a.Type != history.AckAccept && a.Type != history.AckReject) || refused[a.TP()] {
			continue
		}
		for o := a.First; o <= a.Last; o++ {
			r := shareRecord{a.Topic, a.Partition, o}
			if h, ok := s.held[r]; ok && h.member == who {
				delete(s.held, r) // settled: never acquired again
			}
		}
	}
}

// acquired records who as the holder of what it acquired; a record that
// came back without its last holder's release counts against that holder.
func (s *shareEffects) acquired(who string, v history.ShareFetch, at time.Duration) {
	for _, a := range v.Acquired {
		for o := a.First; o <= a.Last; o++ {
			r := shareRecord{a.Topic, a.Partition, o}
			if h, ok := s.held[r]; ok && !h.released && a.DeliveryCount > 1 {
				s.lapsed[h.member]++
				s.lapsedAt[h.member] = at
			}
			s.held[r] = shareHold{member: who}
		}
	}
}

// shareMark is the share part of an effectMark.
type shareMark struct {
	lapsed, refused, reassigned map[string]int
}

func (s *shareEffects) mark() shareMark {
	return shareMark{lapsed: maps.Clone(s.lapsed), refused: maps.Clone(s.refused), reassigned: maps.Clone(s.reassigned)}
}

// since says what the share members went through from mk on; who is the
// member a fault targeted ("" for none), at when the fault began.
func (s *shareEffects) since(mk shareMark, who string, at time.Duration) []string {
	var parts []string
	if n, by := diff(s.lapsed, mk.lapsed); n > 0 {
		parts = append(parts, fmt.Sprintf("%d acquired records came back without their holder releasing them: a lock lapsed or a share session ended (held by %s)", n, perMember(by)))
	}
	if n, by := diff(s.refused, mk.refused); n > 0 {
		parts = append(parts, fmt.Sprintf("%d acknowledgements refused INVALID_RECORD_STATE: the records were no longer the member's (%s)", n, perMember(by)))
	}
	if n, by := diff(s.reassigned, mk.reassigned); n > 0 {
		parts = append(parts, fmt.Sprintf("%d share assignments changed (%s)", n, perMember(by)))
	}
	if who != "" {
		if t, ok := s.lapsedAt[who]; ok && t >= at && s.lapsed[who] > mk.lapsed[who] {
			parts = append(parts, fmt.Sprintf("records %s held were acquired again without its release %s after the fault began", who, (t-at).Round(time.Millisecond)))
		}
	}
	return parts
}
