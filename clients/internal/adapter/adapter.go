// Package adapter holds what the members that put another client behind
// clients.Member share. Every such member checks its identity the same way
// (CheckIdentity) and reads its links out of kgo options (Links); the two
// that drive another Go client's classic consumer group, kafkagoref
// (kafka-go) and saramaref (Sarama), share a Base besides: the member's
// events, the poll gate that holds revocations back between two Polls
// (clients/internal/pollgate), the application's commit and Close.
package adapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/option"
	"github.com/groupquake/groupquake/clients/internal/pollgate"
	"github.com/groupquake/groupquake/clients/wiretap"
)

// CheckIdentity says what is missing of a member's identity: its name (the
// harness's), its group, its topics. pkg prefixes the error.
func CheckIdentity(pkg, name, group string, topics []string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s: a member needs a name (the harness's name for it, e.g. m1)", pkg)
	case group == "":
		return fmt.Errorf("%s: member %s needs a group id", pkg, name)
	case len(topics) == 0:
		return fmt.Errorf("%s: member %s needs at least one topic to subscribe to", pkg, name)
	}
	return nil
}

// Links reads the seed brokers and the dialer (a net.Dialer's when the
// options name none) out of a member's kgo options; it connects to nothing.
func Links(opts []kgo.Opt) ([]string, wiretap.DialFunc, error) {
	probe, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, err
	}
	seeds, _ := probe.OptValue(kgo.SeedBrokers).([]string)
	dial, _ := probe.OptValue(kgo.Dialer).(func(context.Context, string, string) (net.Conn, error))
	probe.Close()
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	return seeds, dial, nil
}

// Config is what the options of the members that put another Go client
// behind clients.Member (kgoref, kafkagoref, saramaref) set in common:
// every member's settings and the group timers the client is given (0:
// the client's default).
type Config struct {
	option.Common
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	RebalanceTimeout  time.Duration
}

// Base is the part of a classic group adapter (kafkagoref, saramaref) that
// does not depend on the client it drives. The member embeds it, calls
// Init in its New, Begin and Run in its Start, Poll, Commit and Close's
// halves from its own, and guards its own state with Mu.
type Base struct {
	pkg, name  string
	Group      string
	Topics     []string
	Seeds      []string
	InstanceID string // reported with every event ("" for a dynamic member)
	cfg        Config
	dial       wiretap.DialFunc

	// Wire reports the member's calls; set by Begin.
	Wire *wiretap.Calls
	// Recs carries the records the client read to Poll.
	Recs chan pollgate.Record
	// Done is closed by the member's loop when it ends.
	Done chan struct{}
	stop context.CancelFunc

	gate    *pollgate.Gate // holds the revocation back between Polls
	pollMu  sync.Mutex     // orders Poll and Close, which move the gate
	running bool           // started and not closed: Poll may move the gate

	// Mu guards what follows and the member's own state.
	Mu        sync.Mutex
	Owning    clients.Partitions // what the current generation owns
	started   bool
	closed    bool
	appCommit *clients.Event // the answer of the application's OffsetCommit
	lastErr   string
}

// Init sets the member up: pkg prefixes its errors, and its links are read
// out of c.KgoOpts. It connects to nothing.
func (b *Base) Init(pkg, name, group string, topics []string, c Config) error {
	c.Defaults()
	seeds, dial, err := Links(c.KgoOpts)
	if err != nil {
		return fmt.Errorf("%s: member %s: %w", pkg, name, err)
	}
	b.pkg, b.name, b.Group, b.Topics, b.cfg = pkg, name, group, topics, c
	b.Seeds, b.dial = seeds, dial
	b.Owning = clients.Partitions{}
	b.Recs = make(chan pollgate.Record, 4096)
	b.Done = make(chan struct{})
	return nil
}

// Name implements clients.Member.
func (b *Base) Name() string { return b.name }

// Protocol implements clients.Member: the adapted clients speak the classic
// protocol.
func (b *Base) Protocol() clients.Protocol { return clients.Classic }

// Event is an event of the member of kind k, dated now.
func (b *Base) Event(k clients.Kind) clients.Event {
	return clients.Event{Kind: k, Protocol: clients.Classic, Member: b.name, InstanceID: b.InstanceID, Generation: -1, MemberEpoch: -1, GroupEpoch: -1, At: b.cfg.Clock.Now()}
}

// Emit hands e to the member's hooks.
func (b *Base) Emit(e clients.Event) { b.cfg.Hooks.OnEvent(e) }

// Ownership reports parts Assigned, Revoked or Lost (kind) in generation
// gen of member id memberID.
func (b *Base) Ownership(kind clients.Kind, memberID string, gen int32, parts clients.Partitions, why string) {
	ev := b.Event(kind)
	ev.MemberID, ev.Generation = memberID, gen
	ev.Partitions = parts
	ev.Why = why
	b.Emit(ev)
}

// Fact reports err as an event of kind k; code, given the error, says
// which Kafka error it carries, if any.
func (b *Base) Fact(k clients.Kind, err error, why string, code func(error) (int16, bool)) {
	ev := b.Event(k)
	ev.Err = err.Error()
	if c, ok := code(err); ok {
		ev.ErrCode = c
		ev.Err = wiretap.ErrName(kerr.ErrorForCode(c))
	}
	ev.Why = why + ": " + err.Error()
	b.Emit(ev)
}

// KafkaCode is Fact's code for a client whose errors carry a Kafka error
// as a value of type E (kafka-go's kafka.Error, Sarama's sarama.KError).
func KafkaCode[E interface {
	error
	~int | ~int16
}](err error) (int16, bool) {
	var ke E
	if errors.As(err, &ke) {
		return int16(ke), true
	}
	return 0, false
}

