package check

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/check/checktest"
	"github.com/groupquake/groupquake/harness/history"
)

// mixedConversion is the run of TestEmbedded broker-faults/mixed seed 7 on the embedded 4.4.0
// coordinator: a node pause let every session of the mixed group run out, the consumer group
// went Empty at group epoch 6 (describes at events 421 to 545), a classic member's JoinGroup converted it
// into a classic group (__consumer_offsets offset 77: ConsumerGroupMetadata tombstone, then
// GroupMetadata at generation 0 and 1) and a consumer-protocol heartbeat upgraded it at epoch 1.
// Its epochs start over at m1's join (event 556), as Kafka 4.1 and 4.4 do.
const mixedConversion = "testdata/mixed-conversion-seed-7"

func loadRun(t *testing.T, dir string) ([]history.Event, *history.Observations, history.Plan) {
	t.Helper()
	l, err := history.Load(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	obs, err := history.LoadObservations(filepath.Join(dir, "observations.json"))
	if err != nil {
		t.Fatal(err)
	}
	return l.Events, obs, checktest.ReadPlan(t, dir).History()
}

func TestMixedGroupConvertedWhileEmpty(t *testing.T) {
	t.Parallel()
	events, obs, plan := loadRun(t, mixedConversion)
	t.Run("every checker holds, the epochs judged per incarnation", func(t *testing.T) {
		vs := All(events, obs, plan)
		mustHoldButReplay(t, vs) // harness/run's TestJudgeMixedConversion judges the replay
		for _, name := range []string{"ValidPartitionEpoch", "EpochMonotonic", "FencedCommitsRejected"} {
			n := notesOf(byName(vs)[name])
			if !strings.Contains(n, "a new incarnation of the group from event 556: the group had no member at event 545, m1 joined at epoch 1 (epochs up to 6 before)") ||
				!strings.Contains(n, "__consumer_offsets offset 77: epoch 6, then a classic group at 0") {
				t.Fatalf("%s notes: %s", name, n)
			}
		}
	})
	// The false alarms the run raised before: each must come back when the log does not prove
	// the conversion.
	wantFail := func(t *testing.T, obs *history.Observations, note string) {
		t.Helper()
		vs := byName(All(events, obs, plan))
		mustCite(t, vs["ValidPartitionEpoch"], 122, 653)
		mustCite(t, vs["EpochMonotonic"], 545, 693)
		mustCite(t, vs["FencedCommitsRejected"], 690, 691, 362)
		for _, name := range []string{"ValidPartitionEpoch", "EpochMonotonic", "FencedCommitsRejected"} {
			if n := notesOf(vs[name]); !strings.Contains(n, note) {
				t.Fatalf("%s notes lack %q: %s", name, note, n)
			}
		}
	}
	t.Run("a log without the conversion fails", func(t *testing.T) {
		o := *obs
		o.Final.Records = nil
		tomb := int64(-1)
		for _, r := range obs.Final.Records {
			if r.KeyType == history.RecordConsumerGroupMetadata && r.Tombstone() && tomb < 0 {
				tomb = r.Offset
			}
		}
		for _, r := range obs.Final.Records {
			if r.KeyType == history.RecordConsumerGroupMetadata && r.Tombstone() {
				continue // the consumer group was never deleted
			}
			if r.KeyType == history.RecordGroupMetadata && tomb >= 0 && r.Offset > tomb {
				// nor replaced by a classic group (a GroupMetadata straight after the consumer
				// group's records is a conversion too: Kafka may drop the tombstones)
				continue
			}
			o.Final.Records = append(o.Final.Records, r)
		}
		wantFail(t, &o, "not excused, because __consumer_offsets shows 0 deletions or conversions of the empty group")
	})
	t.Run("without the log it fails and says why", func(t *testing.T) {
		o := *obs
		o.Final.HasRecords, o.Final.Records = false, nil
		wantFail(t, &o, "not excused, because no snapshot read __consumer_offsets")
		wantFail(t, nil, "not excused, because no snapshot read __consumer_offsets")
	})
}

// migrationOutage is a run of suites/migration -migration.scenario broker-faults on real Kafka
// 4.4.0 (1 node, from consumer): the only node stopped, then killed, for about 40 s; the members'
// sessions expired while their heartbeats went unanswered, so m1 never heard it was out. m3's
// JoinGroup with a member id the restarted coordinator did not know removed the empty consumer
// group without its tombstones (UNKNOWN_MEMBER_ID, event 500), its next join made a classic group at
// generation 1 (__consumer_offsets offsets 43 and 44, no tombstone between the consumer group's
// records and them), and m1's commits after it were refused (UNKNOWN_MEMBER_ID).
const migrationOutage = "testdata/kafka-4.4.0-migration-outage"

func TestMembersOutWithoutHearingIt(t *testing.T) {
	t.Parallel()
	events, obs, plan := loadRun(t, migrationOutage)
	wantEveryCheckerHolds(t, All(events, obs, plan))
	// Without the members' removal in the log, nothing proves m1 out of the group when m3 joined.
	o := *obs
	o.Final.Records = nil
	for _, r := range obs.Final.Records {
		if r.KeyType == history.RecordConsumerGroupMemberMetadata && r.Tombstone() {
			continue
		}
		o.Final.Records = append(o.Final.Records, r)
	}
	if v := ValidPartitionEpoch(events, &o); len(v.Violations) == 0 {
		t.Errorf("ValidPartitionEpoch holds without the members' tombstones in the log: %v", v.Notes)
	}
}

// staticRejoin is the run `groupquake run --seed 268778 --scenario broker-faults --kafka 4.4.0
// --nodes 3 --kinds java-classic-cooperative,java-consumer,classic-cooperative,consumer --members 4
// --duration 20s` on real Kafka 4.4.0: m4, a static consumer-protocol member, sent its joining
// heartbeat while node 1 was killed (event 13, no answer at event 14) and again (event 17, no
// answer at event 37); the coordinator had registered it; its next join, the same member id at
// epoch 0 (event 39), was answered UNRELEASED_INSTANCE_ID naming m4's member id itself as the
// owner (event 43, the message at event 44), and m4 stopped for good.
const staticRejoin = "testdata/kafka-4.4.0-static-rejoin-seed-268778"

func TestStaticRejoinOwnInstanceRealRun(t *testing.T) {
	t.Parallel()
	events, obs, plan := loadRun(t, staticRejoin)
	rep := Judge(events, obs, plan)
	for _, v := range rep.Verdicts {
		if v.Name != "EventuallyConverges" {
			if !v.Holds {
				t.Fatalf("%s: %+v", v.Name, v.Violations)
			}
			continue
		}
		x := mustCite(t, v, 39, 43)
		if len(v.Violations) != 1 || x.Finding != FindingStaticRejoinOwnInstance || !strings.Contains(x.Message, "naming H0_vxV37db_OycugW-wEVQ itself as the owner") {
			t.Fatalf("want one violation, %s, from the answer's own message: %+v", FindingStaticRejoinOwnInstance, v.Violations)
		}
		// m4 never came back: the run was judged without it from its refusal on.
		lost := false
		for _, k := range v.Known {
			lost = lost || (k.Member == "m4" && k.Failed && k.Without > 0 && k.Share > 0 && k.Share < 0.25)
		}
		if !lost {
			t.Fatalf("m4's loss not measured: %+v", v.Known)
		}
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Finding != FindingStaticRejoinOwnInstance || rep.Findings[0].Member != "m4" {
		t.Fatalf("findings: %+v", rep.Findings)
	}
}

// migrationOutage412 is TestMigration/4.1.2/bidirectional/broker-faults/from-consumer (seed 13) on
// real Kafka 4.1.2, 1 node, the run that failed EpochMonotonic: the only node was down for about
// 26 s (a stop, a pause, then a kill whose node took 26 s to serve again); m1 (consumer, epoch 2)
// and m2 (kgo-consumer) heard nothing while their sessions expired (__consumer_offsets offsets
// 32–38: both member ids tombstoned, epoch 4). After the restart m3's classic JoinGroup without a
// member id converted the empty consumer group to a classic group (offsets 40–43: the consumer
// group's tombstones, an empty GroupMetadata at generation 0) and was answered MEMBER_ID_REQUIRED;
// m1, told UNKNOWN_MEMBER_ID (event 479), rejoined at epoch 0 (event 482), which deleted the
// memberless classic group (offset 44) and made a new consumer group, m1 at epoch 1 (offsets
// 45–49); m3 joined it with its member id at generation 2 (event 493, offset 50), answered just
// before m1 (event 496). m1's epoch 1 after its epoch 2 is a new incarnation of the group.
const migrationOutage412 = "testdata/kafka-4.1.2-migration-outage"

func TestEmptyClassicGroupReplacedIsANewIncarnation(t *testing.T) {
	t.Parallel()
	events, obs, plan := loadRun(t, migrationOutage412)
	vs := All(events, obs, plan)
	wantEveryCheckerHolds(t, vs)
	for _, v := range vs {
		if v.Name == "EpochMonotonic" && !hasNote(v, "a new incarnation of the group from event 482: m1 joined at epoch 1") {
			t.Errorf("EpochMonotonic: the new incarnation must begin at m1's rejoin (event 482): %v", v.Notes)
		}
	}
	// Without the deletions in the log (the consumer group's tombstones, the memberless classic
	// group and its tombstone), nothing shows the group made anew: m1's epoch going back from 2
	// to 1 is a violation.
	o := *obs
	o.Final.Records = nil
	for _, r := range obs.Final.Records {
		if r.Offset >= 40 && r.Offset <= 44 {
			continue
		}
		o.Final.Records = append(o.Final.Records, r)
	}
	mustCite(t, EpochMonotonic(events, &o), 341, 496)
}

// freezeSeed is a run of `groupquake run --seed 2058727196645645882 --scenario combined --kafka
// 4.4.0 --nodes 3 --kinds consumer,classic-cooperative,kgo-classic --duration 20s` on real Kafka
// 4.4.0: m1 (consumer) sent an auto-commit of partition 0 at offset 26 (event 340) while the
// coordinator's node was paused; the node resumed and applied it (__consumer_offsets offset 43),
// but m1 was frozen (member-freeze) and its answer held back: the call gave up (event 371) and was
// sent again (372), and by then m1 had been expired, partition 0 had moved to m2 (event 477), which
// committed 39 to 55 (events 506 to 670); the second request was answered UNKNOWN_MEMBER_ID after
// the thaw (691). Every checker held.
const freezeSeed = "testdata/kafka-4.4.0-freeze-seed-2058727196645645882"

// TestFreezeSeedAnswerAfterTheMove: the false alarm of this seed, as a fresh run of it recorded it
// once. There m1's first request kept its call open and was answered ok after the thaw (it had been
// applied while m1 was still a member), and CommittedOffsetMonotonic said the offset "went back"
// from one of m2's commits answered meanwhile to m1's: it folded the commits completed before the
// previous commit was sent into the comparison with m1's, which was sent long before them.
func TestFreezeSeedAnswerAfterTheMove(t *testing.T) {
	t.Parallel()
	recorded, obs, plan := loadRun(t, freezeSeed)
	t.Run("as recorded, every checker holds", func(t *testing.T) {
		mustHoldButReplay(t, All(recorded, obs, plan)) // groupquake check judges the replay
	})
	// The alarm's history: m1's first request (event 340) is answered ok at event 691.
	alarm := slices.Clone(recorded)
	for _, i := range []int{371, 372} { // the call no longer gives up and is not sent again
		alarm[i] = history.Event{Index: alarm[i].Index, Time: alarm[i].Time, Type: history.Info, Process: "m1", F: "note", Value: json.RawMessage(`{}`)}
	}
	answer, ok := alarm[691].Value.(history.Commit)
	if !ok || alarm[340].Type != history.Invoke || len(answer.PartitionErrors) != 1 {
		t.Fatalf("the run's events 340 and 691 are not m1's commit and its answer: %v / %v", alarm[340], alarm[691])
	}
	answer.PartitionErrors = nil
	alarm[691].Value = answer
	t.Run("m1's commit answered after m2's is concurrent with them: every checker holds", func(t *testing.T) {
		vs := All(alarm, obs, plan)
		mustHoldButReplay(t, vs)
		// The pairs compared are those completed before the later commit was sent.
		if n := notesOf(byName(vs)["CommittedOffsetMonotonic"]); !strings.Contains(n, "ordered commit pairs") {
			t.Fatalf("notes: %s", n)
		}
	})
	t.Run("the same commit written after m2's in the log fails", func(t *testing.T) {
		o := *obs
		o.Final.Records = append(slices.Clone(obs.Final.Records), offsetRecFor(obs.Group, "gq-2058727196645645882-records", 999, 0, 26))
		v := CommittedOffsetMonotonic(alarm, &o)
		if v.Holds || !strings.Contains(v.Violations[len(v.Violations)-1].Message, "to 26 at __consumer_offsets offset 999") {
			t.Fatalf("got %+v", v.Violations)
		}
	})
	t.Run("m1's later commit, sent after m2's was answered, fails when accepted", func(t *testing.T) {
		late := slices.Clone(alarm)
		c := late[694].Value.(history.Commit)
		c.PartitionErrors = nil
		late[694].Value = c
		v := CommittedOffsetMonotonic(late, obs)
		mustFailOnce(t, v, []int64{670, 692, 694}, "went back from 55 (commit by m2 acknowledged at event 670) to 26 (commit by m1 sent at event 692")
		if v := FencedCommitsRejected(late, obs); v.Holds {
			t.Fatalf("a commit of m1's after the partition moved to m2 was accepted and FencedCommitsRejected holds")
		}
	})
}

// offsetRecFor is an OffsetCommit record of group at log offset at.
func offsetRecFor(group, topic string, at int64, p int32, o int64) history.Record {
	return history.Record{Offset: at, KeyType: history.RecordOffsetCommit,
		Key: map[string]any{"group": group, "topic": topic, "partition": p}, Value: map[string]any{"offset": o}}
}

// byName is the verdicts by checker name.
func byName(vs []Verdict) map[string]Verdict {
	out := map[string]Verdict{}
	for _, v := range vs {
		out[v.Name] = v
	}
	return out
}

// mustHoldButReplay fails the test unless every verdict but
// RecoveredStateMatchesLog holds and was not skipped (mustHold): that one
// needs the coordinator's replay, which this package does not import.
func mustHoldButReplay(t *testing.T, vs []Verdict) {
	t.Helper()
	for _, v := range vs {
		if v.Name != "RecoveredStateMatchesLog" {
			mustHold(t, v)
		}
	}
}

// wantEveryCheckerHolds fails the test unless every verdict holds and none
// was skipped but RecoveredStateMatchesLog: it needs the coordinator's
// replay, which this package does not import (groupquake check passes it).
func wantEveryCheckerHolds(t *testing.T, vs []Verdict) {
	t.Helper()
	for _, v := range vs {
		if v.Skipped != "" && v.Name != "RecoveredStateMatchesLog" || len(v.Violations) > 0 {
			t.Errorf("%s: skipped %q, violations %v", v.Name, v.Skipped, v.Violations)
		}
	}
}
