package check

import "github.com/groupquake/groupquake/harness/history"

// Groups says which groups a checker judges.
type Groups uint8

const (
	// ConsumerGroups are classic and consumer-protocol (KIP-848) groups.
	ConsumerGroups Groups = 1 << iota
	// ShareGroups are KIP-932 share groups.
	ShareGroups
	// AnyGroup is every group: the checkers of the history itself.
	AnyGroup = ConsumerGroups | ShareGroups
)

// The names of the consumer-group checkers, as verdicts carry them. Other
// packages name a checker through these, never through a string of their own.
const (
	NameHistoryWellFormed        = "HistoryWellFormed"
	NameNoDoubleOwnership        = "NoDoubleOwnership"
	NameValidPartitionEpoch      = "ValidPartitionEpoch"
	NameEpochMonotonic           = "EpochMonotonic"
	NameFencedCommitsRejected    = "FencedCommitsRejected"
	NameCommittedOffsetMonotonic = "CommittedOffsetMonotonic"
	NameNoLostRecords            = "NoLostRecords"
	NameBoundedDuplicates        = "BoundedDuplicates"
	NameEventuallyConverges      = "EventuallyConverges"
	NameDurableCommits           = "DurableCommits"
	NameConsumedOnlyOwned        = "ConsumedOnlyOwned"
	NameCommittedBeforeRevoked   = "CommittedBeforeRevoked"
	NameRecoveredStateMatchesLog = "RecoveredStateMatchesLog"
)

// A Checker is one property groupquake asserts over a run: its name, the
// groups it judges, what it asserts in a sentence (the README's glossary
// says the same), and the judgement itself. A new checker is a file with its
// judgement and one entry in Checkers.
type Checker struct {
	Name    string
	Groups  Groups
	Asserts string
	judge   func(in *judging) Verdict
}

// judging is what every judgement may read: the decoded history, the final
// observations, the plan and All's options.
type judging struct {
	f    *facts
	obs  *history.Observations
	plan history.Plan
	o    options
}

// Checkers are the consumer-group checkers in the order of their verdicts.
// The share-group checkers (share.go) follow them in a run with share
// members.
var Checkers = []Checker{
	{NameHistoryWellFormed, AnyGroup,
		"the history itself follows the rules: every answer pairs with its request, no member has two calls of one kind open",
		func(in *judging) Verdict { return wellFormedWith(in.f, in.o) }},
	{NameNoDoubleOwnership, ConsumerGroups,
		"two members with valid sessions never own one partition at the same time",
		func(in *judging) Verdict { return noDoubleOwnership(in.f) }},
	{NameValidPartitionEpoch, ConsumerGroups,
		"a (partition, member epoch or generation) pair has one owner over the whole run",
		func(in *judging) Verdict { return validPartitionEpoch(in.f) }},
	{NameEpochMonotonic, ConsumerGroups,
		"generations and member, group and assignment epochs never go back, as far as Kafka wrote them",
		func(in *judging) Verdict { return epochMonotonic(in.f, in.obs) }},
	{NameFencedCommitsRejected, ConsumerGroups,
		"an accepted commit came from the partition's owner at its epoch; a stale or zombie commit is rejected with the error the protocol names",
		func(in *judging) Verdict { return fencedCommitsRejected(in.f) }},
	{NameCommittedOffsetMonotonic, ConsumerGroups,
		"committed offsets never go back unless the workload reset them",
		func(in *judging) Verdict { return committedOffsetMonotonic(in.f, in.obs) }},
	{NameNoLostRecords, ConsumerGroups,
		"every record the brokers acknowledged to a producer is consumed",
		func(in *judging) Verdict { return noLostRecords(in.f) }},
	{NameBoundedDuplicates, ConsumerGroups,
		"every record consumed twice is explained by a change of ownership not covered by an acknowledged commit",
		func(in *judging) Verdict { return boundedDuplicates(in.f) }},
	{NameEventuallyConverges, ConsumerGroups,
		"after the heal, every partition is owned by exactly one member, the group is Stable within a bound computed from its timers, and every member the harness runs is in it",
		func(in *judging) Verdict { return eventuallyConverges(in.f, in.obs, in.plan) }},
	{NameDurableCommits, ConsumerGroups,
		"every read of committed offsets shows the latest acknowledged commit, or one that could have superseded it",
		func(in *judging) Verdict { return durableCommits(in.f, in.obs) }},
	{NameConsumedOnlyOwned, ConsumerGroups,
		"every record a member consumed was of a partition it owned at that moment",
		func(in *judging) Verdict { return consumedOnlyOwned(in.f) }},
	{NameCommittedBeforeRevoked, ConsumerGroups,
		"a KIP-848 member that commits on its own commits what it consumed before it gives a partition up",
		func(in *judging) Verdict { return committedBeforeRevoked(in.f) }},
	{NameRecoveredStateMatchesLog, ConsumerGroups,
		"replaying the group's `__consumer_offsets` records through the reference coordinator gives the group the broker describes",
		func(in *judging) Verdict { return RecoveredStateMatchesLog(in.obs, in.o.replay) }},
}

// Named is the checker of that name among Checkers.
func Named(name string) (Checker, bool) {
	for _, c := range Checkers {
		if c.Name == name {
			return c, true
		}
	}
	return Checker{}, false
}
