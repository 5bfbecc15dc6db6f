package run

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/history"
)

// nemesis applies the plan's fault schedule and records every start and stop
// as a call of process "nemesis" (Jepsen's nemesis is a process of the same
// history). Whatever it started and did not stop, heal stops, so every run
// heals before its final observations.
type nemesis struct {
	schedule []faults.Fault
	target   faults.Target
	links    faults.LinkOf
	rec      *history.Recorder
	logf     func(string, ...any)
	active   map[int]bool // schedule index → started (or maybe started) and not healed
}

func faultValue(f faults.Fault) history.Fault {
	v := history.Fault{What: string(f.Kind), Params: map[string]string{}}
	switch {
	case f.IsLinkFault() && f.Node == faults.AllNodes:
		v.Target = []string{f.Client + "->all-brokers"}
	case f.IsLinkFault():
		v.Target = []string{f.Client + "->node-" + strconv.Itoa(int(f.Node))}
	default:
		v.Target = []string{"node-" + strconv.Itoa(int(f.Node))}
	}
	if f.Latency > 0 {
		v.Params["latency"] = f.Latency.String()
		v.Params["jitter"] = f.Jitter.String()
	}
	if f.KBPerSec > 0 {
		v.Params["kb_per_sec"] = strconv.FormatInt(f.KBPerSec, 10)
	}
	if f.For > 0 {
		v.Params["for"] = f.For.String()
	}
	if len(v.Params) == 0 {
		v.Params = nil
	}
	return v
}

type nemesisStep struct {
	at    time.Duration
	stop  bool
	fault int
}

// run executes the schedule from start (the beginning of the workload
// phase) until every step is done or ctx ends.
func (n *nemesis) run(ctx context.Context, start time.Time) error {
	var steps []nemesisStep
	for i, f := range n.schedule {
		steps = append(steps, nemesisStep{f.At, false, i})
		if f.For > 0 {
			steps = append(steps, nemesisStep{f.At + f.For, true, i})
		}
	}
	slices.SortStableFunc(steps, func(a, b nemesisStep) int { return int(a.at - b.at) })
	for _, s := range steps {
		if d := time.Until(start.Add(s.at)); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		var err error
		if s.stop {
			err = n.stop(ctx, s.fault, "scheduled end after "+n.schedule[s.fault].For.String())
		} else {
			err = n.start(ctx, s.fault)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (n *nemesis) start(ctx context.Context, i int) error {
	f := n.schedule[i]
	v := faultValue(f)
	if _, err := n.rec.Invoke("nemesis", history.FFaultStart, v, "scheduled at "+f.At.String()); err != nil {
		return err
	}
	n.active[i] = true // even a failed start is healed: it may have half-happened
	actx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	err := faults.Apply(actx, f, n.target, n.links)
	cancel()
	if err != nil {
		v.Error = err.Error()
		n.logf("nemesis: %s did not apply: %v", f, err)
		_, rerr := n.rec.Info("nemesis", history.FFaultStart, v, "applying the fault failed; it may have partly taken effect")
		return rerr
	}
	n.logf("nemesis: %s", f)
	_, err = n.rec.OK("nemesis", v, "")
	return err
}

func (n *nemesis) stop(ctx context.Context, i int, why string) error {
	if !n.active[i] {
		return nil
	}
	f := n.schedule[i]
	v := faultValue(f)
	if _, err := n.rec.Invoke("nemesis", history.FFaultStop, v, why); err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	err := faults.Heal(actx, f, n.target, n.links)
	cancel()
	if err != nil {
		v.Error = err.Error()
		_, rerr := n.rec.Info("nemesis", history.FFaultStop, v, "healing failed: the cluster may still be hurt")
		if rerr != nil {
			return rerr
		}
		return fmt.Errorf("healing %s: %w", f, err)
	}
	delete(n.active, i)
	_, err = n.rec.OK("nemesis", v, "")
	return err
}

// heal stops every fault still active, in the order they started. It runs
// even after the run's context ended, so a cancelled run leaves no fault
// behind.
func (n *nemesis) heal(ctx context.Context) error {
	var first error
	for i := range n.schedule {
		if err := n.stop(ctx, i, "final heal"); err != nil && first == nil {
			first = err
		}
	}
	return first
}
