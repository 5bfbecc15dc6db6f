package light

import (
	"context"
	"sync"
	"time"
)

// Member is one lightweight member. Run drives it until ctx ends or Leave
// is called; State says where it stands.
type Member interface {
	// Run joins the group and takes part in it until ctx ends (the member
	// then just stops, as a crashed consumer does: its session expires) or
	// Leave was called. It returns nil after a leave.
	Run(ctx context.Context) error
	// Leave makes the member leave the group (LeaveGroup, or the
	// heartbeat with epoch -1) and Run return.
	Leave(ctx context.Context) error
	// State returns the member's view of itself.
	State() State
}

// State is a member's view of itself, for deciding whether the group is
// stable.
type State struct {
	MemberID string
	// Epoch is the classic generation or the consumer member epoch.
	Epoch int32
	// Settled: the member holds the assignment of Epoch and owes the
	// coordinator nothing (classic: synced, no rejoin pending; consumer:
	// its last heartbeat acknowledged exactly what it owns).
	Settled bool
	// Owned is the number of partitions the member owns.
	Owned int
	// LastOK is when the coordinator last answered the member without an
	// error.
	LastOK time.Time
	// Left: the member left the group.
	Left bool
}

// state is the part of a member that State reads while Run writes it.
type state struct {
	mu sync.Mutex
	s  State
}

func (s *state) get() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s
}

func (s *state) update(f func(*State)) {
	s.mu.Lock()
	f(&s.s)
	s.mu.Unlock()
}

// lifecycle is what both kinds of member share besides their protocol: the
// State that Run writes and State reads, and Leave's handshake with Run.
type lifecycle struct {
	st    state
	leave chan struct{} // closed by Leave: Run leaves the group and returns
	once  sync.Once
	done  chan struct{} // closed by Run when it returns
	// drop ends the context of the member's requests (under st.mu), so
	// that Leave drops a request still queued instead of waiting for it.
	drop context.CancelFunc
}

// requests returns the context of Run's requests until it leaves: ctx,
// also ended by Leave. A request still queued when the member leaves is
// dropped, never sent; the leave itself goes with ctx.
func (l *lifecycle) requests(ctx context.Context) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancel(ctx)
	l.st.mu.Lock()
	l.drop = cancel
	l.st.mu.Unlock()
	return rctx, cancel
}

// begin starts Run: it returns the context of Run's requests (requests)
// and end, which Run defers: it ends that context, then marks Run
// returned (done).
func (l *lifecycle) begin(ctx context.Context) (context.Context, func()) {
	rctx, cancel := l.requests(ctx)
	return rctx, func() {
		cancel()
		close(l.done)
	}
}

func (l *lifecycle) prepare() {
	l.leave, l.done = make(chan struct{}), make(chan struct{})
}

// State implements Member.
func (l *lifecycle) State() State { return l.st.get() }

// Leave implements Member.
func (l *lifecycle) Leave(ctx context.Context) error {
	l.once.Do(func() { close(l.leave) })
	l.st.mu.Lock()
	drop := l.drop
	l.st.mu.Unlock()
	if drop != nil {
		drop()
	}
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
