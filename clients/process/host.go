package process

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/groupquake/groupquake/internal/interrupt"
)

// SocketEnv is the environment variable that asks a process to host
// members on a local socket (the protocol's socket transport): its value is
// the path of the Unix socket to listen on. Each connection the harness
// opens is one member speaking the protocol exactly as over standard input
// and output; the process exits once its standard input closes.
const SocketEnv = "GROUPQUAKE_MEMBER_SOCKET"

// Host is one process that hosts many members, one socket connection each
// (the socket transport): less memory and a faster start per member than a
// process each, for a client whose runtime is heavy (a JVM). The process
// starts with the first member and is told to exit (its standard input
// closed) when its last member has ended; a later member starts a new one.
//
// A hosted member cannot be killed or stopped by a signal without the
// others, so the harness crashes it with the crash message (after cutting
// its links for good, so nothing it sends afterwards reaches a broker) and
// freezes it with freeze and thaw (holding its links meanwhile), which the
// client must then declare it supports (capability "freeze").
type Host struct {
	cmd    Command
	stderr io.Writer
	ready  time.Duration

	mu  sync.Mutex
	cur *hostProc
}

// NewHost returns a Host that runs cmd; stderr, if not nil, receives the
// process's standard error (the log of every member it hosts).
func NewHost(cmd Command, stderr io.Writer) *Host {
	return &Host{cmd: cmd, stderr: stderr, ready: 2 * time.Minute}
}

// PID is the process id of the hosting process running now (0: none).
func (h *Host) PID() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil {
		return 0
	}
	return h.cur.cmd.Process.Pid
}

// Starter connects each member to the hosting process, starting it first
// if none runs.
func (h *Host) Starter() Starter {
	return func(io.Writer) (Conn, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.cur == nil {
			p, err := h.launch()
			if err != nil {
				return nil, err
			}
			h.cur = p
		}
		p := h.cur
		c, err := p.dial(h.ready)
		if err != nil {
			return nil, fmt.Errorf("connecting to the hosting process %s: %w; its last output: %s", h.cmd, err, p.tail.String())
		}
		p.members++
		return &hostedConn{p: p, c: c}, nil
	}
}

// launch starts the hosting process and waits until it listens; h.mu is
// held.
func (h *Host) launch() (*hostProc, error) {
	dir, err := os.MkdirTemp("", "groupquake-members-")
	if err != nil {
		return nil, err
	}
	p := &hostProc{h: h, dir: dir, sock: filepath.Join(dir, "members.sock"), tail: &TailBuffer{}, exited: make(chan struct{})}
	var stderr io.Writer = p.tail
	if h.stderr != nil {
		stderr = io.MultiWriter(p.tail, h.stderr)
	}
	cmd, in, out, err := h.cmd.start(stderr, []string{SocketEnv + "=" + p.sock})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting the hosting process: %w", err)
	}
	p.cmd, p.in = cmd, in
	go func() {
		io.Copy(io.Discard, out) // standard output carries nothing in the socket transport
		p.exitErr = interrupt.Wait(cmd)
		os.RemoveAll(dir)
		h.mu.Lock()
		if h.cur == p {
			h.cur = nil
		}
		h.mu.Unlock()
		close(p.exited)
	}()
	deadline := time.Now().Add(h.ready)
	for {
		if _, err := os.Stat(p.sock); err == nil {
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("the hosting process %s exited before it listened on %s (%v); its last output: %s", h.cmd, SocketEnv, p.exitErr, p.tail.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			interrupt.Kill(cmd)
			return nil, fmt.Errorf("the hosting process %s did not listen on its socket within %s; its last output: %s", h.cmd, h.ready, p.tail.String())
		}
	}
}

// dial connects to the hosting process's socket. The socket's file exists
// from the process's bind, a moment before it listens (Java's bind does
// both, one after the other): a connection refused in between is tried
// again, every 20ms, until the process listens, exits, or within is up.
func (p *hostProc) dial(within time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(within)
	for {
		c, err := net.Dial("unix", p.sock)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return c, err
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%w (the process exited: %v)", err, p.exitErr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// hostProc is one run of a Host's process.
type hostProc struct {
	h       *Host
	cmd     *exec.Cmd
	in      io.WriteCloser
	dir     string
	sock    string
	tail    *TailBuffer
	members int // under h.mu: connections not ended yet
	exited  chan struct{}
	exitErr error
}

// done is called once per member whose connection ended; the last one
// closes the process's standard input and kills it if it has not exited
// within 10s.
func (p *hostProc) done() {
	p.h.mu.Lock()
	p.members--
	last := p.members == 0
	if last && p.h.cur == p {
		p.h.cur = nil
	}
	p.h.mu.Unlock()
	if !last {
		return
	}
	p.in.Close()
	go func() {
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			interrupt.Kill(p.cmd)
		}
	}()
}

// hostedConn is one member's connection to a hosting process.
type hostedConn struct {
	p    *hostProc
	c    net.Conn
	once sync.Once
}

func (c *hostedConn) In() io.Writer  { return c.c }
func (c *hostedConn) Out() io.Reader { return c.c }
func (c *hostedConn) Pid() int       { return c.p.cmd.Process.Pid }
func (c *hostedConn) Hosted() bool   { return true }

func (c *hostedConn) Kill() error {
	return errors.New("a hosted member is crashed by the crash message, not killed")
}

func (c *hostedConn) Stop(bool) error {
	return errors.New("a hosted member is frozen by the freeze message, not stopped")
}

// Wait is called once the member's stream has ended: the connection is
// closed, and the error says whether the hosting process ended with it.
func (c *hostedConn) Wait() error {
	c.once.Do(func() {
		c.c.Close()
		c.p.done()
	})
	select {
	case <-c.p.exited:
		if c.p.exitErr != nil {
			return fmt.Errorf("the hosting process ended: %w; its last output: %s", c.p.exitErr, c.p.tail.String())
		}
		return fmt.Errorf("the hosting process exited; its last output: %s", c.p.tail.String())
	default:
		return errors.New("the member's connection to the hosting process ended")
	}
}

// TailBuffer keeps the last 4 KiB written to it: a process's standard
// error, for the messages that say why it ended.
type TailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.b)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	if s == "" {
		return "(nothing)"
	}
	return s
}
