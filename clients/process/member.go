package process

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

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
	option.Common
	protocol   clients.Protocol
	assignor   string
	instanceID string
	timers     Timers
	properties map[string]string
	start      Starter
	stderr     io.Writer
	client     string
	transcript func(Entry)
	versions   []int
	ackDelay   time.Duration
	grace      time.Duration
}

// Protocol selects the group protocol: clients.Classic (default) or
// clients.Consumer.
func Protocol(p clients.Protocol) Opt { return option.New(func(c *cfg) { c.protocol = p }) }

// Assignor names the assignor hello asks for (empty: the client's default).
func Assignor(name string) Opt { return option.New(func(c *cfg) { c.assignor = name }) }

// InstanceID makes the member static (group.instance.id, KIP-345).
func InstanceID(id string) Opt { return option.New(func(c *cfg) { c.instanceID = id }) }

// WithHooks receives every event the member reports.
func WithHooks(h clients.Hooks) Opt { return option.New(func(c *cfg) { c.Hooks = h }) }

// KgoOpts are the member's links as kgo options (kgo.SeedBrokers and
// kgo.Dialer): the gateway dials the brokers with them.
func KgoOpts(o ...kgo.Opt) Opt {
	return option.New(func(c *cfg) { c.KgoOpts = append(c.KgoOpts, o...) })
}

// SessionTimeout is session.timeout.ms, carried by hello.
func SessionTimeout(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.timers.SessionMS = d.Milliseconds() })
}

// HeartbeatInterval is heartbeat.interval.ms, carried by hello.
func HeartbeatInterval(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.timers.HeartbeatMS = d.Milliseconds() })
}

// RebalanceTimeout is the classic rebalance timeout, carried by hello.
func RebalanceTimeout(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.timers.RebalanceMS = d.Milliseconds() })
}

// MaxPollInterval is max.poll.interval.ms, carried by hello.
func MaxPollInterval(d time.Duration) Opt {
	return option.New(func(c *cfg) { c.timers.PollIntervalMS = d.Milliseconds() })
}

// Properties are client settings hello carries as they are.
func Properties(p map[string]string) Opt {
	return option.New(func(c *cfg) { c.properties = maps.Clone(p) })
}

// WithClock sets the time source of events the client gives no time.
func WithClock(clk clients.Clock) Opt { return option.New(func(c *cfg) { c.Clock = clk }) }

// Start says how to start the member's process (Command.Starter,
// Host.Starter). Required.
func Start(s Starter) Opt { return option.New(func(c *cfg) { c.start = s }) }

// Stderr receives the process's standard error; by default the last lines
// are kept for error messages only.
func Stderr(w io.Writer) Opt { return option.New(func(c *cfg) { c.stderr = w }) }

// Client names the client in the events' whys ("the Java consumer").
func Client(name string) Opt { return option.New(func(c *cfg) { c.client = name }) }

// WithTranscript receives every message either way, in order, with the
// harness's time: what member-check judges.
func WithTranscript(f func(Entry)) Opt { return option.New(func(c *cfg) { c.transcript = f }) }

// OfferVersions replaces the versions hello offers (member-check offers
// one the client cannot speak, to see it refuse).
func OfferVersions(v ...int) Opt { return option.New(func(c *cfg) { c.versions = slices.Clone(v) }) }

// AckDelay holds every ack back by d (member-check: a client that goes on
// without waiting for its ack shows in the transcript).
func AckDelay(d time.Duration) Opt { return option.New(func(c *cfg) { c.ackDelay = d }) }

// AnswerGrace is how long past the time it was given a command's answer is
// waited for before the client is taken as stuck and killed (default 30s).
func AnswerGrace(d time.Duration) Opt { return option.New(func(c *cfg) { c.grace = d }) }

// Entry is one message of a transcript.
type Entry struct {
	At time.Time
	// FromClient: the client wrote it; else the harness did.
	FromClient bool
	Msg        Msg
	// Raw is the line as it was written (a line that did not parse has no
	// Msg.Type and says why in Err).
	Raw string
	Err string
	// End marks the end of the stream (the process exited, or its
	// connection closed); Msg and Raw are empty.
	End bool
}

