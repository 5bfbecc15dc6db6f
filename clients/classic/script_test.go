package classic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/assign"
	"github.com/groupquake/groupquake/clients/clientstest"
)

// TestMachineScripts runs the scripts in testdata/machine: the classic
// member's state machine against scripted coordinator answers, including
// answers lost, late (to a generation the member no longer holds) and
// fatal, with no network and a clock that moves only by `advance`. The
// member is m1 of group g, subscribed to topics a and b; timers: session
// 10s, heartbeat 1s, rebalance 30s, max.poll.interval 60s unless poll=D.
//
// Commands:
//
//	new [instance=ID] [cooperative] [autocommit] [poll=D]
//	                             a member (assignors range and
//	                             cooperative-sticky: EAGER; cooperative:
//	                             cooperative-sticky alone)
//	start                        the first join is due
//	coordinator node=N           FindCoordinator answered node N
//	coordinator error=NAME       FindCoordinator failed
//	prepare                      onJoinPrepare's first half: commit first?
//	join                         (the rest of onJoinPrepare, if due, and)
//	                             the next JoinGroup, if one is due;
//	                             prints it as #N
//	answer-join [to=N] generation=G member=ID [leader=ID] [protocol=P]
//	            [type=T]         JoinGroup N answered (default: the last)
//	answer-join [to=N] error=NAME [member=ID]
//	lost-join [to=N]             JoinGroup N got no answer
//	sync                         the SyncGroup of the generation joined
//	answer-sync [to=N] [a=(..)] [b=(..)] [c=(..)] [protocol=P] [garbage]
//	answer-sync [to=N] error=NAME
//	lost-sync [to=N]
//	heartbeat                    what the heartbeat thread does now
//	answer-heartbeat [to=N] [error=NAME]
//	commit [app]                 a generation-scoped commit of a-0 at 10
//	answer-commit [to=N] error=NAME
//	poll / records a=(..) b=(..) / advance D / close
//
// If it fails, run `go test ./clients/classic -run MachineScripts -rewrite`
// and read the diff before accepting it.
func TestMachineScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/machine", func(t *testing.T, path string) {
		var s *script
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if s == nil && d.Cmd != "new" {
				d.Fatalf(t, "start with new")
			}
			if d.Cmd == "new" {
				s = newScript(t, d)
				return s.state()
			}
			return s.run(t, d)
		})
	})
}

type script struct {
	m        *machine
	now      time.Time
	nextSend time.Time
	// The generations each request was sent with, in order.
	joins, syncs, heartbeats, commits []Generation
	// joined is the generation the last JoinGroup answer gave.
	joined Generation
	// prepared: onJoinPrepare's commit step ran, its revocation is due.
	prepared bool
}

func newScript(t *testing.T, d *datadriven.TestData) *script {
	assignors := []assign.Assignor{assign.Range(), assign.CooperativeSticky()}
	if d.HasArg("cooperative") {
		assignors = []assign.Assignor{assign.CooperativeSticky()}
	}
	p, err := assign.ChooseProtocol(assignors)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	c := machineConfig{
		group: "g", topics: []string{"a", "b"}, assignors: assignors, protocol: p,
		sessionTimeout: 10 * time.Second, heartbeatInterval: time.Second, rebalanceTimeout: 30 * time.Second,
		maxPollInterval: time.Minute, autoCommit: d.HasArg("autocommit"),
	}
	if id, has := clientstest.Arg(t, d, "instance"); has {
		c.instanceID = &id
	}
	if v, has := clientstest.Arg(t, d, "poll"); has {
		p, err := time.ParseDuration(v)
		if err != nil {
			d.Fatalf(t, "poll=%s: %v", v, err)
		}
		c.maxPollInterval = p
	}
	return &script{m: newMachine(c), now: time.Unix(0, 0)}
}

