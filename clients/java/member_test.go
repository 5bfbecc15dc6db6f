package java

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
	"github.com/groupquake/groupquake/clients/process"
)

// script is a scripted stand-in for the JVM: the test reads the messages
// the member writes and answers with the lines a Driver would.
type script struct {
	t       *testing.T
	hello   process.Msg
	inR     *io.PipeReader // what the member writes
	inW     *io.PipeWriter
	outR    *io.PipeReader // what the member reads
	outW    *io.PipeWriter
	lines   *bufio.Scanner
	stderr  io.Writer
	done    chan struct{}
	once    sync.Once
	waitErr error
	last    process.Msg // the last command read
}

func (s *script) In() io.Writer   { return s.inW }
func (s *script) Out() io.Reader  { return s.outR }
func (s *script) Pid() int        { return 0 }
func (s *script) Hosted() bool    { return false }
func (s *script) Stop(bool) error { return nil }
func (s *script) Kill() error {
	s.exit(errors.New("signal: killed"))
	return nil
}
func (s *script) Wait() error { <-s.done; return s.waitErr }

// exit ends the stand-in as a JVM exits: its stdout closes.
func (s *script) exit(err error) {
	s.once.Do(func() {
		s.waitErr = err
		s.outW.Close()
		s.inR.Close()
		close(s.done)
	})
}

// send writes one line from the "JVM".
func (s *script) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.outW, line+"\n"); err != nil {
		s.t.Fatalf("stand-in: writing %q: %v", line, err)
	}
}

// answer answers the last command read with a message of type typ and the
// JSON fields rest (without braces).
func (s *script) answer(typ, rest string) {
	s.t.Helper()
	line := fmt.Sprintf(`{"type":%q,"id":%d`, typ, s.last.ID)
	if rest != "" {
		line += "," + rest
	}
	s.send(line + "}")
}

// next reads the member's next message.
func (s *script) next() process.Msg {
	s.t.Helper()
	if !s.lines.Scan() {
		s.t.Fatalf("stand-in: the member closed stdin: %v", s.lines.Err())
	}
	m, err := process.Parse(s.lines.Bytes())
	if err != nil {
		s.t.Fatalf("stand-in: the member wrote %q: %v", s.lines.Text(), err)
	}
	if _, ok := process.Commands[m.Type]; ok {
		s.last = m
	}
	return m
}

// newScripted returns a member whose JVM is a script, and the script once
// Start has started it.
func newScripted(t *testing.T, hooks clients.Hooks, opts ...Opt) (*Member, chan *script) {
	t.Helper()
	started := make(chan *script, 1)
	start := func(stderr io.Writer) (process.Conn, error) {
		s := &script{t: t, stderr: stderr, done: make(chan struct{})}
		s.inR, s.inW = io.Pipe()
		s.outR, s.outW = io.Pipe()
		s.lines = bufio.NewScanner(s.inR)
		started <- s
		return s, nil
	}
	all := append([]Opt{withStarter(start), WithHooks(hooks), KgoOpts(kgo.SeedBrokers("127.0.0.1:9"))}, opts...)
	m, err := New("m1", "g", []string{"t"}, all...)
	if err != nil {
		t.Fatal(err)
	}
	return m, started
}

// startScripted starts m against its script, which says ready and
// subscribed.
func startScripted(t *testing.T, m *Member, started chan *script) *script {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- m.Start(context.Background()) }()
	s := <-started
	s.hello = s.next()
	if s.hello.Type != process.THello {
		t.Fatalf("first message %+v, want hello", s.hello)
	}
	s.answer("ready", `"version":1,"client":"kafka-clients 4.4.0","calls":"wire","commits":"application"`)
	if sub := s.next(); sub.Type != process.TSubscribe || !slices.Equal(sub.Topics, []string{"t"}) {
		t.Fatalf("after ready the member wrote %+v, want subscribe to t", sub)
	}
	s.answer("subscribed", "")
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Kill() })
	return s
}

type hookLog struct{ clientstest.Recorder }

func (h *hookLog) kinds() []clients.Kind {
	var out []clients.Kind
	for _, e := range h.All() {
		out = append(out, e.Kind)
	}
	return out
}

func (h *hookLog) last() clients.Event {
	all := h.All()
	return all[len(all)-1]
}

