package bite

import (
	"fmt"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// sharePlan is the plan of a broken share kind's test: three share
// members on two partitions, all of kind (the broken one or "share"),
// joining at once, records at 40/s for 12s. Every broken share member
// shows its bug on its own records: an accept left out of its fetch comes
// back when the lock lapses, a stretched accept names records another
// holds, a record released on a first delivery comes back at a higher
// count, to a member that misreads it (with one broken member among
// correct ones, a run could hand every redelivery to the correct ones).
func sharePlan(t *testing.T, k kinds.ShareKind, kind, prefix, v string) run.Plan {
	t.Helper()
	reg := kinds.Default().WithBroken([]string{kind, "share"})
	o := run.Options{
		Kafka: v, Nodes: 1, Kinds: []string{kind, kind, kind}, Members: 3, Partitions: 2, Rate: 40, Duration: 12 * time.Second,
		Topic: fmt.Sprintf("bite-%s-%s-records", prefix, k.Name), Group: fmt.Sprintf("bite-%s-%s", prefix, k.Name),
	}
	p, err := run.NewPlan(seed, o, reg.Kinds())
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Members {
		p.Members[i].Name = fmt.Sprintf("%sm%d", prefix, i+1)
		p.Members[i].JoinAfter = 0
	}
	return p
}

// TestBrokenShareMembersAreCaught runs every broken share kind and, on the
// same plan, the correct share member, on one 1-node cluster of the
// default release: the checker that names the bug must fail for the
// broken kind and hold for the correct one, and every share checker must
// hold for the correct one.
func TestBrokenShareMembersAreCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real-cluster test not run (share groups need a real Kafka 4.2+)")
	}
	v := version.Default.String()
	h := clustertest.Shared(t, cluster.Config{Version: v, Nodes: 1})
	i := 0
	for _, k := range kinds.ShareKinds() {
		if k.Bug == "" {
			continue
		}
		i++
		prefix := fmt.Sprint("s", i)
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			reg := kinds.Default().WithBroken([]string{k.Name, "share"})
			bp, gp := sharePlan(t, k, k.Name, "b"+prefix, v), sharePlan(t, k, "share", "u"+prefix, v)
			bad, good, all, badDir, goodDir := brokenAndUnbroken(t, h, reg, bp, gp, k.Catches)
			requireCaught(t, bad, badDir, k.Catches, k.Name, k.Doc, k.Name+" ("+k.Doc+")")
			if !good.Holds || good.Skipped != "" {
				t.Errorf("%s must hold for the correct share member on the same plan: %+v %s (run directory %s)", k.Catches, good.Violations, good.Skipped, goodDir)
			}
			for _, v := range all {
				if len(v.Name) > 5 && v.Name[:5] == "Share" && (!v.Holds || v.Skipped != "") {
					t.Errorf("correct share members: %s does not hold: %+v %s (run directory %s)", v.Name, v.Violations, v.Skipped, goodDir)
				}
			}
		})
	}
}
