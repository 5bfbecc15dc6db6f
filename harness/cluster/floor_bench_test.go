package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/groupquake/groupquake/coordinator/version"
)

// floorTimes are the moments of a bare start, from the first Docker call:
// every container created and started (Docker), the storage formatted
// (kafka-storage's "Formatting" line: a JVM started and formatted), the
// broker's JVM logging its first line, and the broker logging that it
// started. With several nodes each is the latest node's.
type floorTimes struct {
	docker, formatted, brokerJVM, started time.Duration
}

// BenchmarkClusterStartFloor is the floor under BenchmarkClusterStartWarm:
// the same image, environment (Cluster.nodeEnv: broker settings, heap,
// listeners, voters), bridge network with aliases and published loopback
// ports, but containers made with plain Docker calls and timed only until
// each node logs "Kafka Server started" — the JVM, `kafka-storage format`
// and the broker's start, which any harness pays. No volume, no
// testcontainers, no readiness check (metadata, a commit read back), no
// toxiproxy. Each iteration then starts a cluster of the same size with
// Start, as BenchmarkClusterStartWarm does, so that the two are measured
// under the same load of the machine: s/harness-overhead is Start's time to
// ready less the floor's time to started. Run it with
//
//	go test -run '^$' -bench ClusterStartFloor -benchtime 3x ./harness/cluster/
func BenchmarkClusterStartFloor(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: real-cluster benchmark not run")
	}
	ctx := context.Background()
	if _, err := PingEngine(ctx); err != nil {
		b.Fatalf("this benchmark needs a Docker engine and none answers: %v\nrun `go run ./cmd/groupquake engine up` as root", err)
	}
	img, err := EnsureImage(ctx, DefaultKafkaVersion, ImageOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes-%d", nodes), func(b *testing.B) {
			var sum floorTimes
			var ready time.Duration
			for range b.N {
				t, err := startFloor(ctx, img, nodes)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				c, err := Start(ctx, Config{Nodes: nodes})
				if err != nil {
					b.Fatal(err)
				}
				r := time.Since(start)
				if err := c.Close(ctx); err != nil {
					b.Fatal(err)
				}
				b.Logf("floor: docker %s, formatted %s, broker JVM %s, started %s; Start: ready %s",
					t.docker.Round(time.Millisecond), t.formatted.Round(time.Millisecond), t.brokerJVM.Round(time.Millisecond), t.started.Round(time.Millisecond), r.Round(time.Millisecond))
				sum.docker += t.docker
				sum.formatted += t.formatted
				sum.brokerJVM += t.brokerJVM
				sum.started += t.started
				ready += r
			}
			n := float64(b.N)
			b.ReportMetric(sum.docker.Seconds()/n, "s/docker")
			b.ReportMetric(sum.formatted.Seconds()/n, "s/formatted")
			b.ReportMetric(sum.brokerJVM.Seconds()/n, "s/broker-jvm")
			b.ReportMetric(sum.started.Seconds()/n, "s/started")
			b.ReportMetric(ready.Seconds()/n, "s/ready")
			b.ReportMetric((ready-sum.started).Seconds()/n, "s/harness-overhead")
		})
	}
}

