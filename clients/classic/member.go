package classic

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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

type state int8

// The member states of AbstractCoordinator.MemberState.
const (
	unjoined state = iota
	preparing
	completing
	stable
)

func (s state) String() string {
	return [...]string{"UNJOINED", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "STABLE"}[s]
}

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
	st      state
	gen     Generation
	coord   int32 // -1: unknown
	owned   clients.Partitions
	// prevAssigned and prevGen are the last assignment SyncGroup gave and
	// its generation: the sticky assignor's user data.
	prevAssigned map[string][]int32
	prevGen      int32
	rejoin       bool
	rejoinWhy    string
	joinPrepare  bool // onJoinPrepare runs before the next JoinGroup
	pollExpired  bool // left on max.poll.interval; rejoin waits for Poll
	revoking     bool // eager auto-commit before revocation: Poll returns nothing
	fatal        error
	lastPoll     time.Time
	sessionStart time.Time // last heartbeat success or coordinator found
	positions    map[string]map[int32]int64
	committed    map[string]map[int32]int64 // last auto-committed
	sentHigh     map[string]map[int32]int64 // highest offset sent per partition in this assignment
	wake         chan struct{}              // manage loop: a rejoin is needed
	hbWake       chan struct{}              // heartbeat loop: state changed
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
	kopts := append(slices.Clone(c.kgoOpts),
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
		gen:       noGeneration(),
		coord:     -1,
		owned:     clients.Partitions{},
		prevGen:   -1,
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
	return m.gen
}

// Stable reports whether the member completed SyncGroup for its current
// generation and has not been told to rejoin since.
func (m *Member) Stable() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st == stable && !m.rejoin
}

// Err is the fatal error that stopped the member, nil while it runs.
func (m *Member) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fatal
}

