package main

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fakeEngine replaces sweep's engine calls: the engine holds the clusters
// ids, and a sweep of one of them removes removed things.
func fakeEngine(t *testing.T, ids []string, listErr error, removed int) {
	t.Helper()
	sc, sa, ci := sweepCluster, sweepAll, clusterIDs
	t.Cleanup(func() { sweepCluster, sweepAll, clusterIDs = sc, sa, ci })
	sweepCluster = func(_ context.Context, id string) (int, error) {
		for _, x := range ids {
			if x == id {
				return removed, nil
			}
		}
		return 0, nil
	}
	sweepAll = func(context.Context, bool) (int, error) { return 0, nil }
	clusterIDs = func(context.Context) ([]string, error) { return ids, listErr }
}

// TestSweepUnknownCluster: `sweep --cluster ID` with an ID that has
// nothing on the engine is bad input (it exited 0 saying "nothing
// removed"): exit 2, naming the ID and how to find the clusters there are.
func TestSweepUnknownCluster(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ids     []string
		listErr error
		want    []string
	}{
		{"others there", []string{"gq-a1", "gq-b2"}, nil, []string{"--cluster gq-typo", "the groupquake clusters on it are: gq-a1, gq-b2", "docker ps -a --filter label=io.groupquake.run"}},
		{"none there", nil, nil, []string{"--cluster gq-typo", "the engine holds no groupquake cluster at all"}},
		{"listing failed", nil, errors.New("engine gone"), []string{"--cluster gq-typo", "docker ps -a --filter label=io.groupquake.run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeEngine(t, tc.ids, tc.listErr, 3)
			code, stdout, stderr := call(t, "sweep", "--cluster", "gq-typo")
			if code != exitBadInput {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", code, exitBadInput, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
	// A known ID is removed and said so, exit 0.
	fakeEngine(t, []string{"gq-a1"}, nil, 3)
	code, stdout, stderr := call(t, "sweep", "--cluster", "gq-a1")
	if code != exitOK || !strings.Contains(stdout, "removed 3 containers, volumes and networks") {
		t.Errorf("sweep of a known cluster: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
