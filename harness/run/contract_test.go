package run_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/wiretap"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// contractLatency is the delay the suite puts on each direction of a
// member's link once it owns its partitions.
const contractLatency = 300 * time.Millisecond

// TestMemberContract is the clients contract suite: every member kind of
// kinds.Default() joins a group of its own on the embedded cluster
// (the reference coordinator in-process, no Docker), takes the topic's
// partitions, commits through the driver's door, has its link slowed by
// contractLatency, commits again, keeps heartbeating and leaves. Its history,
// written by the HookRecorder, must show every group request as a call:
//
//   - every join, sync, heartbeat, leave and commit is an invoke followed
//     later by its completion on the lane's process (name/join for join and
//     sync, name/hb for heartbeat and leave, name or name/commit for
//     commits), never a standalone event and never two open on one process;
//   - the invokes carry what the requests carried: the sequence of
//     (op, generation or member epoch, offsets) per lane equals what a wire
//     tap between the member and its link saw written (for kgo's members the
//     tap and the reporter share clients/wiretap, so this checks only the
//     plumbing; for groupquake's it is independent), except that a call
//     whose outcome is unknown (completed as info) may be missing from the
//     wire: a member reports a request sent when it hands it to kgo, and a
//     close can cancel it before kgo writes it (sameWrites);
//   - once the link is slowed, every answered call takes at least
//     contractLatency from invoke to completion (ordering, not speed: the
//     answer cannot come back before the request has crossed the link).
//
// HistoryWellFormed and EpochMonotonic must hold on the history.
func TestMemberContract(t *testing.T) {
	e := clustertest.Embedded(t, cluster.EmbeddedConfig{})
	clustertest.CreateTopic(t, e, "contract", 3)
	// The broken kinds too: a deliberate bug is in what the member does,
	// never in how it reports what it sent (a stale commit that reached
	// the coordinator must be in the history as a call, or the checker
	// that should catch it judges a history without it).
	reg := kinds.Default()
	var broken []string
	for _, k := range kinds.BrokenKinds() {
		broken = append(broken, k.Name)
	}
	reg = reg.WithBroken(broken).WithGoClients(kinds.GoClients().Names())
	for _, kind := range reg.Names() {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			contract(t, e, kind, reg[kind])
		})
	}
}

// witness records the tracked requests a member writes, per lane.
type witness struct {
	group string
	proto clients.Protocol
	mu    sync.Mutex
	lanes map[clients.Lane][]string
}

func (w *witness) Wants(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.LeaveGroup, kmsg.ConsumerGroupHeartbeat, kmsg.OffsetCommit:
		return true
	}
	return false
}

func (w *witness) Request(req kmsg.Request) any {
	var op clients.Op
	var s string
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		if r.Group == w.group {
			op, s = clients.OpJoin, "join"
		}
	case *kmsg.SyncGroupRequest:
		if r.Group == w.group {
			op, s = clients.OpSync, fmt.Sprintf("sync gen=%d", r.Generation)
		}
	case *kmsg.HeartbeatRequest:
		if r.Group == w.group {
			op, s = clients.OpHeartbeat, fmt.Sprintf("heartbeat epoch=%d", r.Generation)
		}
	case *kmsg.LeaveGroupRequest:
		if r.Group == w.group {
			op, s = clients.OpLeave, "leave"
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		if r.Group == w.group {
			op, s = clients.OpHeartbeat, fmt.Sprintf("heartbeat epoch=%d", r.MemberEpoch)
			if r.MemberEpoch < 0 {
				op, s = clients.OpLeave, fmt.Sprintf("leave epoch=%d", r.MemberEpoch)
			}
		}
	case *kmsg.OffsetCommitRequest:
		if r.Group == w.group {
			var offs []string
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					offs = append(offs, fmt.Sprintf("%d:%d", p.Partition, p.Offset))
				}
			}
			slices.Sort(offs)
			op, s = clients.OpCommit, fmt.Sprintf("commit epoch=%d %s", r.Generation, strings.Join(offs, ","))
		}
	}
	if op != "" {
		w.mu.Lock()
		w.lanes[op.Lane()] = append(w.lanes[op.Lane()], s)
		w.mu.Unlock()
	}
	return nil
}

func (w *witness) Response(any, kmsg.Response) {}
func (w *witness) Lost(any, error)             {}
func (w *witness) Broken(err error)            { panic(fmt.Sprintf("wire tap broke: %v", err)) }

func (w *witness) get() map[clients.Lane][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[clients.Lane][]string{}
	for l, s := range w.lanes {
		out[l] = slices.Clone(s)
	}
	return out
}

// laneCall is one invoke of a lane rendered the way witness renders
// requests, and whether the call's outcome is unknown (completed as info).
type laneCall struct {
	req     string
	unknown bool
}

