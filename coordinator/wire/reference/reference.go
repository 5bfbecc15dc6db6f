// Package reference serves groupquake's reference group coordinator
// (package coordinator) through the embedded Kafka-protocol server (package
// wire). It is a separate package so that wire builds and tests on its own
// while the coordinator changes: wire needs only its Coordinator interface.
//
//	s, err := wire.Start(wire.Config{
//		DataDir:        dir,
//		Version:        version.V4_4_0,
//		NewCoordinator: reference.New(coordinator.Config{}),
//	})
package reference

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/coordinator/wire"
)

// Opt is an option of New.
type Opt interface{ apply(*opts) }

type opts struct {
	consumerGroups func(version.Profile) (coordinator.ConsumerGroups, error)
}

type optFunc func(*opts)

func (f optFunc) apply(o *opts) { f(o) }

// ConsumerGroups gives the coordinator a KIP-848 consumer-group engine,
// made fresh by fn for every coordinator the server builds (at each start
// and after a failed append), because the engine holds state that the log
// must rebuild. Without it the coordinator has none
// (coordinator.NoConsumerGroups); then set wire.Config.DisableConsumerProtocol
// so clients are not offered the consumer protocol.
func ConsumerGroups(fn func(version.Profile) (coordinator.ConsumerGroups, error)) Opt {
	return optFunc(func(o *opts) { o.consumerGroups = fn })
}

// New returns a wire.Config.NewCoordinator that builds the reference
// coordinator with the broker settings of cfg, behaving as the Kafka
// release the server imitates (wire.Config.Version). cfg.Topics is set to
// the server's topics. cfg.ConsumerGroups must be nil: use the
// ConsumerGroups option, since one engine cannot serve two coordinators.
//
// Unless cfg.IDs is set, member ids are random UUIDs, as Kafka's
// (Uuid.randomUuid): the server rebuilds the coordinator from the log on
// every start, and a sequence starting again at 1 would hand a new member
// the id of a member the log still holds.
func New(cfg coordinator.Config, options ...Opt) func(version.Version, wire.Topics) (wire.Coordinator, error) {
	var o opts
	for _, opt := range options {
		opt.apply(&o)
	}
	return func(v version.Version, topics wire.Topics) (wire.Coordinator, error) {
		if cfg.ConsumerGroups != nil {
			return nil, fmt.Errorf("reference coordinator: coordinator.Config.ConsumerGroups is set; it would be shared by every coordinator the server builds from the log, so pass a factory with reference.ConsumerGroups instead")
		}
		c := cfg
		c.Topics = topics
		if c.IDs == nil {
			c.IDs = randomIDs{}
		}
		if o.consumerGroups != nil {
			cg, err := o.consumerGroups(v.Profile())
			if err != nil {
				return nil, fmt.Errorf("reference coordinator for Kafka %s: consumer groups: %w", v, err)
			}
			c.ConsumerGroups = cg
		}
		co, err := coordinator.New(v.Profile(), c)
		if err != nil {
			return nil, fmt.Errorf("reference coordinator for Kafka %s: %w", v, err)
		}
		return adapter{co}, nil
	}
}

// adapter converts between the coordinator's types and wire's, which have
// the same shape.
type adapter struct{ c *coordinator.Coordinator }

func (a adapter) Submit(now time.Time, cl wire.Client, req kmsg.Request) (wire.Outcome, error) {
	o, err := a.c.Submit(now, coordinator.Client{ID: cl.ID, Host: cl.Host}, req)
	return wire.Outcome{Ticket: wire.Ticket(o.Ticket), Response: o.Response, Records: o.Records}, err
}

func (a adapter) Completed() []wire.Completion {
	done := a.c.Completed()
	out := make([]wire.Completion, len(done))
	for i, d := range done {
		out[i] = wire.Completion{Ticket: wire.Ticket(d.Ticket), Response: d.Response}
	}
	return out
}

func (a adapter) Tick(now time.Time) []records.Record   { return a.c.Tick(now) }
func (a adapter) Replay(r records.Record) error         { return a.c.Replay(r) }
func (a adapter) Loaded(now time.Time) []records.Record { return a.c.Loaded(now) }

// Unwrap returns the reference coordinator behind a wire.Coordinator made
// by New, for State checks ("replay equals live"); nil for another kind.
func Unwrap(c wire.Coordinator) *coordinator.Coordinator {
	if a, ok := c.(adapter); ok {
		return a.c
	}
	return nil
}

// randomIDs is a coordinator.IDSource of random version-4 UUIDs.
type randomIDs struct{}

func (randomIDs) NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("reference: read random member id: %v", err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
