package process

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients/wiretap"
)

// gateway gives one member process its own way to the brokers. A client cannot
// be handed a dialer (it connects to the addresses the brokers advertise),
// so the gateway listens on one loopback port per broker address and
// rewrites the addresses in Metadata and FindCoordinator answers to its
// own (and the leader hints of Fetch and Produce answers): the client
// connects only to the gateway, and each connection is dialed
// onward with the member's dial function (its links: its own toxiproxy
// proxies, so link faults reach it) and observed (clients/wiretap), which
// is how the member reports its group requests when they leave and when
// their answers come.
//
// Invariant: no byte of the client's traffic bypasses dial. Every address the
// client learns from an answer is a gateway listener; an answer that cannot be
// rewritten is not forwarded (the connection is closed instead).
type gateway struct {
	dial wiretap.DialFunc // already observed
	ctx  context.Context
	stop context.CancelFunc

	mu     sync.Mutex
	lns    map[string]net.Listener // broker address → listener
	byLn   map[string]string       // listener address → broker address
	conns  map[net.Conn]struct{}
	closed bool
	cut    bool          // cut for good: listening still, every connection refused
	held   chan struct{} // while frozen: closed on the thaw
	wg     sync.WaitGroup
}

func newGateway(dial wiretap.DialFunc) *gateway {
	ctx, cancel := context.WithCancel(context.Background())
	return &gateway{dial: dial, ctx: ctx, stop: cancel, lns: map[string]net.Listener{}, byLn: map[string]string{}, conns: map[net.Conn]struct{}{}}
}

// listen returns the gateway's address for broker, listening on it first
// if needed.
func (g *gateway) listen(broker string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return "", errors.New("gateway closed")
	}
	if ln, ok := g.lns[broker]; ok {
		return ln.Addr().String(), nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("gateway listener for %s: %w", broker, err)
	}
	g.lns[broker] = ln
	g.byLn[ln.Addr().String()] = broker
	g.wg.Add(1)
	go g.accept(ln, broker)
	return ln.Addr().String(), nil
}

// listenAll listens for every seed broker: the process's bootstrap
// addresses, in seeds' order.
func (g *gateway) listenAll(seeds []string) ([]string, error) {
	var boot []string
	for _, s := range seeds {
		a, err := g.listen(s)
		if err != nil {
			return nil, err
		}
		boot = append(boot, a)
	}
	return boot, nil
}

func (g *gateway) accept(ln net.Listener, broker string) {
	defer g.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !g.track(c, true) {
			c.Close()
			if g.isClosed() {
				return
			}
			continue // cut: refused
		}
		g.wg.Add(1)
		go g.serve(c, broker)
	}
}

func (g *gateway) track(c net.Conn, add bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if add {
		if g.closed || g.cut {
			return false
		}
		g.conns[c] = struct{}{}
	} else {
		delete(g.conns, c)
	}
	return true
}

// serve carries one client connection to broker.
func (g *gateway) serve(jc net.Conn, broker string) {
	defer g.wg.Done()
	defer g.track(jc, false)
	defer jc.Close()
	if !g.pass() {
		return
	}
	bc, err := g.dial(g.ctx, "tcp", broker)
	if err != nil {
		return // the client sees a closed connection, as a refused one
	}
	if !g.track(bc, true) {
		bc.Close()
		return
	}
	defer g.track(bc, false)
	defer bc.Close()

	var mu sync.Mutex
	rewrite := map[int32]int16{} // correlation id → version of a request whose answer names brokers (rewritten)
	keys := map[int32]int16{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer bc.Close()
		defer jc.Close()
		for {
			frame, err := readFrame(jc)
			if err != nil {
				return
			}
			if len(frame) >= 8 {
				key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
				if rewritten(key) {
					corr := int32(binary.BigEndian.Uint32(frame[4:]))
					mu.Lock()
					rewrite[corr], keys[corr] = version, key
					mu.Unlock()
				}
			}
			if !g.pass() {
				return
			}
			if err := writeFrame(bc, frame); err != nil {
				return
			}
		}
	}()
	for {
		frame, err := readFrame(bc)
		if err != nil {
			break
		}
		if len(frame) >= 4 {
			corr := int32(binary.BigEndian.Uint32(frame))
			mu.Lock()
			version, ok := rewrite[corr]
			key := keys[corr]
			delete(rewrite, corr)
			delete(keys, corr)
			mu.Unlock()
			if ok {
				if frame, err = g.rewrite(key, version, frame); err != nil {
					break
				}
			}
		}
		if !g.pass() {
			break
		}
		if err := writeFrame(jc, frame); err != nil {
			break
		}
	}
	jc.Close()
	bc.Close()
	<-done
}