// invokes renders the history's invokes of one member the way witness
// renders requests, per lane, each with whether its outcome is unknown.
func invokes(t *testing.T, es []history.Event, name string, proto clients.Protocol) map[clients.Lane][]laneCall {
	t.Helper()
	partner, err := history.Pairs(es)
	if err != nil {
		t.Errorf("pairing the history: %v", err)
	}
	out := map[clients.Lane][]laneCall{}
	for i, e := range es {
		if e.Type != history.Invoke {
			continue
		}
		var op clients.Op
		var s string
		switch v := e.Value.(type) {
		case history.Join:
			op, s = clients.OpJoin, "join"
		case history.Sync:
			op, s = clients.OpSync, fmt.Sprintf("sync gen=%d", v.Generation)
		case history.Heartbeat:
			op, s = clients.OpHeartbeat, fmt.Sprintf("heartbeat epoch=%d", v.Epoch)
		case history.Leave:
			op, s = clients.OpLeave, "leave"
			if proto == clients.Consumer {
				s = fmt.Sprintf("leave epoch=%d", v.Epoch)
			}
		case history.Commit:
			var offs []string
			for _, o := range v.Offsets {
				offs = append(offs, fmt.Sprintf("%d:%d", o.Partition, o.Offset))
			}
			slices.Sort(offs)
			op, s = clients.OpCommit, fmt.Sprintf("commit epoch=%d %s", v.Epoch, strings.Join(offs, ","))
		default:
			continue
		}
		unknown := partner != nil && partner[i] > i && es[partner[i]].Type == history.Info
		out[op.Lane()] = append(out[op.Lane()], laneCall{req: s, unknown: unknown})
	}
	return out
}

// sameWrites reports whether the requests written on one lane (wire, in
// the order the tap saw them) are the lane's invokes (calls, in history
// order) with some calls of unknown outcome left out, and nothing else.
//
// A call whose outcome is unknown may never have been written: a member
// reports a request sent when it hands it to its client library
// (clients.Sent), and kgo checks the request's context once more right
// before it writes (broker.handleReq), so a member's close that cancels the
// context in between ends the call with "context canceled" and nothing on
// the wire. The member cannot tell this from a request written whose
// answer it stopped waiting for, and the history says just that: an info
// completion, the outcome unknown. Every call completed ok or fail must
// have been written, and every request written must be an invoke, in the
// same order. (Info also completes calls that were answered, such as a
// leave refused with an error: those are excused too, which is no looser
// than the history's own reading of them, an outcome unknown.)
func sameWrites(calls []laneCall, wire []string) bool {
	// can[i][j]: calls[i:] account for wire[j:].
	can := make([][]bool, len(calls)+1)
	for i := range can {
		can[i] = make([]bool, len(wire)+1)
	}
	can[len(calls)][len(wire)] = true
	for i := len(calls) - 1; i >= 0; i-- {
		for j := len(wire); j >= 0; j-- {
			c := calls[i]
			can[i][j] = (c.unknown && can[i+1][j]) ||
				(j < len(wire) && c.req == wire[j] && can[i+1][j+1])
		}
	}
	return can[0][0]
}

