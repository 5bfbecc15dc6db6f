package kinds

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/assign"
	"github.com/groupquake/groupquake/clients/classic"
	"github.com/groupquake/groupquake/clients/consumer"
	"github.com/groupquake/groupquake/clients/kgoref"
)

// MemberSpec is what a factory gets to build one member of a run.
type MemberSpec struct {
	Name   string
	Group  string
	Topics []string
	// KgoOpts route the member's connections through its own links (seed
	// brokers and dialer); a member must use them for every connection, or
	// link faults miss it.
	KgoOpts []kgo.Opt
	// Hooks records the member's events into the history.
	Hooks clients.Hooks
	// InstanceID, when set, makes the member static (group.instance.id).
	InstanceID string
	// Timers are the plan's: the classic session timeout and heartbeat
	// interval, the rebalance timeout, and max.poll.interval.ms (0: the
	// member's default).
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	RebalanceTimeout  time.Duration
	PollInterval      time.Duration
	// Now is the run's clock.
	Now func() time.Time
	// KafkaClients is the Kafka client library version a member that runs
	// one (the Java kinds) uses: the plan's --kafka-clients, else the
	// cluster's version.
	KafkaClients string
	// JavaJVMs is the plan's layout of the Java members' JVMs
	// (JavaJVMsShared, or empty: one JVM per member).
	JavaJVMs string
}

// Factory builds members of one kind.
type Factory struct {
	// Protocol is the group protocol the kind speaks.
	Protocol clients.Protocol
	// Doc says what the kind is, for `groupquake run -h`.
	Doc string
	New func(MemberSpec) (clients.Member, error)
	// Offers lists, for a kind of the classic protocol, the assignors its
	// JoinGroup offers (the protocol names, in its order of preference);
	// nil for the consumer protocol, or a kind whose offer is not known (a
	// user's process kind). CheckClassicMix reads it.
	Offers []string
	// NoInstanceID, when set, says why the kind cannot be a static member
	// (its client has no group.instance.id); a plan never gives it an
	// instance id (NoInstanceID).
	NoInstanceID string
	// ResendsCommits says the member's client may send one OffsetCommit
	// more than once on its own, so a final error does not prove the commit
	// was not written (harness/run's ResendsCommits hook option).
	ResendsCommits bool
}

// Registry maps a member kind ("kgo-classic") to its factory. Plans name
// kinds, so a new implementation plugs in by adding an entry: to Default
// when a seed may draw it, else to a Family of its own (family.go).
type Registry map[string]Factory

// Default returns a new registry of the member kinds a seed draws from:
// kgo's own group consumer in either protocol, groupquake's members.
func Default() Registry {
	return Registry{
		"kgo-classic": {
			Protocol:       clients.Classic,
			Doc:            "kgo's classic group consumer (JoinGroup/SyncGroup, cooperative-sticky)",
			Offers:         []string{assignCoopSticky},
			New:            kgoFactory(clients.Classic),
			ResendsCommits: true,
		},
		"kgo-consumer": {
			Protocol:       clients.Consumer,
			Doc:            "kgo's KIP-848 group consumer (ServerSideBalancer, uniform assignor)",
			New:            kgoFactory(clients.Consumer),
			ResendsCommits: true,
		},
		"classic": {
			Protocol: clients.Classic,
			Doc:      "groupquake's classic member (clients/classic; assignors range and cooperative-sticky, so EAGER rebalances as Java's default; each commit sent once)",
			Offers:   []string{assignRange, assignCoopSticky},
			New:      classicFactory(),
		},
		"classic-cooperative": {
			Protocol: clients.Classic,
			Doc:      "groupquake's classic member with the cooperative-sticky assignor alone (KIP-429 COOPERATIVE rebalances; each commit sent once)",
			Offers:   []string{assignCoopSticky},
			New:      classicFactory(classic.Assignors(assign.CooperativeSticky())),
		},
		"consumer": {
			Protocol: clients.Consumer,
			Doc:      "groupquake's KIP-848 member (clients/consumer; server assignor uniform)",
			New:      consumerFactory(),
			// Its group requests go through kgo's Client.Request, which resends
			// on coordinator errors and lost connections.
			ResendsCommits: true,
		},
	}
}

