package coordinator

import (
	"fmt"
	"time"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
)

// Config holds the broker settings of GroupCoordinatorConfig that change
// what the coordinator answers or writes. DefaultConfig returns Kafka's
// defaults; a zero Config is valid and means "no delay, no limits", which
// is what fast conformance vectors want, except that MaxSessionTimeout and
// OffsetMetadataMaxBytes of zero would reject everything, so zero there
// means the default.
type Config struct {
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms (3000): how
	// long the first rebalance of an Empty group waits for more members.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout are
	// group.min.session.timeout.ms (6000) and group.max.session.timeout.ms
	// (1800000): JoinGroup outside the range gets INVALID_SESSION_TIMEOUT.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// MaxGroupSize is group.max.size (Integer.MAX_VALUE); 0 means no limit.
	MaxGroupSize int
	// NewMemberJoinTimeout is the session of a member whose first join has
	// not completed (CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS, 5 minutes,
	// not configurable in Kafka).
	NewMemberJoinTimeout time.Duration
	// OffsetsRetention is offsets.retention.minutes (7 days); 0 disables
	// offset expiry.
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms
	// (600000): how often Tick looks for expired offsets and groups.
	OffsetsRetentionCheckInterval time.Duration
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (4096), counted
	// in UTF-16 code units as Java's String.length.
	OffsetMetadataMaxBytes int

	// Topics is the broker's metadata image as far as OffsetCommit and
	// OffsetFetch look at it (KafkaApis: unknown topics and partitions,
	// topic ids of v10). Nil means no image: topic names are taken as
	// given, with no id, and no topic id resolves.
	Topics TopicMetadata

	// ConsumerGroups serves the consumer protocol (KIP-848). Nil means the
	// reference engine: a consumergroup.Manager of the coordinator's
	// profile, configured by Consumer, so that New gives a whole
	// coordinator as a Kafka 4.x broker is one (GroupMetadataManager holds
	// both kinds of group). NoConsumerGroups{} gives a coordinator with no
	// consumer groups at all, as a broker with the consumer protocol
	// disabled.
	ConsumerGroups ConsumerGroups
	// Consumer holds the group.consumer.* settings of the default engine
	// (consumergroup.Config; zero fields are Kafka's defaults). It is
	// ignored when ConsumerGroups is set. A nil Consumer.NewMemberID takes
	// member ids from IDs, so that a coordinator loaded after a restart
	// with the same IDs never reissues one.
	Consumer consumergroup.Config
	// IDs generates the UUID part of new member ids. Nil means a
	// deterministic sequence (SequentialIDs).
	IDs IDSource
	// Share holds the group.share.* settings of share groups (KIP-932).
	Share ShareConfig
}

// DefaultConfig returns Kafka's defaults (GroupCoordinatorConfig, 4.x).
func DefaultConfig() Config {
	return Config{
		InitialRebalanceDelay:         3 * time.Second,
		MinSessionTimeout:             6 * time.Second,
		MaxSessionTimeout:             30 * time.Minute,
		NewMemberJoinTimeout:          5 * time.Minute,
		OffsetsRetention:              7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval: 10 * time.Minute,
		OffsetMetadataMaxBytes:        4096,
	}
}

// millis is a configured duration that Kafka takes as a number of
// milliseconds, with the name of its field.
type millis struct {
	name string
	v    time.Duration
}

// checkMillis refuses a negative duration or one that is not a whole
// number of milliseconds, naming the first.
func checkMillis(ds ...millis) error {
	for _, d := range ds {
		if d.v < 0 {
			return fmt.Errorf("coordinator config: %s is %v; it must not be negative", d.name, d.v)
		}
		if d.v%time.Millisecond != 0 {
			return fmt.Errorf("coordinator config: %s is %v; Kafka counts it in whole milliseconds", d.name, d.v)
		}
	}
	return nil
}

func (c Config) validate() error {
	if err := checkMillis(
		millis{"InitialRebalanceDelay", c.InitialRebalanceDelay},
		millis{"MinSessionTimeout", c.MinSessionTimeout},
		millis{"MaxSessionTimeout", c.MaxSessionTimeout},
		millis{"NewMemberJoinTimeout", c.NewMemberJoinTimeout},
		millis{"OffsetsRetention", c.OffsetsRetention},
		millis{"OffsetsRetentionCheckInterval", c.OffsetsRetentionCheckInterval},
	); err != nil {
		return err
	}
	if c.MaxGroupSize < 0 {
		return fmt.Errorf("coordinator config: MaxGroupSize is %d; use 0 for no limit", c.MaxGroupSize)
	}
	if c.OffsetMetadataMaxBytes < 0 {
		return fmt.Errorf("coordinator config: OffsetMetadataMaxBytes is %d; it must not be negative", c.OffsetMetadataMaxBytes)
	}
	if err := c.Share.validate(); err != nil {
		return err
	}
	if c.MaxSessionTimeout != 0 && c.MinSessionTimeout > c.MaxSessionTimeout {
		return fmt.Errorf("coordinator config: MinSessionTimeout %v exceeds MaxSessionTimeout %v", c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	return nil
}

// withDefaults fills the fields whose zero value would make no sense.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = d.MaxSessionTimeout
	}
	if c.OffsetMetadataMaxBytes == 0 {
		c.OffsetMetadataMaxBytes = d.OffsetMetadataMaxBytes
	}
	if c.NewMemberJoinTimeout == 0 {
		c.NewMemberJoinTimeout = d.NewMemberJoinTimeout
	}
	if c.OffsetsRetentionCheckInterval == 0 {
		c.OffsetsRetentionCheckInterval = d.OffsetsRetentionCheckInterval
	}
	if c.IDs == nil {
		c.IDs = &SequentialIDs{}
	}
	return c
}

func (c Config) maxGroupSize() int {
	if c.MaxGroupSize == 0 {
		return int(^uint32(0) >> 1)
	}
	return c.MaxGroupSize
}

// IDSource makes the random part of member ids. Kafka uses
// UUID.randomUUID(); the coordinator takes the source from its caller so a
// run is reproducible.
type IDSource interface {
	NewID() string
}

// SequentialIDs yields UUID-shaped ids 00000000-0000-0000-0000-000000000001,
// …002, … Share one value between a coordinator and the one that replaces it
// after a restart so the new one never reissues an id.
type SequentialIDs struct{ n uint64 }

// NewID implements IDSource.
func (s *SequentialIDs) NewID() string {
	s.n++
	return fmt.Sprintf("00000000-0000-0000-0000-%012x", s.n)
}
