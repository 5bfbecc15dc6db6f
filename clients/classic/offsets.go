package classic

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

// Commit commits offsets with the member's current generation, member id
// and instance id (ConsumerCoordinator.sendOffsetCommitRequest). Outside
// a stable generation nothing is sent: REBALANCE_IN_PROGRESS while a
// rebalance runs (Java's RebalanceInProgressException), ErrNotInGroup
// otherwise (CommitFailedException).
func (m *Member) Commit(ctx context.Context, offsets map[string]map[int32]int64) (map[string]map[int32]string, error) {
	if gen, ok := m.bugStaleGeneration(); ok {
		return m.staleCommit(ctx, gen, offsets)
	}
	return m.commitOwn(ctx, offsets, true)
}

// commitOwn is Commit for the application (app) or for the member itself
// (auto-commit, the commit before a rejoin or Close).
func (m *Member) commitOwn(ctx context.Context, offsets map[string]map[int32]int64, app bool) (map[string]map[int32]string, error) {
	m.mu.Lock()
	gen, refused, err := m.mach.commitGate(offsets, app)
	m.mu.Unlock()
	if refused != nil {
		m.emit(*refused)
	}
	if err != nil {
		return nil, err
	}
	return m.commit(ctx, gen, offsets, true, app)
}

// CommitAs sends OffsetCommit with the given generation and member id,
// whatever the member's own state: the harness uses it for zombie commits
// (a stale generation) and, with Generation{ID: -1}, for plain commits
// that carry no membership (an admin or manual-assignment commit). The
// instance id goes along when the member id is set.
//
// Coordinator errors are retried until ctx ends, as commitSync does.
// ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID for the member's current
// generation reset it and make it rejoin; FENCED_INSTANCE_ID is fatal.
// The returned error wraps the first partition error (errors.Is works with
// kerr values); the map holds every failed partition's error name.
//
// A forged commit never changes the member's own state: only Commit's
// answers do (FENCED_INSTANCE_ID included).
func (m *Member) CommitAs(ctx context.Context, gen Generation, offsets map[string]map[int32]int64) (map[string]map[int32]string, error) {
	return m.commit(ctx, gen, offsets, false, true)
}

// commit sends OffsetCommit and retries coordinator and transport errors.
// Every commit of the member keeps two rules, so that an older offset never
// lands after a newer one was acknowledged:
//
//  1. The lane (commitMu): one OffsetCommit of the member is in flight at a
//     time, from the moment it is sent until its outcome is reported. The
//     auto-commit loop, the commit before a rejoin and the application's
//     Commit run on different goroutines; without the lane a commit whose
//     answer was lost could be resent after another one was acknowledged.
//  2. The high-water mark (sentHigh, own commits only): per partition, the
//     highest offset sent since the partition was assigned. An offset below
//     it is never sent, as a new commit or as a retry after a lost answer or
//     a coordinator error (the lane is free during the backoff, so another
//     commit may go out meanwhile): it gets Superseded instead.
//
// A forged commit (CommitAs) takes the lane but not the mark: the harness
// sends it to see it rejected or accepted as it is.
//
// What no client can rule out: a request whose connection died may still
// sit in a paused broker's socket buffer and be applied after a later
// commit that went out on a new connection. Its outcome is reported as
// unknown (a transport error).
func (m *Member) commit(ctx context.Context, gen Generation, offsets map[string]map[int32]int64, own, app bool) (map[string]map[int32]string, error) {
	superseded := map[string]map[int32]string{}
	for attempt := 0; ; attempt++ {
		if !m.commitMu.TryLock() {
			if m.laneWait != nil {
				m.laneWait()
			}
			m.commitMu.Lock()
		}
		if own {
			m.mu.Lock()
			send := map[string]map[int32]int64{}
			for t, ps := range offsets {
				for p, o := range ps {
					if hi, ok := m.sentHigh[t][p]; ok && o < hi {
						if superseded[t] == nil {
							superseded[t] = map[int32]string{}
						}
						superseded[t][p] = Superseded
						continue
					}
					setOffset(send, t, p, o)
					setOffset(m.sentHigh, t, p, o)
				}
			}
			m.mu.Unlock()
			offsets = send
		}
		if len(offsets) == 0 {
			m.commitMu.Unlock()
			return superseded, nil
		}
		failed, first, retry, err := m.commitOnce(ctx, gen, offsets, app)
		m.commitMu.Unlock()
		for t, ps := range superseded {
			for p, e := range ps {
				if failed == nil {
					failed = map[string]map[int32]string{}
				}
				if failed[t] == nil {
					failed[t] = map[int32]string{}
				}
				failed[t][p] = e
			}
		}
		if err != nil {
			if ctx.Err() != nil || m.Err() != nil {
				return nil, fmt.Errorf("commit: %w", err)
			}
			if m.sleep(ctx, m.backoff(attempt)) != nil {
				return nil, fmt.Errorf("commit: %w", err)
			}
			continue
		}
		if first == nil {
			if len(failed) == 0 {
				return nil, nil
			}
			return failed, nil
		}
		if retry && ctx.Err() == nil {
			if isCoordinatorError(first) {
				m.markCoordinatorUnknown(errName(first) + " from OffsetCommit")
			}
			if m.sleep(ctx, m.backoff(attempt)) != nil {
				return failed, fmt.Errorf("commit: %w", first)
			}
			continue
		}
		if own {
			if rip := m.onCommitError(gen, first); rip != nil {
				return failed, rip
			}
		}
		return failed, fmt.Errorf("commit: %w", first)
	}
}

