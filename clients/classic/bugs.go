package classic

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/option"
)

// Bug is a deliberate defect a member can be built with (WithBug), so that
// suites/bite can prove the checker that names it catches it. A member
// built without WithBug has none, and no registry a seed draws from sets
// one (harness/kinds.BrokenKinds names these kinds; only an explicit --kinds
// picks them).
//
// Every bug lives in this file. The member reaches it only at a few named
// seams, each a no-op for the zero Bug: bugHides and bugSees in emit,
// bugKeepsConsuming and bugReassigned in applyLocked, bugHandsOut in Poll,
// bugStaleGeneration in Commit. The state machine (machine.go) knows
// nothing of bugs: a broken member decides as a correct one and only
// carries out some decisions wrongly.
type Bug string

const (
	// BugFetchAfterRevoke keeps consuming and handing out the records of
	// a partition after the member reported revoking it, until the
	// partition is assigned to it again: ConsumedOnlyOwned catches it.
	BugFetchAfterRevoke Bug = "fetch-after-revoke"
	// BugIgnoreFence carries on when the coordinator has fenced the member
	// (its generation reset by UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION, its
	// poll timer expired, FENCED_INSTANCE_ID): it reports neither the fence
	// ("fenced", "session-expired") nor the loss ("lost") and keeps
	// consuming and handing out the records of what it lost until it is
	// assigned them again. Meanwhile the group has given them to others:
	// NoDoubleOwnership catches it (an overlap is excused only where one
	// side was fenced and acted on it).
	BugIgnoreFence Bug = "ignore-fence"
	// BugStaleCommit commits the application's offsets with the first
	// generation the member was given, whatever it holds now, and reports
	// every answer as success: after the first rebalance the coordinator
	// rejects each of those commits (ILLEGAL_GENERATION) while the member
	// says they were acknowledged, so the committed offsets the group ends
	// with are not the ones it acknowledged: DurableCommits catches it.
	BugStaleCommit Bug = "stale-commit"
)

// Bugs lists the bugs a classic member can be built with.
func Bugs() []Bug { return []Bug{BugFetchAfterRevoke, BugIgnoreFence, BugStaleCommit} }

// WithBug builds the member with one deliberate defect. Never for real use.
func WithBug(b Bug) Opt { return option.New(func(c *cfg) { c.bug = b }) }

func (b Bug) check() error {
	if b == "" || slices.Contains(Bugs(), b) {
		return nil
	}
	return fmt.Errorf("unknown bug %q: the classic member carries %q, %q or %q", string(b), BugFetchAfterRevoke, BugIgnoreFence, BugStaleCommit)
}

// bugState is what a bug keeps besides the member's state. It has its own
// lock: emit, where it learns, runs with and without the member's.
type bugState struct {
	mu sync.Mutex
	// zombie are partitions the member gave up but goes on consuming
	// (BugFetchAfterRevoke, BugIgnoreFence).
	zombie clients.Partitions
	// lastGen is the last generation the member held: records of zombie
	// partitions carry it.
	lastGen int32
	// firstGen is the first generation the member was given, memberID the
	// latest member id (BugStaleCommit).
	firstGen int32
	memberID string
}

func newBugState() *bugState {
	return &bugState{zombie: clients.Partitions{}, lastGen: -1, firstGen: -1}
}

// bugHides says whether emit must not report e: BugIgnoreFence hides the
// fence and the loss.
func (m *Member) bugHides(e clients.Event) bool {
	return m.cfg.bug == BugIgnoreFence && (e.Kind == clients.Lost || e.Kind == clients.Fenced || e.Kind == clients.SessionExpired)
}

// bugSees learns from every event the member makes (reported or hidden)
// the generations and member id a bug needs.
func (m *Member) bugSees(e clients.Event) {
	if m.cfg.bug == "" {
		return
	}
	b := m.bugs
	b.mu.Lock()
	defer b.mu.Unlock()
	if e.Err == "" && e.MemberID != "" {
		b.memberID = e.MemberID
	}
	if e.Generation > 0 && e.Err == "" && e.Kind != clients.Lost {
		b.lastGen = e.Generation
		if b.firstGen < 0 && (e.Kind == clients.Synced || e.Kind == clients.Assigned) {
			b.firstGen = e.Generation
		}
	}
}

