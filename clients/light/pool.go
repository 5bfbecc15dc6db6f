package light

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Pool sends members' requests to brokers over connections it opens as
// its queues need them.
//
// A lane is one queue of requests and the connections that serve it. A
// shared pool has one lane per broker for every member (the consumer
// protocol: a ConsumerGroupHeartbeat carries its member id); an own pool
// has one lane per member and broker, with one connection (the classic
// protocol, whose parked JoinGroup and SyncGroup would stall every member
// behind them on a shared connection).
//
// A broker reads a connection's next request only after it answered the
// last (SocketServer mutes the channel while a request is in flight), so
// a request written behind others waits in the broker's socket where
// nothing can take it back. A lane therefore writes at most Window
// requests on a connection at once and keeps the rest in its own queue,
// in the order the members asked; a member that gives up a request still
// in the queue (its run ends, it leaves) drops it there, and it is never
// sent. A written request is waited for until it is answered, its member
// gives up (the answer is then thrown away) or its timeout passes (the
// connection is then broken, as Kafka's clients break one after
// request.timeout.ms).
//
// Sizing: a shared lane opens another connection whenever its queue holds
// more than QueuePerConn requests for each connection it has open or
// being dialed, up to its most connections (MaxShared unless the pool was
// made with another bound). A queued request waits for about
// queued/connections answer times, so the lane keeps that wait near
// QueuePerConn answer times whatever the broker's speed and the group's
// size: a steady group whose heartbeats come spread over the interval
// queues nothing and keeps a few connections, a join wave or a
// coordinator move (every member asking at once) opens many. The bound
// keeps the harness's requests inside the broker (one per connection
// being served, Window-1 more waiting in its socket) below Kafka's
// queued.max.requests of 500, so that a busy broker's backlog stays in
// the lanes, where a request given up is dropped before it is sent. A
// member has at most one request asked at a time, so a lane never opens
// more than members/QueuePerConn connections.
//
// Dials are shaped so that the harness does not flood a broker's accept
// queue (Kafka's socket.listen.backlog.size is 50 by default; a connect
// beyond it waits for the client's SYN retransmits): at most MaxDialing
// connects to one address are in flight from one pool at once.
type Pool struct {
	mapAddr func(string) string
	dialFn  func(ctx context.Context, network, addr string) (net.Conn, error)
	client  string
	stats   *Stats
	shared  bool // one lane per broker for every member; else one per member
	max     int  // connections per lane
	window  int  // requests written and not answered per connection
	readBuf int

	mu     sync.Mutex
	lanes  map[laneKey]*lane
	gates  map[string]chan struct{}
	closes int // counts Close calls
}

const (
	// MaxDialing bounds the connects in flight from one Pool to one
	// address.
	MaxDialing = 32
	// MaxShared is a shared lane's most connections by default.
	MaxShared = 128
	// QueuePerConn is how many queued requests per connection make a
	// shared lane open another.
	QueuePerConn = 4
	// Window is how many requests a shared connection has written and not
	// yet answered at most: the one the broker serves and the next,
	// waiting in its socket so that the broker reads it as soon as it
	// answered the first.
	Window = 2
)

type laneKey struct {
	addr   string
	member int // -1 in a shared pool
}

// NewSharedPool makes a pool whose members share one lane per broker, of
// up to maxConns connections (0: MaxShared).
func NewSharedPool(maxConns int, client string, stats *Stats) *Pool {
	if maxConns <= 0 {
		maxConns = MaxShared
	}
	return newPool(client, stats, true, maxConns, Window, 1024)
}

// NewOwnPool makes a pool that gives each member its own connection to
// each broker, carrying one request at a time.
func NewOwnPool(client string, stats *Stats) *Pool {
	return newPool(client, stats, false, 1, 1, 1024)
}

// DialWith makes the pool connect with dial instead of TCP (a cluster
// served in this process connects without a socket); call it before the
// pool's first request.
func (p *Pool) DialWith(dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	p.dialFn = dial
}