// rewritten says whether answers to requests of key name brokers: Metadata
// and FindCoordinator, and Fetch, Produce, ShareFetch and ShareAcknowledge,
// whose answers carry the new leader's address when a partition's leader
// moved (KIP-951, KIP-932; a client connects to it directly).
func rewritten(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.Metadata, kmsg.FindCoordinator, kmsg.Fetch, kmsg.Produce, kmsg.ShareFetch, kmsg.ShareAcknowledge:
		return true
	}
	return false
}

// rewrite replaces the broker addresses of a response frame (correlation
// id first) to a request rewritten names with the gateway's.
func (g *gateway) rewrite(key, version int16, frame []byte) ([]byte, error) {
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(version)
	rd := kbin.Reader{Src: frame[4:]}
	if resp.IsFlexible() {
		for n := rd.Uvarint(); n > 0; n-- { // response header tags
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
		if err := rd.Complete(); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		return nil, fmt.Errorf("%s v%d response: %w", kmsg.NameForKey(key), version, err)
	}
	swap := func(host *string, port *int32) error {
		if *host == "" || *port < 0 {
			return nil // no coordinator in this answer
		}
		addr, err := g.listen(net.JoinHostPort(*host, strconv.Itoa(int(*port))))
		if err != nil {
			return err
		}
		h, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		*host, *port = h, int32(n)
		return nil
	}
	switch r := resp.(type) {
	case *kmsg.FetchResponse:
		if len(r.Brokers) == 0 {
			return frame, nil // no leader hints: forwarded as it came
		}
		for i := range r.Brokers {
			if err := swap(&r.Brokers[i].Host, &r.Brokers[i].Port); err != nil {
				return nil, err
			}
		}
	case *kmsg.ProduceResponse:
		if len(r.Brokers) == 0 {
			return frame, nil
		}
		for i := range r.Brokers {
			if err := swap(&r.Brokers[i].Host, &r.Brokers[i].Port); err != nil {
				return nil, err
			}
		}
	case *kmsg.ShareFetchResponse:
		if len(r.NodeEndpoints) == 0 {
			return frame, nil
		}
		for i := range r.NodeEndpoints {
			if err := swap(&r.NodeEndpoints[i].Host, &r.NodeEndpoints[i].Port); err != nil {
				return nil, err
			}
		}
	case *kmsg.ShareAcknowledgeResponse:
		if len(r.NodeEndpoints) == 0 {
			return frame, nil
		}
		for i := range r.NodeEndpoints {
			if err := swap(&r.NodeEndpoints[i].Host, &r.NodeEndpoints[i].Port); err != nil {
				return nil, err
			}
		}
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			if err := swap(&r.Brokers[i].Host, &r.Brokers[i].Port); err != nil {
				return nil, err
			}
		}
	case *kmsg.FindCoordinatorResponse:
		if err := swap(&r.Host, &r.Port); err != nil {
			return nil, err
		}
		for i := range r.Coordinators {
			if err := swap(&r.Coordinators[i].Host, &r.Coordinators[i].Port); err != nil {
				return nil, err
			}
		}
	}
	out := append([]byte(nil), frame[:4]...)
	if resp.IsFlexible() {
		out = append(out, 0) // no header tags
	}
	return resp.AppendTo(out), nil
}

// pass waits while the gateway is held; false once it is cut or closed.
func (g *gateway) pass() bool {
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-g.ctx.Done():
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.closed && !g.cut
}

// hold stops (on) or lets go (off) every byte the gateway carries, both
// ways, and every new connection before it is dialed: the member's links
// as a stopped process would leave them.
func (g *gateway) hold(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case on && g.held == nil:
		g.held = make(chan struct{})
	case !on && g.held != nil:
		close(g.held)
		g.held = nil
	}
}

// cutLinks closes every connection and refuses new ones for good, still
// listening, so that no other gateway is given its ports while the client may
// still try them: nothing the client sends afterwards reaches a broker.
func (g *gateway) cutLinks() {
	g.mu.Lock()
	g.cut = true
	for c := range g.conns {
		c.Close()
	}
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
	g.mu.Unlock()
}

func (g *gateway) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// close stops listening and cuts every connection.
func (g *gateway) close() {
	g.mu.Lock()
	g.closed = true
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
	for _, ln := range g.lns {
		ln.Close()
	}
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.stop()
	g.wg.Wait()
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > 256<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

func writeFrame(w io.Writer, frame []byte) error {
	b := make([]byte, 4, 4+len(frame))
	binary.BigEndian.PutUint32(b, uint32(len(frame)))
	_, err := w.Write(append(b, frame...))
	return err
}
