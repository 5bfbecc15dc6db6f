package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/assign"
	"github.com/groupquake/groupquake/clients/classic"
	"github.com/groupquake/groupquake/clients/clientstest"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
)

// Classic-protocol scenarios: our clients/classic member against real
// Kafka, alone and beside kgo's own classic group consumer.
//
// Timers every scenario depends on: broker group.min.session.timeout.ms=1000
// and group.initial.rebalance.delay.ms=0 (cluster.FastGroupSettings);
// members use session 6s, heartbeat 500ms, rebalance timeout 30s and a max
// poll interval of 10 minutes (the scenarios do not poll). Every wait is a
// bounded poll (classicWait); no duration is asserted.

const (
	classicSession   = 6 * time.Second
	classicHeartbeat = 500 * time.Millisecond
	classicRebalance = 30 * time.Second
	classicWait      = 60 * time.Second
)

// classicEachVersion runs fn against the shared one-node cluster of every
// version under test (sharedCluster).
func classicEachVersion(t *testing.T, fn func(t *testing.T, c *cluster.Cluster)) {
	for _, v := range clustertest.Versions() {
		t.Run(v, func(t *testing.T) {
			fn(t, sharedCluster(t, v))
		})
	}
}

// sharedCluster is the one-node cluster of version v that the package's
// tests on a plain one-node cluster share (clustertest.Shared: one start
// per version instead of one per test and version): the classic and
// consumer scenarios, the Java groups, the confluent-python member-check
// and the share members. Each keeps to its own topics and groups
// (classicTopic prefixes the classic ones; runs name theirs after the
// test), its clients' links are its own (testLinks), and none stops or
// cuts off a node.
func sharedCluster(t *testing.T, v string) *cluster.Cluster {
	t.Helper()
	return clustertest.Shared(t, cluster.Config{Version: v, Nodes: 1})
}

// testLinks are the links of the client name in the test t: named after
// the test too, so that a cut or a toxic of one test can never reach
// another's client on the shared cluster.
func testLinks(t testing.TB, c *cluster.Cluster, name string) (*cluster.Links, error) {
	return c.Links(strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()) + "." + name)
}

// classicRecorder keeps a member's events.
type classicRecorder struct{ clientstest.Recorder }

func (r *classicRecorder) count(k clients.Kind) int { return len(r.Of(k)) }

func (r *classicRecorder) String() string {
	var b strings.Builder
	for _, e := range r.All() {
		if e.Kind == clients.Heartbeat && e.Err == "" {
			continue
		}
		fmt.Fprintf(&b, "    %s %s gen=%d parts=%v err=%s leader=%v why=%s\n", e.At.Format("15:04:05.000"), e.Kind, e.Generation, e.Partitions, e.Err, e.Leader, e.Why)
	}
	return b.String()
}

type classicMember struct {
	*classic.Member
	rec   *classicRecorder
	links *cluster.Links
}

// startClassic starts our member name (its own links) in group on topic.
func startClassic(t *testing.T, c *cluster.Cluster, name, group, topic string, opts ...classic.Opt) *classicMember {
	t.Helper()
	links, err := testLinks(t, c, name)
	if err != nil {
		t.Fatal(err)
	}
	rec := &classicRecorder{}
	base := []classic.Opt{
		classic.KgoOpts(links.KgoOpts()...),
		classic.WithHooks(rec),
		classic.SessionTimeout(classicSession),
		classic.HeartbeatInterval(classicHeartbeat),
		classic.RebalanceTimeout(classicRebalance),
		classic.MaxPollInterval(10 * time.Minute),
	}
	m, err := classic.New(name, group, []string{topic}, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), classicWait)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cm := &classicMember{m, rec, links}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = m.Close(ctx)
		if t.Failed() {
			t.Logf("events of %s:\n%s", name, rec)
		}
	})
	return cm
}

func (m *classicMember) close(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("close %s: %v", m.Name(), err)
	}
}

// owns reports whether m is stable and owns exactly ps of topic.
func (m *classicMember) owns(topic string, ps ...int32) bool {
	o := m.Owned()
	return m.Stable() && o.Count() == len(ps) && slices.Equal(o[topic], ps)
}

