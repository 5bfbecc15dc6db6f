// Package saramaref is a clients.Member backed by IBM Sarama's consumer
// group (sarama.ConsumerGroup, classic protocol, eager rebalances), so that
// the Go client many teams run is judged under faults like groupquake's own
// members, kgo's and the Java KafkaConsumer. Strategies: Sarama's range,
// roundrobin and sticky balance strategies (Strategy); static membership
// through Sarama's Consumer.Group.InstanceId (InstanceID).
//
// How Sarama is driven: a goroutine calls ConsumerGroup.Consume in a loop,
// as Sarama's own example does; the handler's ConsumeClaim goroutines hand
// each claim's messages to Poll; Commit marks the offsets on the session
// (MarkOffset) and commits them synchronously (session.Commit), with
// auto-commit off. Sarama's balance strategy is offered first and range
// second, so a group that mixes Sarama with members offering range (Java's
// default, groupquake's classic member) agrees on range, and a group of
// Sarama members alone uses the strategy.
//
// What is reported, and from where:
//   - Calls (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit):
//     Sarama connects only through the member's dialer (sarama's
//     Net.Proxy.Dialer, which is the member's links wrapped by
//     clients/wiretap), seed and learned brokers alike, so every request is
//     reported Sent before it is written and answered once its response has
//     been read, as for kgo. FindCoordinator and OffsetFetch answers are
//     reported as facts (wiretap CallsConfig.Lookups).
//   - Ownership: the handler's Setup reports Assigned (the session's
//     claims, generation and member id) before any ConsumeClaim starts, so
//     it precedes every record; Cleanup, which Sarama runs once every
//     ConsumeClaim has returned and before the next JoinGroup or the
//     LeaveGroup of Close, reports Revoked, or Lost when the coordinator
//     said the member is out of the group (the session's cancel cause, or
//     a heartbeat of the session answered, UNKNOWN_MEMBER_ID,
//     ILLEGAL_GENERATION or FENCED_INSTANCE_ID): Sarama has no lost
//     callback.
//   - Records: the messages ConsumeClaim received, with the session's
//     generation.
//
// Invariants the Member keeps, which the history's ordering rules rely on
// (as clients/kgoref does with kgo.BlockRebalanceOnPoll):
//
//  1. Cleanup reports only while a Poll runs: between a Poll's return and
//     the next Poll it waits (Sarama's heartbeats go on), as Sarama waits
//     for a ConsumeClaim whose application is still processing a message.
//     A Commit made between two Polls therefore only covers partitions the
//     member still owns, at the generation it owns them. Setup reports at
//     once (an assignment only adds partitions).
//  2. Poll hands out a record only if its session is the current one, has
//     not ended, and still owns the partition when Poll returns: records
//     buffered when a session ended are dropped, never handed out (a
//     ConsumeClaim returns when its session's context is done).
//  3. Every OffsetCommit Sarama writes during Commit is reported as the
//     application's (App) and Commit returns what its answer said.
//
// What Sarama does not have: max.poll.interval.ms (a stalled member keeps
// its partitions while its heartbeats go on; MemberSpec.PollInterval is not
// passed on).
package saramaref

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/adapter"
	"github.com/groupquake/groupquake/clients/internal/option"
	"github.com/groupquake/groupquake/clients/internal/pollgate"
	"github.com/groupquake/groupquake/clients/wiretap"
)

// Version is the Sarama module version this package is built with (go.mod).
const Version = "v1.61.1"

// Strategies are the balance strategies a member can be given.
var Strategies = []string{sarama.RangeBalanceStrategyName, sarama.RoundRobinBalanceStrategyName, sarama.StickyBalanceStrategyName}

// Opt configures a Member; options are checked once, in New.
type Opt = option.Opt[cfg]

type cfg struct {
	adapter.Config
	strategy     string
	instanceID   string
	kafkaVersion sarama.KafkaVersion
}