// helloConfig is what hello asks of the consumer, as the settings the
// driver gives KafkaConsumer.
func helloConfig(h process.Msg) map[string]string {
	out := map[string]string{
		"group.protocol": h.GroupProtocol, "group.id": h.Group, "topics": strings.Join(h.Topics, ","),
		"bootstrap.servers": strings.Join(h.Bootstrap, ","),
	}
	if h.InstanceID != "" {
		out["group.instance.id"] = h.InstanceID
	}
	if t := h.Timers; t != nil {
		for k, v := range map[string]int64{"session.timeout.ms": t.SessionMS, "heartbeat.interval.ms": t.HeartbeatMS, "max.poll.interval.ms": t.PollIntervalMS} {
			if v > 0 {
				out[k] = fmt.Sprint(v)
			}
		}
	}
	for k, v := range h.Properties {
		out[k] = v
	}
	return out
}

// The JVM gets the configuration of the kind: the group protocol, the
// assignor, static membership, the timers each protocol accepts, and the
// gateway (never the brokers themselves) as bootstrap.
func TestConfigPerKind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []Opt
		want   map[string]string
		absent []string
	}{
		{
			name: "classic eager static",
			opts: []Opt{InstanceID("i1"), SessionTimeout(6 * time.Second), HeartbeatInterval(time.Second), MaxPollInterval(20 * time.Second)},
			want: map[string]string{
				"group.protocol": "classic", "group.instance.id": "i1", "session.timeout.ms": "6000", "heartbeat.interval.ms": "1000",
				"max.poll.interval.ms":          "20000",
				"partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor,org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
				"group.id":                      "g", "topics": "t",
			},
			absent: []string{"group.remote.assignor"},
		},
		{
			name:   "classic cooperative",
			opts:   []Opt{Assignor("cooperative-sticky")},
			want:   map[string]string{"group.protocol": "classic", "partition.assignment.strategy": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"},
			absent: []string{"group.instance.id", "session.timeout.ms"},
		},
		{
			name:   "consumer range",
			opts:   []Opt{Protocol(clients.Consumer), Assignor("range"), SessionTimeout(6 * time.Second), HeartbeatInterval(time.Second), MaxPollInterval(20 * time.Second)},
			want:   map[string]string{"group.protocol": "consumer", "group.remote.assignor": "range", "max.poll.interval.ms": "20000"},
			absent: []string{"partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, started := newScripted(t, &hookLog{}, tc.opts...)
			s := startScripted(t, m, started)
			got := helloConfig(s.hello)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (hello %+v)", k, got[k], v, s.hello)
				}
			}
			if !slices.Equal(s.hello.Versions, []int{process.Version}) || s.hello.Member != "m1" {
				t.Errorf("hello offers versions %v for member %q, want [%d] for m1", s.hello.Versions, s.hello.Member, process.Version)
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s is set (%q); the kind must not set it", k, got[k])
				}
			}
			if bs := got["bootstrap.servers"]; !strings.HasPrefix(bs, "127.0.0.1:") || bs == "127.0.0.1:9" {
				t.Errorf("bootstrap.servers = %q: the JVM must be given the gateway, not the broker 127.0.0.1:9", bs)
			}
			if m.KafkaClients() != "4.4.0" {
				t.Errorf("KafkaClients() = %q, want the version the JVM reported", m.KafkaClients())
			}
		})
	}
}

