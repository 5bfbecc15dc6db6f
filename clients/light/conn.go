package light

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errClosed is what a request gets on a connection that broke or closed.
var errClosed = errors.New("connection closed")

// call is one request on its way: queued in its lane until a connection
// has room, then written, then answered; or dropped from the queue, never
// written, if its member gives it up first.
type call struct {
	req   kmsg.Request
	buf   []byte // the framed request; its correlation id is set when written
	corr  int32
	asked time.Time // when the member asked
	sent  time.Time // when it was written
	grant chan *Conn
	done  chan result
	st    callState // guarded by the lane's mutex
}

type callState uint8

const (
	queued  callState = iota // in the lane's queue
	granted                  // handed a connection (counted in its busy)
	dropped                  // given up while queued: never written
	failed                   // the lane failed it while queued (no connection could be had)
)

type result struct {
	resp kmsg.Response
	err  error
}

// Conn is one Kafka connection of a lane. Writes are serialized, and one
// reader goroutine matches answers to the written requests in order (a
// broker answers a connection's requests in the order it read them). A
// transport error, or a request left unanswered past its timeout, breaks
// the connection for good; its lane dials another when it needs one.
type Conn struct {
	addr  string
	nc    net.Conn
	stats *Stats
	lane  *lane
	busy  int // guarded by lane.mu: calls granted this connection and not yet answered

	wmu  sync.Mutex
	corr int32

	pmu     sync.Mutex
	pending []*call // written, oldest first

	dead    chan struct{}
	deadErr atomic.Pointer[error]
	once    sync.Once
}

func newConn(addr string, nc net.Conn, l *lane) *Conn {
	return &Conn{addr: addr, nc: nc, stats: l.p.stats, lane: l, dead: make(chan struct{})}
}

// Broken reports whether the connection can no longer carry requests.
func (c *Conn) Broken() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// Close closes the connection; requests written and not answered fail.
func (c *Conn) Close() { c.fail(errClosed) }

func (c *Conn) fail(err error) {
	c.once.Do(func() {
		c.deadErr.Store(&err)
		close(c.dead)
		c.nc.Close()
	})
}

func (c *Conn) err() error {
	if p := c.deadErr.Load(); p != nil {
		return *p
	}
	return errClosed
}

// encode frames req with a placeholder correlation id (set by write).
func encode(req kmsg.Request, client string) []byte {
	buf := make([]byte, 0, 128)
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = append(buf, 0, 0, 0, 0) // correlation id
	buf = kbin.AppendNullableString(buf, &client)
	if req.IsFlexible() {
		buf = append(buf, 0) // request header v2: no tagged fields
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// write sends cl, which holds a slot of c (busy), and hands it to the
// reader for its answer.
func (c *Conn) write(cl *call) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.Broken() {
		return c.err()
	}
	c.corr++
	cl.corr = c.corr
	binary.BigEndian.PutUint32(cl.buf[8:], uint32(cl.corr))
	c.pmu.Lock()
	c.pending = append(c.pending, cl)
	c.pmu.Unlock()
	cl.sent = time.Now()
	c.stats.sent(cl.req.Key(), cl.sent.Sub(cl.asked))
	_, err := c.nc.Write(cl.buf)
	cl.buf = nil
	if err != nil {
		err = fmt.Errorf("write %s to %s: %w", kmsg.NameForKey(cl.req.Key()), c.addr, err)
		c.fail(err)
		return err
	}
	return nil
}

// await waits for the answer to cl, written on c. A member that gives up
// (ctx) leaves the answer to be thrown away; no answer within timeout
// breaks the connection, as Kafka's clients do after request.timeout.ms (a
// connection whose oldest request goes unanswered that long is dead or
// out of step).
func (c *Conn) await(ctx context.Context, cl *call, timeout time.Duration) (kmsg.Response, error) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case r := <-cl.done:
		return r.resp, r.err
	case <-ctx.Done():
		c.stats.void(cl.req.Key())
		return nil, ctx.Err()
	case <-expired:
		select {
		case r := <-cl.done:
			return r.resp, r.err
		default:
		}
		c.stats.void(cl.req.Key())
		err := fmt.Errorf("%s to %s: no answer within %s: %w", kmsg.NameForKey(cl.req.Key()), c.addr, timeout, context.DeadlineExceeded)
		c.fail(err)
		return nil, err
	}
}

// pop takes the oldest written call, nil if none is waiting.
func (c *Conn) pop() *call {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if len(c.pending) == 0 {
		return nil
	}
	cl := c.pending[0]
	n := copy(c.pending, c.pending[1:])
	c.pending[n] = nil
	c.pending = c.pending[:n]
	return cl
}

// read answers the written calls in order until the connection breaks,
// then fails the calls still waiting on it and tells the lane. It reads
// also while no call waits, so that a broker closing an idle connection
// (its node stopping) closes it here at once.
func (c *Conn) read(bufSize int) {
	br := bufio.NewReaderSize(c.nc, bufSize)
	for {
		body, err := readFrame(br)
		if err != nil {
			c.fail(fmt.Errorf("read from %s: %w", c.addr, err))
			break
		}
		cl := c.pop()
		if cl == nil {
			c.fail(fmt.Errorf("read from %s: an answer with no request waiting", c.addr))
			break
		}
		resp, err := decode(cl, body)
		if err != nil {
			c.fail(err)
			cl.done <- result{err: err}
			break
		}
		c.stats.answered(cl.req.Key(), time.Since(cl.asked))
		cl.done <- result{resp: resp}
		c.lane.release(c)
	}
	c.pmu.Lock()
	left := c.pending
	c.pending = nil
	c.pmu.Unlock()
	for _, cl := range left {
		cl.done <- result{err: c.err()}
	}
	c.lane.lost(c)
}

// maxAnswer bounds an answer's size prefix: a larger one means the stream
// is out of step.
const maxAnswer = 256 << 20

func readFrame(br *bufio.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxAnswer {
		return nil, fmt.Errorf("answer size %d is beyond %d bytes", n, maxAnswer)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, err
	}
	return body, nil
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
