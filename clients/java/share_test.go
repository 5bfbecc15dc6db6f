package java

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
	"github.com/groupquake/groupquake/clients/share"
)

// fakeJVM is the share driver's side of the line protocol, scripted by a
// test: each command line goes to answer, which may talk to the brokers
// through the gateway (the bootstrap of hello) and returns the lines to
// print.
type fakeJVM struct {
	inR    *io.PipeReader
	inW    *io.PipeWriter
	outR   *io.PipeReader
	outW   *io.PipeWriter
	sc     *bufio.Scanner
	answer func(f []string) []string
	done   chan struct{}
}

func newFakeJVM(answer func(f []string) []string) *fakeJVM {
	j := &fakeJVM{answer: answer, done: make(chan struct{})}
	j.inR, j.inW = io.Pipe()
	j.outR, j.outW = io.Pipe()
	j.sc = bufio.NewScanner(j.outR)
	go func() {
		defer close(j.done)
		in := bufio.NewScanner(j.inR)
		for in.Scan() {
			for _, l := range j.answer(strings.Split(in.Text(), "\t")) {
				if _, err := io.WriteString(j.outW, l+"\n"); err != nil {
					return
				}
			}
		}
		j.outW.Close()
	}()
	return j
}

func (j *fakeJVM) Write(p []byte) (int, error) { return j.inW.Write(p) }
func (j *fakeJVM) Lines() *bufio.Scanner       { return j.sc }
func (j *fakeJVM) Kill()                       { j.inW.Close(); j.outW.Close() }
func (j *fakeJVM) Wait() error                 { j.inW.Close(); <-j.done; return nil }

// fakeBroker answers Metadata (node 7 at its own address, topic t with
// id tid), answers ShareFetch with fetched, and closes the connection on
// a ShareAcknowledge without answering it.
type fakeBroker struct {
	ln      net.Listener
	tid     [16]byte
	fetched func(addr string) *kmsg.ShareFetchResponse
}

func (b *fakeBroker) serve(t *testing.T) {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			for {
				frame, err := readFrameT(c)
				if err != nil {
					return
				}
				key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
				corr := frame[4:8]
				var resp kmsg.Response
				switch kmsg.Key(key) {
				case kmsg.Metadata:
					host, port, _ := net.SplitHostPort(b.ln.Addr().String())
					n, _ := strconv.Atoi(port)
					mr := kmsg.NewPtrMetadataResponse()
					mr.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 7, Host: host, Port: int32(n)}}
					topic := "t"
					mr.Topics = []kmsg.MetadataResponseTopic{{Topic: &topic, TopicID: b.tid, Partitions: []kmsg.MetadataResponseTopicPartition{{Partition: 0, Leader: 7}}}}
					resp = mr
				case kmsg.ShareFetch:
					resp = b.fetched(b.ln.Addr().String())
				case kmsg.ShareAcknowledge:
					return // the connection closes: the answer never comes
				default:
					t.Errorf("fake broker: unexpected request key %d", key)
					return
				}
				resp.SetVersion(version)
				out := append([]byte(nil), corr...)
				if resp.IsFlexible() {
					out = append(out, 0)
				}
				out = resp.AppendTo(out)
				size := binary.BigEndian.AppendUint32(nil, uint32(len(out)))
				if _, err := c.Write(append(size, out...)); err != nil {
					return
				}
			}
		}()
	}
}

func readFrameT(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

// roundTrip writes req on c and reads its answer into resp; false when the
// connection closed first.
func roundTrip(t *testing.T, c net.Conn, corr int32, req kmsg.Request, resp kmsg.Response) bool {
	t.Helper()
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("fake")).AppendRequest(nil, req, corr)); err != nil {
		return false
	}
	frame, err := readFrameT(c)
	if err != nil {
		return false
	}
	body := frame[4:]
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		body = body[1:] // no header tags
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %T: %v", resp, err)
	}
	return true
}

