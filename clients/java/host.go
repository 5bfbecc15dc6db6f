package java

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groupquake/groupquake/internal/interrupt"
)

// Host is one JVM that hosts many members: the shared mode (Hosted), beside
// the default of one JVM per member. Each hosted member keeps its own
// KafkaConsumer driven by its own thread, its own gateway (its own links,
// so link faults reach it alone) and its own events; only the process is
// shared. The JVM starts with the first member and exits when its last
// member has ended (a later member starts a new one).
//
// Faults cannot be emulated by signals in a shared JVM, so a hosted member
// emulates them (README, "Java members"):
//   - crash (Member.Kill): the member's gateway is cut for good first
//     (every connection closed, new ones refused), so nothing the consumer
//     sends afterwards reaches a broker, no LeaveGroup nor leave heartbeat;
//     then the JVM abandons the consumer: its thread is woken
//     (KafkaConsumer.wakeup), its rebalance listener gives up, and the
//     consumer is closed with no time given (close(Duration.ZERO)) and
//     reports nothing more. Unlike a killed process, the consumer's
//     heartbeat (or background) thread runs until that close, a few
//     milliseconds, against cut links; the broker sees the member's
//     connections closed, as when a process dies.
//   - freeze (Member.Freeze): the member's gateway holds every byte in both
//     directions (the requests already sent wait for their answers; new
//     connections wait before they are dialed), and its thread stops
//     between commands and in its rebalance listener. Unlike SIGSTOP, the
//     consumer's heartbeat thread keeps running inside the JVM: its
//     requests wait in the gateway, unseen by the broker, and a freeze
//     longer than request.timeout.ms (30s) makes the client time them out
//     and reconnect (through the held gateway) where a stopped process
//     would notice nothing until thawed.
type Host struct {
	rt     Runtime
	stderr io.Writer

	mu  sync.Mutex
	cur *hostJVM
	seq uint64
}

// NewHost returns a Host running rt; stderr, if not nil, receives the
// JVM's standard error (the client library's log of every member).
func NewHost(rt Runtime, stderr io.Writer) *Host {
	return &Host{rt: rt, stderr: stderr}
}

// Hosted runs the member in h's JVM instead of a JVM of its own. The
// JVM's standard error goes to NewHost's stderr (the member's Stderr
// option does not apply), and its last lines end the error of a member the
// JVM's exit ended.
func Hosted(h *Host) Opt {
	return opt(func(c *cfg) {
		c.rt = h.rt
		c.start = h.start
	})
}

// HostJVMFlags are JVMFlags with room for many consumers.
var HostJVMFlags = []string{"-Xms32m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"}

// PID is the process id of the hosting JVM running now (0: none).
func (h *Host) PID() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil {
		return 0
	}
	return h.cur.cmd.Process.Pid
}

// start is the Host's starter: it creates a member in the running JVM,
// starting one if none runs.
func (h *Host) start(args []string, _ io.Writer) (proc, error) {
	for _, a := range args {
		if strings.ContainsAny(a, " \n\r") {
			return nil, fmt.Errorf("consumer setting %q has a space or a line break, which a hosting JVM's command line cannot carry", a)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil {
		j, err := h.launch()
		if err != nil {
			return nil, err
		}
		h.cur = j
	}
	h.seq++
	p := &hosted{j: h.cur, id: strconv.FormatUint(h.seq, 10), out: newLineQueue(), gone: make(chan struct{})}
	h.cur.members[p.id] = p
	if err := h.cur.write(p.id + " new " + strings.Join(args, " ")); err != nil {
		delete(h.cur.members, p.id)
		return nil, fmt.Errorf("writing to the hosting JVM: %w", err)
	}
	return p, nil
}

// launch starts a hosting JVM; h.mu is held.
func (h *Host) launch() (*hostJVM, error) {
	j := &hostJVM{h: h, members: map[string]*hosted{}, tail: &tailBuffer{}, exited: make(chan struct{})}
	var stderr io.Writer = j.tail
	if h.stderr != nil {
		stderr = io.MultiWriter(j.tail, h.stderr)
	}
	cmd, in, out, err := h.rt.start(HostJVMFlags, []string{"--host"}, stderr)
	if err != nil {
		return nil, fmt.Errorf("starting the hosting JVM: %w", err)
	}
	j.cmd, j.in = cmd, in
	go j.read(out)
	return j, nil
}

// hostJVM is one run of a Host's JVM.
type hostJVM struct {
	h    *Host
	cmd  *exec.Cmd
	in   io.WriteCloser
	wmu  sync.Mutex
	tail *tailBuffer

	members map[string]*hosted // under h.mu: the members not gone yet
	exited  chan struct{}
}

func (j *hostJVM) write(line string) error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	_, err := io.WriteString(j.in, line+"\n")
	return err
}

// read hands each line to its member until the JVM's stdout closes.
func (j *hostJVM) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var head struct {
			ID string `json:"id"`
			Ev string `json:"ev"`
		}
		if err := json.Unmarshal(sc.Bytes(), &head); err != nil || head.ID == "" {
			continue // a line of no member: nobody to tell
		}
		j.h.mu.Lock()
		p := j.members[head.ID]
		j.h.mu.Unlock()
		if p == nil {
			continue
		}
		if head.Ev == "gone" {
			j.end(p, errors.New("the member ended in the shared JVM (closed or crashed)"))
			continue
		}
		p.out.push(sc.Bytes())
	}
	err := interrupt.Wait(j.cmd)
	if err == nil {
		err = errors.New("the shared JVM exited")
	}
	err = fmt.Errorf("%w; its last output: %s", err, j.tail.String())
	j.h.mu.Lock()
	rest := make([]*hosted, 0, len(j.members))
	for _, p := range j.members {
		rest = append(rest, p)
	}
	if j.h.cur == j {
		j.h.cur = nil
	}
	j.h.mu.Unlock()
	for _, p := range rest {
		j.end(p, err)
	}
	close(j.exited)
}

