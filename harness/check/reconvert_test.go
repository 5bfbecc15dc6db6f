package check

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

// reconvertSeed is the run of seed 1021641574564730165 (churn, intensity high, 3 nodes) on real
// Kafka 4.1.2 that showed kafka-reconvert-drops-pending-revocation, trimmed: without its produce,
// consume and not-sent events, the records without their raw bytes, the group named
// gq-1021641574564730165. m4 (classic, cooperative) owned partition 6 from event 566; the
// consumer group's target of epoch 8 took 6 from it (__consumer_offsets offset 964); m3 left, the
// group was downgraded (offsets 977–992: GroupMetadata of generation 8 with m4's target, 4 and 5)
// and upgraded at m3's join (offsets 1001–1015: m4 at epoch 8 with 4 and 5, nothing pending);
// epoch 9 gave 6 to m3 (offset 1019, event 3115) while m4 still held it (revoked at event 3229).
// The tests read only NoDoubleOwnership, ValidPartitionEpoch and the sightings from it: with the
// consume events left out, CommitsFollowConsumed fails on this copy (the whole run held it).
const reconvertSeed = "testdata/kafka-4.1.2-reconvert-seed-1021641574564730165"

// mustBeReconvert fails unless v fails with one violation citing want, labelled with the finding,
// saying what the log shows, and listed among v's matches as failing the run.
func mustBeReconvert(t *testing.T, v Verdict, want ...int64) {
	t.Helper()
	x := mustCite(t, v, want...)
	if x.Finding != FindingReconvertDropsRevocation || len(v.Violations) != 1 || !hasKnown(v, FindingReconvertDropsRevocation, true) {
		t.Fatalf("%s: want one violation labelled %s: %+v", v.Name, FindingReconvertDropsRevocation, v)
	}
	mustSay(t, x, "known bug "+FindingReconvertDropsRevocation+": ", "the downgrade wrote the classic group's generation", "left it neither assigned nor pending revocation")
}

// mustBeUnexplained fails unless v fails with violations that no finding labels.
func mustBeUnexplained(t *testing.T, v Verdict) {
	t.Helper()
	if v.Holds || len(v.Known) != 0 || slices.ContainsFunc(v.Violations, func(x Violation) bool { return x.Finding != "" }) {
		t.Fatalf("%s: want unlabelled violations: %+v", v.Name, v)
	}
}

