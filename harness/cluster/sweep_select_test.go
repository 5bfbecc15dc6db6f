package cluster_test

import (
	"testing"

	"github.com/groupquake/groupquake/harness/cluster"
)

// TestSweepSelection: what each sweep removes, by the labels a cluster's
// containers, volumes and networks carry. `groupquake sweep --cluster ID`
// removes that one cluster, kept or live, and nothing of another (the
// --keep hint said `groupquake sweep --all`, which removes every live
// groupquake cluster on the engine, other users' runs included); the sweep
// of crashed runs' leftovers, which every cluster start does, leaves a
// kept cluster (its process has ended, so it was removed by the next run
// started on the host).
func TestSweepSelection(t *testing.T) {
	alive := map[int]bool{100: true}
	labels := func(run, host, pid string, keep bool) map[string]string {
		l := map[string]string{cluster.LabelRun: run, cluster.LabelHost: host, cluster.LabelPID: pid}
		if keep {
			l[cluster.LabelKeep] = "true"
		}
		return l
	}
	live := labels("live1", "h", "100", false)         // a run going on now
	crashed := labels("crash1", "h", "200", false)     // its process is gone
	kept := labels("kept1", "h", "300", true)          // run --keep, its process ended
	otherHost := labels("far1", "other", "200", false) // another host's, on a shared engine
	foreign := map[string]string{"app": "x"}           // not groupquake's
	for _, tc := range []struct {
		name string
		sel  cluster.SweepSelection
		want map[string]bool
	}{
		{"crashed runs", cluster.SweepSelection{}, map[string]bool{"crashed": true}},
		{"--cluster kept1", cluster.SweepSelection{Cluster: "kept1"}, map[string]bool{"kept": true}},
		{"--cluster live1", cluster.SweepSelection{Cluster: "live1"}, map[string]bool{"live": true}},
		{"--cluster nosuch", cluster.SweepSelection{Cluster: "nosuch"}, map[string]bool{}},
		{"--all", cluster.SweepSelection{All: true}, map[string]bool{"live": true, "crashed": true, "kept": true, "otherHost": true}},
	} {
		tc.sel.Host = "h"
		tc.sel.Alive = func(pid int) bool { return alive[pid] }
		for name, l := range map[string]map[string]string{"live": live, "crashed": crashed, "kept": kept, "otherHost": otherHost, "foreign": foreign} {
			if got := tc.sel.Selects(l); got != tc.want[name] {
				t.Errorf("%s: selects %s = %v, want %v", tc.name, name, got, tc.want[name])
			}
		}
	}
}
