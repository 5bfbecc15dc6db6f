package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
)

// Config configures an embedded server. The zero value of every field but
// NewCoordinator means the default given with it.
type Config struct {
	// DataDir holds the partition logs (Kafka's log.dirs layout:
	// topic-partition/00000000000000000000.log plus partition.metadata).
	// A server started again on the same directory serves the same records
	// and replays __consumer_offsets into a fresh coordinator. "" keeps
	// everything in memory only.
	DataDir string
	// SyncWrites fsyncs every append. Without it a Close+Start in one
	// process still sees every write (the page cache); only a machine crash
	// can lose a tail, which the next Start cuts at the last whole batch.
	SyncWrites bool

	// Version is the Kafka release the server imitates: the ApiVersions it
	// advertises, and the release NewCoordinator is asked to behave as.
	// Default: version.Default.
	Version version.Version
	// NodeID is the broker id (node.id). Default 1.
	NodeID int32
	// ClusterID is the cluster id Metadata reports. Default
	// "groupquake-embedded".
	ClusterID string
	// Addr is the listen address; it must be on loopback. Default
	// "127.0.0.1:0".
	Addr string
	// OffsetsPartitions is offsets.topic.num.partitions: how many
	// partitions __consumer_offsets has. A data directory that already holds
	// the topic must hold this many. Default 4 (Kafka's is 50; few
	// partitions keep runs small, as docs/design.md asks of brokers).
	OffsetsPartitions int
	// DefaultPartitions is num.partitions, for CreateTopics with
	// NumPartitions -1 and for auto-created topics. Default 1, as Kafka.
	DefaultPartitions int
	// AutoCreateTopics is auto.create.topics.enable. Kafka's default is
	// true; here it is false so a misspelt topic fails instead of appearing.
	AutoCreateTopics bool
	// DisableConsumerProtocol leaves ConsumerGroupHeartbeat and
	// ConsumerGroupDescribe out of ApiVersions and refuses them, as a broker
	// whose group.coordinator.rebalance.protocols lacks "consumer" does, so
	// clients stay on the classic protocol. For a coordinator without a
	// consumer-group engine.
	DisableConsumerProtocol bool
	// ShareFetch serves ShareFetch and ShareAcknowledge as a share-partition
	// leader (share.go) and keeps __share_group_state, for a release with
	// production share groups (4.2+). Off: they are neither advertised nor
	// served.
	ShareFetch bool
	// ShareStatePartitions is share.coordinator.state.topic.num.partitions
	// for a new __share_group_state. Default 3 (Kafka's is 50).
	ShareStatePartitions int
	// ShareLockDuration is group.share.record.lock.duration.ms. Default:
	// the release's default.
	ShareLockDuration time.Duration
	// ShareDeliveryCountLimit is group.share.delivery.count.limit. Default:
	// the release's default.
	ShareDeliveryCountLimit int
	// TickInterval is how often the server calls the coordinator's Tick,
	// which fires session, join and rebalance timers. Default 10ms.
	TickInterval time.Duration
	// Now is the server's clock. Default time.Now.
	Now func() time.Time
	// Logf receives the server's log lines. Default: discard.
	Logf func(format string, args ...any)

	// NewCoordinator builds the group coordinator the server hands the
	// group APIs to, behaving as Kafka release v, reading the server's
	// topics. It is called at Start and again whenever the coordinator must
	// be rebuilt from the log (after a failed append). Required:
	// reference.New (package coordinator/wire/reference) builds the
	// reference coordinator.
	NewCoordinator func(v version.Version, topics Topics) (Coordinator, error)
}

func (c Config) withDefaults() Config {
	if c.Version == 0 {
		c.Version = version.Default
	}
	if c.NodeID == 0 {
		c.NodeID = 1
	}
	if c.ClusterID == "" {
		c.ClusterID = "groupquake-embedded"
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.OffsetsPartitions == 0 {
		c.OffsetsPartitions = 4
	}
	if c.DefaultPartitions == 0 {
		c.DefaultPartitions = 1
	}
	if c.ShareStatePartitions == 0 {
		c.ShareStatePartitions = 3
	}
	if c.TickInterval == 0 {
		c.TickInterval = 10 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c
}

func (c Config) validate() error {
	if !c.Version.IsServed() {
		_, err := version.Parse(c.Version.String())
		return fmt.Errorf("wire config: %w", err)
	}
	if c.NodeID < 0 {
		return fmt.Errorf("wire config: NodeID %d is negative; Kafka node ids are ≥ 0", c.NodeID)
	}
	if c.OffsetsPartitions < 0 {
		return fmt.Errorf("wire config: OffsetsPartitions %d is negative", c.OffsetsPartitions)
	}
	if c.DefaultPartitions < 0 {
		return fmt.Errorf("wire config: DefaultPartitions %d is negative", c.DefaultPartitions)
	}
	if c.ShareFetch && c.Version.Profile().ShareGroups != version.ShareProduction {
		return fmt.Errorf("wire config: ShareFetch with Kafka %s, whose share groups are not production-ready; use 4.2.0 or later", c.Version)
	}
	if c.ShareStatePartitions < 0 || c.ShareLockDuration < 0 || c.ShareDeliveryCountLimit < 0 {
		return fmt.Errorf("wire config: ShareStatePartitions %d, ShareLockDuration %v or ShareDeliveryCountLimit %d is negative", c.ShareStatePartitions, c.ShareLockDuration, c.ShareDeliveryCountLimit)
	}
	if c.TickInterval < 0 {
		return fmt.Errorf("wire config: TickInterval %v is negative", c.TickInterval)
	}
	if c.NewCoordinator == nil {
		return errors.New("wire config: NewCoordinator is nil; use reference.New (package coordinator/wire/reference) for the reference coordinator")
	}
	return nil
}
