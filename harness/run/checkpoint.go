package run

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// checkpoint takes a snapshot of the group in the middle of the workload,
// as the final observation does at its end: every running member commits
// what it consumed and holds further commits, the group is left to settle
// (every partition owned once, no member changing, the broker describing it
// Stable with every running member in it), then the description, the committed offsets and the group's
// __consumer_offsets records are read together, and the members commit
// again. RecoveredStateMatchesLog replays each checkpoint's records and
// compares them with what was described beside them, so a protocol
// migration is judged after each of its steps, not only at the end.
//
// A group that does not settle within the bound gets no checkpoint; the
// returned text says so, and the run goes on.
func (r *runner) checkpoint(ctx context.Context, label string) (string, error) {
	running := r.crew.running()
	defer func() {
		for _, d := range running {
			d.release()
		}
	}()
	for _, d := range running {
		select {
		case <-d.flushAndHold():
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(30 * time.Second):
			return fmt.Sprintf("no checkpoint %s: member %s did not make its commit within 30s (the bound of a member's commit before a checkpoint)", label, d.plan.Name), nil
		}
	}
	// Node faults beside the steps may keep the group from settling for
	// as long as they keep newcomers out (seen on 4.1.2: a checkpoint
	// during a node kill found no settled group within 21s).
	t := r.p.Timers
	bound := t.SessionTimeout + t.RebalanceTimeout + r.p.nodeFaultsWait()
	why := r.p.groupWaitWhy()
	// Every running member in it: a member still out (back from an outage,
	// or restarting under its supervisor) joins later and moves the group
	// under the snapshot.
	var w groupWatch
	settled, waited := r.waitFor(ctx, nil, "checkpoint "+label, bound, func() bool {
		return w.settled(ctx, r, "checkpoint "+label+": is the group stable?", running)
	})
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if !settled {
		return "no checkpoint " + label + ": " + timedOut("the wait for a settled group", bound, why, waited, r.settleWaitingFor(w)), nil
	}
	snap, _, errs := r.obs.snapshot(ctx, label, r.rec.Len())
	if len(errs) > 0 {
		return fmt.Sprintf("no checkpoint %s: %v", label, errs[0]), nil
	}
	r.checkpointsMu.Lock()
	r.checkpoints = append(r.checkpoints, snap)
	r.checkpointsMu.Unlock()
	what := "no group described"
	if g := snap.Group; g != nil {
		what = fmt.Sprintf("a %s group, %d members", g.Protocol, len(g.Members))
	}
	return fmt.Sprintf("checkpoint %s: %s, %d __consumer_offsets records", label, what, len(snap.Records)), nil
}

// takenCheckpoints returns the checkpoints taken so far, in order.
func (r *runner) takenCheckpoints() []history.Snapshot {
	r.checkpointsMu.Lock()
	defer r.checkpointsMu.Unlock()
	return slices.Clone(r.checkpoints)
}
