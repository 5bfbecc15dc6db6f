package check

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// Kind says what a finding is: a behaviour Kafka or a client has by design
// (documented, or the protocol's own rule), or a bug.
type Kind string

const (
	// Behaviour: a violation or a member's loss that matches it is noted
	// with the finding's id; the run holds.
	Behaviour Kind = "behaviour"
	// Bug: a violation or a member's loss that matches it fails the run,
	// labelled with the finding's id, unless the finding says why it is
	// noted instead (Finding.Noted).
	Bug Kind = "bug"
)

// Finding is one thing groupquake's runs found in Kafka or a client that is
// not groupquake's own (those are fixed, with a test that scripts them):
// where it lives, where it was seen, what a history must show to match it,
// what a run's verdict does with a match, and how to reproduce it. The
// registry (Findings) is the one list: the checkers match against it, and
// `groupquake findings` lists it and reruns its reproducers. The write-up
// of each is in docs/findings.md, under its id.
type Finding struct {
	// ID names it in verdicts, notes and docs/findings.md.
	ID string `json:"id"`
	// Title says it in one line.
	Title string `json:"title"`
	// Where is the component: "Kafka group coordinator", "franz-go (kgo)".
	Where string `json:"where"`
	// Seen lists the releases it was seen on, by a run or a reproducer
	// ("Kafka 4.4.0", "KafkaConsumer 4.4.0", "franz-go v1.22.3").
	Seen []string `json:"seen"`
	Kind Kind     `json:"kind"`
	// Noted, for a bug, says why a match is noted rather than failed (the
	// project cannot keep it out of the runs it must keep green); empty
	// means a match fails the run.
	Noted string `json:"noted,omitempty"`
	// Evidence is what a history must show for a violation or a member's
	// loss to match the finding.
	Evidence string `json:"evidence"`
	// Upstream names the issue or pull request that tracks it, if any.
	Upstream string `json:"upstream,omitempty"`
	// Reproducer is how to make it happen again.
	Reproducer Reproducer `json:"reproducer"`

	// loss says whether member tr's failed call at tr.errPos, after which
	// it dropped out of the group, is this finding.
	loss func(f *facts, tr memberTrace) bool
	// overlap says whether a's side of a NoDoubleOwnership overlap with b,
	// from position lo, is this finding, and what else showed it (appended
	// to the violation's message; "" for nothing more).
	overlap func(f *facts, a, b *interval, lo int) (string, bool)
	// pair says whether a ValidPartitionEpoch conflict is this finding, and
	// what else showed it, as overlap.
	pair func(f *facts, c pairConflict) (string, bool)
	// seen lists every place the history shows the finding, matched by a
	// verdict or not.
	seen func(f *facts) []Sighting
	// stalls, with explains, is for a finding that keeps a group from
	// forming: it says whether the history shows the finding still at work
	// after the heal, citing where; the unlabelled violations of the
	// checkers named in explains are then the finding's (labelStalls).
	stalls   func(f *facts) ([]int64, bool)
	explains []string
}

// Fails says whether a match fails the run.
func (x Finding) Fails() bool { return x.Kind == Bug && x.Noted == "" }

// Disposition says in words what a run does with a match.
func (x Finding) Disposition() string {
	switch {
	case x.Fails():
		return "fails the run"
	case x.Kind == Bug:
		return "noted: " + x.Noted
	}
	return "noted, the run holds"
}

// Reproducer is how a finding is made to happen again: a conformance
// vector's step against a 1-node cluster where one request sequence shows
// it, else a seeded plan, whose fault schedule is fixed by the seed (the
// interleaving around it is not, so a plan may need several tries); None
// says why there is neither.
type Reproducer struct {
	Vector *VectorReproducer `json:"vector,omitempty"`
	Plan   *PlanReproducer   `json:"plan,omitempty"`
	None   string            `json:"none,omitempty"`
}

// VectorReproducer is one step of a conformance vector
// (coordinator/testdata dialect), replayed with its section against a
// 1-node cluster (harness/differential) or the reference coordinator
// (--embedded): the finding is reproduced when the target's answer to the
// step carries Want.
type VectorReproducer struct {
	// Step is the step's file:line under coordinator/testdata
	// ("consumer/static_rejoin_own_instance.txt:31"), as
	// differential.Result.Pos gives it.
	Step string `json:"step"`
	// Want is what the answer carries when the finding is there (an
	// error name).
	Want string `json:"want"`
	// Given are earlier steps of the section whose answers must carry
	// their Want for Step to show the finding: the state it needs. A
	// broker that did not reach that state does not reproduce it, whatever
	// Step answers.
	Given []VectorStep `json:"given,omitempty"`
}

// VectorStep is one step of a vector and what its answer must carry.
type VectorStep struct {
	Step string `json:"step"`
	Want string `json:"want"`
}

// PlanReproducer is a seeded run (`groupquake run` flags; --kafka is the
// rerun's): the finding is reproduced when the run's history shows it
// (Sightings).
type PlanReproducer struct {
	Args []string `json:"args"`
	// Kafka is the release the plan showed it on.
	Kafka string `json:"kafka"`
	// Timing says what the plan needs to go its way, when it does not
	// always.
	Timing string `json:"timing,omitempty"`
	// Embedded says the plan can run on the embedded cluster (one node).
	Embedded bool `json:"embedded,omitempty"`
}

// Sighting is one place a history shows a finding.
type Sighting struct {
	Finding string  `json:"finding"`
	Member  string  `json:"member,omitempty"`
	Events  []int64 `json:"events,omitempty"`
	What    string  `json:"what"`
}

// Known is a match of a verdict with a finding: a violation labelled, or a
// member's loss or a sighting that failed the verdict or was noted.
type Known struct {
	Finding string  `json:"finding"`
	Member  string  `json:"member,omitempty"`
	Events  []int64 `json:"events,omitempty"`
	// Failed: the match failed the verdict; otherwise it was noted.
	Failed bool `json:"failed,omitempty"`
	// Without is, for a member lost for good, how long the workload went
	// on without it (from its loss to the final observation), and Share
	// that time over the run's member-seconds (every member the harness
	// ran at the end, over the workload from its start to the final
	// observation): how much of the run was judged a member short.
	Without time.Duration `json:"-"`
	Share   float64       `json:"share,omitempty"`
}