// Member is a consumer-group member run as a process speaking the member
// protocol, behind clients.Member.
type Member struct {
	name, group string
	topics      []string
	cfg         cfg
	wire        *wiretap.Calls
	tail        *TailBuffer

	cmdMu sync.Mutex // one command at a time: the client answers them in order
	wmu   sync.Mutex // lines to the client

	mu        sync.Mutex
	conn      Conn
	gw        *gateway
	owned     clients.Partitions
	replies   chan Msg
	exited    chan struct{}
	exitErr   error
	closed    bool
	frozen    bool
	nextID    uint64
	ready     Msg // the client's ready
	appBusy   bool
	stopped   error
	killed    bool // Kill was called
	selfEnded bool // the stream ended before any Kill

	callOpen map[uint64]clients.Event // calls the client reported sent (calls "client")
}

var _ clients.Member = (*Member)(nil)

// New returns a member named name of group, subscribed to topics. The
// process starts on Start.
func New(name, group string, topics []string, opts ...Opt) (*Member, error) {
	c := cfg{protocol: clients.Classic, client: "the client"}
	option.Apply(&c, opts...)
	c.Defaults()
	if len(c.versions) == 0 {
		c.versions = Versions
	}
	if c.grace <= 0 {
		c.grace = 30 * time.Second
	}
	if err := adapter.CheckIdentity("process", name, group, topics); err != nil {
		return nil, err
	}
	switch {
	case c.protocol != clients.Classic && c.protocol != clients.Consumer:
		return nil, fmt.Errorf("process: member %s: protocol %q is not %q or %q", name, c.protocol, clients.Classic, clients.Consumer)
	case c.start == nil:
		return nil, fmt.Errorf("process: member %s has no program to run: pass Start(Command{...}.Starter())", name)
	}
	m := &Member{name: name, group: group, topics: slices.Clone(topics), cfg: c, owned: clients.Partitions{}, tail: &TailBuffer{}, callOpen: map[uint64]clients.Event{}}
	m.wire = wiretap.NewCalls(wiretap.CallsConfig{
		Group: group, Protocol: c.protocol, Client: c.client,
		Event: m.event, Now: m.now, Report: m.report,
	})
	return m, nil
}

// Name implements clients.Member.
func (m *Member) Name() string { return m.name }

// Protocol implements clients.Member.
func (m *Member) Protocol() clients.Protocol { return m.cfg.protocol }

func (m *Member) now() time.Time { return m.cfg.Clock.Now() }

func (m *Member) report(e clients.Event) { m.cfg.Hooks.OnEvent(e) }

func (m *Member) event(k clients.Kind) clients.Event {
	return clients.Event{Kind: k, Protocol: m.cfg.protocol, Member: m.name, InstanceID: m.cfg.instanceID, Generation: -1, MemberEpoch: -1, GroupEpoch: -1, At: m.now()}
}

// Ready is the client's ready message (after Start): its protocol version,
// its name and version, and what it reports.
func (m *Member) Ready() Msg {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ready
}

// CommitsOnItsOwn says whether the client commits on its own (ready said
// commits "own"): the harness then asks it for no commit, and its commits
// are recorded from the wire as the member's own.
func (m *Member) CommitsOnItsOwn() bool { return m.Ready().Commits == CommitsOwn }

// hello is the hello message of this member with the given bootstrap.
func (m *Member) hello(bootstrap []string) Msg {
	c := m.cfg
	t := c.timers
	if c.protocol == clients.Consumer {
		t.SessionMS, t.HeartbeatMS = 0, 0 // the broker owns them
	}
	h := Msg{Type: THello, Versions: c.versions, Member: m.name, Group: m.group, Topics: m.topics, Bootstrap: bootstrap,
		GroupProtocol: string(c.protocol), Assignor: c.assignor, InstanceID: c.instanceID, Properties: c.properties}
	if t != (Timers{}) {
		h.Timers = &t
	}
	return h
}

