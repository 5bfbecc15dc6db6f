// Package wiretap observes the Kafka requests and responses on a client's
// connections without changing a byte: a kgo.Dialer wrapper whose
// connections decode the frames going by (kmsg) and hand them to an
// Observer. Calls is the Observer that reports a member's group requests
// and their answers by the clients contract: clients/kgoref uses it for kgo
// (kgo has no hook that carries a request or its answer: kgo.HookBrokerWrite
// and HookBrokerRead give keys, sizes and timings only) and clients/java for
// the Java consumer. The harness's contract suite uses the package as an
// independent witness of what members send.
//
// Timing: Request is called before the request's bytes are written, and
// Response once the whole response frame has been read, before the client
// gets it, so an observer that reports calls brackets the real round trip.
//
// Limits: a connection the client wraps in TLS or SASL after dialing cannot
// be read (kgo's DialTLSConfig wraps inside the dialer, which this sees
// through); a frame that does not parse stops the observation of that
// connection (Observer.Broken), and its requests in flight are Lost.
package wiretap

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DialFunc is kgo.Dialer's function.
type DialFunc = func(ctx context.Context, network, host string) (net.Conn, error)

// Observer receives what goes by. Its methods are called from the
// client's connection goroutines, one connection at a time per
// connection, and must not block.
type Observer interface {
	// Wants says whether requests of key are decoded and reported.
	Wants(key int16) bool
	// Request is called with a decoded request just before it is written.
	// It returns a token handed back with its answer, or nil when the
	// answer does not matter.
	Request(req kmsg.Request) any
	// Response is called with the decoded response of a request whose
	// token was not nil.
	Response(token any, resp kmsg.Response)
	// Lost is called for a request with a token that gets no response:
	// the write failed, the connection closed, or observing broke.
	Lost(token any, err error)
	// Broken reports a connection that could not be observed any more.
	Broken(err error)
}

// HostObserver is an Observer that wants to know which broker address a
// request was written to: RequestOn is called instead of Request, with the
// host the client dialed (the broker's address as the client knows it).
type HostObserver interface {
	Observer
	RequestOn(host string, req kmsg.Request) any
}

// Dialer wraps dial so that every connection it makes is observed by obs.
func Dialer(dial DialFunc, obs Observer) DialFunc {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		c, err := dial(ctx, network, host)
		if err != nil {
			return nil, err
		}
		return &conn{Conn: c, obs: obs, host: host, inflight: map[int32]*pending{}}, nil
	}
}

type pending struct {
	key, version int16
	token        any
}

type conn struct {
	net.Conn
	obs  Observer
	host string

	mu       sync.Mutex
	wbuf     []byte
	rbuf     []byte
	inflight map[int32]*pending
	broken   bool
}

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	var written []any
	if !c.broken {
		c.wbuf = append(c.wbuf, p...)
		for {
			frame, rest, ok := nextFrame(c.wbuf)
			if !ok {
				break
			}
			c.wbuf = rest
			if err := c.request(frame, &written); err != nil {
				c.breakLocked(err)
				break
			}
		}
	}
	c.mu.Unlock()
	n, err := c.Conn.Write(p)
	if err != nil {
		c.mu.Lock()
		lost := c.takeLocked()
		c.mu.Unlock()
		for _, tok := range lost {
			c.obs.Lost(tok, fmt.Errorf("writing to the connection failed: %w", err))
		}
	}
	return n, err
}

