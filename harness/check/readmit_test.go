package check

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// readmitSeed is the run of seed 2918632487381593263 (baseline, link-cut, link-flap and
// link-latency at high intensity, 3 nodes) on real Kafka 4.4.0 that showed
// kafka-classic-rejoin-readmitted, whole. m1 (classic-cooperative, member id
// XS4DOi2jQG6KIbsxOJ1DPg) owned partitions 0 to 3 from event 1730 (generation 8); its JoinGroup
// cut with EOF (events 2132–2134) was its last call for 7.9 s, past its 6 s session. The
// coordinator removed it (__consumer_offsets offsets 189–191 tombstone its current assignment,
// target and subscription) and epoch 11 gave 2 and 3 to m2 (offset 195, event 2742), 0 and 1 to
// m3 (offset 196, event 2819). m1 came back with its old member id (event 2940) and was answered
// generation 12 (event 2942; offsets 201 and 206 write it again with previous member epoch 0),
// its SyncGroup gave it nothing (event 2946) and it revoked the four partitions (event 2947).
const readmitSeed = "testdata/kafka-4.4.0-readmit-seed-2918632487381593263"

// The member id of m1 and the events the tests edit.
const (
	readmitID       = "XS4DOi2jQG6KIbsxOJ1DPg"
	readmitJoinInv  = 2940
	readmitJoinDone = 2942
	readmitRevoke   = 2947
	readmitNextJoin = 2950 // the answer to the JoinGroup m1 sent right after revoking (event 2948)
)