// Start opens the member's gateway, starts its process, says hello and
// subscribes; it returns once the client has subscribed (it joins on its
// first poll, or on its own).
func (m *Member) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.conn != nil {
		m.mu.Unlock()
		return fmt.Errorf("process: member %s already started", m.name)
	}
	seeds, dial, err := Links(m.cfg.KgoOpts)
	if err != nil {
		m.mu.Unlock()
		return fmt.Errorf("process: member %s: %w", m.name, err)
	}
	gw := newGateway(wiretap.Dialer(dial, m.wireObserver()))
	bootstrap, err := gw.listenAll(seeds)
	if err != nil {
		m.mu.Unlock()
		gw.close()
		return fmt.Errorf("process: member %s: %w", m.name, err)
	}
	conn, err := m.cfg.start(Tee(m.tail, m.cfg.stderr))
	if err != nil {
		m.mu.Unlock()
		gw.close()
		return fmt.Errorf("process: member %s: starting its process: %w", m.name, err)
	}
	m.conn, m.gw = conn, gw
	m.replies, m.exited = make(chan Msg, 1), make(chan struct{})
	m.mu.Unlock()
	go m.read(conn)
	r, err := m.command(ctx, m.hello(bootstrap), 0)
	if err == nil && r.Type == TReady {
		err = m.checkReady(r)
	}
	if err != nil {
		if r.Type == TError {
			// A client that refused hello ends: give it the time to.
			select {
			case <-m.exited:
			case <-time.After(5 * time.Second):
			}
		}
		m.Kill()
		return err
	}
	m.mu.Lock()
	m.ready = r
	m.mu.Unlock()
	if _, err := m.command(ctx, Msg{Type: TSubscribe, Topics: m.topics}, 0); err != nil {
		m.Kill()
		return err
	}
	return nil
}

// checkReady refuses a ready the harness cannot work with.
func (m *Member) checkReady(r Msg) error {
	switch {
	case !slices.Contains(m.cfg.versions, r.Version):
		return fmt.Errorf("process: member %s: the client chose protocol version %d, which hello did not offer (%v)", m.name, r.Version, m.cfg.versions)
	case r.Calls != "" && r.Calls != CallsWire && r.Calls != CallsClient:
		return fmt.Errorf("process: member %s: ready says calls %q, want %q or %q", m.name, r.Calls, CallsWire, CallsClient)
	case r.Commits != "" && r.Commits != CommitsApplication && r.Commits != CommitsOwn:
		return fmt.Errorf("process: member %s: ready says commits %q, want %q or %q", m.name, r.Commits, CommitsApplication, CommitsOwn)
	}
	return nil
}

// wireObserver reports the calls read off the wire, unless the client
// reports them itself (ready decides; until then the wire reports).
func (m *Member) wireObserver() wiretap.Observer { return clientCalls{m} }

// clientCalls passes the wire's observations on while the client has not
// said it reports its calls itself.
type clientCalls struct{ m *Member }

func (c clientCalls) Wants(k int16) bool {
	return c.m.Ready().Calls != CallsClient && c.m.wire.Wants(k)
}
func (c clientCalls) Request(r kmsg.Request) any             { return c.m.wire.Request(r) }
func (c clientCalls) Response(token any, resp kmsg.Response) { c.m.wire.Response(token, resp) }
func (c clientCalls) Lost(token any, err error)              { c.m.wire.Lost(token, err) }
func (c clientCalls) Broken(err error)                       { c.m.wire.Broken(err) }

// ErrNoSeeds is Links's error for kgo options that name no seed broker.
var ErrNoSeeds = errors.New("no seed brokers in the member's options")

// Links reads the seed brokers and dialer (a net.Dialer's by default) out
// of a member's kgo options: what a gateway listens for and dials with.
func Links(opts []kgo.Opt) ([]string, wiretap.DialFunc, error) {
	seeds, dial, err := adapter.Links(opts)
	if err != nil {
		return nil, nil, err
	}
	if len(seeds) == 0 {
		return nil, nil, ErrNoSeeds
	}
	return seeds, dial, nil
}

// Tee is where a member process's stderr goes: the member's tail, and
// extra too when it is not nil.
func Tee(tail, extra io.Writer) io.Writer {
	if extra == nil {
		return tail
	}
	return io.MultiWriter(tail, extra)
}

// send writes one message to the client.
func (m *Member) send(msg Msg) error {
	m.mu.Lock()
	conn := m.conn
	m.mu.Unlock()
	if conn == nil {
		return fmt.Errorf("process: member %s is not started", m.name)
	}
	line := msg.Line()
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if m.cfg.transcript != nil {
		m.cfg.transcript(Entry{At: m.now(), Msg: msg, Raw: strings.TrimSuffix(string(line), "\n")})
	}
	_, err := conn.In().Write(line)
	return err
}

