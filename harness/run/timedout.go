package run

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// A wait of the run that ends on its deadline, not its condition, is noted
// (the run carries on and the checkers judge what came of it). The note
// says, as a violation does, which phase timed out, its bound and how it
// was worked out, how long the wait lasted, and what it was still waiting
// for: the partitions without exactly one owner, the records not consumed,
// the members not in the group.

// timedOut is the note for a wait of phase that ended on its deadline:
// bound (worked out as why) after waited, still waiting for what.
func timedOut(phase string, bound time.Duration, why string, waited time.Duration, what string) string {
	over := ""
	if d := waited - bound; d >= time.Millisecond {
		over = fmt.Sprintf(", %s past the bound: the harness's stalls moved its deadline", d.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: timed out after %s (bound %s%s): still waiting for %s", phase, waited.Round(time.Millisecond), boundWhy(bound, why), over, what)
}

// boundWhy is bound with how it was worked out, when that says more than
// the bound itself.
func boundWhy(bound time.Duration, why string) string {
	if why == "" || why == bound.String() {
		return bound.String()
	}
	return fmt.Sprintf("%s: %s", bound, why)
}

// warmupWhy says where the warm-up's bound comes from.
func (p Plan) warmupWhy() string { return "warmup_max in the plan" }

// quiesceWhy says how the quiesce's bound was worked out: from the plan's
// timers (basePlan) when it is what they give, else as the plan's own.
func (p Plan) quiesceWhy() string {
	t := p.Timers
	if want := 2*(t.SessionTimeout+t.RebalanceTimeout) + 30*time.Second; t.SessionTimeout > 0 && p.QuiesceMax == want {
		return fmt.Sprintf("2×(session %s + rebalance %s) + 30s", t.SessionTimeout, t.RebalanceTimeout)
	}
	return "quiesce_max in the plan"
}

// badOwnership names the partitions of want that owned does not give
// exactly one owner: "t-0 has no owner, t-2 has 2 owners (m1, m3)".
func badOwnership(want []history.TP, owned map[history.TP][]string) string {
	var bad []string
	for _, tp := range want {
		switch ms := owned[tp]; len(ms) {
		case 1:
		case 0:
			bad = append(bad, tp.String()+" has no owner")
		default:
			ms = append([]string(nil), ms...)
			sort.Strings(ms)
			bad = append(bad, fmt.Sprintf("%s has %d owners (%s)", tp, len(ms), strings.Join(ms, ", ")))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return strings.Join(bad, ", ")
}

// ownersNow is which running member owns each partition, as the members
// see it.
func (r *runner) ownersNow() map[history.TP][]string {
	owned := map[history.TP][]string{}
	for _, d := range r.crew.running() {
		for t, ps := range d.m.Owned() {
			for _, p := range ps {
				tp := history.TP{Topic: t, Partition: p}
				owned[tp] = append(owned[tp], d.plan.Name)
			}
		}
	}
	return owned
}

// maxNamed is how many records or partitions a note names one by one.
const maxNamed = 8

// missingRecords names the acknowledged records no member consumed yet
// (skip also leaves out, nil for none), as ranges of offsets by partition,
// the first maxNamed ranges: "t-0 offsets 5–9, t-1 offset 3 (and 2 more
// ranges)"; "" for none.
func (l *ledger) missingRecords(skip func(history.TP, int64) bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	tps := make([]history.TP, 0, len(l.acked))
	for tp := range l.acked {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(a, b int) bool {
		if tps[a].Topic != tps[b].Topic {
			return tps[a].Topic < tps[b].Topic
		}
		return tps[a].Partition < tps[b].Partition
	})
	var ranges []string
	for _, tp := range tps {
		var offs []int64
		for off := range l.acked[tp] {
			if !l.consumed[tp][off] && (skip == nil || !skip(tp, off)) {
				offs = append(offs, off)
			}
		}
		sort.Slice(offs, func(a, b int) bool { return offs[a] < offs[b] })
		for i := 0; i < len(offs); {
			j := i
			for j+1 < len(offs) && offs[j+1] == offs[j]+1 {
				j++
			}
			if i == j {
				ranges = append(ranges, fmt.Sprintf("%s offset %d", tp, offs[i]))
			} else {
				ranges = append(ranges, fmt.Sprintf("%s offsets %d–%d", tp, offs[i], offs[j]))
			}
			i = j + 1
		}
	}
	if len(ranges) > maxNamed {
		return fmt.Sprintf("%s (and %d more ranges)", strings.Join(ranges[:maxNamed], ", "), len(ranges)-maxNamed)
	}
	return strings.Join(ranges, ", ")
}

// quiesceWaitingFor says what the quiesce still waited for when it timed
// out: the records not consumed, the partitions without exactly one owner,
// the group's quiet spell not reached.
func (r *runner) quiesceWaitingFor() string {
	var what []string
	if n := r.led.Missing(); n > 0 {
		what = append(what, fmt.Sprintf("%d of %d acknowledged records to be consumed (%s)", n, r.led.Acked(), r.led.missingRecords(nil)))
	}
	if bad := badOwnership(r.p.Check().Partitions(), r.ownersNow()); bad != "" {
		what = append(what, "every partition owned exactly once ("+bad+")")
	}
	if q := r.meter.quietFor(); q < r.quietSpell() {
		what = append(what, fmt.Sprintf("the group to be quiet for %s (2×heartbeat %s; quiet for %s)", r.quietSpell(), r.p.Timers.HeartbeatInterval, q.Round(time.Millisecond)))
	}
	if len(what) == 0 {
		return "nothing more at its end (the condition came true as the deadline passed)"
	}
	return strings.Join(what, "; ")
}

// settleWhy says how settleWait was worked out.
func (r *runner) settleWhy() string {
	w := r.p.Supervisor.MaxBackoff()
	why := ""
	if b, err := check.ConvergenceBound(r.p.Check()); err == nil {
		why = "EventuallyConverges' bound, " + b.Reason
	} else {
		t := r.p.Timers
		why = fmt.Sprintf("session %s + rebalance %s + slack %s", t.SessionTimeout, t.RebalanceTimeout, t.ConvergenceSlack)
	}
	if w > 0 {
		why += fmt.Sprintf(", + the supervisor's longest backoff %s", w)
	}
	return why
}

// settleWaitingFor says what the wait for a Stable group still waited for
// when it timed out: the partitions without exactly one owner, the quiet
// spell, the group's state as last described, the members not in it.
func (r *runner) settleWaitingFor(w groupWatch) string {
	var what []string
	if bad := badOwnership(r.p.Check().Partitions(), r.ownersNow()); bad != "" {
		what = append(what, "every partition owned exactly once ("+bad+")")
	}
	if q := r.meter.quietFor(); q < r.quietSpell() {
		what = append(what, fmt.Sprintf("the group to be quiet for %s (quiet for %s)", r.quietSpell(), q.Round(time.Millisecond)))
	}
	if w.last != "" {
		what = append(what, "a Stable group (last "+w.last+")")
	}
	if len(w.missing) > 0 {
		what = append(what, "every running member in the group (last missing: "+strings.Join(w.missing, ", ")+")")
	}
	if len(what) == 0 {
		return "a Stable group with every running member in it (the group was never described meanwhile)"
	}
	return strings.Join(what, "; ")
}

// groupWatch is the condition of a wait for a settled group (every
// partition owned once, the group quiet, described Stable with every
// running member in it), with what it saw last, for the note of a wait
// that timed out.
type groupWatch struct {
	last    string   // the group as last described when not Stable; "" when Stable, or never described
	missing []string // the running members the last Stable description lacked
}

// settled is the watch's condition; why is the describe's reason, running
// the members that must be in the group.
func (w *groupWatch) settled(ctx context.Context, r *runner, why string, running []*driver) bool {
	if !r.owned() || !r.quiet() {
		return false
	}
	d, err := r.obs.observe(ctx, why)
	switch {
	case err != nil:
		w.last = fmt.Sprintf("not described: %v", err)
		return false
	case d == nil:
		return false
	case !d.Group.Stable():
		w.last = "described " + check.DescribeUnstable(d.Group)
		return false
	}
	w.last = ""
	w.missing = missingMembers(d.Group, running, r.crew.restartingNames(), r.p.Supervisor.On())
	return len(w.missing) == 0
}
