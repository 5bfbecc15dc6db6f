package cluster_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/moby/moby/client"
)

// countLeftovers counts every groupquake container and network.
func countLeftovers(t *testing.T) int {
	t.Helper()
	n, err := cluster.Leftovers(context.Background(), "")
	if err != nil {
		t.Fatalf("count leftovers: %v", err)
	}
	return n
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one saying %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

func TestUnknownVersionNamesServedVersions(t *testing.T) {
	_, err := cluster.Start(context.Background(), cluster.Config{Version: "4.9.1"})
	wantErr(t, err, `unknown Kafka version "4.9.1"`, "4.0.0", "4.4.0")
	_, err = cluster.EnsureImage(context.Background(), "3.9.0", cluster.ImageOptions{})
	wantErr(t, err, `unknown Kafka version "3.9.0"`, "served versions are")
}

func TestBadConfigIsRefused(t *testing.T) {
	for name, cfg := range map[string]cluster.Config{
		"two nodes":       {Nodes: 2},
		"two controllers": {Nodes: 3, Controllers: 2},
		"tiny heap":       {HeapMB: 64},
		"port range":      {BasePort: 70000},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := cluster.Start(context.Background(), cfg)
			if err == nil {
				t.Fatalf("config %+v was accepted", cfg)
			}
		})
	}
}

func TestDockerUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	_, err := cluster.Start(context.Background(), cluster.Config{})
	if !errors.Is(err, cluster.ErrNoEngine) {
		t.Fatalf("error %v is not ErrNoEngine", err)
	}
	wantErr(t, err, "no-docker.sock", "groupquake engine up")
	// With DOCKER_HOST naming another engine, groupquake must not start a local one.
	_, err = cluster.EnsureEngine(context.Background(), cluster.DefaultEngineOptions(nil))
	wantErr(t, err, "DOCKER_HOST", "does not start a local engine")
}

func TestPortInUse(t *testing.T) {
	needEngine(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	before := countLeftovers(t)
	_, err = cluster.Start(context.Background(), cluster.Config{BasePort: port})
	if !errors.Is(err, cluster.ErrPortInUse) {
		t.Fatalf("error %v is not ErrPortInUse", err)
	}
	wantErr(t, err, "127.0.0.1:"+strconv.Itoa(port), "--base-port")
	if after := countLeftovers(t); after != before {
		t.Errorf("a refused start left %d containers/networks behind", after-before)
	}
}

func TestImageBuildWithoutMaven(t *testing.T) {
	needEngine(t)
	cache := t.TempDir()
	t.Setenv("GROUPQUAKE_CACHE", cache)
	// Offline with an empty local repository: what a build sees when Maven
	// Central cannot be reached. A served version with no image here proves
	// no image is left half-made; when every served version has one (a
	// machine that built them all), a forced rebuild of one proves the
	// failed build leaves the cached image exactly as it was.
	cached, err := cluster.CachedImages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	version, rebuild := "", false
	for _, v := range cluster.KafkaVersions {
		if len(cached[v]) == 0 {
			version = v
			break
		}
	}
	if version == "" {
		version, rebuild = cluster.KafkaVersions[0], true
	}
	before := imageID(t, cluster.BuiltImageRef(version))
	_, err = cluster.EnsureImage(context.Background(), version, cluster.ImageOptions{
		Source:    cluster.SourceBuild,
		Rebuild:   rebuild,
		MavenArgs: []string{"-o", "-Dmaven.repo.local=" + filepath.Join(cache, "empty-m2")},
	})
	wantErr(t, err, "Kafka "+version, "Maven")
	if after := imageID(t, cluster.BuiltImageRef(version)); after != before {
		t.Errorf("a failed build of %s changed its image from %q to %q (rebuild %v)", version, before, after, rebuild)
	}
	if _, err := os.Stat(filepath.Join(cache, "kafka", version, "libs")); !os.IsNotExist(err) {
		t.Errorf("a failed build left a jar directory (stat: %v)", err)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "kafka", version, "resolve-*")); len(left) > 0 {
		t.Errorf("a failed build left work directories %v", left)
	}
}

// imageID is the engine's id of ref, or "" when the engine has no such image.
func imageID(t *testing.T, ref string) string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	img, err := cli.ImageInspect(context.Background(), ref)
	if err != nil {
		return ""
	}
	return img.ID
}

func TestExternalClusterThatDoesNotAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = cluster.Connect(context.Background(), cluster.ExternalConfig{Bootstrap: []string{addr}, ConnectTimeout: 3 * time.Second})
	wantErr(t, err, addr, "does not answer")
	_, err = cluster.Connect(context.Background(), cluster.ExternalConfig{Bootstrap: []string{"no-port"}})
	wantErr(t, err, `"no-port" is not host:port`)
	_, err = cluster.Connect(context.Background(), cluster.ExternalConfig{})
	wantErr(t, err, "--bootstrap")
}

// TestExternalCluster treats a container cluster as an external one: links
// work, node control without a template is refused, and a template that
// drives the container with the docker CLI stops and starts the node.
func TestExternalCluster(t *testing.T) {
	needEngine(t)
	c := startCluster(t, cluster.Config{Nodes: 1})
	ctx := context.Background()
	e, err := cluster.Connect(ctx, cluster.ExternalConfig{Bootstrap: c.Bootstrap(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	l, err := e.Links("ext-client")
	if err != nil {
		t.Fatal(err)
	}
	if err := pingThrough(l, 30*time.Second); err != nil {
		t.Fatalf("client through links of an external cluster: %v", err)
	}
	err = e.KillNode(ctx, 1)
	if !errors.Is(err, cluster.ErrNoNodeControl) {
		t.Fatalf("kill without a template: %v, want ErrNoNodeControl", err)
	}
	wantErr(t, err, "--node-control")

	n, _ := c.Node(1)
	tmpl := `docker {{if eq .Action "stop"}}stop{{else}}start{{end}} ` + n.Container
	e2, err := cluster.Connect(ctx, cluster.ExternalConfig{Bootstrap: c.Bootstrap(), NodeControl: tmpl, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close(ctx)
	if err := e2.StopNode(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := cluster.ProbeBroker(ctx, n.Addr()); err == nil {
		t.Errorf("broker answers after the template stopped it")
	}
	if err := e2.StartNode(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := cluster.ProbeBroker(ctx, n.Addr()); err != nil {
		t.Errorf("broker does not answer after the template started it: %v", err)
	}
}