// read handles the client's lines until its stream ends. A scanner stamps
// each line (the transcript's time) as it arrives, before the line is
// handled, so a line the client wrote while an ack was held back is seen as
// written before that ack.
func (m *Member) read(conn Conn) {
	lines := make(chan Entry, 4096)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(conn.Out())
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			raw := sc.Text()
			msg, err := Parse(sc.Bytes())
			e := Entry{At: m.now(), FromClient: true, Msg: msg, Raw: raw}
			if err != nil {
				e.Err = err.Error()
			}
			if m.cfg.transcript != nil {
				m.cfg.transcript(e)
			}
			lines <- e
		}
	}()
	for e := range lines {
		if e.Err != "" {
			ev := m.event(clients.Error)
			ev.Err = e.Err
			ev.Why = fmt.Sprintf("%s wrote a line that is not a message of the member protocol: %q", m.cfg.client, trim(e.Raw, 200))
			m.report(ev)
			continue
		}
		m.handle(e.Msg)
	}
	err := conn.Wait()
	if m.cfg.transcript != nil {
		m.cfg.transcript(Entry{At: m.now(), FromClient: true, End: true})
	}
	m.mu.Lock()
	if err == nil {
		err = errors.New("the member's process exited")
	}
	m.exitErr = fmt.Errorf("%w; its last output: %s", err, m.tail.String())
	m.selfEnded = !m.killed
	close(m.exited)
	m.mu.Unlock()
}

// reply hands an answer to the command in progress; one that no command
// waits for is reported and dropped.
func (m *Member) reply(msg Msg) {
	select {
	case m.replies <- msg:
	default:
		ev := m.event(clients.Error)
		ev.Err = "an answer no command waits for: " + msg.Type
		ev.Why = fmt.Sprintf("%s sent %s of command %d while no command waited for it; ignored", m.cfg.client, msg.Type, msg.ID)
		m.report(ev)
	}
}

// handle acts on one message of the client.
func (m *Member) handle(msg Msg) {
	switch msg.Type {
	case TAssigned, TRevoked, TLost:
		m.ownership(msg)
		if m.cfg.ackDelay > 0 {
			time.Sleep(m.cfg.ackDelay)
		}
		m.send(Msg{Type: TAck, Seq: msg.Seq})
	case TCall:
		m.call(msg)
	case TOwnCommit:
		// The commit itself is on the wire (or in the client's call
		// messages); what the client says of it is in the transcript.
	case TStopped:
		m.stop(fmt.Errorf("%w: process: member %s: %s says it stopped for good: %s", clients.ErrStopped, m.name, m.cfg.client, msg.Error))
		ev := m.event(clients.Error)
		ev.Err, ev.At = msg.Error, clientTime(msg.At, ev.At)
		ev.Why = m.cfg.client + " stopped for good: " + msg.Error
		m.report(ev)
	case TError:
		if msg.ID != 0 || msg.Fatal {
			m.reply(msg) // the answer to the command in progress
			return
		}
		ev := m.event(clients.Error)
		ev.Err, ev.At = msg.Error, clientTime(msg.At, ev.At)
		ev.Why = m.cfg.client + " reported an error: " + msg.Error
		m.report(ev)
	case TReady, TSubscribed, TPolled, TCommitted, TClosed:
		m.reply(msg)
	default:
		ev := m.event(clients.Error)
		ev.Err = "unknown message type " + msg.Type
		ev.Why = fmt.Sprintf("%s sent a message the member protocol does not have (%q); ignored", m.cfg.client, msg.Type)
		m.report(ev)
	}
}