func TestReconvertDropsPendingRevocationSeed(t *testing.T) {
	t.Parallel()
	events, obs, plan := loadRun(t, reconvertSeed)
	judge := func(obs *history.Observations) (ndo, vpe Verdict) {
		return ownershipVerdicts(All(events, obs, plan))
	}
	t.Run("both violations are the finding's", func(t *testing.T) {
		ndo, vpe := judge(obs)
		mustBeReconvert(t, ndo, 566, 3115)
		mustBeReconvert(t, vpe, 3115, 3228)
		mustSay(t, vpe.Violations[0], "holding gq-1021641574564730165-records-6 at member epoch 7 (log offset 957)",
			"generation 8 with the member, without it (log offset 992)", "the upgrade (from log offset 1001, epoch 8)", "(log offset 1014)",
			"the target of epoch 9 gave it to ll4eho7l50AvvZociUMPZA (log offset 1019)")
	})
	// The log shows three drops: m4's partition 6, the one behind both violations, and two that no
	// violation followed (m1's partition 2 at the same conversion, m4's partition 5 at the next).
	// Each is a sighting, citing its log offsets: the third the upgrade's own target (epoch 11) gave to
	// 1Mr3sX_fTSqhRrFphyaXdg, before m4's first current assignment after it.
	t.Run("every drop the log shows is a sighting", func(t *testing.T) {
		rep := Judge(events, obs, plan)
		mustSight(t, rep, []sightingWant{
			{"m1", []string{"member id groupquake-m1-4fdc46c0-d724-4721-bb7b-48336a230d23 holding gq-1021641574564730165-records-2 at member epoch 7 (log offset 956)",
				"its target no longer listed it (log offset 961)", "generation 8 with the member, without it (log offset 992)", "the upgrade (from log offset 1001, epoch 8)",
				"pending revocation (log offset 1013)", "the target of epoch 9 gave it to groupquake-m2-0e4c4ac3-f69c-463e-a510-6abb14aea29e (log offset 1018)"}},
			{"m4", []string{"member id groupquake-m4-a1b06aa5-1afb-4e8c-bd0a-9d9bb279823d holding gq-1021641574564730165-records-6 at member epoch 7 (log offset 957)",
				"its target no longer listed it (log offset 964)", "generation 8 with the member, without it (log offset 992)", "the upgrade (from log offset 1001, epoch 8)",
				"pending revocation (log offset 1014)", "the target of epoch 9 gave it to ll4eho7l50AvvZociUMPZA (log offset 1019)"}},
			{"m4", []string{"member id groupquake-m4-a1b06aa5-1afb-4e8c-bd0a-9d9bb279823d holding gq-1021641574564730165-records-5 at member epoch 9 (log offset 1023)",
				"its target no longer listed it (log offset 1096)", "generation 11 with the member, without it (log offset 1117)", "the upgrade (from log offset 1126, epoch 11)",
				"pending revocation (log offset 1139)", "the target of epoch 11 gave it to 1Mr3sX_fTSqhRrFphyaXdg (log offset 1133)"}},
		})
		// The sightings decide nothing: the run fails on its violations, as before.
		if rep.Holds {
			t.Fatal("the seed's run holds")
		}
	})
	// The same overlap with a log that does not show the group downgraded and upgraded again (the
	// classic group's records left out) is ordinary double ownership.
	t.Run("without the conversion in the log, unexplained", func(t *testing.T) {
		o := *obs
		o.Final.Records = slices.DeleteFunc(slices.Clone(obs.Final.Records), func(r history.Record) bool {
			return r.KeyType == history.RecordGroupMetadata && r.Offset > 947
		})
		ndo, vpe := judge(&o)
		mustBeUnexplained(t, ndo)
		mustBeUnexplained(t, vpe)
	})
	t.Run("without the log, unexplained", func(t *testing.T) {
		o := *obs
		o.Final.HasRecords, o.Final.Records = false, nil
		ndo, vpe := judge(&o)
		mustBeUnexplained(t, ndo)
		mustBeUnexplained(t, vpe)
	})
}

// Records of group "g" for the scripted histories: topic "t" by id.
var reconvertTopicID = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

func topicPartitions(ps ...int32) []any {
	if len(ps) == 0 {
		return nil
	}
	id := make([]any, 16)
	for i, b := range reconvertTopicID {
		id[i] = int(b)
	}
	parts := make([]any, len(ps))
	for i, p := range ps {
		parts[i] = int(p)
	}
	return []any{map[string]any{"TopicID": id, "Partitions": parts}}
}

func memberKey(id string) map[string]any { return map[string]any{"GroupID": "g", "MemberID": id} }

func targetRec(off int64, id string, ps ...int32) history.Record {
	return history.Record{Offset: off, KeyType: history.RecordConsumerGroupTargetAssignmentMember, Key: memberKey(id),
		Value: map[string]any{"TopicPartitions": topicPartitions(ps...)}}
}

// currentRec is a member's current assignment at epoch: assigned, and pending revocation.
func currentRec(off int64, id string, epoch int64, assigned, pending []int32) history.Record {
	return history.Record{Offset: off, KeyType: history.RecordConsumerGroupCurrentMemberAssignment, Key: memberKey(id),
		Value: map[string]any{"MemberEpoch": epoch, "AssignedPartitions": topicPartitions(assigned...), "PartitionsPendingRevocation": topicPartitions(pending...)}}
}

func memberTomb(off int64, keyType int16, id string) history.Record {
	return history.Record{Offset: off, KeyType: keyType, Key: memberKey(id)}
}

// assignmentBytes is a ConsumerProtocolAssignment (version 3) of topic t.
func assignmentBytes(ps ...int32) string {
	b := []byte{0, 3, 0, 0, 0, 1, 0, 1, 't'}
	b = binary.BigEndian.AppendUint32(b, uint32(len(ps)))
	for _, p := range ps {
		b = binary.BigEndian.AppendUint32(b, uint32(p))
	}
	b = append(b, 0xff, 0xff, 0xff, 0xff)
	return base64.StdEncoding.EncodeToString(b)
}