// A rebalance listener event is in the hooks before the member acks it:
// the JVM's listener returns (and the consumer acknowledges the
// revocation) only after the history has it. Owned follows the listener,
// and Poll hands out the records with the generation the JVM held.
func TestListenerEventsRecordedBeforeAck(t *testing.T) {
	h := &hookLog{}
	m, started := newScripted(t, h)
	s := startScripted(t, m, started)

	type result struct {
		recs []clients.Record
		err  error
	}
	res := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		recs, err := m.Poll(ctx)
		res <- result{recs, err}
	}()
	if cmd := s.next(); cmd.Type != process.TPoll {
		t.Fatalf("first command %+v, want poll", cmd)
	}
	s.send(`{"type":"assigned","seq":1,"at":5,"member_id":"A","epoch":3,"partitions":[{"topic":"t","partition":2},{"topic":"t","partition":0},{"topic":"t","partition":1}]}`)
	if got := s.next(); got.Type != process.TAck || got.Seq != 1 {
		t.Fatalf("after an ownership event the member wrote %+v, want its ack", got)
	}
	if e := h.last(); e.Kind != clients.Assigned || e.Generation != 3 || e.MemberID != "A" || !slices.Equal(e.Partitions["t"], []int32{0, 1, 2}) {
		t.Fatalf("when the ack was written the last event was %+v, want assigned t[0 1 2] at generation 3", e)
	}
	s.send(`{"type":"revoked","seq":2,"at":6,"member_id":"A","epoch":3,"partitions":[{"topic":"t","partition":1}]}`)
	if got := s.next(); got.Type != process.TAck || got.Seq != 2 {
		t.Fatalf("after an ownership event the member wrote %+v, want its ack", got)
	}
	if e := h.last(); e.Kind != clients.Revoked || !slices.Equal(e.Partitions["t"], []int32{1}) {
		t.Fatalf("when the ack was written the last event was %+v, want revoked t[1]", e)
	}
	if got := m.Owned(); !slices.Equal(got["t"], []int32{0, 2}) {
		t.Errorf("Owned() = %v after assigned 0,1,2 and revoked 1", got)
	}
	s.answer("polled", `"at":7,"member_id":"A","epoch":3,"records":[{"topic":"t","partition":0,"offset":41,"value":"c2VxPTQx"},{"topic":"t","partition":2,"offset":7,"key":"a2V5","value":"eA=="}]`)
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.recs) != 2 || r.recs[0].Offset != 41 || string(r.recs[0].Value) != "seq=41" || r.recs[1].Partition != 2 || string(r.recs[1].Key) != "key" {
		t.Fatalf("Poll returned %+v", r.recs)
	}
	for _, rec := range r.recs {
		if rec.Generation != 3 || rec.MemberEpoch != -1 {
			t.Errorf("record %+v: want generation 3 and no member epoch", rec)
		}
	}
	// A lost partition is reported as lost, not revoked.
	go func() {
		_, err := m.Poll(context.Background())
		res <- result{nil, err}
	}()
	s.next()
	s.send(`{"type":"lost","seq":3,"at":8,"member_id":"A","epoch":3,"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":2}]}`)
	s.next()
	s.answer("polled", `"at":9,"epoch":-1,"error":"org.apache.kafka.common.errors.FencedInstanceIdException: fenced","class":"FencedInstanceIdException"`)
	r = <-res
	if r.err == nil || !strings.Contains(r.err.Error(), "FencedInstanceIdException") {
		t.Errorf("Poll after an exception in poll returned %v, want the exception", r.err)
	}
	if got := h.kinds(); !slices.Equal(got, []clients.Kind{clients.Assigned, clients.Revoked, clients.Lost}) {
		t.Errorf("events %v", got)
	}
	if m.Owned().Count() != 0 {
		t.Errorf("Owned() = %v after losing everything", m.Owned())
	}
}

// Commit sends the offsets in order with the time ctx leaves, and returns
// the exception commitSync threw.
func TestCommitCommand(t *testing.T) {
	m, started := newScripted(t, &hookLog{})
	s := startScripted(t, m, started)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := m.Commit(ctx, map[string]map[int32]int64{"t": {2: 9, 0: 5}, "a": {0: 1}})
		errc <- err
	}()
	cmd := s.next()
	want := []process.Offset{{Topic: "a", Partition: 0, Offset: 1}, {Topic: "t", Partition: 0, Offset: 5}, {Topic: "t", Partition: 2, Offset: 9}}
	if cmd.Type != process.TCommit || !slices.Equal(cmd.Offsets, want) {
		t.Fatalf("commit command %+v, want the offsets %v in order", cmd, want)
	}
	if ms := cmd.TimeoutMS; ms < 9000 || ms > 10000 {
		t.Errorf("commit timeout %d ms, want about the 10s ctx leaves", ms)
	}
	s.answer("committed", `"at":2,"epoch":4,"error":"org.apache.kafka.clients.consumer.CommitFailedException: rebalanced","class":"CommitFailedException"`)
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "CommitFailedException") {
		t.Fatalf("Commit returned %v, want the CommitFailedException", err)
	}
	go func() {
		_, err := m.Commit(context.Background(), map[string]map[int32]int64{"t": {0: 6}})
		errc <- err
	}()
	s.next()
	s.answer("committed", `"at":3,"epoch":4`)
	if err := <-errc; err != nil {
		t.Fatalf("Commit returned %v on success", err)
	}
}

// A JVM that dies mid-command ends the command with an error that carries
// its last output; the member is then closed.
func TestJVMDiesMidPoll(t *testing.T) {
	m, started := newScripted(t, &hookLog{})
	s := startScripted(t, m, started)
	errc := clientstest.Async(func() error { _, err := m.Poll(context.Background()); return err })
	s.next()
	io.WriteString(s.stderr, "java.lang.OutOfMemoryError: Java heap space\n")
	s.exit(errors.New("exit status 3"))
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "OutOfMemoryError") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Poll on a dead JVM returned %v, want its exit and last output", err)
	}
	if _, err := m.Poll(context.Background()); err == nil {
		t.Error("Poll after the JVM died returned no error")
	}
}

