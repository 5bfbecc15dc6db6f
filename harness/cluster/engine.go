package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/groupquake/groupquake/internal/interrupt"
)

func init() {
	// Network safety, not preference. The project's machines carry /.dockerenv, so
	// testcontainers believes it runs inside a container and publishes mapped
	// ports on the default gateway; forcing the host override keeps every
	// connection on loopback. No image can be pulled for the Ryuk reaper, so
	// it is disabled and the harness removes what it starts itself (labels,
	// Close, the signal handler and the sweep at start).
	// See shared notes, libraries-and-runtime §0.
	os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
}

// EngineOptions say how far EnsureEngine may go to get a Docker engine.
type EngineOptions struct {
	// Install allows installing Debian's docker.io with apt-get when no
	// dockerd binary exists. It needs root.
	Install bool
	// Start allows starting dockerd in the background when an engine is
	// installed but does not answer. It needs root.
	Start bool
	// Wait bounds how long to wait for a started engine to answer.
	Wait time.Duration
	// Logf reports each step; nil is silent.
	Logf func(format string, args ...any)
}

// DefaultEngineOptions install and start an engine as the project's own
// scripts do on a fresh machine.
func DefaultEngineOptions(logf func(string, ...any)) EngineOptions {
	return EngineOptions{Install: true, Start: true, Wait: 90 * time.Second, Logf: logf}
}

// ErrNoEngine is returned (wrapped) when no Docker engine answers.
var ErrNoEngine = errors.New("no Docker engine answers")

// dockerClient returns a client for the engine testcontainers would use.
func dockerClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	return cli, nil
}

// PingEngine reports whether a Docker engine answers, and its version.
func PingEngine(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return "", fmt.Errorf("%w at %s: %v", ErrNoEngine, cli.DaemonHost(), err)
	}
	v, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return "", fmt.Errorf("%w at %s: %v", ErrNoEngine, cli.DaemonHost(), err)
	}
	return fmt.Sprintf("Docker %s (API %s) at %s", v.Version, v.APIVersion, cli.DaemonHost()), nil
}

// EnsureEngine makes a Docker engine answer: it returns at once when one
// does; otherwise, as the options allow, it installs Debian's docker.io and
// starts dockerd, logging to /var/log/groupquake-dockerd.log. The error says
// what was tried and what the user can do.
func EnsureEngine(ctx context.Context, o EngineOptions) (string, error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if v, err := PingEngine(ctx); err == nil {
		return v, nil
	} else if ctx.Err() != nil {
		// Interrupted, not absent: starting another engine would only
		// fight the one that may well be running.
		return "", fmt.Errorf("looking for a Docker engine: %w", ctx.Err())
	} else if os.Getenv("DOCKER_HOST") != "" {
		return "", fmt.Errorf("%v; DOCKER_HOST=%s is set, so groupquake does not start a local engine: start that engine or unset DOCKER_HOST", err, os.Getenv("DOCKER_HOST"))
	}
	root := os.Geteuid() == 0
	if _, err := exec.LookPath("dockerd"); err != nil {
		if !o.Install {
			return "", fmt.Errorf("%w: dockerd is not installed; install Debian's docker.io (apt-get install docker.io) or run `groupquake engine up` as root", ErrNoEngine)
		}
		if !root {
			return "", fmt.Errorf("%w: dockerd is not installed and installing it needs root; run `sudo groupquake engine up` or install docker.io yourself", ErrNoEngine)
		}
		if _, err := exec.LookPath("apt-get"); err != nil {
			return "", fmt.Errorf("%w: dockerd is not installed and this machine has no apt-get; install a Docker engine and start it", ErrNoEngine)
		}
		logf("engine: installing Debian's docker.io with apt-get (one time, about a minute)")
		start := time.Now()
		if out, err := runQuiet(ctx, "apt-get", "update", "-q"); err != nil {
			return "", fmt.Errorf("%w: apt-get update failed: %v\n%s", ErrNoEngine, err, tail(out, 20))
		}
		if out, err := runQuiet(ctx, "apt-get", "install", "-y", "-q", "docker.io"); err != nil {
			return "", fmt.Errorf("%w: apt-get install docker.io failed: %v\n%s", ErrNoEngine, err, tail(out, 20))
		}
		logf("engine: docker.io installed in %s", time.Since(start).Round(time.Second))
	}
	if !o.Start {
		return "", fmt.Errorf("%w: dockerd is installed but not running; start it (dockerd &) or run `groupquake engine up`", ErrNoEngine)
	}
	if !root {
		return "", fmt.Errorf("%w: dockerd is installed but not running, and starting it needs root; run `sudo groupquake engine up`", ErrNoEngine)
	}
	logPath := "/var/log/groupquake-dockerd.log"
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", fmt.Errorf("%w: open %s: %v", ErrNoEngine, logPath, err)
	}
	defer lf.Close()
	logf("engine: starting dockerd in the background (log: %s)", logPath)
	cmd := exec.Command("dockerd")
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = detached()
	keepInheritedFiles()
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("%w: start dockerd: %v", ErrNoEngine, err)
	}
	go cmd.Wait() // reap it if it exits while we wait
	wait := o.Wait
	if wait <= 0 {
		wait = 90 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		v, err := PingEngine(ctx)
		if err == nil {
			logf("engine: %s", v)
			return v, nil
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			return "", fmt.Errorf("%w: dockerd did not answer within %s; last lines of %s:\n%s", ErrNoEngine, wait, logPath, tail(out, 15))
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func runQuiet(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := interrupt.Command(ctx, name, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	return interrupt.CombinedOutput(cmd)
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cacheDir is where built artifacts (jars, rootfs tarballs) are kept across
// runs: $GROUPQUAKE_CACHE, else the user cache directory.
func cacheDir() (string, error) {
	if d := os.Getenv("GROUPQUAKE_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: set GROUPQUAKE_CACHE: %v", err)
	}
	return filepath.Join(d, "groupquake"), nil
}
