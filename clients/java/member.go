// Package java is a clients.Member backed by the official Java
// KafkaConsumer, so that the reference client's guarantees under faults are
// judged like groupquake's own members and kgo's: kinds java-classic
// (classic protocol; eager range or cooperative-sticky, static membership
// by instance id) and java-consumer (KIP-848, server assignor uniform or
// range).
//
// By default each member runs in its own JVM (driver/Driver.java, compiled
// by Toolchain against the chosen kafka-clients version): a crash is then
// the member's process killed, as it would be in production, with the OS
// closing its sockets, and a freeze stops the whole process, its
// heartbeat thread included. Hosted(h) instead runs the member in the
// Host's one JVM with others, each with its own KafkaConsumer, thread and
// gateway: less memory and a faster start per member (see the benchmark),
// with crash and freeze emulated per member (Host says how, and how that
// differs from a process killed or stopped).
//
// Go drives the JVM over its stdin/stdout in lines (see Driver.java):
// poll, commit and close commands answered by polled, committed and closed
// events; the rebalance listener's assigned, revoked and lost events come
// in between, and the JVM waits for Go's ack of each before the listener
// returns, so the history has the event before the consumer goes on.
//
// Where the events come from, and why they are honest:
//   - Calls (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//     ConsumerGroupHeartbeat, OffsetCommit): the JVM connects to the brokers
//     only through the member's gateway (gateway.go), which reads every
//     request on its way out and every answer on its way in (wiretap.Calls). A
//     request is reported Sent before the broker can see it and answered
//     before the JVM can use the answer: the bracket the history's rule asks
//     for, measured outside the JVM, as for kgo.
//   - Ownership: from the ConsumerRebalanceListener, synchronously (above),
//     with the generation (classic) or member epoch (consumer) that
//     consumer.groupMetadata() gives inside the callback.
//   - Records: what consumer.poll returned, with the generation or member
//     epoch held when it returned.
//   - Links: the gateway dials onward with the member's dial function, so
//     the member's own toxiproxy proxies carry its traffic and link faults
//     reach it like any other member.
package java

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/wiretap"

	"github.com/groupquake/groupquake/internal/interrupt"
)

// Opt configures a Member; options are checked once, in New.
type Opt interface{ apply(*cfg) }

type opt func(*cfg)

func (o opt) apply(c *cfg) { o(c) }

type cfg struct {
	protocol          clients.Protocol
	assignor          string
	instanceID        string
	hooks             clients.Hooks
	kgoOpts           []kgo.Opt
	sessionTimeout    time.Duration
	heartbeatInterval time.Duration
	pollInterval      time.Duration
	now               func() time.Time
	rt                Runtime
	start             starter
	stderr            io.Writer
}

// Protocol selects the group protocol: clients.Classic (default) or
// clients.Consumer (group.protocol=consumer).
func Protocol(p clients.Protocol) Opt { return opt(func(c *cfg) { c.protocol = p }) }

// Assignor names the assignor: for the classic protocol "range" (Java's
// default list, RangeAssignor then CooperativeStickyAssignor: eager
// rebalances, the default) or "cooperative-sticky" (cooperative rebalances);
// for the consumer protocol the server assignor, "uniform" (default) or
// "range" (group.remote.assignor).
func Assignor(name string) Opt { return opt(func(c *cfg) { c.assignor = name }) }

// InstanceID makes the member static (group.instance.id, KIP-345).
func InstanceID(id string) Opt { return opt(func(c *cfg) { c.instanceID = id }) }

// Hooks receives every event the member reports.
func Hooks(h clients.Hooks) Opt { return opt(func(c *cfg) { c.hooks = h }) }

// KgoOpts are the member's links as kgo options (kgo.SeedBrokers and
// kgo.Dialer): the gateway dials the brokers with them.
func KgoOpts(o ...kgo.Opt) Opt { return opt(func(c *cfg) { c.kgoOpts = append(c.kgoOpts, o...) }) }

// Timers sets the classic session timeout and heartbeat interval, and
// max.poll.interval.ms, which is also the classic rebalance timeout in the
// Java client (0 keeps Java's default). With the consumer protocol the
// broker owns the session timeout and heartbeat interval, and Java refuses
// them: only the poll interval is passed.
func Timers(session, heartbeat, poll time.Duration) Opt {
	return opt(func(c *cfg) { c.sessionTimeout, c.heartbeatInterval, c.pollInterval = session, heartbeat, poll })
}

