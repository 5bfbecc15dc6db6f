package java

import (
	"io"

	"github.com/groupquake/groupquake/clients/internal/option"
	"github.com/groupquake/groupquake/clients/process"
)

// Host is one JVM that hosts many members: the shared mode (Hosted), beside
// the default of one JVM per member. It is the member protocol's socket
// transport (process.Host): the JVM listens on a Unix socket and each
// hosted member is one connection speaking the protocol. Each hosted
// member keeps its own KafkaConsumer driven by its own thread, its own
// gateway (its own links, so link faults reach it alone) and its own
// events; only the process is shared. The JVM starts with the first member
// and exits when its last member has ended (a later member starts a new
// one).
//
// Faults cannot be emulated by signals in a shared JVM, so a hosted member
// emulates them (docs/members.md, "Java members"):
//   - crash (Member.Kill): the member's gateway is cut for good first
//     (every connection closed, new ones refused), so nothing the consumer
//     sends afterwards reaches a broker, no LeaveGroup nor leave heartbeat;
//     then the JVM is told crash and abandons the consumer: its thread is
//     woken (KafkaConsumer.wakeup), its rebalance listener gives up, and the
//     consumer is closed with no time given (close(Duration.ZERO)) and
//     reports nothing more. Unlike a killed process, the consumer's
//     heartbeat (or background) thread runs until that close, a few
//     milliseconds, against cut links; the broker sees the member's
//     connections closed, as when a process dies.
//   - freeze (Member.Freeze): the member's gateway holds every byte in both
//     directions (the requests already sent wait for their answers; new
//     connections wait before they are dialed), and the JVM is told freeze:
//     the member's thread stops between commands and in its rebalance
//     listener. Unlike SIGSTOP, the consumer's heartbeat thread keeps
//     running inside the JVM: its requests wait in the gateway, unseen by
//     the broker, and a freeze longer than request.timeout.ms (30s) makes
//     the client time them out and reconnect (through the held gateway)
//     where a stopped process would notice nothing until thawed.
type Host struct {
	h *process.Host
}

// NewHost returns a Host running rt; stderr, if not nil, receives the
// JVM's standard error (the client library's log of every member).
func NewHost(rt Runtime, stderr io.Writer) *Host {
	return &Host{h: process.NewHost(rt.Command(HostJVMFlags), stderr)}
}

// Hosted runs the member in h's JVM instead of a JVM of its own. The
// JVM's standard error goes to NewHost's stderr (the member's Stderr
// option does not apply), and its last lines end the error of a member the
// JVM's exit ended.
func Hosted(h *Host) Opt {
	return option.New(func(c *cfg) { c.start = h.h.Starter() })
}

// HostJVMFlags are JVMFlags with room for many consumers.
var HostJVMFlags = []string{"-Xms32m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"}

// PID is the process id of the hosting JVM running now (0: none).
func (h *Host) PID() int { return h.h.PID() }
