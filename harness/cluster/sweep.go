package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

// Sweep removes containers, volumes and networks left by groupquake runs that
// crashed: those labelled by a process of this host that no longer exists.
// With all, it removes every groupquake container and network, live or not.
// It returns how many it removed.
func Sweep(ctx context.Context, all bool) (int, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	defer cli.Close()
	host, _ := os.Hostname()
	stale := func(labels map[string]string) bool {
		if all {
			return true
		}
		if labels[LabelHost] != host {
			return false
		}
		pid, err := strconv.Atoi(labels[LabelPID])
		if err != nil || pid <= 0 {
			return true
		}
		return !processAlive(pid)
	}
	f := make(client.Filters).Add("label", LabelRun)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return 0, fmt.Errorf("list groupquake containers: %v", err)
	}
	removed := 0
	var errs []error
	for _, ctr := range cs.Items {
		if !stale(ctr.Labels) {
			continue
		}
		if _, err := cli.ContainerRemove(ctx, ctr.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return removed, fmt.Errorf("list groupquake volumes: %v", err)
	}
	for _, v := range vs.Items {
		if !stale(v.Labels) {
			continue
		}
		if _, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return removed, fmt.Errorf("list groupquake networks: %v", err)
	}
	for _, n := range ns.Items {
		if !stale(n.Labels) {
			continue
		}
		if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// Leftovers counts groupquake containers, volumes and networks of run (all runs when
// run is empty) that still exist; tests use it to prove nothing is left.
func Leftovers(ctx context.Context, run string) (int, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	sel := LabelRun
	if run != "" {
		sel = LabelRun + "=" + run
	}
	f := make(client.Filters).Add("label", sel)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return 0, err
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return 0, err
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return 0, err
	}
	return len(cs.Items) + len(ns.Items) + len(vs.Items), nil
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// open holds the clusters of this process that are not closed yet, so that
// an interrupt can remove them. It is the one piece of process-wide state:
// a signal reaches the process, not a cluster.
var open struct {
	sync.Mutex
	m map[*Cluster]struct{}
}

func register(c *Cluster) {
	open.Lock()
	defer open.Unlock()
	if open.m == nil {
		open.m = map[*Cluster]struct{}{}
	}
	open.m[c] = struct{}{}
}

func deregister(c *Cluster) {
	open.Lock()
	defer open.Unlock()
	delete(open.m, c)
}

// CloseAll closes every cluster of this process that is still open.
func CloseAll(ctx context.Context) error {
	open.Lock()
	var cs []*Cluster
	for c := range open.m {
		cs = append(cs, c)
	}
	open.Unlock()
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close(ctx))
	}
	return errors.Join(errs...)
}

// CloseOnSignal removes every open cluster when the process gets SIGINT or
// SIGTERM, then exits with 130 (143 for SIGTERM). Test binaries call it from
// TestMain: `go test` passes Ctrl-C to them, and without it the containers
// would outlive the run until the next sweep.
func CloseOnSignal() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			fmt.Fprintf(os.Stderr, "groupquake: %v: removing open clusters\n", s)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			if err := CloseAll(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "groupquake: removing clusters: %v\n", strings.TrimSpace(err.Error()))
			}
			cancel()
			code := 130
			if s == syscall.SIGTERM {
				code = 143
			}
			os.Exit(code)
		case <-done:
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