func clientTime(us int64, def time.Time) time.Time {
	if us <= 0 {
		return def
	}
	return time.UnixMicro(us)
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ownership reports a rebalance callback and updates Owned; it runs before
// the ack lets the callback return.
func (m *Member) ownership(msg Msg) {
	kind := map[string]clients.Kind{TAssigned: clients.Assigned, TRevoked: clients.Revoked, TLost: clients.Lost}[msg.Type]
	parts := clients.Partitions{}
	for _, p := range msg.Partitions {
		parts[p.Topic] = append(parts[p.Topic], p.Partition)
	}
	for t := range parts {
		slices.Sort(parts[t])
		parts[t] = slices.Compact(parts[t])
	}
	if parts.Count() == 0 {
		return
	}
	m.mu.Lock()
	m.owned.Apply(kind, parts)
	m.mu.Unlock()
	ev := m.event(kind)
	ev.At = clientTime(msg.At, ev.At)
	ev.MemberID, ev.Partitions = msg.MemberID, parts
	if msg.Epoch != nil {
		ev.Generation, ev.MemberEpoch = m.cfg.protocol.Epochs(*msg.Epoch)
	}
	switch kind {
	case clients.Assigned:
		ev.Why = m.cfg.client + "'s rebalance callback: partitions assigned; it consumes them only after the callback returns"
	case clients.Revoked:
		ev.Why = m.cfg.client + "'s rebalance callback: partitions revoked; it hands them back only after the callback returns"
	default:
		ev.Why = m.cfg.client + "'s rebalance callback: partitions lost; its membership ended (fenced, or its session or poll interval expired)"
	}
	m.report(ev)
}

// ops maps the protocol's op names to the contract's.
var ops = map[string]clients.Op{"join": clients.OpJoin, "sync": clients.OpSync, "heartbeat": clients.OpHeartbeat, "leave": clients.OpLeave, "commit": clients.OpCommit}

// call reports a call the client reports itself (ready said calls
// "client"); from a client whose calls the wire reports, it is ignored.
func (m *Member) call(msg Msg) {
	if m.Ready().Calls != CallsClient {
		ev := m.event(clients.Error)
		ev.Err = "a call message from a client whose calls the wire reports"
		ev.Why = m.cfg.client + " reported a call although its ready says the gateway reads its calls off the wire; ignored"
		m.report(ev)
		return
	}
	op, ok := ops[msg.Op]
	if !ok || msg.Call == 0 {
		ev := m.event(clients.Error)
		ev.Err = fmt.Sprintf("call %d with op %q", msg.Call, msg.Op)
		ev.Why = m.cfg.client + " reported a call without a number or with an op the protocol does not have; ignored"
		m.report(ev)
		return
	}
	ev := m.event(clients.Sent)
	ev.At = clientTime(msg.At, ev.At)
	ev.Call, ev.Op, ev.MemberID = msg.Call, op, msg.MemberID
	if msg.Epoch != nil {
		ev.Generation, ev.MemberEpoch = m.cfg.protocol.Epochs(*msg.Epoch)
	}
	if len(msg.Offsets) > 0 {
		ev.Offsets = offsetMap(msg.Offsets)
	}
	m.mu.Lock()
	if msg.Phase == "sent" {
		ev.App = op == clients.OpCommit && m.appBusy
		m.callOpen[msg.Call] = ev
		m.mu.Unlock()
		ev.Why = fmt.Sprintf("%s reports it sent a %s request", m.cfg.client, msg.Op)
		m.report(ev)
		return
	}
	sent, open := m.callOpen[msg.Call]
	delete(m.callOpen, msg.Call)
	m.mu.Unlock()
	if !open {
		e := m.event(clients.Error)
		e.Err = fmt.Sprintf("call %d answered but never sent", msg.Call)
		e.Why = m.cfg.client + " reported the answer of a call it never reported sent; ignored"
		m.report(e)
		return
	}
	ev.App = sent.App
	ev.Err, ev.ErrCode = msg.Error, msg.ErrorCode
	ev.Kind = map[clients.Op]clients.Kind{clients.OpJoin: clients.Joined, clients.OpSync: clients.Synced, clients.OpHeartbeat: clients.Heartbeat, clients.OpLeave: clients.Left, clients.OpCommit: clients.Committed}[op]
	switch {
	case op == clients.OpCommit && msg.Error != "" && len(msg.PartitionErrors) == 0:
		ev.Kind = clients.CommitFailed
	case (op == clients.OpJoin || op == clients.OpSync) && msg.Error != "":
		ev.Kind = clients.Error
	}
	if len(msg.Partitions) > 0 {
		ev.Partitions = clients.Partitions{}
		for _, p := range msg.Partitions {
			ev.Partitions[p.Topic] = append(ev.Partitions[p.Topic], p.Partition)
		}
	}
	if len(msg.PartitionErrors) > 0 {
		ev.PartitionErrs = map[string]map[int32]string{}
		for _, pe := range msg.PartitionErrors {
			if ev.PartitionErrs[pe.Topic] == nil {
				ev.PartitionErrs[pe.Topic] = map[int32]string{}
			}
			ev.PartitionErrs[pe.Topic][pe.Partition] = pe.Error
		}
	}
	if ev.Offsets == nil {
		ev.Offsets = sent.Offsets
	}
	ev.Why = fmt.Sprintf("%s reports the answer of its %s request", m.cfg.client, msg.Op)
	m.report(ev)
}

func offsetMap(offs []Offset) map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	for _, o := range offs {
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.Offset
	}
	return out
}

