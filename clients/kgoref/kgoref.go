// Package kgoref is a clients.Member backed by kgo's own group consumer: the
// reference member that runs can use before our own protocol implementations
// (clients/classic, clients/consumer) are ready, and their interop partner
// afterwards. Classic JoinGroup/SyncGroup by default (kgo's
// cooperative-sticky balancer); the KIP-848 consumer protocol with
// Protocol(clients.Consumer), which turns on kgo.ServerSideBalancer.
//
// It reports ownership through clients.Hooks from kgo.OnPartitionsAssigned /
// Revoked / Lost, with the generation or member epoch kgo's GroupMetadata
// gives at that moment, and every group request kgo sends by the clients
// contract (Sent when it is written, the answer when its response is read),
// by observing kgo's connections (wiretap.Calls): kgo has no hook that carries a
// request or its answer. What it cannot report is why kgo did something:
// the Kafka error behind a Lost (kgo does not pass it to OnPartitionsLost)
// shows only as the answer that carried it.
//
// Invariants the Member keeps, which the history's ordering rules rely on:
//
//  1. Rebalance callbacks never run between a Poll and the next Poll
//     (kgo.BlockRebalanceOnPoll; Poll calls AllowRebalance first). A
//     Commit made between two Polls therefore only covers partitions the
//     member still owns, at the epoch it owns them.
//  2. Revoked is reported inside OnPartitionsRevoked, which kgo runs before
//     it acknowledges the revocation (the classic rejoin, the KIP-848
//     heartbeat with the smaller owned set), so the report precedes the
//     hand-off.
//  3. Assigned is reported inside OnPartitionsAssigned, before kgo starts
//     fetching the partitions, so it precedes every record of them.
//  4. Every OffsetCommit kgo writes during Commit is reported as the
//     application's (App), with the generation/epoch and member id it
//     carried, and answered before Commit returns unless ctx ended first
//     (kgo then abandons it; the connection may still answer it later).
package kgoref

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/adapter"
	"github.com/groupquake/groupquake/clients/internal/option"
	"github.com/groupquake/groupquake/clients/wiretap"
)

// Opt configures a Member; options are checked once, in New.
type Opt = option.Opt[cfg]

type cfg struct {
	adapter.Config
	protocol   clients.Protocol
	instanceID string
}

// Protocol selects the group protocol: clients.Classic (default) or
// clients.Consumer (KIP-848 through kgo.ServerSideBalancer, Kafka 4.0+).
func Protocol(p clients.Protocol) Opt { return option.New(func(c *cfg) { c.protocol = p }) }

// WithHooks receives every event the member reports.
func WithHooks(h clients.Hooks) Opt { return option.New(func(c *cfg) { c.Hooks = h }) }

// KgoOpts adds kgo client options: the links' seed brokers and dialer, a
// logger. Group options set by this package (group, topics, callbacks,
// balancers, auto-commit) are applied after them and win.
func KgoOpts(o ...kgo.Opt) Opt {
	return option.New(func(c *cfg) { c.KgoOpts = append(c.KgoOpts, o...) })
}

// SessionTimeout is the classic session timeout (kgo.SessionTimeout; 0
// keeps kgo's default). With the consumer protocol the broker owns it
// (group.consumer.session.timeout.ms) and it is not sent.
func SessionTimeout(d time.Duration) Opt { return option.New(func(c *cfg) { c.SessionTimeout = d }) }

// HeartbeatInterval is the classic heartbeat interval
// (kgo.HeartbeatInterval; 0 keeps kgo's default). With the consumer protocol
// the broker owns it (group.consumer.heartbeat.interval.ms).
func HeartbeatInterval(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.HeartbeatInterval = d })
}

// RebalanceTimeout is kgo.RebalanceTimeout (0 keeps kgo's default), sent
// with either protocol.
func RebalanceTimeout(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.RebalanceTimeout = d })
}

// InstanceID makes the member static (kgo.InstanceID, group.instance.id).
func InstanceID(id string) Opt { return option.New(func(c *cfg) { c.instanceID = id }) }

// WithClock sets the time source of Event.At. Default: the wall clock.
func WithClock(cl clients.Clock) Opt { return option.New(func(c *cfg) { c.Clock = cl }) }

// Member is a kgo group consumer behind clients.Member.
type Member struct {
	name, group string
	topics      []string
	cfg         cfg
	opts        []kgo.Opt

	wire *wiretap.Calls

	mu        sync.Mutex
	cl        *kgo.Client
	owned     clients.Partitions
	lastEpoch int32
	closed    bool
}

var _ clients.Member = (*Member)(nil)

