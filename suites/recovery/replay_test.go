package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/observe"
	"github.com/groupquake/groupquake/harness/replay"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/suites/internal/adminctx"
)

// settleBound bounds every wait for the cluster or a group to settle: the
// machine is small and shared, so no duration is asserted, only bounded.
const settleBound = 60 * time.Second

// TestReplayMatchesBroker runs a classic group and a KIP-848 group (kgo's
// own consumers) on a real broker and replays each group's
// __consumer_offsets records through the reference coordinator: the state it
// rebuilds must be what the broker describes (members, epochs, assignments,
// offsets) while the members are live, after a graceful restart of the
// broker, after a kill -9, and after the members have left, again across a
// kill. `groupquake replay` must agree against the live cluster.
//
// The expectations are the same on every version: in a settled group no
// partition is pending revocation, so KAFKA-20431 (4.3+ describes pending
// revocations) does not show here; the replay's unit tests pin it.
func TestReplayMatchesBroker(t *testing.T) {
	bin := clustertest.BuildGroupquake(t)
	for _, v := range clustertest.Versions() {
		t.Run("kafka-"+v, func(t *testing.T) {
			c := clustertest.Start(t, cluster.Config{Version: v, Nodes: 1})
			clustertest.CreateTopic(t, c, "t", 6)
			produce(t, c, "t", 300)
			groups := []struct {
				name     string
				consumer bool
			}{{"r-classic", false}, {"r-consumer", true}}
			var live [][]*kgo.Client
			for _, g := range groups {
				live = append(live, startMembers(t, c, g.name, "t", 300, g.consumer))
			}
			checkAll := func(label string, members int) {
				t.Helper()
				for _, g := range groups {
					requireReplayMatches(t, c, v, g.name, label, members)
				}
			}
			checkAll("live members", 2)
			for _, g := range groups {
				out, code := clustertest.RunGroupquake(t, bin, "replay", "--bootstrap", strings.Join(c.Bootstrap(), ","), "--group", g.name, "--kafka", v)
				if code != 0 || !strings.Contains(out, "the replayed state is what the broker describes") {
					t.Errorf("groupquake replay --group %s exits %d, want 0 and agreement:\n%s", g.name, code, out)
				} else {
					t.Logf("groupquake replay --group %s:\n%s", g.name, out)
				}
				// The same comparison as JSON: stdout holds it alone.
				out, code = clustertest.RunGroupquake(t, bin, "replay", "--bootstrap", strings.Join(c.Bootstrap(), ","), "--group", g.name, "--kafka", v, "--json")
				var j struct {
					Group       string
					Agree       bool
					Rows        []struct{ What, Replayed, Described string }
					Differences []string
				}
				if err := json.Unmarshal([]byte(out), &j); err != nil || code != 0 || !j.Agree || j.Group != g.name || len(j.Rows) < 4 || len(j.Differences) != 0 {
					t.Errorf("groupquake replay --json --group %s exits %d (%v), want 0, agreement and the compared rows:\n%s", g.name, code, err, out)
				}
			}

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			id := c.NodeIDs()[0]
			if err := c.RestartNode(ctx, id, false); err != nil {
				t.Fatalf("graceful restart of node %d: %v", id, err)
			}
			checkAll("live members, after a graceful restart", 2)
			if err := c.RestartNode(ctx, id, true); err != nil {
				t.Fatalf("kill and restart of node %d: %v", id, err)
			}
			checkAll("live members, after kill -9", 2)

			for _, ms := range live {
				for _, m := range ms {
					m.Close() // leaves the group
				}
			}
			checkAll("after the members left", 0)
			if err := c.RestartNode(ctx, id, true); err != nil {
				t.Fatalf("kill and restart of node %d: %v", id, err)
			}
			checkAll("after the members left, after kill -9", 0)

			// The command's answers to bad input.
			if out, code := clustertest.RunGroupquake(t, bin, "replay", "--bootstrap", strings.Join(c.Bootstrap(), ","), "--group", "never-existed", "--kafka", v); code != 2 || !strings.Contains(out, "has no records") {
				t.Errorf("replay of an unknown group exits %d, want 2 and 'has no records':\n%s", code, out)
			}
			if out, code := clustertest.RunGroupquake(t, bin, "replay", "--bootstrap", strings.Join(c.Bootstrap(), ","), "--group", "r-classic", "--kafka", "4.9.1"); code != 2 || !strings.Contains(out, "unknown Kafka version") {
				t.Errorf("replay with an unknown version exits %d, want 2:\n%s", code, out)
			}
		})
	}
}

