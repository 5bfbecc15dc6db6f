// Package cluster gives the harness Kafka clusters it can hurt: KRaft
// brokers in containers started with testcontainers-go (or an external
// cluster named by its bootstrap address), per-client toxiproxy links to
// every broker, and control of every node (stop, kill, pause, isolate,
// restart), each returning only when the action took effect.
//
// Topology of a container cluster: one Docker bridge network per cluster;
// node k<i> listens INTERNAL://:9092 for the other nodes (advertised by its
// network alias), CONTROLLER://:9093 for the quorum, and EXTERNAL on a fixed
// loopback port published as 127.0.0.1:<port> for clients. Fixed ports keep
// advertised listeners valid across restarts; isolating a node disconnects
// it from the network, which cuts both its peers and its published port.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/groupquake/groupquake/coordinator/version"
)

// Labels put on everything a cluster creates, so that leftovers of a
// crashed run can be found and swept.
const (
	LabelRun  = "io.groupquake.run"
	LabelPID  = "io.groupquake.pid"
	LabelHost = "io.groupquake.host"
	LabelNode = "io.groupquake.node"
	// LabelKeep marks a cluster kept on purpose after its process ends
	// (Config.Keep): the sweep of crashed runs' leftovers leaves it.
	LabelKeep = "io.groupquake.keep"
)

// Config describes a container cluster.
type Config struct {
	// Version is the Kafka version; empty means DefaultKafkaVersion.
	Version string
	// Nodes is the number of broker nodes: 1 or 3. Without separate
	// controllers each is a combined broker+controller.
	Nodes int
	// Controllers, when 1 or 3, adds controller-only nodes and makes the
	// Nodes broker-only.
	Controllers int
	// Settings override broker properties (property name → value), on top
	// of FastGroupSettings.
	Settings map[string]string
	// BasePort, when set, is the loopback port of the first broker's client
	// listener; the others follow. 0 picks free ports.
	BasePort int
	// HeapMB is each node's JVM heap; 0 means 384.
	HeapMB int
	// Image says where the image comes from.
	Image ImageOptions
	// StartTimeout bounds how long the cluster may take to become ready;
	// 0 means 4 minutes, sized for three JVMs on a loaded 2-core machine.
	StartTimeout time.Duration
	// NodeTimeout bounds each node action (stop, start, unpause, heal); 0
	// means 2 minutes.
	NodeTimeout time.Duration
	// Toxiproxy is the API address of an external toxiproxy; empty embeds one.
	Toxiproxy string
	// Keep says the cluster is to outlive this process (groupquake run
	// --keep): it is labelled LabelKeep, so that the sweep of crashed
	// runs' leftovers (which every Start does) leaves it;
	// `groupquake sweep --cluster ID` removes it.
	Keep bool
	// Logf reports progress; nil is silent.
	Logf func(format string, args ...any)
}

// NodeID is a Kafka node.id.
type NodeID = int32

// Node is one container of the cluster.
type Node struct {
	ID NodeID
	// Roles is "broker,controller", "broker" or "controller".
	Roles string
	// Container is the container name; Alias the node's name in the network.
	Container string
	Alias     string
	// Port is the loopback port of the client listener; 0 on a controller.
	Port int
	// Version is the Kafka version the node runs now (it changes when the
	// node is upgraded).
	Version string
	// Volume is the Docker volume that holds the node's log directory, so
	// that the node's data outlives its container (an upgrade replaces it).
	Volume string
	ctr    *testcontainers.DockerContainer
}

// IsBroker reports whether the node serves clients.
func (n *Node) IsBroker() bool { return strings.Contains(n.Roles, "broker") }

// Addr is the client address of a broker node (127.0.0.1:port).
func (n *Node) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)) }

// Cluster is a running container cluster. Close removes everything it made.
type Cluster struct {
	cfg   Config
	RunID string
	Image Image
	cli   *client.Client
	net   *testcontainers.DockerNetwork
	nodes []*Node
	logf  func(string, ...any)

	// What every node container is created with, kept to recreate a node.
	clusterID string
	settings  map[string]string
	labels    map[string]string

	mu sync.Mutex
	clientLinks
	closed bool
}