// startOwningAll starts member-a in group and waits until it owns all 6
// partitions of topic (a classicTopic).
func startOwningAll(t *testing.T, c *cluster.Cluster, group, topic string, opts ...classic.Opt) *classicMember {
	t.Helper()
	a := startClassic(t, c, "member-a", group, topic, opts...)
	eventually(t, "A owns all 6", func() bool { return a.owns(topic, 0, 1, 2, 3, 4, 5) })
	return a
}

// eventually polls cond every 100 ms until it holds, failing t after
// classicWait (60 s): the waits of the classic and the KIP-848 scenarios.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(classicWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", classicWait, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func classicTopic(t *testing.T, c *cluster.Cluster, name string) string {
	t.Helper()
	topic := "classic-" + name
	clustertest.CreateTopic(t, c, topic, 6)
	return topic
}

func admin(t *testing.T, c *cluster.Cluster) *kadm.Client {
	t.Helper()
	adm, err := c.Admin()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	return adm
}

// describe returns the broker's view of group: state, selected protocol
// and each member's assignment by member id.
func describe(t *testing.T, adm *kadm.Client, group string) (state, protocol string, assigned map[string][]int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dg, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return "", "", nil
	}
	g := dg[group]
	if g.Err != nil {
		return "", "", nil
	}
	assigned = map[string][]int32{}
	for _, m := range g.Members {
		var ps []int32
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				ps = append(ps, tp.Partitions...)
			}
		}
		slices.Sort(ps)
		assigned[m.MemberID] = ps
	}
	return g.State, g.Protocol, assigned
}

func committed(t *testing.T, adm *kadm.Client, group, topic string, p int32) (int64, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	o, ok := os.Lookup(topic, p)
	if !ok || o.Err != nil || o.At < 0 {
		return -1, false
	}
	return o.At, true
}

// TestClassicEagerRange is the seed's example 1 with the default assignors
// [range, cooperative-sticky], which rebalance EAGER: A alone owns all 6
// partitions; B joins; A revokes all 6 before rejoining; A ends with
// [0,1,2] (its member id sorts first) and B with [3,4,5]; B leaves and A
// owns all 6 again.
func TestClassicEagerRange(t *testing.T) {
	classicEachVersion(t, func(t *testing.T, c *cluster.Cluster) {
		topic := classicTopic(t, c, "eager")
		a := startOwningAll(t, c, "eager", topic)
		if a.RebalanceProtocol() != assign.Eager {
			t.Fatalf("rebalance protocol %v, want EAGER", a.RebalanceProtocol())
		}
		b := startClassic(t, c, "member-b", "eager", topic)
		eventually(t, "A [0 1 2], B [3 4 5] in one generation", func() bool {
			return a.owns(topic, 0, 1, 2) && b.owns(topic, 3, 4, 5) && a.Generation().ID == b.Generation().ID
		})
		rev := a.rec.Of(clients.Revoked)
		if len(rev) != 1 || !slices.Equal(rev[0].Partitions[topic], []int32{0, 1, 2, 3, 4, 5}) {
			t.Errorf("A's revocations %v, want one of all 6 (eager)", rev)
		}
		if n := a.rec.count(clients.Lost) + b.rec.count(clients.Lost); n != 0 {
			t.Errorf("%d Lost events in a clean rebalance", n)
		}
		adm := admin(t, c)
		if _, proto, _ := describe(t, adm, "eager"); proto != assign.RangeName {
			t.Errorf("selected protocol %q, want range (both members prefer it)", proto)
		}
		b.close(t)
		if b.rec.count(clients.Left) != 1 {
			t.Errorf("B reported %d Left events, want 1", b.rec.count(clients.Left))
		}
		eventually(t, "A owns all 6 again", func() bool { return a.owns(topic, 0, 1, 2, 3, 4, 5) })
	})
}