// classicGroupRec is a GroupMetadata of generation gen whose one member, id, is written with
// partitions ps.
func classicGroupRec(off, gen int64, id string, ps ...int32) history.Record {
	return history.Record{Offset: off, KeyType: history.RecordGroupMetadata, Key: map[string]any{"Group": "g"},
		Value: map[string]any{"Generation": gen, "Members": []any{map[string]any{"MemberID": id, "Assignment": assignmentBytes(ps...)}}}}
}

// reconvertLog is the seed's log, small: classic member X holds t-0 and t-1 at epoch 7; the
// target of epoch 8 takes t-0 from it (to C, a consumer member); C leaves and the group is
// downgraded (X written with its target, t-1); Y joins and the group is upgraded, X's current
// assignment is what it was written with, as upgraded (X's first current assignment after the
// upgrade: t-1, pending revocation as given); the target of epoch 9 gives t-0 to Y.
// withConversion false leaves the downgrade and the upgrade out: C leaves, and epoch 9 gives t-0
// to Y while X still has to revoke it.
func reconvertLog(withConversion bool, upgraded, pending []int32) *history.Observations {
	recs := []history.Record{
		cmeta(10, 7), targetRec(11, "X", 0, 1), currentRec(12, "X", 7, []int32{0, 1}, nil),
		cmeta(13, 8), targetRec(14, "X", 1), targetRec(15, "C", 0), currentRec(16, "C", 8, nil, nil),
	}
	if withConversion {
		recs = append(recs,
			memberTomb(20, history.RecordConsumerGroupCurrentMemberAssignment, "C"), memberTomb(21, history.RecordConsumerGroupCurrentMemberAssignment, "X"),
			memberTomb(22, history.RecordConsumerGroupTargetAssignmentMember, "C"), memberTomb(23, history.RecordConsumerGroupTargetAssignmentMember, "X"),
			tomb(24, history.RecordConsumerGroupMetadata), classicGroupRec(25, 8, "X", 1),
			tomb(30, history.RecordGroupMetadata), cmeta(31, 8), targetRec(32, "X", 1), currentRec(33, "X", 8, upgraded, pending))
	} else {
		recs = append(recs, memberTomb(20, history.RecordConsumerGroupCurrentMemberAssignment, "C"), memberTomb(22, history.RecordConsumerGroupTargetAssignmentMember, "C"))
	}
	recs = append(recs, cmeta(40, 9), targetRec(41, "Y", 0), currentRec(42, "Y", 9, []int32{0}, nil), currentRec(43, "X", 9, []int32{1}, nil))
	o := logOf(recs...)
	o.TopicIDs = map[string]string{"t": base64.RawURLEncoding.EncodeToString(reconvertTopicID[:])}
	return o
}

// reconvertHist is the seed's history, small: x (classic, member id X) is given t-0 and t-1 at
// generation 3; when revokedFirst it revokes t-0 before y takes it; y (consumer, member id Y)
// joins at epoch 9 with t-0 and its heartbeat is answered while x, back from a freeze, syncs
// generation 9 still holding t-0, and then revokes it. It returns y's assignment and x's sync.
func reconvertHist(t *testing.T, revokedFirst bool) (h *hist, yOwns, xSync int64) {
	return reconvertHistAt(t, revokedFirst, 9)
}

// reconvertHistAt is reconvertHist with y joining, and x syncing, at epoch (generation) yEpoch.
func reconvertHistAt(t *testing.T, revokedFirst bool, yEpoch int32) (h *hist, yOwns, xSync int64) {
	h = newHist(t)
	xAsg := func(f string, epoch int32, ps ...int32) int64 {
		return h.info("x", f, history.Assignment{Member: "x", MemberID: "X", Protocol: history.ProtocolClassic, Epoch: epoch, Partitions: history.TPs("t", ps...)})
	}
	xAsg(history.FAssigned, 3, 0, 1)
	if revokedFirst {
		xAsg(history.FRevoked, 3, 0)
	}
	hb := history.Heartbeat{Member: "y", MemberID: "Y", Protocol: history.ProtocolConsumer}
	joined := hb
	joined.ResultEpoch = yEpoch
	h.call("y/hb", history.FHeartbeat, hb, history.OK, joined)
	yOwns = h.info("y", history.FAssigned, history.Assignment{Member: "y", MemberID: "Y", Protocol: history.ProtocolConsumer, Epoch: yEpoch, Partitions: history.TPs("t", 0)})
	hb.Epoch = yEpoch
	h.call("y/hb", history.FHeartbeat, hb, history.OK, joined)
	sync := history.Sync{Member: "x", MemberID: "X", Generation: yEpoch}
	done := sync
	done.Assignment = history.TPs("t", 1)
	_, xSync = h.call("x/join", history.FSync, sync, history.OK, done)
	if !revokedFirst {
		xAsg(history.FRevoked, yEpoch, 0)
	}
	return h, yOwns, xSync
}

