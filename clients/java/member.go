// Package java is a clients.Member backed by the official Java
// KafkaConsumer, so that the reference client's guarantees under faults are
// judged like groupquake's own members and kgo's: kinds java-classic
// (classic protocol; eager range or cooperative-sticky, static membership
// by instance id) and java-consumer (KIP-848, server assignor uniform or
// range).
//
// The JVM runs driver/Driver.java, compiled by Toolchain against the
// chosen kafka-clients version, which speaks groupquake's member protocol
// (clients/process, docs/member-protocol.md): the Java member is that
// protocol's first user, a process.Member whose process is a JVM. By
// default each member runs in its own JVM: a crash is then the member's
// process killed, as it would be in production, with the OS closing its
// sockets, and a freeze stops the whole process, its heartbeat thread
// included. Hosted(h) instead runs the member in the Host's one JVM with
// others (the protocol's socket transport), each with its own
// KafkaConsumer, thread and gateway: less memory and a faster start per
// member (see the benchmark), with crash and freeze emulated per member
// (Host says how, and how that differs from a process killed or stopped).
//
// Where the events come from, and why they are honest:
//   - Calls (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//     ConsumerGroupHeartbeat, OffsetCommit): the JVM connects to the brokers
//     only through the member's gateway (clients/process), which reads every
//     request on its way out and every answer on its way in. A request is
//     reported Sent before the broker can see it and answered before the
//     JVM can use the answer: the bracket the history's rule asks for,
//     measured outside the JVM, as for kgo.
//   - Ownership: from the ConsumerRebalanceListener, synchronously (the
//     listener returns only after groupquake acknowledged the event), with
//     the generation (classic) or member epoch (consumer) that
//     consumer.groupMetadata() gives inside the callback.
//   - Records: what consumer.poll returned, with the generation or member
//     epoch held when it returned.
//   - Links: the gateway dials onward with the member's dial function, so
//     the member's own toxiproxy proxies carry its traffic and link faults
//     reach it like any other member.
package java

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/option"
	"github.com/groupquake/groupquake/clients/process"
)

// Opt configures a Member; options are checked once, in New.
type Opt = option.Opt[cfg]

type cfg struct {
	protocol clients.Protocol
	assignor string
	rt       Runtime
	start    process.Starter
	// pass are the options the process.Member is given as they are: those
	// the Java member shares with it, and ProcessOpts, in order.
	pass []process.Opt
}

// pass gives o to the process.Member as it is.
func pass(o ...process.Opt) Opt { return option.New(func(c *cfg) { c.pass = append(c.pass, o...) }) }

// Protocol selects the group protocol: clients.Classic (default) or
// clients.Consumer (group.protocol=consumer).
func Protocol(p clients.Protocol) Opt { return option.New(func(c *cfg) { c.protocol = p }) }

// Assignor names the assignor: for the classic protocol "range" (Java's
// default list, RangeAssignor then CooperativeStickyAssignor: eager
// rebalances, the default) or "cooperative-sticky" (cooperative rebalances);
// for the consumer protocol the server assignor, "uniform" (default) or
// "range" (group.remote.assignor).
func Assignor(name string) Opt { return option.New(func(c *cfg) { c.assignor = name }) }

// InstanceID makes the member static (group.instance.id, KIP-345).
func InstanceID(id string) Opt { return pass(process.InstanceID(id)) }

// WithHooks receives every event the member reports.
func WithHooks(h clients.Hooks) Opt { return pass(process.WithHooks(h)) }

// KgoOpts are the member's links as kgo options (kgo.SeedBrokers and
// kgo.Dialer): the gateway dials the brokers with them.
func KgoOpts(o ...kgo.Opt) Opt { return pass(process.KgoOpts(o...)) }

// SessionTimeout is session.timeout.ms of the classic protocol (0 keeps
// Java's default). With the consumer protocol the broker owns it and Java
// refuses it: it is not passed.
func SessionTimeout(d time.Duration) Opt { return pass(process.SessionTimeout(d)) }