// knownJSON is Known as verdicts.json and --json hold it: durations in
// seconds, as every document groupquake writes.
type knownJSON struct {
	Finding  string  `json:"finding"`
	Member   string  `json:"member,omitempty"`
	Events   []int64 `json:"events,omitempty"`
	Failed   bool    `json:"failed,omitempty"`
	WithoutS float64 `json:"without_s,omitempty"`
	Share    float64 `json:"share,omitempty"`
}

func (k Known) MarshalJSON() ([]byte, error) {
	return json.Marshal(knownJSON{k.Finding, k.Member, k.Events, k.Failed, k.Without.Seconds(), k.Share})
}

func (k *Known) UnmarshalJSON(b []byte) error {
	var j knownJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*k = Known{Finding: j.Finding, Member: j.Member, Events: j.Events, Failed: j.Failed, Without: time.Duration(j.WithoutS * float64(time.Second)), Share: j.Share}
	return nil
}

// Findings returns the registry, in the order docs/findings.md has them.
func Findings() []Finding { return slices.Clone(registry) }

// FindingByID returns the finding named id.
func FindingByID(id string) (Finding, bool) {
	for _, x := range registry {
		if x.ID == id {
			return x, true
		}
	}
	return Finding{}, false
}

// The registry's ids.
const (
	FindingStaticRejoinOwnInstance   = "kafka-static-rejoin-own-instance"
	FindingOnlineUpgradeUnknownError = "kafka-online-upgrade-unknown-server-error"
	FindingDeposedGroupIDNotFound    = "kafka-deposed-coordinator-group-id-not-found"
	FindingDeposedStaticFenced       = "kafka-deposed-coordinator-static-fenced"
	FindingOffsetFetchUnstable       = "kafka-offset-fetch-unstable"
	FindingClassicJoinOrphan         = "kafka-classic-join-timeout-orphan"
	FindingReconvertDropsRevocation  = "kafka-reconvert-drops-pending-revocation"
	FindingClassicRejoinReadmitted   = "kafka-classic-rejoin-readmitted"
	FindingKgoRevokeAfterLost        = "kgo-revoke-after-session-lost"
	FindingKgoStaticLeave            = "kgo-static-leave-without-instance-id"
	FindingShareAckErrorApplied      = "kafka-share-ack-error-applied"
	FindingKafkagoSubscription       = "kafkago-subscription-version-mismatch"
)

