package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/faults"
)

// Proxies owns the toxiproxy that every client link goes through: a server
// embedded in this process by default, or an external toxiproxy the user
// names. Both are driven through toxiproxy's client package, so fault code
// is the same for both.
type Proxies struct {
	api  string
	cl   *toxiclient.Client
	srv  *http.Server
	emb  *toxiproxy.ApiServer
	mu   sync.Mutex
	made []string // proxy names created here, deleted on Close
}

// NewProxies starts an embedded toxiproxy on loopback when external is
// empty, else uses the toxiproxy API at external (host:port).
func NewProxies(external string) (*Proxies, error) {
	if external != "" {
		cl := toxiclient.NewClient(external)
		if _, err := cl.Version(); err != nil {
			return nil, fmt.Errorf("toxiproxy at %s does not answer: %v; start it or leave --toxiproxy empty to use the embedded one", external, err)
		}
		return &Proxies{api: external, cl: cl}, nil
	}
	emb := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("embedded toxiproxy: listen on loopback: %v", err)
	}
	srv := &http.Server{Handler: emb.Routes(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	api := ln.Addr().String()
	return &Proxies{api: api, cl: toxiclient.NewClient(api), srv: srv, emb: emb}, nil
}

// API is the toxiproxy API address.
func (p *Proxies) API() string { return p.api }

// Close deletes the proxies made here and stops an embedded server.
func (p *Proxies) Close() error {
	p.mu.Lock()
	names := p.made
	p.made = nil
	p.mu.Unlock()
	var errs []error
	for _, n := range names {
		if px, err := p.cl.Proxy(n); err == nil {
			if err := px.Delete(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if p.emb != nil {
		p.emb.Collection.Clear()
		p.srv.Close()
	}
	return errors.Join(errs...)
}

func (p *Proxies) create(name, upstream string) (*toxiclient.Proxy, error) {
	px, err := p.cl.CreateProxy(name, "127.0.0.1:0", upstream)
	if err != nil {
		return nil, fmt.Errorf("create toxiproxy link %s -> %s: %v", name, upstream, err)
	}
	p.mu.Lock()
	p.made = append(p.made, name)
	p.mu.Unlock()
	return px, nil
}

// Upstream is one broker a client can be linked to.
type Upstream struct {
	Node int32
	// Advertised is the host:port the broker advertises to clients; a
	// client's dialer maps it to the client's own proxy.
	Advertised string
	// Dial is where the proxy connects (the same as Advertised here).
	Dial string
}

// Links are one client's own links to every broker. Faults on them affect
// that client only: the rest of the group keeps its paths.
type Links struct {
	Client string
	p      *Proxies
	mu     sync.Mutex
	byNode map[int32]*toxiclient.Proxy
	// byAddr maps an advertised broker address to the proxy listen address.
	byAddr map[string]string
	seeds  []string
}

// NewLinks creates one proxy per upstream for client. Names must be unique
// per Proxies.
func (p *Proxies) NewLinks(client string, ups []Upstream) (*Links, error) {
	if client == "" || strings.ContainsAny(client, "/ ") {
		return nil, fmt.Errorf("client name %q for links must be non-empty without '/' or spaces", client)
	}
	l := &Links{Client: client, p: p, byNode: map[int32]*toxiclient.Proxy{}, byAddr: map[string]string{}}
	for _, u := range ups {
		px, err := p.create(fmt.Sprintf("%s.node%d", client, u.Node), u.Dial)
		if err != nil {
			return nil, err
		}
		l.byNode[u.Node] = px
		l.byAddr[u.Advertised] = px.Listen
		l.seeds = append(l.seeds, u.Advertised)
	}
	sort.Strings(l.seeds)
	return l, nil
}

// Seeds are the advertised broker addresses, to use as kgo seed brokers
// together with Dialer.
func (l *Links) Seeds() []string { return slices.Clone(l.seeds) }

// Dialer maps each advertised broker address to this client's proxy for
// it. An address the links do not know is refused: a client never
// connects anywhere the harness did not link.
func (l *Links) Dialer() func(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		l.mu.Lock()
		to, ok := l.byAddr[host]
		l.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("links of %s: no link to %s (linked: %s)", l.Client, host, strings.Join(l.seeds, ", "))
		}
		return d.DialContext(ctx, network, to)
	}
}

// KgoOpts are the options that route a kgo client through these links.
func (l *Links) KgoOpts() []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(l.Seeds()...), kgo.Dialer(l.Dialer())}
}

func (l *Links) proxy(node int32) (*toxiclient.Proxy, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	px, ok := l.byNode[node]
	if !ok {
		return nil, fmt.Errorf("links of %s: no link to node %d", l.Client, node)
	}
	return px, nil
}

