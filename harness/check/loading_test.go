package check

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

// Kafka's group coordinator answers a classic Heartbeat NONE while it loads the group's
// __consumer_offsets partition (GroupCoordinatorService#heartbeat: "The group is still loading,
// so blindly respond") and every other group call COORDINATOR_LOAD_IN_PROGRESS. Such a heartbeat
// answer says nothing about the member's session.

const errLoading = "COORDINATOR_LOAD_IN_PROGRESS"

// blindHeartbeat scripts the order of events of seed 2910746856353474622 (below): classic member a
// (member id a-1) owns partition 0, its session expires and consumer member b is given partition 0
// at epoch 5; the coordinator moves, a finds the new one, its Heartbeat is answered ok, its next
// call, an OffsetCommit sent after that answer, is answered commitErr, and the coordinator answers
// a's next Heartbeat UNKNOWN_MEMBER_ID. It returns the history and the heartbeat's invoke and
// answer.
func blindHeartbeat(t *testing.T, commitErr string) ([]history.Event, int64, int64) {
	h := newClassicHist(t)
	h.assigned("a", 1, 0)
	h.proto = history.ProtocolConsumer
	h.assigned("b", 5, 0)
	h.proto = history.ProtocolClassic
	h.info("a/hb", "found-coordinator", json.RawMessage(`{"member":"a","node":2}`))
	hb := history.Heartbeat{Member: "a", MemberID: "a-1", Protocol: history.ProtocolClassic, Epoch: 1}
	inv, ok := h.call("a/hb", history.FHeartbeat, hb, history.OK, hb)
	c := history.Commit{Member: "a", MemberID: "a-1", Protocol: history.ProtocolClassic, Epoch: 1, Offsets: []history.OffsetAt{off(0, 33)}}
	done := c
	if commitErr != "" {
		done.Error = commitErr
		done.PartitionErrors = []history.PartitionError{{Topic: "t", Partition: 0, Error: commitErr}}
	}
	h.call("a", history.FCommit, c, history.OK, done)
	refused := hb
	refused.Error = "UNKNOWN_MEMBER_ID"
	h.call("a/hb", history.FHeartbeat, hb, history.Fail, refused)
	h.lost("a", -1, 0)
	return h.events(), inv, ok
}

// memberRec is a ConsumerGroupMemberMetadata record of member id in group "g" (its tombstone
// unless in).
func memberRec(at int64, id string, in bool) history.Record {
	r := history.Record{Offset: at, KeyType: history.RecordConsumerGroupMemberMetadata, Key: map[string]any{"groupid": "g", "memberid": id}}
	if in {
		r.Value = map[string]any{"memberepoch": int64(1)}
	}
	return r
}

// genRec is the GroupMetadata record of classic group "g" at generation g, with the member ids ids.
func genRec(at, g int64, ids ...string) history.Record {
	ms := []any{}
	for _, id := range ids {
		ms = append(ms, map[string]any{"memberid": id})
	}
	return history.Record{Offset: at, KeyType: history.RecordGroupMetadata, Key: map[string]any{"group": "g"}, Value: map[string]any{"generation": g, "members": ms}}
}

// removedLog is the log of blindHeartbeat's group: a-1 joins at epoch 1, is removed at log offset
// 20, and the group reaches epoch 5 at 21.
func removedLog() *history.Observations {
	return logged(nil, memberRec(3, "a-1", true), epochRec(4, 1), memberRec(20, "a-1", false), epochRec(21, 5))
}