// request parses one request frame; mu is held.
func (c *conn) request(frame []byte, written *[]any) error {
	rd := kbin.Reader{Src: frame}
	key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
	rd.NullableString() // client id
	if err := rd.Complete(); err != nil {
		return fmt.Errorf("request header: %w", err)
	}
	if !c.obs.Wants(key) {
		return nil
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return fmt.Errorf("request key %d is unknown to kmsg", key)
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		skipTags(&rd)
		if err := rd.Complete(); err != nil {
			return fmt.Errorf("%s v%d request header: %w", kmsg.NameForKey(key), version, err)
		}
	}
	if err := req.ReadFrom(rd.Src); err != nil {
		return fmt.Errorf("%s v%d request: %w", kmsg.NameForKey(key), version, err)
	}
	var tok any
	if ho, ok := c.obs.(HostObserver); ok {
		tok = ho.RequestOn(c.host, req)
	} else {
		tok = c.obs.Request(req)
	}
	if tok != nil {
		c.inflight[corr] = &pending{key: key, version: version, token: tok}
		*written = append(*written, tok)
	}
	return nil
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	type answer struct {
		token any
		resp  kmsg.Response
	}
	var got []answer
	c.mu.Lock()
	if !c.broken && n > 0 {
		c.rbuf = append(c.rbuf, p[:n]...)
		for {
			frame, rest, ok := nextFrame(c.rbuf)
			if !ok {
				break
			}
			c.rbuf = rest
			if len(frame) < 4 {
				c.breakLocked(errors.New("response frame shorter than its correlation id"))
				break
			}
			corr := int32(binary.BigEndian.Uint32(frame))
			pr, ok := c.inflight[corr]
			if !ok {
				continue
			}
			delete(c.inflight, corr)
			resp, derr := decodeResponse(pr.key, pr.version, frame[4:])
			if derr != nil {
				c.inflight[corr] = pr // lost with the rest
				c.breakLocked(derr)
				break
			}
			got = append(got, answer{pr.token, resp})
		}
	}
	var lost []any
	if err != nil || c.broken {
		lost = c.takeLocked()
	}
	c.mu.Unlock()
	for _, a := range got {
		c.obs.Response(a.token, a.resp)
	}
	for _, tok := range lost {
		why := errors.New("the connection could not be observed any more")
		if err != nil {
			why = fmt.Errorf("connection closed before the answer: %w", err)
		}
		c.obs.Lost(tok, why)
	}
	return n, err
}

func (c *conn) Close() error {
	c.mu.Lock()
	lost := c.takeLocked()
	c.mu.Unlock()
	for _, tok := range lost {
		c.obs.Lost(tok, errors.New("connection closed before the answer"))
	}
	return c.Conn.Close()
}

func (c *conn) takeLocked() []any {
	var out []any
	for corr, pr := range c.inflight {
		out = append(out, pr.token)
		delete(c.inflight, corr)
	}
	return out
}

func (c *conn) breakLocked(err error) {
	if c.broken {
		return
	}
	c.broken = true
	c.wbuf, c.rbuf = nil, nil
	c.obs.Broken(err)
}

// nextFrame splits one size-prefixed Kafka frame off b.
func nextFrame(b []byte) (frame, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, b, false
	}
	size := int(int32(binary.BigEndian.Uint32(b)))
	if size < 0 || len(b) < 4+size {
		return nil, b, false
	}
	return b[4 : 4+size], b[4+size:], true
}

func skipTags(rd *kbin.Reader) {
	for n := rd.Uvarint(); n > 0; n-- {
		rd.Uvarint()
		rd.Span(int(rd.Uvarint()))
	}
}

// decodeResponse decodes a response body (after the correlation id).
func decodeResponse(key, version int16, b []byte) (kmsg.Response, error) {
	resp := kmsg.ResponseForKey(key)
	if resp == nil {
		return nil, fmt.Errorf("response key %d is unknown to kmsg", key)
	}
	resp.SetVersion(version)
	rd := kbin.Reader{Src: b}
	// Response header v1 (flexible versions) has tagged fields, except
	// ApiVersions, whose response header is always v0.
	if resp.IsFlexible() && key != kmsg.ApiVersions.Int16() {
		skipTags(&rd)
		if err := rd.Complete(); err != nil {
			return nil, fmt.Errorf("%s v%d response header: %w", kmsg.NameForKey(key), version, err)
		}
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		return nil, fmt.Errorf("%s v%d response: %w", kmsg.NameForKey(key), version, err)
	}
	return resp, nil
}