// TestReplayAcrossCoordinatorMove kills the broker that coordinates each
// group in a three-node cluster: another broker loads the group from the
// replicated log and describes it, and the replay must match it there, and
// again after the killed broker is back.
func TestReplayAcrossCoordinatorMove(t *testing.T) {
	v := clustertest.Versions()[0]
	c := clustertest.Start(t, cluster.Config{Version: v, Nodes: 3})
	clustertest.CreateTopic(t, c, "t", 6)
	produce(t, c, "t", 300)
	for _, g := range []struct {
		name     string
		consumer bool
	}{{"m-classic", false}, {"m-consumer", true}} {
		t.Run(g.name, func(t *testing.T) {
			ms := startMembers(t, c, g.name, "t", 300, g.consumer)
			requireReplayMatches(t, c, v, g.name, "live members", 2)
			adm, ctx, done := adminctx.Open(t, c, 5*time.Minute)
			defer done()
			co, ok := adm.FindGroupCoordinators(ctx, g.name)[g.name]
			if !ok || co.Err != nil {
				t.Fatalf("coordinator of %s: %v", g.name, co.Err)
			}
			if err := c.KillNode(ctx, co.NodeID); err != nil {
				t.Fatalf("kill node %d: %v", co.NodeID, err)
			}
			down := true
			defer func() {
				if down { // a failed subtest leaves the quorum whole for the next one
					if err := c.StartNode(context.Background(), co.NodeID); err != nil {
						t.Errorf("start node %d: %v", co.NodeID, err)
					}
				}
			}()
			requireReplayMatches(t, c, v, g.name, fmt.Sprintf("live members, coordinator node %d killed", co.NodeID), 2)
			if err := c.StartNode(ctx, co.NodeID); err != nil {
				t.Fatalf("start node %d: %v", co.NodeID, err)
			}
			down = false
			requireReplayMatches(t, c, v, g.name, fmt.Sprintf("live members, node %d back", co.NodeID), 2)
			for _, m := range ms {
				m.Close()
			}
			requireReplayMatches(t, c, v, g.name, "after the members left", 0)
		})
	}
}