// renderCalls is calls one a line, the unknown ones marked.
func renderCalls(calls []laneCall) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString(c.req)
		if c.unknown {
			b.WriteString(" (outcome unknown: may not have been written)")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func contract(t *testing.T, e *cluster.Embedded, kind string, f kinds.Factory) {
	name := "c-" + kind
	group := "contract-" + kind
	start := time.Now()
	var buf bytes.Buffer
	rec, err := history.NewRecorder(&buf, func() time.Duration { return time.Since(start) }, history.Retain())
	if err != nil {
		t.Fatal(err)
	}
	links, err := e.Links(name)
	if err != nil {
		t.Fatal(err)
	}
	wit := &witness{group: group, proto: f.Protocol, lanes: map[clients.Lane][]string{}}
	var hopts []run.HookOpt
	if f.ResendsCommits {
		hopts = append(hopts, run.ResendsCommits())
	}
	h := run.NewHookRecorder(rec, name, string(f.Protocol), hopts...)
	m, err := f.New(kinds.MemberSpec{
		Name: name, Group: group, Topics: []string{"contract"},
		KgoOpts: []kgo.Opt{kgo.SeedBrokers(links.Seeds()...), kgo.Dialer(wiretap.Dialer(links.Dialer(), wit))},
		Hooks:   h, SessionTimeout: 6 * time.Second, HeartbeatInterval: 300 * time.Millisecond, RebalanceTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pollCtx, stopPolling := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			pctx, pcancel := context.WithTimeout(pollCtx, 100*time.Millisecond)
			m.Poll(pctx)
			pcancel()
		}
	}()
	waitUntil(t, ctx, "the member owns the topic's 3 partitions", func() bool { return m.Owned().Count() == 3 })

	commit := func(offset int64) {
		t.Helper()
		offs := map[string]map[int32]int64{}
		for tp, ps := range m.Owned() {
			offs[tp] = map[int32]int64{}
			for _, p := range ps {
				offs[tp][p] = offset
			}
		}
		c := history.Commit{Member: name, Protocol: string(f.Protocol), Epoch: -1}
		if err := h.CommitInvoke(c, "contract: commit"); err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithTimeout(ctx, 15*time.Second)
		perrs, err := m.Commit(cctx, offs)
		ccancel()
		if err := h.CommitReturned(c, perrs, err); err != nil {
			t.Fatal(err)
		}
		if err != nil || len(perrs) > 0 {
			t.Errorf("commit of %d: %v %v", offset, perrs, err)
		}
	}
	commit(1)

	slowAt := int(rec.Len())
	if _, err := rec.Info("harness", "slow-link", map[string]any{"latency_ms": contractLatency.Milliseconds()}, "contract: every direction of the member's link delayed"); err != nil {
		t.Fatal(err)
	}
	if err := links.Latency(cluster.AllNodes, contractLatency, 0); err != nil {
		t.Fatal(err)
	}
	commit(2)
	heartbeatsAfter := func() int {
		n := 0
		for i, ev := range rec.Events() {
			if i > slowAt && ev.F == history.FHeartbeat && ev.Type != history.Invoke {
				n++
			}
		}
		return n
	}
	waitUntil(t, ctx, "two heartbeats answered over the slow link", func() bool { return heartbeatsAfter() >= 2 })
	stopPolling()
	<-polled
	if err := m.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := h.Finish(); err != nil {
		t.Errorf("recorder: %v", err)
	}

	es := rec.Events()
	defer func() {
		if t.Failed() {
			t.Logf("history:\n%s", dump(es))
		}
	}()
	if v := check.HistoryWellFormed(es); !v.Holds {
		t.Fatalf("HistoryWellFormed: %+v", v.Violations)
	}
	if v := check.EpochMonotonic(es, nil); !v.Holds {
		t.Errorf("EpochMonotonic: %+v", v.Violations)
	}
	partner, err := history.Pairs(es)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	slowest := time.Duration(0)
	for i, ev := range es {
		switch ev.F {
		case history.FJoin, history.FSync, history.FHeartbeat, history.FLeave, history.FCommit:
		default:
			continue
		}
		want := map[string]string{history.FJoin: name + "/join", history.FSync: name + "/join", history.FHeartbeat: name + "/hb", history.FLeave: name + "/hb"}[ev.F]
		if ev.F == history.FCommit {
			want = name // every commit here is the driver's
		}
		if ev.Process != want {
			t.Errorf("event %d: %s %s on process %s, want %s", ev.Index, ev.Type, ev.F, ev.Process, want)
		}
		p := partner[i]
		if ev.Type != history.Invoke {
			if p < 0 {
				t.Errorf("event %d: %s %s without its invoke", ev.Index, ev.Type, ev.F)
			}
			continue
		}
		calls[ev.F]++
		if p < 0 {
			t.Errorf("event %d: %s invoke never completed", ev.Index, ev.F)
			continue
		}
		done := es[p]
		if p <= i || done.Time < ev.Time {
			t.Errorf("event %d: %s completion %d at %v is not after its invoke at %v", ev.Index, ev.F, done.Index, done.Time, ev.Time)
		}
		if i > slowAt && done.Type != history.Info {
			took := done.Time - ev.Time
			slowest = max(slowest, took)
			if took < contractLatency {
				t.Errorf("event %d: %s invoked after the link was slowed by %v took %v from invoke to completion", ev.Index, ev.F, contractLatency, took)
			}
		}
	}
	needs := []string{history.FHeartbeat, history.FLeave, history.FCommit}
	if f.Protocol == clients.Classic {
		needs = append(needs, history.FJoin, history.FSync)
	}
	for _, fn := range needs {
		if calls[fn] == 0 {
			t.Errorf("no %s call in the history", fn)
		}
	}
	for _, ev := range es {
		if ev.F == run.FNotSent {
			t.Errorf("event %d: an outcome reported without its request (%s)", ev.Index, ev.Why)
		}
	}
	got, sent := invokes(t, es, name, f.Protocol), wit.get()
	for _, lane := range []clients.Lane{clients.LaneJoin, clients.LaneHeartbeat, clients.LaneCommit} {
		if !sameWrites(got[lane], sent[lane]) {
			t.Errorf("lane %s: the history's invokes differ from the requests written:\nhistory:\n%s\nwire:\n%s", lane, renderCalls(got[lane]), strings.Join(sent[lane], "\n"))
		}
	}
	t.Logf("%s: calls %v; slowest answered call over the %v link: %v", kind, calls, contractLatency, slowest)
}

func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