// Assignor names the balance strategy (Sarama's word for the assignor)
// offered first: "range" (default), "roundrobin" or "sticky". Range is
// always offered after it.
func Assignor(name string) Opt { return option.New(func(c *cfg) { c.strategy = name }) }

// InstanceID makes the member static (Sarama's Consumer.Group.InstanceId,
// KIP-345). Sarama then sends no LeaveGroup on Close.
func InstanceID(id string) Opt { return option.New(func(c *cfg) { c.instanceID = id }) }

// WithHooks receives every event the member reports.
func WithHooks(h clients.Hooks) Opt { return option.New(func(c *cfg) { c.Hooks = h }) }

// KgoOpts are the member's links as kgo options (kgo.SeedBrokers and
// kgo.Dialer): Sarama's seed brokers and its only dialer.
func KgoOpts(o ...kgo.Opt) Opt {
	return option.New(func(c *cfg) { c.KgoOpts = append(c.KgoOpts, o...) })
}

// SessionTimeout is the classic session timeout (session.timeout.ms; 0
// keeps Sarama's default).
func SessionTimeout(d time.Duration) Opt { return option.New(func(c *cfg) { c.SessionTimeout = d }) }

// HeartbeatInterval is the classic heartbeat interval
// (heartbeat.interval.ms; 0 keeps Sarama's default).
func HeartbeatInterval(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.HeartbeatInterval = d })
}

// RebalanceTimeout is the JoinGroup rebalance timeout (0 keeps Sarama's
// default).
func RebalanceTimeout(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.RebalanceTimeout = d })
}

// WithClock sets the time source of Event.At. Default: the wall clock.
func WithClock(cl clients.Clock) Opt { return option.New(func(c *cfg) { c.Clock = cl }) }

// KafkaVersion sets sarama.Config.Version, which decides the request
// versions Sarama sends; the default is sarama.V4_0_0_0, the oldest release
// groupquake runs.
func KafkaVersion(v sarama.KafkaVersion) Opt { return option.New(func(c *cfg) { c.kafkaVersion = v }) }

// Member is a Sarama consumer group behind clients.Member. Its
// adapter.Base holds Cleanup back between two Polls (invariant 1) and
// keeps the answer of the OffsetCommit written during Commit (invariant 3).
type Member struct {
	adapter.Base
	cfg cfg

	cg sarama.ConsumerGroup // set under Base.Mu once opened

	// Guarded by Base.Mu.
	sess   sarama.ConsumerGroupSession // the current session, from Setup to Cleanup
	sessID uint64
	// fenced is the error of a heartbeat of the current session answered
	// with a fencing error (fencingCodes), 0 if none.
	fenced int16
}

var _ clients.Member = (*Member)(nil)

// New returns a member named name (the harness's name, stable across
// rejoins) of group, subscribed to topics. It connects on Start.
func New(name, group string, topics []string, opts ...Opt) (*Member, error) {
	c := cfg{strategy: sarama.RangeBalanceStrategyName, kafkaVersion: sarama.V4_0_0_0}
	option.Apply(&c, opts...)
	if err := adapter.CheckIdentity("saramaref", name, group, topics); err != nil {
		return nil, err
	}
	if !slices.Contains(Strategies, c.strategy) {
		return nil, fmt.Errorf("saramaref: member %s: strategy %q is not one of %v", name, c.strategy, Strategies)
	}
	m := &Member{cfg: c}
	m.InstanceID = c.instanceID
	if err := m.Init("saramaref", name, group, slices.Clone(topics), c.Config); err != nil {
		return nil, err
	}
	return m, nil
}