// TestClassicCooperativeSticky is example 1 with [cooperative-sticky]
// (COOPERATIVE): A keeps [0,1,2] throughout and revokes only [3,4,5],
// which B gets in the follow-up rebalance.
func TestClassicCooperativeSticky(t *testing.T) {
	classicEachVersion(t, func(t *testing.T, c *cluster.Cluster) {
		topic := classicTopic(t, c, "coop")
		coop := classic.Assignors(assign.CooperativeSticky())
		a := startOwningAll(t, c, "coop", topic, coop)
		b := startClassic(t, c, "member-b", "coop", topic, coop)
		eventually(t, "A [0 1 2], B [3 4 5]", func() bool {
			return a.owns(topic, 0, 1, 2) && b.owns(topic, 3, 4, 5) && a.Generation().ID == b.Generation().ID
		})
		rev := a.rec.Of(clients.Revoked)
		if len(rev) != 1 || !slices.Equal(rev[0].Partitions[topic], []int32{3, 4, 5}) {
			t.Errorf("A's revocations %v, want exactly [3 4 5] once", rev)
		}
		if n := a.rec.count(clients.Lost); n != 0 {
			t.Errorf("A lost partitions %d times", n)
		}
		// B got [3 4 5] only after A revoked them: B's assignment comes in
		// a later generation than A's revocation.
		if as := b.rec.Of(clients.Assigned); len(as) == 0 || len(rev) == 0 || as[0].Generation <= rev[0].Generation {
			t.Errorf("B assigned %v, A revoked %v: B must get them in a later generation", as, rev)
		}
		b.close(t)
		eventually(t, "A owns all 6 again", func() bool { return a.owns(topic, 0, 1, 2, 3, 4, 5) })
		for _, e := range a.rec.Of(clients.Revoked) {
			if slices.ContainsFunc(e.Partitions[topic], func(p int32) bool { return p < 3 }) {
				t.Errorf("A gave up %v", e.Partitions)
			}
		}
	})
}

// TestClassicStaticRestartKeepsAssignment: a static member (KIP-345) that
// closes (no LeaveGroup) and comes back with the same group.instance.id
// within its session gets its partitions back in the same generation,
// and the other member sees no rebalance.
func TestClassicStaticRestartKeepsAssignment(t *testing.T) {
	classicEachVersion(t, func(t *testing.T, c *cluster.Cluster) {
		topic := classicTopic(t, c, "static")
		// A long session leaves room for a loaded machine: the restart
		// must come well within it.
		long := classic.SessionTimeout(30 * time.Second)
		a := startOwningAll(t, c, "static", topic, classic.InstanceID("instance-a"), long)
		b := startClassic(t, c, "member-b", "static", topic, classic.InstanceID("instance-b"), long)
		eventually(t, "A [0 1 2], B [3 4 5]", func() bool {
			return a.owns(topic, 0, 1, 2) && b.owns(topic, 3, 4, 5) && a.Generation().ID == b.Generation().ID
		})
		gen := b.Generation()
		aID := a.Generation().MemberID
		bJoins := b.rec.count(clients.Joined)
		a.close(t)
		if a.rec.count(clients.Left) != 0 {
			t.Errorf("static member sent LeaveGroup on close")
		}
		a2 := startClassic(t, c, "member-a", "static", topic, classic.InstanceID("instance-a"), long)
		eventually(t, "restarted A owns [0 1 2]", func() bool { return a2.owns(topic, 0, 1, 2) })
		if g := a2.Generation(); g.ID != gen.ID {
			t.Errorf("restarted A is in generation %d, want %d (no rebalance)", g.ID, gen.ID)
		}
		if a2.Generation().MemberID == aID {
			t.Errorf("the coordinator kept member id %s for the restarted static member; KIP-345 replaces it", aID)
		}
		if b.Generation() != gen || b.rec.count(clients.Joined) != bJoins || !b.owns(topic, 3, 4, 5) {
			t.Errorf("B rebalanced: generation %v (was %v), %d joins (was %d), owns %v",
				b.Generation(), gen, b.rec.count(clients.Joined), bJoins, b.Owned())
		}
	})
}