// TestRunJudgesRecoveredState carries out baseline runs and requires
// RecoveredStateMatchesLog to hold, not be skipped, in the run's verdicts
// and when `groupquake check` judges the run directory offline: groups of
// one protocol, and groups that mix them (KIP-848's online migration) in
// both orders, a consumer-protocol member first (classic members join a
// consumer group) and a classic member first (the group is upgraded
// online when the consumer-protocol member joins).
func TestRunJudgesRecoveredState(t *testing.T) {
	bin := clustertest.BuildGroupquake(t)
	for _, v := range clustertest.Versions() {
		t.Run("kafka-"+v, func(t *testing.T) {
			c := sharedCluster(t, v)
			for _, named := range [][]string{{"kgo-classic"}, {"kgo-consumer"}, {"kgo-consumer", "kgo-classic"}, {"kgo-classic", "kgo-consumer"}} {
				t.Run(strings.Join(named, "+"), func(t *testing.T) {
					reg := kinds.Default()
					p, err := run.NewPlan(uint64(time.Now().UnixNano()), run.Options{
						Scenario: run.ScenarioBaseline, Kafka: v, Nodes: 1, Kinds: named, Members: 3,
						Partitions: 4, Duration: 5 * time.Second, Rate: 20,
					}, reg.Kinds())
					if err != nil {
						t.Fatal(err)
					}
					dir := filepath.Join(t.TempDir(), "run")
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
					defer cancel()
					res, err := run.Run(ctx, run.Config{Plan: p, Dir: dir, Registry: reg, Cluster: c, Logf: t.Logf})
					if err != nil {
						t.Fatalf("run: %v (notes %v)", err, res.Notes)
					}
					requireRecoveredHolds(t, "run", res.Report)
					j, err := run.Judge(dir)
					if err != nil {
						t.Fatal(err)
					}
					requireRecoveredHolds(t, "Judge", j.Report)
					if out, code := clustertest.RunGroupquake(t, bin, "check", dir); !strings.Contains(out, "ok    RecoveredStateMatchesLog") {
						t.Errorf("groupquake check exits %d without 'ok    RecoveredStateMatchesLog':\n%s", code, out)
					}
				})
			}
		})
	}
}

func requireRecoveredHolds(t *testing.T, where string, rep check.Report) {
	t.Helper()
	for _, v := range rep.Verdicts {
		if v.Name != "RecoveredStateMatchesLog" {
			continue
		}
		switch {
		case v.Skipped != "":
			t.Errorf("%s: RecoveredStateMatchesLog skipped: %s", where, v.Skipped)
		case !v.Holds:
			for _, x := range v.Violations {
				t.Errorf("%s: RecoveredStateMatchesLog: %s", where, x.Message)
			}
		default:
			t.Logf("%s: RecoveredStateMatchesLog holds: %s", where, strings.Join(v.Notes, "; "))
		}
		return
	}
	t.Errorf("%s: no RecoveredStateMatchesLog verdict", where)
}

// startMembers starts two members of group on topic (KIP-848 when
// consumerProtocol), consumes all total records and commits them, and leaves
// the members in the group, heartbeating; the caller closes them.
func startMembers(t *testing.T, c *cluster.Cluster, group, topic string, total int64, consumerProtocol bool) []*kgo.Client {
	t.Helper()
	members := groupClients(t, c, group, topic, consumerProtocol)
	for _, cl := range members {
		t.Cleanup(cl.Close)
	}
	adm, ctx, done := adminctx.Open(t, c, 2*settleBound)
	defer done()
	if consumeAll(ctx, adm, members, group, topic, total, time.Now().Add(2*settleBound)) {
		return members
	}
	t.Fatalf("group %s committed %d of %d records within %s", group, committedTotal(ctx, adm, group, topic), total, 2*settleBound)
	return nil
}