// config is the Sarama configuration of the member.
func (m *Member) config() (*sarama.Config, error) {
	sc := sarama.NewConfig()
	sc.Version = m.cfg.kafkaVersion
	sc.ClientID = "groupquake-" + m.Name()
	sc.Net.Proxy.Enable = true
	sc.Net.Proxy.Dialer = dialer{dial: m.Dialer(), timeout: sc.Net.DialTimeout}
	sc.Consumer.Offsets.AutoCommit.Enable = false
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sc.Consumer.Return.Errors = true
	strategies := map[string]sarama.BalanceStrategy{
		sarama.RangeBalanceStrategyName:      sarama.NewBalanceStrategyRange(),
		sarama.RoundRobinBalanceStrategyName: sarama.NewBalanceStrategyRoundRobin(),
		sarama.StickyBalanceStrategyName:     sarama.NewBalanceStrategySticky(),
	}
	sc.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategies[m.cfg.strategy]}
	if m.cfg.strategy != sarama.RangeBalanceStrategyName {
		sc.Consumer.Group.Rebalance.GroupStrategies = append(sc.Consumer.Group.Rebalance.GroupStrategies, strategies[sarama.RangeBalanceStrategyName])
	}
	if m.cfg.SessionTimeout > 0 {
		sc.Consumer.Group.Session.Timeout = m.cfg.SessionTimeout
	}
	if m.cfg.HeartbeatInterval > 0 {
		sc.Consumer.Group.Heartbeat.Interval = m.cfg.HeartbeatInterval
	}
	if m.cfg.RebalanceTimeout > 0 {
		sc.Consumer.Group.Rebalance.Timeout = m.cfg.RebalanceTimeout
	}
	sc.Consumer.Group.InstanceId = m.cfg.instanceID
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("saramaref: member %s: sarama refuses the configuration: %w", m.Name(), err)
	}
	return sc, nil
}

// dialer is Sarama's Net.Proxy.Dialer: every connection Sarama makes,
// to a seed or to a broker it learned from Metadata, goes through dial.
type dialer struct {
	dial    wiretap.DialFunc
	timeout time.Duration
}

func (d dialer) Dial(network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	return d.dial(ctx, network, addr)
}

// Start creates the consumer group and starts the Consume loop; Sarama
// joins in the background.
func (m *Member) Start(ctx context.Context) error {
	if err := m.Begin("Sarama", m.report); err != nil {
		return err
	}
	sc, err := m.config()
	if err != nil {
		return err
	}
	m.Run(func(ctx context.Context) { m.consume(ctx, sc) })
	return nil
}