func classicFactory(extra ...classic.Opt) func(MemberSpec) (clients.Member, error) {
	return func(s MemberSpec) (clients.Member, error) {
		opts := []classic.Opt{
			classic.KgoOpts(s.KgoOpts...), classic.WithHooks(s.Hooks), classic.WithClock(clients.ClockFunc(s.Now)),
			classic.SessionTimeout(s.SessionTimeout), classic.HeartbeatInterval(s.HeartbeatInterval),
			classic.RebalanceTimeout(s.RebalanceTimeout),
		}
		if s.InstanceID != "" {
			opts = append(opts, classic.InstanceID(s.InstanceID))
		}
		if s.PollInterval > 0 {
			opts = append(opts, classic.MaxPollInterval(s.PollInterval))
		}
		return classic.New(s.Name, s.Group, s.Topics, append(opts, extra...)...)
	}
}

func consumerFactory(extra ...consumer.Opt) func(MemberSpec) (clients.Member, error) {
	return func(s MemberSpec) (clients.Member, error) {
		opts := []consumer.Opt{
			consumer.KgoOpts(s.KgoOpts...), consumer.Topics(s.Topics...), consumer.WithHooks(s.Hooks),
			consumer.WithClock(clients.ClockFunc(s.Now)), consumer.RebalanceTimeout(s.RebalanceTimeout),
		}
		if s.InstanceID != "" {
			opts = append(opts, consumer.InstanceID(s.InstanceID))
		}
		if s.PollInterval > 0 {
			opts = append(opts, consumer.MaxPollInterval(s.PollInterval))
		}
		return consumer.New(s.Name, s.Group, append(opts, extra...)...)
	}
}

func kgoFactory(p clients.Protocol) func(MemberSpec) (clients.Member, error) {
	return func(s MemberSpec) (clients.Member, error) {
		// kgo has no max.poll.interval.ms (PollInterval is not passed on): a
		// stalled kgo member keeps its partitions until a rebalance comes,
		// which BlockRebalanceOnPoll holds until it polls again; its session
		// may expire meanwhile.
		return kgoref.New(s.Name, s.Group, s.Topics,
			kgoref.Protocol(p),
			kgoref.WithHooks(s.Hooks),
			kgoref.KgoOpts(s.KgoOpts...),
			kgoref.SessionTimeout(s.SessionTimeout), kgoref.HeartbeatInterval(s.HeartbeatInterval), kgoref.RebalanceTimeout(s.RebalanceTimeout),
			kgoref.InstanceID(s.InstanceID),
			kgoref.WithClock(clients.ClockFunc(s.Now)),
		)
	}
}

// NoInstanceID says why kind cannot be a static member (Factory.NoInstanceID
// of every kind a command line can name), "" when it can or is not known.
func NoInstanceID(kind string) string { return All()[kind].NoInstanceID }

// Kinds maps each kind to its protocol name, what NewPlan chooses from.
func (r Registry) Kinds() map[string]string {
	out := make(map[string]string, len(r))
	for k, f := range r {
		out[k] = string(f.Protocol)
	}
	return out
}

// Names lists the kinds, sorted.
func (r Registry) Names() []string { return slices.Sorted(maps.Keys(r)) }

// Build builds the member s of kind, or says that the registry has no such
// kind.
func (r Registry) Build(kind string, s MemberSpec) (clients.Member, error) {
	f, ok := r[kind]
	if !ok {
		return nil, fmt.Errorf("member %s: kind %q is not in the registry (known: %v): the plan was made with member kinds this build does not have", s.Name, kind, r.Names())
	}
	return f.New(s)
}