var registry = []Finding{
	{
		ID:    FindingStaticRejoinOwnInstance,
		Title: "a static consumer-protocol member's join at epoch 0 with its own member id is refused UNRELEASED_INSTANCE_ID, naming itself as the owner",
		Where: "Kafka group coordinator (GroupMetadataManager.getOrMaybeSubscribeStaticConsumerGroupMember)",
		Seen:  []string{"Kafka 4.4.0 (run)", "Kafka 4.0.0–4.4.0 (vector, every served release)", "KafkaConsumer 4.4.0", "groupquake consumer"},
		Kind:  Bug,
		Evidence: "a ConsumerGroupHeartbeat at epoch 0 with an instance id, answered UNRELEASED_INSTANCE_ID, whose member id is the only one " +
			"that can hold the instance id at that point: the last acknowledged call carrying the instance id was that member id's " +
			"(no acknowledged leave since), and every call carrying it whose outcome is unknown since was that member id's too " +
			"(a join whose answer was lost); or the answer's message names the member id itself as the owner",
		Upstream:   "apache/kafka PR #23542 (open): MINOR: Fix static members being fenced by their own instance id",
		Reproducer: Reproducer{Vector: &VectorReproducer{Step: "consumer/static_rejoin_own_instance.txt:31", Want: "UNRELEASED_INSTANCE_ID"}},
		seen:       selfRefusedRejoins,
	},
	{
		ID:    FindingOnlineUpgradeUnknownError,
		Title: "a consumer-protocol member joining a classic group mid-rebalance, with a member that does not support the group's protocol, gets UNKNOWN_SERVER_ERROR",
		Where: "Kafka group coordinator (GroupMetadataManager.convertToConsumerGroup, ClassicGroupMember.metadata)",
		Seen:  []string{"Kafka 4.1.2", "Kafka 4.4.0", "KafkaConsumer 4.4.0", "groupquake consumer"},
		Kind:  Bug,
		Noted: "every mixed group of the chaos matrix and the default campaign runs into it at its first consumer-protocol join; failing it would fail those runs for a reason this registry already names",
		Evidence: "a consumer-protocol member's ConsumerGroupHeartbeat at epoch 0 answered UNKNOWN_SERVER_ERROR, after which it stopped " +
			"for good (KafkaConsumer takes it as fatal) or stayed out of the group",
		Reproducer: Reproducer{Vector: &VectorReproducer{Step: "consumer/mixed_upgrade_refused.txt:118", Want: "UNKNOWN_SERVER_ERROR"}},
		loss: func(f *facts, tr memberTrace) bool {
			v, ok := f.vals[tr.errPos].(history.Heartbeat)
			return ok && v.Protocol == history.ProtocolConsumer && v.Error == "UNKNOWN_SERVER_ERROR" && v.Epoch == 0
		},
		seen: func(f *facts) []Sighting {
			return heartbeatErrors(f, FindingOnlineUpgradeUnknownError, func(v history.Heartbeat) bool {
				return v.Protocol == history.ProtocolConsumer && v.Error == "UNKNOWN_SERVER_ERROR" && v.Epoch == 0
			})
		},
	},
	{
		ID:    FindingDeposedGroupIDNotFound,
		Title: "a coordinator that lost its __consumer_offsets partition without knowing it answers ConsumerGroupHeartbeat GROUP_ID_NOT_FOUND from a state it never wrote",
		Where: "Kafka group coordinator (CoordinatorRuntime: a write operation's error answers at once, without waiting for the log)",
		Seen:  []string{"Kafka 4.4.0", "KafkaConsumer 4.4.0", "groupquake consumer"},
		Kind:  Bug,
		Noted: "it needs the coordinator's node paused past the sessions and resumed; the broker-faults runs draw that and would fail on timing alone",
		Evidence: "a consumer-protocol member's ConsumerGroupHeartbeat answered GROUP_ID_NOT_FOUND, after which it stopped for good or " +
			"stayed out of the group",
		Reproducer: Reproducer{Plan: &PlanReproducer{
			Args:   []string{"--seed", "7", "--scenario", "broker-faults", "--nodes", "3", "--kinds", "java-classic-cooperative,java-consumer,classic-cooperative,consumer", "--members", "4", "--duration", "20s"},
			Kafka:  "4.4.0",
			Timing: "the resumed node must answer before it learns it lost the partition (about 100 ms): not every run",
		}},
		loss: func(f *facts, tr memberTrace) bool {
			v, ok := f.vals[tr.errPos].(history.Heartbeat)
			return ok && v.Protocol == history.ProtocolConsumer && v.Error == "GROUP_ID_NOT_FOUND"
		},
		seen: func(f *facts) []Sighting {
			return heartbeatErrors(f, FindingDeposedGroupIDNotFound, func(v history.Heartbeat) bool {
				return v.Protocol == history.ProtocolConsumer && v.Error == "GROUP_ID_NOT_FOUND"
			})
		},
	},
	{
		ID:    FindingDeposedStaticFenced,
		Title: "a static classic member given a new member id by a coordinator answering from a state it never wrote is fenced (FENCED_INSTANCE_ID) by the next coordinator",
		Where: "Kafka group coordinator (a deposed coordinator's answers; ClassicGroup static membership)",
		Seen:  []string{"Kafka 4.4.0", "groupquake classic"},
		Kind:  Bug,
		Noted: "as " + FindingDeposedGroupIDNotFound + ": a pause of the coordinator's node that the broker-faults runs draw",
		Evidence: "a classic JoinGroup with an instance id answered FENCED_INSTANCE_ID within 15 s after the member was told the coordinator " +
			"moved or was loading (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS), after which it stopped for good " +
			"or stayed out of the group",
		Reproducer: Reproducer{Plan: &PlanReproducer{
			Args:   []string{"--seed", "7", "--scenario", "broker-faults", "--nodes", "3", "--kinds", "java-classic-cooperative,java-consumer,classic-cooperative,consumer", "--members", "4", "--duration", "20s"},
			Kafka:  "4.4.0",
			Timing: "as " + FindingDeposedGroupIDNotFound,
		}},
		loss: func(f *facts, tr memberTrace) bool {
			v, ok := f.vals[tr.errPos].(history.Join)
			return ok && v.Error == "FENCED_INSTANCE_ID" && movedBefore(f, tr.moves, tr.errPos)
		},
		seen: func(f *facts) []Sighting {
			var out []Sighting
			moves := map[string][]int{}
			for i, e := range f.ev {
				switch v := f.vals[i].(type) {
				case history.Heartbeat, history.Join, history.Sync:
					name, err := callMember(v, e.Process), callError(v)
					if (e.Type == history.Fail || e.Type == history.Info) && CoordinatorMoved(err) {
						moves[name] = append(moves[name], i)
					}
					if j, ok := v.(history.Join); ok && e.Type == history.Fail && j.Error == "FENCED_INSTANCE_ID" && movedBefore(f, moves[name], i) {
						out = append(out, Sighting{Finding: FindingDeposedStaticFenced, Member: name, Events: []int64{f.idx(i)},
							What: name + "'s JoinGroup as " + j.MemberID + " answered FENCED_INSTANCE_ID after a coordinator move"})
					}
				}
			}
			return out
		},
	},
	{
		ID:    FindingOffsetFetchUnstable,
		Title: "OffsetFetch without require_stable right after a coordinator move answers offsets older than acknowledged commits",
		Where: "Kafka group coordinator (GroupCoordinatorService.fetchOffsets: a read of the last committed state, the high watermark)",
		Seen:  []string{"Kafka 4.4.0"},
		Kind:  Behaviour,
		Evidence: "none in a history any more: the observer asks with require_stable (harness/observe), members read as their clients do; " +
			"it showed as CommittedOffsetMonotonic and DurableCommits violations on the observer's reads before",
		Reproducer: Reproducer{None: "it needs a coordinator move right after a commit and a reader without require_stable; the observer now asks with it, so no history shows it"},
	},
	{
		ID:    FindingClassicJoinOrphan,
		Title: "a classic member whose JoinGroup to a consumer group timed out in the coordinator stays in the group for good, holding its target partitions, when it never comes back",
		Where: "Kafka group coordinator (GroupMetadataManager.classicGroupJoinToConsumerGroup schedules the session and sync timeouts only when the append succeeds; CoordinatorRuntime fails the append on the write timeout while the records stay)",
		Seen:  []string{"Kafka 4.1.2 (run)", "groupquake classic"},
		Kind:  Bug,
		Evidence: "a classic JoinGroup carrying a member id that got no answer, after which no call carries that member id, while the " +
			"group's last description, taken more than a session and a rebalance timeout after both that JoinGroup and the heal, " +
			"still lists the member id",
		Reproducer: Reproducer{Plan: &PlanReproducer{
			Args:   []string{"--seed", "3402275953908376783", "--scenario", "combined", "--nodes", "3", "--kinds", "java-classic-cooperative,java-consumer,classic-cooperative,consumer", "--duration", "30s"},
			Kafka:  "4.1.2",
			Timing: "m3's JoinGroup must reach the coordinator while __consumer_offsets cannot commit (a replica killed) for longer than offsets.commit.timeout.ms, and m3 must crash before it is answered",
		}},
		seen: orphanedClassicJoins,
	},
	{
		ID:    FindingReconvertDropsRevocation,
		Title: "a downgrade of a consumer group to a classic group and an upgrade back drop a classic member's pending revocation: the partition it still holds goes to another member at once",
		Where: "Kafka group coordinator (ClassicGroup.fromConsumerGroup writes each classic member with its target assignment, not what it still holds; ConsumerGroup.fromClassicGroup makes that its current assignment)",
		Seen:  []string{"Kafka 4.1.2 (run and its rerun: seed 1021641574564730165, churn)", "Kafka 4.1.2, 4.2.1, 4.2.2, 4.3.1, 4.3.2, 4.4.0 (vector, real brokers)", "groupquake classic-cooperative (the holder)"},
		Kind:  Bug,
		Evidence: "a NoDoubleOwnership overlap or a ValidPartitionEpoch conflict one side of which is a classic-protocol member's ownership, begun " +
			"at or before the member epoch at which __consumer_offsets shows its member id holding the partition (current assignment, " +
			"assigned or pending revocation) while its target no longer listed it, when the group was downgraded (the consumer group's " +
			"records followed by a GroupMetadata listing the member id without the partition); the group then upgraded again (the GroupMetadata tombstoned, " +
			"a consumer group written) with the member's first current assignment listing the partition neither assigned nor pending " +
			"revocation; and the other side's ownership begun, by another member id, at or after the epoch whose target first gave the " +
			"partition to a member other than the holder. Without __consumer_offsets read, nothing matches",
		Reproducer: Reproducer{Vector: &VectorReproducer{Step: "consumer/mixed_reconvert_pending_revocation.txt:88", Want: "assignment=[foo/0 foo/1]"}},
		overlap:    reconvertOverlap,
		pair:       reconvertPair,
		seen:       reconvertSightings,
	},
	{
		ID:    FindingClassicRejoinReadmitted,
		Title: "a classic member a consumer group removed when its session expired is re-admitted under its old member id, so it never learns its partitions were given to others",
		Where: "Kafka group coordinator (GroupMetadataManager.classicGroupJoinToConsumerGroup creates the member again: getOrMaybeSubscribeDynamicConsumerGroupMember with createIfNotExists = true, ConsumerGroup.getOrMaybeCreateMember; a classic group answers UNKNOWN_MEMBER_ID)",
		Seen:  []string{"Kafka 4.4.0 (run: seed 2918632487381593263, link faults, 3 nodes)", "Kafka 4.1.2, 4.2.1, 4.2.2, 4.3.1, 4.3.2, 4.4.0 (vector, real brokers)", "groupquake classic-cooperative (the member)"},
		Kind:  Bug,
		Evidence: "a NoDoubleOwnership overlap or a ValidPartitionEpoch conflict at the readmission's epoch, one side of which is a classic-protocol member's " +
			"ownership, begun at or before the member epoch at which __consumer_offsets shows its member id holding the partition when the " +
			"coordinator removed it (its current assignment, target assignment and subscription tombstoned), the member id then written again " +
			"as a new member (its subscription, then a current assignment with previous member epoch 0 at a higher epoch); the other side's " +
			"ownership begun, by the member id the log first shows the partition assigned to after the removal, at or after that member epoch; " +
			"the member's first JoinGroup answered after its ownership began (passing over joins without an answer, answered that the " +
			"coordinator moved, or answered at a generation it held before the removal) carried the same non-empty member id and was answered " +
			"ok at the epoch of the readmission, before the ownership ended, sent at least a session timeout after every earlier heartbeat, join " +
			"or sync carrying the member id had ended and with no LeaveGroup carrying it since the ownership began; no call carrying the member " +
			"id was answered UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID or FENCED_MEMBER_EPOCH while the ownership lasted; and " +
			"the ownership ended revoked, reported at the readmission's epoch, after the member's first SyncGroup of it and before its next " +
			"JoinGroup or SyncGroup. Without __consumer_offsets read after that JoinGroup, nothing matches",
		Reproducer: Reproducer{Vector: &VectorReproducer{Step: "consumer/mixed_classic_rejoin_readmitted.txt:83", Want: "join member=1 gen=",
			// The member was removed: its heartbeat and its SyncGroup
			// with its id are answered UNKNOWN_MEMBER_ID.
			Given: []VectorStep{
				{Step: "consumer/mixed_classic_rejoin_readmitted.txt:71", Want: "UNKNOWN_MEMBER_ID"},
				{Step: "consumer/mixed_classic_rejoin_readmitted.txt:75", Want: "UNKNOWN_MEMBER_ID"},
			}}},
		overlap: readmitOverlap,
		pair:    readmitPair,
		seen:    readmitSightings,
	},
	{
		ID:    FindingKgoRevokeAfterLost,
		Title: "kgo (KIP-848, BlockRebalanceOnPoll) revokes partitions another member already owns after its session expired unnoticed",
		Where: "franz-go (kgo), KIP-848 consumer",
		Seen:  []string{"franz-go v1.22.3 against Kafka 4.4.0"},
		Kind:  Bug,
		Evidence: "a NoDoubleOwnership overlap one side of which is a kgo-consumer member whose ownership ended revoked (not lost) after the " +
			"other's began, which completed no heartbeat from the other's start until it revoked, and whose last ConsumerGroupHeartbeat " +
			"before that got no answer or was answered a session timeout or more earlier (none sent while its application was blocked)",
		Reproducer: Reproducer{Plan: &PlanReproducer{
			Args:   []string{"--seed", "233280483793606687", "--scenario", "combined", "--nodes", "3"},
			Kafka:  "4.4.0",
			Timing: "the kgo member must stay silent (a heartbeat without an answer, or none sent) past its session while it owns partitions",
		}},
		overlap: func(f *facts, a, b *interval, lo int) (string, bool) { return "", kgoRevokeAfterLost(f, a, b, lo) },
		seen:    nil, // seen through NoDoubleOwnership's labelled violations
	},
	{
		ID:    FindingKgoStaticLeave,
		Title: "kgo leaves a consumer-protocol group as a static member (epoch -2) without its instance id, which Kafka refuses with INVALID_REQUEST",
		Where: "franz-go (kgo), KIP-848 consumer (leave848)",
		Seen:  []string{"franz-go v1.22.3 against Kafka 4.1.2 and 4.4.0"},
		Kind:  Bug,
		Evidence: "a kgo-consumer member's leave heartbeat at epoch -2 answered INVALID_REQUEST (no checker judges a leave's answer: " +
			"the instance id stays held until the session expires, which a static bounce then waits out)",
		Reproducer: Reproducer{Plan: &PlanReproducer{
			Args:     []string{"--seed", "2", "--scenario", "member-links", "--nodes", "1", "--kinds", "kgo-consumer", "--members", "3", "--duration", "10s", "--intensity", "low"},
			Kafka:    "4.4.0",
			Embedded: true,
		}},
		seen: func(f *facts) []Sighting {
			var out []Sighting
			for i, e := range f.ev {
				v, ok := f.vals[i].(history.Leave)
				if !ok || e.Type == history.Invoke || v.Epoch != -2 || v.Error != "INVALID_REQUEST" {
					continue
				}
				name := memberName(v.Member, e.Process)
				if f.kinds[name] != "kgo-consumer" {
					continue
				}
				out = append(out, Sighting{Finding: FindingKgoStaticLeave, Member: name, Events: []int64{f.idx(i)},
					What: name + "'s static leave (epoch -2) answered INVALID_REQUEST"})
			}
			return out
		},
	},
	{
		ID:    FindingShareAckErrorApplied,
		Title: "a share acknowledgement answered NOT_LEADER_OR_FOLLOWER by the old share-partition leader was applied: its state write is in __share_group_state and the record never comes back",
		Where: "Kafka share-partition leader (SharePartition.rollbackOrProcessStateUpdates and fetchPersisterError; PersisterStateManager.WriteStateHandler retries a write whose earlier attempt may have landed, and the retry is fenced by the new leader's epoch)",
		Seen:  []string{"Kafka 4.2.1 → 4.4.0 rolling upgrade (run)", "kgo-share (franz-go v1.22.3)", "java-share (KafkaShareConsumer of kafka-clients 4.2.1)"},
		Kind:  Bug,
		Noted: "a rolling upgrade or leader change of the share-partition leader makes it on timing alone; the share checkers take such an answer as an unknown outcome (version.ShareAckMayHaveApplied), so no run's verdict depends on it",
		Evidence: "an accept, reject or gap answered with a per-partition error Kafka may give after the state write landed " +
			"(NOT_LEADER_OR_FOLLOWER, COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_SERVER_ERROR), " +
			"of a record its member acquired last (below the delivery count limit, no acquisition answered after the acknowledgement " +
			"was sent) and no other acknowledgement may have settled, which the final state shows settled as the acknowledgement " +
			"leaves it: the replayed __share_group_state keeps it ACKNOWLEDGED (accept) or ARCHIVED (reject, gap) or below its start " +
			"offset, or, without share_recovery, the final share-partition start offset is past it",
		Reproducer: Reproducer{Plan: &PlanReproducer{
			Args:   []string{"--seed", "13", "--kinds", "share,kgo-share,java-share", "--members", "5", "--partitions", "2", "--nodes", "3", "--upgrade-to", "4.4.0", "--duration", "1m15s"},
			Kafka:  "4.2.1",
			Timing: "an acknowledgement must reach the old share-partition leader as it shuts down, and its first state write must land while its answer is lost (the share coordinator unloading, or the request timing out): 2 of 3974 records in the run that showed it",
		}},
		seen: shareAckErrorApplied,
	},
	{
		ID:    FindingKafkagoSubscription,
		Title: "kafka-go announces ConsumerProtocolSubscription version 1 without owned_partitions, and as leader refuses other clients' subscriptions: a group mixing kafka-go with other clients never completes a generation",
		Where: "segmentio/kafka-go (joingroup.go groupMetadata; consumergroup.go makeJoinGroupRequest, makeMemberProtocolMetadata)",
		Seen:  []string{"kafka-go v0.4.51 against Kafka 4.4.0 (runs, embedded and 3 nodes)", "groupquake classic"},
		Kind:  Bug,
		Evidence: "in a group of kafka-go members and members of another client, a member's error naming a subscription it could not " +
			"read (groupquake's classic leader: \"malformed consumer protocol subscription\"; kafka-go as leader: \"unable to read " +
			"metadata for member\"); when one comes after the heal, the group was still failing to form at the end, and the " +
			"EventuallyConverges, NoLostRecords and RecoveredStateMatchesLog violations are the finding's",
		Upstream: "segmentio/kafka-go issues #762, #1128 and #1156",
		Reproducer: Reproducer{Plan: &PlanReproducer{
			Args:     []string{"--seed", "213", "--scenario", "member-links", "--nodes", "1", "--kinds", "kafkago,kafkago,classic", "--duration", "20s"},
			Kafka:    "4.4.0",
			Embedded: true,
		}},
		seen:     kafkagoSubscriptionRefusals,
		stalls:   kafkagoSubscriptionStall,
		explains: []string{NameEventuallyConverges, NameNoLostRecords, NameRecoveredStateMatchesLog},
	},
}

