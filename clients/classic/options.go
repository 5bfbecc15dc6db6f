package classic

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/assign"
	"github.com/groupquake/groupquake/clients/internal/option"
)

// Opt configures a Member. Options are checked once, in New.
type Opt = option.Opt[cfg]

type cfg struct {
	name   string
	group  string
	topics []string

	option.Common
	log *slog.Logger

	// Defaults are the Java consumer's (ConsumerConfig, Kafka 4.x):
	// session.timeout.ms 45000, heartbeat.interval.ms 3000,
	// max.poll.interval.ms 300000 (also the rebalance timeout),
	// retry.backoff.ms 100 (grown to retry.backoff.max.ms 1000),
	// auto.commit.interval.ms 5000.
	sessionTimeout     time.Duration
	heartbeatInterval  time.Duration
	rebalanceTimeout   time.Duration
	maxPollInterval    time.Duration
	retryBackoff       time.Duration
	retryBackoffMax    time.Duration
	autoCommit         bool
	autoCommitInterval time.Duration // 0: only before a rejoin and on Close

	assignors  []assign.Assignor
	protocol   assign.Protocol
	instanceID *string
	reset      kgo.Offset
	clientID   string
	bug        Bug // a deliberate defect, for suites/bite only (bugs.go)
}

// KgoOpts are the options that reach the brokers (the harness passes a
// link's KgoOpts: seed brokers and a Dialer). They may be given more than
// once; later ones are appended.
func KgoOpts(opts ...kgo.Opt) Opt {
	return option.New(func(c *cfg) { c.KgoOpts = append(c.KgoOpts, opts...) })
}

// WithHooks receives every state change. Default: none. Events that change
// the member's state are delivered while the member holds its lock, so
// that their order is the order of the changes: a hook must return
// quickly and must not call back into the member.
func WithHooks(h clients.Hooks) Opt { return option.New(func(c *cfg) { c.Hooks = h }) }

// WithClock sets the clock the timers (heartbeat interval, session
// timeout, max.poll.interval, auto-commit interval, retry backoff) read and
// wait on. Default: the wall clock.
func WithClock(cl clients.Clock) Opt { return option.New(func(c *cfg) { c.Clock = cl }) }

// WithLogger sets the logger. Default: discard.
func WithLogger(l *slog.Logger) Opt { return option.New(func(c *cfg) { c.log = l }) }

// SessionTimeout is session.timeout.ms: how long the coordinator keeps the
// member without a heartbeat. Default 45s.
func SessionTimeout(d time.Duration) Opt { return option.New(func(c *cfg) { c.sessionTimeout = d }) }

// HeartbeatInterval is heartbeat.interval.ms. Default 3s; it must be below
// the session timeout.
func HeartbeatInterval(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.heartbeatInterval = d })
}

// RebalanceTimeout is the JoinGroup rebalance timeout: how long the
// coordinator waits for every member to rejoin. Java sends
// max.poll.interval.ms; default: the max poll interval.
func RebalanceTimeout(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.rebalanceTimeout = d })
}

// MaxPollInterval is max.poll.interval.ms: when Poll is not called for this
// long, the member leaves the group on its own (AbstractCoordinator
// HeartbeatThread, pollTimeoutExpired). Default 5 minutes.
func MaxPollInterval(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.maxPollInterval = d })
}

// RetryBackoff is retry.backoff.ms, doubled per consecutive failure up to
// max. Default 100ms and 1s.
func RetryBackoff(d, max time.Duration) Opt {
	return option.New(func(c *cfg) { c.retryBackoff, c.retryBackoffMax = d, max })
}

// Assignors is partition.assignment.strategy, in preference order. Default
// [range, cooperative-sticky], the Java default, which rebalances EAGER.
func Assignors(as ...assign.Assignor) Opt {
	return option.New(func(c *cfg) { c.assignors = as })
}

// InstanceID is group.instance.id (KIP-345 static membership).
func InstanceID(id string) Opt { return option.New(func(c *cfg) { c.instanceID = &id }) }

// AutoCommit turns enable.auto.commit on or off (default off): the
// positions of the records Poll returned are committed every
// AutoCommitInterval, before every rejoin and on Close.
func AutoCommit(on bool) Opt { return option.New(func(c *cfg) { c.autoCommit = on }) }

