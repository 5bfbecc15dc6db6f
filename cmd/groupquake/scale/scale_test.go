package scale_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients/light"
	"github.com/groupquake/groupquake/cmd/groupquake/scale"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
)

// embedded is a quiet embedded cluster: benchmarks print every log line.
func embedded(t testing.TB) *cluster.Embedded {
	t.Helper()
	return clustertest.Embedded(t, cluster.EmbeddedConfig{Logf: func(string, ...any) {}})
}

// options are small timers for the embedded cluster (its consumer
// heartbeat interval is 500ms, its minimum classic session 1s).
func options(p scale.Protocol, members int, partitions int32) scale.Options {
	return scale.Options{
		Protocol: p, Members: members, Partitions: partitions,
		Group: fmt.Sprintf("scale-%s-%d", p, members), Topic: fmt.Sprintf("scale-%s-%d", p, members),
		Light: light.Config{
			SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second,
			HeartbeatInterval: 300 * time.Millisecond, CommitInterval: time.Second, Seed: 1,
		},
		Restart:       true,
		StableTimeout: 2 * time.Minute,
	}
}

// TestLightMembersStable puts 50 members of each protocol on the embedded
// cluster through a join wave, a leave and a coordinator restart: each
// phase must end in a stable group whose describe shows every partition
// assigned exactly once (Run fails otherwise), and no partition may ever
// have had two owners by the members' own account.
func TestLightMembersStable(t *testing.T) {
	for _, p := range []scale.Protocol{scale.Classic, scale.Consumer} {
		t.Run(string(p), func(t *testing.T) {
			e := embedded(t)
			o := options(p, 50, 64)
			o.Logf = t.Logf
			rep, err := scale.Run(context.Background(), e, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Phases) != 3 {
				t.Fatalf("phases %+v: want join wave, one leaves, coordinator restart", rep.Phases)
			}
			for _, ph := range rep.Phases {
				if ph.Epoch <= 0 {
					t.Errorf("%s: settled at epoch %d", ph.Name, ph.Epoch)
				}
				if ph.Answered == 0 {
					t.Errorf("%s: the coordinator answered no request", ph.Name)
				}
			}
			if lv := rep.Phases[1]; lv.Members != 49 || lv.Epoch <= rep.Phases[0].Epoch {
				t.Errorf("after the leave: %d members at epoch %d, join wave at %d: want 49 at a later epoch", lv.Members, lv.Epoch, rep.Phases[0].Epoch)
			}
			if rep.Overlaps != 0 {
				t.Errorf("%d times a partition was taken while another member held it", rep.Overlaps)
			}
			if rep.RSS == 0 {
				t.Error("no resident set size measured")
			}
		})
	}
}

// TestRunRejectsBadOptions: a run that cannot mean anything fails before
// it touches the cluster.
func TestRunRejectsBadOptions(t *testing.T) {
	for _, o := range []scale.Options{
		{Protocol: scale.Classic, Members: 1, Partitions: 3},
		{Protocol: scale.Consumer, Members: 10, Partitions: 0},
		{Protocol: "eager", Members: 10, Partitions: 3},
	} {
		if _, err := scale.Run(context.Background(), nil, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}