// Superseded is the per-partition error Commit reports for an offset it did
// not send because a higher offset of the partition was already sent in
// this assignment: sending it could move the committed offset back. It is
// not a Kafka error.
const Superseded = "SUPERSEDED"

// commitOnce sends one OffsetCommit and reports its outcome. err is a
// transport error (no answer); otherwise failed holds the partitions the
// coordinator refused, first the first of those errors, and retry says
// whether Java would retry it.
func (m *Member) commitOnce(ctx context.Context, gen Generation, offsets map[string]map[int32]int64, app bool) (failed map[string]map[int32]string, first error, retry bool, err error) {
	m.mu.Lock()
	req := m.mach.commitRequest(gen, offsets)
	m.mu.Unlock()
	var call uint64
	resp, err := m.sendCommit(ctx, req, func() {
		call = m.sent(clients.OpCommit, clients.Event{Generation: gen.ID, MemberID: gen.MemberID, Offsets: offsets, App: app, Why: "OffsetCommit"})
	})
	if err != nil {
		why := "OffsetCommit failed in transport"
		if call == 0 {
			why = "OffsetCommit not sent: the coordinator could not be found"
		}
		m.emit(clients.Event{Kind: clients.CommitFailed, Op: clients.OpCommit, Call: call, App: app, Err: err.Error(), Generation: gen.ID, MemberID: gen.MemberID, Offsets: offsets, Why: why})
		return nil, nil, false, err
	}
	landed, failed, first, retry := commitAnswer(resp, offsets)
	ev := clients.Event{Kind: clients.Committed, Op: clients.OpCommit, Call: call, App: app, Generation: gen.ID, MemberID: gen.MemberID, Offsets: landed, Why: "OffsetCommit answered"}
	if len(failed) > 0 {
		ev.PartitionErrs = failed
		ev.ErrCode, ev.Err = errCode(first), errName(first)
	}
	m.emit(ev)
	return failed, first, retry, nil
}

// onCommitError has the machine react to the error of an own commit sent
// with gen sent (machine.onCommitError).
func (m *Member) onCommitError(sent Generation, err error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, rip := m.mach.onCommitError(sent, err)
	m.applyLocked(o)
	return rip
}