// Sightings lists every place the history shows a registered finding, in
// registry order: what `groupquake findings rerun` reads to say whether a
// plan reproduced one, and what verdicts.json lists beside the verdicts.
func Sightings(events []history.Event, obs *history.Observations, plan history.Plan) []Sighting {
	f := build(events, obs)
	f.kinds, f.session, f.rebalance = plan.Kinds, plan.SessionTimeout, plan.RebalanceTimeout
	f.plan = plan
	return sightings(f, nil)
}

// sightings is Sightings over built facts; the verdicts' labelled
// violations add the findings seen only through a checker.
func sightings(f *facts, verdicts []Verdict) []Sighting {
	var out []Sighting
	for _, x := range registry {
		if x.seen != nil {
			out = append(out, x.seen(f)...)
		}
		for _, v := range verdicts {
			for _, y := range v.Violations {
				if y.Finding == x.ID && x.seen == nil {
					out = append(out, Sighting{Finding: x.ID, Events: y.EventIndexes, What: v.Name + ": " + y.Message})
				}
			}
		}
	}
	return out
}

// matchLoss returns the finding member tr's loss after its failed call at
// tr.errPos matches.
func matchLoss(f *facts, tr memberTrace) (Finding, bool) {
	if tr.errPos < 0 {
		return Finding{}, false
	}
	for _, x := range registry {
		if x.loss != nil && x.loss(f, tr) {
			return x, true
		}
	}
	return Finding{}, false
}

