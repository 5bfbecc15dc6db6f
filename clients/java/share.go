package java

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/option"
	"github.com/groupquake/groupquake/clients/process"
	"github.com/groupquake/groupquake/clients/share"
	"github.com/groupquake/groupquake/clients/wiretap"
)

// The Java share member (kind java-share): Kafka's KafkaShareConsumer
// (KIP-932) in a JVM of its own running driver/ShareDriver.java, with
// explicit acknowledgement (share.acknowledgement.mode=explicit:
// acknowledge(record, type), then commitAsync).
//
// Where its events come from: the JVM connects to the brokers only
// through the member's gateway (process.Gateway), dialed onward with the
// member's links and observed by wiretap.ShareCalls, exactly as kgo's
// share consumer is (clients/kgoshare). Each ShareGroupHeartbeat,
// ShareFetch and ShareAcknowledge is reported Sent before the broker can
// see it, and answered before the JVM can read the answer, with what the
// answer says of each partition; a request whose answer never comes (the
// connection closed first) is answered as an unknown outcome (Err set,
// ErrCode 0), never as done. The AcknowledgementCommitCallback says the
// same thing later, from inside the client, and only of the
// acknowledgements the client itself resolved: its lines are counted
// (ShareMember.Callbacks), not taken as answers.

//go:embed driver/ShareDriver.java
var shareDriverSource []byte

// PrepareShare returns the Runtime of the share driver for kafka-clients
// version (cached as Prepare's).
func (t *Toolchain) PrepareShare(ctx context.Context, version string) (Runtime, error) {
	return t.prepare(ctx, version, &t.share, shareDriverSource, "ShareDriver", "ShareDriver")
}

// ShareOpt configures a ShareMember.
type ShareOpt = option.Opt[shareCfg]

type shareCfg struct {
	option.Common
	topics []string
	rt     Runtime
	start  func(stderr io.Writer) (jvm, error)
	stderr io.Writer
}

// ShareKgoOpts are the member's links as kgo options (kgo.SeedBrokers and
// kgo.Dialer): the gateway dials the brokers with them.
func ShareKgoOpts(o ...kgo.Opt) ShareOpt {
	return option.New(func(c *shareCfg) { c.KgoOpts = append(c.KgoOpts, o...) })
}

// ShareTopics are the topics the member subscribes to.
func ShareTopics(t ...string) ShareOpt {
	return option.New(func(c *shareCfg) { c.topics = append(c.topics, t...) })
}

// ShareHooks receives the member's events.
func ShareHooks(h clients.Hooks) ShareOpt { return option.New(func(c *shareCfg) { c.Hooks = h }) }

// ShareClock stamps the events (the run's clock); default the wall clock.
func ShareClock(cl clients.Clock) ShareOpt { return option.New(func(c *shareCfg) { c.Clock = cl }) }

// ShareRuntime is the JVM and class path (Toolchain.PrepareShare). Required.
func ShareRuntime(rt Runtime) ShareOpt { return option.New(func(c *shareCfg) { c.rt = rt }) }

// ShareStderr receives the JVM's standard error (the client's log).
func ShareStderr(w io.Writer) ShareOpt { return option.New(func(c *shareCfg) { c.stderr = w }) }

// withJVM replaces the JVM (tests).
func withJVM(start func(stderr io.Writer) (jvm, error)) ShareOpt {
	return option.New(func(c *shareCfg) { c.start = start })
}

// jvm is the share driver's process: its standard input and output, and
// how to end it.
type jvm interface {
	io.Writer
	Lines() *bufio.Scanner
	// Kill ends the process at once (its sockets close); Wait waits for
	// its exit.
	Kill()
	Wait() error
}

type osJVM struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	sc  *bufio.Scanner
}

func (j *osJVM) Write(p []byte) (int, error) { return j.in.Write(p) }
func (j *osJVM) Lines() *bufio.Scanner       { return j.sc }
func (j *osJVM) Kill() {
	if j.cmd.Process != nil {
		j.cmd.Process.Kill()
	}
}
func (j *osJVM) Wait() error { j.in.Close(); return j.cmd.Wait() }