// await waits for the answer to command id, of type want.
func (m *Member) await(ctx context.Context, id uint64, want string) (Msg, error) {
	got := func(r Msg) (Msg, error) {
		if r.Type == TError {
			if r.ID != 0 && r.ID != id {
				return r, fmt.Errorf("process: member %s: an error answering command %d where command %d was in progress: %s", m.name, r.ID, id, r.Error)
			}
			return r, fmt.Errorf("process: member %s: %s", m.name, r.Error)
		}
		if r.Type != want {
			return r, fmt.Errorf("process: member %s: %s answered %q where %q was due", m.name, m.cfg.client, r.Type, want)
		}
		if r.ID != id {
			return r, fmt.Errorf("process: member %s: %s answered %s of command %d where command %d was in progress", m.name, m.cfg.client, r.Type, r.ID, id)
		}
		return r, nil
	}
	for {
		select {
		case r := <-m.replies:
			if r.ID != 0 && r.ID < id {
				ev := m.event(clients.Error)
				ev.Err = fmt.Sprintf("a late answer %s of command %d", r.Type, r.ID)
				ev.Why = fmt.Sprintf("%s answered command %d after the harness stopped waiting for it; ignored", m.cfg.client, r.ID)
				m.report(ev)
				continue
			}
			return got(r)
		case <-m.exited:
			// The reader hands over an answer before it sees the stream end: a
			// client that answered and exited (close) answered.
			select {
			case r := <-m.replies:
				return got(r)
			default:
			}
			return Msg{}, fmt.Errorf("process: member %s: %w", m.name, m.exitErr)
		case <-ctx.Done():
			return Msg{}, fmt.Errorf("process: member %s: no %s from %s before %w", m.name, want, m.cfg.client, ctx.Err())
		}
	}
}

// Probe sends a message of type typ, which the protocol does not have, as
// a command with an id, and returns the client's answer: an error with
// code unknown_message and that id is what the protocol asks for.
func (m *Member) Probe(ctx context.Context, typ string) (Msg, error) {
	m.cmdMu.Lock()
	defer m.cmdMu.Unlock()
	m.mu.Lock()
	m.nextID++
	msg := Msg{Type: typ, ID: m.nextID}
	m.mu.Unlock()
	if err := m.send(msg); err != nil {
		return Msg{}, err
	}
	select {
	case r := <-m.replies:
		return r, nil
	case <-m.Exited():
		return Msg{}, fmt.Errorf("process: member %s: %w", m.name, m.exitErr)
	case <-ctx.Done():
		return Msg{}, fmt.Errorf("no answer to a message of unknown type %q (id %d) within the time given", typ, msg.ID)
	}
}

// Crash sends the crash message, whatever the transport, and waits up to
// d for the member's stream to end; false if it did not.
func (m *Member) Crash(d time.Duration) bool {
	m.mu.Lock()
	gw := m.gw
	m.mu.Unlock()
	if gw != nil {
		gw.cutLinks()
	}
	m.send(Msg{Type: TCrash})
	select {
	case <-m.Exited():
		return true
	case <-time.After(d):
		return false
	}
}

// command sends msg (a command: its id is set here) and waits for its
// answer. The client bounds every command by the time it is given, so
// waiting past ctx only lets its answer arrive in order; a client that
// gives none within grace more is killed.
func (m *Member) command(ctx context.Context, msg Msg, grace time.Duration) (Msg, error) {
	m.cmdMu.Lock()
	defer m.cmdMu.Unlock()
	m.mu.Lock()
	conn, closed := m.conn, m.closed
	m.nextID++
	msg.ID = m.nextID
	m.mu.Unlock()
	want := Commands[msg.Type]
	if conn == nil {
		return Msg{}, fmt.Errorf("process: member %s is not started: call Start first", m.name)
	}
	if closed && msg.Type != TClose {
		return Msg{}, fmt.Errorf("process: member %s is closed", m.name)
	}
	if err := m.send(msg); err != nil {
		return Msg{}, fmt.Errorf("process: member %s: writing to its process: %w", m.name, err)
	}
	wait := remaining(ctx, time.Minute) + grace
	for {
		bound, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
		r, err := m.await(bound, msg.ID, want)
		late := bound.Err() != nil
		cancel()
		if err != nil && late {
			if m.isFrozen() {
				wait = grace // a stopped process answers once it is resumed
				continue
			}
			m.Kill() // a client that does not answer in time is stuck: its answers could no longer be matched
		}
		return r, err
	}
}