// matchOverlap returns the finding a NoDoubleOwnership overlap of a and b
// from lo matches (either side), and what else showed it.
func matchOverlap(f *facts, a, b *interval, lo int) (Finding, string, bool) {
	for _, x := range registry {
		if x.overlap == nil {
			continue
		}
		if why, ok := x.overlap(f, a, b, lo); ok {
			return x, why, true
		}
		if why, ok := x.overlap(f, b, a, lo); ok {
			return x, why, true
		}
	}
	return Finding{}, "", false
}

// matchPair returns the finding a ValidPartitionEpoch conflict matches, and
// what else showed it.
func matchPair(f *facts, c pairConflict) (Finding, string, bool) {
	for _, x := range registry {
		if x.pair == nil {
			continue
		}
		if why, ok := x.pair(f, c); ok {
			return x, why, true
		}
	}
	return Finding{}, "", false
}

// moveWindow is how close to a coordinator move a static member's fatal
// answer must come to be the deposed coordinator's.
const moveWindow = 15 * time.Second

// CoordinatorMoved reports whether an answer's Kafka error says the node
// asked is not (or not yet) the group's coordinator: it moved or is
// loading. Such an answer completes a call as failed, or as unknown when
// the call writes records (a heartbeat of the consumer protocol, a classic
// JoinGroup or SyncGroup: the write may have timed out and still land).
func CoordinatorMoved(err string) bool {
	switch err {
	case "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS":
		return true
	}
	return false
}

