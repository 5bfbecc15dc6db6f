package classic

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/assign"
)

// ProtocolType is the JoinGroup protocol type of consumers.
const ProtocolType = "consumer"

// Generation is what the coordinator knows the member by: Java's
// AbstractCoordinator.Generation. ID is -1 and MemberID "" when the member
// has none (Generation.NO_GENERATION).
type Generation struct {
	ID       int32
	MemberID string
	// Protocol is the assignor the coordinator selected ("" when none).
	Protocol string
}

// noGeneration is AbstractCoordinator.Generation.NO_GENERATION.
func noGeneration() Generation { return Generation{ID: -1} }

// ErrFatal wraps every error after which the member stops for good
// (FENCED_INSTANCE_ID, authorization and configuration errors): Java throws
// these from poll and the consumer must be closed.
var ErrFatal = fmt.Errorf("classic member: %w", clients.ErrStopped)

// ErrNotInGroup is Java's CommitFailedException: a generation-scoped commit
// was asked for while the member is not part of an active generation.
var ErrNotInGroup = errors.New("member is not part of an active group generation")

// Member is a classic consumer-group member. See the package doc for what
// it keeps true.
type Member struct {
	cfg cfg
	cl  *kgo.Client

	ctx    context.Context // cancelled by Close: ends every goroutine
	cancel context.CancelFunc
	wg     sync.WaitGroup

	coordMu sync.Mutex // serializes coordinator lookups

	// commitMu is the commit lane: held while one OffsetCommit of the
	// member is in flight and until its outcome is reported, so the
	// auto-commit loop, the commit before a rejoin, Close and the
	// application's Commit never have two commits out at once. sentHigh
	// (under mu) is the highest offset the member sent per owned partition
	// since it was assigned; see commit.
	commitMu sync.Mutex
	// sendCommit sends one OffsetCommit to the coordinator; tests script
	// it. laneWait, when a test sets it, is called when a commit finds the
	// lane busy and is about to wait.
	sendCommit func(ctx context.Context, req *kmsg.OffsetCommitRequest, sent func()) (*kmsg.OffsetCommitResponse, error)
	laneWait   func()

	calls atomic.Uint64 // numbers the calls reported (clients.Sent)

	mu      sync.Mutex
	started bool
	closed  bool
	// polls counts the Polls that handed records out (under mu): each
	// record says which Poll returned it, each ownership event how many
	// had (clients.Record.Poll, clients.Event.AfterPoll).
	polls uint64
	// mach is the group state and every decision about it (machine.go);
	// the member carries out its outcomes under mu.
	mach      *machine
	bugs      *bugState // WithBug only (bugs.go)
	positions map[string]map[int32]int64
	committed map[string]map[int32]int64 // last auto-committed
	sentHigh  map[string]map[int32]int64 // highest offset sent per partition in this assignment
	wake      chan struct{}              // manage loop: a rejoin is needed
	hbWake    chan struct{}              // heartbeat loop: state changed
}

var _ clients.Member = (*Member)(nil)

// New builds a member of group subscribed to topics. It checks the options
// and creates the kgo client (which connects lazily); Start joins.
func New(name, group string, topics []string, opts ...Opt) (*Member, error) {
	c, err := newCfg(name, group, slices.Clone(topics), opts)
	if err != nil {
		return nil, err
	}
	// OffsetCommit and OffsetFetch v10 name topics by id (KIP-848 era);
	// the member addresses partitions by name, so it caps both at v9,
	// which every 4.x broker serves.
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	vs.SetMaxKeyVersion(kmsg.OffsetFetch.Int16(), 9)
	kopts := append(slices.Clone(c.KgoOpts),
		kgo.ClientID(c.clientID),
		kgo.MaxVersions(vs),
		// A direct consumer with nothing to consume yet: partitions are
		// added and removed as assignments change.
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}),
	)
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("classic member %q: kgo client: %w", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Member{
		cfg:       c,
		cl:        cl,
		ctx:       ctx,
		cancel:    cancel,
		mach:      newMachine(machineConfigOf(c)),
		bugs:      newBugState(),
		positions: map[string]map[int32]int64{},
		committed: map[string]map[int32]int64{},
		sentHigh:  map[string]map[int32]int64{},
		wake:      make(chan struct{}, 1),
		hbWake:    make(chan struct{}, 1),
	}
	m.sendCommit = func(ctx context.Context, req *kmsg.OffsetCommitRequest, sent func()) (*kmsg.OffsetCommitResponse, error) {
		raw, err := m.coordRequest(ctx, req, sent)
		if err != nil {
			return nil, err
		}
		return raw.(*kmsg.OffsetCommitResponse), nil
	}
	return m, nil
}