// Clock sets the time source of events that have no JVM time.
func Clock(now func() time.Time) Opt { return opt(func(c *cfg) { c.now = now }) }

// WithRuntime sets the JVM and class path (Toolchain.Prepare). Required.
func WithRuntime(rt Runtime) Opt { return opt(func(c *cfg) { c.rt = rt }) }

// Stderr receives the JVM's standard error (the client library's log);
// by default the last lines are kept for error messages only.
func Stderr(w io.Writer) Opt { return opt(func(c *cfg) { c.stderr = w }) }

// proc is a running driver: a JVM, or a scripted stand-in in tests.
type proc interface {
	stdin() io.Writer
	stdout() io.Reader
	kill() error
	wait() error
}

// starter starts a driver with the consumer configuration args.
type starter func(args []string, stderr io.Writer) (proc, error)

// withStarter replaces the JVM (tests).
func withStarter(s starter) Opt { return opt(func(c *cfg) { c.start = s }) }

// Member is a Java KafkaConsumer behind clients.Member.
type Member struct {
	name, group string
	topics      []string
	cfg         cfg
	wire        *wiretap.Calls
	tail        *tailBuffer

	cmdMu sync.Mutex // one command at a time: the JVM answers them in order
	wmu   sync.Mutex // lines to stdin (commands and acks)

	mu      sync.Mutex
	p       proc
	gw      *gateway
	owned   clients.Partitions
	replies chan reply
	exited  chan struct{}
	exitErr error
	closed  bool
	frozen  bool // stopped by Freeze: a command's answer waits for the thaw
	version string
	// stopped is the error Poll returns once the member stopped for good
	// (clients.ErrStopped): poll threw an exception the application cannot
	// go on from, or the JVM ended on its own.
	stopped error
}

var _ clients.Member = (*Member)(nil)

