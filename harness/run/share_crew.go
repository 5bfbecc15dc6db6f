package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/cluster"
)

// shareCrew runs a share group's members through their lives, as crew
// (members.go) does for consumer groups: the first start in the warm-up
// (late joiners wait for their MemberJoin heal), and the churn the nemesis
// asks for through faults.Members. Each planned member is a slot; each
// start of it is an incarnation with its own share.Member (a new member
// id, as a new KafkaShareConsumer picks one), recorder and driver, under
// the member's one name.
//
// What each churn does to a share member, and so to the records it holds:
//
//   - leave: the member closes (its pending acknowledgements go at the
//     final session epoch -1, which ends its sessions and releases what it
//     still holds, then it leaves at member epoch -1); a new incarnation
//     joins at the heal;
//   - crash: its host vanishes: its links go black (connections stay open,
//     no byte passes), it sends nothing more, and its client stays open
//     until the heal, so the records it held stay acquired until their
//     locks lapse and come back to others at a higher delivery count; at
//     the heal its connections close and a new incarnation starts;
//   - restart: the same, healed well within the lock, so the broker
//     releases its records when the connections close;
//   - stall: the application stops polling while the member heartbeats:
//     the records of its last poll stay unacknowledged past their lock,
//     and the acknowledgements it queued go out when it resumes, after
//     their locks lapsed;
//   - freeze: a stall whose links also hold every byte for the fault's
//     length.
type shareCrew struct {
	r     *runner
	ctx   context.Context // lives until the workload's members are stopped
	wg    *sync.WaitGroup
	slots map[string]*shareSlot
	order []*shareSlot
	newSM func(MemberPlan) (*shareMember, error)

	mu  sync.Mutex
	all []*shareMember // every incarnation, for teardown
}

// shareSlot is one planned share member.
type shareSlot struct {
	memberSlot
	sm *shareMember
	// crashed is an incarnation whose process died: its client stays open
	// (connections half-open, links black) until the heal.
	crashed *shareMember
}

var _ faults.Members = (*shareCrew)(nil)

func newShareCrew(r *runner, newSM func(MemberPlan) (*shareMember, error)) *shareCrew {
	c := &shareCrew{r: r, newSM: newSM}
	c.slots, c.order = slotsOf(r.p.Members, func(mp MemberPlan) *shareSlot { return &shareSlot{memberSlot: memberSlot{plan: mp}} })
	return c
}

// build makes a new incarnation of s (not started).
func (c *shareCrew) build(s *shareSlot) error {
	sm, err := c.newSM(s.plan)
	if err != nil {
		return err
	}
	s.sm = sm
	c.mu.Lock()
	c.all = append(c.all, sm)
	c.mu.Unlock()
	return nil
}

// launch starts s's current incarnation after wait and drives it until
// the crew's context ends or the incarnation is stopped.
func (c *shareCrew) launch(s *shareSlot, wait time.Duration) {
	ctx, cancel := context.WithCancel(c.ctx)
	sm := s.sm
	sm.cancel = cancel
	s.running = true
	s.starts++
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if !sleepUntil(ctx, time.Now().Add(wait)) {
			close(sm.done)
			return
		}
		if err := sm.m.Start(ctx); err != nil {
			c.r.note("member %s could not start: %v", sm.plan.Name, err)
			close(sm.done)
			return
		}
		sm.drive(ctx)
	}()
}