func TestBlindHeartbeat(t *testing.T) {
	t.Parallel()
	mustBeValid := func(t *testing.T, v Verdict, inv, ok int64, what string) {
		t.Helper()
		x := mustCite(t, v, inv, ok)
		if !strings.Contains(x.Message, "a still had a valid session: its "+what+" sent at event") {
			t.Fatalf("got %+v", v)
		}
	}
	for _, answer := range []string{errLoading, "UNKNOWN_MEMBER_ID"} {
		t.Run("the log shows a-1 removed before b's epoch and never back: the ok was blind (commit answered "+answer+")", func(t *testing.T) {
			es, _, ok := blindHeartbeat(t, answer)
			v := NoDoubleOwnership(es, removedLog())
			mustHold(t, v)
			want := "the classic heartbeat answered ok at event " + itoa(ok) + " proves no session during the overlap: __consumer_offsets (snapshot final) shows member id a-1 removed at log offset 20, by the time the group reached epoch 5 (log offset 21), and never back"
			if !strings.Contains(notesOf(v), want) {
				t.Fatalf("notes %v lack %q", v.Notes, want)
			}
		})
	}
	t.Run("without the log, a later COORDINATOR_LOAD_IN_PROGRESS does not show the ok blind", func(t *testing.T) {
		// The coordinator may have lost the partition and taken it over again in between.
		es, inv, ok := blindHeartbeat(t, errLoading)
		mustBeValid(t, NoDoubleOwnership(es, nil), inv, ok, "heartbeat")
	})
	t.Run("without the log, or with the removal after b's epoch, or the member id back, the ok proves the session", func(t *testing.T) {
		for _, obs := range []*history.Observations{
			nil,
			logged(nil, memberRec(3, "a-1", true), epochRec(4, 1), epochRec(21, 5), memberRec(22, "a-1", false)),
			logged(nil, memberRec(3, "a-1", true), epochRec(4, 1), memberRec(20, "a-1", false), epochRec(21, 5), memberRec(23, "a-1", true)),
			logged(nil, memberRec(3, "a-1", true), epochRec(4, 1), memberRec(19, "a-1", false), memberRec(20, "a-1", true), epochRec(21, 5)),
			logged(nil, memberRec(3, "a-2", true), epochRec(4, 1), memberRec(20, "a-2", false), epochRec(21, 5)),
		} {
			es, inv, ok := blindHeartbeat(t, "UNKNOWN_MEMBER_ID")
			mustBeValid(t, NoDoubleOwnership(es, obs), inv, ok, "heartbeat")
		}
	})
	t.Run("in a classic group, the GroupMetadata of b's generation leaving a out shows the ok blind", func(t *testing.T) {
		run := func(obs *history.Observations) Verdict {
			h := newClassicHist(t)
			h.takeover()
			hb := history.Heartbeat{Member: "a", MemberID: "a-1", Protocol: history.ProtocolClassic, Epoch: 1}
			h.call("a/hb", history.FHeartbeat, hb, history.OK, hb)
			refused := hb
			refused.Error = "UNKNOWN_MEMBER_ID"
			h.call("a/hb", history.FHeartbeat, hb, history.Fail, refused)
			h.lost("a", -1, 0)
			return NoDoubleOwnership(h.events(), obs)
		}
		v := run(logged(nil, genRec(3, 1, "a-1", "b-1"), genRec(10, 2, "b-1")))
		mustHold(t, v)
		if !strings.Contains(notesOf(v), "shows member id a-1 removed at log offset 10, by the time the group reached epoch 2 (log offset 10), and never back") {
			t.Fatalf("notes %v", v.Notes)
		}
		if v := run(logged(nil, genRec(3, 1, "a-1", "b-1"), genRec(10, 2, "a-1", "b-1"), genRec(12, 3, "b-1"))); v.Holds {
			t.Fatalf("holds with a-1 left out only after generation 2: %+v", v)
		}
	})
	t.Run("a ConsumerGroupHeartbeat answered ok is never blind, whatever the log", func(t *testing.T) {
		es, inv, ok := blindHeartbeat(t, "UNKNOWN_MEMBER_ID")
		for i := range es {
			if hb, isHB := es[i].Value.(history.Heartbeat); isHB && es[i].Index < ok+1 {
				hb.Protocol, hb.ResultEpoch = history.ProtocolConsumer, 1
				es[i].Value = hb
			}
		}
		mustBeValid(t, NoDoubleOwnership(es, removedLog()), inv, ok, "heartbeat")
	})
	t.Run("a join or sync answered ok is never blind", func(t *testing.T) {
		es, inv, ok := blindHeartbeat(t, "UNKNOWN_MEMBER_ID")
		i := slices.IndexFunc(es, func(e history.Event) bool { return e.Index == ok })
		sync := history.Sync{Member: "a", MemberID: "a-1", Generation: 1}
		es[i-1].F, es[i-1].Value, es[i-1].Process = history.FSync, sync, "a/join"
		es[i].F, es[i].Value, es[i].Process = history.FSync, sync, "a/join"
		mustBeValid(t, NoDoubleOwnership(es, removedLog()), inv, ok, "sync")
	})
}

