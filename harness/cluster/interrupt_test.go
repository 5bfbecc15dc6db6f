package cluster_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
)

var readyLine = regexp.MustCompile(`cluster ([a-z0-9]+): ready in`)

// startRun starts `groupquake run` with a workload long enough to be
// interrupted, and returns once its cluster is ready.
func startRun(t *testing.T, bin string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--nodes", "1", "--duration", "10m", "--bound", "15m", "--out", filepath.Join(t.TempDir(), "run"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	runID := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				runID <- m[1]
			}
		}
		close(runID)
	}()
	select {
	case id, ok := <-runID:
		if !ok {
			t.Fatal("groupquake run exited before its cluster was ready")
		}
		return cmd, id
	case <-time.After(4 * time.Minute):
		t.Fatal("groupquake run: cluster not ready within 4m")
	}
	return nil, ""
}

// TestInterruptRemovesCluster sends Ctrl-C (SIGINT) to a running
// `groupquake run` and checks that it removed its containers and network.
func TestInterruptRemovesCluster(t *testing.T) {
	needEngine(t)
	cmd, run := startRun(t, clustertest.BuildGroupquake(t))
	if n, err := cluster.Leftovers(context.Background(), run); err != nil || n == 0 {
		t.Fatalf("precondition: run %s has %d containers/networks (err %v)", run, n, err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		t.Logf("SIGINT: exit after %s", time.Since(start).Round(time.Millisecond))
	case <-time.After(interruptBound):
		t.Fatalf("groupquake run did not exit within %s of SIGINT", interruptBound)
	}
	if n, err := cluster.Leftovers(context.Background(), run); err != nil || n != 0 {
		t.Errorf("after SIGINT, run %s left %d containers/networks (err %v)", run, n, err)
	}
}

// TestSweepRemovesCrashedRun kills `groupquake run` with SIGKILL, so that it
// cannot clean up, and checks that a sweep removes what it left.
func TestSweepRemovesCrashedRun(t *testing.T) {
	needEngine(t)
	cmd, run := startRun(t, clustertest.BuildGroupquake(t))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	ctx := context.Background()
	if n, err := cluster.Leftovers(ctx, run); err != nil || n == 0 {
		t.Fatalf("a SIGKILLed run %s should leave containers behind to sweep; found %d (err %v)", run, n, err)
	}
	if _, err := cluster.Sweep(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n, err := cluster.Leftovers(ctx, run); err != nil || n != 0 {
		t.Errorf("after a sweep, crashed run %s still has %d containers/networks (err %v)", run, n, err)
	}
}

// interruptBound is how long a command may take to give control back after
// an interrupt on a container cluster (removing the containers included):
// generous against a loaded machine; the times measured are logged.
const interruptBound = 60 * time.Second

var startingLine = regexp.MustCompile(`cluster ([a-z0-9]+): starting `)

// TestSecondInterruptRemovesContainers: a run on a container cluster whose
// teardown never ends (held for good by the test hook) is stopped at once
// by a second SIGINT, which force-removes its containers, volumes and
// network and says so; nothing of the cluster is left.
func TestSecondInterruptRemovesContainers(t *testing.T) {
	needEngine(t)
	p := clustertest.StartProcess(t, clustertest.HookedGroupquake(t), []string{"GROUPQUAKE_TEST_HOLD=teardown!"},
		"run", "--nodes", "1", "--scenario", "baseline", "--seed", "21", "--duration", "2s", "--out", filepath.Join(t.TempDir(), "run"))
	run := p.WaitLine(readyLine, 4*time.Minute)[1]
	p.WaitLine(regexp.MustCompile(`^groupquake-test: holding in phase teardown`), 4*time.Minute)
	if n, err := cluster.Leftovers(context.Background(), run); err != nil || n == 0 {
		t.Fatalf("precondition: run %s has %d containers/networks/volumes (err %v)", run, n, err)
	}
	p.Signal(syscall.SIGINT)
	p.WaitLine(regexp.MustCompile(`^groupquake: SIGINT: stopping`), interruptBound)
	code, took := p.WaitExit(p.Signal(syscall.SIGINT), interruptBound)
	t.Logf("second SIGINT: exit %d after %s", code, took.Round(time.Millisecond))
	if code != 3 || !strings.Contains(p.Log(), "groupquake: removed ") || !strings.Contains(p.Log(), "nothing left behind") {
		t.Errorf("exit %d; want 3, the containers removed and nothing left:\n%s", code, p.Log())
	}
	if n, err := cluster.Leftovers(context.Background(), run); err != nil || n != 0 {
		t.Errorf("after the second SIGINT, run %s left %d containers/networks/volumes (err %v)", run, n, err)
	}
	p.NothingLeft()
}

// TestInterruptUpgrade interrupts `groupquake upgrade` while its 3-node
// cluster starts: it says so, gives control back, and removes what it had
// started.
func TestInterruptUpgrade(t *testing.T) {
	needEngine(t)
	// The pinned pair, whose images the cluster tier has (Version orders
	// as its number).
	vs := version.Pinned()
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	from, to := lo.String(), hi.String()
	dir := filepath.Join(t.TempDir(), "upgrade")
	// -v: testcontainers says when a container started.
	p := clustertest.StartProcess(t, clustertest.HookedGroupquake(t), nil, "upgrade", "-v", "--from", from, "--to", to, "--seed", "22", "--out", dir)
	run := p.WaitLine(startingLine, 4*time.Minute)[1]
	// Once a container of it runs, the start is under way.
	p.WaitLine(regexp.MustCompile(`Container started`), 2*time.Minute)
	code, took := p.WaitExit(p.Signal(syscall.SIGINT), interruptBound)
	t.Logf("SIGINT while the cluster started: exit %d after %s", code, took.Round(time.Millisecond))
	if code != 3 || !strings.Contains(p.Log(), "groupquake: interrupted by SIGINT while the cluster started") {
		t.Errorf("exit %d; want 3 and the interrupt said:\n%s", code, p.Log())
	}
	if n, err := cluster.Leftovers(context.Background(), run); err != nil || n != 0 {
		t.Errorf("after SIGINT, cluster %s left %d containers/networks/volumes (err %v):\n%s", run, n, err, p.Log())
	}
	p.NothingLeft()
}

// TestInterruptImageBuild sends SIGTERM to `groupquake image build
// --rebuild` while Maven resolves the broker jars (a cache of its own, so
// that they are not cached): Maven's JVM ends with it, no work directory is left in the
// cache, and the engine's image of the version is the one it had.
func TestInterruptImageBuild(t *testing.T) {
	needEngine(t)
	v := cluster.DefaultKafkaVersion
	ctx := context.Background()
	imageID := func() string {
		out, _ := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", cluster.BuiltImageRef(v)).Output()
		return strings.TrimSpace(string(out))
	}
	before := imageID()
	cache := t.TempDir()
	p := clustertest.StartProcess(t, clustertest.HookedGroupquake(t), []string{"GROUPQUAKE_CACHE=" + cache},
		"image", "build", "--kafka", v, "--image-source", "build", "--rebuild")
	p.WaitLine(regexp.MustCompile(`image: resolving Kafka .* broker jars with Maven`), 4*time.Minute)
	// Maven's JVM runs (the mvn script execs it).
	for deadline := time.Now().Add(time.Minute); !strings.Contains(strings.Join(p.Marked(), "\n"), "maven"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no Maven process within a minute of the resolving line:\n%s", p.Log())
		}
	}
	code, took := p.WaitExit(p.Signal(syscall.SIGTERM), interruptBound)
	t.Logf("SIGTERM while Maven resolved: exit %d after %s", code, took.Round(time.Millisecond))
	if code != 3 || !strings.Contains(p.Log(), "groupquake: interrupted by SIGTERM while getting the image of Kafka "+v) {
		t.Errorf("exit %d; want 3 and the interrupt said:\n%s", code, p.Log())
	}
	filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "resolve-") {
			t.Errorf("Maven's work directory left in the cache: %s", path)
		}
		return nil
	})
	if after := imageID(); after != before {
		t.Errorf("the image %s changed from %q to %q", cluster.BuiltImageRef(v), before, after)
	}
	p.NothingLeft()
}