// to picks the request an answer is for: the last one, or to=N.
func to(t *testing.T, d *datadriven.TestData, sent []Generation, what string) Generation {
	if len(sent) == 0 {
		d.Fatalf(t, "no %s sent yet", what)
	}
	n := len(sent)
	if d.HasArg("to") {
		d.ScanArgs(t, "to", &n)
	}
	return sent[n-1]
}

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	var b strings.Builder
	m := s.m
	switch d.Cmd {
	case "start":
		s.outcome(&b, m.start())
	case "coordinator":
		if d.HasArg("error") {
			o, fatal := m.findCoordinatorFailed(scriptError(t, d))
			s.outcome(&b, o)
			if !fatal {
				b.WriteString("retry after a backoff\n")
			}
			break
		}
		var node int
		d.ScanArgs(t, "node", &node)
		s.outcome(&b, m.foundCoordinator(int32(node), m.gen, s.now))
	case "prepare":
		if !m.takeJoinPrepare() {
			b.WriteString("no onJoinPrepare due\n")
			break
		}
		s.prepared = true
		if m.commitBeforeJoin() {
			fmt.Fprintf(&b, "auto-commit first (Poll hands out nothing meanwhile: %v)\n", m.revoking)
		} else {
			b.WriteString("no commit first\n")
		}
	case "join":
		if !m.joinNeeded() {
			b.WriteString("no JoinGroup due\n")
			break
		}
		if !s.prepared && m.takeJoinPrepare() {
			s.prepared = true
			if m.commitBeforeJoin() {
				b.WriteString("auto-commit first\n")
			}
		}
		if s.prepared {
			s.prepared = false
			s.outcome(&b, m.joinPrepared())
		}
		req, sent, _, o, err := m.joinRequest()
		s.outcome(&b, o)
		if err != nil {
			fmt.Fprintf(&b, "no JoinGroup: %v\n", err)
			break
		}
		s.joins = append(s.joins, sent)
		fmt.Fprintf(&b, "#%d %s\n", len(s.joins), joinString(req))
	case "answer-join":
		sent := to(t, d, s.joins, "JoinGroup")
		resp := kmsg.NewPtrJoinGroupResponse()
		if d.HasArg("member") {
			d.ScanArgs(t, "member", &resp.MemberID)
		}
		if d.HasArg("error") {
			err := scriptError(t, d)
			resp.ErrorCode = err.Code
			o, rerr := m.onJoinError(sent, resp, err)
			s.outcome(&b, o)
			s.returned(&b, rerr)
			break
		}
		var gen int
		d.ScanArgs(t, "generation", &gen)
		resp.Generation = int32(gen)
		resp.LeaderID = "other"
		if d.HasArg("leader") {
			d.ScanArgs(t, "leader", &resp.LeaderID)
		}
		proto := "range"
		if d.HasArg("protocol") {
			d.ScanArgs(t, "protocol", &proto)
		}
		resp.Protocol = &proto
		if pt, has := clientstest.Arg(t, d, "type"); has {
			resp.ProtocolType = &pt
		}
		o, gen2, err := m.onJoined(sent, resp, s.now)
		s.outcome(&b, o)
		if err != nil {
			s.returned(&b, err)
			break
		}
		s.joined = gen2
		fmt.Fprintf(&b, "joined generation %d as %s, protocol %s, leader %v\n", gen2.ID, gen2.MemberID, gen2.Protocol, resp.LeaderID == resp.MemberID)
	case "lost-join":
		m.rebalanceFailed(to(t, d, s.joins, "JoinGroup"))
		b.WriteString("retry after a backoff\n")
	case "sync":
		req := m.syncRequest(s.joined, nil)
		s.syncs = append(s.syncs, s.joined)
		fmt.Fprintf(&b, "#%d SyncGroup member=%s generation=%d protocol=%s instance=%s assignments=%d\n",
			len(s.syncs), req.MemberID, req.Generation, str(req.Protocol), str(req.InstanceID), len(req.GroupAssignment))
	case "answer-sync":
		sent := to(t, d, s.syncs, "SyncGroup")
		if d.HasArg("error") {
			o, err := m.onSyncError(sent, scriptError(t, d))
			s.outcome(&b, o)
			s.returned(&b, err)
			break
		}
		resp := kmsg.NewPtrSyncGroupResponse()
		if p, has := clientstest.Arg(t, d, "protocol"); has {
			resp.Protocol = &p
		}
		parts := scriptPartitions(t, d)
		if d.HasArg("garbage") {
			resp.MemberAssignment = []byte{0xff}
		} else if parts.Count() > 0 || d.HasArg("none") {
			bs, err := assign.EncodeAssignment(assign.MemberAssignment{Version: assign.HighestProtocolVersion, Partitions: map[string][]int32(parts)})
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			resp.MemberAssignment = bs
		}
		assigned, derr := assign.DecodeAssignment(resp.MemberAssignment)
		o, err := m.onSynced(sent, resp, derr, s.now)
		s.outcome(&b, o)
		if err != nil {
			s.returned(&b, err)
			break
		}
		o, added := m.joinComplete(sent, fromMap(assigned.Partitions))
		s.outcome(&b, o)
		if added.Count() > 0 {
			fmt.Fprintf(&b, "start consuming %s\n", clientstest.Parts(added))
		}
	case "lost-sync":
		s.outcome(&b, m.syncFailed(to(t, d, s.syncs, "SyncGroup")))
		b.WriteString("retry after a backoff\n")
	case "heartbeat":
		act, wait, o := m.heartbeatTick(s.now, s.nextSend)
		s.outcome(&b, o)
		switch act {
		case tickIdle:
			b.WriteString("idle: not in a generation\n")
			s.nextSend = time.Time{}
		case tickFind:
			b.WriteString("find the coordinator\n")
		case tickWait:
			fmt.Fprintf(&b, "wait %v\n", wait)
		case tickLeave:
			o, leave, gen, coord, _ := m.leaveOnPollExpiry()
			s.outcome(&b, o)
			printLeave(&b, m, leave, gen, coord, "poll timeout")
		case tickSend:
			req := m.heartbeatRequest(m.gen)
			s.heartbeats = append(s.heartbeats, m.gen)
			s.nextSend = s.now.Add(m.cfg.heartbeatInterval)
			fmt.Fprintf(&b, "#%d Heartbeat member=%s generation=%d instance=%s\n", len(s.heartbeats), req.MemberID, req.Generation, str(req.InstanceID))
		}
	case "answer-heartbeat":
		sent := to(t, d, s.heartbeats, "Heartbeat")
		resp := kmsg.NewPtrHeartbeatResponse()
		if d.HasArg("error") {
			resp.ErrorCode = scriptError(t, d).Code
		}
		answer := clients.Event{Kind: clients.Heartbeat, Op: clients.OpHeartbeat, Generation: sent.ID, MemberID: sent.MemberID}
		o, normal := m.onHeartbeat(sent, resp, answer, s.now)
		s.outcome(&b, o)
		if normal {
			b.WriteString("next heartbeat after the interval\n")
		} else {
			b.WriteString("next heartbeat after a backoff\n")
			s.nextSend = s.now.Add(100 * time.Millisecond)
		}
	case "commit":
		offsets := map[string]map[int32]int64{"a": {0: 10}}
		gen, refused, err := m.commitGate(offsets, d.HasArg("app"))
		if refused != nil {
			s.event(&b, *refused)
		}
		if err != nil {
			fmt.Fprintf(&b, "not sent: %v\n", err)
			break
		}
		req := m.commitRequest(gen, offsets)
		s.commits = append(s.commits, gen)
		fmt.Fprintf(&b, "#%d OffsetCommit member=%s generation=%d instance=%s\n", len(s.commits), req.MemberID, req.Generation, str(req.InstanceID))
	case "answer-commit":
		o, err := m.onCommitError(to(t, d, s.commits, "OffsetCommit"), scriptError(t, d))
		s.outcome(&b, o)
		if err != nil {
			fmt.Fprintf(&b, "returns %v\n", err)
		}
	case "poll":
		s.outcome(&b, m.polled(s.now))
	case "records":
		var out, held []string
		for t, ps := range scriptPartitions(t, d) {
			for _, p := range ps {
				name := fmt.Sprintf("%s-%d", t, p)
				if m.handsOut(t, p) {
					out = append(out, name)
				} else {
					held = append(held, name)
				}
			}
		}
		slices.Sort(out)
		slices.Sort(held)
		fmt.Fprintf(&b, "hands out %v, holds back %v\n", out, held)
	case "advance":
		if len(d.CmdArgs) != 1 {
			d.Fatalf(t, "advance D")
		}
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		s.now = s.now.Add(dur)
		fmt.Fprintf(&b, "now %v\n", s.now.Sub(time.Unix(0, 0)))
	case "close":
		if m.commitOnClose() {
			b.WriteString("auto-commit first\n")
		}
		o, leave, gen, coord := m.leavePrepare()
		s.outcome(&b, o)
		printLeave(&b, m, leave, gen, coord, "closing")
		m.closed()
	default:
		d.Fatalf(t, "unknown command %s", d.Cmd)
	}
	return b.String() + s.state()
}