// FastGroupSettings are the broker settings for fast, deterministic group
// tests on the release p describes: no initial rebalance delay, low minimum
// session and heartbeat intervals for both protocols, few __consumer_offsets
// partitions, replication that fits the broker count, and where the release
// has it (p.AssignmentInterval, KIP-1263) no assignment batching, so that
// epochs follow each heartbeat. Scenarios state the timers they depend on
// and override these where they need to.
func FastGroupSettings(p version.Profile, brokers int) map[string]string {
	rf := strconv.Itoa(min(brokers, 3))
	isr := "1"
	if brokers >= 3 {
		isr = "2"
	}
	s := map[string]string{
		"group.initial.rebalance.delay.ms":                 "0",
		"group.min.session.timeout.ms":                     "1000",
		"group.consumer.min.session.timeout.ms":            "2000",
		"group.consumer.session.timeout.ms":                "6000",
		"group.consumer.min.heartbeat.interval.ms":         "100",
		"group.consumer.heartbeat.interval.ms":             "500",
		"offsets.topic.num.partitions":                     "3",
		"offsets.topic.replication.factor":                 rf,
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    isr,
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            isr,
		"default.replication.factor":                       rf,
		"min.insync.replicas":                              isr,
		"auto.create.topics.enable":                        "false",
	}
	if p.AssignmentInterval {
		s["group.consumer.assignment.interval.ms"] = "0"
		s["group.consumer.min.assignment.interval.ms"] = "0"
	}
	if p.ShareGroups == version.ShareProduction {
		maps.Copy(s, fastShareSettings(p))
	}
	return s
}

// The share-group timers of FastGroupSettings (Kafka's defaults are a 30 s
// record lock, a delivery count limit of 5, a 45 s share session and a 5 s
// heartbeat interval, version.Share*Default): a lock short enough that a
// record whose member went quiet comes back within a run, and a limit low
// enough that a record released again and again is archived within one.
const (
	FastShareRecordLockMs       = 5000
	FastShareDeliveryCountLimit = 3
	FastShareSessionTimeoutMs   = 6000
	FastShareHeartbeatMs        = 500
)

// fastShareSettings are the share-group settings of FastGroupSettings, for
// releases where share groups are production-ready (share.version=1 comes
// with the format, so nothing needs enabling): the timers above with their
// lower bounds lowered to allow them (ShareGroupConfig.validate wants
// min <= lock duration <= max), three __share_group_state partitions as
// for __consumer_offsets, and where the release has it (KIP-1263) no
// assignment batching for share groups either.
func fastShareSettings(p version.Profile) map[string]string {
	s := map[string]string{
		"group.share.min.record.lock.duration.ms":      "1000",
		"group.share.record.lock.duration.ms":          strconv.Itoa(FastShareRecordLockMs),
		"group.share.delivery.count.limit":             strconv.Itoa(FastShareDeliveryCountLimit),
		"group.share.min.session.timeout.ms":           "2000",
		"group.share.session.timeout.ms":               strconv.Itoa(FastShareSessionTimeoutMs),
		"group.share.min.heartbeat.interval.ms":        "100",
		"group.share.heartbeat.interval.ms":            strconv.Itoa(FastShareHeartbeatMs),
		"share.coordinator.state.topic.num.partitions": "3",
	}
	if p.ShareAssignmentInterval {
		s["group.share.assignment.interval.ms"] = "0"
		s["group.share.min.assignment.interval.ms"] = "0"
	}
	return s
}

// envName turns a broker property into the KAFKA_* variable the image maps
// back to it: "." → "_", "_" → "__", "-" → "___".
func envName(prop string) string {
	var b strings.Builder
	b.WriteString("KAFKA_")
	for _, r := range prop {
		switch r {
		case '.':
			b.WriteString("_")
		case '_':
			b.WriteString("__")
		case '-':
			b.WriteString("___")
		default:
			b.WriteString(strings.ToUpper(string(r)))
		}
	}
	return b.String()
}