// movedBefore reports whether one of the moves (positions of answers that
// said the coordinator moved) came before pos and within moveWindow of it.
func movedBefore(f *facts, moves []int, pos int) bool {
	at := f.ev[pos].Time
	return slices.ContainsFunc(moves, func(p int) bool { return p < pos && at-f.ev[p].Time <= moveWindow })
}

func callMember(v any, process string) string {
	if c, ok := joinSyncHeartbeat(v); ok {
		return memberName(c.Member, process)
	}
	return ""
}

func callError(v any) string {
	c, _ := joinSyncHeartbeat(v)
	return c.Error
}

// joinSyncHeartbeat is what v names as a call when it is a join, sync or
// heartbeat payload.
func joinSyncHeartbeat(v any) (history.CallFacts, bool) {
	switch v := v.(type) {
	case history.Join, history.Sync, history.Heartbeat:
		return v.(history.GroupCall).Call(), true
	}
	return history.CallFacts{}, false
}

// heartbeatErrors are the failed heartbeats that match.
func heartbeatErrors(f *facts, id string, match func(history.Heartbeat) bool) []Sighting {
	var out []Sighting
	for i, e := range f.ev {
		v, ok := f.vals[i].(history.Heartbeat)
		if !ok || e.Type != history.Fail || !match(v) {
			continue
		}
		name := memberName(v.Member, e.Process)
		out = append(out, Sighting{Finding: id, Member: name, Events: []int64{f.idx(i)},
			What: name + "'s ConsumerGroupHeartbeat at epoch " + itoa(int64(v.Epoch)) + " answered " + v.Error})
	}
	return out
}

// ownerRE reads the owner out of Kafka's UNRELEASED_INSTANCE_ID message
// (GroupMetadataManager.throwIfInstanceIdIsUnreleased), where a member
// recorded it.
var ownerRE = regexp.MustCompile(`cannot join the group because the instance id is owned by (\S+) member`)

// selfRefusedRejoins finds the static members refused their own instance
// id: a ConsumerGroupHeartbeat at epoch 0 answered UNRELEASED_INSTANCE_ID
// where the member id sent is the only one that can own the instance id.
// Going through the history, per instance id: the member id of the last
// acknowledged call that carried it (none once that member id's leave was
// acknowledged), and the member ids of calls carrying it whose outcome is
// unknown since (a join whose answer was lost may have been applied). The
// refusal is the member's own when every one of them is its member id; a
// message naming the owner settles it either way.
func selfRefusedRejoins(f *facts) []Sighting {
	type holder struct {
		id  string
		pos int // the call that made it a possible owner (its completion, or its invoke when it never completed)
	}
	acked := map[string]holder{}     // instance id → last acknowledged holder
	unknown := map[string][]holder{} // instance id → unknown outcomes since
	owner := map[string]string{}     // member id → its instance id, as its calls say
	var out []Sighting
	possible := func(inst string, h holder) {
		unknown[inst] = append(unknown[inst], h)
	}
	for i, e := range f.ev {
		var id, inst string
		okCall, refused := false, false
		switch v := f.vals[i].(type) {
		case history.Heartbeat:
			id, inst = v.MemberID, v.InstanceID
			okCall = e.Type == history.OK && (v.Protocol != history.ProtocolConsumer || v.ResultEpoch > 0)
			refused = e.Type == history.Fail && v.Protocol == history.ProtocolConsumer && v.Error == "UNRELEASED_INSTANCE_ID" && v.Epoch == 0
		case history.Join:
			id, inst = v.MemberID, v.InstanceID
			okCall = e.Type == history.OK && v.Generation >= 0
		case history.Leave:
			if e.Type == history.OK && v.Error == "" {
				if in := owner[v.MemberID]; in != "" && acked[in].id == v.MemberID {
					delete(acked, in)
				}
			}
			continue
		default:
			continue
		}
		if inst == "" || id == "" {
			continue
		}
		owner[id] = inst
		switch {
		case e.Type == history.Invoke:
			if f.partner[i] < 0 {
				possible(inst, holder{id, i}) // never answered
			}
		case e.Type == history.Info:
			possible(inst, holder{id, i})
		case okCall:
			acked[inst] = holder{id, i}
			inv := f.partner[i]
			kept := unknown[inst][:0]
			for _, h := range unknown[inst] {
				if h.pos > inv { // sent after this call: may have been applied after it
					kept = append(kept, h)
				}
			}
			unknown[inst] = kept
		case refused:
			hb := f.vals[i].(history.Heartbeat)
			name := memberName(hb.Member, e.Process)
			if m := ownerRE.FindStringSubmatch(f.answerMessage(i, name)); m != nil {
				if m[1] == id {
					out = append(out, Sighting{Finding: FindingStaticRejoinOwnInstance, Member: name, Events: []int64{f.idx(f.partner[i]), f.idx(i)},
						What: name + "'s join at epoch 0 as " + id + " with instance id " + inst + " (event " + itoa(f.idx(f.partner[i])) + ") refused UNRELEASED_INSTANCE_ID (event " + itoa(f.idx(i)) + ") naming " + id + " itself as the owner"})
				}
				continue
			}
			cands := unknown[inst]
			if a, ok := acked[inst]; ok {
				cands = append([]holder{a}, cands...)
			}
			if len(cands) == 0 || slices.ContainsFunc(cands, func(h holder) bool { return h.id != id }) {
				continue
			}
			ev := []int64{}
			for _, h := range cands {
				ev = append(ev, f.idx(h.pos))
			}
			ev = append(ev, f.idx(f.partner[i]), f.idx(i))
			out = append(out, Sighting{Finding: FindingStaticRejoinOwnInstance, Member: name, Events: ev,
				What: name + "'s join at epoch 0 as " + id + " with instance id " + inst + " (event " + itoa(f.idx(f.partner[i])) + ") refused UNRELEASED_INSTANCE_ID (event " + itoa(f.idx(i)) + "), and no member id but " + id + " can hold " + inst + " (event " + itoa(f.idx(cands[len(cands)-1].pos)) + ")"})
		}
	}
	return out
}