func TestReconvertDropsPendingRevocation(t *testing.T) {
	t.Parallel()
	dropped := reconvertLog(true, []int32{1}, nil)
	t.Run("the downgrade and upgrade dropped it: both violations labelled", func(t *testing.T) {
		h, yOwns, xSync := reconvertHist(t, false)
		ndo := NoDoubleOwnership(h.events(), dropped)
		mustBeReconvert(t, ndo, yOwns, xSync)
		mustSay(t, ndo.Violations[0], "member id X holding t-0 at member epoch 7 (log offset 12)", "generation 8 with the member, without it (log offset 25)",
			"the upgrade (from log offset 30, epoch 8)", "(log offset 33)", "the target of epoch 9 gave it to Y (log offset 41)")
		mustBeReconvert(t, ValidPartitionEpoch(h.events(), dropped), yOwns, xSync)
	})
	// Each of these keeps the overlap (or the conflict) and takes one piece of the evidence away:
	// the violations stay, unexplained.
	for _, c := range []struct {
		name string
		obs  *history.Observations
	}{
		{"no downgrade and upgrade between: ordinary double ownership", reconvertLog(false, nil, nil)},
		{"the upgrade kept the revocation pending", reconvertLog(true, []int32{1}, []int32{0})},
		{"the upgrade kept the partition assigned", reconvertLog(true, []int32{0, 1}, nil)},
		{"no log read", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _, _ := reconvertHist(t, false)
			mustBeUnexplained(t, NoDoubleOwnership(h.events(), c.obs))
			mustBeUnexplained(t, ValidPartitionEpoch(h.events(), c.obs))
		})
	}
	t.Run("the holder is not the member the log shows", func(t *testing.T) {
		h, _, _ := reconvertHist(t, false)
		ev := h.events()
		for i := range ev {
			if strings.Contains(ev[i].Process, "x") {
				a, ok := ev[i].Value.(history.Assignment)
				if ok {
					a.MemberID = "X2"
					ev[i].Value = a
				}
			}
		}
		mustBeUnexplained(t, NoDoubleOwnership(ev, dropped))
	})
	t.Run("the partition revoked before the other member took it: nothing to label", func(t *testing.T) {
		h, _, _ := reconvertHist(t, true)
		mustHold(t, NoDoubleOwnership(h.events(), dropped))
		mustHold(t, ValidPartitionEpoch(h.events(), dropped))
	})
}

// reconvertLogUpgradeGives is reconvertLog(true, [1], nil) where the upgrade's own target (epoch 8,
// log offset 32, before X's first current assignment after it) already gives t-0 to Y, who joined
// as the group was upgraded; the target of epoch 9 gives Y t-0 and t-2.
func reconvertLogUpgradeGives() *history.Observations {
	o := logOf(
		cmeta(10, 7), targetRec(11, "X", 0, 1), currentRec(12, "X", 7, []int32{0, 1}, nil),
		cmeta(13, 8), targetRec(14, "X", 1), targetRec(15, "C", 0), currentRec(16, "C", 8, nil, nil),
		memberTomb(20, history.RecordConsumerGroupCurrentMemberAssignment, "C"), memberTomb(21, history.RecordConsumerGroupCurrentMemberAssignment, "X"),
		memberTomb(22, history.RecordConsumerGroupTargetAssignmentMember, "C"), memberTomb(23, history.RecordConsumerGroupTargetAssignmentMember, "X"),
		tomb(24, history.RecordConsumerGroupMetadata), classicGroupRec(25, 8, "X", 1),
		tomb(30, history.RecordGroupMetadata), cmeta(31, 8), targetRec(32, "Y", 0), targetRec(33, "X", 1),
		currentRec(34, "Y", 8, []int32{0}, nil), currentRec(35, "X", 8, []int32{1}, nil),
		cmeta(40, 9), targetRec(41, "Y", 0, 2), currentRec(42, "Y", 9, []int32{0, 2}, nil), currentRec(43, "X", 9, []int32{1}, nil))
	o.TopicIDs = map[string]string{"t": base64.RawURLEncoding.EncodeToString(reconvertTopicID[:])}
	return o
}

