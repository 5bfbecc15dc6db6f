package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/groupreq"
	"github.com/groupquake/groupquake/clients/internal/option"
)

// ErrClosed is returned by a Member used after Close.
var ErrClosed = errors.New("consumer member is closed")

// Member is a KIP-848 consumer-group member. It implements clients.Member.
//
// Goroutines: one heartbeat goroutine (started by Start, ended by Close)
// sends heartbeats, handles their answers and carries out reconciliations
// between them; Poll, Commit and Owned run on the caller's goroutine.
// Ownership changes (revoke, assign, lose) and Poll exclude each other
// (pollMu), so Poll never returns a record of a partition given up while it
// ran: Java gets the same guarantee by revoking on the application thread.
//
// Deviation from Java: a reconciliation (its commit and the OffsetFetch of
// added partitions, bounded by the rebalance timeout) runs on the heartbeat
// goroutine, so no heartbeat goes out while it runs; Java keeps
// heartbeating from its background thread meanwhile. With a healthy
// coordinator this is one or two round trips; a commit that hangs longer
// than the session timeout gets the member fenced, which Java would avoid.
type Member struct {
	name  string
	group string
	cfg   cfg
	cl    *kgo.Client

	// pollMu is held by Poll for its whole fetch and by every ownership
	// change; take it before mu.
	pollMu sync.Mutex

	mu         sync.Mutex
	m          *machine
	ids        map[string]topicID
	owned      clients.Partitions
	positions  map[string]map[int32]int64 // next offset to consume; -1 from the start
	committed  map[string]map[int32]int64 // last auto-committed positions
	lastPoll   time.Time
	pollCancel context.CancelFunc
	waiting    int // ownership changes waiting for pollMu
	since      time.Time
	// coordinator is the group's coordinator as the last FindCoordinator
	// named it (-1: unknown, the next heartbeat looks it up).
	coordinator int32
	// lookups counts the FindCoordinators sent: each goes to the next
	// broker.
	lookups int
	// revoking are partitions pending revocation: Poll hands out none
	// of their records while the commit before the revocation runs.
	revoking clients.Partitions
	// rejoinAfterLeave: the leave in flight is a rebalance-timeout leave;
	// the member rejoins once it is sent.
	rejoinAfterLeave bool
	started          bool
	closed           bool
	pending          []clients.Event
	late             lateRevocation     // BugAckBeforeRevoke only (bugs.go)
	zombie           clients.Partitions // BugFetchAfterRevoke only (bugs.go)

	// commitMu is the commit lane: it is held while an OffsetCommit of
	// this member is in flight (from being handed to kgo until its answer
	// or error), so the member's own commits (auto, before a revocation, on
	// Close) and the application's (Commit) never overlap. sentHigh (under
	// mu) is the highest offset sent per owned partition since it was
	// assigned: a commit or a retry of an older offset is never sent after
	// a newer one (see commit).
	commitMu sync.Mutex
	sentHigh map[string]map[int32]int64
	// ownSeq (under mu) counts the assignments that added partitions, and
	// ownedSince is, per owned partition, the ownSeq of the assignment
	// that gave it: a commit sends only the partitions owned since before
	// its offsets were taken (see commit), never one revoked meanwhile nor
	// one given back to the member after it was revoked.
	ownSeq     uint64
	ownedSince map[string]map[int32]uint64
	// sendCommit sends one OffsetCommit (kgo's Client.Request, which
	// resends it on coordinator errors and lost connections until ctx
	// ends); tests script it.
	sendCommit func(context.Context, *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error)
	// laneWait, when set by a test, is called when a commit finds the
	// lane busy and is about to wait for it.
	laneWait func()

	// calls numbers the requests reported (clients.Sent), under mu.
	calls uint64
	// polls counts the Polls that returned (under pollMu and mu): each
	// record says which Poll returned it, each ownership event how many
	// had returned (clients.Record.Poll, clients.Event.AfterPoll).
	polls uint64

	// The heartbeat goroutine never waits on an OffsetCommit or an
	// OffsetFetch (Java's background thread goes on heartbeating while a
	// commit or a reconciliation is in flight): the interval auto-commit
	// and the reconciliation each run on a goroutine of their own, at most
	// one of each at a time (under mu). reconcileFailed says the last
	// reconciliation must be retried after a backoff.
	autoCommitting  bool
	reconciling     bool
	reconcileFailed bool

	emitMu sync.Mutex

	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ clients.Member = (*Member)(nil)

// New checks the options and builds a member of group named name (the
// harness's name). It does not contact the brokers until Start.
func New(name, group string, opts ...Opt) (*Member, error) {
	c := cfg{autoCommit: true, autoCommitInterval: 5 * time.Second}
	option.Apply(&c, opts...)
	if err := groupreq.CheckNew("consumer", name, group, c.validate()); err != nil {
		return nil, err
	}
	kopts := append(slices.Clone(c.KgoOpts),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}),
		kgo.ClientID("groupquake-"+name),
	)
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("consumer member %q: kgo client: %w", name, err)
	}
	mc := machineConfig{
		group:              group,
		memberID:           groupreq.NewMemberID(),
		instanceID:         c.instanceID,
		rack:               c.rack,
		topics:             c.topics,
		assignor:           c.assignor,
		rebalanceTimeoutMs: int32(c.rebalanceTimeout.Milliseconds()),
	}
	if c.regex != nil {
		mc.useRegex, mc.regex = true, *c.regex
	}
	mb := &Member{
		name:        name,
		group:       group,
		cfg:         c,
		cl:          cl,
		m:           newMachine(mc),
		ids:         map[string]topicID{},
		owned:       clients.Partitions{},
		positions:   map[string]map[int32]int64{},
		committed:   map[string]map[int32]int64{},
		sentHigh:    map[string]map[int32]int64{},
		ownedSince:  map[string]map[int32]uint64{},
		kick:        make(chan struct{}, 1),
		coordinator: -1,
	}
	mb.sendCommit = func(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
		return req.RequestWith(ctx, mb.cl)
	}
	return mb, nil
}