func newPool(client string, stats *Stats, shared bool, maxConns, window, readBuf int) *Pool {
	return &Pool{client: client, stats: stats, shared: shared, max: maxConns, window: window, readBuf: readBuf,
		lanes: map[laneKey]*lane{}, gates: map[string]chan struct{}{}}
}

// lane is one queue of requests to one address and the connections that
// serve it.
type lane struct {
	p    *Pool
	addr string
	gate chan struct{}

	mu         sync.Mutex
	conns      []*Conn
	dialing    int
	q          []*call // queued calls, oldest first (dropped ones are skipped)
	nq         int     // calls in q still queued
	closed     bool
	dialFailed time.Time // the last failed dial, while connections remain
}

func (p *Pool) lane(addr string, member int) *lane {
	k := laneKey{addr, -1}
	if !p.shared {
		k.member = member
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lanes[k]
	if l == nil {
		gate := p.gates[addr]
		if gate == nil {
			gate = make(chan struct{}, MaxDialing)
			p.gates[addr] = gate
		}
		l = &lane{p: p, addr: addr, gate: gate}
		p.lanes[k] = l
	}
	return l
}

// Do sends req to addr for member and waits for the answer. The request
// waits in the lane's queue until a connection has room (as long as ctx
// allows: given up there, it is dropped and never sent), then is written
// and waited for at most timeout (0: no bound) once written.
func (p *Pool) Do(ctx context.Context, addr string, member int, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cl := &call{req: req, buf: encode(req, p.client), asked: time.Now(), grant: make(chan *Conn, 1), done: make(chan result, 1)}
	l := p.lane(addr, member)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errClosed
	}
	var c *Conn
	if l.nq == 0 { // nobody queued ahead: take a free slot at once
		c = l.free()
	}
	if c != nil {
		c.busy++
		cl.st = granted
		l.mu.Unlock()
	} else {
		l.q = append(l.q, cl)
		l.nq++
		l.grow()
		l.mu.Unlock()
		var err error
		if c, err = l.await(ctx, cl); err != nil {
			return nil, err
		}
	}
	if err := c.write(cl); err != nil {
		return nil, err
	}
	return c.await(ctx, cl, timeout)
}

// await waits in the queue for a connection.
func (l *lane) await(ctx context.Context, cl *call) (*Conn, error) {
	select {
	case c := <-cl.grant:
		return c, nil
	case r := <-cl.done:
		return nil, r.err
	case <-ctx.Done():
	}
	l.mu.Lock()
	st := cl.st
	if st == queued {
		cl.st = dropped
		l.nq--
	}
	l.mu.Unlock()
	switch st {
	case queued:
		l.p.stats.dropped(cl.req.Key())
	case granted: // handed a slot as ctx ended: pass it on, unwritten
		l.release(<-cl.grant)
		l.p.stats.dropped(cl.req.Key())
	}
	return nil, ctx.Err()
}

// free returns the connection with the fewest calls that still has room,
// or nil. Called with l.mu held.
func (l *lane) free() *Conn {
	var best *Conn
	for _, c := range l.conns {
		if c.busy < l.p.window && (best == nil || c.busy < best.busy) && !c.Broken() {
			best = c
		}
	}
	return best
}

// pop takes the oldest queued call. Called with l.mu held, nq > 0.
func (l *lane) pop() *call {
	for {
		cl := l.q[0]
		l.q[0] = nil
		l.q = l.q[1:]
		if cl.st == queued {
			l.nq--
			if l.nq == 0 {
				l.q = nil // let the queue's array go
			}
			return cl
		}
	}
}

// dispatch hands queued calls the free slots. Called with l.mu held.
func (l *lane) dispatch() {
	for l.nq > 0 {
		c := l.free()
		if c == nil {
			return
		}
		cl := l.pop()
		c.busy++
		cl.st = granted
		cl.grant <- c
	}
}

