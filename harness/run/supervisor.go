package run

import (
	"context"
	"fmt"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// The supervisor is the world around a member's process in production:
// systemd, Kubernetes or a process manager. A consumer whose poll throws a
// fatal error (a KafkaConsumer's UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID,
// GROUP_ID_NOT_FOUND...) is closed by its application, which exits; its
// supervisor starts a new process, a new member (a new member id, the same
// group.instance.id if static), again and again with a growing backoff
// until the group takes it in. Without it the harness would leave such a
// member stopped for the rest of the run and blame the group for its
// absence, where Kafka did what it documents (a static member crashed and
// restarted within its session is refused UNRELEASED_INSTANCE_ID until the
// session of its old incarnation expires).
//
// Plan.Supervisor turns it on and gives the backoff. What the supervisor
// does is in the history, on the member's own process, as FRestart events:
// "scheduled" right after the member's FStopped (with the attempt number,
// the backoff and the stop's reason), "restarted" when the new incarnation
// starts, "cancelled" when the harness took the member out first (a leave,
// a migration's withdrawal). The member's own events, the fatal answer
// among them, stay as the member recorded them.
//
// What the supervisor restarts: a member whose Poll says it stopped for good
// on its own (clients.ErrStopped): groupquake's classic and consumer members
// on a fatal error, a Java member whose poll threw an exception its
// application cannot go on from, a kgo member whose client closed. What it
// leaves to the harness: a member the nemesis crashed (its heal restarts
// it), one that left or was withdrawn (the harness brings it back, or not),
// and every member at teardown.

// stopped is called on s's driver d right after it recorded that the
// member stopped for good. With the supervisor on, the decision to restart
// is recorded at once, so the history never shows a supervised member
// stopped for good; the rest happens on a goroutine of its own, since the
// slot's lock may be held by someone waiting for d to stop.
func (c *crew) stopped(s *slot, d *driver, why error) error {
	sup := c.r.p.Supervisor
	if !sup.On() {
		return nil
	}
	s.supMu.Lock()
	s.attempt++
	n := s.attempt
	s.supMu.Unlock()
	wait := sup.Backoff(n)
	due := time.Now().Add(wait)
	v := history.Restart{Member: s.plan.Name, Action: history.RestartScheduled, Attempt: n, Backoff: wait, Reason: why.Error()}
	how := "as a new member"
	if id := s.plan.InstanceID; id != "" {
		how = "as a new member with its instance id " + id
	}
	if _, err := c.r.rec.Restarted(s.plan.Name, v, fmt.Sprintf("its supervisor restarts it (attempt %d) after %s, %s: the application closes its consumer after the fatal error and exits", n, wait, how)); err != nil {
		return err
	}
	c.wg.Add(1) // d's goroutine is counted, so the group cannot be waited out meanwhile
	go func() {
		defer c.wg.Done()
		if err := c.restart(s, d, v, due); err != nil {
			c.fail(fmt.Errorf("supervising member %s: %w", s.plan.Name, err))
		}
	}()
	return nil
}

// joined is the current incarnation's first admission into the group: the
// supervisor's attempts start over.
func (s *slot) joined() {
	s.supMu.Lock()
	s.attempt = 0
	s.supMu.Unlock()
}

// restart takes d's process down (its application closes the consumer and
// exits), waits until due and starts a new incarnation of s, unless the
// harness decided the member's life meanwhile.
func (c *crew) restart(s *slot, d *driver, v history.Restart, due time.Time) error {
	s.mu.Lock()
	if s.d != d || !s.running {
		// Crashed by the nemesis, left or withdrawn before the supervisor
		// got to it: what happens next is the harness's.
		s.mu.Unlock()
		if c.ctx.Err() != nil {
			return nil
		}
		v.Action = history.RestartCancelled
		_, err := c.r.rec.Restarted(s.plan.Name, v, "the harness had stopped this incarnation first (a crash, a leave or a withdrawal): what starts the member again is the harness's")
		return err
	}
	c.halt(s)
	if owned := d.m.Owned(); owned.Count() > 0 {
		// Every kind reports its partitions lost when it stops on a fatal
		// error; should one still hold some, the exiting process consumes
		// nothing more of them.
		a := history.Assignment{Member: s.plan.Name, Protocol: s.plan.Protocol, Epoch: s.hooks.epoch.Load(), Partitions: tps(owned)}
		if _, err := c.r.rec.Lost(s.plan.Name, a, "stopped for good: the application exits and consumes nothing more"); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), 10*time.Second)
	cerr := d.m.Close(cctx) // a member stopped for good is out of the group: its close sends no leave
	cancel()
	if cerr != nil {
		c.r.note("member %s: closing it after it stopped for good: %v", s.plan.Name, cerr)
	}
	if err := d.h.Finish(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.restarting = true
	s.restartSeq++
	seq := s.restartSeq
	s.mu.Unlock()

	if !sleepUntil(c.ctx, due) {
		return nil // the run ended: the member is still restarting at its end
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.restarting || s.restartSeq != seq || c.ctx.Err() != nil {
		return nil // cancelled, and recorded, by what took it over
	}
	s.restarting = false
	if err := c.build(s); err != nil {
		return err
	}
	v.Action = history.RestartStarted
	if _, err := c.r.rec.Restarted(s.plan.Name, v, fmt.Sprintf("its supervisor starts a new process (attempt %d, after %s)", v.Attempt, v.Backoff)); err != nil {
		return err
	}
	c.launch(s, 0, false)
	return nil
}

// cancelRestart cancels the restart s's supervisor has pending (s.mu held).
func (c *crew) cancelRestart(s *slot, why string) error {
	s.restarting = false
	s.restartSeq++
	s.supMu.Lock()
	n := s.attempt
	s.supMu.Unlock()
	_, err := c.r.rec.Restarted(s.plan.Name, history.Restart{Member: s.plan.Name, Action: history.RestartCancelled, Attempt: n, Reason: why}, "the restart its supervisor had pending is cancelled")
	return err
}

// underSupervisor says that s is being restarted by its supervisor (s.mu held).
func (c *crew) underSupervisor(s *slot) string {
	s.supMu.Lock()
	n := s.attempt
	s.supMu.Unlock()
	return fmt.Sprintf("%s stopped for good and is being restarted by its supervisor (attempt %d)", s.plan.Name, n)
}
