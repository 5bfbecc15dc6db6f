package process

import (
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// slowListenerEnv makes this test binary a hosting process that binds its
// socket and listens only 300ms later, as a JVM under load may.
const slowListenerEnv = "GROUPQUAKE_TEST_SLOW_LISTENER"

func TestMain(m *testing.M) {
	if os.Getenv(slowListenerEnv) == "1" {
		slowListener(os.Getenv(SocketEnv))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// slowListener binds sock, waits, then listens and greets every member
// until its standard input ends.
func slowListener(sock string) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		os.Exit(2)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		os.Exit(3)
	}
	time.Sleep(300 * time.Millisecond)
	if err := syscall.Listen(fd, 8); err != nil {
		os.Exit(4)
	}
	ln, err := net.FileListener(os.NewFile(uintptr(fd), sock))
	if err != nil {
		os.Exit(5)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "hello\n")
		}
	}()
	io.Copy(io.Discard, os.Stdin)
}

// TestHostDialsAfterTheBindBeforeTheListen: a hosting process whose socket
// file exists before it listens is connected to once it listens, not
// refused (a shared JVM under load did: "connect: connection refused").
func TestHostDialsAfterTheBindBeforeTheListen(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := NewHost(Command{Path: self, Args: []string{"-test.run=^$"}, Env: []string{slowListenerEnv + "=1"}}, nil)
	h.ready = 10 * time.Second
	conn, err := h.Starter()(nil)
	if err != nil {
		t.Fatalf("a member of a hosting process that listens 300ms after its bind: %v", err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(conn.Out(), buf); err != nil || string(buf) != "hello\n" {
		t.Fatalf("read %q, %v; want the hosting process's greeting", buf, err)
	}
	p := conn.(*hostedConn).p
	conn.Wait()
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the hosting process did not exit after its last member ended")
	}
}
