package light

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stub is a scripted broker on loopback. Like Kafka's SocketServer it
// reads a connection's next request only after it answered the last one.
// Each request goes to answer; a nil answer holds the request until the
// test answers it through the held channel.
type stub struct {
	t        testing.TB
	ln       net.Listener
	host     string
	port     int32
	accepted atomic.Int64
	held     chan *stubReq

	mu     sync.Mutex
	answer func(r *stubReq) kmsg.Response
	conns  []net.Conn
	seen   []*stubReq // every request read, in the order read
	forget bool       // keep nothing in seen (a benchmark's stub)
	gone   []string   // the client id of each connection that ended
}

// stubReq is one request the stub read.
type stubReq struct {
	conn   int64 // which connection, counted from 1 in accept order
	client string
	req    kmsg.Request
	reply  chan kmsg.Response
}

func newStub(t testing.TB, answer func(r *stubReq) kmsg.Response) *stub {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().(*net.TCPAddr)
	s := &stub{t: t, ln: ln, host: a.IP.String(), port: int32(a.Port), answer: answer, held: make(chan *stubReq, 1<<16)}
	go s.accept()
	t.Cleanup(s.close)
	return s
}

// setAnswer replaces how the stub answers.
func (s *stub) setAnswer(f func(r *stubReq) kmsg.Response) {
	s.mu.Lock()
	s.answer = f
	s.mu.Unlock()
}

func (s *stub) addr() string { return net.JoinHostPort(s.host, strconv.Itoa(int(s.port))) }

func (s *stub) close() {
	s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

func (s *stub) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		n := s.accepted.Add(1)
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		go s.serve(c, n)
	}
}

func (s *stub) serve(c net.Conn, n int64) {
	br := bufio.NewReader(c)
	var buf []byte
	client := "?"
	defer func() { // the client closed the connection (or the stub did)
		s.mu.Lock()
		s.gone = append(s.gone, client)
		s.mu.Unlock()
	}()
	for {
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		r := kbin.Reader{Src: body}
		key, version, corr := r.Int16(), r.Int16(), r.Int32()
		cid := r.NullableString()
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if req.IsFlexible() {
			kmsg.SkipTags(&r)
		}
		if err := req.ReadFrom(r.Src); err != nil {
			s.t.Errorf("stub: parse %s: %v", kmsg.NameForKey(key), err)
			return
		}
		sr := &stubReq{conn: n, req: req, reply: make(chan kmsg.Response, 1)}
		if cid != nil {
			sr.client = *cid
		}
		if client == "?" {
			client = sr.client
		}
		s.mu.Lock()
		if !s.forget {
			s.seen = append(s.seen, sr)
		}
		answer := s.answer
		s.mu.Unlock()
		resp := answer(sr)
		if resp == nil {
			s.held <- sr
			resp = <-sr.reply
		}
		resp.SetVersion(version)
		buf = append(buf[:0], 0, 0, 0, 0)
		buf = kbin.AppendInt32(buf, corr)
		if resp.IsFlexible() && key != int16(kmsg.ApiVersions) {
			buf = append(buf, 0)
		}
		buf = resp.AppendTo(buf)
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

// ended returns the client ids of the connections that ended so far.
func (s *stub) ended() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gone)
}

// closeConns closes the stub's side of every connection.
func (s *stub) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

// requests returns the requests of key read so far.
func (s *stub) requests(key kmsg.Key) []*stubReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*stubReq
	for _, r := range s.seen {
		if r.req.Key() == int16(key) {
			out = append(out, r)
		}
	}
	return out
}

// next returns the next held request.
func (s *stub) next() *stubReq {
	s.t.Helper()
	select {
	case r := <-s.held:
		return r
	case <-time.After(10 * time.Second):
		s.t.Fatal("stub: no request arrived in 10 s")
		return nil
	}
}

// eventually waits until cond holds, failing the test after 10 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after 10 s: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stubTopicID is the id of the stub's topic.
var stubTopicID = [16]byte{1, 2, 3}

// coordinatorAnswers answers what a member asks before its group requests:
// FindCoordinator (the stub itself) and Metadata (one topic of parts
// partitions); nil for anything else.
func (s *stub) coordinatorAnswers(topic string, parts int32) func(r *stubReq) kmsg.Response {
	return func(r *stubReq) kmsg.Response {
		switch req := r.req.(type) {
		case *kmsg.FindCoordinatorRequest:
			resp := kmsg.NewPtrFindCoordinatorResponse()
			for _, k := range req.CoordinatorKeys {
				c := kmsg.NewFindCoordinatorResponseCoordinator()
				c.Key, c.NodeID, c.Host, c.Port = k, 1, s.host, s.port
				resp.Coordinators = append(resp.Coordinators, c)
			}
			return resp
		case *kmsg.MetadataRequest:
			resp := kmsg.NewPtrMetadataResponse()
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = 1, s.host, s.port
			resp.Brokers = []kmsg.MetadataResponseBroker{b}
			t := kmsg.NewMetadataResponseTopic()
			t.Topic, t.TopicID = kmsg.StringPtr(topic), stubTopicID
			for p := range parts {
				mp := kmsg.NewMetadataResponseTopicPartition()
				mp.Partition, mp.Leader = p, 1
				t.Partitions = append(t.Partitions, mp)
			}
			resp.Topics = []kmsg.MetadataResponseTopic{t}
			return resp
		}
		return nil
	}
}