// requireReplayMatches waits (bounded) until the broker describes group as
// settled with members members owning every partition, then reads it once,
// consistently (description, records, description again), and requires the
// replay of the records to be what the broker describes.
func requireReplayMatches(t *testing.T, c *cluster.Cluster, v, group, label string, members int) {
	t.Helper()
	r := observe.Reader{Bootstrap: c.Bootstrap(), Group: group}
	// A fresh admin client after every failed read: a client keeps asking
	// the coordinator it found, also when that broker was killed and the
	// group has moved.
	fresh := func() {
		if r.Admin != nil {
			r.Admin.Close()
		}
		adm, err := c.Admin()
		if err != nil {
			t.Fatal(err)
		}
		r.Admin = adm
	}
	fresh()
	defer func() { r.Admin.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*settleBound)
	defer cancel()

	var last string
	settled := func() bool {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		defer rcancel()
		g, err := r.Describe(rctx)
		if err != nil {
			last = err.Error()
			fresh()
			return false
		}
		last = fmt.Sprintf("%s, %d members", g.State, len(g.Members))
		if len(g.Members) != members {
			return false
		}
		if members == 0 {
			return g.State == "Empty"
		}
		owned := 0
		for _, m := range g.Members {
			owned += len(m.Assignment)
		}
		return g.Stable() && owned == 6
	}
	deadline := time.Now().Add(settleBound)
	for !settled() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: group %s not settled with %d members within %s: last seen %s", label, group, members, settleBound, last)
		}
		time.Sleep(250 * time.Millisecond)
	}

	s, err := readConsistent(ctx, &r)
	if err != nil {
		t.Fatalf("%s: reading group %s: %v", label, group, err)
	}
	ids, fn := replayOf(t, ctx, &r, v, s)
	st, err := fn(s.Records)
	if err != nil {
		t.Fatalf("%s: group %s: the replay refuses what Kafka %s wrote: %v", label, group, v, err)
	}
	if len(st.Members) != members {
		t.Errorf("%s: group %s: replay has %d members, want %d", label, group, len(st.Members), members)
	}
	if want := protocolOf(group); st.Protocol != want {
		t.Errorf("%s: group %s: replay says a %q group, want %q", label, group, st.Protocol, want)
	}
	if st.Protocol == history.ProtocolConsumer && members > 0 {
		// The first member of a new group gets the profile's first member
		// epoch (KAFKA-20268: 2 from 4.3, 1 before), so no settled member
		// can be below it.
		first := version.MustParse(v).Profile().FirstMemberEpoch
		for id, m := range st.Members {
			if m.MemberEpoch < first {
				t.Errorf("%s: member %s at epoch %d, below Kafka %s's first member epoch %d", label, id, m.MemberEpoch, v, first)
			}
		}
	}
	obs := &history.Observations{Group: group, Final: s, TopicIDs: ids}
	verdict := check.RecoveredStateMatchesLog(obs, func([]history.Record) (check.GroupState, error) { return st, nil })
	if verdict.Skipped != "" {
		t.Fatalf("%s: group %s: RecoveredStateMatchesLog skipped: %s", label, group, verdict.Skipped)
	}
	for _, x := range verdict.Violations {
		t.Errorf("%s: group %s on Kafka %s: %s", label, group, v, x.Message)
	}
	if verdict.Holds {
		t.Logf("%s: group %s: %d records replayed: %s epoch %d/%d generation %d, %d members, %d offsets, as described", label, group, len(s.Records), st.Protocol, st.GroupEpoch, st.AssignmentEpoch, st.Generation, len(st.Members), len(st.Offsets))
	}
}

func protocolOf(group string) string {
	if strings.HasSuffix(group, "consumer") {
		return history.ProtocolConsumer
	}
	return history.ProtocolClassic
}

// readConsistent reads the description and offsets, the records, and the
// description and offsets again, until both reads agree (at most three
// times): only then do the records and the description show one moment.
func readConsistent(ctx context.Context, r *observe.Reader) (history.Snapshot, error) {
	render := func(s history.Snapshot) string {
		ms := slices.Clone(s.Group.Members)
		slices.SortFunc(ms, func(a, b history.MemberDescription) int { return strings.Compare(a.MemberID, b.MemberID) })
		return fmt.Sprintf("%s %d %d %v %v", s.Group.State, s.Group.GroupEpoch, s.Group.AssignmentEpoch, ms, s.Committed)
	}
	read := func() (history.Snapshot, error) {
		s := history.Snapshot{Label: "live", HistoryLen: 1}
		g, err := r.Describe(ctx)
		if err != nil {
			return s, err
		}
		cs, err := r.Committed(ctx)
		if err != nil {
			return s, err
		}
		s.Group, s.Committed, s.HasCommitted = g, cs, true
		return s, nil
	}
	var errs []error
	for range 3 {
		before, err := read()
		if err != nil {
			return before, err
		}
		recs, _, err := r.Records(ctx)
		if err != nil {
			return before, err
		}
		after, err := read()
		if err != nil {
			return before, err
		}
		if render(before) == render(after) {
			before.Records, before.HasRecords = recs, true
			return before, nil
		}
		errs = append(errs, fmt.Errorf("the group changed while it was read: %s → %s", render(before), render(after)))
	}
	return history.Snapshot{}, errors.Join(errs...)
}