// TestClassicDuplicateInstanceFenced: a second member with the same
// group.instance.id replaces the first, whose next heartbeat gets
// FENCED_INSTANCE_ID: fatal, reported, its partitions lost.
func TestClassicDuplicateInstanceFenced(t *testing.T) {
	classicEachVersion(t, func(t *testing.T, c *cluster.Cluster) {
		topic := classicTopic(t, c, "dup")
		a := startOwningAll(t, c, "dup", topic, classic.InstanceID("same"))
		a2 := startClassic(t, c, "member-a2", "dup", topic, classic.InstanceID("same"))
		eventually(t, "A is fenced", func() bool { return a.Err() != nil })
		if !errors.Is(a.Err(), kerr.FencedInstanceID) || !errors.Is(a.Err(), classic.ErrFatal) {
			t.Errorf("A stopped with %v, want fatal FENCED_INSTANCE_ID", a.Err())
		}
		fenced := a.rec.Of(clients.Fenced)
		if len(fenced) != 1 || fenced[0].Err != "FENCED_INSTANCE_ID" {
			t.Errorf("A's Fenced events %v, want one FENCED_INSTANCE_ID", fenced)
		}
		if lost := a.rec.Of(clients.Lost); len(lost) != 1 || lost[0].Partitions.Count() != 6 || a.Owned().Count() != 0 {
			t.Errorf("A lost %v and owns %v, want all 6 lost", lost, a.Owned())
		}
		eventually(t, "A2 owns all 6", func() bool { return a2.owns(topic, 0, 1, 2, 3, 4, 5) })
	})
}

// TestClassicStaleGenerationCommitRejected: a commit carrying the member's
// previous generation gets ILLEGAL_GENERATION and does not land; the same
// commit with the current generation lands.
func TestClassicStaleGenerationCommitRejected(t *testing.T) {
	classicEachVersion(t, func(t *testing.T, c *cluster.Cluster) {
		topic := classicTopic(t, c, "stale")
		adm := admin(t, c)
		a := startOwningAll(t, c, "stale", topic)
		old := a.Generation()
		b := startClassic(t, c, "member-b", "stale", topic)
		eventually(t, "A and B stable in a newer generation", func() bool {
			return a.owns(topic, 0, 1, 2) && b.owns(topic, 3, 4, 5) && a.Generation().ID == b.Generation().ID
		})
		if a.Generation().MemberID != old.MemberID {
			t.Fatalf("A's member id changed: %s → %s", old.MemberID, a.Generation().MemberID)
		}
		ctx, cancel := context.WithTimeout(context.Background(), classicWait)
		defer cancel()
		failed, err := a.CommitAs(ctx, old, map[string]map[int32]int64{topic: {0: 42}})
		if !errors.Is(err, kerr.IllegalGeneration) || failed[topic][0] != "ILLEGAL_GENERATION" {
			t.Fatalf("commit at stale generation %d: %v %v, want ILLEGAL_GENERATION", old.ID, failed, err)
		}
		if o, ok := committed(t, adm, "stale", topic, 0); ok {
			t.Errorf("stale commit landed: offset %d", o)
		}
		if !a.owns(topic, 0, 1, 2) || a.Generation().ID == old.ID {
			t.Errorf("a stale commit must not disturb the current generation")
		}
		if _, err := a.Commit(ctx, map[string]map[int32]int64{topic: {0: 43}}); err != nil {
			t.Fatalf("commit at the current generation: %v", err)
		}
		if o, _ := committed(t, adm, "stale", topic, 0); o != 43 {
			t.Errorf("committed offset %d, want 43", o)
		}
	})
}

