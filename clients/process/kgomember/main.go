// Command kgomember is a member process built on franz-go's group consumer
// that speaks groupquake's member protocol (docs/member-protocol.md) on its
// standard input and output: a small reference implementation in Go, and,
// with -bug, the deliberately broken implementations that prove
// `groupquake member-check` catches each rule it names (the fixtures of
// harness/membercheck's tests). It is never a member kind of a run.
//
//	kgomember [-bug NAME] [-calls client]
//
// Bugs (each breaks one rule):
//
//	records-before-assigned  reports an assignment only after it handed out records of it
//	no-ack-wait              does not wait for the ack of an ownership event
//	missing-answer           never answers commit
//	silent-unknown           ignores a message of a type it does not know
//	wrong-version            answers ready with a version hello did not offer
//	late-revoke              reports a revocation 3s after its callback returned
//	unanswered-call          with -calls client: never reports the answer of its commits
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients/process"
)

// msg is a message of the protocol, as clients/process declares it.
type msg = process.Msg

var (
	bug      = flag.String("bug", "", "the bug to carry (see the package doc)")
	callMode = flag.String("calls", "wire", "who reports the calls: wire (the gateway) or client (this member)")

	outMu sync.Mutex
	out   = bufio.NewWriter(os.Stdout)

	cmds = make(chan msg, 64)
	acks = make(chan uint64, 64)

	seqMu sync.Mutex
	seq   uint64

	cl        *kgo.Client
	hello     msg
	delayed   []msg // records-before-assigned: assignments held back
	delayedMu sync.Mutex
	calls     uint64
)

func emit(m msg) {
	m.At = time.Now().UnixMicro()
	b, _ := json.Marshal(m)
	outMu.Lock()
	out.Write(append(b, '\n'))
	out.Flush()
	outMu.Unlock()
}

func main() {
	flag.Parse()
	go read()
	for m := range cmds {
		switch m.Type {
		case "hello":
			doHello(m)
		case "subscribe":
			doSubscribe(m)
		case "poll":
			doPoll(m)
		case "commit":
			doCommit(m)
		case "close":
			if cl != nil {
				cl.AllowRebalance()
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(max(m.TimeoutMS, 1000))*time.Millisecond)
				cl.LeaveGroupContext(ctx)
				cancel()
				cl.Close()
			}
			emit(msg{Type: "closed", ID: m.ID})
			os.Exit(0)
		default:
			if *bug == "silent-unknown" {
				continue
			}
			emit(msg{Type: "error", ID: m.ID, Code: "unknown_message", Error: "unknown message type " + m.Type})
		}
	}
	// Standard input closed: leave no consumer behind.
	if cl != nil {
		cl.Close()
	}
}

// read routes the harness's lines: a crash ends the process at once, acks
// go to the callback waiting for them, everything else is a command.
func read() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var m msg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			emit(msg{Type: "error", Code: "bad_message", Error: err.Error()})
			continue
		}
		switch m.Type {
		case "crash":
			os.Exit(0) // no leave: the OS closes the connections
		case "ack":
			acks <- m.Seq
		default:
			cmds <- m
		}
	}
	close(cmds)
}

func doHello(m msg) {
	hello = m
	if !slices.Contains(m.Versions, 1) {
		emit(msg{Type: "error", ID: m.ID, Code: "unsupported_version", Fatal: true, Error: fmt.Sprintf("this member speaks version 1, hello offered %v", m.Versions)})
		os.Exit(0)
	}
	v := 1
	if *bug == "wrong-version" {
		v = 2
	}
	emit(msg{Type: "ready", ID: m.ID, Version: v, Client: "franz-go (groupquake kgomember)", Calls: *callMode, Commits: "application"})
}

func doSubscribe(m msg) {
	topics := m.Topics
	if len(topics) == 0 {
		topics = hello.Topics
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(hello.Bootstrap...),
		kgo.ClientID("groupquake-" + hello.Member),
		kgo.ConsumerGroup(hello.Group),
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, c *kgo.Client, ps map[string][]int32) { ownership("assigned", c, ps) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, c *kgo.Client, ps map[string][]int32) { ownership("revoked", c, ps) }),
		kgo.OnPartitionsLost(func(_ context.Context, c *kgo.Client, ps map[string][]int32) { ownership("lost", c, ps) }),
	}
	if hello.GroupProtocol == "consumer" {
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()))
	}
	if hello.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(hello.InstanceID))
	}
	if t := hello.Timers; t != nil && t.SessionMS > 0 {
		opts = append(opts, kgo.SessionTimeout(time.Duration(t.SessionMS)*time.Millisecond))
	}
	if t := hello.Timers; t != nil && t.HeartbeatMS > 0 {
		opts = append(opts, kgo.HeartbeatInterval(time.Duration(t.HeartbeatMS)*time.Millisecond))
	}
	if *callMode == "client" {
		opts = append(opts, kgo.WithHooks(callHooks{}))
	}
	var err error
	cl, err = kgo.NewClient(opts...)
	r := msg{Type: "subscribed", ID: m.ID}
	if err != nil {
		r.Error = err.Error()
	}
	emit(r)
}