// Name is the harness's name for the member.
func (mb *Member) Name() string { return mb.name }

// Protocol is clients.Consumer.
func (mb *Member) Protocol() clients.Protocol { return clients.Consumer }

// MemberID is the member id this member chose (kept across rejoins).
func (mb *Member) MemberID() string { return mb.m.cfg.memberID }

// Epoch is the member epoch the member holds now (0 while joining, -1 or -2
// while leaving).
func (mb *Member) Epoch() int32 {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.m.epoch
}

// Start joins the group: it starts the heartbeat goroutine and returns; the
// first heartbeat (epoch 0, every field) goes out at once.
func (mb *Member) Start(ctx context.Context) error {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.closed {
		return ErrClosed
	}
	if mb.started {
		return fmt.Errorf("consumer member %q already started", mb.name)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	mb.started = true
	mb.lastPoll = mb.cfg.Clock.Now()
	mb.m.join("first join")
	mb.ctx, mb.cancel = context.WithCancel(context.Background())
	mb.wg.Add(1)
	go mb.run()
	return nil
}

// Owned is the member's current assignment.
func (mb *Member) Owned() clients.Partitions {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.owned.Clone()
}

// Poll returns records of owned partitions, waiting at most until ctx ends,
// and counts as liveness for the max poll interval. A member that left
// because the poll timer expired rejoins here (Java's
// maybeRejoinStaleMember). After a fatal heartbeat error it returns that
// error (clients.ErrStopped), once the answer that carried it and what the
// member did because of it (its partitions lost) have been reported: the
// application acts on the error, so it must come after them, as in Java,
// where the error is thrown by the poll after the background thread
// handled the answer.
func (mb *Member) Poll(ctx context.Context) ([]clients.Record, error) {
	mb.pollMu.Lock()
	defer mb.pollMu.Unlock()
	mb.mu.Lock()
	if mb.closed || !mb.started {
		mb.mu.Unlock()
		if mb.closed {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("consumer member %q: Poll before Start", mb.name)
	}
	if mb.m.state == stateFatal {
		if mb.owned.Count() > 0 {
			// The fatal answer's loss of every partition waits for this
			// Poll to end (lockOwnership): no records, and the next Poll
			// says the member stopped.
			mb.mu.Unlock()
			return nil, nil
		}
		err := mb.m.fatal
		mb.mu.Unlock()
		mb.flush()
		return nil, err
	}
	mb.lastPoll = mb.cfg.Clock.Now()
	if mb.m.rejoinStale() {
		mb.poke()
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mb.pollCancel = cancel
	if mb.waiting > 0 {
		cancel()
	}
	mb.mu.Unlock()

	fetches := mb.cl.PollFetches(pctx)

	mb.mu.Lock()
	defer mb.mu.Unlock()
	mb.pollCancel = nil
	epoch := mb.m.epoch
	mb.polls++
	poll := mb.polls
	var out []clients.Record
	fetches.EachRecord(func(r *kgo.Record) {
		if mb.zombieRecord(r.Topic, r.Partition) {
			out = append(out, clients.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Generation: -1, MemberEpoch: epoch, Poll: poll})
			return
		}
		if !slices.Contains(mb.owned[r.Topic], r.Partition) || slices.Contains(mb.revoking[r.Topic], r.Partition) {
			return
		}
		pos, ok := mb.positions[r.Topic][r.Partition]
		if !ok || r.Offset < pos {
			return
		}
		mb.positions[r.Topic][r.Partition] = r.Offset + 1
		out = append(out, clients.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Generation: -1, MemberEpoch: epoch, Poll: poll})
	})
	var errs []error
	fetches.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			errs = append(errs, fmt.Errorf("fetch %s[%d]: %w", t, p, err))
		}
	})
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Commit commits offsets with the member's current epoch (OffsetCommit v9+
// carries it as GenerationIdOrMemberEpoch) and returns per-partition errors
// by Kafka name. Partitions the member does not own are not sent: they get
// NOT_OWNED, so a member that was fenced and lost its partitions never
// commits for them under a later epoch (which Kafka before 4.3 would
// accept, KIP-1251).
func (mb *Member) Commit(ctx context.Context, offsets map[string]map[int32]int64) (map[string]map[int32]string, error) {
	mb.mu.Lock()
	if mb.closed {
		mb.mu.Unlock()
		return nil, ErrClosed
	}
	asOf := mb.ownSeq
	send, errs := mb.ownedAsOfLocked(offsets, asOf)
	mb.mu.Unlock()
	if len(send) == 0 {
		return errs, nil
	}
	perr, err := mb.commit(ctx, send, asOf, "commit asked for by the workload", awaitNewer, true)
	for t, ps := range perr {
		for p, e := range ps {
			setErr(errs, t, p, e)
		}
	}
	return errs, err
}