// AutoCommitInterval is auto.commit.interval.ms (default 5 s, as Java); 0
// commits only before a rejoin and on Close.
func AutoCommitInterval(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.autoCommitInterval = d })
}

// OffsetReset is where a partition without a committed offset starts.
// Default: the start of the log (auto.offset.reset=earliest).
func OffsetReset(o kgo.Offset) Opt { return option.New(func(c *cfg) { c.reset = o }) }

// ClientID is client.id, the prefix of the member id the coordinator
// generates. Default "groupquake-" + the member's name.
func ClientID(id string) Opt { return option.New(func(c *cfg) { c.clientID = id }) }

func newCfg(name, group string, topics []string, opts []Opt) (cfg, error) {
	c := cfg{
		name:               name,
		group:              group,
		topics:             topics,
		log:                slog.New(slog.DiscardHandler),
		sessionTimeout:     45 * time.Second,
		heartbeatInterval:  3 * time.Second,
		maxPollInterval:    5 * time.Minute,
		retryBackoff:       100 * time.Millisecond,
		retryBackoffMax:    time.Second,
		autoCommitInterval: 5 * time.Second,
		assignors:          []assign.Assignor{assign.Range(), assign.CooperativeSticky()},
		reset:              kgo.NewOffset().AtStart(),
	}
	c.Defaults()
	option.Apply(&c, opts...)
	if c.rebalanceTimeout == 0 {
		c.rebalanceTimeout = c.maxPollInterval
	}
	if c.clientID == "" {
		c.clientID = "groupquake-" + name
	}
	var errs []error
	if name == "" {
		errs = append(errs, errors.New("member name is empty: give the harness's name for the member"))
	}
	if group == "" {
		errs = append(errs, errors.New("group id is empty: the coordinator rejects it with INVALID_GROUP_ID"))
	}
	if len(topics) == 0 {
		errs = append(errs, errors.New("no topics to subscribe to"))
	}
	if c.Hooks == nil || c.Clock == nil || c.log == nil {
		errs = append(errs, errors.New("WithHooks, WithClock and WithLogger must not be given nil"))
	}
	if c.sessionTimeout <= 0 || c.heartbeatInterval <= 0 || c.maxPollInterval <= 0 || c.rebalanceTimeout <= 0 {
		errs = append(errs, fmt.Errorf("timers must be positive: session %v, heartbeat %v, max poll %v, rebalance %v",
			c.sessionTimeout, c.heartbeatInterval, c.maxPollInterval, c.rebalanceTimeout))
	}
	if c.heartbeatInterval >= c.sessionTimeout {
		errs = append(errs, fmt.Errorf("heartbeat interval %v must be below the session timeout %v (Java requires it too)", c.heartbeatInterval, c.sessionTimeout))
	}
	if c.retryBackoff <= 0 || c.retryBackoffMax < c.retryBackoff {
		errs = append(errs, fmt.Errorf("retry backoff %v (max %v): both positive, max at least the base", c.retryBackoff, c.retryBackoffMax))
	}
	if c.autoCommitInterval < 0 {
		errs = append(errs, fmt.Errorf("auto-commit interval %v is negative", c.autoCommitInterval))
	}
	if err := c.bug.check(); err != nil {
		errs = append(errs, err)
	}
	if c.instanceID != nil && *c.instanceID == "" {
		errs = append(errs, errors.New("instance id is empty: leave InstanceID out for a dynamic member"))
	}
	seen := map[string]bool{}
	for _, a := range c.assignors {
		if a == nil {
			errs = append(errs, errors.New("nil assignor"))
			continue
		}
		if seen[a.Name()] {
			errs = append(errs, fmt.Errorf("assignor %q listed twice", a.Name()))
		}
		seen[a.Name()] = true
	}
	if len(errs) == 0 {
		p, err := assign.ChooseProtocol(c.assignors)
		if err != nil {
			errs = append(errs, err)
		}
		c.protocol = p
	}
	if err := errors.Join(errs...); err != nil {
		return cfg{}, fmt.Errorf("classic member %q: %w", name, err)
	}
	return c, nil
}