// printLeave prints the LeaveGroup the member sends (to coord, in
// generation gen, for why), or that it sends none.
func printLeave(b *strings.Builder, m *machine, leave bool, gen Generation, coord int32, why string) {
	if !leave {
		b.WriteString("no LeaveGroup\n")
		return
	}
	req := m.leaveRequest(gen, why)
	fmt.Fprintf(b, "LeaveGroup to node %d member=%s instance=%s\n", coord, req.Members[0].MemberID, str(req.Members[0].InstanceID))
}

func (s *script) outcome(b *strings.Builder, o outcome) {
	for _, e := range o.events {
		s.event(b, e)
	}
	if o.wakeJoin {
		b.WriteString("wake the join loop\n")
	}
	if o.wakeHeartbeat {
		b.WriteString("wake the heartbeat loop\n")
	}
}

func (s *script) event(b *strings.Builder, e clients.Event) {
	fmt.Fprintf(b, "event %s gen=%d member=%s", e.Kind, e.Generation, orDash(e.MemberID))
	if e.Err != "" {
		fmt.Fprintf(b, " err=%s", e.Err)
	}
	if e.Partitions != nil {
		fmt.Fprintf(b, " partitions=%s", clientstest.Parts(e.Partitions))
	}
	if e.Kind == clients.FoundCoordinator || e.Node != 0 {
		fmt.Fprintf(b, " node=%d", e.Node)
	}
	b.WriteString("\n")
}