// ownedAsOfLocked splits offsets (taken when the member's ownership was at
// asOf, an ownSeq) into those of partitions it has owned without a break
// since then, which may be sent, and the others, which get NotOwned: a
// partition revoked or lost since asOf, even if given back since, is not the
// member's to commit with what it consumed before. mu is held.
func (mb *Member) ownedAsOfLocked(offsets map[string]map[int32]int64, asOf uint64) (keep map[string]map[int32]int64, notOwned map[string]map[int32]string) {
	keep, notOwned = map[string]map[int32]int64{}, map[string]map[int32]string{}
	for t, ps := range offsets {
		for p, o := range ps {
			if slices.Contains(mb.owned[t], p) && mb.ownedSince[t][p] <= asOf {
				setOffset(keep, t, p, o)
			} else {
				setErr(notOwned, t, p, NotOwned)
			}
		}
	}
	return keep, notOwned
}

// takeLocked records partition p of t as owned from a new assignment,
// number seq (mb.ownSeq, bumped once per assignment). mu is held.
func (mb *Member) takeLocked(t string, p int32, seq uint64) {
	mb.owned[t] = append(mb.owned[t], p)
	if mb.ownedSince[t] == nil {
		mb.ownedSince[t] = map[int32]uint64{}
	}
	mb.ownedSince[t][p] = seq
	delete(mb.sentHigh[t], p) // a new assignment: offsets may start lower
}

