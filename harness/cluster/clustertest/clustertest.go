// Package clustertest starts real Kafka clusters for tests. A missing
// Docker engine fails the test with what to do; it is never a silent skip.
// Only -short skips, and says so.
package clustertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
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

// shared holds the clusters Shared started, by their configuration, until
// Main removes them.
var shared struct {
	mu       sync.Mutex
	clusters map[string]*sharedCluster
	order    []string
	// main says Main runs the tests, so that the clusters are removed.
	main bool
}

type sharedCluster struct {
	once sync.Once
	c    *cluster.Cluster
	err  error
}

// sharedKey names a configuration: two calls with equal configurations
// (Logf aside) share a cluster. fmt prints a map's keys sorted.
func sharedKey(cfg cluster.Config) string {
	cfg.Logf = nil
	return fmt.Sprintf("%+v", cfg)
}

// Shared returns a cluster of cfg that every test of this test binary
// asking for the same cfg shares: started on the first call, removed by
// Main once every test ran (a cluster start costs 5-20 s, more than most
// tests that need one). It is for tests that leave the cluster as they
// found it: their own topics, groups and links (names no other test of the
// binary uses; a harness run heals the links of its clients, m1... and p0,
// before it builds them), no node stopped, paused, isolated or upgraded. cfg.Logf
// defaults to the standard logger (a test's t.Logf ends with the test).
// The test binary's TestMain must call Main. A binary that panics or times
// out never gets back to Main, and its shared clusters stay up: the next
// cluster.Start of another process sweeps them (their process is gone), and
// the Makefile's cluster tier runs `groupquake sweep` after its tests.
func Shared(t testing.TB, cfg cluster.Config) *cluster.Cluster {
	t.Helper()
	NeedEngine(t)
	if cfg.Logf == nil {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "shared cluster: "+format+"\n", args...) }
	}
	key := sharedKey(cfg)
	shared.mu.Lock()
	if !shared.main {
		shared.mu.Unlock()
		t.Fatal("clustertest.Shared needs the test binary's TestMain to run the tests with clustertest.Main, which removes the shared clusters at the end")
	}
	if shared.clusters == nil {
		shared.clusters = map[string]*sharedCluster{}
	}
	sc, ok := shared.clusters[key]
	if !ok {
		sc = &sharedCluster{}
		shared.clusters[key] = sc
		shared.order = append(shared.order, key)
	}
	shared.mu.Unlock()
	sc.once.Do(func() { sc.c, sc.err = cluster.Start(context.Background(), cfg) })
	if sc.err != nil {
		t.Fatalf("start shared cluster: %v", sc.err)
	}
	t.Logf("on shared cluster %s (Kafka %s, %d node(s))", sc.c.RunID, cfg.Version, cfg.Nodes)
	return sc.c
}

// closeShared removes the clusters Shared started and says what it could
// not remove.
func closeShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	var errs []string
	for _, key := range shared.order {
		c := shared.clusters[key].c
		if c == nil {
			continue
		}
		ctx := context.Background()
		if err := c.Close(ctx); err != nil {
			errs = append(errs, fmt.Sprintf("close shared cluster %s: %v", c.RunID, err))
		}
		if n, err := cluster.Leftovers(ctx, c.RunID); err != nil || n != 0 {
			errs = append(errs, fmt.Sprintf("shared cluster %s left %d containers/networks behind (err %v)", c.RunID, n, err))
		}
	}
	shared.clusters, shared.order = nil, nil
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
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
// started, and removes the clusters of Shared once every test ran (a
// failure to is the binary's failure): call it from TestMain as
// os.Exit(clustertest.Main(m)).
func Main(m *testing.M) int {
	stop := cluster.CloseOnSignal()
	defer stop()
	defer RemoveBuilds()
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	if err := closeShared(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