// Owned is the member's current assignment.
func (m *Member) Owned() clients.Partitions {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned.Clone()
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
	m.lastPoll = m.cfg.clock.Now()
	m.mu.Unlock()
	if _, err := m.ensureCoordinator(ctx); err != nil {
		return fmt.Errorf("classic member %q: %w", m.cfg.name, err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("classic member %q: closed while starting", m.cfg.name)
	}
	m.requestRejoinLocked("initial join")
	m.joinPrepare = true
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
	if m.fatal != nil {
		err := m.fatal
		m.mu.Unlock()
		return nil, err
	}
	if m.closed {
		m.mu.Unlock()
		return nil, fmt.Errorf("classic member %q is closed", m.cfg.name)
	}
	m.lastPoll = m.cfg.clock.Now()
	if m.pollExpired {
		m.pollExpired = false
		m.requestRejoinLocked("poll called after the member left on max.poll.interval expiry")
	}
	m.mu.Unlock()

	fs := m.cl.PollFetches(ctx)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastPoll = m.cfg.clock.Now()
	var out []clients.Record
	// Invariant: a record goes out only if its partition is owned now, in
	// a generation the member still holds; kgo may still hold a batch
	// fetched before a revocation, and a fence (a reset generation) is
	// only reported as a loss when the member rejoins, as the Java
	// consumer's poll runs onPartitionsLost before it returns records.
	fs.EachRecord(func(r *kgo.Record) {
		if m.revoking || m.gen.ID < 0 || !slices.Contains(m.owned[r.Topic], r.Partition) {
			return
		}
		if m.positions[r.Topic] == nil {
			m.positions[r.Topic] = map[int32]int64{}
		}
		m.positions[r.Topic][r.Partition] = r.Offset + 1
		out = append(out, clients.Record{
			Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Key: r.Key, Value: r.Value, Generation: m.gen.ID, MemberEpoch: -1,
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
	canCommit := m.fatal == nil && m.st == stable && m.cfg.autoCommit
	m.mu.Unlock()
	if canCommit {
		if err := m.commitPositions(ctx, "auto-commit on close"); err != nil {
			errs = append(errs, err)
		}
	}

	m.mu.Lock()
	// ConsumerCoordinator.onLeavePrepare: lost when the generation is
	// gone or a rebalance is in progress, revoked otherwise.
	if m.gen.ID == -1 || m.gen.MemberID == "" || m.fatal != nil || m.st == preparing || m.st == completing {
		m.loseLocked(m.owned.Clone(), "closing without a valid generation")
	} else {
		m.revokeLocked(m.owned.Clone(), "closing: giving up the assignment before leaving")
	}
	gen, st, coord := m.gen, m.st, m.coord
	m.mu.Unlock()

	if m.cfg.instanceID == nil && coord >= 0 && st != unjoined && gen.MemberID != "" && m.Err() == nil {
		if err := m.leaveGroup(ctx, gen, coord, "the consumer is being closed"); err != nil {
			errs = append(errs, err)
		}
	}
	m.mu.Lock()
	m.gen, m.st = noGeneration(), unjoined
	m.mu.Unlock()
	m.cl.Close()
	return errors.Join(errs...)
}

// leaveGroup sends one LeaveGroup, a best effort as in Java (no retry).
func (m *Member) leaveGroup(ctx context.Context, gen Generation, coord int32, why string) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = m.cfg.group
	req.MemberID = gen.MemberID
	mi := kmsg.NewLeaveGroupRequestMember()
	mi.MemberID = gen.MemberID
	mi.InstanceID = m.cfg.instanceID
	mi.Reason = &why
	req.Members = append(req.Members, mi)
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
	e.At = m.cfg.clock.Now()
	m.cfg.log.Debug("classic member event", "member", e.Member, "kind", e.Kind, "generation", e.Generation, "partitions", e.Partitions, "err", e.Err, "why", e.Why)
	m.cfg.hooks.OnEvent(e)
}

// emitLocked emits with the current generation filled in.
func (m *Member) emitLocked(e clients.Event) {
	e.Generation, e.MemberID = m.gen.ID, m.gen.MemberID
	m.emit(e)
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

// requestRejoinLocked is AbstractCoordinator.requestRejoin.
func (m *Member) requestRejoinLocked(why string) {
	if !m.rejoin {
		m.rejoinWhy = why
	}
	m.rejoin = true
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// resetLocked is AbstractCoordinator.resetStateAndRejoin: the generation
// is dropped (and the member id with it unless keepMemberID, as for
// ILLEGAL_GENERATION whose member id is still valid) and the next join
// runs onJoinPrepare again, which reports the owned partitions lost.
func (m *Member) resetLocked(keepMemberID bool, why string) {
	m.st = unjoined
	if keepMemberID {
		m.gen = Generation{ID: -1, MemberID: m.gen.MemberID}
	} else {
		m.gen = noGeneration()
	}
	m.joinPrepare = true
	m.requestRejoinLocked(why)
	m.wakeHeartbeat()
}

func (m *Member) wakeHeartbeat() {
	select {
	case m.hbWake <- struct{}{}:
	default:
	}
}

// failLocked stops the member for good: Java throws the error from poll
// and the application must close the consumer.
func (m *Member) failLocked(err error, why string) {
	if m.fatal != nil {
		return
	}
	m.fatal = fmt.Errorf("%w: %w", ErrFatal, err)
	kind := clients.Error
	if errors.Is(err, kerr.FencedInstanceID) {
		kind = clients.Fenced
	}
	m.emitLocked(clients.Event{Kind: kind, ErrCode: errCode(err), Err: errName(err), Why: why})
	m.loseLocked(m.owned.Clone(), "member stopped on a fatal error: "+errName(err))
	m.st = unjoined
	m.wakeHeartbeat()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Ownership changes. Invariant: m.owned changes only here, each change is
// reported as exactly one event naming exactly the partitions concerned,
// and kgo consumes exactly the owned partitions whose start offset is known
// (removal happens before the event, addition after the offsets are read).

func (m *Member) revokeLocked(ps clients.Partitions, why string) {
	m.dropLocked(ps, clients.Revoked, why)
}

func (m *Member) loseLocked(ps clients.Partitions, why string) {
	m.dropLocked(ps, clients.Lost, why)
}

func (m *Member) dropLocked(ps clients.Partitions, kind clients.Kind, why string) {
	ps = normalize(ps)
	if ps.Count() == 0 {
		return
	}
	m.cl.RemoveConsumePartitions(map[string][]int32(ps.Clone()))
	m.owned = subtract(m.owned, ps)
	for t, parts := range ps {
		for _, p := range parts {
			delete(m.positions[t], p)
			delete(m.committed[t], p)
			delete(m.sentHigh[t], p)
		}
	}
	m.emitLocked(clients.Event{Kind: kind, Partitions: ps, Why: why})
}

func (m *Member) assignLocked(ps clients.Partitions, why string) {
	ps = normalize(ps)
	if ps.Count() == 0 {
		return
	}
	m.owned = union(m.owned, ps)
	for t, parts := range ps {
		for _, p := range parts {
			delete(m.sentHigh[t], p) // a new assignment: offsets may start lower
		}
	}
	m.emitLocked(clients.Event{Kind: clients.Assigned, Partitions: ps, Why: why})
}

// normalize returns sorted partitions without empty topics.
func normalize(p clients.Partitions) clients.Partitions {
	out := clients.Partitions{}
	for t, ps := range p {
		if len(ps) > 0 {
			s := slices.Clone(ps)
			slices.Sort(s)
			out[t] = slices.Compact(s)
		}
	}
	return out
}

func subtract(a, b clients.Partitions) clients.Partitions {
	out := clients.Partitions{}
	for t, ps := range a {
		for _, p := range ps {
			if !slices.Contains(b[t], p) {
				out[t] = append(out[t], p)
			}
		}
	}
	return normalize(out)
}

func union(a, b clients.Partitions) clients.Partitions {
	out := a.Clone()
	for t, ps := range b {
		out[t] = append(out[t], ps...)
	}
	return normalize(out)
}

func fromMap(m map[string][]int32) clients.Partitions {
	return normalize(clients.Partitions(maps.Clone(m)))
}
