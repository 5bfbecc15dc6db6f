package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// The churn kinds change the group's membership while it works: the
// moments consumer groups break in (a member joining while another still
// holds partitions it must revoke, a member leaving mid-reconciliation, a
// static member bouncing, a member whose process freezes). A churn fault's
// interval is the time the member is away or stalled; its heal brings the
// member back (Members.Restore), so every schedule still ends with the
// planned group running.
const (
	// MemberJoin keeps a member out of the group from the start of the
	// workload until its heal, when it joins: a late joiner, as in a
	// scale-out or a rolling deploy.
	MemberJoin Kind = "member-join"
	// MemberLeave makes a member commit and leave cleanly, and rejoin (as a
	// new member) at the heal.
	MemberLeave Kind = "member-leave"
	// MemberCrash stops a member without a leave (its links are cut first),
	// for about a session timeout or longer: the coordinator must expire it.
	MemberCrash Kind = "member-crash"
	// MemberRestart crashes a member and starts it again well within the
	// session timeout: a static member comes back with its instance id (no
	// rebalance expected), a dynamic one with a new member id (its old id
	// lingers until its session expires).
	MemberRestart Kind = "member-restart"
	// MemberStall stops a member's application from polling past its poll
	// interval while its heartbeats go on: the member must give up its
	// partitions (max.poll.interval.ms), and rejoin when it polls again.
	MemberStall Kind = "member-stall"
	// MemberFreeze freezes a member like a long GC pause: no poll, and its
	// links hold every byte for the pause (delivered late, not dropped). The
	// member's own timers keep running, unlike a real process pause.
	MemberFreeze Kind = "member-freeze"
)

type churnKind struct {
	kind Kind
	doc  string
	// span is the range the fault's interval is drawn from.
	span  func(Space) (time.Duration, time.Duration)
	apply func(context.Context, Members, Fault) (string, error)
	// closes says the member's connections close (see EndsSessions).
	closes bool
	// anew says the member's process or membership ends, and a new one
	// starts at the heal (see StartsAnew).
	anew bool
}

func init() {
	register(churnKind{MemberJoin, "keep a member out of the group until the heal, when it joins late",
		func(s Space) (time.Duration, time.Duration) { return s.MinDuration, s.Horizon * 2 / 3 },
		func(context.Context, Members, Fault) (string, error) {
			return "the member has not joined; it joins at the heal", nil
		}, false, false})
	register(churnKind{MemberLeave, "make a member commit and leave cleanly, rejoin as a new member at the heal",
		func(s Space) (time.Duration, time.Duration) { return s.MinDuration, s.MaxDuration },
		func(ctx context.Context, m Members, f Fault) (string, error) { return m.Leave(ctx, f.Member) }, true, true})
	register(churnKind{MemberCrash, "crash a member without a leave for a session timeout or longer, restart it at the heal",
		func(s Space) (time.Duration, time.Duration) {
			return s.SessionTimeout, 2 * s.SessionTimeout
		},
		func(ctx context.Context, m Members, f Fault) (string, error) { return m.Crash(ctx, f.Member) }, true, true})
	register(churnKind{MemberRestart, "crash a member and restart it within the session timeout (static members keep their instance id)",
		func(s Space) (time.Duration, time.Duration) {
			return 200 * time.Millisecond, max(s.SessionTimeout/2, 300*time.Millisecond)
		},
		func(ctx context.Context, m Members, f Fault) (string, error) { return m.Crash(ctx, f.Member) }, true, true})
	register(churnKind{MemberStall, "stop a member's polls past its poll interval while it heartbeats, resume at the heal",
		func(s Space) (time.Duration, time.Duration) {
			return s.PollInterval / 2, s.PollInterval * 3 / 2
		},
		func(ctx context.Context, m Members, f Fault) (string, error) {
			return m.Stall(ctx, f.Member, false, f.For)
		}, false, false})
	register(churnKind{MemberFreeze, "freeze a member like a long GC pause (no poll, its bytes held on the wire), thaw at the heal",
		func(s Space) (time.Duration, time.Duration) {
			return s.MinDuration, s.SessionTimeout * 3 / 2
		},
		func(ctx context.Context, m Members, f Fault) (string, error) {
			return m.Stall(ctx, f.Member, true, f.For)
		}, false, false})
}

func (k churnKind) Kind() Kind         { return k.kind }
func (k churnKind) endsSessions() bool { return k.closes }
func (k churnKind) startsAnew() bool   { return k.anew }
func (k churnKind) Family() Family     { return FamilyChurn }
func (k churnKind) Doc() string        { return k.doc }

func (k churnKind) unfit(s Space) string {
	switch {
	case len(s.Members) < 2:
		return fmt.Sprintf("churn needs a group of two members or more (this one has %d): a lone member that leaves takes the whole group with it", len(s.Members))
	case s.SessionTimeout <= 0 || s.PollInterval <= 0:
		return "churn needs the session timeout and the poll interval"
	}
	return ""
}

func (k churnKind) durations(s Space) (time.Duration, time.Duration) {
	lo, hi := k.span(s)
	return lo, max(lo, hi)
}

func (k churnKind) draw(rng *rand.Rand, s Space, f *Fault) {
	f.Member = s.Members[rng.IntN(len(s.Members))]
	f.Node = 0
	if k.kind == MemberJoin {
		// Away from the start: the member's interval is its absence.
		f.At = 0
	}
}

func (k churnKind) validate(f Fault) error {
	if f.Member == "" {
		return fmt.Errorf("fault %s needs a member", f.Kind)
	}
	if f.Client != "" || f.Node != 0 {
		return fmt.Errorf("fault %s acts on member %s, not on a node or a link (node %d, client %q)", f.Kind, f.Member, f.Node, f.Client)
	}
	if k.kind == MemberJoin && f.At != 0 {
		return fmt.Errorf("fault %s: a late joiner is away from the start of the workload (at 0, not %s); its heal, after %q, is when it joins", f.Kind, f.At, "for")
	}
	if f.For == 0 {
		return fmt.Errorf("fault %s on %s needs a duration: it is how long the member is away", f.Kind, f.Member)
	}
	return nil
}

func (k churnKind) Apply(ctx context.Context, env Env, f Fault) (string, error) {
	if env.Members == nil {
		return "", errNoPart(f, "control of the group's members")
	}
	return k.apply(ctx, env.Members, f)
}

func (k churnKind) Heal(ctx context.Context, env Env, f Fault) (string, error) {
	if env.Members == nil {
		return "", errNoPart(f, "control of the group's members")
	}
	if k.kind == MemberJoin {
		return env.Members.Join(ctx, f.Member)
	}
	return env.Members.Restore(ctx, f.Member)
}

// LateJoiners lists the members a schedule keeps out of the group until
// their MemberJoin heals: the workload must not start them in the warm-up.
func LateJoiners(sched []Fault) []string {
	return membersOf(sched, MemberJoin, func(f Fault) string { return f.Member })
}

// membersOf lists member(f) of every fault of kind in sched, in order.
func membersOf(sched []Fault, kind Kind, member func(Fault) string) []string {
	var out []string
	for _, f := range sched {
		if f.Kind == kind {
			out = append(out, member(f))
		}
	}
	return out
}