// returned says what the loop does with an error a step returned.
func (s *script) returned(b *strings.Builder, err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrFatal):
		b.WriteString("stopped for good\n")
	case errors.Is(err, errRetryNow):
		b.WriteString("rejoin at once\n")
	default:
		b.WriteString("retry after a backoff\n")
	}
}

func (s *script) state() string {
	m := s.m
	coord := "-"
	if m.coord >= 0 {
		coord = strconv.Itoa(int(m.coord))
	}
	rejoin := "-"
	if m.rejoin {
		rejoin = fmt.Sprintf("%q", m.rejoinWhy)
	}
	var flags []string
	for _, f := range []struct {
		on   bool
		name string
	}{{m.joinPrepare, "prepare"}, {m.pollExpired, "poll-expired"}, {m.revoking, "revoking"}, {m.fatal != nil, "fatal"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	extra := ""
	if len(flags) > 0 {
		extra = " " + strings.Join(flags, " ")
	}
	return fmt.Sprintf("state=%s gen=%d member=%s owned=%s coordinator=%s rejoin=%s%s\n",
		m.st, m.gen.ID, orDash(m.gen.MemberID), clientstest.Parts(m.owned), coord, rejoin, extra)
}

func joinString(r *kmsg.JoinGroupRequest) string {
	var protos []string
	for _, p := range r.Protocols {
		sub, err := assign.DecodeSubscription(p.Metadata)
		if err != nil {
			protos = append(protos, p.Name+"{undecodable}")
			continue
		}
		desc := fmt.Sprintf("%s{owned=%s gen=%d", p.Name, clientstest.Parts(clients.Partitions(sub.Owned)), sub.Generation)
		if p.Name == assign.CooperativeStickyName && len(sub.UserData) >= 4 {
			desc += fmt.Sprintf(" userdata-gen=%d", int32(binary.BigEndian.Uint32(sub.UserData)))
		}
		protos = append(protos, desc+"}")
	}
	return fmt.Sprintf("JoinGroup member=%s instance=%s session=%d rebalance=%d reason=%q protocols=%s",
		orDash(r.MemberID), str(r.InstanceID), r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, str(r.Reason), strings.Join(protos, " "))
}

func scriptError(t *testing.T, d *datadriven.TestData) *kerr.Error {
	var name string
	d.ScanArgs(t, "error", &name)
	return clientstest.KafkaError(t, d, name)
}

func scriptPartitions(t *testing.T, d *datadriven.TestData) clients.Partitions {
	out := clients.Partitions{}
	for _, name := range []string{"a", "b", "c"} {
		if ps := clientstest.ArgPartitions(t, d, name); len(ps) > 0 {
			out[name] = ps
		}
	}
	return out
}

func str(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