// HeartbeatInterval is heartbeat.interval.ms of the classic protocol (0
// keeps Java's default); not passed with the consumer protocol, as
// SessionTimeout.
func HeartbeatInterval(d time.Duration) Opt { return pass(process.HeartbeatInterval(d)) }

// MaxPollInterval is max.poll.interval.ms (0 keeps Java's default), which
// is also the rebalance timeout the Java client sends.
func MaxPollInterval(d time.Duration) Opt { return pass(process.MaxPollInterval(d)) }

// WithClock sets the time source of events that have no JVM time.
// Default: the wall clock.
func WithClock(cl clients.Clock) Opt { return pass(process.WithClock(cl)) }

// WithRuntime sets the JVM and class path (Toolchain.Prepare). Required.
func WithRuntime(rt Runtime) Opt { return option.New(func(c *cfg) { c.rt = rt }) }

// Stderr receives the JVM's standard error (the client library's log);
// by default the last lines are kept for error messages only.
func Stderr(w io.Writer) Opt { return pass(process.Stderr(w)) }

// ProcessOpts passes options to the underlying process.Member (a
// transcript, for member-check).
func ProcessOpts(o ...process.Opt) Opt { return pass(o...) }

// withStarter replaces the JVM (tests).
func withStarter(s process.Starter) Opt { return option.New(func(c *cfg) { c.start = s }) }

// Member is a Java KafkaConsumer behind clients.Member: a process.Member
// whose process is a JVM running the driver.
type Member struct {
	*process.Member
}

var _ clients.Member = (*Member)(nil)

// New returns a member named name of group, subscribed to topics. The JVM
// starts on Start.
func New(name, group string, topics []string, opts ...Opt) (*Member, error) {
	c := cfg{protocol: clients.Classic}
	option.Apply(&c, opts...)
	switch {
	case name == "":
		return nil, errors.New("java: a member needs a name (the harness's name for it, e.g. m1)")
	case c.protocol != clients.Classic && c.protocol != clients.Consumer:
		return nil, fmt.Errorf("java: member %s: protocol %q is not %q or %q", name, c.protocol, clients.Classic, clients.Consumer)
	case c.start == nil && c.rt.Classpath == "":
		return nil, fmt.Errorf("java: member %s has no runtime: pass WithRuntime(Toolchain.Prepare(...))", name)
	}
	if c.assignor == "" {
		c.assignor = "range"
		if c.protocol == clients.Consumer {
			c.assignor = "uniform"
		}
	}
	ok := c.protocol == clients.Classic && (c.assignor == "range" || c.assignor == "cooperative-sticky") ||
		c.protocol == clients.Consumer && (c.assignor == "uniform" || c.assignor == "range")
	if !ok {
		return nil, fmt.Errorf("java: member %s: assignor %q does not fit the %s protocol (classic: range, cooperative-sticky; consumer: uniform, range)", name, c.assignor, c.protocol)
	}
	if c.start == nil {
		c.start = c.rt.Command(JVMFlags).Starter()
	}
	popts := []process.Opt{
		process.Protocol(c.protocol), process.Assignor(c.assignor), process.Start(c.start), process.Client("the Java consumer"),
		process.Properties(properties(c)),
	}
	pm, err := process.New(name, group, topics, append(popts, c.pass...)...)
	if err != nil {
		return nil, fmt.Errorf("java: %w", err)
	}
	return &Member{pm}, nil
}

// properties are the consumer settings of the kind that hello carries: the
// assignors, as KafkaConsumer names them.
func properties(c cfg) map[string]string {
	if c.protocol == clients.Consumer {
		return map[string]string{"group.remote.assignor": c.assignor}
	}
	strategy := "org.apache.kafka.clients.consumer.RangeAssignor,org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
	if c.assignor == "cooperative-sticky" {
		strategy = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
	}
	return map[string]string{"partition.assignment.strategy": strategy}
}

// KafkaClients is the kafka-clients version the JVM reported (after Start).
func (m *Member) KafkaClients() string {
	return strings.TrimPrefix(m.Ready().Client, "kafka-clients ")
}

// JVMFlags start a small JVM fast: a member needs little heap, and the
// client's code runs too briefly for the optimising compiler to pay off.
var JVMFlags = []string{"-Xms16m", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"}
