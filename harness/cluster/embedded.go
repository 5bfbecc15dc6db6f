package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/coordinator/wire"
	"github.com/groupquake/groupquake/coordinator/wire/reference"
	"github.com/groupquake/groupquake/internal/interrupt"
)

// EmbeddedConfig describes an embedded cluster: groupquake's reference
// coordinator served over the Kafka protocol inside this process, with its
// logs on disk. No Docker and no Java.
type EmbeddedConfig struct {
	// Version is the Kafka release the coordinator behaves as; empty means
	// DefaultKafkaVersion.
	Version string
	// DataDir holds the partition logs; empty makes a temporary one that
	// Close removes.
	DataDir string
	// Toxiproxy is the API address of an external toxiproxy; empty embeds one.
	Toxiproxy string
	// MigrationPolicy is group.consumer.migration.policy (bidirectional,
	// upgrade, downgrade, disabled); empty means Kafka's default,
	// bidirectional.
	MigrationPolicy string
	// Coordinator, if set, adjusts the reference coordinator's
	// configuration after EmbeddedCoordinatorConfig (a scale run puts
	// Kafka's default group timers back, for instance).
	Coordinator func(*coordinator.Config)
	Logf        func(format string, args ...any)
}

// EmbeddedNode is the embedded cluster's only node id.
const EmbeddedNode NodeID = 1

// Embedded is a one-node cluster served by the reference coordinator
// (coordinator/wire). Node faults act on the server: stop and kill close it
// (its logs stay on disk), start serves again from them on the same address
// (the coordinator replays __consumer_offsets), pause and isolate cut every
// client's links while the server keeps running. A paused broker's clock
// stops; the embedded one's keeps running, so sessions can expire during a
// pause here where a frozen JVM would expire them only once thawed.
type Embedded struct {
	cfg    EmbeddedConfig
	wcfg   wire.Config
	ownDir bool
	addr   string
	mu     sync.Mutex
	srv    *wire.Server
	clientLinks
	cutAll bool // pause or isolate in force
	closed bool
}

var _ Handle = (*Embedded)(nil)

// EmbeddedCoordinatorConfig is the reference coordinator's configuration
// with the timers of FastGroupSettings, so the embedded cluster runs the
// same scenarios on the same clocks as a container cluster.
func EmbeddedCoordinatorConfig(v version.Version) coordinator.Config {
	c := coordinator.DefaultConfig()
	c.InitialRebalanceDelay = 0
	c.MinSessionTimeout = time.Second
	c.Consumer = consumergroup.Config{
		SessionTimeout: 6 * time.Second, MinSessionTimeout: 2 * time.Second,
		HeartbeatInterval: 500 * time.Millisecond, MinHeartbeatInterval: 100 * time.Millisecond,
		// The locally built images run Java 17, whose HashSet sizing decides
		// some uniform assignments; keep the embedded cluster's the same.
		JavaVersion: 17,
	}
	if v.Profile().AssignmentInterval {
		zero := time.Duration(0)
		c.Consumer.AssignmentInterval = &zero
	}
	// fastShareSettings' share-group timers, and no assignment batching.
	c.Share.SessionTimeout = FastShareSessionTimeoutMs * time.Millisecond
	c.Share.HeartbeatInterval = FastShareHeartbeatMs * time.Millisecond
	zero := time.Duration(0)
	c.Share.AssignmentInterval = &zero
	return c
}

// StartEmbedded starts an embedded cluster on loopback.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.Version == "" {
		cfg.Version = DefaultKafkaVersion
	}
	v, err := version.Parse(cfg.Version)
	if err != nil {
		return nil, err
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	e := &Embedded{cfg: cfg}
	if cfg.DataDir == "" {
		d, err := interrupt.MkdirTemp("", "groupquake-embedded-")
		if err != nil {
			return nil, err
		}
		cfg.DataDir, e.ownDir = d, true
		e.cfg.DataDir = d
	}
	ccfg := EmbeddedCoordinatorConfig(v)
	ccfg.Consumer.MigrationPolicy = cfg.MigrationPolicy
	if cfg.Coordinator != nil {
		cfg.Coordinator(&ccfg)
	}
	e.wcfg = wire.Config{
		DataDir:           cfg.DataDir,
		Version:           v,
		NodeID:            EmbeddedNode,
		OffsetsPartitions: 3, // as FastGroupSettings
		NewCoordinator:    reference.New(ccfg),
		Logf:              cfg.Logf,
	}
	if v.Profile().ShareGroups == version.ShareProduction {
		// The share-partition leader, with fastShareSettings' lock and limit.
		e.wcfg.ShareFetch = true
		e.wcfg.ShareStatePartitions = 3
		e.wcfg.ShareLockDuration = FastShareRecordLockMs * time.Millisecond
		e.wcfg.ShareDeliveryCountLimit = FastShareDeliveryCountLimit
	}
	srv, err := wire.Start(e.wcfg)
	if err != nil {
		e.removeDir()
		return nil, fmt.Errorf("start the embedded cluster: %w", err)
	}
	e.srv, e.addr = srv, srv.Addr()
	e.wcfg.Addr = e.addr // a restart serves on the same address
	cfg.Logf("embedded cluster: reference coordinator as Kafka %s on %s (data %s)", v, e.addr, cfg.DataDir)
	return e, nil
}