// handMember is a KIP-848 member driven by hand (ConsumerGroupHeartbeat
// requests we build), so that a test can hold it in a state a real client
// leaves at once: here, not acknowledging a revocation.
type handMember struct {
	cl    *kgo.Client
	group string
	id    string
	topic [16]byte

	mu       sync.Mutex
	epoch    int32
	owned    []int32 // what the member reports it owns
	assigned []int32 // what the coordinator last said it owns
	// hold keeps owned as it is: the member does not acknowledge
	// revocations.
	hold bool
	err  error
}

// heartbeat sends one heartbeat with the member's epoch and owned
// partitions (a join when the epoch is 0) and takes in the answer.
func (m *handMember) heartbeat(ctx context.Context) error {
	m.mu.Lock()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.RebalanceTimeoutMillis = 60000
	req.SubscribedTopicNames = []string{"t"}
	tp := kmsg.NewConsumerGroupHeartbeatRequestTopic()
	tp.TopicID, tp.Partitions = m.topic, slices.Clone(m.owned)
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if len(m.owned) > 0 {
		req.Topics = append(req.Topics, tp)
	}
	m.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, m.cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("member %s heartbeat at epoch %d: %w", m.id, req.MemberEpoch, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.assigned = nil
		for _, at := range resp.Assignment.Topics {
			m.assigned = append(m.assigned, at.Partitions...)
		}
		slices.Sort(m.assigned)
		if !m.hold {
			m.owned = slices.Clone(m.assigned)
		}
	}
	return nil
}

func (m *handMember) state() (epoch int32, owned, assigned []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch, slices.Clone(m.owned), slices.Clone(m.assigned)
}

