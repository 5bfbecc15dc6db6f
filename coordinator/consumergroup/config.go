package consumergroup

import (
	"fmt"
	"math"
	"time"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/version"
)

// Config holds the broker settings the consumer-group state machine reads
// (GroupCoordinatorConfig.java). Zero fields take Kafka's defaults; New
// checks the result once, the way the broker refuses a bad config at start.
type Config struct {
	// SessionTimeout is group.consumer.session.timeout.ms (default 45s),
	// bounded by MinSessionTimeout (45s) and MaxSessionTimeout (60s).
	SessionTimeout, MinSessionTimeout, MaxSessionTimeout time.Duration
	// HeartbeatInterval is group.consumer.heartbeat.interval.ms (default 5s),
	// bounded by MinHeartbeatInterval (5s) and MaxHeartbeatInterval (15s).
	// It is returned in every successful heartbeat response.
	HeartbeatInterval, MinHeartbeatInterval, MaxHeartbeatInterval time.Duration
	// MaxSize is group.consumer.max.size (default Integer.MAX_VALUE).
	MaxSize int
	// Assignors is group.consumer.assignors (default uniform, range). The
	// first one is the default assignor (GMM.defaultConsumerGroupAssignor).
	Assignors []string
	// AssignmentInterval is group.consumer.assignment.interval.ms (KIP-1263,
	// 4.3+): the target assignment is recomputed at most once per interval.
	// Nil means the profile's default (1s on 4.3+); it must be nil before 4.3,
	// where the config does not exist.
	AssignmentInterval *time.Duration
	// RegexRefreshInterval is group.consumer.regex.refresh.interval.ms
	// (KAFKA-18961, 4.1+; an internal config, at least 10s): a group's
	// regexes are resolved again when this long passed since the last
	// resolution. Nil means the default (10 minutes) on 4.1+; it must be
	// nil on 4.0, where the config does not exist.
	RegexRefreshInterval *time.Duration
	// JavaVersion is the broker's JDK major version, which decides some
	// HashSet iteration orders in the uniform assignor (assignor.JavaVersion).
	// 0 means the assignor package's default (21, the official images); the
	// locally built broker image runs 17.
	JavaVersion int
	// MigrationPolicy is group.consumer.migration.policy
	// (ConsumerGroupMigrationPolicy): "bidirectional" (the default, also
	// for ""), "upgrade", "downgrade" or "disabled". It decides whether a
	// non-empty classic group is converted when a consumer-protocol member
	// joins it (upgrade), whether a consumer group whose last
	// consumer-protocol member leaves becomes a classic group again
	// (downgrade), and, from KAFKA-20640, whether classic members may join a
	// consumer group at all. Empty groups are converted whatever the policy.
	MigrationPolicy string
	// ClassicMaxSize is group.max.size (Integer.MAX_VALUE; 0 means no
	// limit): a consumer group larger than that is not downgraded.
	ClassicMaxSize int
	// NewMemberID makes the member id for a ConsumerGroupHeartbeat v0 join
	// with an empty MemberId (Kafka: Uuid.randomUuid()). Nil means
	// "member-1", "member-2", … counted per Manager, which keeps runs
	// deterministic.
	NewMemberID func() string
}

// The values of group.consumer.migration.policy (ConsumerGroupMigrationPolicy).
const (
	MigrationBidirectional = "bidirectional"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationDisabled      = "disabled"
)

// upgradeEnabled is ConsumerGroupMigrationPolicy.isUpgradeEnabled.
func (c Config) upgradeEnabled() bool {
	return c.MigrationPolicy == MigrationBidirectional || c.MigrationPolicy == MigrationUpgrade
}

// downgradeEnabled is ConsumerGroupMigrationPolicy.isDowngradeEnabled.
func (c Config) downgradeEnabled() bool {
	return c.MigrationPolicy == MigrationBidirectional || c.MigrationPolicy == MigrationDowngrade
}

// withDefaults returns c with Kafka's defaults filled in.
func (c Config) withDefaults(p version.Profile) Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.SessionTimeout, 45*time.Second)
	def(&c.MinSessionTimeout, 45*time.Second)
	def(&c.MaxSessionTimeout, 60*time.Second)
	def(&c.HeartbeatInterval, 5*time.Second)
	def(&c.MinHeartbeatInterval, 5*time.Second)
	def(&c.MaxHeartbeatInterval, 15*time.Second)
	// Lower minimums (a fast harness) pull the defaults down with them.
	if c.SessionTimeout < c.MinSessionTimeout {
		c.MinSessionTimeout = c.SessionTimeout
	}
	if c.HeartbeatInterval < c.MinHeartbeatInterval {
		c.MinHeartbeatInterval = c.HeartbeatInterval
	}
	if c.MaxSize == 0 {
		c.MaxSize = math.MaxInt32
	}
	if c.ClassicMaxSize == 0 {
		c.ClassicMaxSize = math.MaxInt32
	}
	if c.MigrationPolicy == "" {
		c.MigrationPolicy = MigrationBidirectional
	}
	if len(c.Assignors) == 0 {
		c.Assignors = []string{assignor.UniformName, assignor.RangeName}
	}
	if c.AssignmentInterval == nil && p.AssignmentInterval {
		d := time.Duration(p.DefaultAssignmentIntervalMs) * time.Millisecond
		c.AssignmentInterval = &d
	}
	if c.RegexRefreshInterval == nil && p.RegexPeriodicRefresh {
		d := 10 * time.Minute
		c.RegexRefreshInterval = &d
	}
	return c
}

