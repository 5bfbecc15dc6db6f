package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/groupquake/groupquake/harness/history"
)

// GroupState is the group as a replay of its __consumer_offsets records rebuilds it, in the terms
// the describe APIs report, so the two can be compared field by field.
type GroupState struct {
	Protocol        string
	Generation      int32 // classic
	GroupEpoch      int32 // consumer
	AssignmentEpoch int32 // consumer
	// Members by member id.
	Members map[string]MemberState
	// Offsets are the committed offsets the records leave.
	Offsets map[history.TP]int64
}

// MemberState is one replayed member. Assignment must be what the describe API of the broker's
// version reports (with or without partitions pending revocation, KAFKA-20431): the replay function
// knows the version profile, this package does not.
type MemberState struct {
	MemberEpoch int32
	Assignment  []history.TP
}

// ReplayFunc rebuilds the group from its records; the caller binds it to the group and the
// coordinator's version profile (coordinator.Replay), which keeps this package free of the
// coordinator.
type ReplayFunc func(records []history.Record) (GroupState, error)

const NameRecoveredStateMatchesLog = "RecoveredStateMatchesLog"

var _ = register(Checker{Name: NameRecoveredStateMatchesLog, Place: 130, Groups: ConsumerGroups,
	Asserts: "replaying the group's `__consumer_offsets` records through the reference coordinator gives the group the broker describes",
	judge:   func(in *judging) Verdict { return RecoveredStateMatchesLog(in.obs, in.o.replay) }})

// RecoveredStateMatchesLog replays the records of every snapshot that has them (checkpoints after
// restarts and the final observation) and compares the result with the description and committed
// offsets read at the same time: members, member epochs, assignments, group and assignment epochs
// or generation, offsets. Numbers the description did not report (0) are not compared. Without a
// replay function the checker is skipped, not passed.
func RecoveredStateMatchesLog(obs *history.Observations, replay ReplayFunc) Verdict {
	const name = NameRecoveredStateMatchesLog
	if replay == nil {
		return skipped(name, "no replay function: pass coordinator's replay to check.All with check.WithReplay")
	}
	if obs == nil {
		return skipped(name, "no observations")
	}
	v := newVerdict(name)
	compared := 0
	for _, s := range obs.All() {
		if !s.HasRecords {
			continue
		}
		compared++
		at := []int64{s.HistoryLen - 1} // the last event before the snapshot
		st, err := replay(s.Records)
		if err != nil {
			v.fail(at, "snapshot %s: replaying %d records failed: %v", s.Label, len(s.Records), err)
			continue
		}
		for _, d := range diffState(st, s) {
			v.fail(at, "snapshot %s: %s", s.Label, d)
		}
	}
	if compared == 0 {
		v.note("vacuous: no snapshot holds __consumer_offsets records")
	}
	v.note("%d snapshots replayed and compared", compared)
	return v.done()
}

// MemberPair is one member id beside what the replayed state and the
// broker's description each hold of it.
type MemberPair struct {
	ID                      string
	Replayed                MemberState
	Described               history.MemberDescription
	InReplay, InDescription bool
}

// PairMembers lists every member id of the replayed state or of the
// description g (nil: none described), each once, sorted.
func PairMembers(st GroupState, g *history.GroupDescription) []MemberPair {
	described := map[string]history.MemberDescription{}
	if g != nil {
		for _, m := range g.Members {
			described[m.MemberID] = m
		}
	}
	ids := make([]string, 0, len(st.Members)+len(described))
	for id := range st.Members {
		ids = append(ids, id)
	}
	for id := range described {
		if _, ok := st.Members[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make([]MemberPair, 0, len(ids))
	for _, id := range ids {
		m := MemberPair{ID: id}
		m.Replayed, m.InReplay = st.Members[id]
		m.Described, m.InDescription = described[id]
		out = append(out, m)
	}
	return out
}

func diffState(st GroupState, s history.Snapshot) []string {
	var out []string
	if g := s.Group; g != nil {
		if st.Protocol != "" && g.Protocol != "" && st.Protocol != g.Protocol {
			out = append(out, fmt.Sprintf("replay says a %s group, the broker describes a %s group", st.Protocol, g.Protocol))
		}
		cmp := func(what string, replayed, described int32) {
			if described != 0 && replayed != described {
				out = append(out, fmt.Sprintf("%s: replay %d, described %d", what, replayed, described))
			}
		}
		cmp("generation", st.Generation, g.Generation)
		cmp("group epoch", st.GroupEpoch, g.GroupEpoch)
		cmp("assignment epoch", st.AssignmentEpoch, g.AssignmentEpoch)
		for _, m := range PairMembers(st, g) {
			id, r, d := m.ID, m.Replayed, m.Described
			switch {
			case !m.InDescription:
				out = append(out, fmt.Sprintf("member %s is in the replayed state (epoch %d) but not described", id, r.MemberEpoch))
			case !m.InReplay:
				out = append(out, fmt.Sprintf("member %s is described (epoch %d) but not in the replayed state", id, d.MemberEpoch))
			default:
				cmp("member "+id+" epoch", r.MemberEpoch, d.MemberEpoch)
				if a, b := tpsString(r.Assignment), tpsString(d.Assignment); a != b {
					out = append(out, fmt.Sprintf("member %s assignment: replay [%s], described [%s]", id, a, b))
				}
			}
		}
	}
	if s.HasCommitted {
		seen := map[history.TP]bool{}
		for _, o := range s.Committed {
			if o.Offset < 0 {
				continue // OffsetFetch's "no committed offset"
			}
			seen[o.TP()] = true
			r, ok := st.Offsets[o.TP()]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("offset of %s: described %d, none in the replayed state", o.TP(), o.Offset))
			case r != o.Offset:
				out = append(out, fmt.Sprintf("offset of %s: replay %d, described %d", o.TP(), r, o.Offset))
			}
		}
		var missing []history.TP
		for tp := range st.Offsets {
			if !seen[tp] {
				missing = append(missing, tp)
			}
		}
		history.SortTPs(missing)
		for _, tp := range missing {
			out = append(out, fmt.Sprintf("offset of %s: replay %d, none described", tp, st.Offsets[tp]))
		}
	}
	return out
}

func tpsString(tps []history.TP) string {
	c := append([]history.TP(nil), tps...)
	history.SortTPs(c)
	parts := make([]string, len(c))
	for i, t := range c {
		parts[i] = t.String()
	}
	return strings.Join(parts, " ")
}