// nodes returns the linked nodes, or just node when it is not AllNodes.
func (l *Links) nodes(node int32) []int32 {
	if node != AllNodes {
		return []int32{node}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var ns []int32
	for n := range l.byNode {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// AllNodes selects every link of a client.
const AllNodes = faults.AllNodes

var _ faults.Link = (*Links)(nil)

// Cut takes the link down: the proxy stops listening and drops its
// connections, so the client gets connection refused.
func (l *Links) Cut(node int32) error {
	return l.each(node, func(px *toxiclient.Proxy) error { return px.Disable() })
}

// Restore brings a cut link back.
func (l *Links) Restore(node int32) error {
	return l.each(node, func(px *toxiclient.Proxy) error { return px.Enable() })
}

// Latency delays both directions of the link by d ± jitter.
func (l *Links) Latency(node int32, d, jitter time.Duration) error {
	return l.each(node, func(px *toxiclient.Proxy) error {
		for _, s := range []string{"upstream", "downstream"} {
			if err := l.replaceToxic(px, "latency_"+s, "latency", s, toxiclient.Attributes{"latency": d.Milliseconds(), "jitter": jitter.Milliseconds()}); err != nil {
				return err
			}
		}
		return nil
	})
}

// Bandwidth limits both directions to kbPerSec.
func (l *Links) Bandwidth(node int32, kbPerSec int64) error {
	return l.each(node, func(px *toxiclient.Proxy) error {
		for _, s := range []string{"upstream", "downstream"} {
			if err := l.replaceToxic(px, "bandwidth_"+s, "bandwidth", s, toxiclient.Attributes{"rate": kbPerSec}); err != nil {
				return err
			}
		}
		return nil
	})
}

// Blackhole keeps connections open but lets no data through until healed.
func (l *Links) Blackhole(node int32) error {
	return l.each(node, func(px *toxiclient.Proxy) error {
		return l.replaceToxic(px, "blackhole", "timeout", "upstream", toxiclient.Attributes{"timeout": 0})
	})
}

// ResetPeer resets every connection after the given time (0: at once).
func (l *Links) ResetPeer(node int32, after time.Duration) error {
	return l.each(node, func(px *toxiclient.Proxy) error {
		return l.replaceToxic(px, "reset_peer", "reset_peer", "upstream", toxiclient.Attributes{"timeout": after.Milliseconds()})
	})
}

// Heal removes every toxic and restores cut links.
func (l *Links) Heal(node int32) error {
	return l.each(node, func(px *toxiclient.Proxy) error {
		ts, err := px.Toxics()
		if err != nil {
			return err
		}
		for _, t := range ts {
			if err := px.RemoveToxic(t.Name); err != nil {
				return err
			}
		}
		if !px.Enabled {
			return px.Enable()
		}
		return nil
	})
}

func (l *Links) replaceToxic(px *toxiclient.Proxy, name, typ, stream string, attrs toxiclient.Attributes) error {
	_ = px.RemoveToxic(name) // absent is fine
	if _, err := px.AddToxic(name, typ, stream, 1, attrs); err != nil {
		return fmt.Errorf("links of %s: add %s toxic to %s: %v", l.Client, typ, px.Name, err)
	}
	return nil
}

func (l *Links) each(node int32, f func(*toxiclient.Proxy) error) error {
	for _, n := range l.nodes(node) {
		px, err := l.proxy(n)
		if err != nil {
			return err
		}
		if err := f(px); err != nil {
			return fmt.Errorf("links of %s, node %d: %w", l.Client, n, err)
		}
	}
	return nil
}

// clientLinks holds a cluster's links, one set per client name, and the
// toxiproxy they run on; the cluster's own mutex guards it.
type clientLinks struct {
	proxies *Proxies
	links   map[string]*Links
}

// linksOf returns client's links, making them on first use to ups() (the
// toxiproxy started first, at toxiproxy or embedded) and passing them to
// made, when not nil, before they are kept.
func (cl *clientLinks) linksOf(toxiproxy, clientName string, ups func() []Upstream, made func(*Links) error) (*Links, error) {
	if l, ok := cl.links[clientName]; ok {
		return l, nil
	}
	if cl.proxies == nil {
		p, err := NewProxies(toxiproxy)
		if err != nil {
			return nil, err
		}
		cl.proxies = p
	}
	l, err := cl.proxies.NewLinks(clientName, ups())
	if err != nil {
		return nil, err
	}
	if made != nil {
		if err := made(l); err != nil {
			return nil, err
		}
	}
	if cl.links == nil {
		cl.links = map[string]*Links{}
	}
	cl.links[clientName] = l
	return l, nil
}