// blindSeed is the run of TestFresh 4.4.0 03-combined-java seed 2910746856353474622 (kinds
// java-classic-cooperative, java-consumer, classic-cooperative, consumer; 3 nodes). m3 (classic,
// generation 4) owned partition 0; it was frozen and its session expired: the coordinator, node 1,
// removed it (__consumer_offsets offsets 308 to 310) and gave partition 0 to m2 at epoch 5 (311 to
// 315; m2's heartbeat answered at event 1078, assignment timestamp 11.54 s into the run); node 1
// was killed at event 1093. m3 thawed and found node 1 until node 2 took the coordinator over
// (event 1464); node 2 answered m3's Heartbeat ok (events 1465, 1466) and its next call, an
// OffsetCommit sent at 1467, COORDINATOR_LOAD_IN_PROGRESS (1469): the ok was the blind answer of a
// coordinator still loading. Loaded, it answered UNKNOWN_MEMBER_ID (1475) and m3 rejoined with a
// new member id (__consumer_offsets 316). NoDoubleOwnership took 1466 as proof that m3's session
// was valid while m2 owned partition 0, a false alarm.
const blindSeed = "testdata/kafka-4.4.0-blind-heartbeat-seed-2910746856353474622"

func TestBlindHeartbeatSeed(t *testing.T) {
	t.Parallel()
	recorded, obs, plan := loadRun(t, blindSeed)
	const note = "the classic heartbeat answered ok at event 1466 proves no session during the overlap: __consumer_offsets (snapshot final) shows member id groupquake-m3-53d3502a-76df-40f8-909e-0aa48366bd30 removed at log offset 310, by the time the group reached epoch 5 (log offset 311), and never back"
	t.Run("as recorded, every checker holds", func(t *testing.T) {
		for _, v := range All(recorded, obs, plan) {
			if v.Name == NameRecoveredStateMatchesLog {
				continue // needs the coordinator's replay (groupquake check holds it)
			}
			mustHold(t, v)
			if v.Name == NameNoDoubleOwnership && !strings.Contains(notesOf(v), note) {
				t.Fatalf("notes: %v", v.Notes)
			}
		}
	})
	t.Run("without the log, m3's session was valid", func(t *testing.T) {
		x := mustCite(t, NoDoubleOwnership(recorded, nil), 1083, 1465, 1466)
		if !strings.Contains(x.Message, "m3 still had a valid session: its heartbeat sent at event 1465 succeeded at event 1466") {
			t.Fatalf("got %+v", x)
		}
	})
	answered := func(t *testing.T, errName string) []history.Event {
		t.Helper()
		es := slices.Clone(recorded)
		c, ok := es[1469].Value.(history.Commit)
		if !ok || es[1469].Index != 1469 || c.Member != "m3" || c.Error != errLoading {
			t.Fatalf("event 1469 is not m3's commit answered COORDINATOR_LOAD_IN_PROGRESS: %+v", es[1469])
		}
		c.Error, c.PartitionErrors = errName, nil
		if errName != "" {
			c.PartitionErrors = []history.PartitionError{{Topic: c.Offsets[0].Topic, Partition: 0, Error: errName}}
		}
		es[1469].Value = c
		return es
	}
	// As rerun 2 of the seed recorded it (node 3 loaded from 16.651 to 16.954 by its log; the ok
	// at 16.742, UNKNOWN_MEMBER_ID to the next call at 17.325).
	t.Run("had the commit been answered UNKNOWN_MEMBER_ID, the log shows the ok blind", func(t *testing.T) {
		mustHoldNote(t, NoDoubleOwnership(answered(t, "UNKNOWN_MEMBER_ID"), obs), note)
	})
	t.Run("had the commit been accepted, a removed member's commit landed", func(t *testing.T) {
		mustSay(t, mustCite(t, NoDoubleOwnership(answered(t, ""), obs), 1083, 1467, 1469), "m3's commit of ", " sent at event 1467 was accepted at event 1469 although it had been fenced")
	})
}

