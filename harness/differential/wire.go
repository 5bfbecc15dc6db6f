package differential

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn is one Kafka-protocol connection that carries one request at a
// time, at exactly the version the request names. A broker reads the next
// request of a connection only after it answered the last, so a parked
// JoinGroup holds its connection; Run gives every in-flight request its own.
type conn struct {
	c    net.Conn
	corr int32
}

func dial(ctx context.Context, addr string) (*conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial coordinator %s: %v", addr, err)
	}
	return &conn{c: c}, nil
}

func (c *conn) close() { c.c.Close() }

// do writes req with client id client and reads its response. deadline
// bounds the whole exchange.
func (c *conn) do(req kmsg.Request, client string, deadline time.Time) (kmsg.Response, error) {
	c.corr++
	// Request header v1, or v2 (tagged fields) for a flexible request.
	buf := []byte{0, 0, 0, 0}
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(c.corr))
	buf = kbin.AppendNullableString(buf, &client)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if err := c.c.SetDeadline(deadline); err != nil {
		return nil, err
	}
	if _, err := c.c.Write(buf); err != nil {
		return nil, fmt.Errorf("write %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.c, size[:]); err != nil {
		return nil, fmt.Errorf("read %s v%d response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.c, body); err != nil {
		return nil, fmt.Errorf("read %s v%d response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	r := kbin.Reader{Src: body}
	if got := r.Int32(); got != c.corr {
		return nil, fmt.Errorf("%s response has correlation id %d, want %d", kmsg.NameForKey(req.Key()), got, c.corr)
	}
	if req.IsFlexible() && req.Key() != 18 { // ApiVersions answers with header v0
		for n := r.Uvarint(); n > 0; n-- {
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
	}
	if !r.Ok() {
		return nil, fmt.Errorf("%s response header is truncated", kmsg.NameForKey(req.Key()))
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("decode %s v%d response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}
