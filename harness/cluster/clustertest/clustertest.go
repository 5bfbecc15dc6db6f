// Package clustertest starts real Kafka clusters for tests. A missing
// Docker engine fails the test with what to do; it is never a silent skip.
// Only -short skips, and says so.
package clustertest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
)

// Versions returns the Kafka versions real-cluster tests run against:
// $GROUPQUAKE_KAFKA_VERSIONS (comma-separated) or version.Pinned (the
// default and 4.1.2, the two versions whose behaviour the conformance
// expectations pin).
func Versions() []string {
	if v := os.Getenv("GROUPQUAKE_KAFKA_VERSIONS"); v != "" {
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	var out []string
	for _, v := range version.Pinned() {
		out = append(out, v.String())
	}
	return out
}

// NeedEngine fails t when no Docker engine answers, unless -short.
func NeedEngine(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: real-cluster test not run")
	}
	if _, err := cluster.PingEngine(context.Background()); err != nil {
		t.Fatalf("this test needs a Docker engine and none answers: %v\nrun `make test` (it installs and starts one) or `go run ./cmd/groupquake engine up` as root", err)
	}
}

// Start starts a cluster removed when t ends; t fails if anything of it is
// left behind.
func Start(t testing.TB, cfg cluster.Config) *cluster.Cluster {
	t.Helper()
	NeedEngine(t)
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	c, err := cluster.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := c.Close(ctx); err != nil {
			t.Errorf("close cluster %s: %v", c.RunID, err)
		}
		if n, err := cluster.Leftovers(ctx, c.RunID); err != nil || n != 0 {
			t.Errorf("cluster %s left %d containers/networks behind (err %v)", c.RunID, n, err)
		}
	})
	return c
}

// Embedded starts the embedded cluster (the reference coordinator served in
// this process: no Docker, so the unit tier runs it too), closed when t
// ends. cfg.Logf defaults to t.Logf.
func Embedded(t testing.TB, cfg cluster.EmbeddedConfig) *cluster.Embedded {
	t.Helper()
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	e, err := cluster.StartEmbedded(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start the embedded cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(context.Background()); err != nil {
			t.Errorf("close the embedded cluster: %v", err)
		}
	})
	return e
}

// CreateTopic creates topic with partitions, replicated as far as the
// cluster allows.
func CreateTopic(t testing.TB, c cluster.Handle, topic string, partitions int32) {
	t.Helper()
	adm, err := c.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	rf := int16(min(len(c.Bootstrap()), 3))
	resp, err := adm.CreateTopic(context.Background(), partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// Main wraps testing.M so that Ctrl-C removes the clusters a test binary
// started: call it from TestMain as os.Exit(clustertest.Main(m)).
func Main(m *testing.M) int {
	stop := cluster.CloseOnSignal()
	defer stop()
	defer RemoveBuilds()
	return m.Run()
}