// TestReconvertUpgradeTargetGivesAway: the other member is given the partition by the upgrade's own
// target, written before the dropped member's first current assignment after the upgrade, and its
// ownership begins at the upgrade's epoch (8), before the next target (epoch 9) lists the partition
// for it again: both violations are the finding's, citing the upgrade's target.
func TestReconvertUpgradeTargetGivesAway(t *testing.T) {
	t.Parallel()
	gives := reconvertLogUpgradeGives()
	t.Run("labelled, citing the upgrade's target", func(t *testing.T) {
		h, yOwns, xSync := reconvertHistAt(t, false, 8)
		ndo := NoDoubleOwnership(h.events(), gives)
		mustBeReconvert(t, ndo, 0, yOwns) // x's assignment (event 0) and y's
		mustBeReconvert(t, ValidPartitionEpoch(h.events(), gives), yOwns, xSync)
		mustSay(t, ndo.Violations[0], "member id X holding t-0 at member epoch 7 (log offset 12)", "generation 8 with the member, without it (log offset 25)",
			"the upgrade (from log offset 30, epoch 8)", "(log offset 35)", "the target of epoch 8 gave it to Y (log offset 32)")
		rep := Judge(h.events(), gives, history.Plan{})
		mustSight(t, rep, []sightingWant{{"x", []string{"(log offset 35)", "the target of epoch 8 gave it to Y (log offset 32)"}}})
	})
	// Exact still: the same log with the upgrade keeping t-0 pending revocation for X (no drop), or
	// with the partition given to X itself, labels nothing.
	withRec := func(r history.Record) *history.Observations {
		o := editLog(gives, r.Offset, &r, 0)
		o.TopicIDs = gives.TopicIDs
		return o
	}
	for _, c := range []struct {
		name string
		obs  *history.Observations
	}{
		{"the upgrade kept the revocation pending", withRec(currentRec(35, "X", 8, []int32{1}, []int32{0}))},
		{"the upgrade kept the partition assigned", withRec(currentRec(35, "X", 8, []int32{0, 1}, nil))},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _, _ := reconvertHistAt(t, false, 8)
			mustBeUnexplained(t, NoDoubleOwnership(h.events(), c.obs))
			mustBeUnexplained(t, ValidPartitionEpoch(h.events(), c.obs))
			mustSight(t, Judge(h.events(), c.obs, history.Plan{}), nil)
		})
	}
}

// sightingWant is one sighting of FindingReconvertDropsRevocation a test wants: its member, and what
// its message says.
type sightingWant struct {
	member string
	says   []string
}