// New returns a member named name (the harness's name, stable across
// rejoins) of group, subscribed to topics. It connects on Start.
func New(name, group string, topics []string, opts ...Opt) (*Member, error) {
	c := cfg{protocol: clients.Classic}
	option.Apply(&c, opts...)
	c.Defaults()
	if err := adapter.CheckIdentity("kgoref", name, group, topics); err != nil {
		return nil, err
	}
	switch {
	case c.protocol != clients.Classic && c.protocol != clients.Consumer:
		return nil, fmt.Errorf("kgoref: member %s: protocol %q is not %q or %q", name, c.protocol, clients.Classic, clients.Consumer)
	}
	m := &Member{name: name, group: group, topics: slices.Clone(topics), cfg: c, owned: clients.Partitions{}, lastEpoch: -1}
	o := append([]kgo.Opt(nil), c.KgoOpts...)
	o = append(o,
		kgo.ClientID("groupquake-"+name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(m.onAssigned),
		kgo.OnPartitionsRevoked(m.onRevoked),
		kgo.OnPartitionsLost(m.onLost),
	)
	if c.protocol == clients.Consumer {
		// ServerSideBalancer needs a range or sticky balancer first; sticky maps to the
		// broker's "uniform" assignor.
		o = append(o, kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))
	}
	if c.SessionTimeout > 0 {
		o = append(o, kgo.SessionTimeout(c.SessionTimeout))
	}
	if c.HeartbeatInterval > 0 {
		o = append(o, kgo.HeartbeatInterval(c.HeartbeatInterval))
	}
	if c.RebalanceTimeout > 0 {
		o = append(o, kgo.RebalanceTimeout(c.RebalanceTimeout))
	}
	if c.instanceID != "" {
		o = append(o, kgo.InstanceID(c.instanceID))
	}
	m.opts = o
	return m, nil
}

// Name implements clients.Member.
func (m *Member) Name() string { return m.name }

// Protocol implements clients.Member.
func (m *Member) Protocol() clients.Protocol { return m.cfg.protocol }

// Start creates the kgo client; kgo joins the group in the background.
func (m *Member) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cl != nil {
		return fmt.Errorf("kgoref: member %s already started", m.name)
	}
	// The dialer the options give (kgo's default when none), read from a
	// client that never connects, is wrapped so that kgo's group requests
	// can be reported (clients/wiretap.Calls).
	probe, err := kgo.NewClient(m.cfg.KgoOpts...)
	if err != nil {
		return fmt.Errorf("kgoref: member %s: %w", m.name, err)
	}
	dial, _ := probe.OptValue(kgo.Dialer).(func(context.Context, string, string) (net.Conn, error))
	probe.Close()
	if dial == nil {
		return fmt.Errorf("kgoref: member %s: kgo has no dialer to observe (OptValue(Dialer) is %T)", m.name, probe.OptValue(kgo.Dialer))
	}
	m.wire = wiretap.NewCalls(wiretap.CallsConfig{
		Group: m.group, Protocol: m.cfg.protocol, Client: "kgo",
		Event: m.event, Now: m.cfg.Clock.Now, Report: m.cfg.Hooks.OnEvent,
	})
	cl, err := kgo.NewClient(append(slices.Clone(m.opts), kgo.Dialer(wiretap.Dialer(dial, m.wire)))...)
	if err != nil {
		return fmt.Errorf("kgoref: member %s: %w", m.name, err)
	}
	m.cl = cl
	return nil
}

func (m *Member) client() (*kgo.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cl == nil {
		return nil, fmt.Errorf("kgoref: member %s is not started: call Start first", m.name)
	}
	if m.closed {
		return nil, fmt.Errorf("kgoref: member %s is closed", m.name)
	}
	return m.cl, nil
}

// Poll releases the rebalances the previous Poll held back (invariant 1),
// then returns the records kgo has fetched for owned partitions, waiting at
// most until ctx ends. A ctx that ends is not an error: it returns no records.
//
// kgo's group management never gives up on its own: after any error,
// UNRELEASED_INSTANCE_ID and FENCED_INSTANCE_ID included, it reports the
// error through the fetches (ErrGroupSession), backs off and joins again
// (groupConsumer.manageFailWait), as a supervisor would restart a process.
// The member is done for good only when its client is closed without Close
// asking: Poll then says so with clients.ErrStopped.
func (m *Member) Poll(ctx context.Context) ([]clients.Record, error) {
	cl, err := m.client()
	if err != nil {
		return nil, err
	}
	cl.AllowRebalance()
	fs := cl.PollFetches(ctx)
	if fs.IsClientClosed() {
		m.mu.Lock()
		closed := m.closed
		m.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("kgoref: member %s: client closed", m.name)
		}
		return nil, fmt.Errorf("%w: kgoref: member %s: its kgo client is closed", clients.ErrStopped, m.name)
	}
	var ferr error
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if ferr == nil {
			ferr = fmt.Errorf("kgoref: member %s: fetch %s-%d: %w", m.name, t, p, err)
		}
	})
	_, epoch := cl.GroupMetadata()
	var out []clients.Record
	fs.EachRecord(func(r *kgo.Record) {
		rec := clients.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
		rec.Generation, rec.MemberEpoch = m.cfg.protocol.Epochs(epoch)
		out = append(out, rec)
	})
	return out, ferr
}

