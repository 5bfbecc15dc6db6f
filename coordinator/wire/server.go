package wire

import (
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

// maxRequestSize is socket.request.max.bytes (104857600): a larger size
// prefix makes Kafka close the connection (InvalidReceiveException).
const maxRequestSize = 100 * 1024 * 1024

// Server is a single-node Kafka-protocol server: topics and their logs,
// idempotent produce, fetch, and the group APIs served by a Coordinator.
//
// Concurrency: one goroutine accepts, one goroutine per connection serves
// its requests one at a time (Kafka mutes a connection until its response
// is sent, so responses leave in request order), and one goroutine ticks
// the coordinator. All state below mu is guarded by mu; a parked group
// request and a fetch waiting for data wait without holding it. The set of
// connections has its own lock, so that accepting a connection never waits
// for the coordinator (with thousands of connections busy, each accept
// queued behind their requests: a group of 10,000 classic members, a
// connection each, took minutes to connect).
type Server struct {
	cfg      Config
	versions map[kmsg.Key]apiRange // what ApiVersions advertises
	ln       net.Listener
	host     string
	port     int32

	mu          sync.Mutex
	topics      map[string]*topic
	topicIDs    map[[16]byte]*topic
	producerIDs producerIDs
	coord       Coordinator
	parked      map[Ticket]chan kmsg.Response
	share       *shareLeader // nil unless cfg.ShareFetch
	// dataCh is closed and replaced on every append, to wake waiting
	// fetches.
	dataCh chan struct{}

	connMu  sync.Mutex
	conns   map[net.Conn]struct{}
	connSeq atomic.Uint64 // numbers connections, for share sessions
	// last is the latest time given to the coordinator.
	last time.Time

	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Start loads the data directory (topics, batches, producer state),
// creates __consumer_offsets if it is missing, replays it into a new
// coordinator, and starts serving on cfg.Addr.
func Start(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		versions: versionsFor(cfg.Version, !cfg.DisableConsumerProtocol, cfg.ShareFetch),
		topics:   map[string]*topic{},
		topicIDs: map[[16]byte]*topic{},
		parked:   map[Ticket]chan kmsg.Response{},
		dataCh:   make(chan struct{}),
		conns:    map[net.Conn]struct{}{},
		done:     make(chan struct{}),
	}
	if err := s.producerIDs.load(cfg.DataDir); err != nil {
		return nil, err
	}
	if err := s.loadTopics(); err != nil {
		s.closeTopics()
		return nil, err
	}
	if t := s.topics[offsetsTopic]; t == nil {
		if _, err := s.createTopic(offsetsTopic, cfg.OffsetsPartitions, true); err != nil {
			s.closeTopics()
			return nil, err
		}
	} else if len(t.partitions) != cfg.OffsetsPartitions {
		s.closeTopics()
		return nil, fmt.Errorf("data directory %s holds %s with %d partitions, but OffsetsPartitions is %d; groups would map to other partitions, so start with %d or a new directory",
			cfg.DataDir, offsetsTopic, len(t.partitions), cfg.OffsetsPartitions, len(t.partitions))
	}
	if err := s.loadCoordinator(s.now()); err != nil {
		s.closeTopics()
		return nil, err
	}
	if cfg.ShareFetch {
		if err := s.startShare(); err != nil {
			s.closeTopics()
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		s.closeTopics()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() {
		ln.Close()
		s.closeTopics()
		return nil, fmt.Errorf("listen address %s is not on loopback; the embedded cluster keeps all traffic on this machine", addr)
	}
	s.ln = ln
	s.host, s.port = addr.IP.String(), int32(addr.Port)
	s.wg.Add(2)
	go s.accept()
	go s.ticker()
	cfg.Logf("wire: serving Kafka %s as node %d on %s (data directory %q)", cfg.Version, cfg.NodeID, ln.Addr(), cfg.DataDir)
	return s, nil
}

// WithCoordinator runs fn with the server's coordinator under the server's
// lock, so nothing else calls it meanwhile: for checks of its state
// (coordinator.State, "replayed equals live"). fn gets nil if the last
// load of the log failed. fn must not call the Coordinator's methods that
// change state, or the log and the coordinator part ways.
func (s *Server) WithCoordinator(fn func(Coordinator)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.coord)
}

// Addr returns the address the server listens on, host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops serving, closes every connection, waits for every goroutine
// and closes the segment files. A server started again on the same data
// directory continues where this one stopped.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		err := s.ln.Close()
		s.connMu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.connMu.Unlock()
		s.wg.Wait()
		s.mu.Lock()
		s.closeErr = errors.Join(err, s.closeTopics())
		s.mu.Unlock()
	})
	return s.closeErr
}