// remaining is the time left before ctx's deadline, def without one.
func remaining(ctx context.Context, def time.Duration) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return def
	}
	return max(time.Until(dl), 0)
}

// Poll asks the client to poll for the time ctx leaves (rebalance
// callbacks run inside it) and returns the records it hands out.
//
// A polled answer marked fatal (the client cannot go on: a KafkaConsumer
// threw an exception the application cannot recover from), a stopped
// message, or a process that ended on its own (no Close or Kill asked for
// it) stops the member for good: Poll returns clients.ErrStopped, then and
// on every later call, without polling again, so that its supervisor
// closes it and starts a new process.
func (m *Member) Poll(ctx context.Context) ([]clients.Record, error) {
	m.mu.Lock()
	stopped := m.stopped
	m.mu.Unlock()
	if stopped != nil {
		return nil, stopped
	}
	d := remaining(ctx, 250*time.Millisecond)
	r, err := m.command(ctx, Msg{Type: TPoll, TimeoutMS: d.Milliseconds()}, m.cfg.grace)
	if err != nil {
		return nil, m.endedOnItsOwn(err)
	}
	if r.Error != "" {
		if r.Fatal {
			return nil, m.stop(fmt.Errorf("%w: process: member %s: poll failed with %s, which the client cannot go on from: it is closed and started again", clients.ErrStopped, m.name, r.Error))
		}
		return nil, fmt.Errorf("process: member %s: poll: %s", m.name, r.Error)
	}
	gen, epoch := m.cfg.protocol.Epochs(r.EpochOr(-1))
	out := make([]clients.Record, 0, len(r.Records))
	for _, x := range r.Records {
		rec := clients.Record{Topic: x.Topic, Partition: x.Partition, Offset: x.Offset, Generation: gen, MemberEpoch: epoch}
		if rec.Key, err = decode(x.Key); err == nil {
			rec.Value, err = decode(x.Value)
		}
		if err != nil {
			return nil, fmt.Errorf("process: member %s: record %s/%d@%d: key or value is not base64: %v", m.name, x.Topic, x.Partition, x.Offset, err)
		}
		out = append(out, rec)
	}
	return out, nil
}

func decode(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	return base64.StdEncoding.DecodeString(s)
}

// stop records that the member stopped for good with err and returns it.
func (m *Member) stop(err error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped == nil {
		m.stopped = err
	}
	return m.stopped
}

// endedOnItsOwn turns err, a command's failure, into the member's stop
// when its process (or its connection to a hosting process) ended without
// Close or Kill asking: the process is gone, as a crash would leave it.
func (m *Member) endedOnItsOwn(err error) error {
	m.mu.Lock()
	exited, closed := m.exited, m.closed
	m.mu.Unlock()
	select {
	case <-exited:
	default:
		return err
	}
	if closed {
		return err
	}
	return m.stop(fmt.Errorf("%w: %w", clients.ErrStopped, err))
}

// Owned implements clients.Member: what the callbacks were given, minus
// what they revoked or lost since.
func (m *Member) Owned() clients.Partitions {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned.Clone()
}

// Commit asks the client to commit offsets synchronously within the time
// ctx leaves. The OffsetCommit requests it sends are reported as the
// application's; an error in its answer is returned (per-partition
// outcomes are in the reported answers). A client that commits on its own
// is asked nothing.
func (m *Member) Commit(ctx context.Context, offsets map[string]map[int32]int64) (map[string]map[int32]string, error) {
	if len(offsets) == 0 || m.CommitsOnItsOwn() {
		return nil, nil
	}
	msg := Msg{Type: TCommit, TimeoutMS: remaining(ctx, 15*time.Second).Milliseconds()}
	for _, t := range slices.Sorted(maps.Keys(offsets)) {
		for _, p := range slices.Sorted(maps.Keys(offsets[t])) {
			msg.Offsets = append(msg.Offsets, Offset{Topic: t, Partition: p, Offset: offsets[t][p]})
		}
	}
	m.wire.SetApp(true)
	m.mu.Lock()
	m.appBusy = true
	m.mu.Unlock()
	defer func() {
		m.wire.SetApp(false)
		m.mu.Lock()
		m.appBusy = false
		m.mu.Unlock()
	}()
	r, err := m.command(ctx, msg, m.cfg.grace)
	if err != nil {
		return nil, err
	}
	var perrs map[string]map[int32]string
	for _, pe := range r.PartitionErrors {
		if perrs == nil {
			perrs = map[string]map[int32]string{}
		}
		if perrs[pe.Topic] == nil {
			perrs[pe.Topic] = map[int32]string{}
		}
		perrs[pe.Topic][pe.Partition] = pe.Error
	}
	if r.Error != "" {
		return perrs, fmt.Errorf("process: member %s: commit: %s", m.name, r.Error)
	}
	return perrs, nil
}