// Owned implements clients.Member: the partitions kgo last handed the
// callbacks, minus those revoked or lost since.
func (m *Member) Owned() clients.Partitions {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned.Clone()
}

// Commit commits offsets with kgo's CommitOffsetsSync at kgo's current
// generation or member epoch, and reports the outcome (invariant 4). The
// returned map holds the partitions the coordinator refused, by Kafka error
// name; an error means the request as a whole failed.
func (m *Member) Commit(ctx context.Context, offsets map[string]map[int32]int64) (map[string]map[int32]string, error) {
	cl, err := m.client()
	if err != nil {
		return nil, err
	}
	if len(offsets) == 0 {
		return nil, nil
	}
	eo := make(map[string]map[int32]kgo.EpochOffset, len(offsets))
	for t, ps := range offsets {
		eo[t] = make(map[int32]kgo.EpochOffset, len(ps))
		for p, o := range ps {
			eo[t][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
	}
	var (
		perr   map[string]map[int32]string
		reqErr error
	)
	// The requests kgo writes now are the application's; their Sent and
	// answers are reported from the wire.
	m.wire.SetApp(true)
	defer m.wire.SetApp(false)
	cl.CommitOffsetsSync(ctx, eo, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			reqErr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 {
					continue
				}
				if perr == nil {
					perr = map[string]map[int32]string{}
				}
				if perr[t.Topic] == nil {
					perr[t.Topic] = map[int32]string{}
				}
				perr[t.Topic][p.Partition] = wiretap.ErrName(kerr.ErrorForCode(p.ErrorCode))
			}
		}
		// A coordinator that rejects a commit (stale generation or epoch) rejects every
		// partition with the same error: that is the request failing as a whole.
		if _, code, all := wiretap.CommitRejected(resp); all {
			reqErr = kerr.ErrorForCode(code)
			perr = nil
		}
	})
	return perr, reqErr
}

// Close leaves the group (kgo's LeaveGroup: LeaveGroup or a leave heartbeat
// at epoch -1) and closes the client.
func (m *Member) Close(ctx context.Context) error {
	m.mu.Lock()
	cl := m.cl
	if cl == nil || m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	cl.AllowRebalance()
	err := cl.LeaveGroupContext(ctx)
	cl.Close()
	if err != nil {
		return fmt.Errorf("kgoref: member %s: leave group %s: %w", m.name, m.group, err)
	}
	return nil
}

func (m *Member) event(k clients.Kind) clients.Event {
	return clients.Event{Kind: k, Protocol: m.cfg.protocol, Member: m.name, Generation: -1, MemberEpoch: -1, GroupEpoch: -1, At: m.cfg.Clock.Now()}
}

// ownership reports an ownership change from a kgo callback with the epoch
// kgo holds now, and updates Owned.
func (m *Member) ownership(k clients.Kind, cl *kgo.Client, ps map[string][]int32, why string) {
	if len(ps) == 0 {
		return // kgo calls OnPartitionsRevoked at the end of every session, also with nothing to revoke
	}
	memberID, epoch := cl.GroupMetadata()
	parts := clients.Partitions{}
	for t, p := range ps {
		s := slices.Clone(p)
		slices.Sort(s)
		parts[t] = s
	}
	m.mu.Lock()
	m.owned.Apply(k, parts)
	if k == clients.Assigned && epoch > 0 {
		m.lastEpoch = epoch // the Assigned event itself carries the epoch
	}
	m.mu.Unlock()
	ev := m.event(k)
	ev.MemberID = memberID
	ev.Generation, ev.MemberEpoch = m.cfg.protocol.Epochs(epoch)
	ev.Partitions = parts
	ev.Why = why
	m.cfg.Hooks.OnEvent(ev)
}

func (m *Member) onAssigned(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
	m.ownership(clients.Assigned, cl, ps, "kgo OnPartitionsAssigned: assigned before fetching starts")
}

func (m *Member) onRevoked(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
	m.ownership(clients.Revoked, cl, ps, "kgo OnPartitionsRevoked: released before kgo acknowledges the revocation")
}

func (m *Member) onLost(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
	m.ownership(clients.Lost, cl, ps, "kgo OnPartitionsLost: a fatal group error (kgo does not say which) ended the session")
}
