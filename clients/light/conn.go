package light

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errClosed is what a request gets on a connection that broke or closed.
var errClosed = errors.New("connection closed")

// Conn is one Kafka connection that pipelines requests: writes are
// serialized, and one reader goroutine matches answers to requests in
// order (a broker answers a connection's requests in the order it read
// them). A transport error breaks the connection for good; the Pool dials
// a new one.
type Conn struct {
	addr   string
	client string
	c      net.Conn
	stats  *Stats

	wmu     sync.Mutex
	corr    int32
	pending chan *call
	wbuf    []byte

	dead    chan struct{}
	deadErr atomic.Pointer[error]
	once    sync.Once
}

type call struct {
	sent time.Time
	corr int32
	req  kmsg.Request
	done chan result
}

type result struct {
	resp kmsg.Response
	err  error
}

// Dial opens a connection to addr with client id client that takes up
// to inflight requests written and not yet answered (a writer waits
// beyond them). The queue is allocated up front: a member's own
// connection wants a short one.
func Dial(ctx context.Context, addr, client string, inflight int, stats *Stats) (*Conn, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	c := &Conn{addr: addr, client: client, c: nc, stats: stats, pending: make(chan *call, max(inflight, 1)), dead: make(chan struct{})}
	go c.read()
	return c, nil
}

// Addr is the address the connection goes to.
func (c *Conn) Addr() string { return c.addr }

// Broken reports whether the connection can no longer carry requests.
func (c *Conn) Broken() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// Close closes the connection; requests in flight fail.
func (c *Conn) Close() { c.fail(errClosed) }

func (c *Conn) fail(err error) {
	c.once.Do(func() {
		c.deadErr.Store(&err)
		close(c.dead)
		c.c.Close()
	})
}

func (c *Conn) err() error {
	if p := c.deadErr.Load(); p != nil {
		return *p
	}
	return errClosed
}