// Restart closes the server and starts a new one with the same
// configuration on the same data directory and the same address, as a
// broker restart does: clients reconnect to the address they know and find
// the same records, commits and groups, the groups loaded from the log.
// The old Server must not be used again.
func (s *Server) Restart() (*Server, error) {
	addr := s.Addr()
	if err := s.Close(); err != nil {
		return nil, fmt.Errorf("restart: close: %w", err)
	}
	cfg := s.cfg
	cfg.Addr = addr
	ns, err := Start(cfg)
	if err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	return ns, nil
}

func (s *Server) closeTopics() error {
	var errs []error
	for _, t := range s.topics {
		errs = append(errs, t.close())
	}
	return errors.Join(errs...)
}

func (s *Server) logf(format string, args ...any) { s.cfg.Logf(format, args...) }

// now reads the clock for the coordinator, which requires that time never
// goes backwards between calls; a wall clock stepped back (NTP) stands
// still instead. Called with s.mu held.
func (s *Server) now() time.Time {
	t := s.cfg.Now()
	if t.Before(s.last) {
		return s.last
	}
	s.last = t
	return t
}

func (s *Server) ticker() {
	defer s.wg.Done()
	tk := time.NewTicker(s.cfg.TickInterval)
	defer tk.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-tk.C:
		}
		s.mu.Lock()
		s.tick(s.now())
		s.shareTick()
		s.mu.Unlock()
	}
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
			default:
				s.logf("wire: accept: %v; no longer accepting connections", err)
			}
			return
		}
		s.connMu.Lock()
		select {
		case <-s.done:
			s.connMu.Unlock()
			c.Close()
			return
		default:
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.connMu.Unlock()
		host := "/"
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			host += a.IP.String()
		}
		go s.serve(c, host)
	}
}

// ServeConn serves c, a connection made in this process (net.Pipe), as if
// it had been accepted from a client at host ("/127.0.0.1"): a process
// that holds both ends of thousands of connections needs no file
// descriptor for them. It fails once the server is closed.
func (s *Server) ServeConn(c net.Conn, host string) error {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	select {
	case <-s.done:
		return errors.New("server closed")
	default:
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	go s.serve(c, host)
	return nil
}

// notifyData wakes the fetches waiting for data. Called with s.mu held.
func (s *Server) notifyData() {
	close(s.dataCh)
	s.dataCh = make(chan struct{})
}

// request is one parsed request and its header.
type request struct {
	key, version int16
	corr         int32
	clientID     string
	client       Client
	conn         uint64 // the connection's number
	kreq         kmsg.Request
}

// errClose closes a connection without an answer: Kafka's answer to a
// request it cannot parse or does not serve at that version
// (SocketServer's Processor closes the channel on InvalidRequestException).
type errClose struct{ why string }

func (e errClose) Error() string { return e.why }

func (s *Server) serve(c net.Conn, host string) {
	defer s.wg.Done()
	conn := s.connSeq.Add(1)
	defer func() {
		s.connMu.Lock()
		delete(s.conns, c)
		s.connMu.Unlock()
		c.Close()
		s.shareConnClosed(conn)
	}()
	var buf []byte
	for {
		body, err := readFrame(c)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.logf("wire: %s: %v; closing the connection", c.RemoteAddr(), err)
			}
			return
		}
		req, err := s.parseRequest(body)
		if err != nil {
			s.logf("wire: %s: %v; closing the connection, as Kafka does", c.RemoteAddr(), err)
			return
		}
		req.client, req.conn = Client{ID: req.clientID, Host: host}, conn
		resp, err := s.handle(req)
		if err != nil {
			s.logf("wire: %s: %s v%d: %v; closing the connection", c.RemoteAddr(), kmsg.NameForKey(req.key), req.version, err)
			return
		}
		if resp == nil { // acks=0 produce: Kafka sends nothing back
			continue
		}
		buf = appendResponse(buf[:0], req.corr, resp)
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

// readFrame reads one size-prefixed request. A negative size or one above
// socket.request.max.bytes is an error (InvalidReceiveException closes the
// connection in Kafka).
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxRequestSize {
		return nil, fmt.Errorf("request size %d is outside 0..%d (socket.request.max.bytes)", n, maxRequestSize)
	}
	// Grown as bytes arrive, not allocated from the size prefix alone.
	body, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil {
		return nil, fmt.Errorf("read %d-byte request: %w", n, err)
	}
	if len(body) != int(n) {
		return nil, fmt.Errorf("read %d-byte request: connection ended after %d bytes", n, len(body))
	}
	return body, nil
}