// grow dials connections while the queue holds more than QueuePerConn
// calls per connection open or being dialed (see Pool). Called with l.mu
// held.
func (l *lane) grow() {
	have := len(l.conns) + l.dialing
	if have > 0 && time.Since(l.dialFailed) < time.Second {
		return // the last dial failed: do not hammer a broker that refuses
	}
	for l.nq > QueuePerConn*have && have < l.p.max && l.dialing < MaxDialing {
		l.dialing++
		have++
		go l.dial()
	}
}

func (l *lane) dial() {
	p := l.p
	p.mu.Lock()
	closes := p.closes
	p.mu.Unlock()
	to := l.addr
	l.gate <- struct{}{}
	if p.mapAddr != nil {
		to = p.mapAddr(to)
	}
	dial := p.dialFn
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	nc, err := dial(ctx, "tcp", to)
	cancel()
	<-l.gate
	if err != nil {
		err = fmt.Errorf("dial %s: %w", to, err)
	}

	p.mu.Lock()
	spanned := p.closes != closes
	p.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dialing--
	if err == nil && (l.closed || spanned) {
		nc.Close() // the pool was closed while dialing
		err = errClosed
	}
	if err != nil {
		if len(l.conns) == 0 && l.dialing == 0 {
			l.fail(err) // no connection to be had: the members find out now
		} else {
			l.dialFailed = time.Now()
		}
		return
	}
	c := newConn(to, nc, l)
	l.conns = append(l.conns, c)
	l.dialFailed = time.Time{}
	p.stats.connOpened()
	go c.read(p.readBuf)
	l.dispatch()
	l.grow()
}

// fail fails every queued call with err. Called with l.mu held.
func (l *lane) fail(err error) {
	for _, cl := range l.q {
		if cl.st == queued {
			cl.st = failed
			cl.done <- result{err: err}
		}
	}
	l.q, l.nq = nil, 0
}

// release gives back a slot of c: an answer came, or a call granted it
// was given up unwritten.
func (l *lane) release(c *Conn) {
	l.mu.Lock()
	c.busy--
	l.dispatch()
	l.mu.Unlock()
}

// lost forgets a broken connection; a lane that still has calls queued
// dials again (a dial that fails then fails them).
func (l *lane) lost(c *Conn) {
	l.p.stats.connClosed()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, x := range l.conns {
		if x == c {
			l.conns = append(l.conns[:i], l.conns[i+1:]...)
			break
		}
	}
	if !l.closed {
		l.dispatch()
		l.grow()
	}
}

// close closes the lane: its connections close, its queued calls fail.
func (l *lane) close() {
	l.mu.Lock()
	l.closed = true
	conns := slices.Clone(l.conns)
	l.fail(errClosed)
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Conns returns the connections open to addr from this pool.
func (p *Pool) Conns(addr string) int {
	p.mu.Lock()
	var ls []*lane
	for k, l := range p.lanes {
		if k.addr == addr {
			ls = append(ls, l)
		}
	}
	p.mu.Unlock()
	n := 0
	for _, l := range ls {
		l.mu.Lock()
		n += len(l.conns)
		l.mu.Unlock()
	}
	return n
}

// Forget closes member's lane to addr in a pool of own connections (the
// member moved to another coordinator), so that its connection does not
// stay open beside the new one; requests still queued there fail.
func (p *Pool) Forget(addr string, member int) {
	if p.shared {
		return
	}
	k := laneKey{addr, member}
	p.mu.Lock()
	l := p.lanes[k]
	delete(p.lanes, k)
	p.mu.Unlock()
	if l != nil {
		l.close()
	}
}

// Close closes every connection and fails every queued request. The pool
// can be used again afterwards; a dial that spans Close is dropped.
func (p *Pool) Close() {
	p.mu.Lock()
	lanes := p.lanes
	p.lanes = map[laneKey]*lane{}
	p.closes++
	p.mu.Unlock()
	for _, l := range lanes {
		l.close()
	}
}