// startFloor starts nodes combined nodes of img bare (see
// BenchmarkClusterStartFloor), times them, and removes everything it made.
// Its containers and network carry the cluster labels, so a crashed
// benchmark's leftovers are swept like a crashed run's.
func startFloor(ctx context.Context, img Image, nodes int) (_ floorTimes, err error) {
	cfg := Config{Version: img.Version, Nodes: nodes}
	if err := cfg.normalize(); err != nil {
		return floorTimes{}, err
	}
	ports, err := pickPorts(0, nodes)
	if err != nil {
		return floorTimes{}, err
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return floorTimes{}, err
	}
	defer cli.Close()
	runID := newRunID()
	host, _ := os.Hostname()
	labels := map[string]string{LabelRun: runID, LabelPID: strconv.Itoa(os.Getpid()), LabelHost: host}
	c := &Cluster{cfg: cfg, RunID: runID, Image: img, clusterID: newClusterID(), labels: labels,
		settings: FastGroupSettings(version.MustParse(cfg.Version).Profile(), nodes)}
	c.nodes = layout(cfg, runID, ports)

	netName := "gq-" + runID + "-floor"
	var made []string
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for _, id := range made {
			if _, rerr := cli.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil && err == nil {
				err = fmt.Errorf("remove container %s: %v", id, rerr)
			}
		}
		if _, rerr := cli.NetworkRemove(rctx, netName, client.NetworkRemoveOptions{}); rerr != nil && err == nil && !strings.Contains(rerr.Error(), "not found") {
			err = fmt.Errorf("remove network %s: %v", netName, rerr)
		}
	}()

	t0 := time.Now()
	if _, err := cli.NetworkCreate(ctx, netName, client.NetworkCreateOptions{Driver: "bridge", Labels: labels}); err != nil {
		return floorTimes{}, fmt.Errorf("create network: %v", err)
	}
	for _, n := range c.nodes {
		var env []string
		for k, v := range c.nodeEnv(n) {
			env = append(env, k+"="+v)
		}
		sort.Strings(env)
		nl := map[string]string{LabelNode: strconv.Itoa(int(n.ID))}
		for k, v := range labels {
			nl[k] = v
		}
		port := mobynet.MustParsePort(strconv.Itoa(n.Port) + "/tcp")
		res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name:       n.Container,
			Config:     &container.Config{Image: img.Ref, Env: env, Labels: nl, ExposedPorts: mobynet.PortSet{port: {}}},
			HostConfig: &container.HostConfig{PortBindings: mobynet.PortMap{port: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(n.Port)}}}},
			NetworkingConfig: &mobynet.NetworkingConfig{EndpointsConfig: map[string]*mobynet.EndpointSettings{
				netName: {Aliases: []string{n.Alias}},
			}},
		})
		if err != nil {
			return floorTimes{}, fmt.Errorf("create node %d: %v", n.ID, err)
		}
		made = append(made, res.ID)
		if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			return floorTimes{}, fmt.Errorf("start node %d: %v", n.ID, err)
		}
	}
	var out floorTimes
	out.docker = time.Since(t0)
	wctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	type result struct {
		t   floorTimes
		err error
	}
	results := make(chan result, len(made))
	for i, id := range made {
		go func() {
			t, err := watchStart(wctx, cli, id, t0)
			if err != nil {
				err = fmt.Errorf("node %d: %w", c.nodes[i].ID, err)
			}
			results <- result{t, err}
		}()
	}
	for range made {
		r := <-results
		if r.err != nil {
			return floorTimes{}, r.err
		}
		out.formatted = max(out.formatted, r.t.formatted)
		out.brokerJVM = max(out.brokerJVM, r.t.brokerJVM)
		out.started = max(out.started, r.t.started)
	}
	return out, nil
}

// watchStart follows container id's log, with Docker's timestamps, until
// startedLine, and returns when (since t0) it logged its storage format,
// the broker's first log4j line and startedLine.
func watchStart(ctx context.Context, cli *client.Client, id string, t0 time.Time) (floorTimes, error) {
	rc, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true})
	if err != nil {
		return floorTimes{}, err
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, rc)
		pw.CloseWithError(err)
	}()
	var t floorTimes
	var tail []string
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		stamp, line, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			continue
		}
		since := at.Sub(t0)
		tail = append(tail, line)
		if len(tail) > 10 {
			tail = tail[1:]
		}
		switch {
		case t.formatted == 0 && strings.Contains(line, "Formatting"):
			t.formatted = since
		case t.formatted != 0 && t.brokerJVM == 0 && strings.HasPrefix(line, "[20"):
			t.brokerJVM = since
		case strings.Contains(line, startedLine):
			t.started = since
			if t.formatted == 0 || t.brokerJVM == 0 {
				return t, fmt.Errorf("logged %q without a format line before it; last lines:\n%s", startedLine, strings.Join(tail, "\n"))
			}
			return t, nil
		}
	}
	return t, fmt.Errorf("the log ended (%v) before %q; last lines:\n%s", ctx.Err(), startedLine, strings.Join(tail, "\n"))
}