// CheckControllers returns an error unless a cluster can have n separate
// controller nodes: 0 (the brokers are the controllers), 1 or 3.
func CheckControllers(n int) error {
	if n != 0 && n != 1 && n != 3 {
		return fmt.Errorf("separate controllers number 0, 1 or 3, not %d", n)
	}
	return nil
}

func (c *Config) normalize() error {
	if c.Version == "" {
		c.Version = DefaultKafkaVersion
	}
	if err := CheckKafkaVersion(c.Version); err != nil {
		return err
	}
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	if c.Nodes != 1 && c.Nodes != 3 {
		return fmt.Errorf("a cluster has 1 or 3 broker nodes, not %d", c.Nodes)
	}
	if err := CheckControllers(c.Controllers); err != nil {
		return err
	}
	if c.BasePort < 0 || c.BasePort > 65535-c.Nodes {
		return fmt.Errorf("base port %d is out of range 1–%d", c.BasePort, 65535-c.Nodes)
	}
	if c.HeapMB == 0 {
		c.HeapMB = 384
	}
	if c.HeapMB < 128 {
		return fmt.Errorf("heap of %d MB per node is too small for a Kafka broker: use at least 128", c.HeapMB)
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 4 * time.Minute
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = 2 * time.Minute
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if c.Image.Logf == nil {
		c.Image.Logf = c.Logf
	}
	return nil
}

// ErrPortInUse is returned (wrapped) when a broker's loopback port is taken.
var ErrPortInUse = errors.New("port in use")

// pickPorts returns n loopback ports: BasePort.. when set (each checked
// free), else ports the kernel hands out.
func pickPorts(base, n int) ([]int, error) {
	ports := make([]int, 0, n)
	for i := range n {
		addr := "127.0.0.1:0"
		if base > 0 {
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("%w: %s for broker %d: %v; free it or choose another --base-port (0 picks free ports)", ErrPortInUse, addr, i+1, err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
	}
	return ports, nil
}

// newClusterID returns a random cluster id in Kafka's form (16 bytes,
// base64url without padding) that does not start with '-': Kafka's
// Uuid.randomUuid() draws again in that case, because kafka-storage's
// argument parser reads "--cluster-id -abc" as a missing value.
func newClusterID() string {
	for {
		if id := NewID(16); !strings.HasPrefix(id, "-") {
			return id
		}
	}
}

// newRunID returns a random run id: lower-case letters and digits, a name
// that container, volume and network names can carry.
func newRunID() string {
	return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(NewID(6)))
}

// NewID returns n random bytes in base64url without padding: with n=16, a
// random id in the form of Kafka's Uuid.toString (a member id a client
// makes, as KIP-1082 has it).
func NewID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Start brings up a cluster and returns when it is ready: every broker is
// in the metadata and a commit to __consumer_offsets is durable. On error
// nothing it created is left behind.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	if _, err := PingEngine(ctx); err != nil {
		return nil, fmt.Errorf("%w: a container cluster needs a Docker engine; run `groupquake engine up` as root (make test does), or use --bootstrap for an external cluster", err)
	}
	if n, err := Sweep(ctx, false); err != nil {
		cfg.Logf("cluster: sweeping leftovers failed: %v", err)
	} else if n > 0 {
		cfg.Logf("cluster: swept %d leftovers of crashed runs", n)
	}
	ports, err := pickPorts(cfg.BasePort, cfg.Nodes)
	if err != nil {
		return nil, err
	}
	img, err := EnsureImage(ctx, cfg.Version, cfg.Image)
	if err != nil {
		return nil, err
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	c := &Cluster{cfg: cfg, RunID: newRunID(), Image: img, cli: cli, logf: cfg.Logf}
	register(c)
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			c.Close(cctx)
		}
	}()
	host, _ := os.Hostname()
	labels := map[string]string{LabelRun: c.RunID, LabelPID: strconv.Itoa(os.Getpid()), LabelHost: host}
	if cfg.Keep {
		labels[LabelKeep] = "true"
	}
	mk, mkDone := toAnswer(ctx)
	c.net, err = network.New(mk, network.WithDriver("bridge"), network.WithLabels(labels))
	mkDone()
	if err != nil {
		return nil, fmt.Errorf("create cluster network: %v", err)
	}
	c.nodes = layout(cfg, c.RunID, ports)
	c.clusterID = newClusterID()
	c.labels = labels
	c.settings = FastGroupSettings(version.MustParse(cfg.Version).Profile(), cfg.Nodes) // cfg.Version was checked above
	for k, v := range cfg.Settings {
		c.settings[k] = v
	}
	start := time.Now()
	cfg.Logf("cluster %s: starting %d node(s) of Kafka %s (%s)", c.RunID, len(c.nodes), cfg.Version, img.Ref)
	for _, n := range c.nodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := c.createNode(ctx, n); err != nil {
			return nil, err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	if err := c.waitReady(rctx); err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("cluster %s not ready: bound StartTimeout=%s exceeded (waited %s): %v%s", c.RunID, cfg.StartTimeout, time.Since(start).Round(time.Second), err, c.logTails(context.WithoutCancel(ctx), 8))
		}
		return nil, err
	}
	cfg.Logf("cluster %s: ready in %s; brokers %s", c.RunID, time.Since(start).Round(100*time.Millisecond), strings.Join(c.Bootstrap(), ","))
	return c, nil
}