// end marks p gone; the JVM's last member gone, the JVM is told to exit
// (its standard input closed) and killed if it has not within 10s.
func (j *hostJVM) end(p *hosted, err error) {
	j.h.mu.Lock()
	if _, ok := j.members[p.id]; !ok {
		j.h.mu.Unlock()
		return
	}
	delete(j.members, p.id)
	last := len(j.members) == 0 && j.h.cur == j
	if last {
		j.h.cur = nil
	}
	j.h.mu.Unlock()
	p.goneErr = err
	p.out.close()
	close(p.gone)
	if last {
		j.wmu.Lock()
		j.in.Close()
		j.wmu.Unlock()
		go func() {
			select {
			case <-j.exited:
			case <-time.After(10 * time.Second):
				interrupt.Kill(j.cmd)
			}
		}()
	}
}

// hosted is a member's view of the hosting JVM: its lines, prefixed with
// its id, and the events of its id.
type hosted struct {
	j       *hostJVM
	id      string
	out     *lineQueue
	gone    chan struct{}
	goneErr error
}

type hostedWriter struct{ p *hosted }

func (w hostedWriter) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if err := w.p.j.write(w.p.id + " " + l); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

func (p *hosted) stdin() io.Writer  { return hostedWriter{p} }
func (p *hosted) stdout() io.Reader { return p.out }

// kill abandons the member inside the JVM (the caller has cut its links).
func (p *hosted) kill() error {
	select {
	case <-p.gone:
		return nil
	default:
	}
	if err := p.j.write(p.id + " crash"); err != nil {
		select {
		case <-p.j.exited:
			return nil // the JVM is gone, and the member with it
		default:
			return fmt.Errorf("telling the shared JVM to crash the member: %w", err)
		}
	}
	return nil
}

func (p *hosted) wait() error {
	<-p.gone
	return p.goneErr
}

// awaitGone says whether the member ended within d.
func (p *hosted) awaitGone(d time.Duration) bool {
	select {
	case <-p.gone:
		return true
	case <-time.After(d):
		return false
	}
}

func (p *hosted) freeze(on bool) error {
	cmd := " thaw"
	if on {
		cmd = " freeze"
	}
	return p.j.write(p.id + cmd)
}

func (p *hosted) pid() int { return p.j.cmd.Process.Pid }

// lineQueue is an unbounded reader of lines pushed to it: a slow member
// never holds up the hosting JVM's other members.
type lineQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    bytes.Buffer
	closed bool
}

func newLineQueue() *lineQueue {
	q := &lineQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *lineQueue) push(line []byte) {
	q.mu.Lock()
	q.buf.Write(line)
	q.buf.WriteByte('\n')
	q.mu.Unlock()
	q.cond.Broadcast()
}

func (q *lineQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

func (q *lineQueue) Read(b []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.buf.Len() == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.buf.Len() == 0 {
		return 0, io.EOF
	}
	return q.buf.Read(b)
}
