package run

import (
	"maps"
	"slices"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/broken"
	"github.com/groupquake/groupquake/clients/consumer"
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
// DefaultRegistry, so a seed never draws them; BrokenRegistry holds them
// and Registry.WithBroken adds the ones a user names (groupquake run
// --kinds broken-...).
func BrokenKinds() []BrokenKind {
	wrap := func(bug broken.Bug, unbroken string) func(MemberSpec) (clients.Member, error) {
		return func(s MemberSpec) (clients.Member, error) {
			return broken.Wrap(bug, broken.Config{Name: s.Name, Group: s.Group, KgoOpts: s.KgoOpts, Hooks: s.Hooks}, func(h clients.Hooks) (clients.Member, error) {
				s.Hooks = h
				return DefaultRegistry()[unbroken].New(s)
			})
		}
	}
	withBug := func(bug consumer.Bug) func(MemberSpec) (clients.Member, error) {
		return func(s MemberSpec) (clients.Member, error) {
			return consumer.New(s.Name, s.Group,
				consumer.KgoOpts(s.KgoOpts...), consumer.Topics(s.Topics...), consumer.WithHooks(s.Hooks),
				consumer.WithClock(specClock(s.Now)), consumer.RebalanceTimeout(s.RebalanceTimeout),
				consumer.WithBug(bug))
		}
	}
	return []BrokenKind{
		{
			Name: "broken-consumer-fetch-after-revoke", Unbroken: "consumer", Catches: "ConsumedOnlyOwned",
			Bug: "keeps fetching and handing out a partition's records after it reported revoking it",
			new: wrap(broken.FetchAfterRevoke, "consumer"),
		},
		{
			Name: "broken-classic-fetch-after-revoke", Unbroken: "classic", Catches: "ConsumedOnlyOwned",
			Bug: "keeps fetching and handing out a partition's records after it reported revoking it",
			new: wrap(broken.FetchAfterRevoke, "classic"),
		},
		{
			Name: "broken-classic-ignore-fence", Unbroken: "classic", Catches: "NoDoubleOwnership", Fence: true,
			Bug: "ignores a fence: when its session has ended it neither gives its partitions up nor stops reading them",
			new: wrap(broken.IgnoreFence, "classic"),
		},
		{
			Name: "broken-classic-stale-commit", Unbroken: "classic", Catches: "DurableCommits",
			Bug: "commits with the first generation it was given and treats the coordinator's ILLEGAL_GENERATION as success",
			new: wrap(broken.StaleCommit, "classic"),
		},
		{
			Name: "broken-consumer-ack-before-revoke", Unbroken: "consumer", Catches: "NoDoubleOwnership",
			Bug: "acknowledges a reconciliation before giving up the revoked partitions, which it keeps consuming for 3s",
			new: withBug(consumer.BugAckBeforeRevoke),
		},
		{
			Name: "broken-consumer-give-up", Unbroken: "consumer", Catches: "EventuallyConverges", GiveUp: true,
			Bug: "stops for good when a heartbeat gets no answer, where Java retries after a backoff",
			new: withBug(consumer.BugGiveUpOnNoAnswer),
		},
		{
			Name: "broken-consumer-skip-commit-before-revoke", Unbroken: "consumer", Catches: "CommittedBeforeRevoked",
			Bug: "revokes partitions without the auto-commit that must come first",
			new: withBug(consumer.BugSkipCommitBeforeRevoke),
		},
	}
}

// BrokenRegistry returns the broken member kinds as a registry.
func BrokenRegistry() Registry {
	def := DefaultRegistry()
	r := Registry{}
	for _, k := range BrokenKinds() {
		u := def[k.Unbroken]
		r[k.Name] = Factory{
			Protocol:       u.Protocol,
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
	b := BrokenRegistry()
	for _, k := range ShareKinds() { // share kinds run only when named too (share_run.go)
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
