// Package kgoshare runs franz-go's own share consumer (kgo.ShareGroup,
// KIP-932) as a member of a share group: kgo sends every
// ShareGroupHeartbeat, ShareFetch and ShareAcknowledge itself (it
// pre-fetches in the background, one request at a time per broker,
// piggybacks acknowledgements, retries what it deems retryable, and
// accepts on the next poll whatever the application left unacknowledged).
// kgo has no hook that carries a request or its answer, so the member
// reports them by observing kgo's connections (clients/wiretap.ShareCalls):
// each request Sent just before it is written, its answer once the frame
// is read, before kgo acts on it; ShareFetch and ShareAcknowledge on the
// lane of the broker they go to.
//
// The application side is the same as clients/share's: Poll hands out
// records with their delivery count and lock deadline, Acknowledge marks
// them (kgo's Record.Ack), and kgo sends the marks with its next request
// to that broker.
package kgoshare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/option"
	"github.com/groupquake/groupquake/clients/share"
	"github.com/groupquake/groupquake/clients/wiretap"
)

// ErrClosed is returned by calls on a closed or abandoned member.
var ErrClosed = share.ErrClosed

// Opt configures a Member; the shape and names are those of every member
// package under clients/ (clients/options_shape_test.go).
type Opt = option.Opt[cfg]

type cfg struct {
	option.Common
	topics     []string
	maxRecords int32
}

// KgoOpts are the options of the member's kgo client: seed brokers and the
// dialer of its links.
func KgoOpts(o ...kgo.Opt) Opt {
	return option.New(func(c *cfg) { c.KgoOpts = append(c.KgoOpts, o...) })
}

// Topics are the topics the member subscribes to.
func Topics(t ...string) Opt { return option.New(func(c *cfg) { c.topics = append(c.topics, t...) }) }

// WithHooks receives the member's events.
func WithHooks(h clients.Hooks) Opt { return option.New(func(c *cfg) { c.Hooks = h }) }

// WithClock stamps the events (the run's clock); the default is
// clients.WallClock. kgo keeps its own timers.
func WithClock(cl clients.Clock) Opt { return option.New(func(c *cfg) { c.Clock = cl }) }

// MaxRecords is kgo.ShareMaxRecords (default 50, as clients/share).
func MaxRecords(n int32) Opt { return option.New(func(c *cfg) { c.maxRecords = n }) }

type key struct {
	topic     string
	partition int32
	offset    int64
}

// Member is one kgo share consumer in a share group.
type Member struct {
	name, group string
	cfg         cfg

	mu       sync.Mutex
	cl       *kgo.Client
	cancel   context.CancelFunc
	wire     *wiretap.ShareCalls
	held     map[key]*kgo.Record // handed out, not finally acknowledged
	assigned clients.Partitions
	closed   bool
}

// New builds a member named name (the harness's name) of share group
// group; it connects on Start.
func New(name, group string, opts ...Opt) (*Member, error) {
	c := cfg{maxRecords: 50}
	option.Apply(&c, opts...)
	switch {
	case name == "":
		return nil, errors.New("kgoshare: a member needs a name (the harness's name for it, e.g. m1)")
	case group == "":
		return nil, fmt.Errorf("kgoshare: member %s needs a share group id", name)
	case len(c.topics) == 0:
		return nil, fmt.Errorf("kgoshare: member %s needs at least one topic to subscribe to (Topics)", name)
	case c.maxRecords <= 0:
		return nil, fmt.Errorf("kgoshare: member %s: MaxRecords must be positive, got %d", name, c.maxRecords)
	}
	c.Defaults()
	return &Member{name: name, group: group, cfg: c, held: map[key]*kgo.Record{}, assigned: clients.Partitions{}}, nil
}

// Name is the harness's name for the member.
func (m *Member) Name() string { return m.name }

// Start creates the kgo client; kgo joins the share group in the
// background.
func (m *Member) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cl != nil || m.closed {
		return fmt.Errorf("kgoshare: member %s: Start called twice or after Close", m.name)
	}
	probe, err := kgo.NewClient(m.cfg.KgoOpts...)
	if err != nil {
		return fmt.Errorf("kgoshare: member %s: %w", m.name, err)
	}
	dial, _ := probe.OptValue(kgo.Dialer).(func(context.Context, string, string) (net.Conn, error))
	probe.Close()
	if dial == nil {
		return fmt.Errorf("kgoshare: member %s: kgo has no dialer to observe", m.name)
	}
	m.wire = wiretap.NewShareCalls(wiretap.CallsConfig{
		Group: m.group, Protocol: clients.Share, Client: "kgo",
		Event: m.event, Now: m.cfg.Clock.Now, Report: m.report,
	})
	// The client's own context: cancelled before a crashed member's client
	// is closed, so that its close sends nothing.
	cctx, cancel := context.WithCancel(context.Background())
	opts := append(slices.Clone(m.cfg.KgoOpts),
		kgo.ClientID("groupquake-"+m.name),
		kgo.ShareGroup(m.group),
		kgo.ConsumeTopics(m.cfg.topics...),
		kgo.ShareMaxRecords(m.cfg.maxRecords),
		kgo.WithContext(cctx),
		kgo.Dialer(wiretap.Dialer(dial, m.wire)),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		cancel()
		return fmt.Errorf("kgoshare: member %s: %w", m.name, err)
	}
	m.cl, m.cancel = cl, cancel
	return nil
}