// startAll builds every member and starts those that are not late
// joiners, each after its planned JoinAfter.
func (c *shareCrew) startAll(ctx context.Context, wg *sync.WaitGroup) error {
	c.ctx, c.wg = ctx, wg
	late := map[string]bool{}
	for _, n := range faults.LateJoiners(c.r.p.Faults) {
		late[n] = true
	}
	for _, s := range c.order {
		s.mu.Lock()
		err := c.build(s)
		if err == nil && !late[s.plan.Name] {
			c.launch(s, s.plan.JoinAfter)
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// running returns the members running now.
func (c *shareCrew) running() []*shareMember {
	var out []*shareMember
	for _, s := range c.order {
		s.mu.Lock()
		if s.running && s.sm != nil {
			out = append(out, s.sm)
		}
		s.mu.Unlock()
	}
	return out
}

// incarnations returns every incarnation built so far.
func (c *shareCrew) incarnations() []*shareMember {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*shareMember(nil), c.all...)
}

// halt stops sm's driver and waits for it (a call in flight gets its
// answer or its timeout first).
func (c *shareCrew) halt(sm *shareMember) {
	if sm.cancel != nil {
		sm.cancel()
	}
	select {
	case <-sm.done:
	case <-time.After(30 * time.Second):
		c.r.note("member %s: its driver did not stop within 30s", sm.plan.Name)
	}
}

// change runs fn on the running member name, under its slot's lock; a
// member that is not running is left as it is, and the history says so.
func (c *shareCrew) change(name string, fn func(*shareSlot) (string, error)) (string, error) {
	return withSlot(c.slots, name, func(s *shareSlot) (string, error) {
		if !s.running {
			return fmt.Sprintf("%s was not running", name), nil
		}
		return fn(s)
	})
}

// Join implements faults.Members: a late joiner starts.
func (c *shareCrew) Join(ctx context.Context, name string) (string, error) {
	return withSlot(c.slots, name, func(s *shareSlot) (string, error) {
		return s.join(func(rebuild bool) error {
			if rebuild {
				if err := c.build(s); err != nil {
					return err
				}
			}
			c.launch(s, 0)
			return nil
		})
	})
}

// Leave implements faults.Members: the member stops polling and closes:
// what it queued goes at the final session epoch -1, then it leaves.
func (c *shareCrew) Leave(ctx context.Context, name string) (string, error) {
	return c.change(name, func(s *shareSlot) (string, error) {
		sm := s.sm
		c.halt(sm)
		held := acquired(sm)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err := sm.m.Close(cctx)
		sm.h.Finish("the member closed before the answer came")
		s.running = false
		saw := fmt.Sprintf("%s closed its share sessions and left, holding %d records", name, held)
		if err != nil {
			saw += " (its close said: " + err.Error() + ")"
		}
		return saw, nil
	})
}

// Crash implements faults.Members: the member's links go black first, so
// from that instant nothing of it reaches Kafka while its connections stay
// open; the poll in flight then gets its answer (answers still pass), and
// the member dies right after it handed the records to the application:
// its hooks are muted (a dead process reports nothing), its driver stops,
// it is abandoned (no acknowledgement, no leave), and its open calls end
// as unknown outcomes. Its client stays open until the heal, so the
// records it acquired stay acquired until their locks lapse.
func (c *shareCrew) Crash(ctx context.Context, name string) (string, error) {
	return c.change(name, func(s *shareSlot) (string, error) {
		if err := c.r.onLinks(name, "cutting member %s off", func(l *cluster.Links) error { return l.Blackhole(faults.AllNodes) }); err != nil {
			return "", err
		}
		sm := s.sm
		sm.stalled.Store(true)
		awaitParked(ctx, sm)
		sm.muted.Store(true)
		c.halt(sm)
		held := acquired(sm)
		sm.m.Abandon()
		sm.hooks.lost()
		sm.h.Finish("crashed by the nemesis: the process is gone and reports nothing more")
		s.running, s.crashed = false, sm
		return fmt.Sprintf("%s crashed holding %d acquired records; its connections stay open and silent until the heal", name, held), nil
	})
}

// Stall implements faults.Members: the driver stops polling (what it
// queued waits); with freeze, the member's links also delay every byte by
// d.
func (c *shareCrew) Stall(ctx context.Context, name string, freeze bool, d time.Duration) (string, error) {
	return c.change(name, func(s *shareSlot) (string, error) {
		s.sm.stalled.Store(true)
		awaitParked(ctx, s.sm)
		held := acquired(s.sm)
		if freeze {
			if err := c.r.onLinks(name, "freezing member %s's links", func(l *cluster.Links) error { return l.Latency(faults.AllNodes, d, 0) }); err != nil {
				return "", err
			}
			s.frozen = true
			return fmt.Sprintf("%s frozen for %s holding %d records (no poll, its links delayed)", name, d, held), nil
		}
		return fmt.Sprintf("%s stopped polling for %s holding %d records", name, d, held), nil
	})
}

// Restore implements faults.Members: a stalled member resumes, a frozen
// one thaws; a left or crashed one starts anew (a new member id), a
// crashed one after its old client closed and its links healed.
func (c *shareCrew) Restore(ctx context.Context, name string) (string, error) {
	return withSlot(c.slots, name, func(s *shareSlot) (string, error) {
		if s.running {
			return c.r.resume(&s.memberSlot, &s.sm.stalled, nil)
		}
		var saw string
		if s.crashed != nil {
			s.crashed.m.Drop()
			s.crashed = nil
			if err := c.r.onLinks(name, "healing member %s's links after its crash", func(l *cluster.Links) error { return l.Heal(faults.AllNodes) }); err != nil {
				return "", err
			}
			saw = "the crashed process's connections closed; "
		}
		if err := c.build(s); err != nil {
			return "", err
		}
		c.launch(s, 0)
		return saw + fmt.Sprintf("%s starts again as a new member", name), nil
	})
}

// closeAll closes every running incarnation and drops the crashed ones
// (teardown): their final acknowledgements close their sessions, then they
// leave.
func (c *shareCrew) closeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range c.order {
		s.mu.Lock()
		sm, was, crashed := s.sm, s.running, s.crashed
		s.running, s.crashed = false, nil
		s.mu.Unlock()
		if crashed != nil {
			crashed.m.Drop()
		}
		if sm == nil || !was {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.halt(sm)
			if err := sm.m.Close(ctx); err != nil {
				c.r.note("teardown: closing %s: %v", sm.plan.Name, err)
			}
		}()
	}
	wg.Wait()
}

// finish closes what every incarnation left open and returns the first
// event that could not be recorded.
func (c *shareCrew) finish() error {
	var err error
	for _, sm := range c.incarnations() {
		sm.h.Finish("the member was closed before the answer came")
		err = errors.Join(err, sm.h.Err())
	}
	return err
}

// acquired counts the records the broker has acquired by sm: those it
// holds and those whose acknowledgement it has not sent yet.
func acquired(sm *shareMember) int { return sm.m.Holding() + sm.m.Unsent() }

// awaitParked waits for sm's driver to finish the poll in flight and stop
// (it was told to stall): a poll's calls are bounded by the member's
// request timeouts.
func awaitParked(ctx context.Context, sm *shareMember) {
	deadline := time.Now().Add(15 * time.Second)
	for !sm.parked.Load() && time.Now().Before(deadline) {
		if !sleepUntil(ctx, time.Now().Add(20*time.Millisecond)) {
			return
		}
	}
}