// TestShareMemberTranslatesWhatTheJVMDoes: the Java share member reports
// the requests its JVM writes through the member's gateway, and their
// answers, by the clients contract: a ShareFetch Sent and answered with
// the ranges acquired, their delivery count and the lock, at the node the
// Metadata answer named; a ShareAcknowledge whose connection closed before
// its answer came is answered as an unknown outcome (Err set, no Kafka
// error code), never as done. The driver's rec lines become share.Records
// with their delivery count, value and lock deadline; the records a poll
// handed out are held until acknowledged, a record never handed out cannot
// be acknowledged, and the leader hints of a ShareFetch answer reach the
// JVM as the gateway's addresses, never the broker's.
func TestShareMemberTranslatesWhatTheJVMDoes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b := &fakeBroker{ln: ln, tid: [16]byte{1, 2, 3}}
	b.fetched = func(addr string) *kmsg.ShareFetchResponse {
		host, port, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(port)
		r := kmsg.NewPtrShareFetchResponse()
		r.AcquisitionLockTimeoutMillis = 5000
		r.NodeEndpoints = []kmsg.ShareFetchResponseNodeEndpoint{{NodeID: 7, Host: host, Port: int32(n)}}
		r.Topics = []kmsg.ShareFetchResponseTopic{{TopicID: b.tid, Partitions: []kmsg.ShareFetchResponseTopicPartition{{
			Partition: 0, AcquiredRecords: []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 5, LastOffset: 6, DeliveryCount: 2}},
		}}}}
		return r
	}
	go b.serve(t)

	var conn net.Conn
	var hint string
	memberID := "mid"
	group := "g"
	fj := newFakeJVM(func(f []string) []string {
		switch f[0] {
		case "hello":
			c, err := net.Dial("tcp", strings.Split(f[1], ",")[0])
			if err != nil {
				return []string{"err\t" + err.Error()}
			}
			conn = c
			mr := kmsg.NewPtrMetadataResponse()
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(12)
			if !roundTrip(t, conn, 1, req, mr) {
				return []string{"err\tno metadata"}
			}
			return []string{"ready\t4.4.0"}
		case "poll":
			req := kmsg.NewPtrShareFetchRequest()
			req.SetVersion(1)
			req.GroupID, req.MemberID = &group, &memberID
			req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: b.tid, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
			resp := kmsg.NewPtrShareFetchResponse()
			if !roundTrip(t, conn, 2, req, resp) {
				return []string{"err\tno answer"}
			}
			if len(resp.NodeEndpoints) == 1 {
				hint = net.JoinHostPort(resp.NodeEndpoints[0].Host, strconv.Itoa(int(resp.NodeEndpoints[0].Port)))
			}
			v := base64.StdEncoding.EncodeToString([]byte("seq-5"))
			return []string{"rec\tt\t0\t5\t2\t" + v, "rec\tt\t0\t6\t2\t" + v, "cb\tt\t0\t3\t-", "polled\t2\t5000"}
		case "ack":
			req := kmsg.NewPtrShareAcknowledgeRequest()
			req.SetVersion(1)
			req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &memberID, 1
			req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: b.tid, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{
				Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 5, LastOffset: 5, AcknowledgeTypes: []int8{1}}},
			}}}}
			roundTrip(t, conn, 3, req, kmsg.NewPtrShareAcknowledgeResponse()) // the broker closes the connection
			return []string{"cb\tt\t0\t5\tDisconnectException: lost", "acked\t1"}
		case "close":
			return []string{"closed"}
		}
		return []string{"err\tunknown command " + f[0]}
	})

	var mu sync.Mutex
	var evs []clients.Event
	hooks := clients.HookFunc(func(e clients.Event) {
		mu.Lock()
		evs = append(evs, e)
		mu.Unlock()
	})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := NewShare("m1", group, ShareKgoOpts(kgo.SeedBrokers(ln.Addr().String())), ShareTopics("t"), ShareHooks(hooks),
		ShareClock(clients.ClockFunc(func() time.Time { return now })), withJVM(func(io.Writer) (jvm, error) { return fj, nil }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := clientstest.Start(t, m, 20*time.Second)
	defer cancel()
	recs, err := m.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Offset != 5 || recs[1].Offset != 6 || recs[0].DeliveryCount != 2 || string(recs[0].Value) != "seq-5" ||
		recs[0].Topic != "t" || recs[0].Partition != 0 || !recs[0].Deadline.Equal(now.Add(5*time.Second)) {
		t.Fatalf("records %+v, want t-0 offsets 5 and 6 at delivery count 2, value seq-5, deadline the poll plus 5s", recs)
	}
	if hint == "" || hint == ln.Addr().String() {
		t.Errorf("the ShareFetch answer's leader hint reached the JVM as %q: it must be a gateway address, not the broker's %s", hint, ln.Addr())
	}
	if err := m.Acknowledge([]share.Record{{Topic: "t", Partition: 0, Offset: 9}}, clients.AckAccept); err == nil {
		t.Error("an acknowledgement of a record never handed out was taken")
	}
	if err := m.Acknowledge(recs[:1], clients.AckAccept); err != nil {
		t.Fatal(err)
	}
	if m.Holding() != 1 {
		t.Errorf("holding %d records after accepting one of two, want 1", m.Holding())
	}
	if n, failed := m.Callbacks(); n != 2 || failed != 1 {
		t.Errorf("callbacks %d (%d failed), want 2 (1 failed)", n, failed)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(evs)
		mu.Unlock()
		if n >= 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, e := range evs {
		s := fmt.Sprintf("%s/%s", e.Kind, e.Op)
		if e.Share != nil {
			s += fmt.Sprintf(" node=%d acks=%v acquired=%v lock=%d", e.Share.Node, e.Share.Acks, e.Share.Acquired, e.Share.LockTimeoutMs)
		}
		if e.Err != "" {
			s += fmt.Sprintf(" err code=%d", e.ErrCode)
		}
		got = append(got, s)
	}
	want := []string{
		"sent/share-fetch node=7 acks=[] acquired=[] lock=0",
		"share-fetched/share-fetch node=7 acks=[] acquired=[{{t 0 5 6} 2}] lock=5000",
		"sent/share-ack node=7 acks=[{{t 0 5 5} 1}] acquired=[] lock=0",
		"share-acked/share-ack node=7 acks=[{{t 0 5 5} 1}] acquired=[] lock=0 err code=0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(evs); n == 4 && evs[3].Err == "" {
		t.Error("the ShareAcknowledge whose answer never came was reported as done")
	}
}

// A share member whose options name no seed broker fails at Start, saying
// so in the share member's words, and starts no JVM.
func TestShareMemberStartNeedsSeeds(t *testing.T) {
	started := false
	m, err := NewShare("m1", "g", ShareTopics("t"), ShareKgoOpts(kgo.SeedBrokers()),
		withJVM(func(io.Writer) (jvm, error) { started = true; return nil, errors.New("not started") }))
	if err != nil {
		t.Fatal(err)
	}
	err = m.Start(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "java: share member m1: ") || !strings.Contains(err.Error(), "no seed brokers") {
		t.Fatalf("Start without seed brokers = %v, want the share member's no-seed-brokers error", err)
	}
	if started {
		t.Error("Start without seed brokers started the JVM")
	}
}