// report passes an event on, keeping the assignment the heartbeats give.
func (m *Member) report(e clients.Event) {
	if e.Kind == clients.Heartbeat && e.Err == "" && e.Partitions != nil {
		m.mu.Lock()
		m.assigned = e.Partitions
		m.mu.Unlock()
	}
	m.cfg.Hooks.OnEvent(e)
}

func (m *Member) event(k clients.Kind) clients.Event {
	return clients.Event{Kind: k, Protocol: clients.Share, Member: m.name, Generation: -1, MemberEpoch: -1, GroupEpoch: -1, At: m.cfg.Clock.Now()}
}

func (m *Member) client() (*kgo.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if m.cl == nil {
		return nil, fmt.Errorf("kgoshare: member %s is not started: call Start first", m.name)
	}
	return m.cl, nil
}

// Poll returns the records kgo acquired, waiting at most until ctx ends
// (a ctx that ends is not an error). kgo accepts, as it polls, whatever
// the previous Poll handed out and was not acknowledged.
func (m *Member) Poll(ctx context.Context) ([]share.Record, error) {
	cl, err := m.client()
	if err != nil {
		return nil, err
	}
	fs := cl.PollFetches(ctx)
	if fs.IsClientClosed() {
		return nil, ErrClosed
	}
	var out []share.Record
	m.mu.Lock()
	defer m.mu.Unlock()
	fs.EachRecord(func(r *kgo.Record) {
		m.held[key{r.Topic, r.Partition, r.Offset}] = r
		out = append(out, share.Record{
			Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value,
			DeliveryCount: int16(r.DeliveryCount()), Deadline: r.AcquisitionDeadline(), Node: -1,
		})
	})
	return out, nil
}

// Acknowledge marks records the last polls handed out with type t
// (clients.AckAccept, AckRelease, AckReject, AckRenew); kgo sends the marks
// with its next request to each broker. A record the member does not hold
// is refused.
func (m *Member) Acknowledge(recs []share.Record, t int8) error {
	if err := clients.CheckAppAck(t); err != nil {
		return err
	}
	var st kgo.AckStatus
	switch t {
	case clients.AckAccept:
		st = kgo.AckAccept
	case clients.AckRelease:
		st = kgo.AckRelease
	case clients.AckReject:
		st = kgo.AckReject
	case clients.AckRenew:
		st = kgo.AckRenew
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	for _, r := range recs {
		if _, ok := m.held[key{r.Topic, r.Partition, r.Offset}]; !ok {
			return fmt.Errorf("%s-%d@%d: the member does not hold it (never handed out, or already acknowledged)", r.Topic, r.Partition, r.Offset)
		}
	}
	for _, r := range recs {
		k := key{r.Topic, r.Partition, r.Offset}
		m.held[k].Ack(st)
		if t != clients.AckRenew {
			delete(m.held, k)
		}
	}
	return nil
}

// Assigned is the assignment the last heartbeat answer gave.
func (m *Member) Assigned() clients.Partitions {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.assigned.Clone()
}

// Holding counts the records handed out and not finally acknowledged.
func (m *Member) Holding() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.held)
}

// Unsent is 0: kgo does not say which marks it has not sent yet.
func (m *Member) Unsent() int { return 0 }

// Close leaves the share group as kgo does: its final acknowledgements at
// share session epoch -1 on every broker, then the leave heartbeat.
func (m *Member) Close(ctx context.Context) error {
	m.mu.Lock()
	cl, cancel := m.cl, m.cancel
	if cl == nil || m.closed {
		m.closed = true
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	err := cl.LeaveGroupContext(ctx)
	cl.Close()
	cancel()
	if err != nil {
		return fmt.Errorf("kgoshare: member %s: leave share group %s: %w", m.name, m.group, err)
	}
	return nil
}

// Abandon is the member's process dying: the application calls nothing
// more. kgo itself keeps running until Drop (its requests go nowhere when
// the harness has black-holed its links first).
func (m *Member) Abandon() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
}

// Drop closes the abandoned member's client without a leave: its context
// is cancelled first, so its close sends nothing, and its connections
// close.
func (m *Member) Drop() {
	m.mu.Lock()
	cl, cancel := m.cl, m.cancel
	m.cl = nil
	m.mu.Unlock()
	if cl == nil {
		return
	}
	cancel()
	cl.Close()
}