// layout names the nodes: brokers 1..n; separate controllers 101...
func layout(cfg Config, runID string, ports []int) []*Node {
	var nodes []*Node
	brokerRoles := "broker,controller"
	if cfg.Controllers > 0 {
		brokerRoles = "broker"
		for i := range cfg.Controllers {
			id := NodeID(101 + i)
			nodes = append(nodes, &Node{ID: id, Roles: "controller", Alias: fmt.Sprintf("c%d", i+1), Container: fmt.Sprintf("gq-%s-c%d", runID, i+1), Version: cfg.Version})
		}
	}
	for i := range cfg.Nodes {
		nodes = append(nodes, &Node{ID: NodeID(i + 1), Roles: brokerRoles, Alias: fmt.Sprintf("k%d", i+1), Container: fmt.Sprintf("gq-%s-k%d", runID, i+1), Port: ports[i], Version: cfg.Version})
	}
	return nodes
}

func (c *Cluster) voters() string {
	var vs []string
	for _, n := range c.nodes {
		if strings.Contains(n.Roles, "controller") {
			vs = append(vs, fmt.Sprintf("%d@%s:9093", n.ID, n.Alias))
		}
	}
	return strings.Join(vs, ",")
}

func (c *Cluster) nodeEnv(n *Node) map[string]string {
	env := map[string]string{
		"CLUSTER_ID":                      c.clusterID,
		"KAFKA_NODE_ID":                   strconv.Itoa(int(n.ID)),
		"KAFKA_PROCESS_ROLES":             n.Roles,
		"KAFKA_CONTROLLER_QUORUM_VOTERS":  c.voters(),
		"KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
		"KAFKA_LOG_DIRS":                  "/var/lib/kafka/data",
		"KAFKA_HEAP_OPTS":                 fmt.Sprintf("-Xmx%dm -Xms%dm", c.cfg.HeapMB, c.cfg.HeapMB),
	}
	switch n.Roles {
	case "controller":
		env["KAFKA_LISTENERS"] = "CONTROLLER://:9093"
		env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"] = "CONTROLLER:PLAINTEXT"
	default:
		listeners := fmt.Sprintf("INTERNAL://:9092,EXTERNAL://:%d", n.Port)
		if strings.Contains(n.Roles, "controller") {
			listeners += ",CONTROLLER://:9093"
		}
		env["KAFKA_LISTENERS"] = listeners
		env["KAFKA_ADVERTISED_LISTENERS"] = fmt.Sprintf("INTERNAL://%s:9092,EXTERNAL://%s", n.Alias, n.Addr())
		env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"] = "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
		env["KAFKA_INTER_BROKER_LISTENER_NAME"] = "INTERNAL"
		for k, v := range c.settings {
			env[envName(k)] = v
		}
	}
	return env
}

// createBound bounds one request that creates something in the engine.
const createBound = 2 * time.Minute