// NotOwned is the per-partition error Commit reports for a partition the
// member does not own; it is not a Kafka error and is never sent.
const NotOwned = "NOT_OWNED"

// Superseded is the per-partition error Commit reports for an offset it did
// not send because a higher offset of the partition was already sent in
// this assignment: sending it could move the committed offset back. It is
// not a Kafka error.
const Superseded = "SUPERSEDED"

// Close commits (with auto-commit), revokes what the member owns, sends the
// leave heartbeat (epoch -1, -2 for a static member) and stops every
// goroutine. It returns when all have ended.
func (mb *Member) Close(ctx context.Context) error {
	mb.mu.Lock()
	if mb.closed {
		mb.mu.Unlock()
		return nil
	}
	mb.closed = true
	started := mb.started
	mb.mu.Unlock()
	if !started {
		mb.cl.Close()
		return nil
	}
	mb.cancel()
	mb.wg.Wait()

	var errs []error
	mb.mu.Lock()
	inGroup := mb.m.inGroup() && mb.m.state != stateLeaving
	mb.mu.Unlock()
	if inGroup {
		if mb.cfg.autoCommit {
			if offs, asOf := mb.consumed(); len(offs) > 0 {
				if _, err := mb.commit(ctx, offs, asOf, "auto-commit on close", noRetry, false); err != nil {
					errs = append(errs, err)
				}
			}
		}
		mb.lockOwnership()
		if len(mb.owned) > 0 {
			mb.dropOwnedLocked(mb.ev(clients.Revoked, "closing: revoke everything before the leave heartbeat"))
		}
		mb.m.leave(false)
		mb.unlockOwnership()
		mb.flush()
		if err := mb.closeLeave(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	mb.flush()
	mb.cl.Close()
	return errors.Join(errs...)
}

// closeLeave sends Close's leave heartbeat as the heartbeat goroutine sends
// every heartbeat: to the coordinator the member found itself
// (findCoordinator, which reports a lookup as FoundCoordinator), once,
// through send. A leave whose coordinator cannot be found is given up
// (machine.leaveSkipped), as Java's onHeartbeatRequestSkipped. The lookup
// and the leave each get the request timeout.
func (mb *Member) closeLeave(ctx context.Context) error {
	lctx, lcancel := context.WithTimeout(ctx, mb.cfg.requestTimeout)
	node, ok := mb.findCoordinator(lctx, ctx)
	lcancel()
	if !ok {
		mb.mu.Lock()
		mb.applyLocked(mb.m.leaveSkipped("the coordinator is unknown"))
		mb.mu.Unlock()
		mb.flush()
		return errors.New("leave heartbeat not sent: the coordinator is unknown")
	}
	req, seq, call, op := mb.sendHeartbeat()
	rctx, cancel := context.WithTimeout(ctx, mb.cfg.requestTimeout)
	resp, err := mb.send(rctx, node, req)
	cancel()
	mb.mu.Lock()
	defer mb.mu.Unlock()
	var o outcome
	if err != nil {
		o = mb.m.onError(seq, err)
	} else {
		o = mb.m.onResponse(seq, resp)
	}
	o.events = mb.answerEvents(call, op, req, resp, err, o.events)
	mb.applyLocked(o)
	if err != nil {
		return fmt.Errorf("leave heartbeat: %w", err)
	}
	return nil
}

// ev is an event stamped with who the member is and when.
func (mb *Member) ev(kind clients.Kind, why string) clients.Event {
	e := mb.m.ev(kind, why)
	switch kind {
	case clients.Assigned, clients.Revoked, clients.Lost:
		// Made under lockOwnership: no Poll runs, every one counted returned.
		n := mb.polls
		e.AfterPoll = &n
	}
	return e
}

// flush hands queued events to the hooks in order, outside mu so that a
// hook may call back into the member.
func (mb *Member) flush() {
	mb.emitMu.Lock()
	defer mb.emitMu.Unlock()
	mb.mu.Lock()
	evs := mb.pending
	mb.pending = nil
	mb.mu.Unlock()
	for _, e := range evs {
		e.Protocol = clients.Consumer
		e.Member = mb.name
		e.MemberID = mb.m.cfg.memberID
		e.InstanceID = mb.cfg.instanceID
		if e.At.IsZero() {
			e.At = mb.cfg.Clock.Now()
		}
		mb.cfg.logger.Debug("consumer member event", "member", mb.name, "kind", e.Kind, "epoch", e.MemberEpoch, "partitions", e.Partitions, "err", e.Err, "why", e.Why)
		mb.cfg.Hooks.OnEvent(e)
	}
}

func (mb *Member) poke() {
	select {
	case mb.kick <- struct{}{}:
	default:
	}
}

// lockOwnership stops a running Poll and takes pollMu then mu.
func (mb *Member) lockOwnership() {
	mb.mu.Lock()
	mb.waiting++
	if mb.pollCancel != nil {
		mb.pollCancel()
	}
	mb.mu.Unlock()
	mb.pollMu.Lock()
	mb.mu.Lock()
	mb.waiting--
}

func (mb *Member) unlockOwnership() {
	mb.mu.Unlock()
	mb.pollMu.Unlock()
}

// applyLocked turns a machine outcome into events and, when it says so,
// drops every owned partition as lost. mu is held; when partitions must be
// lost it is released and re-taken around lockOwnership.
func (mb *Member) applyLocked(o outcome) {
	for _, e := range o.events {
		mb.pending = append(mb.pending, e)
	}
	if o.loseAll == "" {
		return
	}
	mb.mu.Unlock()
	mb.lockOwnership()
	mb.loseOwnedLocked(o.loseAll, o.lostAt)
	mb.unlockOwnership()
	mb.mu.Lock()
}

func (mb *Member) loseOwnedLocked(why string, epoch int32) {
	e := mb.ev(clients.Lost, why)
	e.MemberEpoch = epoch
	mb.dropOwnedLocked(e)
}

// dropOwnedLocked stops consuming every owned partition and queues e,
// which reports them all given up (revoked or lost), when the member owns
// any; then it owns nothing and keeps no positions.
func (mb *Member) dropOwnedLocked(e clients.Event) {
	if mb.owned.Count() > 0 {
		mb.cl.RemoveConsumePartitions(mb.owned.Clone())
		e.Partitions = mb.owned
		mb.pending = append(mb.pending, e)
	}
	mb.owned = clients.Partitions{}
	mb.positions = map[string]map[int32]int64{}
	mb.sentHigh = map[string]map[int32]int64{}
}

// consumed returns the positions of owned partitions that moved since the
// last auto-commit, and the ownership they were taken under (ownSeq).
func (mb *Member) consumed() (map[string]map[int32]int64, uint64) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	out := map[string]map[int32]int64{}
	for t, ps := range mb.owned {
		for _, p := range ps {
			pos, ok := mb.positions[t][p]
			if !ok || pos < 0 {
				continue
			}
			if last, ok := mb.committed[t][p]; ok && last == pos {
				continue
			}
			setOffset(out, t, p, pos)
		}
	}
	return out, mb.ownSeq
}

func setOffset(m map[string]map[int32]int64, t string, p int32, o int64) {
	if m[t] == nil {
		m[t] = map[int32]int64{}
	}
	m[t][p] = o
}

func setErr(m map[string]map[int32]string, t string, p int32, e string) {
	if m[t] == nil {
		m[t] = map[int32]string{}
	}
	m[t][p] = e
}