// Close asks the consumer to close (it leaves the group), waits for the
// JVM, and is idempotent.
func TestClose(t *testing.T) {
	m, started := newScripted(t, &hookLog{})
	s := startScripted(t, m, started)
	errc := clientstest.Async(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return m.Close(ctx)
	})
	if cmd := s.next(); cmd.Type != process.TClose || cmd.TimeoutMS <= 0 {
		t.Fatalf("close sent %+v", cmd)
	}
	s.answer("closed", `"at":4`)
	s.exit(nil)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := m.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Poll after Close returned %v", err)
	}
}

// A JVM that never says ready fails Start within its ctx and is killed.
func TestStartTimesOut(t *testing.T) {
	m, started := newScripted(t, &hookLog{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- m.Start(ctx) }()
	s := <-started
	if h := s.next(); h.Type != process.THello {
		t.Fatalf("first message %+v, want hello", h)
	}
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "ready") {
		t.Fatalf("Start without ready returned %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(time.Second):
		t.Fatal("the JVM that never got ready was not killed")
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts []Opt
		want string
	}{
		{nil, "no runtime"},
		{[]Opt{WithRuntime(Runtime{Classpath: "x"}), Assignor("uniform")}, "does not fit the classic protocol"},
		{[]Opt{WithRuntime(Runtime{Classpath: "x"}), Protocol(clients.Consumer), Assignor("cooperative-sticky")}, "does not fit the consumer protocol"},
	} {
		if _, err := New("m1", "g", []string{"t"}, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%d opts) = %v, want an error with %q", len(tc.opts), err, tc.want)
		}
	}
	if err := CheckVersion("4.4"); err == nil {
		t.Error("CheckVersion(4.4) accepted a version that is no release number")
	}
}

// An exception from poll that the driver marks fatal (the application
// cannot go on from it: here UNRELEASED_INSTANCE_ID to a static member's
// join) stops the member for good: Poll returns it as clients.ErrStopped,
// then again without polling the JVM, and the next command is the close
// its supervisor sends. An exception the driver does not mark fatal (a
// retriable one) is an error of that poll alone.
func TestFatalPollExceptionStopsTheMember(t *testing.T) {
	m, started := newScripted(t, &hookLog{}, InstanceID("g-m1"), Protocol(clients.Consumer))
	s := startScripted(t, m, started)
	errc := make(chan error, 1)
	poll := func() {
		go func() {
			_, err := m.Poll(context.Background())
			errc <- err
		}()
	}
	poll()
	s.next()
	s.answer("polled", `"at":2,"epoch":-1,"error":"org.apache.kafka.common.errors.CoordinatorNotAvailableException: not available","class":"CoordinatorNotAvailableException"`)
	if err := <-errc; err == nil || errors.Is(err, clients.ErrStopped) {
		t.Fatalf("Poll after a retriable exception returned %v, want that error and no stop", err)
	}
	poll()
	s.next()
	s.answer("polled", `"at":3,"epoch":-1,"error":"org.apache.kafka.common.errors.UnreleasedInstanceIdException: The instance ID is still used by another member","class":"UnreleasedInstanceIdException","fatal":true`)
	err := <-errc
	if !errors.Is(err, clients.ErrStopped) || !strings.Contains(err.Error(), "UnreleasedInstanceIdException") {
		t.Fatalf("Poll after a fatal exception returned %v, want clients.ErrStopped with the exception", err)
	}
	if _, again := m.Poll(context.Background()); !errors.Is(again, clients.ErrStopped) {
		t.Fatalf("the next Poll returned %v, want the stop again", again)
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		errc <- m.Close(ctx)
	}()
	if cmd := s.next(); cmd.Type != process.TClose {
		t.Fatalf("after the stop the member sent %+v, want close (no poll)", cmd)
	}
	s.answer("closed", `"at":4`)
	s.exit(nil)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// A JVM that ends on its own (no Close, no Kill) is a process that died:
// the member stopped for good.
func TestJVMEndedOnItsOwnStopsTheMember(t *testing.T) {
	m, started := newScripted(t, &hookLog{})
	s := startScripted(t, m, started)
	errc := clientstest.Async(func() error { _, err := m.Poll(context.Background()); return err })
	s.next()
	s.exit(errors.New("exit status 1"))
	if err := <-errc; !errors.Is(err, clients.ErrStopped) {
		t.Fatalf("Poll on a JVM that died returned %v, want clients.ErrStopped", err)
	}
}
