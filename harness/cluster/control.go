package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startedLine is what a Kafka node logs once it serves (KafkaRaftServer).
const startedLine = "Kafka Server started"

// readyTopic is where readiness proves that __consumer_offsets takes commits.
const readyTopic = "groupquake-ready"

func (c *Cluster) containerLogs(ctx context.Context, n *Node) ([]byte, error) {
	if n.ctr == nil {
		return nil, fmt.Errorf("node %d has no container", n.ID)
	}
	rc, err := n.ctr.Logs(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func (c *Cluster) startedCount(ctx context.Context, n *Node) int {
	out, err := c.containerLogs(ctx, n)
	if err != nil {
		return 0
	}
	return bytes.Count(out, []byte(startedLine))
}

// Admin returns a kadm client connected to the brokers directly (not
// through any client's links), for readiness and observations; close it
// with Close.
func (c *Cluster) Admin() (*kadm.Client, error) {
	return newAdmin(c.Bootstrap(), kgo.DialTimeout(3*time.Second))
}

// adminOpts are the options of an admin client straight to the brokers
// seeds, with extra.
func adminOpts(seeds []string, extra ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RequestRetries(2), kgo.RetryTimeout(10 * time.Second)}, extra...)
}

// newAdmin returns a kadm client straight to the brokers seeds (adminOpts).
func newAdmin(seeds []string, extra ...kgo.Opt) (*kadm.Client, error) {
	cl, err := kgo.NewClient(adminOpts(seeds, extra...)...)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// pollUntil calls f every interval until it returns nil, and returns
// ctx's end wrapped with the last error f gave otherwise.
func pollUntil(ctx context.Context, every time.Duration, f func() error) error {
	for {
		last := f()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(every):
		}
	}
}

// waitReady returns when every node logged that it started, every broker
// is in the metadata, and an offset commit reads back.
func (c *Cluster) waitReady(ctx context.Context) error {
	for _, n := range c.nodes {
		if err := c.waitStarted(ctx, n, 0); err != nil {
			return err
		}
	}
	adm, err := c.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := pollUntil(ctx, 500*time.Millisecond, func() error { return c.readyOnce(ctx, adm) }); err != nil {
		return fmt.Errorf("last readiness check: %v", err)
	}
	return nil
}