// open creates the consumer group, again every second until it can:
// sarama.NewConsumerGroup connects to a seed broker and fails when none
// answers (a KafkaConsumer's constructor connects to nothing), and a member
// started while its brokers are down or cut off must still come up later.
func (m *Member) open(ctx context.Context, sc *sarama.Config) sarama.ConsumerGroup {
	for {
		cg, err := sarama.NewConsumerGroup(m.Seeds, m.Group, sc)
		if err == nil {
			m.Mu.Lock()
			defer m.Mu.Unlock()
			if m.ClosedLocked() {
				cg.Close()
				return nil
			}
			m.cg = cg
			return cg
		}
		if m.Changed(err) {
			m.fact(clients.Error, err, "sarama.NewConsumerGroup failed (it connects to a seed broker); the member tries again every second")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// consume opens the consumer group, then calls Consume until the member
// closes, as Sarama's example does: each call is one session (one
// generation); an error (a join that failed after Sarama's retries) is
// reported and Consume called again after Sarama's rebalance backoff.
func (m *Member) consume(ctx context.Context, sc *sarama.Config) {
	defer close(m.Done)
	if m.open(ctx, sc) == nil {
		return
	}
	go m.errors()
	h := handler{m}
	for ctx.Err() == nil {
		err := m.cg.Consume(ctx, m.Topics, h)
		if errors.Is(err, sarama.ErrClosedConsumerGroup) || ctx.Err() != nil {
			return
		}
		if err != nil {
			m.fact(clients.Error, err, "sarama ConsumerGroup.Consume returned an error; the member calls it again")
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}
}

// errors reports what Sarama returns on ConsumerGroup.Errors (commit,
// heartbeat and claim errors), each error once until another comes.
func (m *Member) errors() {
	for err := range m.cg.Errors() {
		if m.Changed(err) {
			m.fact(clients.Error, err, "sarama ConsumerGroup.Errors")
		}
	}
}

func (m *Member) fact(k clients.Kind, err error, why string) {
	m.Fact(k, err, why, adapter.KafkaCode[sarama.KError])
}

// report passes the wire's events on, and keeps the answer of the
// application's OffsetCommit for Commit.
func (m *Member) report(e clients.Event) {
	if !m.KeepAppCommit(e) && e.Kind != clients.Sent && e.Op == clients.OpHeartbeat && slices.Contains(fencingCodes, e.ErrCode) {
		m.Mu.Lock()
		if m.sess != nil && m.sess.GenerationID() == e.Generation {
			m.fenced = e.ErrCode
		}
		m.Mu.Unlock()
	}
	m.Emit(e)
}

// fencingCodes are the Kafka errors of fencingCauses.
var fencingCodes = []int16{kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code, kerr.FencedInstanceID.Code}

// handler is the sarama.ConsumerGroupHandler.
type handler struct{ m *Member }

// Setup reports the session's claims assigned at once: Sarama calls it
// when the SyncGroup answered, whether or not the application polls (an
// assignment only adds partitions, so it needs no hold, and holding it
// would date the ownership later than the coordinator gave it).
func (h handler) Setup(s sarama.ConsumerGroupSession) error {
	m := h.m
	parts := clients.Partitions{}
	for t, ps := range s.Claims() {
		if len(ps) > 0 {
			parts[t] = slices.Sorted(slices.Values(ps))
		}
	}
	m.Mu.Lock()
	m.sessID++
	m.sess = s
	m.Owning = parts.Clone()
	m.fenced = 0
	m.Mu.Unlock()
	if parts.Count() == 0 {
		return nil
	}
	m.Ownership(clients.Assigned, s.MemberID(), s.GenerationID(), parts, "sarama ConsumerGroupHandler.Setup: the session's claims, before any ConsumeClaim starts")
	return nil
}

// fencingCauses end a session because the coordinator no longer counts the
// member in its generation.
var fencingCauses = []error{sarama.ErrUnknownMemberId, sarama.ErrIllegalGeneration, sarama.ErrFencedInstancedId}

// cleanupKind says how the session that Cleanup ends ended. Lost when the
// coordinator said the member is out of its generation, as the session's
// cancel cause or as the answer of a heartbeat of the session (Sarama
// heartbeats on while Cleanup waits, and the first cause stays: a session
// ended on REBALANCE_IN_PROGRESS whose member was then removed for not
// rejoining within the rebalance timeout learns it from a heartbeat
// answered UNKNOWN_MEMBER_ID); lost too when the session ended because its
// heartbeats failed (no answer after Sarama's retries, the coordinator gone):
// the member lost contact and hands nothing off, and the coordinator may
// have expired it already. Revoked when the coordinator asked for a
// rebalance or the member ended the session itself (close, a claim that
// returned, a partition count that changed).
func cleanupKind(cause error, fencedCode int16) (clients.Kind, string) {
	why := "sarama ConsumerGroupHandler.Cleanup: the session ended, every ConsumeClaim returned, before the next JoinGroup or the LeaveGroup"
	if cause != nil && !errors.Is(cause, context.Canceled) {
		why += " (the session ended on: " + cause.Error() + ")"
	}
	switch {
	case slices.ContainsFunc(fencingCauses, func(e error) bool { return errors.Is(cause, e) }):
		return clients.Lost, why
	case fencedCode != 0:
		return clients.Lost, why + "; a heartbeat of the session was answered " + wiretap.ErrName(kerr.ErrorForCode(fencedCode))
	case slices.ContainsFunc(cleanEnds, func(e error) bool { return errors.Is(cause, e) }):
		return clients.Revoked, why
	}
	return clients.Lost, why + "; its heartbeats failed: not a clean hand-off"
}

// cleanEnds are the causes of a session that ended on the coordinator's
// request or the member's own: a clean hand-off (nil: never cancelled).
var cleanEnds = []error{nil, context.Canceled, sarama.ErrRebalanceInProgress, sarama.ErrClosedConsumerGroup, sarama.ErrSessionConsumeClaimExited, sarama.ErrSessionPartitionCountChanged}

// Cleanup reports the session's claims revoked (lost when the coordinator
// fenced the member), once a Poll runs.
func (h handler) Cleanup(s sarama.ConsumerGroupSession) error {
	m := h.m
	m.EnterGate()
	defer m.LeaveGate()
	m.Mu.Lock()
	parts := m.Owning
	fenced := m.fenced
	m.Owning = clients.Partitions{}
	m.sess = nil
	m.Mu.Unlock()
	if parts.Count() == 0 {
		return nil
	}
	cause := context.Cause(s.Context())
	kind, why := cleanupKind(cause, fenced)
	m.Ownership(kind, s.MemberID(), s.GenerationID(), parts, why)
	return nil
}

// ConsumeClaim hands the claim's messages to Poll until the session ends.
func (h handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	m := h.m
	m.Mu.Lock()
	id := m.sessID
	m.Mu.Unlock()
	gen := s.GenerationID()
	for {
		select {
		case <-s.Context().Done():
			return nil
		case msg, ok := <-c.Messages():
			if !ok {
				return nil
			}
			r := pollgate.Record{Gen: id, Ended: s.Context().Done(), Rec: clients.Record{Topic: msg.Topic, Partition: msg.Partition, Offset: msg.Offset, Key: msg.Key, Value: msg.Value, Generation: gen, MemberEpoch: -1}}
			select {
			case m.Recs <- r:
			case <-s.Context().Done():
				return nil
			}
		}
	}
}

// Poll lets Setup and Cleanup report (invariant 1), then returns the
// records received for the current session's partitions, waiting at most
// until ctx ends. A ctx that ends is not an error: it returns no records.
func (m *Member) Poll(ctx context.Context) ([]clients.Record, error) {
	// An ended session's records go no further: a ConsumeClaim returns
	// when its session's context is done (Sarama's example).
	return m.Base.Poll(ctx, func() (uint64, bool) { return m.sessID, m.sess != nil })
}

// ErrNoSession is returned by Commit between two sessions: Sarama has no
// session to commit with, and nothing is sent.
var ErrNoSession = errors.New("no Sarama session (between generations): nothing sent")

// Commit marks offsets on the current session (MarkOffset) and commits
// them (session.Commit, synchronous), and returns what the OffsetCommit's
// answer said: partitions the coordinator refused by Kafka error name, or
// an error when it refused the commit as a whole or no answer came.
// Sarama's session also commits, in the same request, any offset marked
// earlier and not committed yet (a commit that failed).
func (m *Member) Commit(ctx context.Context, offsets map[string]map[int32]int64) (map[string]map[int32]string, error) {
	current := func() (sarama.ConsumerGroupSession, bool) { return m.sess, m.sess != nil }
	return adapter.Commit(&m.Base, offsets, current, ErrNoSession, func(s sarama.ConsumerGroupSession) error {
		for t, ps := range offsets {
			for p, o := range ps {
				s.MarkOffset(t, p, o, "")
			}
		}
		s.Commit()
		return nil
	}, "sarama wrote no OffsetCommit (no coordinator, or nothing marked beyond what it had committed)")
}

// Close closes the consumer group: the session ends (Cleanup reports the
// claims revoked) and Sarama leaves the group (LeaveGroup; none for a
// static member, KIP-345).
func (m *Member) Close(ctx context.Context) error {
	if !m.BeginClose() {
		return nil
	}
	m.Mu.Lock()
	cg := m.cg
	m.Mu.Unlock()
	if cg == nil { // never opened: nothing joined
		m.Stop()
		return nil
	}
	if err := m.Shut(ctx, cg.Close); err != nil {
		// Sarama's Close returns the last error it drained from Errors (a
		// heartbeat's, a claim's) as well as a failed leave: a fact, whose
		// LeaveGroup, if any, is in the history as a call.
		m.fact(clients.Error, err, "sarama ConsumerGroup.Close")
	}
	return nil
}
