package scale

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
)

type fakeCluster struct{ c *kfake.Cluster }

func (f fakeCluster) Bootstrap() []string { return f.c.ListenAddrs() }
func (f fakeCluster) Admin() (*kadm.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.c.ListenAddrs()...))
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// TestRunShareOnAFake runs the share scale measurement on an in-process
// fake cluster (kfake): 30 lightweight share members on 3 partitions join,
// the group becomes stable with every partition shared by 10 members, and
// the backlog is drained, each record accepted once, none redelivered.
func TestRunShareOnAFake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "200"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := RunShare(ctx, fakeCluster{c}, ShareOptions{Members: 30, Partitions: 3, Records: 3000, Group: "g", Topic: "t",
		MaxWait: 50 * time.Millisecond, StableTimeout: 30 * time.Second, DrainTimeout: 30 * time.Second, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if rep.MinSharing != 10 || rep.MaxSharing != 10 {
		t.Errorf("partitions shared by %d–%d members, want 10 each", rep.MinSharing, rep.MaxSharing)
	}
	if rep.Drained != 3000 || rep.Deliveries != 3000 || rep.Redeliveries != 0 || rep.RecordsPerSecond <= 0 {
		t.Errorf("report %+v: want the 3000 records drained, each delivered once", rep)
	}
	if rep.LeaveToStable <= 0 || rep.RestartToStable != 0 {
		t.Errorf("one leaves: %s, restart %s: want the leave measured and no restart (not asked for)", rep.LeaveToStable, rep.RestartToStable)
	}
}

// TestShareErrorsSummary: a share scale run that gave up says the members'
// errors by count, most first, so a group held back by, say,
// GROUP_MAX_SIZE_REACHED says so.
func TestShareErrorsSummary(t *testing.T) {
	c := &shareCounters{errs: map[string]int64{}}
	if got := c.summary(); got != "none" {
		t.Errorf("no errors: %q", got)
	}
	for range 3 {
		c.err("heartbeat GROUP_MAX_SIZE_REACHED")
	}
	c.err("fetch transport")
	c.err("heartbeat transport")
	want := "heartbeat GROUP_MAX_SIZE_REACHED ×3, fetch transport ×1, heartbeat transport ×1"
	if got := c.summary(); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

// TestShareVersions: the light share members send ShareGroupHeartbeat and
// ShareFetch at a version every release with production share groups
// serves (v1 or later); v0 (early access) makes a broker close the
// connection.
func TestShareVersions(t *testing.T) {
	for _, api := range []int16{version.APIShareGroupHeartbeat, version.APIShareFetch} {
		if got := shareVersion(api); got < 1 {
			t.Errorf("api %d: version %d, want 1 or later", api, got)
		}
		for _, r := range version.ShareServed() {
			if rg := r.Profile().ShareAPIVersions()[api]; shareVersion(api) < rg.Min || shareVersion(api) > rg.Max {
				t.Errorf("api %d: Kafka %s serves %d–%d, not %d", api, r, rg.Min, rg.Max, shareVersion(api))
			}
		}
	}
}

// TestRunShareEmbedded runs the share scale measurement on the embedded
// cluster (the reference coordinator and its share-partition leader in
// this process, no Docker): 50 lightweight share members on 2 partitions
// join, the coordinator describes the group Stable with all 50 at its
// epoch, both partitions are assigned, to at most ceil(50/2) members each
// (the share assignor's bound), and the backlog is drained, every record
// accepted. Then one member leaves and the group is stable with the 49
// others, and the embedded cluster's node (the coordinator) restarts and
// the group is stable again, every member answered after the stop.
func TestRunShareEmbedded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	rep, err := RunShare(ctx, e, ShareOptions{Members: 50, Partitions: 2, Records: 2000, Group: "g", Topic: "t",
		MaxWait: 100 * time.Millisecond, StableTimeout: time.Minute, DrainTimeout: time.Minute, Restart: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Members != 50 || rep.GroupEpoch < 1 || rep.ToStable <= 0 {
		t.Errorf("members %d, group epoch %d, to stable %s: want 50 members stable at a positive epoch", rep.Members, rep.GroupEpoch, rep.ToStable)
	}
	if rep.MinSharing < 1 || rep.MaxSharing > 25 {
		t.Errorf("partitions shared by %d–%d members: want every partition assigned, to at most ceil(50/2) members", rep.MinSharing, rep.MaxSharing)
	}
	if rep.Drained != 2000 || rep.Deliveries < 2000 || rep.Redeliveries > rep.Deliveries-2000 || rep.RecordsPerSecond <= 0 {
		t.Errorf("report %+v: want the 2000 records drained, each delivered at least once", rep)
	}
	if rep.LeaveToStable <= 0 || rep.LeaveEpoch <= rep.GroupEpoch {
		t.Errorf("one leaves: stable after %s at epoch %d (joined at %d): want a later epoch", rep.LeaveToStable, rep.LeaveEpoch, rep.GroupEpoch)
	}
	if rep.RestartToStable <= 0 || rep.RestartEpoch < rep.LeaveEpoch || !strings.Contains(rep.RestartNote, "node 1 (the coordinator) stopped") {
		t.Errorf("coordinator restart: stable after %s at epoch %d (%q): want it measured", rep.RestartToStable, rep.RestartEpoch, rep.RestartNote)
	}
}