// Close asks the client to close (it leaves the group) within the time ctx
// leaves, then waits for its stream to end and closes the gateway. A
// client that does not finish in time is killed.
func (m *Member) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.conn == nil || m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	exited := m.exited
	m.mu.Unlock()
	d := remaining(ctx, 10*time.Second)
	r, err := m.command(ctx, Msg{Type: TClose, TimeoutMS: d.Milliseconds()}, 5*time.Second)
	if err == nil && r.Error != "" {
		err = fmt.Errorf("process: member %s: close: %s", m.name, r.Error)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
	m.Kill()
	return err
}

// Kill ends the member at once, as a crash: a process of its own is killed
// (SIGKILL; the OS closes its sockets) and its gateway closed; a hosted
// member has its gateway cut for good first, so nothing it sends
// afterwards reaches a broker, then is told crash and abandons its
// consumer without a word. The harness calls it for a crash fault.
func (m *Member) Kill() error {
	m.mu.Lock()
	conn, gw, exited := m.conn, m.gw, m.exited
	m.closed = true
	m.killed = true
	m.gw = nil
	m.mu.Unlock()
	if conn == nil {
		return nil
	}
	if conn.Hosted() {
		if gw != nil {
			gw.cutLinks()
		}
		select {
		case <-exited:
		default:
			m.send(Msg{Type: TCrash})
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			// Left cut, still listening: its ports go to no other gateway
			// while the abandoned consumer may still try them.
			return fmt.Errorf("process: member %s did not end within 10s of its crash in the hosting process; its links stay cut", m.name)
		}
		if gw != nil {
			gw.close()
		}
		return nil
	}
	err := conn.Kill()
	if gw != nil {
		gw.close()
	}
	return err
}

// Freeze stops (on) or resumes the member, as a long GC pause or a
// descheduled process would. A process of its own: SIGSTOP and SIGCONT,
// its heartbeats stopped too. A hosted member: its gateway holds its
// traffic both ways and it is told freeze (thaw), which it must have
// declared it supports. Either way the command in progress is answered
// after the thaw.
func (m *Member) Freeze(on bool) error {
	m.mu.Lock()
	conn, gw := m.conn, m.gw
	m.mu.Unlock()
	if conn == nil {
		return fmt.Errorf("process: member %s has no process to freeze", m.name)
	}
	if !conn.Hosted() {
		m.mu.Lock()
		m.frozen = on
		m.mu.Unlock()
		return conn.Stop(on)
	}
	if !slices.Contains(m.Ready().Capabilities, CapFreeze) {
		return fmt.Errorf("process: member %s is hosted with others but its client does not support freeze (ready's capabilities %v)", m.name, m.Ready().Capabilities)
	}
	m.mu.Lock()
	m.frozen = on
	m.mu.Unlock()
	if on && gw != nil {
		gw.hold(true)
	}
	t := TThaw
	if on {
		t = TFreeze
	}
	err := m.send(Msg{Type: t})
	if !on && gw != nil {
		gw.hold(false)
	}
	return err
}

func (m *Member) isFrozen() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.frozen
}

// PID is the process id (the hosting process's for a hosted member; 0
// before Start).
func (m *Member) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn == nil {
		return 0
	}
	return m.conn.Pid()
}

// EndedByItself says whether the member's stream ended before the harness
// killed it (valid once Exited is closed).
func (m *Member) EndedByItself() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.selfEnded
}

// Exited is closed once the member's stream has ended (nil before Start).
func (m *Member) Exited() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exited
}