// FetchOffsets is OffsetFetch for partitions (require_stable, as the Java
// consumer sends it): committed offsets, -1 where none. Partitions with an
// error are left out and the first error is returned.
func (m *Member) FetchOffsets(ctx context.Context, ps clients.Partitions) (map[string]map[int32]int64, error) {
	m.mu.Lock()
	gen := m.mach.gen
	m.mu.Unlock()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = m.cfg.group
	g.MemberEpoch = -1
	for _, t := range ps.Topics() {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic = t
		rt.Partitions = slices.Clone(ps[t])
		g.Topics = append(g.Topics, rt)
	}
	req.Groups = append(req.Groups, g)
	// Pre-v8 form, in case the broker answers an older version.
	req.Group = m.cfg.group
	for _, t := range ps.Topics() {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = t
		rt.Partitions = slices.Clone(ps[t])
		req.Topics = append(req.Topics, rt)
	}
	raw, err := m.coordRequest(ctx, req, nil)
	if err != nil {
		m.emit(clients.Event{Kind: clients.Error, Err: err.Error(), Generation: gen.ID, MemberID: gen.MemberID, Why: "OffsetFetch failed in transport"})
		return nil, fmt.Errorf("offset fetch: %w", err)
	}
	resp := raw.(*kmsg.OffsetFetchResponse)
	out := map[string]map[int32]int64{}
	var first error
	note := func(code int16) bool {
		if err := kerr.ErrorForCode(code); err != nil {
			if first == nil {
				first = err
			}
			return false
		}
		return true
	}
	take := func(t string, p int32, code int16, offset int64) {
		if note(code) {
			setOffset(out, t, p, offset)
		}
	}
	if len(resp.Groups) > 0 {
		rg := resp.Groups[0]
		if note(rg.ErrorCode) {
			for _, t := range rg.Topics {
				for _, p := range t.Partitions {
					take(t.Topic, p.Partition, p.ErrorCode, p.Offset)
				}
			}
		}
	} else if note(resp.ErrorCode) {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				take(t.Topic, p.Partition, p.ErrorCode, p.Offset)
			}
		}
	}
	ev := clients.Event{Kind: clients.Fetched, Generation: gen.ID, MemberID: gen.MemberID, Offsets: out, Why: "OffsetFetch answered"}
	if first != nil {
		ev.ErrCode, ev.Err = errCode(first), errName(first)
		if isCoordinatorError(first) {
			m.markCoordinatorUnknown(errName(first) + " from OffsetFetch")
		}
	}
	m.emit(ev)
	if first != nil {
		return out, fmt.Errorf("offset fetch: %w", first)
	}
	return out, nil
}

// startConsuming reads the committed offsets of newly assigned partitions
// and hands them to kgo's direct consumer (ConsumerCoordinator
// refreshCommittedOffsetsIfNeeded). It retries until the offsets are read
// or the partitions are no longer owned by this generation.
func (m *Member) startConsuming(ctx context.Context, gen Generation, added clients.Partitions) error {
	for attempt := 0; ; attempt++ {
		committed, err := m.FetchOffsets(ctx, added)
		m.mu.Lock()
		if !m.mach.consumes(gen) {
			m.mu.Unlock()
			return nil
		}
		if err == nil {
			start := map[string]map[int32]kgo.Offset{}
			for t, ps := range added {
				for _, p := range ps {
					if !slices.Contains(m.mach.owned[t], p) {
						continue
					}
					if start[t] == nil {
						start[t] = map[int32]kgo.Offset{}
					}
					o, ok := committed[t][p]
					if ok && o >= 0 {
						start[t][p] = kgo.NewOffset().At(o)
						setOffset(m.committed, t, p, o)
						setOffset(m.positions, t, p, o)
					} else {
						start[t][p] = m.cfg.reset
					}
				}
			}
			m.cl.AddConsumePartitions(start)
			m.mu.Unlock()
			return nil
		}
		m.mu.Unlock()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if m.sleep(ctx, m.backoff(attempt)) != nil {
			return ctx.Err()
		}
	}
}

// commitPositions commits the positions of the records Poll returned for
// owned partitions that moved since the last auto-commit.
func (m *Member) commitPositions(ctx context.Context, why string) error {
	m.mu.Lock()
	offsets := map[string]map[int32]int64{}
	for t, ps := range m.positions {
		for p, o := range ps {
			if !slices.Contains(m.mach.owned[t], p) {
				continue
			}
			if c, ok := m.committed[t][p]; ok && c == o {
				continue
			}
			setOffset(offsets, t, p, o)
		}
	}
	m.mu.Unlock()
	if len(offsets) == 0 {
		return nil
	}
	m.cfg.log.Debug("auto-commit", "member", m.cfg.name, "why", why, "offsets", offsets)
	failed, err := m.commitOwn(ctx, offsets, false)
	m.mu.Lock()
	for t, ps := range offsets {
		for p, o := range ps {
			if _, bad := failed[t][p]; !bad && err == nil {
				setOffset(m.committed, t, p, o)
			}
		}
	}
	m.mu.Unlock()
	return err
}

// autoCommitLoop commits every auto-commit interval while the member is
// stable (ConsumerCoordinator.maybeAutoCommitOffsetsAsync).
func (m *Member) autoCommitLoop() {
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.cfg.Clock.After(m.cfg.autoCommitInterval):
		}
		if m.Stable() {
			_ = m.commitPositions(m.ctx, "auto-commit interval")
		}
	}
}

func setOffset(m map[string]map[int32]int64, t string, p int32, o int64) {
	if m[t] == nil {
		m[t] = map[int32]int64{}
	}
	m[t][p] = o
}
