package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

// Sweep removes containers, volumes and networks left by groupquake runs that
// crashed: those labelled by a process of this host that no longer exists,
// but for a cluster kept on purpose (Config.Keep). With all, it removes every
// groupquake container and network, live or not, of every user of the
// engine. It returns how many it removed.
func Sweep(ctx context.Context, all bool) (int, error) {
	return sweep(ctx, SweepSelection{All: all})
}

// SweepCluster removes the containers, volumes and networks of the one
// cluster id (Cluster.RunID, its label LabelRun), whether its process is
// alive or not and whether it was kept or not, and nothing else. It
// returns how many it removed.
func SweepCluster(ctx context.Context, id string) (int, error) {
	return sweep(ctx, SweepSelection{Cluster: id})
}

// SweepSelection says what a sweep removes.
type SweepSelection struct {
	// All selects every groupquake container, volume and network.
	All bool
	// Cluster, when set, selects the one cluster of that id.
	Cluster string
	// Host is this host's name, and Alive says whether a process of this
	// host is alive: with neither All nor Cluster, what a process of Host
	// that is no longer Alive left, unless it was kept.
	Host  string
	Alive func(pid int) bool
}

// Selects says whether the sweep removes what carries labels.
func (s SweepSelection) Selects(labels map[string]string) bool {
	if _, ours := labels[LabelRun]; !ours {
		return false
	}
	switch {
	case s.Cluster != "":
		return labels[LabelRun] == s.Cluster
	case s.All:
		return true
	case labels[LabelKeep] != "":
		return false
	case labels[LabelHost] != s.Host:
		return false
	}
	pid, err := strconv.Atoi(labels[LabelPID])
	if err != nil || pid <= 0 {
		return true
	}
	return !s.Alive(pid)
}

func sweep(ctx context.Context, sel SweepSelection) (int, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	defer cli.Close()
	sel.Host, _ = os.Hostname()
	sel.Alive = processAlive
	stale := sel.Selects
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

// ClusterIDs lists the ids (LabelRun) of the groupquake clusters that have
// a container, volume or network on the engine, sorted: what `sweep
// --cluster ID` can be given.
func ClusterIDs(ctx context.Context) ([]string, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	defer cli.Close()
	f := make(client.Filters).Add("label", LabelRun)
	seen := map[string]bool{}
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list groupquake containers: %v", err)
	}
	for _, c := range cs.Items {
		seen[c.Labels[LabelRun]] = true
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list groupquake volumes: %v", err)
	}
	for _, v := range vs.Items {
		seen[v.Labels[LabelRun]] = true
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list groupquake networks: %v", err)
	}
	for _, n := range ns.Items {
		seen[n.Labels[LabelRun]] = true
	}
	delete(seen, "")
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
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

// RemoveOwn removes, at once, every container, volume and network that
// this process created (labelled with its pid on this host), whatever state
// the clusters' own Close is in: a second Ctrl-C calls it before the
// process exits. It returns how many it removed and names what is still
// there when ctx ends (a Close of the same things may be under way: what it
// removes counts as gone); `groupquake sweep` removes those once this
// process is gone.
func RemoveOwn(ctx context.Context) (removed int, left []string, err error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	defer cli.Close()
	host, _ := os.Hostname()
	f := make(client.Filters).Add("label", LabelPID+"="+strconv.Itoa(os.Getpid())).Add("label", LabelHost+"="+host)
	return removeLabelled(ctx, cli, f, "this process's")
}

// removeLabelled lists the containers, volumes and networks that filter
// f selects, removes what is listed, and again, until nothing is listed or
// ctx ends; what the last listing found is what it returns as left. whose
// names them in errors ("this process's", "run x's").
func removeLabelled(ctx context.Context, cli *client.Client, f client.Filters, whose string) (removed int, left []string, err error) {
	var mu sync.Mutex
	count := func() { mu.Lock(); removed++; mu.Unlock() }
	for {
		cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		if err != nil && ctx.Err() != nil && left != nil {
			return removed, left, nil // what the listing before found
		}
		if err != nil {
			return removed, left, fmt.Errorf("list %s containers: %v", whose, err)
		}
		vs, verr := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
		ns, nerr := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
		left = nil
		for _, c := range cs.Items {
			left = append(left, "container "+strings.TrimPrefix(strings.Join(c.Names, ","), "/"))
		}
		if verr == nil {
			for _, v := range vs.Items {
				left = append(left, "volume "+v.Name)
			}
		}
		if nerr == nil {
			for _, n := range ns.Items {
				left = append(left, "network "+n.Name)
			}
		}
		if len(left) == 0 || ctx.Err() != nil {
			return removed, left, nil
		}
		var wg sync.WaitGroup
		for _, c := range cs.Items {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err == nil {
					count()
				}
			}()
		}
		wg.Wait()
		if verr == nil {
			for _, v := range vs.Items {
				if _, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err == nil {
					count()
				}
			}
		}
		if nerr == nil {
			for _, n := range ns.Items {
				if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err == nil {
					count()
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
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

// started is set once this process began to create a container cluster.
var started atomic.Bool

// Started reports whether this process ever began to start a container
// cluster (so that RemoveOwn has something to look for).
func Started() bool { return started.Load() }

func register(c *Cluster) {
	started.Store(true)
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
