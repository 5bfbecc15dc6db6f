package membercheck

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/process"
	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// contract runs the member contract of the implementation in protocol p: a
// churn run (crashes, restarts, leaves, stalls, freezes) on the check's
// cluster of two members of the implementation beside one of groupquake's,
// judged by every checker; a checker that fails or skips is a finding.
func contract(ctx context.Context, cfg Config, p clients.Protocol) (run.Result, []Finding, error) {
	kind := "checked-" + string(p)
	ours := "classic"
	if p == clients.Consumer {
		ours = "consumer"
	}
	// The implementation is a user kind of the plan, so that the run's
	// rerun command defines it again (--process-kind). On the embedded
	// cluster each contract run starts one of its own, as its rerun command
	// does; on a real one they share the check's cluster, each with a topic
	// and group of its own.
	_, embedded := cfg.Cluster.(*cluster.Embedded)
	var h cluster.Handle
	if !embedded {
		h = cfg.Cluster
	}
	o := run.Options{
		Scenario: run.ScenarioChurn, Embedded: embedded, Kafka: cfg.Kafka, Kinds: []string{kind, ours, kind}, Partitions: 4,
		Duration: cfg.RunDuration, Faults: []faults.Kind{faults.MemberCrash, faults.MemberRestart, faults.MemberLeave, faults.MemberStall},
		ProcessKinds: map[string]kinds.UserKind{kind: {Protocol: string(p), Command: append([]string{cfg.Command.Path}, cfg.Command.Args...)}},
	}
	if !embedded {
		o.Nodes = 1
		o.Topic, o.Group = fmt.Sprintf("member-check-contract-%s-%d", p, cfg.Seed), fmt.Sprintf("member-check-contract-%s-%d", p, cfg.Seed)
	}
	reg := kinds.Default().WithUserKinds(o.ProcessKinds)
	plan, err := run.NewPlan(cfg.Seed, o, reg.Kinds())
	if err != nil {
		return run.Result{}, nil, fmt.Errorf("member-check: planning the contract run: %w", err)
	}
	dir := filepath.Join(cfg.Dir, "contract-"+string(p))
	cfg.Logf("member-check %s: contract run (%s of churn, seed %d) in %s", p, cfg.RunDuration, cfg.Seed, dir)
	rctx, cancel := context.WithTimeout(ctx, cfg.RunDuration+5*time.Minute)
	defer cancel()
	res, err := run.Run(rctx, run.Config{Plan: plan, Dir: dir, Registry: reg, Cluster: h, Logf: cfg.Logf})
	if err != nil {
		return res, []Finding{{Protocol: p, Step: "contract run", Rule: ruleContract, Text: fmt.Sprintf("the run in %s could not be carried out: %v", dir, err)}}, nil
	}
	var fs []Finding
	for _, v := range res.Report.Verdicts {
		switch {
		case v.Skipped != "":
			fs = append(fs, Finding{Protocol: p, Step: "contract run", Rule: process.Rule(v.Name), Text: fmt.Sprintf("skipped (%s): the implementation's run must be judged by every checker; see %s", v.Skipped, dir)})
		case !v.Holds:
			text := fmt.Sprintf("%d violations; see %s/report.html", len(v.Violations), dir)
			if len(v.Violations) > 0 {
				text = fmt.Sprintf("%s (first: %s)", text, v.Violations[0].Message)
			}
			fs = append(fs, Finding{Protocol: p, Step: "contract run", Rule: process.Rule(v.Name), Text: text})
		default:
			fs = append(fs, Finding{Protocol: p, Step: "contract run", Rule: process.Rule(v.Name), OK: true, Text: "holds"})
		}
	}
	return res, fs, nil
}