// bugKeepsConsuming says whether the partitions a Revoked or Lost event
// gives up stay consumed: BugFetchAfterRevoke keeps what it revokes,
// BugIgnoreFence what it loses. mu is held.
func (m *Member) bugKeepsConsuming(e clients.Event) bool {
	keep := m.cfg.bug == BugFetchAfterRevoke && e.Kind == clients.Revoked ||
		m.cfg.bug == BugIgnoreFence && e.Kind == clients.Lost
	if !keep {
		return false
	}
	m.bugs.mu.Lock()
	defer m.bugs.mu.Unlock()
	m.bugs.zombie = union(m.bugs.zombie, e.Partitions)
	return true
}

// bugReassigned stops the bug's consumption of partitions the member is
// assigned again: they leave kgo, and startConsuming adds them back at the
// committed offset as for any assignment. mu is held.
func (m *Member) bugReassigned(ps clients.Partitions) {
	if m.cfg.bug == "" {
		return
	}
	m.bugs.mu.Lock()
	again := subtract(m.bugs.zombie, subtract(m.bugs.zombie, ps))
	m.bugs.zombie = subtract(m.bugs.zombie, ps)
	m.bugs.mu.Unlock()
	if again.Count() > 0 {
		m.cl.RemoveConsumePartitions(map[string][]int32(again))
	}
}

// bugHandsOut says whether Poll hands out a record of t-p the machine
// holds back, and with which generation: a zombie partition's, with the
// last generation the member held. mu is held.
func (m *Member) bugHandsOut(t string, p int32) (int32, bool) {
	if m.cfg.bug == "" {
		return 0, false
	}
	m.bugs.mu.Lock()
	defer m.bugs.mu.Unlock()
	return m.bugs.lastGen, slices.Contains(m.bugs.zombie[t], p)
}

// bugStaleGeneration is the generation BugStaleCommit commits with: the
// first the member was given, with its latest member id; ok is false
// without the bug or before the member had a generation (nothing stale to
// send yet).
func (m *Member) bugStaleGeneration() (Generation, bool) {
	if m.cfg.bug != BugStaleCommit {
		return Generation{}, false
	}
	m.bugs.mu.Lock()
	defer m.bugs.mu.Unlock()
	if m.bugs.firstGen < 0 || m.bugs.memberID == "" {
		return Generation{}, false
	}
	return Generation{ID: m.bugs.firstGen, MemberID: m.bugs.memberID}, true
}

// staleCommit (BugStaleCommit) sends the application's commit with gen, on
// the member's commit lane and as a call like any other (Sent, then its
// answer), and reports the answer as an acknowledged commit of every
// offset, whatever the coordinator said; the member does not react to it.
func (m *Member) staleCommit(ctx context.Context, gen Generation, offsets map[string]map[int32]int64) (map[string]map[int32]string, error) {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	m.mu.Lock()
	req := m.mach.commitRequest(gen, offsets)
	m.mu.Unlock()
	why := fmt.Sprintf("deliberate bug %s: OffsetCommit with the first generation %d the member was given", m.cfg.bug, gen.ID)
	var call uint64
	resp, err := m.sendCommit(ctx, req, func() {
		call = m.sent(clients.OpCommit, clients.Event{Generation: gen.ID, MemberID: gen.MemberID, Offsets: offsets, App: true, Why: why})
	})
	if err != nil {
		m.emit(clients.Event{Kind: clients.CommitFailed, Op: clients.OpCommit, Call: call, App: true, Err: err.Error(), Generation: gen.ID, MemberID: gen.MemberID, Offsets: offsets,
			Why: "OffsetCommit got no answer"})
		return nil, fmt.Errorf("commit: %w", err)
	}
	var ignored []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if ke := kerr.ErrorForCode(p.ErrorCode); ke != nil {
				ignored = append(ignored, fmt.Sprintf("%s[%d] %s", t.Topic, p.Partition, errName(ke)))
			}
		}
	}
	ev := clients.Event{Kind: clients.Committed, Op: clients.OpCommit, Call: call, App: true, Generation: gen.ID, MemberID: gen.MemberID, Offsets: offsets,
		Why: fmt.Sprintf("OffsetCommit with generation %d answered", gen.ID)}
	if len(ignored) > 0 {
		ev.Why += fmt.Sprintf(" (deliberate bug %s: taken as success despite %v)", m.cfg.bug, ignored)
	}
	m.emit(ev)
	return nil, nil
}
