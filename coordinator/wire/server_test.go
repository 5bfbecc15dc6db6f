package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/version"
)

// rawConn is a bare TCP connection to the server, for framing tests.
type rawConn struct {
	t *testing.T
	c net.Conn
}

func dialRaw(t *testing.T, s *Server) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr(), testWait)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(testWait))
	return &rawConn{t, c}
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// header appends a request header v1 (v2 adds an empty tag section).
func header(key, ver int16, corr int32, flexible bool) []byte {
	b := kbin.AppendInt16(nil, key)
	b = kbin.AppendInt16(b, ver)
	b = kbin.AppendInt32(b, corr)
	id := "test"
	b = kbin.AppendNullableString(b, &id)
	if flexible {
		b = append(b, 0)
	}
	return b
}

func frame(body []byte) []byte {
	return append(kbin.AppendInt32(nil, int32(len(body))), body...)
}

// requestFrame is a kmsg request at its version with the right header.
func requestFrame(req kmsg.Request, corr int32) []byte {
	body := header(req.Key(), req.GetVersion(), corr, req.IsFlexible())
	return frame(req.AppendTo(body))
}

// send writes a kmsg request at its version with the right header.
func (r *rawConn) send(req kmsg.Request, corr int32) { r.write(requestFrame(req, corr)) }

// read reads one response frame and returns the correlation id and the
// rest (header tags, if any, and body).
func (r *rawConn) read() (int32, []byte) {
	r.t.Helper()
	body, err := readFrame(r.c)
	if err != nil {
		r.t.Fatalf("read response: %v", err)
	}
	if len(body) < 4 {
		r.t.Fatalf("response of %d bytes", len(body))
	}
	return int32(binary.BigEndian.Uint32(body)), body[4:]
}

// expectClosed checks the server closed the connection without answering.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	var b [1]byte
	n, err := r.c.Read(b[:])
	if n != 0 || err == nil {
		r.t.Fatalf("connection still open: read %d bytes, err %v", n, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		r.t.Fatalf("connection neither answered nor closed within %v", testWait)
	}
	if !errors.Is(err, io.EOF) {
		r.t.Logf("closed with %v", err)
	}
}

func TestFramingBadSizes(t *testing.T) {
	s := startStandIn(t, "", version.V4_4_0)
	defer s.Close()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"negative size", kbin.AppendInt32(nil, -1)},
		{"size above socket.request.max.bytes", kbin.AppendInt32(nil, maxRequestSize+1)},
		{"body shorter than a header", frame([]byte{0, 18, 0})},
		{"header cut inside the client id", frame([]byte{0, 18, 0, 0, 0, 0, 0, 1, 0, 9, 'a'})},
		{"body that does not parse", frame(append(header(3, 1, 1, false), 0, 0, 0, 5))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, s)
			c.write(tc.data)
			c.expectClosed()
		})
	}
}

// TestFramingUnknownKeyAndVersion: Kafka closes the connection for an API
// key it does not know or serve and for a version out of range
// (Processor.parseRequestHeader: InvalidRequestException), except
// ApiVersions, answered at v0 with UNSUPPORTED_VERSION.
func TestFramingUnknownKeyAndVersion(t *testing.T) {
	s := startStandIn(t, "", version.V4_4_0)
	defer s.Close()
	describeConfigs := kmsg.NewPtrDescribeConfigsRequest()
	describeConfigs.SetVersion(1)
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(2)
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"unknown key", frame(header(9999, 0, 1, false))},
		{"key kmsg knows but not served", requestFrame(describeConfigs, 1)},
		{"Metadata version too new", frame(header(3, 14, 1, true))},
		{"Produce version removed in 4.0", requestFrame(produce, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, s)
			c.write(tc.frame)
			c.expectClosed()
		})
	}
	t.Run("ApiVersions version too new", func(t *testing.T) {
		c := dialRaw(t, s)
		// v99 with a body nobody can parse: the server must not try.
		c.write(frame(append(header(18, 99, 42, true), 0xde, 0xad)))
		corr, body := c.read()
		if corr != 42 {
			t.Fatalf("correlation id %d, want 42", corr)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(0) // header v0: the body starts right after the correlation id
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("parse v0 response: %v", err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); !errors.Is(err, kerr.UnsupportedVersion) {
			t.Errorf("error %v, want UNSUPPORTED_VERSION", err)
		}
		if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 5 {
			t.Errorf("api keys %+v, want only ApiVersions 0–5", resp.ApiKeys)
		}
		// The connection stays usable, at a version we serve.
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "groupquake", "0.1"
		c.send(req, 43)
		corr, body = c.read()
		if corr != 43 {
			t.Fatalf("correlation id %d, want 43", corr)
		}
		resp = kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(3) // flexible body, but still header v0: no tag byte
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("parse v3 response: %v", err)
		}
		// 21, and ShareGroupHeartbeat and ShareGroupDescribe.
		if resp.ErrorCode != 0 || len(resp.ApiKeys) != 23 {
			t.Errorf("v3 answer: error %d, %d keys, want 0 and 23", resp.ErrorCode, len(resp.ApiKeys))
		}
	})
	t.Run("ApiVersions v3 with a bad software name", func(t *testing.T) {
		c := dialRaw(t, s)
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "-bad", "1"
		c.send(req, 7)
		_, body := c.read()
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(3)
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("parse: %v", err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("error %v, want INVALID_REQUEST", err)
		}
	})
	t.Run("flexible response has header v1", func(t *testing.T) {
		c := dialRaw(t, s)
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		c.send(req, 9)
		corr, body := c.read()
		if corr != 9 || len(body) == 0 || body[0] != 0 {
			t.Fatalf("correlation %d, first byte %v: want 9 and an empty tag section", corr, body[:1])
		}
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(12)
		if err := resp.ReadFrom(body[1:]); err != nil {
			t.Fatalf("parse: %v", err)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 {
			t.Errorf("brokers %+v", resp.Brokers)
		}
	})
}