// Do sends req (at the version it carries) and waits for its answer or
// ctx's end. A request abandoned by ctx is still answered by the broker;
// the answer is dropped.
func (c *Conn) Do(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	cl := &call{req: req, done: make(chan result, 1)}
	c.wmu.Lock()
	if c.Broken() {
		c.wmu.Unlock()
		return nil, c.err()
	}
	c.corr++
	cl.corr = c.corr
	buf := c.wbuf[:0]
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(cl.corr))
	buf = kbin.AppendNullableString(buf, &c.client)
	if req.IsFlexible() {
		buf = append(buf, 0) // request header v2: no tagged fields
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	select {
	case c.pending <- cl:
	case <-c.dead:
		c.wmu.Unlock()
		return nil, c.err()
	case <-ctx.Done():
		c.wmu.Unlock()
		return nil, ctx.Err()
	}
	c.stats.sent(req.Key())
	cl.sent = time.Now()
	_, err := c.c.Write(buf)
	if cap(buf) <= 64<<10 {
		c.wbuf = buf // keep small buffers; drop the leader's big SyncGroup
	} else {
		c.wbuf = nil
	}
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("write %s to %s: %w", kmsg.NameForKey(req.Key()), c.addr, err))
	}
	select {
	case r := <-cl.done:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read answers the pending calls in order until the connection breaks.
func (c *Conn) read() {
	br := bufio.NewReaderSize(c.c, 4096)
	var size [4]byte
	for {
		var cl *call
		select {
		case cl = <-c.pending:
		case <-c.dead:
			c.drain()
			return
		}
		if _, err := io.ReadFull(br, size[:]); err != nil {
			c.fail(fmt.Errorf("read from %s: %w", c.addr, err))
			cl.done <- result{err: c.err()}
			c.drain()
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(br, body); err != nil {
			c.fail(fmt.Errorf("read from %s: %w", c.addr, err))
			cl.done <- result{err: c.err()}
			c.drain()
			return
		}
		resp, err := decode(cl, body)
		if err != nil {
			c.fail(err)
			cl.done <- result{err: err}
			c.drain()
			return
		}
		c.stats.answered(cl.req.Key(), time.Since(cl.sent))
		cl.done <- result{resp: resp}
	}
}

func (c *Conn) drain() {
	for {
		select {
		case cl := <-c.pending:
			cl.done <- result{err: c.err()}
		default:
			return
		}
	}
}

func decode(cl *call, body []byte) (kmsg.Response, error) {
	name := kmsg.NameForKey(cl.req.Key())
	r := kbin.Reader{Src: body}
	if got := r.Int32(); got != cl.corr {
		return nil, fmt.Errorf("%s answer has correlation id %d, want %d", name, got, cl.corr)
	}
	if cl.req.IsFlexible() && cl.req.Key() != int16(kmsg.ApiVersions) { // ApiVersions answers with header v0
		for n := r.Uvarint(); n > 0; n-- {
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
	}
	if !r.Ok() {
		return nil, fmt.Errorf("%s answer header is truncated", name)
	}
	resp := cl.req.ResponseKind()
	resp.SetVersion(cl.req.GetVersion())
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("decode %s v%d answer: %w", name, cl.req.GetVersion(), err)
	}
	return resp, nil
}

// Stats counts the requests members sent and the answers they got, per
// API key. Safe for concurrent use.
type Stats struct {
	sentN     [128]atomic.Int64
	answeredN [128]atomic.Int64
	// latency[key][b] counts answers whose latency (write to answer)
	// fell in bucket b: quarter-octaves of microseconds.
	latency [128][latencyBuckets]atomic.Int64

	mu     sync.Mutex
	errs   map[string]int64
	sample map[string]string
}

// Error counts an error a member got (a Kafka error by its name, a
// transport error or timeout as "transport").
func (s *Stats) Error(err error) {
	if s == nil || err == nil {
		return
	}
	name := "transport"
	var ke *kerr.Error
	if errors.As(err, &ke) {
		name = ke.Message
	}
	s.mu.Lock()
	if s.errs == nil {
		s.errs, s.sample = map[string]int64{}, map[string]string{}
	}
	s.errs[name]++
	s.sample[name] = err.Error() // the latest, to say what a transport error was
	s.mu.Unlock()
}

// Samples returns the latest error text of each error name.
func (s *Stats) Samples() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.sample))
	for k, v := range s.sample {
		out[k] = v
	}
	return out
}

// Errors returns the errors counted so far by name.
func (s *Stats) Errors() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.errs))
	for k, v := range s.errs {
		out[k] = v
	}
	return out
}

func (s *Stats) sent(key int16) {
	if s != nil && key >= 0 && int(key) < len(s.sentN) {
		s.sentN[key].Add(1)
	}
}

const latencyBuckets = 4 * 40

func bucketOf(d time.Duration) int {
	us := float64(d.Microseconds())
	if us < 1 {
		return 0
	}
	return min(int(4*math.Log2(us)), latencyBuckets-1)
}

// bucketTop is the upper bound of bucket b.
func bucketTop(b int) time.Duration {
	return time.Duration(math.Exp2(float64(b+1)/4)) * time.Microsecond
}

func (s *Stats) answered(key int16, d time.Duration) {
	if s != nil && key >= 0 && int(key) < len(s.answeredN) {
		s.answeredN[key].Add(1)
		s.latency[key][bucketOf(d)].Add(1)
	}
}

// Latencies is a snapshot of the latency histogram of one API.
type Latencies [latencyBuckets]int64

// Latencies returns the latency histogram of API key so far.
func (s *Stats) Latencies(key int16) Latencies {
	var l Latencies
	for b := range l {
		l[b] = s.latency[key][b].Load()
	}
	return l
}

// Since returns what l counted after earlier.
func (l Latencies) Since(earlier Latencies) Latencies {
	for b := range l {
		l[b] -= earlier[b]
	}
	return l
}