// ownership reports a callback and waits for its ack.
func ownership(kind string, c *kgo.Client, ps map[string][]int32) {
	var parts []process.TP
	for t, p := range ps {
		for _, n := range p {
			parts = append(parts, process.TP{Topic: t, Partition: n})
		}
	}
	if len(parts) == 0 {
		return
	}
	memberID, epoch := c.GroupMetadata()
	ev := msg{Type: kind, Partitions: parts, MemberID: memberID, Epoch: &epoch}
	switch {
	case *bug == "records-before-assigned" && kind == "assigned":
		delayedMu.Lock()
		delayed = append(delayed, ev) // reported after the next poll's records
		delayedMu.Unlock()
		return
	case *bug == "late-revoke" && kind == "revoked":
		go func() {
			time.Sleep(3 * time.Second)
			report(ev, true)
		}()
		return
	}
	report(ev, *bug != "no-ack-wait")
}

// report numbers and writes an ownership event, and waits for its ack.
func report(ev msg, wait bool) {
	seqMu.Lock()
	seq++
	ev.Seq = seq
	emit(ev)
	if wait {
		for a := range acks {
			if a == ev.Seq {
				break
			}
		}
	}
	seqMu.Unlock()
}

func doPoll(m msg) {
	cl.AllowRebalance()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(max(m.TimeoutMS, 1))*time.Millisecond)
	fs := cl.PollFetches(ctx)
	cancel()
	_, epoch := cl.GroupMetadata()
	r := msg{Type: "polled", ID: m.ID, Epoch: &epoch}
	fs.EachRecord(func(rec *kgo.Record) {
		x := process.Record{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}
		if rec.Key != nil {
			x.Key = base64.StdEncoding.EncodeToString(rec.Key)
		}
		if rec.Value != nil {
			x.Value = base64.StdEncoding.EncodeToString(rec.Value)
		}
		r.Records = append(r.Records, x)
	})
	emit(r)
	delayedMu.Lock()
	held := delayed
	delayed = nil
	delayedMu.Unlock()
	for _, ev := range held {
		report(ev, true)
	}
}

func doCommit(m msg) {
	if *bug == "missing-answer" {
		return
	}
	eo := map[string]map[int32]kgo.EpochOffset{}
	for _, o := range m.Offsets {
		if eo[o.Topic] == nil {
			eo[o.Topic] = map[int32]kgo.EpochOffset{}
		}
		eo[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Offset}
	}
	r := msg{Type: "committed", ID: m.ID}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(max(m.TimeoutMS, 1000))*time.Millisecond)
	cl.CommitOffsetsSync(ctx, eo, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			r.Error = err.Error()
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					r.PartitionErrors = append(r.PartitionErrors, process.PartitionError{Topic: t.Topic, Partition: p.Partition, Error: kerr.ErrorForCode(p.ErrorCode).(*kerr.Error).Message})
				}
			}
		}
	})
	cancel()
	emit(r)
}

// callHooks reports the group requests kgo writes and their answers
// (-calls client).
type callHooks struct{}

var (
	openMu sync.Mutex
	open   = map[int32]msg{} // by correlation id... kept per op for simplicity
)

var opOf = map[int16]string{
	kmsg.JoinGroup.Int16(): "join", kmsg.SyncGroup.Int16(): "sync", kmsg.Heartbeat.Int16(): "heartbeat",
	kmsg.LeaveGroup.Int16(): "leave", kmsg.ConsumerGroupHeartbeat.Int16(): "heartbeat", kmsg.OffsetCommit.Int16(): "commit",
}

// OnBrokerWrite reports a group request sent.
func (callHooks) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _ time.Duration, _ time.Duration, err error) {
	op, ok := opOf[key]
	if !ok || err != nil {
		return
	}
	openMu.Lock()
	calls++
	c := msg{Type: "call", Call: calls, Op: op, Phase: "sent"}
	open[int32(key)] = c
	openMu.Unlock()
	emit(c)
}

// OnBrokerRead reports its answer (or its loss, as an unknown outcome).
func (callHooks) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _ time.Duration, _ time.Duration, err error) {
	op, ok := opOf[key]
	if !ok {
		return
	}
	openMu.Lock()
	c, was := open[int32(key)]
	delete(open, int32(key))
	openMu.Unlock()
	if !was || (*bug == "unanswered-call" && op == "commit") {
		return
	}
	a := msg{Type: "call", Call: c.Call, Op: op, Phase: "answered"}
	if err != nil {
		a.Error = err.Error()
	}
	emit(a)
}