// TestReplayPendingRevocation holds a consumer-group member in
// UNREVOKED_PARTITIONS: member a owns all six partitions, b joins, and a
// never acknowledges giving three up. The replay must rebuild what the
// broker describes, which differs by version: from 4.3 (KAFKA-20431)
// ConsumerGroupDescribe counts the partitions a still has to revoke in its
// assignment (six), before it does not (three). Once a lets go, b gets them
// and the replay must match again.
func TestReplayPendingRevocation(t *testing.T) {
	for _, v := range clustertest.Versions() {
		t.Run("kafka-"+v, func(t *testing.T) {
			c := sharedCluster(t, v)
			clustertest.CreateTopic(t, c, "t", 6)
			adm, ctx, done := adminctx.Open(t, c, 5*time.Minute)
			defer done()
			td, err := adm.ListTopics(ctx, "t")
			if err != nil || td["t"].Err != nil {
				t.Fatalf("metadata of t: %v %v", err, td["t"].Err)
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			group := "p-consumer"
			a := &handMember{cl: cl, group: group, id: "member-a-000000000000", topic: td["t"].ID}
			b := &handMember{cl: cl, group: group, id: "member-b-000000000000", topic: td["t"].ID}

			// until heartbeats the members every 500ms (within the broker's
			// 6s session) until cond holds, bounded.
			until := func(what string, ms []*handMember, cond func() bool) {
				t.Helper()
				deadline := time.Now().Add(settleBound)
				for {
					for _, m := range ms {
						if err := m.heartbeat(ctx); err != nil {
							t.Fatalf("%s: %v", what, err)
						}
					}
					if cond() {
						return
					}
					if time.Now().After(deadline) {
						ea, oa, aa := a.state()
						eb, ob, ab := b.state()
						t.Fatalf("%s: not reached within %s: a epoch %d owns %v assigned %v; b epoch %d owns %v assigned %v", what, settleBound, ea, oa, aa, eb, ob, ab)
					}
					time.Sleep(500 * time.Millisecond)
				}
			}
			until("a owns all six partitions", []*handMember{a}, func() bool {
				_, owned, _ := a.state()
				return len(owned) == 6
			})
			a.mu.Lock()
			a.hold = true
			a.mu.Unlock()
			until("b joins and a is told to give three up", []*handMember{b, a}, func() bool {
				_, _, assigned := a.state()
				return len(assigned) == 3
			})

			// Keep both sessions alive while the group is read.
			hbCtx, stopHB := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(500 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-hbCtx.Done():
						return
					case <-tick.C:
					}
					for _, m := range []*handMember{a, b} {
						if err := m.heartbeat(hbCtx); err != nil && hbCtx.Err() == nil {
							m.mu.Lock()
							m.err = err
							m.mu.Unlock()
						}
					}
				}
			}()
			want := 3
			if version.MustParse(v).Profile().DescribeShowsPendingRevocation {
				want = 6
			}
			r := observe.Reader{Admin: adm, Bootstrap: c.Bootstrap(), Group: group}
			g, err := r.Describe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range g.Members {
				if m.MemberID == a.id && len(m.Assignment) != want {
					t.Errorf("Kafka %s describes a's assignment as %v while it has three partitions to revoke; the version profile expects %d partitions", v, m.Assignment, want)
				}
			}
			compareLive(t, ctx, &r, v, "a holding a revocation")
			stopHB()
			wg.Wait()
			for _, m := range []*handMember{a, b} {
				if m.err != nil {
					t.Fatalf("background heartbeat: %v", m.err)
				}
			}

			a.mu.Lock()
			a.hold = false
			a.owned = slices.Clone(a.assigned)
			a.mu.Unlock()
			until("a lets go and b owns three", []*handMember{a, b}, func() bool {
				ea, _, _ := a.state()
				eb, ob, _ := b.state()
				return len(ob) == 3 && ea == eb
			})
			until("the group is Stable", []*handMember{a, b}, func() bool {
				g, err := r.Describe(ctx)
				return err == nil && g.Stable()
			})
			compareLive(t, ctx, &r, v, "after a let go")
			for _, m := range []*handMember{a, b} {
				m.mu.Lock()
				m.epoch = -1 // leave
				m.mu.Unlock()
				if err := m.heartbeat(ctx); err != nil {
					t.Errorf("leave: %v", err)
				}
			}
		})
	}
}

// replayOf reads the ids of topic t that s's records name and returns them
// with the replay of r's group by Kafka v's rules.
func replayOf(t *testing.T, ctx context.Context, r *observe.Reader, v string, s history.Snapshot) (map[string]string, check.ReplayFunc) {
	t.Helper()
	ids, err := r.TopicIDs(ctx, []string{"t"}, s.Records)
	if err != nil {
		t.Fatal(err)
	}
	names, err := replay.TopicNames(ids)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := replay.Func(v, r.Group, names)
	if err != nil {
		t.Fatal(err)
	}
	return ids, fn
}

// compareLive reads the group consistently and requires the replay of its
// records to be what the broker describes.
func compareLive(t *testing.T, ctx context.Context, r *observe.Reader, v, label string) {
	t.Helper()
	s, err := readConsistent(ctx, r)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	ids, fn := replayOf(t, ctx, r, v, s)
	verdict := check.RecoveredStateMatchesLog(&history.Observations{Group: r.Group, Final: s, TopicIDs: ids}, fn)
	if verdict.Skipped != "" {
		t.Fatalf("%s: skipped: %s", label, verdict.Skipped)
	}
	for _, x := range verdict.Violations {
		t.Errorf("%s on Kafka %s: %s", label, v, x.Message)
	}
	if verdict.Holds {
		t.Logf("%s: the replay of %d records is what Kafka %s describes: %+v", label, len(s.Records), v, s.Group.Members)
	}
}
