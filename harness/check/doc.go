// Package check judges a run: every checker is a pure function of the history (harness/history
// events) and the observations, so `groupquake check RUN_DIR` can re-run it offline on a saved run.
// Nothing here talks to a cluster or imports the coordinator; the one checker that needs the
// coordinator's replay (RecoveredStateMatchesLog) takes it as a function value.
//
// The checkers and the property each one keeps (names follow the TLA+ model of KIP-848 where one
// exists; docs/design.md "What is checked"):
//
//  1. NoDoubleOwnership: two members never own one partition at the same time, unless one of them
//     had been fenced (its ownership ended in "lost") and shows no sign of a valid session during
//     the overlap: no successful heartbeat, join, sync or commit of that partition sent after the
//     other member's ownership began.
//  2. ValidPartitionEpoch: a (partition, member epoch or generation) pair has one owner over the
//     whole run (the broker's own invariant in ConsumerGroup.addPartitionEpochs), per incarnation
//     of the group; a static member's pair passes to the next member of the history under its
//     instance id once the first gave the partition up (a bounce: Kafka hands the newcomer the
//     member's place, assignment and epoch; facts.go, findInstances).
//  3. EpochMonotonic: generations, member epochs, group and assignment epochs never go back inside
//     one incarnation of the group, as far as Kafka wrote them (a classic generation only answered to
//     JoinGroup or Heartbeat counts once a SyncGroup at it succeeded).
//  4. FencedCommitsRejected: an accepted commit came from the member that owned the partition at
//     the commit's generation or epoch in the group's incarnation (for a pair handed over between
//     static members, before the next one took it over), and not after the partition moved on to a
//     newer owner; a stale commit is rejected with an error the protocol names.
//  5. CommittedOffsetMonotonic: committed offsets never go back unless a commit marked Reset did it.
//  6. NoLostRecords: every acknowledged record is consumed.
//  7. BoundedDuplicates: a record consumed twice is explained by a change of ownership, and it was
//     not covered by a commit acknowledged before the new ownership began.
//  8. EventuallyConverges: after the heal, every partition is owned by exactly one member and the
//     group is Stable within a bound computed from the plan's timers, with every member the harness
//     runs in it (a member that stopped for good, or stayed out longer than the bound, is named;
//     a loss that matches a registered finding, findings.go, is noted or failed as the finding's
//     kind says, with its share of the run's member-seconds), and no static member was refused its
//     own instance id (finding kafka-static-rejoin-own-instance), whether or not it came back.
//     A time the harness itself did not run (history.FStall) is not charged to the group
//     (stall.go).
//
// Findings (findings.go) is the registry of what runs found in Kafka and its clients: a violation
// or a member's loss that matches one names its id (Violation.Finding, Verdict.Known), and
// Report.Findings lists every place a history shows one.
//  9. DurableCommits: every snapshot of committed offsets shows, for each partition, the latest
//     acknowledged commit or one that could have superseded it.
//  10. RecoveredStateMatchesLog: replaying __consumer_offsets gives the group the broker describes.
//  11. ConsumedOnlyOwned: every record a member consumed was of a partition it owned at that moment
//     (clients.Member's contract: Poll never hands out a partition given up or not yet given).
//  12. CommittedBeforeRevoked: a KIP-848 member that commits on its own commits what it consumed of
//     a partition before it reports revoking it (Java's autoCommitSyncBeforeRevocation).
//
// An incarnation of the group is what Kafka numbers epochs in: a group deleted and created again,
// or an empty consumer group converted by a classic JoinGroup, starts over at epoch 1. A new
// incarnation is recognized only where the history proves the group had no member and the
// __consumer_offsets log shows it deleted or converted (incarnation.go); without that proof the
// run is one incarnation.
//
// Order is taken only from evidence that fixes it (evidence.go, docs/checkers-evidence.md): where
// __consumer_offsets, read after both writes were acknowledged, shows one write before another, that
// is their order, whatever the history says; otherwise a call that completed before another was
// invoked came first; calls that overlap are concurrent and never ordered by their answers, and so
// are observer reads (a snapshot lasts from its history_len to its history_end). A snapshot taken
// after events the history lost is not judged against it.
//
// RebalanceCost is a measurement, not a checker; so are MeasurePressure, MeasureImpact and Epochs
// (pressure.go, impact.go), and Phases reads a history's phase markers for all of them and for
// harness/run. The results package presents what they measure.
//
// Ownership is built from the members' own reports (assigned, revoked, lost, fenced, left,
// session-expired) in history order; see the ordering rules in harness/history's vocabulary.
package check