// New returns a member named name of group, subscribed to topics. The JVM
// starts on Start.
func New(name, group string, topics []string, opts ...Opt) (*Member, error) {
	c := cfg{protocol: clients.Classic, now: time.Now}
	for _, o := range opts {
		o.apply(&c)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.hooks == nil {
		c.hooks = clients.HookFunc(func(clients.Event) {})
	}
	switch {
	case name == "":
		return nil, errors.New("java: a member needs a name (the harness's name for it, e.g. m1)")
	case group == "":
		return nil, fmt.Errorf("java: member %s needs a group id", name)
	case len(topics) == 0:
		return nil, fmt.Errorf("java: member %s needs at least one topic to subscribe to", name)
	case c.protocol != clients.Classic && c.protocol != clients.Consumer:
		return nil, fmt.Errorf("java: member %s: protocol %q is not %q or %q", name, c.protocol, clients.Classic, clients.Consumer)
	case c.start == nil && c.rt.Classpath == "":
		return nil, fmt.Errorf("java: member %s has no runtime: pass WithRuntime(Toolchain.Prepare(...))", name)
	}
	if c.assignor == "" {
		c.assignor = "range"
		if c.protocol == clients.Consumer {
			c.assignor = "uniform"
		}
	}
	ok := c.protocol == clients.Classic && (c.assignor == "range" || c.assignor == "cooperative-sticky") ||
		c.protocol == clients.Consumer && (c.assignor == "uniform" || c.assignor == "range")
	if !ok {
		return nil, fmt.Errorf("java: member %s: assignor %q does not fit the %s protocol (classic: range, cooperative-sticky; consumer: uniform, range)", name, c.assignor, c.protocol)
	}
	if c.start == nil {
		c.start = jvmStarter(c.rt)
	}
	m := &Member{name: name, group: group, topics: slices.Clone(topics), cfg: c, owned: clients.Partitions{}, tail: &tailBuffer{}}
	m.wire = wiretap.NewCalls(wiretap.CallsConfig{
		Group: group, Protocol: c.protocol, Client: "the Java consumer",
		Event: m.event, Now: m.now, Report: m.report,
	})
	return m, nil
}

// Name implements clients.Member.
func (m *Member) Name() string { return m.name }

// Protocol implements clients.Member.
func (m *Member) Protocol() clients.Protocol { return m.cfg.protocol }

func (m *Member) now() time.Time { return m.cfg.now() }

func (m *Member) report(e clients.Event) { m.cfg.hooks.OnEvent(e) }

func (m *Member) event(k clients.Kind) clients.Event {
	return clients.Event{Kind: k, Protocol: m.cfg.protocol, Member: m.name, InstanceID: m.cfg.instanceID, Generation: -1, MemberEpoch: -1, GroupEpoch: -1, At: m.now()}
}

// config is the consumer configuration the JVM gets, as key=value.
func (m *Member) config(bootstrap []string) []string {
	c := m.cfg
	args := []string{
		"bootstrap.servers=" + strings.Join(bootstrap, ","),
		"group.id=" + m.group,
		"client.id=groupquake-" + m.name,
		"topics=" + strings.Join(m.topics, ","),
		"enable.auto.commit=false",
		"auto.offset.reset=earliest",
		"group.protocol=" + string(c.protocol),
	}
	if c.instanceID != "" {
		args = append(args, "group.instance.id="+c.instanceID)
	}
	if c.pollInterval > 0 {
		args = append(args, "max.poll.interval.ms="+ms(c.pollInterval))
	}
	if c.protocol == clients.Consumer {
		return append(args, "group.remote.assignor="+c.assignor)
	}
	strategy := "org.apache.kafka.clients.consumer.RangeAssignor,org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
	if c.assignor == "cooperative-sticky" {
		strategy = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
	}
	args = append(args, "partition.assignment.strategy="+strategy)
	if c.sessionTimeout > 0 {
		args = append(args, "session.timeout.ms="+ms(c.sessionTimeout))
	}
	if c.heartbeatInterval > 0 {
		args = append(args, "heartbeat.interval.ms="+ms(c.heartbeatInterval))
	}
	return args
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Start opens the member's gateway, starts its JVM and returns once the
// consumer is constructed and subscribed (it joins on its first poll).
func (m *Member) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.p != nil {
		m.mu.Unlock()
		return fmt.Errorf("java: member %s already started", m.name)
	}
	seeds, dial, err := links(m.cfg.kgoOpts)
	if err != nil {
		m.mu.Unlock()
		return fmt.Errorf("java: member %s: %w", m.name, err)
	}
	gw := newGateway(wiretap.Dialer(dial, m.wire))
	var bootstrap []string
	for _, s := range seeds {
		a, err := gw.listen(s)
		if err != nil {
			m.mu.Unlock()
			gw.close()
			return fmt.Errorf("java: member %s: %w", m.name, err)
		}
		bootstrap = append(bootstrap, a)
	}
	var stderr io.Writer = m.tail
	if m.cfg.stderr != nil {
		stderr = io.MultiWriter(m.tail, m.cfg.stderr)
	}
	p, err := m.cfg.start(m.config(bootstrap), stderr)
	if err != nil {
		m.mu.Unlock()
		gw.close()
		return fmt.Errorf("java: member %s: starting the JVM: %w", m.name, err)
	}
	m.p, m.gw = p, gw
	m.replies, m.exited = make(chan reply, 1), make(chan struct{})
	m.mu.Unlock()
	go m.read(p)
	r, err := m.await(ctx, "ready")
	if err != nil {
		m.Kill()
		return err
	}
	m.version = r.Version
	return nil
}

// links reads the seed brokers and dialer out of the member's kgo options.
func links(opts []kgo.Opt) ([]string, wiretap.DialFunc, error) {
	probe, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, err
	}
	defer probe.Close()
	seeds, _ := probe.OptValue(kgo.SeedBrokers).([]string)
	dial, _ := probe.OptValue(kgo.Dialer).(func(context.Context, string, string) (net.Conn, error))
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	if len(seeds) == 0 {
		return nil, nil, errors.New("no seed brokers in the member's options")
	}
	return seeds, dial, nil
}

// msg is one line from the JVM.
type msg struct {
	Ev         string    `json:"ev"`
	At         int64     `json:"at"`
	MemberID   string    `json:"member_id"`
	Generation *int32    `json:"generation"`
	InstanceID string    `json:"instance_id"`
	Partitions []tp      `json:"partitions"`
	Records    []jrecord `json:"records"`
	Error      string    `json:"error"`
	Class      string    `json:"class"`
	Sync       bool      `json:"sync"`
	Fatal      bool      `json:"fatal"`
	Version    string    `json:"version"`
}

type tp struct {
	Topic     string
	Partition int32
}

func (t *tp) UnmarshalJSON(b []byte) error {
	var a [2]json.RawMessage
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if err := json.Unmarshal(a[0], &t.Topic); err != nil {
		return err
	}
	return json.Unmarshal(a[1], &t.Partition)
}

type jrecord struct {
	Topic      string
	Partition  int32
	Offset     int64
	Key, Value []byte
}