// kgoRevokeAfterLost: a's side of an overlap with b (from lo) is a kgo-consumer member that
// revoked, after b's ownership began, a partition it held through a session the coordinator had
// ended: it completed no heartbeat from lo to the revocation, and before lo its last heartbeat got
// no answer, or was answered a session timeout or more before lo (kgo sent none while its
// application was blocked in a poll).
func kgoRevokeAfterLost(f *facts, a, b *interval, lo int) bool {
	name := f.mems[a.member]
	if f.kinds[name] != "kgo-consumer" || a.endKind != endRevoked || a.end <= b.start || a.end >= len(f.ev) {
		return false
	}
	for i := lo; i < a.end; i++ {
		if v, ok := f.vals[i].(history.Heartbeat); ok && f.ev[i].Type == history.OK && memberName(v.Member, f.ev[i].Process) == name {
			return false // it heard the coordinator while the other owned the partition
		}
	}
	last := -1 // the last heartbeat invoke of a's member before lo
	for i := lo - 1; i >= a.start; i-- {
		if v, ok := f.vals[i].(history.Heartbeat); ok && f.ev[i].Type == history.Invoke && memberName(v.Member, f.ev[i].Process) == name {
			last = i
			break
		}
	}
	if last < 0 {
		return false
	}
	p := f.partner[last]
	if p < 0 || f.ev[p].Type == history.Info {
		return true // no answer
	}
	return f.ev[p].Type == history.OK && f.session > 0 && f.ev[lo].Time-f.ev[p].Time >= f.session
}

// answerMessage is what the member recorded of the answer at position i:
// the completion's why, and the why of the error it reported right after
// (groupquake's members put Kafka's error message there).
func (f *facts) answerMessage(i int, member string) string {
	msg := f.ev[i].Why
	for j := i + 1; j < len(f.ev) && j <= i+8 && f.ev[j].Time-f.ev[i].Time <= time.Second; j++ {
		if e := f.ev[j]; e.Type == history.Info && e.F == "error" && memberName("", e.Process) == member {
			msg += "\n" + e.Why
		}
	}
	return msg
}

// orphanedClassicJoins finds the classic members a consumer group keeps for
// good after their JoinGroup timed out in the coordinator: a JoinGroup
// carrying member id X that got no answer, after which no call of the
// history carries X, while the group's last description (the final
// snapshot, else the last describe), taken more than a session and a
// rebalance timeout after both that JoinGroup and the heal, still lists X.
// A member the coordinator applied and answered has its session and sync
// timeouts running and is gone by then; one whose join's append timed out
// has neither (GroupMetadataManager.classicGroupJoinToConsumerGroup).
func orphanedClassicJoins(f *facts) []Sighting {
	var out []Sighting
	for _, o := range classicJoinOrphans(f) {
		out = append(out, o.Sighting)
	}
	return out
}

// orphan is one sighting of FindingClassicJoinOrphan with the partitions
// the coordinator keeps as the orphan's target: no member consumes them.
type orphan struct {
	Sighting
	memberID string
	target   []history.TP
}

// orphanTails maps each partition of an orphan's target to the orphan:
// records of it past the last one consumed are the finding's losses.
func orphanTails(f *facts) map[history.TP]orphan {
	out := map[history.TP]orphan{}
	for _, o := range classicJoinOrphans(f) {
		for _, tp := range o.target {
			out[tp] = o
		}
	}
	return out
}

