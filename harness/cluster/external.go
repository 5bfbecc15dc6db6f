package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"text/template"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/internal/interrupt"
)

// ExternalConfig points the harness at a cluster it did not start.
type ExternalConfig struct {
	// Bootstrap are host:port addresses of some brokers.
	Bootstrap []string
	// NodeControl is a command template run with `sh -c` to act on a node,
	// for example `ssh {{.Host}} sudo systemctl {{.Action}} kafka`. Fields:
	// .Action (stop, start, kill, pause, unpause, isolate, heal), .Node
	// (node.id), .Host and .Port (the broker's advertised address). Empty
	// means node faults are refused.
	NodeControl string
	// Toxiproxy is the API address of an external toxiproxy; empty embeds one.
	Toxiproxy string
	// NodeTimeout bounds each node action; 0 means 2 minutes.
	NodeTimeout time.Duration
	// ConnectTimeout bounds the first metadata request; 0 means 20 seconds.
	ConnectTimeout time.Duration
	Logf           func(format string, args ...any)
}

// External is a cluster the user runs (Strimzi, MSK, a local install):
// client-side links work as on containers; node control runs the user's
// command template.
type External struct {
	cfg     ExternalConfig
	brokers map[NodeID]string // advertised host:port
	tmpl    *template.Template
	mu      sync.Mutex
	clientLinks
}

var _ Handle = (*External)(nil)

// ErrNoNodeControl is returned (wrapped) for node faults on an external
// cluster without a command template.
var ErrNoNodeControl = errors.New("node control needs a command template")

// Connect reaches an external cluster and learns its brokers.
func Connect(ctx context.Context, cfg ExternalConfig) (*External, error) {
	if len(cfg.Bootstrap) == 0 {
		return nil, errors.New("an external cluster needs at least one bootstrap address (--bootstrap host:port)")
	}
	for _, b := range cfg.Bootstrap {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return nil, fmt.Errorf("bootstrap address %q is not host:port: %v", b, err)
		}
	}
	if cfg.NodeTimeout == 0 {
		cfg.NodeTimeout = 2 * time.Minute
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 20 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	e := &External{cfg: cfg, brokers: map[NodeID]string{}}
	if cfg.NodeControl != "" {
		t, err := template.New("node-control").Option("missingkey=error").Parse(cfg.NodeControl)
		if err != nil {
			return nil, fmt.Errorf("node control template %q: %v", cfg.NodeControl, err)
		}
		e.tmpl = t
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Bootstrap...), kgo.DialTimeout(5*time.Second), kgo.RequestRetries(1))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	mctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	bs, err := kadm.NewClient(cl).ListBrokers(mctx)
	if err != nil {
		return nil, fmt.Errorf("external cluster at %v does not answer within %s: %v; check the address and that the brokers listen there", cfg.Bootstrap, cfg.ConnectTimeout, err)
	}
	for _, b := range bs {
		e.brokers[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	cfg.Logf("external cluster: %d brokers %v", len(e.brokers), e.Bootstrap())
	return e, nil
}

// NodeIDs lists the brokers' ids.
func (e *External) NodeIDs() []NodeID {
	var ids []NodeID
	for id := range e.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Bootstrap returns the advertised broker addresses.
func (e *External) Bootstrap() []string {
	var out []string
	for _, id := range e.NodeIDs() {
		out = append(out, e.brokers[id])
	}
	return out
}

// Admin returns a client straight to the brokers.
func (e *External) Admin() (*kadm.Client, error) {
	return newAdmin(e.Bootstrap())
}

// Links returns client's own links to every broker.
func (e *External) Links(clientName string) (*Links, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.linksOf(e.cfg.Toxiproxy, clientName, func() []Upstream {
		var ups []Upstream
		for _, id := range e.NodeIDs() {
			ups = append(ups, Upstream{Node: id, Advertised: e.brokers[id], Dial: e.brokers[id]})
		}
		return ups
	}, nil)
}

// Close removes the links; the cluster itself is the user's.
func (e *External) Close(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.proxies != nil {
		err := e.proxies.Close()
		e.proxies = nil
		return err
	}
	return nil
}

// control runs the node control template for action on node id, then
// waits until the broker serves (up) or stops answering (down).
func (e *External) control(ctx context.Context, id NodeID, action string, up bool) error {
	addr, ok := e.brokers[id]
	if !ok {
		return fmt.Errorf("external cluster has no broker %d (brokers: %v)", id, e.NodeIDs())
	}
	if e.tmpl == nil {
		return fmt.Errorf("%s node %d of an external cluster: %w; give one with --node-control, e.g. 'ssh {{.Host}} sudo systemctl {{.Action}} kafka'", action, id, ErrNoNodeControl)
	}
	host, port, _ := net.SplitHostPort(addr)
	var cmdline bytes.Buffer
	if err := e.tmpl.Execute(&cmdline, map[string]any{"Action": action, "Node": id, "Host": host, "Port": port}); err != nil {
		return fmt.Errorf("node control template: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.NodeTimeout)
	defer cancel()
	start := time.Now()
	out, err := interrupt.CombinedOutput(interrupt.Command(ctx, "sh", "-c", cmdline.String()))
	if err != nil {
		return fmt.Errorf("%s node %d: `%s` failed: %v\n%s", action, id, cmdline.String(), err, tail(out, 10))
	}
	want := "serve again"
	if !up {
		want = "stop answering"
	}
	err = pollUntil(ctx, 300*time.Millisecond, func() error {
		if perr := probeAPIVersions(ctx, addr); (perr == nil) != up {
			return fmt.Errorf("broker %s did not %s", addr, want)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s node %d: `%s` ran but %v within the bound NodeTimeout=%s", action, id, cmdline.String(), err, e.cfg.NodeTimeout)
	}
	e.cfg.Logf("external cluster: %s node %d took %s", action, id, time.Since(start).Round(time.Millisecond))
	return nil
}

func (e *External) StopNode(ctx context.Context, id NodeID) error {
	return e.control(ctx, id, "stop", false)
}
func (e *External) StartNode(ctx context.Context, id NodeID) error {
	return e.control(ctx, id, "start", true)
}
func (e *External) KillNode(ctx context.Context, id NodeID) error {
	return e.control(ctx, id, "kill", false)
}
func (e *External) PauseNode(ctx context.Context, id NodeID) error {
	return e.control(ctx, id, "pause", false)
}
func (e *External) UnpauseNode(ctx context.Context, id NodeID) error {
	return e.control(ctx, id, "unpause", true)
}
func (e *External) IsolateNode(ctx context.Context, id NodeID) error {
	return e.control(ctx, id, "isolate", false)
}
func (e *External) HealNode(ctx context.Context, id NodeID) error {
	return e.control(ctx, id, "heal", true)
}