func (r *jrecord) UnmarshalJSON(b []byte) error {
	var a [5]json.RawMessage
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	var k, v string
	for i, dst := range []any{&r.Topic, &r.Partition, &r.Offset, &k, &v} {
		if err := json.Unmarshal(a[i], dst); err != nil {
			return err
		}
	}
	var err error
	if r.Key, err = base64.StdEncoding.DecodeString(k); err != nil {
		return err
	}
	r.Value, err = base64.StdEncoding.DecodeString(v)
	return err
}

// reply is the answer to the command in progress.
type reply = msg

// read handles the JVM's lines until its stdout closes.
func (m *Member) read(p proc) {
	sc := bufio.NewScanner(p.stdout())
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var e msg
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			ev := m.event(clients.Error)
			ev.Err = err.Error()
			ev.Why = fmt.Sprintf("the JVM wrote a line that is not an event: %q", trim(sc.Text(), 200))
			m.report(ev)
			continue
		}
		switch e.Ev {
		case "assigned", "revoked", "lost":
			m.ownership(e)
			if e.Sync {
				m.writeLine("ack")
			}
		case "error":
			ev := m.event(clients.Error)
			ev.Err, ev.At = e.Error, jvmTime(e.At, ev.At)
			ev.Why = "the Java driver reported an error: " + e.Error
			m.report(ev)
			if e.Fatal {
				m.replies <- e
			}
		default:
			m.replies <- e
		}
	}
	err := p.wait()
	m.mu.Lock()
	if err == nil {
		err = errors.New("the JVM exited")
	}
	m.exitErr = fmt.Errorf("%w; its last output: %s", err, m.tail.String())
	close(m.exited)
	m.mu.Unlock()
}

