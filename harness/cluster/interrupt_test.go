package cluster_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

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
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("groupquake run did not exit within 3m of SIGINT")
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