func startJVM(rt Runtime) func(io.Writer) (jvm, error) {
	return func(stderr io.Writer) (jvm, error) {
		c := rt.Command(JVMFlags)
		cmd := exec.Command(c.Path, c.Args...)
		cmd.Stderr = stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		outp, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(outp)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		return &osJVM{cmd: cmd, in: in, sc: sc}, nil
	}
}

type shareKey struct {
	topic     string
	partition int32
	offset    int64
}

// ShareMember is one KafkaShareConsumer in a share group. Its methods are
// those of clients/share.Member that a share run drives.
type ShareMember struct {
	name, group string
	cfg         shareCfg

	call sync.Mutex // one command to the JVM at a time

	mu        sync.Mutex
	j         jvm
	gw        *process.Gateway
	tail      *process.TailBuffer
	held      map[shareKey]bool
	assigned  clients.Partitions
	closed    bool
	callbacks int
	cbErrs    int
}

// NewShare builds a Java share member named name (the harness's name) of
// share group group; its JVM starts on Start.
func NewShare(name, group string, opts ...ShareOpt) (*ShareMember, error) {
	c := shareCfg{}
	option.Apply(&c, opts...)
	switch {
	case name == "":
		return nil, errors.New("java: a share member needs a name (the harness's name for it, e.g. m1)")
	case group == "":
		return nil, fmt.Errorf("java: share member %s needs a share group id", name)
	case len(c.topics) == 0:
		return nil, fmt.Errorf("java: share member %s needs at least one topic to subscribe to (ShareTopics)", name)
	case c.start == nil && c.rt.Classpath == "":
		return nil, fmt.Errorf("java: share member %s has no runtime: pass ShareRuntime(Toolchain.PrepareShare(...))", name)
	}
	if c.start == nil {
		c.start = startJVM(c.rt)
	}
	c.Defaults()
	return &ShareMember{name: name, group: group, cfg: c, tail: &process.TailBuffer{}, held: map[shareKey]bool{}, assigned: clients.Partitions{}}, nil
}

// Name is the harness's name for the member.
func (m *ShareMember) Name() string { return m.name }

func (m *ShareMember) event(k clients.Kind) clients.Event {
	return clients.Event{Kind: k, Protocol: clients.Share, Member: m.name, Generation: -1, MemberEpoch: -1, GroupEpoch: -1, At: m.cfg.Clock.Now()}
}

// report passes an event on, keeping the assignment the heartbeats give.
func (m *ShareMember) report(e clients.Event) {
	if e.Kind == clients.Heartbeat && e.Err == "" && e.Partitions != nil {
		m.mu.Lock()
		m.assigned = e.Partitions
		m.mu.Unlock()
	}
	m.cfg.Hooks.OnEvent(e)
}

// Start opens the member's gateway, starts the JVM and creates the
// KafkaShareConsumer, which joins the share group on its first poll.
func (m *ShareMember) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.j != nil || m.closed {
		m.mu.Unlock()
		return fmt.Errorf("java: share member %s: Start called twice or after Close", m.name)
	}
	m.mu.Unlock()
	seeds, dial, err := process.Links(m.cfg.KgoOpts)
	if errors.Is(err, process.ErrNoSeeds) {
		return fmt.Errorf("java: share member %s: no seed brokers (ShareKgoOpts(kgo.SeedBrokers(...)))", m.name)
	}
	if err != nil {
		return fmt.Errorf("java: share member %s: %w", m.name, err)
	}
	wire := wiretap.NewShareCalls(wiretap.CallsConfig{
		Group: m.group, Protocol: clients.Share, Client: "the Java share consumer",
		Event: m.event, Now: m.cfg.Clock.Now, Report: m.report,
	})
	gw := process.NewGateway(wiretap.Dialer(dial, wire))
	boot, err := gw.ListenAll(seeds)
	if err != nil {
		gw.Close()
		return fmt.Errorf("java: share member %s: %w", m.name, err)
	}
	j, err := m.cfg.start(process.Tee(m.tail, m.cfg.stderr))
	if err != nil {
		gw.Close()
		return fmt.Errorf("java: share member %s: starting the JVM: %w", m.name, err)
	}
	m.mu.Lock()
	m.j, m.gw = j, gw
	m.mu.Unlock()
	_, err = m.command(ctx, []string{"hello", strings.Join(boot, ","), m.group, strings.Join(m.cfg.topics, ","), "groupquake-" + m.name}, nil)
	if err != nil {
		m.Drop()
		return err
	}
	return nil
}