// validate refuses what the broker would refuse at start-up
// (GroupCoordinatorConfig's requirements).
func (c Config) validate(p version.Profile) error {
	if c.SessionTimeout < c.MinSessionTimeout || c.SessionTimeout > c.MaxSessionTimeout {
		return fmt.Errorf("consumer group session timeout %v is outside [%v, %v] (group.consumer.min/max.session.timeout.ms)",
			c.SessionTimeout, c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	if c.HeartbeatInterval < c.MinHeartbeatInterval || c.HeartbeatInterval > c.MaxHeartbeatInterval {
		return fmt.Errorf("consumer group heartbeat interval %v is outside [%v, %v] (group.consumer.min/max.heartbeat.interval.ms)",
			c.HeartbeatInterval, c.MinHeartbeatInterval, c.MaxHeartbeatInterval)
	}
	if c.HeartbeatInterval >= c.SessionTimeout {
		return fmt.Errorf("consumer group heartbeat interval %v must be lower than the session timeout %v", c.HeartbeatInterval, c.SessionTimeout)
	}
	switch c.MigrationPolicy {
	case MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled:
	default:
		return fmt.Errorf("group.consumer.migration.policy %q: want one of bidirectional, upgrade, downgrade, disabled", c.MigrationPolicy)
	}
	if c.MaxSize < 1 {
		return fmt.Errorf("group.consumer.max.size %d: must be at least 1", c.MaxSize)
	}
	if !p.AssignmentInterval && c.AssignmentInterval != nil {
		return fmt.Errorf("group.consumer.assignment.interval.ms does not exist in Kafka %s (KIP-1263, 4.3+)", p.Version)
	}
	if c.AssignmentInterval != nil && *c.AssignmentInterval < 0 {
		return fmt.Errorf("group.consumer.assignment.interval.ms %v: must not be negative", *c.AssignmentInterval)
	}
	if !p.RegexPeriodicRefresh && c.RegexRefreshInterval != nil {
		return fmt.Errorf("group.consumer.regex.refresh.interval.ms does not exist in Kafka %s (KAFKA-18961, 4.1+)", p.Version)
	}
	if c.RegexRefreshInterval != nil && *c.RegexRefreshInterval < regexBatchRefreshMinInterval {
		return fmt.Errorf("group.consumer.regex.refresh.interval.ms %v: must be at least %v", *c.RegexRefreshInterval, regexBatchRefreshMinInterval)
	}
	seen := map[string]bool{}
	for _, a := range c.Assignors {
		if seen[a] {
			return fmt.Errorf("group.consumer.assignors lists %q twice", a)
		}
		seen[a] = true
	}
	return nil
}

// TopicMetadata is the part of the cluster's metadata image the coordinator
// reads: topic name ↔ id ↔ partition count. The host feeds it on every
// call, as Kafka's coordinator is fed MetadataImage deltas; the state
// machine notices changes itself by comparing with what it stored (see
// hasMetadataExpired).
type TopicMetadata interface {
	// TopicByName returns the id and partition count of a topic, or ok=false
	// if the topic does not exist.
	TopicByName(name string) (id [16]byte, partitions int, ok bool)
	// TopicByID returns the name and partition count of a topic, or ok=false.
	TopicByID(id [16]byte) (name string, partitions int, ok bool)
}

// TopicLister is a TopicMetadata that can also list its topics, which
// resolving a regex subscription needs: Kafka matches every regex against
// every topic name of its metadata image (TopicRegexResolver,
// metadataImage.topicNames()), internal topics included. A host whose
// metadata is not a TopicLister resolves every regex to no topics.
type TopicLister interface {
	TopicMetadata
	// TopicNames returns every topic name, in any order.
	TopicNames() []string
}

// Topics is a TopicMetadata over a fixed list, for tests and simple hosts.
type Topics []Topic

// Topic is one topic of Topics.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions int
}

// TopicByName implements TopicMetadata.
func (ts Topics) TopicByName(name string) ([16]byte, int, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t.ID, t.Partitions, true
		}
	}
	return [16]byte{}, 0, false
}

// TopicByID implements TopicMetadata.
func (ts Topics) TopicByID(id [16]byte) (string, int, bool) {
	for _, t := range ts {
		if t.ID == id {
			return t.Name, t.Partitions, true
		}
	}
	return "", 0, false
}

// TopicNames implements TopicLister.
func (ts Topics) TopicNames() []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// noTopics is the metadata of an empty cluster, used when the host passes nil.
type noTopics struct{}

func (noTopics) TopicByName(string) ([16]byte, int, bool) { return [16]byte{}, 0, false }
func (noTopics) TopicByID([16]byte) (string, int, bool)   { return "", 0, false }
func (noTopics) TopicNames() []string                     { return nil }

func orEmpty(t TopicMetadata) TopicMetadata {
	if t == nil {
		return noTopics{}
	}
	return t
}