// TestClassicSessionTimeoutKickedCannotCommit: A is cut off through its
// own links until the coordinator expires its session and gives B
// everything; once healed, a commit with A's old membership is rejected
// with UNKNOWN_MEMBER_ID and does not land, and A rejoins under a new
// member id.
func TestClassicSessionTimeoutKickedCannotCommit(t *testing.T) {
	classicEachVersion(t, func(t *testing.T, c *cluster.Cluster) {
		topic := classicTopic(t, c, "kicked")
		adm := admin(t, c)
		a := startOwningAll(t, c, "kicked", topic)
		b := startClassic(t, c, "member-b", "kicked", topic)
		eventually(t, "A [0 1 2], B [3 4 5]", func() bool {
			return a.owns(topic, 0, 1, 2) && b.owns(topic, 3, 4, 5) && a.Generation().ID == b.Generation().ID
		})
		before := a.Generation()
		if err := a.links.Cut(cluster.AllNodes); err != nil {
			t.Fatal(err)
		}
		healed := false
		heal := func() {
			if !healed {
				healed = true
				if err := a.links.Heal(cluster.AllNodes); err != nil {
					t.Errorf("heal A's links: %v", err)
				}
			}
		}
		defer heal()
		eventually(t, "the coordinator expires A and B owns all 6", func() bool {
			state, _, assigned := describe(t, adm, "kicked")
			_, aStill := assigned[before.MemberID]
			return state == "Stable" && !aStill && len(assigned) == 1 && b.owns(topic, 0, 1, 2, 3, 4, 5)
		})
		heal()
		ctx, cancel := context.WithTimeout(context.Background(), classicWait)
		defer cancel()
		failed, err := a.CommitAs(ctx, before, map[string]map[int32]int64{topic: {1: 77}})
		if !errors.Is(err, kerr.UnknownMemberID) {
			t.Fatalf("commit of the expired member: %v %v, want UNKNOWN_MEMBER_ID", failed, err)
		}
		if o, ok := committed(t, adm, "kicked", topic, 1); ok {
			t.Errorf("expired member's commit landed: offset %d", o)
		}
		eventually(t, "A rejoins under a new member id and the group splits 3/3", func() bool {
			g := a.Generation()
			return g.MemberID != before.MemberID && a.Stable() && b.Stable() &&
				a.Owned().Count() == 3 && b.Owned().Count() == 3 && g.ID == b.Generation().ID
		})
		lost := a.rec.Of(clients.Lost)
		if len(lost) != 1 || !slices.Equal(lost[0].Partitions[topic], []int32{0, 1, 2}) {
			t.Errorf("A's Lost events %v, want [0 1 2] once", lost)
		}
	})
}

// kgoMember is kgo's own classic group consumer with its ownership tracked
// through its callbacks.
type kgoMember struct {
	cl    *kgo.Client
	mu    sync.Mutex
	owned map[int32]bool
	done  chan struct{}
}