func TestVersionsPerRelease(t *testing.T) {
	if _, ok := versionsFor(version.V4_4_0, false, false)[kmsg.ConsumerGroupHeartbeat]; ok {
		t.Errorf("ConsumerGroupHeartbeat advertised with the consumer protocol disabled")
	}
	for _, tc := range []struct {
		v       version.Version
		key     kmsg.Key
		lo, hi  int16
		present bool
	}{
		{version.V4_0_0, kmsg.Produce, 3, 12, true},
		{version.V4_0_0, kmsg.JoinGroup, 2, 9, true},
		{version.V4_0_1, kmsg.JoinGroup, 0, 9, true}, // KAFKA-19444 on the 4.0 branch
		{version.V4_0_2, kmsg.JoinGroup, 0, 9, true},
		{version.V4_1_0, kmsg.JoinGroup, 0, 9, true},
		{version.V4_1_0, kmsg.Produce, 3, 13, true},
		{version.V4_1_0, kmsg.OffsetCommit, 2, 9, true},
		{version.V4_1_2, kmsg.OffsetCommit, 2, 9, true}, // v10 unstable on the 4.1 branch
		{version.V4_1_2, kmsg.OffsetFetch, 1, 9, true},
		{version.V4_2_0, kmsg.OffsetFetch, 1, 10, true},
		{version.V4_2_0, kmsg.OffsetCommit, 2, 10, true},
		{version.V4_3_1, kmsg.ApiVersions, 0, 4, true},
		{version.V4_4_0, kmsg.ApiVersions, 0, 5, true},
		{version.V4_4_0, kmsg.DescribeConfigs, 0, 0, false},
	} {
		r, ok := versionsFor(tc.v, true, false)[tc.key]
		if ok != tc.present || ok && (r.lo != tc.lo || r.hi != tc.hi) {
			t.Errorf("Kafka %s %s: %+v (served %v), want %d–%d (served %v)", tc.v, kmsg.NameForKey(int16(tc.key)), r, ok, tc.lo, tc.hi, tc.present)
		}
	}
}

// TestAcceptDoesNotWaitForCoordinator: a new connection is accepted and
// served while the coordinator's lock is held (a request in progress), so
// that connecting does not queue behind every connection's requests: with
// 10,000 classic members, a connection each, each accept waited for the
// requests of all the others and connecting took minutes.
func TestAcceptDoesNotWaitForCoordinator(t *testing.T) {
	s := startStandIn(t, "", version.V4_4_0)
	defer s.Close()
	held, release := make(chan struct{}), make(chan struct{})
	go s.WithCoordinator(func(Coordinator) {
		close(held)
		<-release
	})
	defer close(release)
	<-held
	// ApiVersions needs no coordinator: answered at once once accepted.
	c := dialRaw(t, s)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	c.send(req, 7)
	if corr, _ := c.read(); corr != 7 {
		t.Fatalf("answer with correlation id %d, want 7", corr)
	}
}
