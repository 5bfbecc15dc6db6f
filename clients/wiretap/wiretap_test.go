package wiretap

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// log is an Observer that records what it is told, in order.
type log struct {
	mu     sync.Mutex
	events []string
	reqs   []kmsg.Request
	resps  []kmsg.Response
}

func (l *log) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, s)
}

func (l *log) Wants(key int16) bool {
	return key == kmsg.Heartbeat.Int16() || key == kmsg.ConsumerGroupHeartbeat.Int16()
}

func (l *log) Request(req kmsg.Request) any {
	l.mu.Lock()
	l.reqs = append(l.reqs, req)
	l.mu.Unlock()
	l.add("request " + kmsg.NameForKey(req.Key()))
	return req.Key()
}

func (l *log) Response(tok any, resp kmsg.Response) {
	l.mu.Lock()
	l.resps = append(l.resps, resp)
	l.mu.Unlock()
	l.add("response " + kmsg.NameForKey(tok.(int16)))
}

func (l *log) Lost(tok any, err error) { l.add("lost " + kmsg.NameForKey(tok.(int16))) }
func (l *log) Broken(err error)        { l.add("broken: " + err.Error()) }

func (l *log) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

func responseFrame(corr int32, resp kmsg.Response) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if resp.IsFlexible() {
		b = append(b, 0) // no header tags
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// TestTapDecodesBothWays: a non-flexible Heartbeat v3 and a flexible
// ConsumerGroupHeartbeat v1 are reported before they are written, and
// their answers once read, even when the answer arrives a few bytes at a
// time; an untracked request passes unseen; a request still in flight when
// the connection closes is lost.
func TestTapDecodesBothWays(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	l := &log{}
	dial := Dialer(func(context.Context, string, string) (net.Conn, error) { return client, nil }, l)
	c, err := dial(context.Background(), "tcp", "x")
	if err != nil {
		t.Fatal(err)
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("t"))

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(3)
	hb.Group, hb.Generation, hb.MemberID = "g", 7, "m"
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.SetVersion(1)
	cgh.Group, cgh.MemberID, cgh.MemberEpoch = "g", "m", 12
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	var wire []byte
	// AppendRequest writes the size at dst[0]: one fresh slice per frame.
	wire = append(wire, f.AppendRequest(nil, hb, 1)...)
	wire = append(wire, f.AppendRequest(nil, md, 2)...)
	wire = append(wire, f.AppendRequest(nil, cgh, 3)...)
	lost := kmsg.NewPtrHeartbeatRequest()
	lost.SetVersion(3)
	lost.Group = "g"
	wire = append(wire, f.AppendRequest(nil, lost, 4)...)

	read := make(chan []byte)
	go func() {
		b := make([]byte, len(wire))
		n := 0
		for n < len(b) {
			k, err := server.Read(b[n:])
			if err != nil {
				break
			}
			n += k
		}
		read <- b[:n]
	}()
	if _, err := c.Write(wire); err != nil {
		t.Fatal(err)
	}
	if got := <-read; string(got) != string(wire) {
		t.Fatal("the tap changed the bytes written")
	}
	if got := l.all(); len(got) != 3 || got[0] != "request Heartbeat" || got[1] != "request ConsumerGroupHeartbeat" {
		t.Fatalf("after the write: %v", got)
	}
	if r := l.reqs[1].(*kmsg.ConsumerGroupHeartbeatRequest); r.MemberEpoch != 12 || r.MemberID != "m" {
		t.Errorf("ConsumerGroupHeartbeat decoded as %+v", r)
	}
	if r := l.reqs[0].(*kmsg.HeartbeatRequest); r.Generation != 7 {
		t.Errorf("Heartbeat decoded as %+v", r)
	}

	hr := kmsg.NewPtrHeartbeatResponse()
	hr.SetVersion(3)
	hr.ErrorCode = 27
	cr := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	cr.SetVersion(1)
	cr.MemberEpoch = 13
	back := append(responseFrame(1, hr), responseFrame(3, cr)...)
	go func() {
		for i := 0; i < len(back); i += 3 {
			server.Write(back[i:min(i+3, len(back))])
		}
	}()
	buf := make([]byte, len(back))
	for n := 0; n < len(back); {
		k, err := c.Read(buf[n:min(n+2, len(back))])
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"request Heartbeat", "request ConsumerGroupHeartbeat", "request Heartbeat", "response Heartbeat", "response ConsumerGroupHeartbeat", "lost Heartbeat"}
	got := l.all()
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
	if r := l.resps[0].(*kmsg.HeartbeatResponse); r.ErrorCode != 27 {
		t.Errorf("Heartbeat answer decoded as %+v", r)
	}
	if r := l.resps[1].(*kmsg.ConsumerGroupHeartbeatResponse); r.MemberEpoch != 13 {
		t.Errorf("ConsumerGroupHeartbeat answer decoded as %+v", r)
	}
}

// TestTapBreaksOnGarbage: bytes that are not a request frame stop the
// observation of the connection, once, and pass through unchanged.
func TestTapBreaksOnGarbage(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	l := &log{}
	c, _ := Dialer(func(context.Context, string, string) (net.Conn, error) { return client, nil }, l)(context.Background(), "tcp", "x")
	go func() {
		b := make([]byte, 64)
		for {
			if _, err := server.Read(b); err != nil {
				return
			}
		}
	}()
	garbage := []byte{0, 0, 0, 3, 1, 2, 3}
	c.Write(garbage)
	c.Write(garbage)
	c.Close()
	got := l.all()
	if len(got) != 1 || !strings.HasPrefix(got[0], "broken:") {
		t.Fatalf("events %v, want one broken", got)
	}
}