func startKgo(t *testing.T, c *cluster.Cluster, name, group, topic string, balancer kgo.GroupBalancer) *kgoMember {
	t.Helper()
	links, err := testLinks(t, c, name)
	if err != nil {
		t.Fatal(err)
	}
	k := &kgoMember{owned: map[int32]bool{}, done: make(chan struct{})}
	set := func(ps map[string][]int32, on bool) {
		k.mu.Lock()
		defer k.mu.Unlock()
		for _, p := range ps[topic] {
			if on {
				k.owned[p] = true
			} else {
				delete(k.owned, p)
			}
		}
	}
	opts := append(links.KgoOpts(),
		kgo.ClientID("kgo-"+name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(balancer),
		kgo.SessionTimeout(classicSession),
		kgo.HeartbeatInterval(classicHeartbeat),
		kgo.RebalanceTimeout(classicRebalance),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { set(ps, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { set(ps, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { set(ps, false) }),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	k.cl = cl
	go func() {
		defer close(k.done)
		for {
			if fs := cl.PollFetches(context.Background()); fs.IsClientClosed() {
				return
			}
		}
	}()
	t.Cleanup(k.close)
	return k
}

func (k *kgoMember) close() {
	select {
	case <-k.done:
		return
	default:
	}
	k.cl.Close()
	<-k.done
}

func (k *kgoMember) partitions() []int32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Sorted(maps.Keys(k.owned))
}

// TestClassicInteropKgo puts our member and kgo's classic group consumer
// in one group, each as leader (first to join) and as follower, for every
// assignor both have. The broker's view, our member's and kgo's must agree
// on a 3/3 split that covers the topic; when the follower leaves, the
// leader owns everything.
func TestClassicInteropKgo(t *testing.T) {
	type shared struct {
		name string
		ours assign.Assignor
		kgo  kgo.GroupBalancer
	}
	assignors := []shared{
		{assign.RangeName, assign.Range(), kgo.RangeBalancer()},
		{assign.RoundRobinName, assign.RoundRobin(), kgo.RoundRobinBalancer()},
		{assign.StickyName, assign.Sticky(), kgo.StickyBalancer()},
		{assign.CooperativeStickyName, assign.CooperativeSticky(), kgo.CooperativeStickyBalancer()},
	}
	classicEachVersion(t, func(t *testing.T, c *cluster.Cluster) {
		adm := admin(t, c)
		for _, as := range assignors {
			for _, oursLead := range []bool{true, false} {
				lead := "kgo-leads"
				if oursLead {
					lead = "ours-leads"
				}
				t.Run(as.name+"/"+lead, func(t *testing.T) {
					group := "interop-" + as.name + "-" + lead
					topic := classicTopic(t, c, group)
					var ours *classicMember
					var theirs *kgoMember
					startOurs := func() {
						ours = startClassic(t, c, "ours-"+group, group, topic, classic.Assignors(as.ours))
					}
					startTheirs := func() { theirs = startKgo(t, c, "kgo-"+group, group, topic, as.kgo) }
					if oursLead {
						startOurs()
						eventually(t, "ours owns all 6", func() bool { return ours.owns(topic, 0, 1, 2, 3, 4, 5) })
						startTheirs()
					} else {
						startTheirs()
						eventually(t, "kgo owns all 6", func() bool { return len(theirs.partitions()) == 6 })
						startOurs()
					}
					eventually(t, "a 3/3 split all three views agree on", func() bool {
						state, proto, assigned := describe(t, adm, group)
						if state != "Stable" || proto != as.name || len(assigned) != 2 {
							return false
						}
						mine, ok := assigned[ours.Generation().MemberID]
						if !ok || !ours.owns(topic, mine...) || len(mine) != 3 {
							return false
						}
						var other []int32
						for id, ps := range assigned {
							if id != ours.Generation().MemberID {
								other = ps
							}
						}
						all := slices.Sorted(slices.Values(append(slices.Clone(mine), other...)))
						return slices.Equal(other, theirs.partitions()) && slices.Equal(all, []int32{0, 1, 2, 3, 4, 5})
					})
					joined := ours.rec.Of(clients.Joined)
					if last := joined[len(joined)-1]; last.Leader != oursLead {
						t.Errorf("our member leads = %v, want %v", last.Leader, oursLead)
					}
					if oursLead {
						theirs.close()
						eventually(t, "ours owns all 6 again", func() bool { return ours.owns(topic, 0, 1, 2, 3, 4, 5) })
					} else {
						ours.close(t)
						eventually(t, "kgo owns all 6 again", func() bool { return len(theirs.partitions()) == 6 })
					}
				})
			}
		}
	})
}

// TestClassicMaxPollIntervalLeaves: a member whose application stops
// calling Poll for longer than max.poll.interval leaves the group on its
// own (LeaveGroup, its partitions reported lost), the other member takes
// everything, and the next Poll brings it back into a 3/3 split.
func TestClassicMaxPollIntervalLeaves(t *testing.T) {
	classicEachVersion(t, func(t *testing.T, c *cluster.Cluster) {
		topic := classicTopic(t, c, "maxpoll")
		adm := admin(t, c)
		a := startClassic(t, c, "member-a", "maxpoll", topic, classic.MaxPollInterval(8*time.Second))
		b := startClassic(t, c, "member-b", "maxpoll", topic)
		eventually(t, "A leaves on poll expiry", func() bool { return a.rec.count(clients.SessionExpired) == 1 && a.rec.count(clients.Left) == 1 })
		if a.Owned().Count() != 0 {
			t.Errorf("A still owns %v after leaving", a.Owned())
		}
		eventually(t, "B owns all 6 and the broker has one member", func() bool {
			_, _, assigned := describe(t, adm, "maxpoll")
			return b.owns(topic, 0, 1, 2, 3, 4, 5) && len(assigned) == 1
		})
		joins := a.rec.count(clients.Joined)
		ctx, cancel := context.WithTimeout(context.Background(), classicWait)
		defer cancel()
		eventually(t, "A rejoins once it polls, and the group splits 3/3", func() bool {
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, _ = a.Poll(pctx)
			pcancel()
			return a.rec.count(clients.Joined) > joins && a.owns(topic, 0, 1, 2) && b.owns(topic, 3, 4, 5) &&
				a.Generation().ID == b.Generation().ID
		})
	})
}