func (e *Embedded) removeDir() {
	if e.ownDir {
		interrupt.RemoveTemp(e.cfg.DataDir)
	}
}

// DataDir is where the server keeps its logs.
func (e *Embedded) DataDir() string { return e.cfg.DataDir }

// NodeIDs is the one node.
func (e *Embedded) NodeIDs() []NodeID { return []NodeID{EmbeddedNode} }

// Bootstrap is the server's address.
func (e *Embedded) Bootstrap() []string { return []string{e.addr} }

// Admin returns a client straight to the server.
func (e *Embedded) Admin() (*kadm.Client, error) {
	return newAdmin(e.Bootstrap())
}

// Links returns client's own link to the server.
func (e *Embedded) Links(clientName string) (*Links, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("embedded cluster is closed")
	}
	ups := func() []Upstream { return []Upstream{{Node: EmbeddedNode, Advertised: e.addr, Dial: e.addr}} }
	return e.linksOf(e.cfg.Toxiproxy, clientName, ups, func(l *Links) error {
		if e.cutAll {
			return l.Cut(AllNodes)
		}
		return nil
	})
}

func (e *Embedded) node(id NodeID) error {
	if id != EmbeddedNode {
		return fmt.Errorf("the embedded cluster has only node %d, not %d", EmbeddedNode, id)
	}
	return nil
}

// StopNode closes the server; its logs stay. Kafka's controlled shutdown
// and a SIGKILL look the same here: the server syncs what it wrote.
func (e *Embedded) StopNode(ctx context.Context, id NodeID) error {
	if err := e.node(id); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv == nil {
		return nil
	}
	err := e.srv.Close()
	e.srv = nil
	return err
}

// KillNode is StopNode (see there).
func (e *Embedded) KillNode(ctx context.Context, id NodeID) error { return e.StopNode(ctx, id) }

// StartNode serves again from the logs on the same address; the
// coordinator replays __consumer_offsets first. Already serving: nothing to do.
func (e *Embedded) StartNode(ctx context.Context, id NodeID) error {
	if err := e.node(id); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		return nil
	}
	var err error
	for {
		var srv *wire.Server
		if srv, err = wire.Start(e.wcfg); err == nil {
			e.srv = srv
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart the embedded cluster on %s: %w", e.addr, err)
		case <-time.After(200 * time.Millisecond): // the port may linger a moment
		}
	}
}

// DialContext connects to the server in this process, without a socket,
// when addr is its address (net.Pipe; the server sees the client at
// /127.0.0.1); other addresses are dialed as usual. A process that holds
// both ends of thousands of connections (a scale run's classic members,
// one connection each) would otherwise need two file descriptors for
// each. A stopped server refuses, as a closed port does. Such connections
// go around every client's links: no fault reaches them.
func (e *Embedded) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if addr != e.addr {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	e.mu.Lock()
	srv := e.srv
	e.mu.Unlock()
	refused := &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	if srv == nil {
		return nil, refused
	}
	client, server := net.Pipe()
	if err := srv.ServeConn(server, "/127.0.0.1"); err != nil {
		client.Close()
		server.Close()
		return nil, refused
	}
	return client, nil
}

// setCut cuts or restores every client's link.
func (e *Embedded) setCut(cut bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cutAll = cut
	var errs []error
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range e.links {
			if !yield(n) {
				return
			}
		}
	}) {
		l := e.links[name]
		if cut {
			errs = append(errs, l.Cut(AllNodes))
		} else {
			errs = append(errs, l.Restore(AllNodes))
		}
	}
	return errors.Join(errs...)
}

// PauseNode cuts every client off while the server runs (see Embedded).
func (e *Embedded) PauseNode(ctx context.Context, id NodeID) error {
	if err := e.node(id); err != nil {
		return err
	}
	return e.setCut(true)
}

// UnpauseNode restores every client's link.
func (e *Embedded) UnpauseNode(ctx context.Context, id NodeID) error {
	if err := e.node(id); err != nil {
		return err
	}
	return e.setCut(false)
}

// IsolateNode cuts every client off: with one node there are no peers.
func (e *Embedded) IsolateNode(ctx context.Context, id NodeID) error { return e.PauseNode(ctx, id) }

// HealNode restores every client's link.
func (e *Embedded) HealNode(ctx context.Context, id NodeID) error { return e.UnpauseNode(ctx, id) }

// Close stops the server and the links, and removes a temporary data dir.
func (e *Embedded) Close(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	var errs []error
	if e.proxies != nil {
		errs = append(errs, e.proxies.Close())
	}
	if e.srv != nil {
		errs = append(errs, e.srv.Close())
		e.srv = nil
	}
	e.removeDir()
	return errors.Join(errs...)
}