func classicJoinOrphans(f *facts) []orphan {
	if f.session <= 0 || f.rebalance <= 0 {
		return nil
	}
	var g *history.GroupDescription
	var at time.Duration
	label := ""
	for _, s := range f.snaps {
		if s.final && s.s.Group != nil {
			g, at, label = s.s.Group, s.s.Time, "the final observation"
			if at == 0 && len(f.ev) > 0 {
				at = f.ev[len(f.ev)-1].Time
			}
		}
	}
	if g == nil && len(f.describes) > 0 {
		pos := f.describes[len(f.describes)-1]
		if d := f.vals[pos].(history.Describe); d.Group != nil {
			g, at, label = d.Group, f.ev[pos].Time, "the describe at event "+itoa(f.idx(pos))
		}
	}
	if g == nil || g.Protocol != history.ProtocolConsumer {
		return nil
	}
	listed := map[string]history.MemberDescription{}
	for _, m := range g.Members {
		listed[m.MemberID] = m
	}
	var healT time.Duration
	if h := f.lastPhase(history.PhaseHeal); h >= 0 {
		healT = f.ev[h].Time
	}
	lastUse := map[string]int{} // member id → position of the last event carrying it
	for i := range f.ev {
		if id := carriedMemberID(f.vals[i]); id != "" {
			lastUse[id] = i
		}
	}
	var out []orphan
	for i, e := range f.ev {
		j, ok := f.vals[i].(history.Join)
		if !ok || e.Type != history.Invoke || j.MemberID == "" {
			continue
		}
		p := f.partner[i]
		if p >= 0 && f.ev[p].Type != history.Info {
			continue // answered
		}
		if lastUse[j.MemberID] > max(i, p) {
			continue // the member id came back
		}
		m, ok := listed[j.MemberID]
		if !ok || (m.MemberType != "" && m.MemberType != "classic") {
			continue
		}
		since := max(e.Time, healT)
		if at-since <= f.session+f.rebalance {
			continue
		}
		name := memberName(j.Member, e.Process)
		ev := []int64{f.idx(i)}
		if p >= 0 {
			ev = append(ev, f.idx(p))
		}
		out = append(out, orphan{Sighting: Sighting{Finding: FindingClassicJoinOrphan, Member: name, Events: ev,
			What: fmt.Sprintf("%s's JoinGroup as %s (event %d) got no answer and no later call carries the member id; %s, %s after it (and %s after the heal), still lists it at member epoch %d of assignment epoch %d, target %v",
				name, j.MemberID, f.idx(i), label, dur(at-e.Time), dur(at-healT), m.MemberEpoch, g.AssignmentEpoch, m.TargetAssignment)},
			memberID: j.MemberID, target: m.TargetAssignment})
	}
	return out
}

// carriedMemberID is the member id a call's payload carries, if any.
func carriedMemberID(v any) string {
	if c, ok := v.(history.GroupCall); ok {
		return c.Call().MemberID
	}
	return ""
}

// subscriptionRefusedRE matches a member's error about another member's
// subscription it could not read: groupquake's classic leader
// (clients/assign, pinned by its TestVersionOneWithoutOwnedRefused) and
// kafka-go's leader (ConsumerGroup.Next).
var subscriptionRefusedRE = regexp.MustCompile(`malformed consumer protocol subscription|unable to read metadata for member`)

// kafkagoSubscriptionErrors are the positions of the members' errors about
// a subscription they could not read, in a group that mixes kafka-go
// with another client (none otherwise).
func kafkagoSubscriptionErrors(f *facts) []int {
	kafkago, other := false, false
	for _, k := range f.kinds {
		kafkago = kafkago || k == "kafkago"
		other = other || k != "kafkago"
	}
	if !kafkago || !other {
		return nil
	}
	var out []int
	for i, e := range f.ev {
		if e.Type != history.Info || e.F != "error" {
			continue
		}
		if subscriptionRefusedRE.MatchString(infoError(e)) {
			out = append(out, i)
		}
	}
	return out
}

// kafkagoSubscriptionRefusals sights FindingKafkagoSubscription once per
// member that reported it, citing its first and last report.
func kafkagoSubscriptionRefusals(f *facts) []Sighting {
	first, last, n := map[string]int{}, map[string]int{}, map[string]int{}
	var order []string
	for _, i := range kafkagoSubscriptionErrors(f) {
		name := memberName("", f.ev[i].Process)
		if n[name] == 0 {
			first[name] = i
			order = append(order, name)
		}
		last[name] = i
		n[name]++
	}
	var out []Sighting
	for _, name := range order {
		ev := dedupSorted([]int64{f.idx(first[name]), f.idx(last[name])})
		out = append(out, Sighting{Finding: FindingKafkagoSubscription, Member: name, Events: ev,
			What: fmt.Sprintf("%s (%s) could not read another member's subscription %d time(s), first at event %d, last at event %d",
				name, f.kinds[name], n[name], f.idx(first[name]), f.idx(last[name]))})
	}
	return out
}

// kafkagoSubscriptionStall says whether a member still could not read a
// subscription after the heal, citing the last such error: the group was
// still failing to form when the run was judged.
func kafkagoSubscriptionStall(f *facts) ([]int64, bool) {
	heal := f.lastPhase(history.PhaseHeal)
	errs := kafkagoSubscriptionErrors(f)
	if heal < 0 || len(errs) == 0 || errs[len(errs)-1] < heal {
		return nil, false
	}
	return []int64{f.idx(errs[len(errs)-1])}, true
}

// labelStalls labels with a finding the unlabelled violations of the
// checkers it explains, when the history shows it keeping the group from
// forming to the end (Finding.stalls). Such a finding is a bug that fails
// the run (TestFindingsRegistry): labelling names the cause of a red
// verdict, it never turns one green.
func labelStalls(f *facts, vs []Verdict) {
	for _, x := range registry {
		if x.stalls == nil {
			continue
		}
		at, ok := x.stalls(f)
		if !ok {
			continue
		}
		for i := range vs {
			v := &vs[i]
			if !slices.Contains(x.explains, v.Name) {
				continue
			}
			n := 0
			for j := range v.Violations {
				if y := &v.Violations[j]; y.Finding == "" {
					y.Finding, y.Message = x.ID, "known bug "+x.ID+": "+y.Message
					n++
				}
			}
			if n > 0 {
				v.Known = append(v.Known, Known{Finding: x.ID, Events: at, Failed: true})
			}
		}
	}
}

// infoError is the error an info event's payload carries ({"error": ...}),
// whether it was recorded from a map or read back as raw JSON.
func infoError(e history.Event) string {
	var v struct {
		Error string `json:"error"`
	}
	if b, err := json.Marshal(e.Value); err == nil && json.Unmarshal(b, &v) == nil {
		return v.Error
	}
	return ""
}