// command sends one command line and reads the JVM's lines up to the final
// one (its fields are returned); rec lines go to rec, cb lines are
// counted. ctx ending kills the JVM: its answer cannot be waited for
// otherwise.
func (m *ShareMember) command(ctx context.Context, f []string, rec func([]string) error) ([]string, error) {
	m.call.Lock()
	defer m.call.Unlock()
	m.mu.Lock()
	j := m.j
	m.mu.Unlock()
	if j == nil {
		return nil, ErrShareClosed
	}
	if _, err := io.WriteString(j, strings.Join(f, "\t")+"\n"); err != nil {
		return nil, m.exited(err)
	}
	type res struct {
		f   []string
		err error
	}
	done := make(chan res, 1)
	go func() {
		sc := j.Lines()
		for sc.Scan() {
			g := strings.Split(sc.Text(), "\t")
			switch g[0] {
			case "rec":
				if rec != nil {
					if err := rec(g); err != nil {
						done <- res{err: err}
						return
					}
				}
			case "cb":
				m.mu.Lock()
				m.callbacks++
				if len(g) > 4 && g[4] != "-" {
					m.cbErrs++
				}
				m.mu.Unlock()
			case "err":
				done <- res{err: fmt.Errorf("java: share member %s: %s: %s", m.name, f[0], strings.Join(g[1:], " "))}
				return
			default:
				done <- res{f: g}
				return
			}
		}
		done <- res{err: m.exited(sc.Err())}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-ctx.Done():
		j.Kill()
		<-done
		return nil, fmt.Errorf("java: share member %s: %s: %w (the JVM was stopped)", m.name, f[0], ctx.Err())
	}
}

func (m *ShareMember) exited(err error) error {
	if err == nil {
		err = io.EOF
	}
	return fmt.Errorf("java: share member %s: the JVM exited (%v); its last output: %s", m.name, err, m.tail.String())
}

// ErrShareClosed is returned by calls on a closed or abandoned member.
var ErrShareClosed = share.ErrClosed

func (m *ShareMember) live() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrShareClosed
	}
	if m.j == nil {
		return fmt.Errorf("java: share member %s is not started: call Start first", m.name)
	}
	return nil
}

// Poll is KafkaShareConsumer.poll, waiting up to 2 s or until ctx ends.
// Each record carries its delivery count and the earliest moment its lock
// can lapse (when the poll was asked plus the client's
// acquisitionLockTimeoutMs).
func (m *ShareMember) Poll(ctx context.Context) ([]share.Record, error) {
	if err := m.live(); err != nil {
		return nil, err
	}
	wait := 2 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)-500*time.Millisecond)
	}
	wait = max(wait, 0)
	asked := m.cfg.Clock.Now()
	var out []share.Record
	// The JVM answers within wait; a JVM that does not is stopped.
	cctx, cancel := context.WithTimeout(context.Background(), wait+time.Minute)
	defer cancel()
	f, err := m.command(cctx, []string{"poll", strconv.FormatInt(wait.Milliseconds(), 10)}, func(g []string) error {
		r, err := parseShareRecord(g)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		if m.live() != nil {
			return nil, ErrShareClosed
		}
		return nil, err
	}
	lock := int64(-1)
	if len(f) >= 3 {
		lock, _ = strconv.ParseInt(f[2], 10, 64)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range out {
		if lock > 0 {
			out[i].Deadline = asked.Add(time.Duration(lock) * time.Millisecond)
		}
		m.held[shareKey{out[i].Topic, out[i].Partition, out[i].Offset}] = true
	}
	return out, nil
}

// parseShareRecord reads a rec line: topic, partition, offset, delivery
// count, value in base64.
func parseShareRecord(g []string) (share.Record, error) {
	if len(g) != 6 {
		return share.Record{}, fmt.Errorf("java share driver: a rec line has %d fields, not 6", len(g))
	}
	p, err1 := strconv.ParseInt(g[2], 10, 32)
	off, err2 := strconv.ParseInt(g[3], 10, 64)
	dc, err3 := strconv.ParseInt(g[4], 10, 16)
	v, err4 := base64.StdEncoding.DecodeString(g[5])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return share.Record{}, fmt.Errorf("java share driver: rec line %q: %w", strings.Join(g, " "), err)
	}
	return share.Record{Topic: g[1], Partition: int32(p), Offset: off, Value: v, DeliveryCount: int16(dc), Node: -1}, nil
}