func jvmTime(us int64, def time.Time) time.Time {
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

// ownership reports a rebalance listener call and updates Owned; it runs
// before the ack lets the listener return.
func (m *Member) ownership(e msg) {
	kind := map[string]clients.Kind{"assigned": clients.Assigned, "revoked": clients.Revoked, "lost": clients.Lost}[e.Ev]
	parts := clients.Partitions{}
	for _, p := range e.Partitions {
		parts[p.Topic] = append(parts[p.Topic], p.Partition)
	}
	for t := range parts {
		slices.Sort(parts[t])
		parts[t] = slices.Compact(parts[t])
	}
	m.mu.Lock()
	for t, ps := range parts {
		for _, p := range ps {
			cur := m.owned[t]
			i, found := slices.BinarySearch(cur, p)
			switch {
			case kind == clients.Assigned && !found:
				m.owned[t] = slices.Insert(cur, i, p)
			case kind != clients.Assigned && found:
				m.owned[t] = slices.Delete(cur, i, i+1)
			}
		}
		if len(m.owned[t]) == 0 {
			delete(m.owned, t)
		}
	}
	m.mu.Unlock()
	ev := m.event(kind)
	ev.At = jvmTime(e.At, ev.At)
	ev.MemberID, ev.Partitions = e.MemberID, parts
	if e.Generation != nil {
		ev.Generation, ev.MemberEpoch = m.cfg.protocol.Epochs(*e.Generation)
	}
	switch kind {
	case clients.Assigned:
		ev.Why = "ConsumerRebalanceListener.onPartitionsAssigned: the consumer fetches them only after it returns"
	case clients.Revoked:
		ev.Why = "ConsumerRebalanceListener.onPartitionsRevoked: the consumer hands them back only after it returns"
	default:
		ev.Why = "ConsumerRebalanceListener.onPartitionsLost: the consumer's membership ended (fenced, or its session or poll interval expired)"
	}
	m.report(ev)
}

func (m *Member) writeLine(line string) error {
	m.mu.Lock()
	p := m.p
	m.mu.Unlock()
	m.wmu.Lock()
	defer m.wmu.Unlock()
	_, err := io.WriteString(p.stdin(), line+"\n")
	return err
}

// await waits for the answer to the command in progress, named want.
func (m *Member) await(ctx context.Context, want string) (msg, error) {
	got := func(r msg) (msg, error) {
		if r.Ev == "error" {
			return r, fmt.Errorf("java: member %s: %s", m.name, r.Error)
		}
		if r.Ev != want {
			return r, fmt.Errorf("java: member %s: the JVM answered %q where %q was due", m.name, r.Ev, want)
		}
		return r, nil
	}
	select {
	case r := <-m.replies:
		return got(r)
	case <-m.exited:
		// The reader hands over an answer before it sees the JVM exit: a
		// JVM that answered and exited (close) answered.
		select {
		case r := <-m.replies:
			return got(r)
		default:
		}
		return msg{}, fmt.Errorf("java: member %s: %w", m.name, m.exitErr)
	case <-ctx.Done():
		return msg{}, fmt.Errorf("java: member %s: no %s from the JVM before %w", m.name, want, ctx.Err())
	}
}

// command sends line and waits for its answer. The JVM bounds every
// command by the time it is given, so waiting past ctx only lets its answer
// arrive in order; a JVM that gives none within grace more is killed.
func (m *Member) command(ctx context.Context, line, want string, grace time.Duration) (msg, error) {
	m.cmdMu.Lock()
	defer m.cmdMu.Unlock()
	m.mu.Lock()
	p, closed := m.p, m.closed
	m.mu.Unlock()
	if p == nil {
		return msg{}, fmt.Errorf("java: member %s is not started: call Start first", m.name)
	}
	if closed && want != "closed" {
		return msg{}, fmt.Errorf("java: member %s is closed", m.name)
	}
	if err := m.writeLine(line); err != nil {
		return msg{}, fmt.Errorf("java: member %s: writing to the JVM: %w", m.name, err)
	}
	wait := remaining(ctx, time.Minute) + grace
	for {
		bound, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
		r, err := m.await(bound, want)
		late := bound.Err() != nil
		cancel()
		if err != nil && late {
			if m.isFrozen() {
				wait = grace // a stopped JVM answers once it is resumed
				continue
			}
			m.Kill() // a JVM that does not answer in time is stuck: its answers could no longer be matched
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

// Poll calls consumer.poll for the time ctx leaves (rebalance callbacks run
// inside it, as in any Java application) and returns its records.
//
// When poll throws an exception the application cannot go on from (the
// driver marks it fatal: every exception but a RetriableException, see
// Driver.endsThePollLoop), the application is done: Poll returns it as
// clients.ErrStopped, then and on every later call, without polling again
// (a KafkaConsumer throws a fatal error once; the next polls return
// nothing), so that its supervisor closes the consumer and starts a new
// process. So does a JVM that ended on its own (it died: out of memory, a
// crash of the JVM), which no Close or Kill asked for.
func (m *Member) Poll(ctx context.Context) ([]clients.Record, error) {
	m.mu.Lock()
	stopped := m.stopped
	m.mu.Unlock()
	if stopped != nil {
		return nil, stopped
	}
	d := remaining(ctx, 250*time.Millisecond)
	r, err := m.command(ctx, "poll "+ms(d), "polled", 30*time.Second)
	if err != nil {
		return nil, m.endedOnItsOwn(err)
	}
	if r.Error != "" {
		if r.Fatal {
			return nil, m.stop(fmt.Errorf("%w: java: member %s: poll threw %s, which the application cannot go on from: it closes the consumer and exits", clients.ErrStopped, m.name, r.Error))
		}
		return nil, fmt.Errorf("java: member %s: poll: %s", m.name, r.Error)
	}
	gen := int32(-1)
	if r.Generation != nil {
		gen = *r.Generation
	}
	out := make([]clients.Record, 0, len(r.Records))
	for _, x := range r.Records {
		rec := clients.Record{Topic: x.Topic, Partition: x.Partition, Offset: x.Offset, Key: x.Key, Value: x.Value}
		rec.Generation, rec.MemberEpoch = m.cfg.protocol.Epochs(gen)
		out = append(out, rec)
	}
	return out, nil
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
// when its JVM (or, hosted, its consumer's thread) ended without Close or
// Kill asking: the process is gone, as a crash of it would leave it.
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

// Owned implements clients.Member: what the listener was given, minus what
// it revoked or lost since.
func (m *Member) Owned() clients.Partitions {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned.Clone()
}

// Commit calls consumer.commitSync(offsets, timeout) with the time ctx
// leaves. The OffsetCommit requests it sends are reported from the wire as
// the application's; an exception is returned as the error (per-partition
// outcomes are in the reported answers).
func (m *Member) Commit(ctx context.Context, offsets map[string]map[int32]int64) (map[string]map[int32]string, error) {
	if len(offsets) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("commit " + ms(remaining(ctx, 15*time.Second)))
	for _, t := range slices.Sorted(mapsKeys(offsets)) {
		for _, p := range slices.Sorted(mapsKeys(offsets[t])) {
			fmt.Fprintf(&b, " %s %d %d", t, p, offsets[t][p])
		}
	}
	m.wire.SetApp(true)
	defer m.wire.SetApp(false)
	r, err := m.command(ctx, b.String(), "committed", 30*time.Second)
	if err != nil {
		return nil, err
	}
	if r.Error != "" {
		return nil, fmt.Errorf("java: member %s: commitSync: %s", m.name, r.Error)
	}
	return nil, nil
}

// Close calls consumer.close (the consumer leaves the group: LeaveGroup,
// or a leave heartbeat) within the time ctx leaves, then waits for the JVM
// to exit and closes the gateway. A JVM that does not finish in time is
// killed.
func (m *Member) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.p == nil || m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	exited := m.exited
	m.mu.Unlock()
	d := remaining(ctx, 10*time.Second)
	r, err := m.command(ctx, "close "+ms(d), "closed", 5*time.Second)
	if err == nil && r.Error != "" {
		err = fmt.Errorf("java: member %s: close: %s", m.name, r.Error)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
	m.Kill()
	return err
}

// Kill ends the member at once, as a crash: its own JVM is killed
// (SIGKILL; the OS closes its sockets) and its gateway closed; a member
// hosted in a shared JVM (Hosted) has its gateway cut for good first, so
// nothing it sends afterwards reaches a broker, then is abandoned inside
// the JVM (see Host). The harness calls it for a crash fault.
func (m *Member) Kill() error {
	m.mu.Lock()
	p, gw := m.p, m.gw
	m.closed = true
	m.gw = nil
	m.mu.Unlock()
	if hp, ok := p.(*hosted); ok {
		if gw != nil {
			gw.cutLinks()
		}
		err := hp.kill()
		if !hp.awaitGone(10 * time.Second) {
			// Left cut, still listening: its ports go to no other gateway
			// while the abandoned consumer may still try them.
			return errors.Join(err, fmt.Errorf("java: member %s did not end within 10s of its crash in the shared JVM; its links stay cut", m.name))
		}
		if gw != nil {
			gw.close()
		}
		return err
	}
	var err error
	if p != nil {
		err = p.kill()
	}
	if gw != nil {
		gw.close()
	}
	return err
}

// Freeze stops (on) or resumes the member, as a long GC pause or a
// descheduled process would. A member in its own JVM: SIGSTOP and SIGCONT,
// so its heartbeats stop too. A member hosted in a shared JVM: its gateway
// holds its traffic both ways and its thread stops between commands (see
// Host). Either way the command in progress is answered after the thaw.
func (m *Member) Freeze(on bool) error {
	m.mu.Lock()
	p, gw := m.p, m.gw
	m.mu.Unlock()
	switch p := p.(type) {
	case *jvm:
		sig := syscall.SIGCONT
		if on {
			sig = syscall.SIGSTOP
		}
		m.mu.Lock()
		m.frozen = on
		m.mu.Unlock()
		return p.cmd.Process.Signal(sig)
	case *hosted:
		m.mu.Lock()
		m.frozen = on
		m.mu.Unlock()
		if on && gw != nil {
			gw.hold(true)
		}
		err := p.freeze(on)
		if !on && gw != nil {
			gw.hold(false)
		}
		return err
	}
	return fmt.Errorf("java: member %s has no JVM to freeze", m.name)
}

func (m *Member) isFrozen() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.frozen
}

// PID is the JVM's process id, the shared one for a hosted member (0
// before Start, or for a stand-in).
func (m *Member) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch p := m.p.(type) {
	case *jvm:
		return p.cmd.Process.Pid
	case *hosted:
		return p.pid()
	}
	return 0
}

// KafkaClients is the kafka-clients version the JVM reported (after Start).
func (m *Member) KafkaClients() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// jvm is a driver run as a java process.
type jvm struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out io.ReadCloser
}

func (j *jvm) stdin() io.Writer  { return j.in }
func (j *jvm) stdout() io.Reader { return j.out }
func (j *jvm) kill() error       { return interrupt.Kill(j.cmd) }
func (j *jvm) wait() error       { return interrupt.Wait(j.cmd) }

// JVMFlags start a small JVM fast: a member needs little heap, and the
// client's code runs too briefly for the optimising compiler to pay off.
var JVMFlags = []string{"-Xms16m", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"}

func jvmStarter(rt Runtime) starter {
	return func(args []string, stderr io.Writer) (proc, error) {
		cmd, in, out, err := rt.start(JVMFlags, args, stderr)
		if err != nil {
			return nil, err
		}
		return &jvm{cmd: cmd, in: in, out: out}, nil
	}
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return "(nothing)"
	}
	return s
}