// mustSight fails unless rep's findings list exactly want's sightings of
// FindingReconvertDropsRevocation, in order.
func mustSight(t *testing.T, rep Report, want []sightingWant) {
	t.Helper()
	var got []Sighting
	for _, s := range rep.Findings {
		if s.Finding == FindingReconvertDropsRevocation {
			got = append(got, s)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("want %d sightings of %s, got %d: %+v", len(want), FindingReconvertDropsRevocation, len(got), got)
	}
	for i, w := range want {
		if got[i].Member != w.member {
			t.Errorf("sighting %d: member %q, want %q", i, got[i].Member, w.member)
		}
		for _, f := range w.says {
			if !strings.Contains(got[i].What, f) {
				t.Errorf("sighting %d: %q lacks %q", i, got[i].What, f)
			}
		}
	}
}

// editLog returns o's records with the record at offset off replaced by with (left out when with
// is nil), and the records from offset from on left out when from > 0.
func editLog(o *history.Observations, off int64, with *history.Record, from int64) *history.Observations {
	c := *o
	var recs []history.Record
	for _, r := range o.Final.Records {
		switch {
		case from > 0 && r.Offset >= from:
		case r.Offset == off:
			if with != nil {
				recs = append(recs, *with)
			}
		default:
			recs = append(recs, r)
		}
	}
	c.Final.Records = recs
	return &c
}

// TestReconvertSightings: the finding is sighted from __consumer_offsets alone, whether a violation
// followed or not, and a sighting does not fail the run; a proper conversion is not sighted.
func TestReconvertSightings(t *testing.T) {
	t.Parallel()
	dropped := reconvertLog(true, []int32{1}, nil)
	// x holds t-0 and t-1 and nobody else takes t-0: no overlap, no conflict.
	alone := func(t *testing.T) *hist {
		h := newHist(t)
		h.info("x", history.FAssigned, history.Assignment{Member: "x", MemberID: "X", Protocol: history.ProtocolClassic, Epoch: 3, Partitions: history.TPs("t", 0, 1)})
		return h
	}
	handedOver := func(t *testing.T) *hist { h, _, _ := reconvertHist(t, true); return h }
	revokedBefore := currentRec(17, "X", 8, []int32{1}, nil)
	wroteHeld := classicGroupRec(25, 8, "X", 0, 1)
	for _, c := range []struct {
		name string
		hist func(*testing.T) *hist
		obs  *history.Observations
		want []sightingWant
	}{
		{"dropped, never given away", alone, editLog(dropped, -1, nil, 40),
			[]sightingWant{{"x", []string{"member id X holding t-0 at member epoch 7 (log offset 12)", "its target no longer listed it (log offset 14)",
				"generation 8 with the member, without it (log offset 25)", "the upgrade (from log offset 30, epoch 8)", "pending revocation (log offset 33)",
				"no later target gave it to another member"}}}},
		{"dropped, given to Y after x revoked it", handedOver, dropped,
			[]sightingWant{{"x", []string{"member id X holding t-0 at member epoch 7 (log offset 12)", "without it (log offset 25)", "(log offset 33)",
				"the target of epoch 9 gave it to Y (log offset 41)"}}}},
		{"the downgrade wrote what x still held", handedOver, editLog(dropped, 25, &wroteHeld, 0), nil},
		{"x revoked t-0 before the downgrade", handedOver, logOf(append([]history.Record{revokedBefore}, dropped.Final.Records...)...), nil},
		{"the upgrade kept the revocation pending", handedOver, reconvertLog(true, []int32{1}, []int32{0}), nil},
		{"the upgrade kept the partition assigned", handedOver, reconvertLog(true, []int32{0, 1}, nil), nil},
		{"no downgrade and upgrade", handedOver, reconvertLog(false, nil, nil), nil},
		{"no log read", alone, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := c.hist(t)
			if c.obs != nil && c.obs.TopicIDs == nil {
				c.obs.TopicIDs = dropped.TopicIDs
			}
			rep := Judge(h.events(), c.obs, history.Plan{})
			mustSight(t, rep, c.want)
			if got := Sightings(h.events(), c.obs, history.Plan{}); len(got) != len(c.want) {
				t.Fatalf("Sightings: want %d, got %+v", len(c.want), got)
			}
			// A sighting is noted, not failed: every verdict holds, none lists the finding.
			if !rep.Holds {
				t.Fatalf("the run fails: %+v", rep.Verdicts)
			}
			for _, v := range rep.Verdicts {
				if len(v.Known) != 0 {
					t.Fatalf("%s lists a match: %+v", v.Name, v.Known)
				}
			}
		})
	}
}

// ownershipVerdicts picks NoDoubleOwnership's and ValidPartitionEpoch's
// verdicts out of vs: the two checkers an ownership overlap violates.
func ownershipVerdicts(vs []Verdict) (ndo, vpe Verdict) {
	for _, v := range vs {
		switch v.Name {
		case NameNoDoubleOwnership:
			ndo = v
		case NameValidPartitionEpoch:
			vpe = v
		}
	}
	return ndo, vpe
}
