package kinds

import (
	"maps"
	"slices"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/classic"
	"github.com/groupquake/groupquake/clients/consumer"
	"github.com/groupquake/groupquake/harness/check"
)

// BrokenKind is a member kind that carries one deliberate bug, and what
// must catch it. suites/bite runs each against real clusters and requires
// the checker Catches to fail, and to hold when the same plan runs with
// the Unbroken kind.
type BrokenKind struct {
	Name string
	// Unbroken is the kind it breaks.
	Unbroken string
	// Bug says what it does wrong.
	Bug string
	// Catches names the checker (a check.Verdict name) that names the bug.
	Catches string
	// Fence says the bug shows only when the member is fenced: the plan
	// must cut the member off for longer than its session.
	Fence bool
	// GiveUp says the bug shows when a call gets no answer: the plan must
	// cut the member off for a moment, shorter than its session.
	GiveUp bool
	new    func(MemberSpec) (clients.Member, error)
}

// BrokenKinds lists the broken member kinds. They are never in
// Default, so a seed never draws them; Broken holds them
// and Registry.WithBroken adds the ones a user names (groupquake run
// --kinds broken-...).
//
// Every broken kind is its unbroken kind built with one more option, the
// member package's WithBug: the same factory, the same links and timers,
// one deliberate defect (clients/classic/bugs.go, clients/consumer/bugs.go;
// the broken share kinds likewise use clients/share's WithBug).
func BrokenKinds() []BrokenKind {
	classicBug := func(b classic.Bug) func(MemberSpec) (clients.Member, error) {
		return classicFactory(classic.WithBug(b))
	}
	consumerBug := func(b consumer.Bug) func(MemberSpec) (clients.Member, error) {
		return consumerFactory(consumer.WithBug(b))
	}
	return []BrokenKind{
		{
			Name: "broken-consumer-fetch-after-revoke", Unbroken: "consumer", Catches: check.NameConsumedOnlyOwned,
			Bug: "keeps fetching and handing out a partition's records after it reported revoking it",
			new: consumerBug(consumer.BugFetchAfterRevoke),
		},
		{
			Name: "broken-classic-fetch-after-revoke", Unbroken: "classic", Catches: check.NameConsumedOnlyOwned,
			Bug: "keeps fetching and handing out a partition's records after it reported revoking it",
			new: classicBug(classic.BugFetchAfterRevoke),
		},
		{
			Name: "broken-classic-ignore-fence", Unbroken: "classic", Catches: check.NameNoDoubleOwnership, Fence: true,
			Bug: "ignores a fence: when its session has ended it neither gives its partitions up nor stops reading them",
			new: classicBug(classic.BugIgnoreFence),
		},
		{
			Name: "broken-classic-stale-commit", Unbroken: "classic", Catches: check.NameDurableCommits,
			Bug: "commits with the first generation it was given and treats the coordinator's ILLEGAL_GENERATION as success",
			new: classicBug(classic.BugStaleCommit),
		},
		{
			Name: "broken-consumer-ack-before-revoke", Unbroken: "consumer", Catches: check.NameNoDoubleOwnership,
			Bug: "acknowledges a reconciliation before giving up the revoked partitions, which it keeps consuming for 3s",
			new: consumerBug(consumer.BugAckBeforeRevoke),
		},
		{
			Name: "broken-consumer-give-up", Unbroken: "consumer", Catches: check.NameEventuallyConverges, GiveUp: true,
			Bug: "stops for good when a heartbeat gets no answer, where Java retries after a backoff",
			new: consumerBug(consumer.BugGiveUpOnNoAnswer),
		},
		{
			Name: "broken-consumer-skip-commit-before-revoke", Unbroken: "consumer", Catches: check.NameCommittedBeforeRevoked,
			Bug: "revokes partitions without the auto-commit that must come first",
			new: consumerBug(consumer.BugSkipCommitBeforeRevoke),
		},
	}
}

func init() {
	register(Family{
		Help:     "deliberately broken kinds",
		Names:    Broken().Names(),
		Registry: Broken,
	})
}

// Broken returns the broken member kinds as a registry.
func Broken() Registry {
	def := Default()
	r := Registry{}
	for _, k := range BrokenKinds() {
		u := def[k.Unbroken]
		r[k.Name] = Factory{
			Protocol:       u.Protocol,
			Offers:         u.Offers,
			Doc:            "DELIBERATELY BROKEN " + k.Unbroken + " member: " + k.Bug + "; caught by " + k.Catches,
			New:            k.new,
			ResendsCommits: u.ResendsCommits,
		}
	}
	return r
}

// WithBroken returns r plus the broken kinds and the share kinds among
// named: either runs only when it is asked for by name.
func (r Registry) WithBroken(named []string) Registry {
	b := Broken()
	for _, k := range ShareKinds() { // share kinds run only when named too (share.go)
		b[k.Name] = shareFactory(k)
	}
	out := maps.Clone(r)
	for _, n := range named {
		if f, ok := b[n]; ok && !slices.Contains(r.Names(), n) {
			out[n] = f
		}
	}
	return out
}