// Acknowledge is KafkaShareConsumer.acknowledge(record, type) of each
// record, then commitAsync: the acknowledgements leave at once in a
// ShareAcknowledge to each leader. A record the member does not hold is
// refused.
func (m *ShareMember) Acknowledge(recs []share.Record, t int8) error {
	if err := clients.CheckAppAck(t); err != nil {
		return err
	}
	if err := m.live(); err != nil {
		return err
	}
	if len(recs) == 0 {
		return nil
	}
	m.mu.Lock()
	var keys []string
	for _, r := range recs {
		if !m.held[shareKey{r.Topic, r.Partition, r.Offset}] {
			m.mu.Unlock()
			return fmt.Errorf("%s-%d@%d: the member does not hold it (never handed out, or already acknowledged)", r.Topic, r.Partition, r.Offset)
		}
		keys = append(keys, fmt.Sprintf("%s:%d:%d", r.Topic, r.Partition, r.Offset))
	}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := m.command(ctx, []string{"ack", strconv.Itoa(int(t)), strings.Join(keys, ",")}, nil); err != nil {
		return err
	}
	if t != clients.AckRenew {
		m.mu.Lock()
		for _, r := range recs {
			delete(m.held, shareKey{r.Topic, r.Partition, r.Offset})
		}
		m.mu.Unlock()
	}
	return nil
}

// Assigned is the assignment the last heartbeat answer gave.
func (m *ShareMember) Assigned() clients.Partitions {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.assigned.Clone()
}

// Holding counts the records handed out and not finally acknowledged.
func (m *ShareMember) Holding() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.held)
}

// Unsent is 0: the Java client does not say which acknowledgements it has
// not sent yet.
func (m *ShareMember) Unsent() int { return 0 }

// Callbacks counts what the AcknowledgementCommitCallback reported: the
// batches, and those with an error.
func (m *ShareMember) Callbacks() (batches, failed int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.callbacks, m.cbErrs
}

// Close is KafkaShareConsumer.close: its final acknowledgements at share
// session epoch -1, then the leave; then the JVM exits and the gateway
// closes.
func (m *ShareMember) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.j == nil || m.closed {
		m.closed = true
		m.mu.Unlock()
		m.Drop()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	wait := 20 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = max(0, min(wait, time.Until(dl)-2*time.Second))
	}
	_, err := m.command(ctx, []string{"close", strconv.FormatInt(wait.Milliseconds(), 10)}, nil)
	m.Drop()
	if err != nil {
		return fmt.Errorf("java: share member %s: close: %w", m.name, err)
	}
	return nil
}

// Abandon is the member's process dying as the application sees it: it
// calls nothing more. The JVM's background thread keeps running until
// Drop (its requests go nowhere when the harness black-holed its links
// first).
func (m *ShareMember) Abandon() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
}

// Drop kills the JVM (the OS closes its sockets) and closes the gateway:
// no leave, no final acknowledgement.
func (m *ShareMember) Drop() {
	m.mu.Lock()
	j, gw := m.j, m.gw
	m.j, m.gw = nil, nil
	m.closed = true
	m.mu.Unlock()
	if j != nil {
		j.Kill()
		j.Wait()
	}
	if gw != nil {
		gw.Close()
	}
}