// expelledRevoke scripts the order of events of seed 296807810748457958 on 4.1.2 (kafka-go
// members, churn): classic member a (member id a-1) owns partition 0 at generation 1; its
// heartbeat is answered REBALANCE_IN_PROGRESS while its application is stalled, and the client
// neither heartbeats nor rejoins until the application returns; b is given partition 0 at
// generation 2; a's application returns, a revokes partition 0 and its rejoin as a-1 is answered
// UNKNOWN_MEMBER_ID. With commit, a commit of partition 0 by a is accepted during the overlap.
func expelledRevoke(t *testing.T, commit bool) []history.Event {
	h := newClassicHist(t)
	tp := history.TPs("t", 0)
	h.info("a", history.FAssigned, history.Assignment{Member: "a", MemberID: "a-1", Protocol: history.ProtocolClassic, Epoch: 1, Partitions: tp})
	hb := history.Heartbeat{Member: "a", MemberID: "a-1", Protocol: history.ProtocolClassic, Epoch: 1}
	refused := hb
	refused.Error = "REBALANCE_IN_PROGRESS"
	h.call("a/hb", history.FHeartbeat, hb, history.Fail, refused)
	h.info("b", history.FAssigned, history.Assignment{Member: "b", MemberID: "b-1", Protocol: history.ProtocolClassic, Epoch: 2, Partitions: tp})
	if commit {
		c := history.Commit{Member: "a", MemberID: "a-1", Protocol: history.ProtocolClassic, Epoch: 1, Offsets: []history.OffsetAt{off(0, 7)}}
		h.call("a", history.FCommit, c, history.OK, c)
	}
	h.info("a", history.FRevoked, history.Assignment{Member: "a", MemberID: "a-1", Protocol: history.ProtocolClassic, Epoch: 1, Partitions: tp})
	join := history.Join{Member: "a", MemberID: "a-1", Generation: -1}
	gone := join
	gone.Error = "UNKNOWN_MEMBER_ID"
	h.call("a/join", history.FJoin, join, history.Fail, gone)
	return h.events()
}

// A member that revokes a partition only after the group expelled it was fenced while it still
// held it, as a member that lost it was: the log decides.
func TestExpelledBeforeRevoke(t *testing.T) {
	t.Parallel()
	out := logged(nil, genRec(3, 1, "a-1", "b-1"), genRec(10, 2, "b-1"))
	t.Run("the log leaves a-1 out of generation 2: fenced", func(t *testing.T) {
		v := NoDoubleOwnership(expelledRevoke(t, false), out)
		mustHold(t, v)
		if !strings.Contains(notesOf(v), "a's revocation at event 4 came after the group had expelled it: __consumer_offsets (snapshot final) shows member id a-1 removed at log offset 10, by the time the group reached epoch 2 (log offset 10), and never back") {
			t.Fatalf("notes %v", v.Notes)
		}
	})
	for name, obs := range map[string]*history.Observations{
		"without the log":              nil,
		"a-1 still in generation 2":    logged(nil, genRec(3, 1, "a-1", "b-1"), genRec(10, 2, "a-1", "b-1")),
		"a-1 back in generation 3":     logged(nil, genRec(3, 1, "a-1", "b-1"), genRec(10, 2, "b-1"), genRec(12, 3, "a-1", "b-1")),
		"another member id left out":   logged(nil, genRec(3, 1, "a-1", "b-1", "c-1"), genRec(10, 2, "a-1", "b-1")),
		"a-1 left out only from gen 3": logged(nil, genRec(3, 1, "a-1", "b-1"), genRec(10, 2, "a-1", "b-1"), genRec(12, 3, "b-1")),
	} {
		t.Run(name+": not fenced", func(t *testing.T) {
			v := NoDoubleOwnership(expelledRevoke(t, false), obs)
			if v.Holds || !strings.Contains(v.Violations[0].Message, "a was not fenced (its ownership revoked)") {
				t.Fatalf("got %+v", v)
			}
		})
	}
	t.Run("expelled, but a commit accepted during the overlap", func(t *testing.T) {
		v := NoDoubleOwnership(expelledRevoke(t, true), out)
		if v.Holds || !strings.Contains(v.Violations[0].Message, "a's commit of t-0 sent at event") {
			t.Fatalf("got %+v", v)
		}
	})
}