// toAnswer returns a context for a request that creates something in the
// engine: it is not cancelled with ctx (Ctrl-C), only bounded. An engine
// finishes a create whose caller went away, so a request cancelled midway
// would make a container or volume after Close looked for it, and leave it
// behind; waiting for the answer costs a moment and leaves nothing unknown.
func toAnswer(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), createBound)
}

// createNode makes node n's data volume and starts its container, each
// request run to its answer (toAnswer).
func (c *Cluster) createNode(ctx context.Context, n *Node) error {
	mk, done := toAnswer(ctx)
	defer done()
	if err := c.createVolume(mk, n); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.startContainer(mk, n)
}

// createVolume makes the Docker volume that keeps node n's data.
func (c *Cluster) createVolume(ctx context.Context, n *Node) error {
	n.Volume = n.Container + "-data"
	labels := map[string]string{LabelNode: strconv.Itoa(int(n.ID))}
	for k, v := range c.labels {
		labels[k] = v
	}
	if _, err := c.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: n.Volume, Labels: labels}); err != nil {
		return fmt.Errorf("create data volume of node %d: %v", n.ID, err)
	}
	return nil
}

// startContainer creates and starts node n's container from the image of
// n.Version, with its data volume, network alias and loopback port.
func (c *Cluster) startContainer(ctx context.Context, n *Node) error {
	img := c.Image
	if n.Version != img.Version {
		var err error
		if img, err = EnsureImage(ctx, n.Version, c.cfg.Image); err != nil {
			return err
		}
	}
	nl := map[string]string{LabelNode: strconv.Itoa(int(n.ID))}
	for k, v := range c.labels {
		nl[k] = v
	}
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithName(n.Container),
		testcontainers.WithEnv(c.nodeEnv(n)),
		testcontainers.WithLabels(nl),
		network.WithNetwork([]string{n.Alias}, c.net),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Source: n.Volume, Target: "/var/lib/kafka/data"})
		}),
	}
	if n.Port > 0 {
		port := strconv.Itoa(n.Port) + "/tcp"
		opts = append(opts,
			testcontainers.WithExposedPorts(port),
			testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				p := mobynet.MustParsePort(port)
				hc.PortBindings = mobynet.PortMap{p: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(n.Port)}}}
				hc.Sysctls = reservedPort(n.Port)
			}))
	}
	ctr, err := testcontainers.Run(ctx, img.Ref, opts...)
	if ctr != nil {
		n.ctr = ctr
	}
	if err != nil {
		if s := err.Error(); strings.Contains(s, "address already in use") || strings.Contains(s, "port is already allocated") {
			return fmt.Errorf("%w: 127.0.0.1:%d for node %d was taken while the cluster started: %v; free it or choose another --base-port", ErrPortInUse, n.Port, n.ID, err)
		}
		return fmt.Errorf("start node %d (%s): %v", n.ID, n.Container, err)
	}
	return nil
}

// reservedPort keeps a node's client port out of its container's ephemeral
// ports. The port is one the host's kernel handed out, from the same range
// (32768–60999) a container's outbound connections take their local ports
// from; a KRaft node connects to the controllers before its data-plane
// listeners bind, and a connection that drew the client port made the node
// exit with "Socket server failed to bind to 0.0.0.0:PORT: Address already
// in use" (a soak run on 2026-12-05). The sysctl is per network namespace.
func reservedPort(port int) map[string]string {
	return map[string]string{"net.ipv4.ip_local_reserved_ports": strconv.Itoa(port)}
}

// Bootstrap returns the client addresses of the broker nodes.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, n := range c.nodes {
		if n.IsBroker() {
			out = append(out, n.Addr())
		}
	}
	return out
}

var _ Handle = (*Cluster)(nil)

// NodeIDs lists the node ids, controllers first.
func (c *Cluster) NodeIDs() []NodeID {
	var ids []NodeID
	for _, n := range c.nodes {
		ids = append(ids, n.ID)
	}
	return ids
}

// Version is the cluster's Kafka version.
func (c *Cluster) Version() string { return c.cfg.Version }