func TestClassicRejoinReadmittedSeed(t *testing.T) {
	t.Parallel()
	events, obs, plan := loadRun(t, readmitSeed)
	judge := func(t *testing.T, events []history.Event, obs *history.Observations, plan history.Plan) (ndo, vpe Verdict) {
		t.Helper()
		if v := HistoryWellFormed(events); !v.Holds {
			t.Fatalf("the edited history is not well formed: %+v", v.Violations)
		}
		return ownershipVerdicts(All(events, obs, plan))
	}
	t.Run("every violation is the finding's", func(t *testing.T) {
		rep := Judge(events, obs, plan)
		if rep.Holds {
			t.Fatal("the run holds: the finding is a bug that fails it")
		}
		n := map[string]int{}
		for _, v := range rep.Verdicts {
			for _, x := range v.Violations {
				if x.Finding != FindingClassicRejoinReadmitted {
					t.Errorf("%s: a violation not labelled %s: %+v", v.Name, FindingClassicRejoinReadmitted, x)
				}
				n[v.Name]++
			}
			if len(v.Violations) > 0 && !hasKnown(v, FindingClassicRejoinReadmitted, true) {
				t.Errorf("%s: the matches do not list the finding as failing the run: %+v", v.Name, v.Known)
			}
		}
		if n[NameNoDoubleOwnership] != 4 || n[NameValidPartitionEpoch] != 3 || len(n) != 2 {
			t.Fatalf("want 4 NoDoubleOwnership and 3 ValidPartitionEpoch violations, got %v", n)
		}
		ndo, vpe := judge(t, events, obs, plan)
		x := mustCite(t, ndo, 1730, 2742)
		mustSay(t, x, "known bug "+FindingClassicRejoinReadmitted+": ", "partition gq-2918632487381593263-records-2 owned by m1",
			"member id "+readmitID+" at member epoch 8 (log offset 170) removed (tombstones at log offsets 189, 190, 191)",
			"written again as a new member at member epoch 12 with previous member epoch 0 (log offsets 201, 206)",
			"assigned to vxADrFRApQoCL2sn9pRZbQ at member epoch 11 (log offset 195)",
			"m1's JoinGroup as "+readmitID+" (event 2940), 7.937s after the last heartbeat, join or sync carrying it ended (event 2134), was answered generation 12 (event 2942), not UNKNOWN_MEMBER_ID",
			"m1 revoked gq-2918632487381593263-records-2 (event 2947) after the SyncGroup of generation 12 (event 2946)")
		mustSay(t, mustCite(t, ndo, 1730, 2819), "assigned to JiNWbaFuk36C_m72xcQ5uQ== at member epoch 11 (log offset 196)")
		mustSay(t, mustCite(t, vpe, 2946, 2959), "known bug "+FindingClassicRejoinReadmitted+": ", "at epoch 12 owned by m1 (event 2946) and by m3 (event 2959)")
		mustCite(t, vpe, 2945, 2946)
		// The readmission is sighted once, with the join that brought m1 back.
		var got []Sighting
		for _, s := range rep.Findings {
			if s.Finding == FindingClassicRejoinReadmitted {
				got = append(got, s)
			}
		}
		if len(got) != 1 || got[0].Member != "m1" || !slices.Equal(got[0].Events, []int64{readmitJoinInv, readmitJoinDone}) ||
			!strings.Contains(got[0].What, "was answered generation 12 (event 2942), not UNKNOWN_MEMBER_ID") {
			t.Fatalf("sightings %+v", got)
		}
	})
	// Each case takes one piece of the evidence away: the overlaps are then ordinary double
	// ownership, failed unlabelled, and the readmission is sighted only when the log and the
	// join still show it.
	unexplainedSighted := func(t *testing.T, events []history.Event, obs *history.Observations, plan history.Plan, sighted bool) {
		t.Helper()
		ndo, vpe := judge(t, events, obs, plan)
		mustBeUnexplained(t, ndo)
		mustBeUnexplained(t, vpe)
		if len(ndo.Violations) != 4 {
			t.Fatalf("want the 4 overlaps, got %+v", ndo.Violations)
		}
		n := 0
		for _, s := range Judge(events, obs, plan).Findings {
			if s.Finding == FindingClassicRejoinReadmitted {
				n++
			}
		}
		if want := map[bool]int{true: 1}[sighted]; n != want {
			t.Fatalf("%d sightings of the readmission, want %d", n, want)
		}
	}
	unexplained := func(t *testing.T, events []history.Event, obs *history.Observations, plan history.Plan) {
		t.Helper()
		unexplainedSighted(t, events, obs, plan, false)
	}
	t.Run("the rejoin answered UNKNOWN_MEMBER_ID", func(t *testing.T) {
		ev := slices.Clone(events)
		ev[readmitJoinDone].Type = history.Fail
		ev[readmitJoinDone].Value = history.Join{Member: "m1", MemberID: readmitID, Generation: -1, Error: "UNKNOWN_MEMBER_ID"}
		unexplained(t, ev, obs, plan)
	})
	t.Run("the rejoin carried no member id", func(t *testing.T) {
		ev := slices.Clone(events)
		ev[readmitJoinInv].Value = history.Join{Member: "m1", Generation: 8}
		ev[readmitJoinDone].Value = history.Join{Member: "m1", Generation: 12}
		unexplained(t, ev, obs, plan)
	})
	t.Run("no removal in the log", func(t *testing.T) {
		o := *obs
		o.Final.Records = slices.DeleteFunc(slices.Clone(obs.Final.Records), func(r history.Record) bool {
			return r.Offset >= 189 && r.Offset <= 191
		})
		unexplained(t, events, &o, plan)
	})
	t.Run("only the current assignment tombstoned", func(t *testing.T) {
		o := *obs
		o.Final.Records = slices.DeleteFunc(slices.Clone(obs.Final.Records), func(r history.Record) bool {
			return r.Offset == 190 || r.Offset == 191
		})
		unexplained(t, events, &o, plan)
	})
	t.Run("written again, not as a new member", func(t *testing.T) {
		o := *obs
		o.Final.Records = slices.Clone(obs.Final.Records)
		for i, r := range o.Final.Records {
			if r.Offset == 206 {
				v := map[string]any{}
				for k, x := range r.Value {
					v[k] = x
				}
				v["PreviousMemberEpoch"] = 8
				o.Final.Records[i].Value = v
			}
		}
		unexplained(t, events, &o, plan)
	})
	t.Run("without the log", func(t *testing.T) {
		o := *obs
		o.Final.HasRecords, o.Final.Records = false, nil
		unexplained(t, events, &o, plan)
	})
	t.Run("silent for less than the session", func(t *testing.T) {
		p := plan
		p.SessionTimeout = 8 * time.Second // the silence was 7.9 s
		unexplained(t, events, obs, p)
	})
	// m1 keeps the partitions past its next JoinGroup after the new generation's assignment:
	// the overlap runs on past where Kafka's answer made it revoke them, which is the client's.
	// The readmission itself is still sighted.
	t.Run("the overlap extended past the revoke", func(t *testing.T) {
		ev := moveEvent(events, readmitRevoke, readmitNextJoin)
		if a, ok := history.TypedValue(ev[readmitNextJoin]); ev[readmitNextJoin].F != history.FRevoked || ok != nil || a.(history.Assignment).Member != "m1" {
			t.Fatalf("the move went wrong: %+v", ev[readmitNextJoin])
		}
		unexplainedSighted(t, ev, obs, plan, true)
	})
}

// moveEvent returns events with the event at position from moved to just after the one at
// position after (from < after), at the time of the event after it, the indexes renumbered.
func moveEvent(events []history.Event, from, after int) []history.Event {
	e := events[from]
	out := slices.Concat(events[:from], events[from+1:after+1], []history.Event{e}, events[after+1:])
	out[after].Time = out[after-1].Time
	for i := range out {
		out[i].Index = int64(i)
	}
	return out
}