func (c *Cluster) readyOnce(ctx context.Context, adm *kadm.Client) error {
	if err := c.brokersInMetadata(ctx, adm, c.brokerIDs()); err != nil {
		return err
	}
	rf := int16(min(len(c.brokerIDs()), 3))
	if _, err := adm.CreateTopic(ctx, 1, rf, nil, readyTopic); err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		return fmt.Errorf("create %s: %v", readyTopic, err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: readyTopic, Partition: 0, At: 1, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, readyTopic, offs)
	if err != nil {
		return fmt.Errorf("commit to __consumer_offsets: %v", err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("commit to __consumer_offsets: %v", err)
	}
	fetched, err := adm.FetchOffsets(ctx, readyTopic)
	if err != nil {
		return fmt.Errorf("fetch committed offset: %v", err)
	}
	if o, ok := fetched.Lookup(readyTopic, 0); !ok || o.At != 1 {
		return fmt.Errorf("committed offset 1 for %s/0 did not read back (got %+v)", readyTopic, o)
	}
	return nil
}

func (c *Cluster) brokerIDs() []NodeID {
	var ids []NodeID
	for _, n := range c.nodes {
		if n.IsBroker() {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// brokersInMetadata checks that every id is a live (unfenced) broker.
func (c *Cluster) brokersInMetadata(ctx context.Context, adm *kadm.Client, ids []NodeID) error {
	bs, err := adm.ListBrokers(ctx)
	if err != nil {
		return fmt.Errorf("metadata: %v", err)
	}
	have := bs.NodeIDs()
	for _, id := range ids {
		if !slices.Contains(have, id) {
			return fmt.Errorf("broker %d is not in the metadata yet (brokers: %v)", id, sortedIDs(have))
		}
	}
	return nil
}

// waitStarted waits until node n has logged startedLine more than before times.
func (c *Cluster) waitStarted(ctx context.Context, n *Node, before int) error {
	var exited error
	err := pollUntil(ctx, 300*time.Millisecond, func() error {
		if c.startedCount(ctx, n) > before {
			return nil
		}
		if st, err := c.cli.ContainerInspect(ctx, n.Container, client.ContainerInspectOptions{}); err == nil && st.Container.State != nil && !st.Container.State.Running {
			out, _ := c.containerLogs(ctx, n)
			exited = fmt.Errorf("node %d (%s) exited with code %d before it served:\n%s", n.ID, n.Container, st.Container.State.ExitCode, tail(out, 20))
			return nil
		}
		return fmt.Errorf("node %d (%s) has not logged %q", n.ID, n.Container, startedLine)
	})
	if exited != nil {
		return exited
	}
	return err
}

// probeAPIVersions sends an ApiVersions v0 request straight to addr and
// checks the broker answers without error: the least a live broker does.
func probeAPIVersions(ctx context.Context, addr string) error {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	req := kmsg.NewApiVersionsRequest()
	req.SetVersion(0)
	const corr = 7
	var msg []byte
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Key()))
	msg = binary.BigEndian.AppendUint16(msg, 0)
	msg = binary.BigEndian.AppendUint32(msg, corr)
	msg = binary.BigEndian.AppendUint16(msg, uint16(len("groupquake")))
	msg = append(msg, "groupquake"...)
	msg = req.AppendTo(msg)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
	if _, err := conn.Write(append(frame, msg...)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return fmt.Errorf("no answer from %s: %v", addr, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	if len(body) < 4 || binary.BigEndian.Uint32(body) != corr {
		return fmt.Errorf("answer from %s has the wrong correlation id", addr)
	}
	resp := kmsg.NewApiVersionsResponse()
	resp.SetVersion(0)
	if err := resp.ReadFrom(body[4:]); err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("ApiVersions from %s: error code %d", addr, resp.ErrorCode)
	}
	return nil
}

// waitServing waits until broker n answers and is a live broker again.
func (c *Cluster) waitServing(ctx context.Context, n *Node) error {
	if !n.IsBroker() {
		return nil
	}
	adm, err := c.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	err = pollUntil(ctx, 300*time.Millisecond, func() error {
		if err := probeAPIVersions(ctx, n.Addr()); err != nil {
			return err
		}
		return c.brokersInMetadata(ctx, adm, []NodeID{n.ID})
	})
	if err != nil {
		return fmt.Errorf("broker %d does not serve: %v", n.ID, err)
	}
	return nil
}

// nodeAction runs f on node id within NodeTimeout and names the bound when
// it is exceeded.
func (c *Cluster) nodeAction(ctx context.Context, id NodeID, what string, f func(ctx context.Context, n *Node) error) error {
	n, err := c.Node(id)
	if err != nil {
		return err
	}
	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, c.cfg.NodeTimeout)
	defer cancel()
	if err := f(actx, n); err != nil {
		if actx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("%s node %d: bound NodeTimeout=%s exceeded (took %s): %v", what, id, c.cfg.NodeTimeout, time.Since(start).Round(time.Millisecond), err)
		}
		return fmt.Errorf("%s node %d: %w", what, id, err)
	}
	c.logf("cluster %s: %s node %d took %s", c.RunID, what, id, time.Since(start).Round(time.Millisecond))
	return nil
}

func (c *Cluster) inspect(ctx context.Context, n *Node) (running, paused bool, exit int, nets []string, err error) {
	st, err := c.cli.ContainerInspect(ctx, n.Container, client.ContainerInspectOptions{})
	if err != nil {
		return false, false, 0, nil, err
	}
	if s := st.Container.State; s != nil {
		running, paused, exit = s.Running, s.Paused, s.ExitCode
	}
	if ns := st.Container.NetworkSettings; ns != nil {
		for name := range ns.Networks {
			nets = append(nets, name)
		}
	}
	return running, paused, exit, nets, nil
}

// DirectAddr is broker id's client listener at the container's own
// address on the cluster network, reachable from the host without
// Docker's userland proxy (which publishes 127.0.0.1:port, and stops a
// published port for good on an accept error: seen at 5,000 connections).
// The address can change when the node restarts.
//
// Network safety: the address is read from Docker's inspect of the node's
// own container (one this cluster created), and only its endpoint on this
// cluster's own bridge network counts (the network this cluster created),
// so a client given it dials a container of this run and nothing else.
func (c *Cluster) DirectAddr(ctx context.Context, id NodeID) (string, error) {
	n, err := c.Node(id)
	if err != nil {
		return "", err
	}
	if n.Port <= 0 {
		return "", fmt.Errorf("node %d has no client listener", id)
	}
	st, err := c.cli.ContainerInspect(ctx, n.Container, client.ContainerInspectOptions{})
	if err != nil {
		return "", err
	}
	if ns := st.Container.NetworkSettings; ns != nil {
		if ep := ns.Networks[c.net.Name]; ep != nil && ep.IPAddress.IsValid() {
			return net.JoinHostPort(ep.IPAddress.String(), strconv.Itoa(n.Port)), nil
		}
	}
	return "", fmt.Errorf("node %d has no address on the cluster network %s (is it running, or isolated?)", id, c.net.Name)
}

// StopNode stops node id gracefully (SIGTERM, controlled shutdown) and
// returns when its process has exited. A node that had to be killed after
// the timeout is an error: the stop was not graceful.
func (c *Cluster) StopNode(ctx context.Context, id NodeID) error {
	return c.nodeAction(ctx, id, "stop", func(ctx context.Context, n *Node) error {
		secs := int(min(c.cfg.NodeTimeout, 90*time.Second) / time.Second)
		if _, err := c.cli.ContainerStop(ctx, n.Container, client.ContainerStopOptions{Timeout: &secs}); err != nil {
			return err
		}
		running, _, exit, _, err := c.inspect(ctx, n)
		if err != nil {
			return err
		}
		if running {
			return errors.New("still running after docker stop")
		}
		if exit == 137 {
			return fmt.Errorf("did not exit within %ds of SIGTERM and was killed (exit 137)", secs)
		}
		return nil
	})
}

// Serving returns nil when node id runs, is not paused and, for a broker,
// answers; otherwise it says what is wrong. Runs that share a cluster ask
// it after each run, so that a heal that left a node down is caught there
// and not blamed on the next run.
func (c *Cluster) Serving(ctx context.Context, id NodeID) error {
	n, err := c.Node(id)
	if err != nil {
		return err
	}
	running, paused, exit, _, err := c.inspect(ctx, n)
	switch {
	case err != nil:
		return err
	case !running:
		return fmt.Errorf("node %d is not running (exit code %d)", id, exit)
	case paused:
		return fmt.Errorf("node %d is paused", id)
	}
	if n.IsBroker() {
		if err := probeAPIVersions(ctx, n.Addr()); err != nil {
			return fmt.Errorf("node %d runs but does not answer: %w", id, err)
		}
	}
	return nil
}

// StartNode starts a stopped or killed node and returns when it serves
// again (logged that it started; a broker also answers and is in the
// metadata). Its data survived on its volume. A node that is already
// running is only waited for, so healing is idempotent.
func (c *Cluster) StartNode(ctx context.Context, id NodeID) error {
	return c.nodeAction(ctx, id, "start", func(ctx context.Context, n *Node) error {
		running, paused, _, _, err := c.inspect(ctx, n)
		if err != nil {
			return err
		}
		if paused {
			return errors.New("the node is paused, not stopped: unpause it")
		}
		if running {
			// Already up: a heal whose fault never landed (the stop or kill
			// was cut short) must not wait for a start that will not come.
			return c.waitServing(ctx, n)
		}
		before := c.startedCount(ctx, n)
		if _, err := c.cli.ContainerStart(ctx, n.Container, client.ContainerStartOptions{}); err != nil {
			return err
		}
		if err := c.waitStarted(ctx, n, before); err != nil {
			return err
		}
		return c.waitServing(ctx, n)
	})
}

// KillNode sends SIGKILL to node id and returns when the process is gone.
func (c *Cluster) KillNode(ctx context.Context, id NodeID) error {
	return c.nodeAction(ctx, id, "kill", func(ctx context.Context, n *Node) error {
		if _, err := c.cli.ContainerKill(ctx, n.Container, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
			return err
		}
		return pollUntil(ctx, 100*time.Millisecond, func() error {
			running, _, _, _, err := c.inspect(ctx, n)
			if err == nil && running {
				err = errors.New("still running after SIGKILL")
			}
			return err
		})
	})
}

// PauseNode freezes every process of node id (cgroup freezer): it keeps
// its connections but answers nothing.
func (c *Cluster) PauseNode(ctx context.Context, id NodeID) error {
	return c.nodeAction(ctx, id, "pause", func(ctx context.Context, n *Node) error {
		if _, err := c.cli.ContainerPause(ctx, n.Container, client.ContainerPauseOptions{}); err != nil {
			return err
		}
		_, paused, _, _, err := c.inspect(ctx, n)
		if err == nil && !paused {
			err = errors.New("not paused after docker pause")
		}
		return err
	})
}

// UnpauseNode thaws node id and returns when it serves again.
func (c *Cluster) UnpauseNode(ctx context.Context, id NodeID) error {
	return c.nodeAction(ctx, id, "unpause", func(ctx context.Context, n *Node) error {
		_, paused, _, _, err := c.inspect(ctx, n)
		if err != nil {
			return err
		}
		// Not paused: a heal whose pause never landed; only wait for service.
		if paused {
			if _, err := c.cli.ContainerUnpause(ctx, n.Container, client.ContainerUnpauseOptions{}); err != nil {
				return err
			}
		}
		return c.waitServing(ctx, n)
	})
}

// IsolateNode cuts node id off from the other nodes and from every client
// while it keeps running: it leaves the cluster network, which also takes
// its published loopback port down.
func (c *Cluster) IsolateNode(ctx context.Context, id NodeID) error {
	return c.nodeAction(ctx, id, "isolate", func(ctx context.Context, n *Node) error {
		if _, err := c.cli.NetworkDisconnect(ctx, c.net.ID, client.NetworkDisconnectOptions{Container: n.Container, Force: true}); err != nil {
			return err
		}
		running, _, _, nets, err := c.inspect(ctx, n)
		if err != nil {
			return err
		}
		if slices.Contains(nets, c.net.Name) {
			return errors.New("still on the cluster network after disconnect")
		}
		if !running {
			return errors.New("stopped running when isolated")
		}
		return nil
	})
}

// HealNode reconnects an isolated node and returns when it serves again.
func (c *Cluster) HealNode(ctx context.Context, id NodeID) error {
	return c.nodeAction(ctx, id, "heal", func(ctx context.Context, n *Node) error {
		_, _, _, nets, err := c.inspect(ctx, n)
		if err != nil {
			return err
		}
		if !slices.Contains(nets, c.net.Name) {
			if _, err := c.cli.NetworkConnect(ctx, c.net.ID, client.NetworkConnectOptions{Container: n.Container, EndpointConfig: &mobynet.EndpointSettings{Aliases: []string{n.Alias}}}); err != nil {
				return err
			}
		}
		return c.waitServing(ctx, n)
	})
}

// RestartNode stops (or, with kill, SIGKILLs) node id and starts it again.
func (c *Cluster) RestartNode(ctx context.Context, id NodeID, kill bool) error {
	stop := c.StopNode
	if kill {
		stop = c.KillNode
	}
	if err := stop(ctx, id); err != nil {
		return err
	}
	return c.StartNode(ctx, id)
}

// RollingRestart restarts every node gracefully, one at a time, and moves
// on only when the restarted node serves and no partition is
// under-replicated.
func (c *Cluster) RollingRestart(ctx context.Context) error {
	for _, n := range c.nodes {
		if err := c.RestartNode(ctx, n.ID, false); err != nil {
			return err
		}
		if err := c.nodeAction(ctx, n.ID, "wait for full ISR after restarting", c.waitFullISR); err != nil {
			return err
		}
	}
	return nil
}

// waitFullISR waits until every partition's ISR has all its replicas.
func (c *Cluster) waitFullISR(ctx context.Context, _ *Node) error {
	adm, err := c.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	return pollUntil(ctx, 500*time.Millisecond, func() error {
		md, err := adm.Metadata(ctx)
		if err != nil {
			return err
		}
		for _, t := range md.Topics {
			for _, p := range t.Partitions {
				if len(p.ISR) < len(p.Replicas) {
					return fmt.Errorf("%s/%d has ISR %v of replicas %v", t.Topic, p.Partition, p.ISR, p.Replicas)
				}
			}
		}
		return nil
	})
}

// ProbeBroker reports whether the broker at addr answers an ApiVersions
// request within a few seconds.
func ProbeBroker(ctx context.Context, addr string) error { return probeAPIVersions(ctx, addr) }

// NodeMemory returns the memory node id uses now, less the page cache (as
// `docker stats` shows it).
func (c *Cluster) NodeMemory(ctx context.Context, id NodeID) (uint64, error) {
	st, err := c.nodeStats(ctx, id)
	if err != nil {
		return 0, err
	}
	used := st.MemoryStats.Usage
	if cache := st.MemoryStats.Stats["total_inactive_file"]; cache < used {
		used -= cache
	} else if cache := st.MemoryStats.Stats["inactive_file"]; cache < used {
		used -= cache
	}
	return used, nil
}

// NodeCPU returns the CPU time node id's container used since it started
// (the counter starts over when the node restarts).
func (c *Cluster) NodeCPU(ctx context.Context, id NodeID) (time.Duration, error) {
	st, err := c.nodeStats(ctx, id)
	if err != nil {
		return 0, err
	}
	return time.Duration(st.CPUStats.CPUUsage.TotalUsage), nil
}

// nodeStats reads one snapshot of node id's container statistics (docker
// stats without streaming).
func (c *Cluster) nodeStats(ctx context.Context, id NodeID) (*container.StatsResponse, error) {
	n, err := c.Node(id)
	if err != nil {
		return nil, err
	}
	res, err := c.cli.ContainerStats(ctx, n.Container, client.ContainerStatsOptions{Stream: false})
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("stats of node %d: %v", id, err)
	}
	return &st, nil
}