// Nodes returns every node, controllers first.
func (c *Cluster) Nodes() []*Node { return slices.Clone(c.nodes) }

// Node returns the node with id.
func (c *Cluster) Node(id NodeID) (*Node, error) {
	for _, n := range c.nodes {
		if n.ID == id {
			return n, nil
		}
	}
	var ids []string
	for _, n := range c.nodes {
		ids = append(ids, strconv.Itoa(int(n.ID)))
	}
	return nil, fmt.Errorf("cluster %s has no node %d (nodes: %s)", c.RunID, id, strings.Join(ids, ", "))
}

// Links returns client's own links to every broker, creating them on first use.
func (c *Cluster) Links(clientName string) (*Links, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("cluster %s is closed", c.RunID)
	}
	return c.linksOf(c.cfg.Toxiproxy, clientName, func() []Upstream {
		var ups []Upstream
		for _, n := range c.nodes {
			if n.IsBroker() {
				ups = append(ups, Upstream{Node: n.ID, Advertised: n.Addr(), Dial: n.Addr()})
			}
		}
		return ups
	}, nil)
}

// Close removes every container, the network and the links, also when ctx
// is already cancelled (Ctrl-C). It is safe to call more than once.
func (c *Cluster) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	deregister(c)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	closeStart := time.Now()
	var errs, proxyErr []error
	if c.proxies != nil {
		proxyErr = []error{c.proxies.Close()}
		errs = append(errs, proxyErr...)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if n.ctr != nil {
				err = n.ctr.Terminate(ctx, testcontainers.StopTimeout(0), testcontainers.RemoveVolumes())
			} else {
				// Created under this name but never handed back (a failed start).
				_, err = c.cli.ContainerRemove(ctx, n.Container, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
				if err != nil && strings.Contains(err.Error(), "No such container") {
					err = nil
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("remove %s: %v", n.Container, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, n := range c.nodes {
		if n.Volume == "" {
			continue
		}
		if _, err := c.cli.VolumeRemove(ctx, n.Volume, client.VolumeRemoveOptions{Force: true}); err != nil && !strings.Contains(err.Error(), "no such volume") {
			errs = append(errs, fmt.Errorf("remove volume %s: %v", n.Volume, err))
		}
	}
	if c.net != nil {
		if err := c.net.Remove(ctx); err != nil {
			errs = append(errs, fmt.Errorf("remove network %s: %v", c.net.Name, err))
		}
	}
	// Whatever is still labelled with this run (a container that an engine
	// made after the removal above looked for it) is removed by its label;
	// what that removes is not left behind, so the errors above only count
	// when something is.
	_, left, err := removeLabelled(ctx, c.cli, make(client.Filters).Add("label", LabelRun+"="+c.RunID), "run "+c.RunID+"'s")
	switch {
	case err != nil:
		errs = append(errs, err)
	case len(left) > 0:
		errs = append(errs, fmt.Errorf("still there after %s: %s; `groupquake sweep` removes them once this process is gone", time.Since(closeStart).Round(time.Millisecond), strings.Join(left, ", ")))
	default:
		errs = proxyErr
	}
	c.cli.Close()
	return errors.Join(errs...)
}

// logTails returns the last lines each node logged, for error messages.
func (c *Cluster) logTails(ctx context.Context, n int) string {
	var b strings.Builder
	for _, node := range c.nodes {
		out, err := c.containerLogs(ctx, node)
		if err != nil {
			fmt.Fprintf(&b, "\n--- node %d (%s): no logs: %v", node.ID, node.Container, err)
			continue
		}
		fmt.Fprintf(&b, "\n--- node %d (%s), last %d lines:\n%s", node.ID, node.Container, n, tail(out, n))
	}
	return b.String()
}

// Logs returns everything node id has logged.
func (c *Cluster) Logs(ctx context.Context, id NodeID) (string, error) {
	n, err := c.Node(id)
	if err != nil {
		return "", err
	}
	out, err := c.containerLogs(ctx, n)
	return string(out), err
}

// sortedIDs returns ids sorted.
func sortedIDs(ids []NodeID) []NodeID {
	out := slices.Clone(ids)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