// Name is the harness's name for the member.
func (m *Member) Name() string { return m.cfg.name }

// Protocol is clients.Classic.
func (m *Member) Protocol() clients.Protocol { return clients.Classic }

// RebalanceProtocol is EAGER or COOPERATIVE, chosen from the assignors.
func (m *Member) RebalanceProtocol() assign.Protocol { return m.cfg.protocol }

// Generation is the member's current generation (possibly one whose
// rebalance has not completed).
func (m *Member) Generation() Generation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mach.gen
}

// Stable reports whether the member completed SyncGroup for its current
// generation and has not been told to rejoin since.
func (m *Member) Stable() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mach.stableNow()
}

// Err is the fatal error that stopped the member, nil while it runs.
func (m *Member) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mach.fatal
}

// Owned is the member's current assignment.
func (m *Member) Owned() clients.Partitions {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mach.owned.Clone()
}

// Start finds the coordinator and starts the membership goroutines; the
// first JoinGroup is under way when it returns.
func (m *Member) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started || m.closed {
		m.mu.Unlock()
		return fmt.Errorf("classic member %q: Start called twice or after Close", m.cfg.name)
	}
	m.started = true
	m.mach.pollAt(m.cfg.Clock.Now())
	m.mu.Unlock()
	if _, err := m.ensureCoordinator(ctx); err != nil {
		return fmt.Errorf("classic member %q: %w", m.cfg.name, err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("classic member %q: closed while starting", m.cfg.name)
	}
	m.applyLocked(m.mach.start())
	// Added under m.mu so that Close, which sets closed under m.mu
	// before waiting, never waits on a group that is still growing.
	interval := m.cfg.autoCommit && m.cfg.autoCommitInterval > 0
	m.wg.Add(2)
	if interval {
		m.wg.Add(1)
	}
	m.mu.Unlock()
	go func() { defer m.wg.Done(); m.manage() }()
	go func() { defer m.wg.Done(); m.heartbeatLoop() }()
	if interval {
		go func() { defer m.wg.Done(); m.autoCommitLoop() }()
	}
	return nil
}

// Poll returns records of owned partitions, waiting at most until ctx
// ends. It is the max.poll.interval liveness signal: after the member left
// on poll expiry, Poll makes it rejoin (as KafkaConsumer.poll does).
func (m *Member) Poll(ctx context.Context) ([]clients.Record, error) {
	m.mu.Lock()
	if m.mach.fatal != nil {
		err := m.mach.fatal
		m.mu.Unlock()
		return nil, err
	}
	if m.closed {
		m.mu.Unlock()
		return nil, fmt.Errorf("classic member %q is closed", m.cfg.name)
	}
	m.applyLocked(m.mach.polled(m.cfg.Clock.Now()))
	m.mu.Unlock()

	fs := m.cl.PollFetches(ctx)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.mach.pollAt(m.cfg.Clock.Now())
	m.polls++
	poll := m.polls
	var out []clients.Record
	// Invariant: a record goes out only if the machine says so
	// (machine.handsOut).
	fs.EachRecord(func(r *kgo.Record) {
		gen := m.mach.gen.ID
		if !m.mach.handsOut(r.Topic, r.Partition) {
			var bug bool
			if gen, bug = m.bugHandsOut(r.Topic, r.Partition); !bug {
				return
			}
		}
		if m.positions[r.Topic] == nil {
			m.positions[r.Topic] = map[int32]int64{}
		}
		m.positions[r.Topic][r.Partition] = r.Offset + 1
		out = append(out, clients.Record{
			Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Key: r.Key, Value: r.Value, Generation: gen, MemberEpoch: -1, Poll: poll,
		})
	})
	var errs []error
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		errs = append(errs, fmt.Errorf("fetch %s-%d: %w", t, p, err))
	})
	return out, errors.Join(errs...)
}

// Close commits (with auto-commit), gives up the assignment, leaves the
// group and stops every goroutine. A static member sends no LeaveGroup
// (AbstractCoordinator.maybeLeaveGroup, KIP-345): its membership lasts
// until its session times out, so a restart within the session keeps the
// assignment.
func (m *Member) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()

	var errs []error
	m.mu.Lock()
	canCommit := m.mach.commitOnClose()
	m.mu.Unlock()
	if canCommit {
		if err := m.commitPositions(ctx, "auto-commit on close"); err != nil {
			errs = append(errs, err)
		}
	}

	m.mu.Lock()
	o, leave, gen, coord := m.mach.leavePrepare()
	m.applyLocked(o)
	m.mu.Unlock()

	if leave {
		if err := m.leaveGroup(ctx, gen, coord, "the consumer is being closed"); err != nil {
			errs = append(errs, err)
		}
	}
	m.mu.Lock()
	m.mach.closed()
	m.mu.Unlock()
	m.cl.Close()
	return errors.Join(errs...)
}

