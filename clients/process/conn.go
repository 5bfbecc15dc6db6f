package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"github.com/groupquake/groupquake/internal/interrupt"
)

// Conn is one member's stream of the protocol: the standard input and
// output of a process of its own, or one connection to a process that
// hosts many (Host).
type Conn interface {
	// In carries the harness's messages, Out the client's.
	In() io.Writer
	Out() io.Reader
	// Kill ends a process of its own at once (SIGKILL, the OS closes its
	// sockets). A hosted member is crashed by the crash message instead.
	Kill() error
	// Wait returns once the stream has ended, with the process's exit error
	// (a hosted member: why its connection ended).
	Wait() error
	// Stop stops (SIGSTOP) or resumes (SIGCONT) a process of its own.
	Stop(on bool) error
	// Pid is the process id (the hosting process's for a hosted member).
	Pid() int
	// Hosted says whether the process hosts other members too.
	Hosted() bool
}

// Starter starts a member's process (or connects to the one that hosts it);
// stderr receives the process's standard error.
type Starter func(stderr io.Writer) (Conn, error)

// Command is a program to run as a member: one process per member, the
// protocol on its standard input and output.
type Command struct {
	// Path and Args: the program and its arguments (Args without the
	// program's name).
	Path string
	Args []string
	// Env is added to the harness's environment.
	Env []string
	// Dir is the working directory (empty: the harness's).
	Dir string
}

// String is the command as a user would type it.
func (c Command) String() string {
	return shellJoin(append([]string{c.Path}, c.Args...))
}

// Starter starts c as a process of its own for each member.
func (c Command) Starter() Starter {
	return func(stderr io.Writer) (Conn, error) {
		cmd, in, out, err := c.start(stderr, nil)
		if err != nil {
			return nil, err
		}
		return &procConn{cmd: cmd, in: in, out: out}, nil
	}
}

// start runs c in a process group of its own that dies with groupquake
// (Ctrl-C reaches the harness, which closes the member in order or kills
// it), with env added.
func (c Command) start(stderr io.Writer, env []string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	if c.Path == "" {
		return nil, nil, nil, errors.New("no program to run as the member")
	}
	cmd := interrupt.Command(context.Background(), c.Path, c.Args...)
	cmd.Dir = c.Dir
	if len(c.Env) > 0 || len(env) > 0 {
		cmd.Env = append(append(cmd.Environ(), c.Env...), env...)
	}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := interrupt.Start(cmd); err != nil {
		return nil, nil, nil, fmt.Errorf("starting %s: %w", c, err)
	}
	return cmd, in, out, nil
}

// procConn is a process of one member.
type procConn struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out io.ReadCloser
}

func (p *procConn) In() io.Writer  { return p.in }
func (p *procConn) Out() io.Reader { return p.out }
func (p *procConn) Kill() error    { return interrupt.Kill(p.cmd) }
func (p *procConn) Wait() error    { return interrupt.Wait(p.cmd) }
func (p *procConn) Pid() int       { return p.cmd.Process.Pid }
func (p *procConn) Hosted() bool   { return false }

func (p *procConn) Stop(on bool) error {
	sig := syscall.SIGCONT
	if on {
		sig = syscall.SIGSTOP
	}
	// The whole process group: a launcher script's child stops with it.
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return p.cmd.Process.Signal(sig)
	}
	return nil
}

// shellJoin quotes args for a POSIX shell where needed.
func shellJoin(args []string) string {
	out := slices.Clone(args)
	for i, a := range out {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$`\\|&;<>()*?[]#~") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
