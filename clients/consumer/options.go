package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/option"
)

// Opt configures a Member. Options are checked once, in New.
type Opt = option.Opt[cfg]

type cfg struct {
	option.Common
	topics             []string
	regex              *string
	rebalanceTimeout   time.Duration
	maxPollInterval    time.Duration
	assignor           string
	instanceID         string
	rack               string
	autoCommit         bool
	autoCommitInterval time.Duration
	logger             *slog.Logger
	requestTimeout     time.Duration
	retryBackoff       time.Duration
	retryBackoffMax    time.Duration
	bug                Bug // a deliberate defect, for suites/bite only (bugs.go)
}

// KgoOpts are the kgo options that reach the brokers: the harness passes
// links.KgoOpts() (seed brokers and a kgo.Dialer). Group and consume
// options are not allowed: the member owns those.
func KgoOpts(opts ...kgo.Opt) Opt {
	return option.New(func(c *cfg) { c.KgoOpts = append(c.KgoOpts, opts...) })
}

// Topics subscribes to topics by name (SubscribedTopicNames).
func Topics(topics ...string) Opt {
	return option.New(func(c *cfg) { c.topics = append(c.topics, topics...) })
}

// Regex subscribes with a regular expression that the broker evaluates
// (SubscribedTopicRegex, RE2J syntax, ConsumerGroupHeartbeat v1).
func Regex(re string) Opt { return option.New(func(c *cfg) { c.regex = &re }) }

// RebalanceTimeout is sent as RebalanceTimeoutMs: how long the broker waits
// for the member to revoke before fencing it. It also bounds the commit
// before a revocation (Java: maybeAutoCommitSyncBeforeRebalance). Java sends
// max.poll.interval.ms here; the default is the max poll interval.
func RebalanceTimeout(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.rebalanceTimeout = d })
}

// MaxPollInterval is max.poll.interval.ms: when Poll is not called for this
// long the member leaves (epoch -1, -2 when static), drops its partitions
// as lost and rejoins on the next Poll. Default 5 minutes, as Java.
func MaxPollInterval(d time.Duration) Opt { return option.New(func(c *cfg) { c.maxPollInterval = d }) }

// ServerAssignor asks the broker for an assignor (group.remote.assignor):
// "uniform" or "range". Empty leaves the choice to the broker.
func ServerAssignor(name string) Opt { return option.New(func(c *cfg) { c.assignor = name }) }

// InstanceID makes the member static (group.instance.id, KIP-345 in
// KIP-848 form): it leaves with epoch -2 and keeps its assignment when it
// comes back within the session timeout.
func InstanceID(id string) Opt { return option.New(func(c *cfg) { c.instanceID = id }) }

// Rack is client.rack, sent when joining.
func Rack(id string) Opt { return option.New(func(c *cfg) { c.rack = id }) }

// AutoCommit turns committing consumed offsets on (default) or off: before
// every reconciliation, every AutoCommitInterval and on Close, as Java's
// enable.auto.commit.
func AutoCommit(on bool) Opt { return option.New(func(c *cfg) { c.autoCommit = on }) }

// AutoCommitInterval is auto.commit.interval.ms (default 5 s); 0 commits
// only before reconciliations and on Close.
func AutoCommitInterval(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.autoCommitInterval = d })
}

// WithHooks receives every state change.
func WithHooks(h clients.Hooks) Opt { return option.New(func(c *cfg) { c.Hooks = h }) }

// WithClock sets the clock events and the poll and rebalance timers read.
// Waiting between heartbeats uses real timers, so a shifted clock changes
// what the member measures, not how fast it runs. Default: the wall clock.
func WithClock(cl clients.Clock) Opt { return option.New(func(c *cfg) { c.Clock = cl }) }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Opt { return option.New(func(c *cfg) { c.logger = l }) }

// RequestTimeout bounds every group request (default 5 s).
func RequestTimeout(d time.Duration) Opt { return option.New(func(c *cfg) { c.requestTimeout = d }) }

// RetryBackoff is retry.backoff.ms and retry.backoff.max.ms (defaults
// 100 ms and 1 s, as Java).
func RetryBackoff(base, max time.Duration) Opt {
	return option.New(func(c *cfg) { c.retryBackoff, c.retryBackoffMax = base, max })
}

var validAssignors = []string{"uniform", "range"}

func (c *cfg) validate() error {
	var errs []error
	c.Defaults()
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if len(c.KgoOpts) == 0 {
		errs = append(errs, errors.New("no kgo options to reach the brokers: pass KgoOpts(links.KgoOpts()...) or KgoOpts(kgo.SeedBrokers(...))"))
	}
	switch {
	case c.regex != nil && len(c.topics) > 0:
		errs = append(errs, fmt.Errorf("subscribe with topic names %v or a regex %q, not both (Java's subscribe(Collection) and subscribe(SubscriptionPattern) replace each other)", c.topics, *c.regex))
	case c.regex != nil:
		// The broker evaluates RE2J; Go's RE2 accepts the same core
		// syntax, so a pattern Go rejects would be rejected there too.
		if _, err := regexp.Compile(*c.regex); err != nil {
			errs = append(errs, fmt.Errorf("subscription regex %q does not compile: %v", *c.regex, err))
		}
	case len(c.topics) == 0:
		errs = append(errs, errors.New("no subscription: pass Topics(...) or Regex(...)"))
	default:
		for _, t := range c.topics {
			if strings.TrimSpace(t) == "" {
				errs = append(errs, fmt.Errorf("subscribed topic names %q include a blank name", c.topics))
				break
			}
		}
		slices.Sort(c.topics)
		c.topics = slices.Compact(c.topics)
	}
	if c.maxPollInterval == 0 {
		c.maxPollInterval = 5 * time.Minute
	}
	if c.rebalanceTimeout == 0 {
		c.rebalanceTimeout = c.maxPollInterval
	}
	if c.rebalanceTimeout < time.Millisecond || c.rebalanceTimeout.Milliseconds() > int64(^uint32(0)>>1) {
		errs = append(errs, fmt.Errorf("rebalance timeout %v is out of range 1ms–%dms", c.rebalanceTimeout, ^uint32(0)>>1))
	}
	if c.maxPollInterval < time.Millisecond {
		errs = append(errs, fmt.Errorf("max poll interval %v must be at least 1ms", c.maxPollInterval))
	}
	if c.assignor != "" && !slices.Contains(validAssignors, c.assignor) {
		errs = append(errs, fmt.Errorf("server assignor %q is not one of %v (group.consumer.assignors)", c.assignor, validAssignors))
	}
	if c.instanceID != "" && strings.TrimSpace(c.instanceID) == "" {
		errs = append(errs, errors.New("instance id is blank: the broker rejects it with INVALID_REQUEST"))
	}
	if c.rack != "" && strings.TrimSpace(c.rack) == "" {
		errs = append(errs, errors.New("rack id is blank: the broker rejects it with INVALID_REQUEST"))
	}
	if c.autoCommitInterval < 0 {
		errs = append(errs, fmt.Errorf("auto-commit interval %v is negative", c.autoCommitInterval))
	}
	if c.requestTimeout == 0 {
		c.requestTimeout = 5 * time.Second
	}
	if c.retryBackoff == 0 {
		c.retryBackoff = 100 * time.Millisecond
	}
	if c.retryBackoffMax == 0 {
		c.retryBackoffMax = time.Second
	}
	if c.retryBackoff < 0 || c.retryBackoffMax < c.retryBackoff {
		errs = append(errs, fmt.Errorf("retry backoff %v–%v is not a range", c.retryBackoff, c.retryBackoffMax))
	}
	if err := c.bug.check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