// leaveGroup sends one LeaveGroup, a best effort as in Java (no retry).
func (m *Member) leaveGroup(ctx context.Context, gen Generation, coord int32, why string) error {
	m.mu.Lock()
	req := m.mach.leaveRequest(gen, why)
	m.mu.Unlock()
	call := m.sent(clients.OpLeave, clients.Event{Generation: gen.ID, MemberID: gen.MemberID, Why: "LeaveGroup: " + why})
	ev := clients.Event{Kind: clients.Left, Op: clients.OpLeave, Call: call, Generation: gen.ID, MemberID: gen.MemberID, Why: why}
	resp, err := req.RequestWith(ctx, m.cl.Broker(int(coord)))
	if err != nil {
		ev.Err, ev.Why = err.Error(), "LeaveGroup got no answer: "+why
		m.emit(ev)
		return fmt.Errorf("LeaveGroup: %w", err)
	}
	code := resp.ErrorCode
	if code == 0 && len(resp.Members) == 1 {
		code = resp.Members[0].ErrorCode
	}
	if err := kerr.ErrorForCode(code); err != nil {
		ev.ErrCode, ev.Err = code, errName(err)
		m.emit(ev)
		return fmt.Errorf("LeaveGroup: %w", err)
	}
	m.emit(ev)
	return nil
}

// sent reports a request leaving (clients.Sent) with what it carries and
// returns its call number; the answer event carries the same number.
func (m *Member) sent(op clients.Op, e clients.Event) uint64 {
	e.Kind, e.Op, e.Call = clients.Sent, op, m.calls.Add(1)
	m.emit(e)
	return e.Call
}

// emit stamps and sends one event.
func (m *Member) emit(e clients.Event) {
	e.Protocol = clients.Classic
	e.Member = m.cfg.name
	if m.cfg.instanceID != nil {
		e.InstanceID = *m.cfg.instanceID
	}
	e.MemberEpoch, e.GroupEpoch = -1, -1
	e.At = m.cfg.Clock.Now()
	m.cfg.log.Debug("classic member event", "member", e.Member, "kind", e.Kind, "generation", e.Generation, "partitions", e.Partitions, "err", e.Err, "why", e.Why)
	m.bugSees(e)
	if m.bugHides(e) {
		return
	}
	m.cfg.Hooks.OnEvent(e)
}

func errName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func errCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return 0
}

// applyLocked carries out an outcome of the machine, in order: a Revoked
// or Lost event first takes its partitions out of kgo's consumption and
// forgets their positions, an Assigned one starts a new high-water mark;
// every event is reported; then the join and heartbeat loops are woken.
// Invariant: kgo consumes exactly the owned partitions whose start offset
// is known (removal happens before the event, addition after the offsets
// are read, in startConsuming). mu is held.
func (m *Member) applyLocked(o outcome) {
	for _, e := range o.events {
		switch e.Kind {
		case clients.Assigned, clients.Revoked, clients.Lost:
			n := m.polls
			e.AfterPoll = &n
		}
		switch e.Kind {
		case clients.Revoked, clients.Lost:
			if !m.bugKeepsConsuming(e) {
				m.cl.RemoveConsumePartitions(map[string][]int32(e.Partitions.Clone()))
			}
			for t, parts := range e.Partitions {
				for _, p := range parts {
					delete(m.positions[t], p)
					delete(m.committed[t], p)
					delete(m.sentHigh[t], p)
				}
			}
		case clients.Assigned:
			m.bugReassigned(e.Partitions)
			for t, parts := range e.Partitions {
				for _, p := range parts {
					delete(m.sentHigh[t], p) // a new assignment: offsets may start lower
				}
			}
		}
		m.emit(e)
	}
	if o.wakeHeartbeat {
		m.wakeHeartbeat()
	}
	if o.wakeJoin {
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

// step runs one step of the machine and carries out its outcome, under mu.
func (m *Member) step(f func(*machine) outcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applyLocked(f(m.mach))
}

func (m *Member) wakeHeartbeat() {
	select {
	case m.hbWake <- struct{}{}:
	default:
	}
}

func fromMap(mp map[string][]int32) clients.Partitions {
	return normalize(clients.Partitions(maps.Clone(mp)))
}
