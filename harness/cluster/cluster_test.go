package cluster_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
)

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }

func needEngine(t *testing.T) { clustertest.NeedEngine(t) }

func startCluster(t *testing.T, cfg cluster.Config) *cluster.Cluster {
	return clustertest.Start(t, cfg)
}

func createTopic(t *testing.T, c cluster.Handle, topic string, partitions int32) {
	clustertest.CreateTopic(t, c, topic, partitions)
}

func versions() []string { return clustertest.Versions() }

// produceN writes n records numbered 0..n-1 through links, acks=all.
// recordsFlow creates topic "records" (3 partitions), produces n records
// to it through the links of client "producer" and consumes them all in
// group; it returns the links.
func recordsFlow(t *testing.T, c cluster.Handle, group string, n int) *cluster.Links {
	t.Helper()
	createTopic(t, c, "records", 3)
	l, err := c.Links("producer")
	if err != nil {
		t.Fatal(err)
	}
	produceN(t, l, "records", n)
	consumeAll(t, l, "records", group, n)
	return l
}

func produceN(t *testing.T, l *cluster.Links, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(append(l.KgoOpts(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range n {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce to %s: %v", topic, firstErr)
	}
}

// consumeAll reads topic with a consumer group through links until it has
// seen want distinct records, and fails on a missing record.
func consumeAll(t *testing.T, l *cluster.Links, topic, group string, want int) {
	t.Helper()
	cl, err := kgo.NewClient(append(l.KgoOpts(), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := make([]bool, want)
	got := 0
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s before the 2m bound", got, want, topic)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			i, err := strconv.Atoi(string(r.Value))
			if err != nil || i < 0 || i >= want {
				t.Fatalf("record %q at %s/%d@%d is not one we produced", r.Value, r.Topic, r.Partition, r.Offset)
			}
			if !seen[i] {
				seen[i] = true
				got++
			}
		})
	}
}

func TestProduceConsume(t *testing.T) {
	needEngine(t)
	for _, v := range versions() {
		for _, nodes := range []int{1, 3} {
			t.Run(fmt.Sprintf("kafka-%s/nodes-%d", v, nodes), func(t *testing.T) {
				c := startCluster(t, cluster.Config{Version: v, Nodes: nodes})
				createTopic(t, c, "records", 6)
				l, err := c.Links("producer")
				if err != nil {
					t.Fatal(err)
				}
				produceN(t, l, "records", 10000)
				lc, err := c.Links("consumer")
				if err != nil {
					t.Fatal(err)
				}
				consumeAll(t, lc, "records", "g-consume", 10000)
				expectDirectAddrs(t, c)
				expectReservedPorts(t, c)
			})
		}
	}
}

// commitAndCheck commits at for group through a fresh admin client and
// reads it back. Fresh clients matter after node faults: kgo keeps a
// group's coordinator cached until the broker answers NOT_COORDINATOR,
// which a dead broker never does.
func commitAndCheck(t *testing.T, c cluster.Handle, group, topic string, at int64) {
	t.Helper()
	err := retryFresh(c, time.Minute, func(ctx context.Context, adm *kadm.Client) error {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
		resp, err := adm.CommitOffsets(ctx, group, offs)
		if err == nil {
			err = resp.Error()
		}
		return err
	})
	if err != nil {
		t.Fatalf("commit %s/%s@%d: %v", group, topic, at, err)
	}
	expectCommitted(t, c, group, topic, at)
}

func expectCommitted(t *testing.T, c cluster.Handle, group, topic string, at int64) {
	t.Helper()
	err := retryFresh(c, 90*time.Second, func(ctx context.Context, adm *kadm.Client) error {
		fetched, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		if o, ok := fetched.Lookup(topic, 0); !ok || o.At != at {
			return fmt.Errorf("committed offset is %+v, want %d", o.Offset, at)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("group %s: %v", group, err)
	}
}

// retryFresh runs f with a new admin client each attempt until it succeeds
// or bound passes, and returns the last error.
func retryFresh(c cluster.Handle, bound time.Duration, f func(context.Context, *kadm.Client) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	last := errors.New("no attempt")
	for ctx.Err() == nil {
		adm, err := c.Admin()
		if err != nil {
			return err
		}
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		last = f(actx, adm)
		acancel()
		adm.Close()
		if last == nil {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("after %s: %w", bound, last)
}

func coordinatorOf(t *testing.T, adm *kadm.Client, group string) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		resp := adm.FindGroupCoordinators(ctx, group)
		for _, r := range resp {
			if r.Err == nil {
				return r.NodeID
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("no coordinator found for group %s", group)
	return -1
}

// TestNodeControl covers, on one 3-node cluster per version: a committed
// offset surviving a graceful restart and a kill -9 of the coordinator's
// node; pause; isolation; a per-client cut; per-link latency.
// everyVersion runs TestNodeControl on every tested version.
var everyVersion = flag.Bool("cluster.every-version", false, "TestNodeControl: run on every version of $GROUPQUAKE_KAFKA_VERSIONS, not only the first (the weekly versions workflow runs each version's cell)")

// TestNodeControl drives the harness's own controls of a 3-node cluster:
// restarts, kill -9, pause, isolation, per-client cuts and latency. What
// it tests is the harness's container and proxy control, the same on
// every Kafka release, so it runs on the first tested version only (the
// default one); -cluster.every-version, and the versions workflow's cell
// of each release, run it on the others. What a release itself does under
// these faults is judged by the chaos and recovery suites on every tested
// version.
func TestNodeControl(t *testing.T) {
	needEngine(t)
	vs := versions()
	if !*everyVersion && len(vs) > 1 {
		t.Logf("on Kafka %s only, not %v: -cluster.every-version runs each", vs[0], vs[1:])
		vs = vs[:1]
	}
	for _, v := range vs {
		t.Run("kafka-"+v, func(t *testing.T) {
			c := startCluster(t, cluster.Config{Version: v, Nodes: 3})
			createTopic(t, c, "t", 1)
			adm, err := c.Admin()
			if err != nil {
				t.Fatal(err)
			}
			defer adm.Close()
			ctx := context.Background()

			t.Run("commit-survives-graceful-restart-of-coordinator", func(t *testing.T) {
				commitAndCheck(t, c, "g-graceful", "t", 42)
				coord := coordinatorOf(t, adm, "g-graceful")
				if err := c.RestartNode(ctx, coord, false); err != nil {
					t.Fatal(err)
				}
				expectCommitted(t, c, "g-graceful", "t", 42)
			})
			t.Run("commit-survives-kill-9-of-coordinator", func(t *testing.T) {
				commitAndCheck(t, c, "g-kill", "t", 77)
				coord := coordinatorOf(t, adm, "g-kill")
				if err := c.KillNode(ctx, coord); err != nil {
					t.Fatal(err)
				}
				restarted := false
				defer func() {
					if !restarted {
						c.StartNode(ctx, coord)
					}
				}()
				expectCommitted(t, c, "g-kill", "t", 77) // served by the new coordinator
				restarted = true
				if err := c.StartNode(ctx, coord); err != nil {
					t.Fatal(err)
				}
				expectCommitted(t, c, "g-kill", "t", 77)
			})
			t.Run("paused-node-does-not-answer", func(t *testing.T) {
				n, _ := c.Node(2)
				if err := c.PauseNode(ctx, 2); err != nil {
					t.Fatal(err)
				}
				defer c.UnpauseNode(ctx, 2)
				if err := cluster.ProbeBroker(ctx, n.Addr()); err == nil {
					t.Errorf("paused node 2 answered ApiVersions")
				}
				if err := c.UnpauseNode(ctx, 2); err != nil {
					t.Fatal(err)
				}
				if err := cluster.ProbeBroker(ctx, n.Addr()); err != nil {
					t.Errorf("unpaused node 2 does not answer: %v", err)
				}
			})
			t.Run("isolated-node-unreachable-others-serve", func(t *testing.T) {
				n3, _ := c.Node(3)
				if err := c.IsolateNode(ctx, 3); err != nil {
					t.Fatal(err)
				}
				defer c.HealNode(ctx, 3)
				if err := cluster.ProbeBroker(ctx, n3.Addr()); err == nil {
					t.Errorf("isolated node 3 answered a client")
				}
				for _, id := range []int32{1, 2} {
					n, _ := c.Node(id)
					if err := cluster.ProbeBroker(ctx, n.Addr()); err != nil {
						t.Errorf("node %d does not serve while node 3 is isolated: %v", id, err)
					}
				}
				commitAndCheck(t, c, "g-isolated", "t", 5)
				if err := c.HealNode(ctx, 3); err != nil {
					t.Fatal(err)
				}
				if err := cluster.ProbeBroker(ctx, n3.Addr()); err != nil {
					t.Errorf("healed node 3 does not answer: %v", err)
				}
			})
			t.Run("heals-are-idempotent", func(t *testing.T) {
				// A fault cut short never landed; its heal must still return.
				if err := c.StartNode(ctx, 2); err != nil {
					t.Errorf("start of a running node: %v", err)
				}
				if err := c.UnpauseNode(ctx, 2); err != nil {
					t.Errorf("unpause of a running node: %v", err)
				}
				if err := c.HealNode(ctx, 2); err != nil {
					t.Errorf("heal of a connected node: %v", err)
				}
			})
			t.Run("rolling-restart-keeps-commits-and-serves", func(t *testing.T) {
				commitAndCheck(t, c, "g-rolling", "t", 99)
				if err := c.RollingRestart(ctx); err != nil {
					t.Fatal(err)
				}
				for _, n := range c.Nodes() {
					if err := cluster.ProbeBroker(ctx, n.Addr()); err != nil {
						t.Errorf("node %d does not serve after the rolling restart: %v", n.ID, err)
					}
				}
				expectCommitted(t, c, "g-rolling", "t", 99)
			})
			t.Run("per-client-cut-blocks-that-client-only", func(t *testing.T) {
				cut, err := c.Links("cut")
				if err != nil {
					t.Fatal(err)
				}
				other, err := c.Links("other")
				if err != nil {
					t.Fatal(err)
				}
				if err := cut.Cut(cluster.AllNodes); err != nil {
					t.Fatal(err)
				}
				if err := pingThrough(cut, 5*time.Second); err == nil {
					t.Errorf("client whose links are cut still reached the cluster")
				}
				if err := pingThrough(other, 30*time.Second); err != nil {
					t.Errorf("other client cannot reach the cluster while one client is cut: %v", err)
				}
				if err := cut.Heal(cluster.AllNodes); err != nil {
					t.Fatal(err)
				}
				if err := pingThrough(cut, 30*time.Second); err != nil {
					t.Errorf("healed client cannot reach the cluster: %v", err)
				}
			})
			t.Run("latency-on-one-link-shows-in-that-client-only", func(t *testing.T) {
				slow, err := c.Links("slow")
				if err != nil {
					t.Fatal(err)
				}
				fast, err := c.Links("fast")
				if err != nil {
					t.Fatal(err)
				}
				const added = 400 * time.Millisecond
				if err := slow.Latency(cluster.AllNodes, added, 0); err != nil {
					t.Fatal(err)
				}
				ds, err := requestTime(slow)
				if err != nil {
					t.Fatal(err)
				}
				df, err := requestTime(fast)
				if err != nil {
					t.Fatal(err)
				}
				// Latency is added in both directions, so a round trip on the slow
				// link carries at least 2×added; the fast one carries none of it.
				if ds < 2*added {
					t.Errorf("round trip through the slow link took %s, want at least %s", ds, 2*added)
				}
				if df >= 2*added {
					t.Errorf("round trip through the untouched link took %s: latency leaked to another client", df)
				}
			})
		})
	}
}

// pingThrough asks the cluster's metadata through links, within d.
func pingThrough(l *cluster.Links, d time.Duration) error {
	cl, err := kgo.NewClient(append(l.KgoOpts(), kgo.DialTimeout(2*time.Second), kgo.RequestRetries(1))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		if err := cl.Ping(ctx); err == nil {
			return nil
		} else {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	if last == nil {
		last = errors.New("timed out")
	}
	return last
}

// requestTime is the fastest of a few metadata round trips on one
// connection through links (the first pays for dialing).
func requestTime(l *cluster.Links) (time.Duration, error) {
	cl, err := kgo.NewClient(l.KgoOpts()...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	best := time.Duration(1<<63 - 1)
	for range 4 {
		start := time.Now()
		if err := cl.Ping(ctx); err != nil {
			return 0, err
		}
		best = min(best, time.Since(start))
	}
	return best, nil
}

// TestSeparateControllers runs a broker beside a controller-only node:
// records flow, and a restart of the controller leaves the broker serving
// commits.
func TestSeparateControllers(t *testing.T) {
	needEngine(t)
	c := startCluster(t, cluster.Config{Nodes: 1, Controllers: 1})
	if got := c.NodeIDs(); len(got) != 2 || got[0] != 101 || got[1] != 1 {
		t.Fatalf("nodes %v, want controller 101 and broker 1", got)
	}
	madeLate(t, c)
	recordsFlow(t, c, "g-controllers", 1000)
	if err := c.RestartNode(context.Background(), 101, false); err != nil {
		t.Fatal(err)
	}
	commitAndCheck(t, c, "g-controllers", "records", 3)
}

// madeLate makes a container and a volume labelled with c's run that c
// does not know of, as an engine does when it finishes a create whose
// caller was interrupted: c's Close must remove them too (startCluster's
// cleanup fails if anything of the run is left).
func madeLate(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	name := "gq-" + c.RunID + "-late"
	label := cluster.LabelRun + "=" + c.RunID
	for _, args := range [][]string{
		{"volume", "create", "--label", label, name + "-data"},
		{"create", "--name", name, "--label", label, "-v", name + "-data:/late", c.Image.Ref},
	} {
		if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestLinkFaults applies each toxic to one client's links on a 1-node
// cluster: a black hole and a reset stop that client's requests, a cut
// link refuses it, and after Heal the same client gets through again.
func TestLinkFaults(t *testing.T) {
	needEngine(t)
	c := startCluster(t, cluster.Config{Nodes: 1})
	l, err := c.Links("victim")
	if err != nil {
		t.Fatal(err)
	}
	if err := pingThrough(l, 30*time.Second); err != nil {
		t.Fatalf("before any fault: %v", err)
	}
	faults := map[string]func() error{
		"blackhole":  func() error { return l.Blackhole(cluster.AllNodes) },
		"reset-peer": func() error { return l.ResetPeer(cluster.AllNodes, 0) },
		"cut":        func() error { return l.Cut(1) },
	}
	for _, name := range []string{"blackhole", "reset-peer", "cut"} {
		t.Run(name, func(t *testing.T) {
			if err := faults[name](); err != nil {
				t.Fatal(err)
			}
			if err := pingThrough(l, 5*time.Second); err == nil {
				t.Errorf("a request got through a %s link", name)
			}
			if err := l.Heal(cluster.AllNodes); err != nil {
				t.Fatal(err)
			}
			if err := pingThrough(l, 30*time.Second); err != nil {
				t.Errorf("after healing %s: %v", name, err)
			}
		})
	}
	t.Run("bandwidth-applies-and-heals", func(t *testing.T) {
		if err := l.Bandwidth(cluster.AllNodes, 64); err != nil {
			t.Fatal(err)
		}
		if err := pingThrough(l, 30*time.Second); err != nil {
			t.Errorf("a 64 KB/s link should still carry a metadata request: %v", err)
		}
		if err := l.Heal(cluster.AllNodes); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := c.Links("bad/name"); err == nil {
		t.Errorf("a client name with '/' was accepted for links")
	}
}

// expectDirectAddrs checks each broker's DirectAddr: an address of the
// node's container on the cluster's private bridge network (never a
// published or outside one) where the broker answers the Kafka protocol.
// expectReservedPorts: each broker's container keeps its client port out of
// its ephemeral ports, so that no outbound connection of the node can take
// it before the listener binds (cluster.go reservedPort).
func expectReservedPorts(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	for _, n := range c.Nodes() {
		if !n.IsBroker() {
			continue
		}
		out, err := exec.Command("docker", "exec", n.Container, "cat", "/proc/sys/net/ipv4/ip_local_reserved_ports").CombinedOutput()
		if err != nil {
			t.Fatalf("node %d: reading its reserved ports: %v: %s", n.ID, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != strconv.Itoa(n.Port) {
			t.Errorf("node %d: ip_local_reserved_ports %q, want its client port %d", n.ID, got, n.Port)
		}
	}
}

func expectDirectAddrs(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range c.Nodes() {
		if !n.IsBroker() {
			continue
		}
		addr, err := c.DirectAddr(ctx, n.ID)
		if err != nil {
			t.Fatalf("DirectAddr of node %d: %v", n.ID, err)
		}
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().IsPrivate() || ap.Port() != uint16(n.Port) {
			t.Fatalf("DirectAddr of node %d is %q: want a private container address on port %d (%v)", n.ID, addr, n.Port, err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		_, err = kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
		cl.Close()
		if err != nil {
			t.Fatalf("node %d at its DirectAddr %s: %v", n.ID, addr, err)
		}
	}
}
