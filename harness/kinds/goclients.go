package kinds

import (
	"maps"
	"slices"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/kafkagoref"
	"github.com/groupquake/groupquake/clients/saramaref"
)

func init() {
	register(Family{
		Help:     "the Sarama and kafka-go kinds (docs/clients.md)",
		Names:    GoClients().Names(),
		Registry: GoClients,
	})
}

// GoClients returns the member kinds backed by other Go Kafka clients'
// consumer groups, in process like kgo's (docs/clients.md): IBM Sarama's
// (clients/saramaref) and segmentio/kafka-go's (clients/kafkagoref). A new
// Go client is one more entry here. They are never in Default, so a seed never
// draws them (the kinds a seed draws, and so every existing seed's plan,
// stay as they were); WithGoClients adds the ones a user names (groupquake
// run --kinds sarama-range,classic).
func GoClients() Registry {
	sarama := func(strategy, doc string) Factory {
		offers := []string{strategy}
		if strategy != assignRange {
			offers = append(offers, assignRange) // saramaref offers range after any other strategy
		}
		return Factory{
			Protocol: clients.Classic,
			Offers:   offers,
			Doc:      "IBM Sarama " + saramaref.Version + " consumer group, classic protocol, " + doc + " (EAGER rebalances; static with an instance id, and then no LeaveGroup on close); each commit sent once",
			New: func(s MemberSpec) (clients.Member, error) {
				// Sarama has no max.poll.interval.ms: PollInterval is not passed on.
				opts := []saramaref.Opt{
					saramaref.Assignor(strategy), saramaref.WithHooks(s.Hooks), saramaref.KgoOpts(s.KgoOpts...),
					saramaref.SessionTimeout(s.SessionTimeout), saramaref.HeartbeatInterval(s.HeartbeatInterval), saramaref.RebalanceTimeout(s.RebalanceTimeout), saramaref.WithClock(clients.ClockFunc(s.Now)),
				}
				if s.InstanceID != "" {
					opts = append(opts, saramaref.InstanceID(s.InstanceID))
				}
				return saramaref.New(s.Name, s.Group, s.Topics, opts...)
			},
		}
	}
	kafkago := func(doc string, balancers ...string) Factory {
		return Factory{
			Protocol:     clients.Classic,
			Offers:       balancers,
			Doc:          "segmentio/kafka-go " + kafkagoref.Version + " consumer group, classic protocol, " + doc + " (EAGER rebalances; never static: kafka-go has no group.instance.id); each commit sent once",
			NoInstanceID: "kafka-go's ConsumerGroup has no group.instance.id",
			New: func(s MemberSpec) (clients.Member, error) {
				return kafkagoref.New(s.Name, s.Group, s.Topics,
					kafkagoref.Balancers(balancers...), kafkagoref.WithHooks(s.Hooks), kafkagoref.KgoOpts(s.KgoOpts...),
					kafkagoref.SessionTimeout(s.SessionTimeout), kafkagoref.HeartbeatInterval(s.HeartbeatInterval), kafkagoref.RebalanceTimeout(s.RebalanceTimeout), kafkagoref.WithClock(clients.ClockFunc(s.Now)))
			},
		}
	}
	return Registry{
		"sarama-range":      sarama("range", "strategy range"),
		"sarama-roundrobin": sarama("roundrobin", "strategy roundrobin, then range (what a group mixed with range-only members agrees on)"),
		"sarama-sticky":     sarama("sticky", "strategy sticky, then range (what a group mixed with range-only members agrees on)"),
		"kafkago":           kafkago("kafka-go's default group balancers range, then round-robin", kafkagoref.Range, kafkagoref.RoundRobin),
	}
}

// WithGoClients returns r plus the Go client kinds among named: they run
// only when asked for by name.
func (r Registry) WithGoClients(named []string) Registry {
	g := GoClients()
	out := maps.Clone(r)
	for _, n := range named {
		if f, ok := g[n]; ok && !slices.Contains(r.Names(), n) {
			out[n] = f
		}
	}
	return out
}