// Quantile returns an upper bound of the q-quantile (within a quarter
// octave), 0 when l is empty.
func (l Latencies) Quantile(q float64) time.Duration {
	var n int64
	for _, c := range l {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for b, c := range l {
		seen += c
		if seen >= max(rank, 1) {
			return bucketTop(b)
		}
	}
	return bucketTop(latencyBuckets - 1)
}

// Answered is the number of answers received so far, over every API.
func (s *Stats) Answered() int64 {
	var n int64
	for i := range s.answeredN {
		n += s.answeredN[i].Load()
	}
	return n
}

// AnsweredBy returns the answers received so far per API name.
func (s *Stats) AnsweredBy() map[string]int64 {
	out := map[string]int64{}
	for i := range s.answeredN {
		if n := s.answeredN[i].Load(); n > 0 {
			out[kmsg.NameForKey(int16(i))] = n
		}
	}
	return out
}

// Pool hands members connections to each address: member i uses slot
// i mod size (size at least the member count gives each its own). A broken connection is replaced on the next Get.
//
// Dials are shaped so that the harness does not flood a broker's accept
// queue (Kafka's socket.listen.backlog.size is 50 by default; a connect
// beyond it waits for the client's SYN retransmits): the members of one
// slot wait for the one dial in progress instead of each dialing, and at
// most MaxDialing connects to one address are in flight at once.
type Pool struct {
	mapAddr  func(string) string
	client   string
	inflight int
	stats    *Stats
	mu       sync.Mutex
	slots    map[string]map[int]*Conn
	dialing  map[slotKey]*dialCall
	gates    map[string]chan struct{}
	closes   int // counts Close calls: a dial that spans one is dropped
	size     int
}

// MaxDialing bounds the connects in flight from one Pool to one address.
const MaxDialing = 32

type slotKey struct {
	addr string
	slot int
}

// dialCall is a dial in progress; done is closed when c or err is set.
type dialCall struct {
	done chan struct{}
	c    *Conn
	err  error
}

// NewPool makes a pool of size connections per address, each taking up
// to inflight requests at once.
func NewPool(size, inflight int, client string, stats *Stats) *Pool {
	return &Pool{client: client, inflight: inflight, stats: stats, slots: map[string]map[int]*Conn{},
		dialing: map[slotKey]*dialCall{}, gates: map[string]chan struct{}{}, size: max(size, 1)}
}

// Get returns member's connection to addr, dialing it if needed (or
// waiting for the dial another member of its slot started).
func (p *Pool) Get(ctx context.Context, addr string, member int) (*Conn, error) {
	key := slotKey{addr, member % p.size}
	p.mu.Lock()
	conns := p.slots[addr]
	if conns == nil {
		conns = map[int]*Conn{}
		p.slots[addr] = conns
	}
	if c := conns[key.slot]; c != nil && !c.Broken() {
		p.mu.Unlock()
		return c, nil
	}
	if d := p.dialing[key]; d != nil {
		p.mu.Unlock()
		select {
		case <-d.done:
			return d.c, d.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d := &dialCall{done: make(chan struct{})}
	p.dialing[key] = d
	closes := p.closes
	gate := p.gates[addr]
	if gate == nil {
		gate = make(chan struct{}, MaxDialing)
		p.gates[addr] = gate
	}
	p.mu.Unlock()

	d.c, d.err = p.dial(ctx, addr, gate)
	p.mu.Lock()
	delete(p.dialing, key)
	if d.err == nil {
		if p.closes == closes {
			conns[key.slot] = d.c
		} else {
			d.c.Close() // the pool was closed while dialing
			d.c, d.err = nil, errClosed
		}
	}
	p.mu.Unlock()
	close(d.done)
	return d.c, d.err
}

func (p *Pool) dial(ctx context.Context, addr string, gate chan struct{}) (*Conn, error) {
	select {
	case gate <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("dial %s: %w", addr, ctx.Err())
	}
	defer func() { <-gate }()
	to := addr
	if p.mapAddr != nil {
		to = p.mapAddr(addr)
	}
	return Dial(ctx, to, p.client, p.inflight, p.stats)
}

// Close closes every connection.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, conns := range p.slots {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}
	p.slots = map[string]map[int]*Conn{}
	p.closes++
}