// parseRequest reads the request header (v1: key, version, correlation id,
// nullable client id; v2 adds tagged fields for flexible versions) and the
// body.
//
// As Kafka's Processor.parseRequestHeader and RequestContext.parseRequest:
// an unknown key or a version outside what the server advertises closes
// the connection, except ApiVersions, which at any version too new gets a
// v0 response with UNSUPPORTED_VERSION and the body is not parsed (KIP-511:
// the client cannot know our format yet).
func (s *Server) parseRequest(body []byte) (request, error) {
	r := kbin.Reader{Src: body}
	req := request{key: r.Int16(), version: r.Int16(), corr: r.Int32()}
	cid := r.NullableString()
	if !r.Ok() {
		return req, errClose{fmt.Sprintf("request of %d bytes is too short for a request header", len(body))}
	}
	if cid != nil {
		req.clientID = *cid
	}
	kreq := kmsg.RequestForKey(req.key)
	lo, hi, served := s.versionRange(req.key)
	if kreq == nil || !served {
		return req, errClose{fmt.Sprintf("request with API key %d, which this server does not serve", req.key)}
	}
	if req.key == int16(kmsg.ApiVersions) && req.version > hi {
		// Not parsed: answered in handleApiVersions.
		kreq.SetVersion(req.version)
		req.kreq = kreq
		return req, nil
	}
	if req.version < lo || req.version > hi {
		return req, errClose{fmt.Sprintf("%s request with version %d; this server serves versions %d to %d", kmsg.NameForKey(req.key), req.version, lo, hi)}
	}
	kreq.SetVersion(req.version)
	if kreq.IsFlexible() {
		kmsg.SkipTags(&r)
		if !r.Ok() {
			return req, errClose{fmt.Sprintf("%s v%d request header: tagged fields cut off", kmsg.NameForKey(req.key), req.version)}
		}
	}
	if err := kreq.ReadFrom(r.Src); err != nil {
		return req, errClose{fmt.Sprintf("parse %s v%d request: %v", kmsg.NameForKey(req.key), req.version, err)}
	}
	req.kreq = kreq
	return req, nil
}

// appendResponse frames a response: size, correlation id, the response
// header's tagged fields for a flexible version (header v1) except for
// ApiVersions, whose response header is always v0 so that a client that
// does not know our versions can read it (KIP-511), then the body.
func appendResponse(dst []byte, corr int32, resp kmsg.Response) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, corr)
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst, uint32(len(dst)-4))
	return dst
}

// underLock serves r with h, holding s.mu throughout: the handlers that
// only read and change topics and logs, and never wait.
func underLock[R kmsg.Request](s *Server, h func(R) kmsg.Response, r R) (kmsg.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return h(r), nil
}

// handle serves one request. A nil response with a nil error sends
// nothing (acks=0).
func (s *Server) handle(req request) (kmsg.Response, error) {
	switch r := req.kreq.(type) {
	case *kmsg.ApiVersionsRequest:
		return s.handleApiVersions(r), nil
	case *kmsg.ProduceRequest:
		return underLock(s, s.handleProduce, r)
	case *kmsg.FetchRequest:
		return s.handleFetch(r), nil
	case *kmsg.ListOffsetsRequest:
		return underLock(s, s.handleListOffsets, r)
	case *kmsg.MetadataRequest:
		return underLock(s, s.handleMetadata, r)
	case *kmsg.FindCoordinatorRequest:
		return s.handleFindCoordinator(r), nil
	case *kmsg.CreateTopicsRequest:
		return underLock(s, s.handleCreateTopics, r)
	case *kmsg.DeleteTopicsRequest:
		return underLock(s, s.handleDeleteTopics, r)
	case *kmsg.InitProducerIDRequest:
		return s.handleInitProducerID(r), nil
	case *kmsg.ShareFetchRequest:
		return s.handleShareFetch(r, req.conn), nil
	case *kmsg.ShareAcknowledgeRequest:
		return s.handleShareAcknowledge(r), nil
	case *kmsg.IncrementalAlterConfigsRequest:
		return underLock(s, s.handleIncrementalAlterConfigs, r)
	case *kmsg.DescribeShareGroupOffsetsRequest:
		return underLock(s, s.handleDescribeShareGroupOffsets, r)
	}
	if isGroupAPI(req.key) {
		return s.handleGroup(req)
	}
	return nil, fmt.Errorf("no handler for %s", kmsg.NameForKey(req.key))
}