// UpgradeNode replaces node id's container with one running Kafka version
// (the binaries of a rolling upgrade): the node is stopped gracefully, its
// container removed, and a new one started on the same data volume,
// network alias and port. It returns when the node serves again. The
// cluster's metadata.version is left as it was, as after a binary upgrade.
func (c *Cluster) UpgradeNode(ctx context.Context, id NodeID, version string) error {
	if err := CheckKafkaVersion(version); err != nil {
		return err
	}
	n, err := c.Node(id)
	if err != nil {
		return err
	}
	if n.Version == version {
		return fmt.Errorf("node %d already runs Kafka %s", id, version)
	}
	if _, err := EnsureImage(ctx, version, c.cfg.Image); err != nil {
		return err
	}
	if err := c.StopNode(ctx, id); err != nil {
		return err
	}
	from := n.Version
	return c.nodeAction(ctx, id, "upgrade from "+from+" to "+version, func(ctx context.Context, n *Node) error {
		if err := n.ctr.Terminate(ctx); err != nil {
			return fmt.Errorf("remove the %s container: %v", from, err)
		}
		n.ctr = nil
		n.Version = version
		if err := c.startContainer(ctx, n); err != nil {
			return err
		}
		if err := c.waitStarted(ctx, n, 0); err != nil {
			return err
		}
		return c.waitServing(ctx, n)
	})
}

// RollingUpgrade upgrades every node to version one at a time, controllers
// first as Kafka's upgrade notes advise, and moves on only when the node
// serves and no partition is under-replicated.
func (c *Cluster) RollingUpgrade(ctx context.Context, version string) error {
	for _, n := range c.nodes {
		if n.Version == version {
			continue
		}
		if err := c.UpgradeNode(ctx, n.ID, version); err != nil {
			return err
		}
		if err := c.nodeAction(ctx, n.ID, "wait for full ISR after upgrading", c.waitFullISR); err != nil {
			return err
		}
	}
	return nil
}