// Changed says whether err differs from the last error given to Changed,
// and remembers it: an error the client returns again and again is
// reported once until another comes.
func (b *Base) Changed(err error) bool {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	same := err.Error() == b.lastErr
	b.lastErr = err.Error()
	return !same
}

// KeepAppCommit keeps e for Commit when it answers the application's
// OffsetCommit, and says whether it did.
func (b *Base) KeepAppCommit(e clients.Event) bool {
	if e.Kind == clients.Sent || !e.App || e.Op != clients.OpCommit {
		return false
	}
	b.Mu.Lock()
	b.appCommit = &e
	b.Mu.Unlock()
	return true
}

// Begin marks the member started, or says it was, and sets up its wire for
// client; report receives the wire's events.
func (b *Base) Begin(client string, report func(clients.Event)) error {
	b.Mu.Lock()
	if b.started {
		b.Mu.Unlock()
		return fmt.Errorf("%s: member %s already started", b.pkg, b.name)
	}
	b.started = true
	b.Mu.Unlock()
	b.Wire = wiretap.NewCalls(wiretap.CallsConfig{
		Group: b.Group, Protocol: clients.Classic, Client: client, Lookups: true,
		Event: b.Event, Now: b.cfg.Clock.Now, Report: report,
	})
	return nil
}

// Dialer is the member's dial function wrapped by its wire: every
// connection the client makes goes through it.
func (b *Base) Dialer() wiretap.DialFunc { return wiretap.Dialer(b.dial, b.Wire) }

// Run shuts the poll gate and runs loop until Close.
func (b *Base) Run(loop func(context.Context)) {
	b.pollMu.Lock()
	b.gate = pollgate.New()
	b.running = true
	b.pollMu.Unlock()
	ctx, stop := context.WithCancel(context.Background())
	b.stop = stop
	go loop(ctx)
}

// EnterGate waits until a Poll runs (or the member closes); LeaveGate ends
// what it let in.
func (b *Base) EnterGate() { b.gate.Enter() }

// LeaveGate ends what EnterGate let in.
func (b *Base) LeaveGate() { b.gate.Leave() }

// Poll lets the held reports through, then returns the records of the
// current generation, waiting at most until ctx ends. current, called under
// Mu, names the current generation and says whether it is live.
func (b *Base) Poll(ctx context.Context, current func() (gen uint64, live bool)) ([]clients.Record, error) {
	b.pollMu.Lock()
	defer b.pollMu.Unlock()
	if !b.running {
		return nil, fmt.Errorf("%s: member %s is not running: Start it first, and do not Poll after Close", b.pkg, b.name)
	}
	got := pollgate.Drain(ctx, b.gate, b.Recs, 1000)
	b.Mu.Lock()
	cur, live := current()
	owned := b.Owning
	b.Mu.Unlock()
	return pollgate.Current(got, live, cur, owned), nil
}

// Owned implements clients.Member: the current generation's assignment.
func (b *Base) Owned() clients.Partitions {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	return b.Owning.Clone()
}

// Commit writes the application's commit of offsets through the client
// with write, in the session that session (called under Mu) returns, and
// returns what the OffsetCommit's answer said: partitions the coordinator
// refused by Kafka error name, or an error when it refused the commit as a
// whole or no answer came (noAnswer says what the client did not write).
// Between sessions nothing is sent and none is returned.
func Commit[S any](b *Base, offsets map[string]map[int32]int64, session func() (S, bool), none error, write func(S) error, noAnswer string) (map[string]map[int32]string, error) {
	b.Mu.Lock()
	s, ok := session()
	closed := b.closed
	b.appCommit = nil
	b.Mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%s: member %s is closed", b.pkg, b.name)
	}
	if len(offsets) == 0 {
		return nil, nil
	}
	if !ok {
		return nil, none
	}
	b.Wire.SetApp(true)
	err := write(s)
	b.Wire.SetApp(false)
	b.Mu.Lock()
	a := b.appCommit
	b.appCommit = nil
	b.Mu.Unlock()
	if a == nil && err != nil {
		return nil, fmt.Errorf("%s: %w", noAnswer, err)
	}
	return wiretap.CommitAnswer(a, errors.New(noAnswer))
}

// BeginClose marks the member closed and opens the poll gate for good, so
// that a revocation reported while Close waits goes through. It says false
// when there is nothing to close: never started, not running, or closed
// already.
func (b *Base) BeginClose() bool {
	b.pollMu.Lock()
	defer b.pollMu.Unlock()
	b.Mu.Lock()
	if !b.started || b.closed || b.stop == nil {
		b.Mu.Unlock()
		return false
	}
	b.closed = true
	b.Mu.Unlock()
	if b.running {
		b.gate.Open()
		b.running = false
	}
	return true
}

// ClosedLocked says whether Close began; the caller holds Mu.
func (b *Base) ClosedLocked() bool { return b.closed }

// Stop stops the member's loop and waits for it to end.
func (b *Base) Stop() {
	b.stop()
	<-b.Done
}

// Shut closes the client with close, waiting at most until ctx ends, then
// stops the member's loop and waits for it (again at most until ctx ends).
// It returns close's error, or ctx's when close did not return in time.
func (b *Base) Shut(ctx context.Context, close func() error) error {
	closed := make(chan error, 1)
	go func() { closed <- close() }()
	var err error
	select {
	case err = <-closed:
	case <-ctx.Done():
		err = ctx.Err()
	}
	b.stop()
	select {
	case <-b.Done:
	case <-ctx.Done():
	}
	return err
}
