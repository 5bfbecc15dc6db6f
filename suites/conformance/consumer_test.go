package conformance

// Scenarios for clients/consumer, the KIP-848 member, against real Kafka.
// Broker timers (cluster.FastGroupSettings): consumer session timeout 6 s,
// heartbeat interval 500 ms, and on 4.3+ assignment interval 0. Every wait
// is a bounded poll for a state (eventually, up to 60 s); nothing asserts a
// duration.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/consumer"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/suites/internal/adminctx"
)

// kip848Profile is the version profile of a served release: every
// expectation that differs between releases asks it.
func kip848Profile(v string) version.Profile { return version.MustParse(v).Profile() }

// kip848FirstEpoch is the member epoch the first member of a new group gets
// (version.Profile.FirstMemberEpoch: 1 up to 4.2, 2 from 4.3, KAFKA-20268).
func kip848FirstEpoch(v string) int32 { return kip848Profile(v).FirstMemberEpoch }

// kip848Event is an event with its place in the order all members' events
// arrived in.
type kip848Event struct {
	seq int
	clients.Event
}

// kip848Log records the events of every member of a scenario in one order.
type kip848Log struct {
	t      testing.TB
	mu     sync.Mutex
	events []kip848Event
}

func (l *kip848Log) hooks() clients.Hooks {
	return clients.HookFunc(func(e clients.Event) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.events = append(l.events, kip848Event{seq: len(l.events), Event: e})
		l.t.Logf("%s %-17s epoch %3d %v %s %s", e.Member, e.Kind, e.MemberEpoch, e.Partitions, e.Err, e.Why)
	})
}

// of returns member's events of kind, in order.
func (l *kip848Log) of(member string, kind clients.Kind) []kip848Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []kip848Event
	for _, e := range l.events {
		if e.Member == member && e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// mark is the place of the next event: events from here on happen after.
func (l *kip848Log) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// kip848Sink collects consumed records: topic → partition → offset → the
// members (and epochs) that consumed it.
type kip848Sink struct {
	mu   sync.Mutex
	seen map[string]map[int32]map[int64][]string
	at   map[string]map[int32]map[int32]bool // member/topic → partition → epochs seen
}

func newKip848Sink() *kip848Sink {
	return &kip848Sink{seen: map[string]map[int32]map[int64][]string{}, at: map[string]map[int32]map[int32]bool{}}
}

func (s *kip848Sink) add(member string, rs []clients.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rs {
		if s.seen[r.Topic] == nil {
			s.seen[r.Topic] = map[int32]map[int64][]string{}
		}
		if s.seen[r.Topic][r.Partition] == nil {
			s.seen[r.Topic][r.Partition] = map[int64][]string{}
		}
		s.seen[r.Topic][r.Partition][r.Offset] = append(s.seen[r.Topic][r.Partition][r.Offset], member)
		k := member + "/" + r.Topic
		if s.at[k] == nil {
			s.at[k] = map[int32]map[int32]bool{}
		}
		if s.at[k][r.Partition] == nil {
			s.at[k][r.Partition] = map[int32]bool{}
		}
		s.at[k][r.Partition][r.MemberEpoch] = true
	}
}

// count is how many distinct records of topic were consumed.
func (s *kip848Sink) count(topic string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ps := range s.seen[topic] {
		n += len(ps)
	}
	return n
}

// duplicates lists records of topic consumed more than once.
func (s *kip848Sink) duplicates(topic string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for p, os := range s.seen[topic] {
		for o, who := range os {
			if len(who) > 1 {
				out = append(out, fmt.Sprintf("%s[%d]@%d by %v", topic, p, o, who))
			}
		}
	}
	slices.Sort(out)
	return out
}

// epochs are the member epochs member held when it consumed topic[p].
func (s *kip848Sink) epochs(member, topic string, p int32) []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int32
	for e := range s.at[member+"/"+topic][p] {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// kip848Poller polls a member until stopped, as a workload would.
type kip848Poller struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func kip848Poll(t testing.TB, m clients.Member, sink *kip848Sink) *kip848Poller {
	ctx, cancel := context.WithCancel(context.Background())
	p := &kip848Poller{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			rs, err := m.Poll(pctx)
			pcancel()
			if err != nil && ctx.Err() == nil {
				t.Logf("%s poll: %v", m.Name(), err)
				time.Sleep(50 * time.Millisecond)
			}
			sink.add(m.Name(), rs)
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *kip848Poller) stop() {
	p.cancel()
	<-p.done
}

// kip848Produce writes n records to every partition of topic.
func kip848Produce(t testing.TB, c *cluster.Cluster, topic string, partitions int32, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for p := range partitions {
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// kip848New builds and starts one of our members with its own links.
func kip848New(t testing.TB, c *cluster.Cluster, name, group string, log *kip848Log, opts ...consumer.Opt) (*consumer.Member, *cluster.Links) {
	t.Helper()
	links, err := testLinks(t, c, name)
	if err != nil {
		t.Fatal(err)
	}
	base := []consumer.Opt{
		consumer.KgoOpts(links.KgoOpts()...),
		consumer.WithHooks(log.hooks()),
		consumer.AutoCommitInterval(time.Second),
		consumer.RebalanceTimeout(30 * time.Second),
	}
	m, err := consumer.New(name, group, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m.Close(ctx)
	})
	return m, links
}

// kip848EachVersion runs fn in a subtest per served release, on the shared
// one-node cluster of that release (sharedCluster).
func kip848EachVersion(t *testing.T, fn func(t *testing.T, v string, c *cluster.Cluster)) {
	for _, v := range clustertest.Versions() {
		t.Run(v, func(t *testing.T) {
			fn(t, v, sharedCluster(t, v))
		})
	}
}

// kip848Start creates topic with partitions on c, produces perPartition
// records to each of them (none when 0), and returns a fresh event log and
// record sink.
func kip848Start(t *testing.T, c *cluster.Cluster, topic string, partitions int32, perPartition int) (*kip848Log, *kip848Sink) {
	t.Helper()
	clustertest.CreateTopic(t, c, topic, partitions)
	if perPartition > 0 {
		kip848Produce(t, c, topic, partitions, perPartition)
	}
	return &kip848Log{t: t}, newKip848Sink()
}

// kip848NoDuplicates fails t if sink holds a record of topic consumed
// twice.
func kip848NoDuplicates(t testing.TB, sink *kip848Sink, topic string) {
	t.Helper()
	if d := sink.duplicates(topic); len(d) > 0 {
		t.Errorf("records consumed twice: %v", d)
	}
}

func kip848Describe(t testing.TB, c *cluster.Cluster, group string) kadm.DescribedConsumerGroup {
	t.Helper()
	adm, ctx, done := adminctx.Open(t, c, 20*time.Second)
	defer done()
	gs, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return kadm.DescribedConsumerGroup{Err: err}
	}
	return gs[group]
}

// kip848Stable reports whether group is Stable with members members all at
// epoch.
func kip848Stable(t testing.TB, c *cluster.Cluster, group string, members int, epoch int32) bool {
	g := kip848Describe(t, c, group)
	if g.Err != nil || g.State != "Stable" || len(g.Members) != members {
		return false
	}
	for _, m := range g.Members {
		if m.MemberEpoch != epoch {
			return false
		}
	}
	return true
}

func kip848Committed(t testing.TB, c *cluster.Cluster, group string) kadm.OffsetResponses {
	t.Helper()
	adm, ctx, done := adminctx.Open(t, c, 20*time.Second)
	defer done()
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch committed offsets of %s: %v", group, err)
	}
	return os
}

// TestConsumerSeedRebalance is the seed article's consumer-protocol example:
// A owns all 6 partitions; B joins; A is told to give up 3 and keeps
// consuming the other 3 throughout; B gets its 3 only after A acknowledged.
func TestConsumerSeedRebalance(t *testing.T) {
	kip848EachVersion(t, func(t *testing.T, v string, c *cluster.Cluster) {
		const topic, group = "seed", "seed-group"
		log, sink := kip848Start(t, c, topic, 6, 10)
		first := kip848FirstEpoch(v)

		a, _ := kip848New(t, c, "member-a", group, log, consumer.Topics(topic), consumer.ServerAssignor("uniform"))
		kip848Poll(t, a, sink)
		eventually(t, "A owns all 6 partitions and consumed 60 records, group Stable", func() bool {
			return a.Owned().Count() == 6 && sink.count(topic) == 60 && kip848Stable(t, c, group, 1, a.Epoch())
		})
		if j := log.of("member-a", clients.Joined); len(j) != 1 || j[0].MemberEpoch != first {
			t.Fatalf("A joined %+v, want one join at epoch %d on %s", j, first, v)
		}
		// Normally A is still at its first epoch; a late metadata
		// update for the new topic would have bumped it once more.
		first = a.Epoch()

		b, _ := kip848New(t, c, "member-b", group, log, consumer.Topics(topic), consumer.ServerAssignor("uniform"))
		kip848Poll(t, b, sink)
		eventually(t, "A and B own 3 partitions each, group Stable at epoch first+1", func() bool {
			return a.Owned().Count() == 3 && b.Owned().Count() == 3 && kip848Stable(t, c, group, 2, first+1)
		})
		kept := a.Owned()[topic]
		kip848Produce(t, c, topic, 6, 10)
		eventually(t, "all 120 records consumed", func() bool { return sink.count(topic) == 120 })
		kip848NoDuplicates(t, sink, topic)

		// A gave up exactly 3, once, never lost anything, and was
		// assigned only once: the kept 3 were never paused.
		revA := log.of("member-a", clients.Revoked)
		if len(revA) != 1 || revA[0].Partitions.Count() != 3 {
			t.Fatalf("A revoked %+v, want 3 partitions once", revA)
		}
		if l := log.of("member-a", clients.Lost); len(l) != 0 {
			t.Fatalf("A lost %+v", l)
		}
		if as := log.of("member-a", clients.Assigned); len(as) != 1 {
			t.Fatalf("A assigned %d times: %+v", len(as), as)
		}
		for _, p := range kept {
			if es := sink.epochs("member-a", topic, p); !slices.Contains(es, first) || !slices.Contains(es, first+1) {
				t.Errorf("A consumed kept %s[%d] at epochs %v, want both %d and %d", topic, p, es, first, first+1)
			}
			if slices.Contains(revA[0].Partitions[topic], p) {
				t.Errorf("A revoked kept partition %d", p)
			}
		}
		// B got them only after A acknowledged (A revokes before its
		// acknowledging heartbeat).
		asB := log.of("member-b", clients.Assigned)
		if len(asB) == 0 || asB[0].seq < revA[0].seq {
			t.Fatalf("B assigned %+v before A revoked %+v", asB, revA)
		}
		if !slices.Equal(asB[0].Partitions[topic], revA[0].Partitions[topic]) {
			t.Errorf("B got %v, A gave up %v", asB[0].Partitions, revA[0].Partitions)
		}
		if j := log.of("member-b", clients.Joined); len(j) != 1 || j[0].MemberEpoch != first+1 {
			t.Fatalf("B joined %+v, want epoch %d", j, first+1)
		}
		if a.Epoch() != first+1 || b.Epoch() != first+1 {
			t.Fatalf("epochs A %d B %d, want %d", a.Epoch(), b.Epoch(), first+1)
		}
	})
}

// TestConsumerFencedAfterSession cuts a member off past its session: the
// broker removes it; when it comes back it hears UNKNOWN_MEMBER_ID, loses
// everything, rejoins with epoch 0 and the same member id, and a commit it
// makes for what it owned before does not land.
func TestConsumerFencedAfterSession(t *testing.T) {
	kip848EachVersion(t, func(t *testing.T, v string, c *cluster.Cluster) {
		const topic, group = "fenced", "fenced-group"
		log, sink := kip848Start(t, c, topic, 3, 10)
		a, links := kip848New(t, c, "member-a", group, log, consumer.Topics(topic))
		kip848Poll(t, a, sink)
		eventually(t, "A owns 3 partitions and consumed 30 records", func() bool {
			return a.Owned().Count() == 3 && sink.count(topic) == 30
		})
		eventually(t, "A's offsets committed", func() bool {
			os := kip848Committed(t, c, group)
			for p := range int32(3) {
				if o, ok := os.Lookup(topic, p); !ok || o.At != 10 {
					return false
				}
			}
			return true
		})
		before := a.Owned()
		epoch := a.Epoch()

		if err := links.Cut(cluster.AllNodes); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the broker to remove A after its session timeout", func() bool {
			g := kip848Describe(t, c, group)
			return g.Err == nil && len(g.Members) == 0
		})
		if err := links.Heal(cluster.AllNodes); err != nil {
			t.Fatal(err)
		}
		late := map[string]map[int32]int64{topic: {}}
		for _, p := range before[topic] {
			// Ahead of anything the member has sent, so the member itself
			// lets it out (it never sends an offset below one it sent):
			// only the broker's fencing can stop it.
			late[topic][p] = 7777
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		perr, err := a.Commit(ctx, late)
		cancel()
		t.Logf("late commit at epoch %d: %v %v", epoch, perr, err)
		if err == nil {
			for _, p := range before[topic] {
				switch e := perr[topic][p]; e {
				case kerr.UnknownMemberID.Message, kerr.StaleMemberEpoch.Message, kerr.FencedMemberEpoch.Message, consumer.NotOwned:
				default:
					t.Errorf("late commit of %s[%d] answered %q", topic, p, e)
				}
			}
		}
		eventually(t, "A fenced, lost everything and rejoined", func() bool {
			return len(log.of("member-a", clients.Fenced)) > 0 && len(log.of("member-a", clients.Lost)) > 0 && len(log.of("member-a", clients.Joined)) == 2 && a.Owned().Count() == 3
		})
		f := log.of("member-a", clients.Fenced)[0]
		if f.Err != kerr.UnknownMemberID.Message || f.MemberID != a.MemberID() {
			t.Errorf("fenced with %s as %s, want UNKNOWN_MEMBER_ID as %s", f.Err, f.MemberID, a.MemberID())
		}
		if l := log.of("member-a", clients.Lost)[0]; l.Partitions.Count() != 3 || l.seq > log.of("member-a", clients.Joined)[1].seq {
			t.Errorf("lost %+v, want all 3 before the rejoin", l)
		}
		if j := log.of("member-a", clients.Joined)[1]; j.MemberEpoch <= epoch {
			t.Errorf("rejoined at epoch %d, not after %d", j.MemberEpoch, epoch)
		}
		os := kip848Committed(t, c, group)
		for _, p := range before[topic] {
			if o, _ := os.Lookup(topic, p); o.At == 7777 {
				t.Errorf("the fenced member's late commit landed on %s[%d]", topic, p)
			}
		}
		kip848NoDuplicates(t, sink, topic)
	})
}

// TestConsumerFencedEpochRejoin (KAFKA-19233): a member whose epoch the
// broker has moved on twice behind its back is fenced with
// FENCED_MEMBER_EPOCH while the broker still holds it. It rejoins with
// epoch 0 and the same id: 4.2+ accepts that at once; 4.0/4.1 fence the
// rejoin again until the session timeout removes the old member.
func TestConsumerFencedEpochRejoin(t *testing.T) {
	kip848EachVersion(t, func(t *testing.T, v string, c *cluster.Cluster) {
		const topic, group = "rejoin", "rejoin-group"
		log, sink := kip848Start(t, c, topic, 2, 0)
		a, links := kip848New(t, c, "member-a", group, log, consumer.Topics(topic))
		kip848Poll(t, a, sink)
		// The first epoch is not pinned here: without records
		// produced, the new topic may reach the coordinator's
		// metadata after the join, which bumps the epoch once more.
		eventually(t, "A stable with 2 partitions", func() bool {
			return a.Owned().Count() == 2 && kip848Stable(t, c, group, 1, a.Epoch())
		})
		first := a.Epoch()
		raw, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if err := links.Cut(cluster.AllNodes); err != nil {
			t.Fatal(err)
		}
		// Two subscription changes in A's name, answered to us: the
		// broker moves A to first+2 and A never hears of it.
		for i, names := range [][]string{{topic, "no-such-topic"}, {topic}} {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.MemberEpoch = group, a.MemberID(), first+int32(i)
			req.RebalanceTimeoutMillis = -1
			req.SubscribedTopicNames = names
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			resp, err := req.RequestWith(ctx, raw)
			cancel()
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			if err != nil || resp.MemberEpoch != first+int32(i)+1 {
				t.Fatalf("heartbeat in A's name #%d: epoch %v err %v", i, resp, err)
			}
		}
		if err := links.Heal(cluster.AllNodes); err != nil {
			t.Fatal(err)
		}
		eventually(t, "A fenced and rejoined with 2 partitions", func() bool {
			return len(log.of("member-a", clients.Joined)) == 2 && a.Owned().Count() == 2
		})
		fences := log.of("member-a", clients.Fenced)
		if len(fences) == 0 || fences[0].Err != kerr.FencedMemberEpoch.Message || fences[0].MemberEpoch != first {
			t.Fatalf("first fence %+v, want FENCED_MEMBER_EPOCH at epoch %d", fences, first)
		}
		rejoin := log.of("member-a", clients.Joined)[1]
		var before []kip848Event
		for _, f := range fences {
			if f.seq < rejoin.seq {
				before = append(before, f)
			}
		}
		if kip848Profile(v).RejoinWithEpochZero {
			if len(before) != 1 {
				t.Errorf("%s: %d fences before the rejoin, want 1 (KAFKA-19233: epoch 0 from a known id is accepted)", v, len(before))
			}
		} else if len(before) < 2 {
			t.Errorf("%s: %d fences before the rejoin, want the epoch-0 rejoin fenced too until the session timeout", v, len(before))
		}
	})
}

// TestConsumerStaticRestart restarts a static member within its session:
// it left with epoch -2, the new incarnation (new member id, same instance
// id) gets its partitions back at the same epoch, and the group epoch does
// not move (GroupMetadataManager replaceMember, protocol note §3.6).
func TestConsumerStaticRestart(t *testing.T) {
	kip848EachVersion(t, func(t *testing.T, v string, c *cluster.Cluster) {
		const topic, group = "static", "static-group"
		log, sink := kip848Start(t, c, topic, 4, 10)
		first := kip848FirstEpoch(v)
		a, _ := kip848New(t, c, "member-a", group, log, consumer.Topics(topic), consumer.InstanceID("a"))
		b, _ := kip848New(t, c, "member-b", group, log, consumer.Topics(topic), consumer.InstanceID("b"))
		kip848Poll(t, a, sink)
		pb := kip848Poll(t, b, sink)
		eventually(t, "A and B own 2 partitions each, group Stable", func() bool {
			g := kip848Describe(t, c, group)
			return a.Owned().Count() == 2 && b.Owned().Count() == 2 && g.State == "Stable" && len(g.Members) == 2 && g.Epoch == g.AssignmentEpoch
		})
		g := kip848Describe(t, c, group)
		epoch, owned := b.Epoch(), b.Owned()
		t.Logf("group epoch %d (first member epoch %d), B at %d owns %v", g.Epoch, first, epoch, owned)

		pb.stop()
		restart := log.mark()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := b.Close(ctx); err != nil {
			t.Fatalf("close B: %v", err)
		}
		cancel()
		if l := log.of("member-b", clients.Left); len(l) != 1 || l[0].MemberEpoch != -2 {
			t.Fatalf("B left %+v, want one leave at epoch -2", l)
		}
		b2, _ := kip848New(t, c, "member-b2", group, log, consumer.Topics(topic), consumer.InstanceID("b"))
		kip848Poll(t, b2, sink)
		eventually(t, "B restarted owns its 2 partitions again", func() bool { return b2.Owned().Count() == 2 })
		if j := log.of("member-b2", clients.Joined); len(j) != 1 || j[0].MemberEpoch != epoch {
			t.Errorf("restarted B joined %+v, want epoch %d (no bump)", j, epoch)
		}
		if !slices.Equal(b2.Owned()[topic], owned[topic]) {
			t.Errorf("restarted B owns %v, had %v", b2.Owned(), owned)
		}
		if g2 := kip848Describe(t, c, group); g2.Epoch != g.Epoch {
			t.Errorf("group epoch moved %d → %d on a static restart", g.Epoch, g2.Epoch)
		}
		for _, r := range log.of("member-a", clients.Revoked) {
			if r.seq >= restart {
				t.Errorf("A revoked %v during B's restart", r.Partitions)
			}
		}
		eventually(t, "all 40 records consumed", func() bool { return sink.count(topic) == 40 })
		kip848NoDuplicates(t, sink, topic)
	})
}

// TestConsumerInteropKgo runs our member beside kgo's own KIP-848 consumer
// (ServerSideBalancer with CooperativeSticky → server assignor "uniform"),
// each one first in turn: the group splits the partitions and every record
// is consumed once.
func TestConsumerInteropKgo(t *testing.T) {
	kip848EachVersion(t, func(t *testing.T, v string, c *cluster.Cluster) {
		for _, ourFirst := range []bool{true, false} {
			name := "kgo-first"
			if ourFirst {
				name = "ours-first"
			}
			t.Run(name, func(t *testing.T) {
				topic, group := "interop-"+name, "interop-group-"+name
				log, sink := kip848Start(t, c, topic, 4, 10)
				startOurs := func() *consumer.Member {
					m, _ := kip848New(t, c, "ours-"+name, group, log, consumer.Topics(topic), consumer.ServerAssignor("uniform"))
					kip848Poll(t, m, sink)
					return m
				}
				startKgo := func() *kgo.Client {
					links, err := testLinks(t, c, "kgo-"+name)
					if err != nil {
						t.Fatal(err)
					}
					opts := append(links.KgoOpts(),
						kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
						kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()),
						kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
					)
					k, err := kgo.NewClient(opts...)
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan struct{})
					go func() {
						defer close(done)
						for ctx.Err() == nil {
							fs := k.PollFetches(ctx)
							var rs []clients.Record
							fs.EachRecord(func(r *kgo.Record) {
								rs = append(rs, clients.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset})
							})
							sink.add("kgo", rs)
						}
					}()
					t.Cleanup(func() {
						cancel()
						<-done
						k.Close()
					})
					return k
				}
				var ours *consumer.Member
				var k *kgo.Client
				if ourFirst {
					ours = startOurs()
					eventually(t, "our member owns all 4 and consumed 40", func() bool { return ours.Owned().Count() == 4 && sink.count(topic) == 40 })
					k = startKgo()
				} else {
					k = startKgo()
					eventually(t, "kgo consumed 40", func() bool { return sink.count(topic) == 40 })
					ours = startOurs()
				}
				eventually(t, "group Stable with 2 members, our member owning 2", func() bool {
					g := kip848Describe(t, c, group)
					return g.State == "Stable" && len(g.Members) == 2 && ours.Owned().Count() == 2 && g.AssignorName == "uniform"
				})
				kip848Produce(t, c, topic, 4, 10)
				eventually(t, "all 80 records consumed", func() bool { return sink.count(topic) == 80 })
				kip848NoDuplicates(t, sink, topic)
				_ = k
				if l := log.of("ours-"+name, clients.Lost); len(l) != 0 {
					t.Errorf("our member lost %+v", l)
				}
			})
		}
	})
}

// TestConsumerCommitOlderEpoch (KIP-1251, KAFKA-20066): the broker moves a
// member to a new epoch without touching its partitions; a commit still
// carrying the old epoch (one that raced the heartbeat) is accepted from
// 4.3 on, because the partitions were assigned at or before that epoch, and
// answered STALE_MEMBER_EPOCH before 4.3. The member's own commits use the
// epoch it holds and land on both.
func TestConsumerCommitOlderEpoch(t *testing.T) {
	kip848EachVersion(t, func(t *testing.T, v string, c *cluster.Cluster) {
		const topic, other, group = "older", "older-other", "older-group"
		clustertest.CreateTopic(t, c, topic, 2)
		clustertest.CreateTopic(t, c, other, 1)
		kip848Produce(t, c, topic, 2, 10)
		kip848Produce(t, c, other, 1, 1)
		log := &kip848Log{t: t}
		sink := newKip848Sink()
		a, _ := kip848New(t, c, "member-a", group, log, consumer.Topics(topic))
		kip848Poll(t, a, sink)
		eventually(t, "A stable owning 2 partitions", func() bool {
			return a.Owned().Count() == 2 && sink.count(topic) == 20 && kip848Stable(t, c, group, 1, a.Epoch())
		})
		old := a.Epoch()
		// B subscribes to another topic: the group epoch moves,
		// A's partitions do not.
		b, _ := kip848New(t, c, "member-b", group, log, consumer.Topics(other))
		kip848Poll(t, b, sink)
		eventually(t, "A moved past its epoch with the same partitions", func() bool {
			return a.Epoch() > old && b.Owned().Count() == 1 && a.Owned().Count() == 2
		})
		if r := log.of("member-a", clients.Revoked); len(r) != 0 {
			t.Fatalf("A revoked %+v", r)
		}

		adm, ctx, done := adminctx.Open(t, c, 30*time.Second)
		defer done()
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, a.MemberID(), old
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, td[topic].ID
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 3, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		got := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		t.Logf("%s: commit in A's name at old epoch %d (A holds %d): %v", v, old, a.Epoch(), got)
		if kip848Profile(v).OffsetCommitAssignmentEpochs {
			if got != nil {
				t.Errorf("%s: commit at the older epoch %d answered %v, want accepted (KIP-1251)", v, old, got)
			}
		} else if !errors.Is(got, kerr.StaleMemberEpoch) {
			t.Errorf("%s: commit at the older epoch %d answered %v, want STALE_MEMBER_EPOCH", v, old, got)
		}

		perr, err := a.Commit(ctx, map[string]map[int32]int64{topic: {0: 10, 1: 10}})
		if err != nil || len(perr) != 0 {
			t.Fatalf("A's own commit at epoch %d: %v %v", a.Epoch(), perr, err)
		}
		if o, _ := kip848Committed(t, c, group).Lookup(topic, 0); o.At != 10 {
			t.Errorf("committed %d after A's commit, want 10", o.At)
		}
	})
}

// TestConsumerRegexRange subscribes with a regex the broker evaluates and
// asks for the range assignor: the member gets every partition of the
// matching topics and none of the others, and the group reports "range".
func TestConsumerRegexRange(t *testing.T) {
	kip848EachVersion(t, func(t *testing.T, v string, c *cluster.Cluster) {
		const group = "regex-group"
		for _, tp := range []string{"rx-one", "rx-two", "other"} {
			clustertest.CreateTopic(t, c, tp, 2)
			kip848Produce(t, c, tp, 2, 5)
		}
		log := &kip848Log{t: t}
		sink := newKip848Sink()
		a, _ := kip848New(t, c, "member-a", group, log, consumer.Regex("rx-.*"), consumer.ServerAssignor("range"))
		kip848Poll(t, a, sink)
		eventually(t, "A owns both rx topics and consumed them", func() bool {
			return a.Owned().Count() == 4 && sink.count("rx-one") == 10 && sink.count("rx-two") == 10
		})
		if got := a.Owned().Topics(); !slices.Equal(got, []string{"rx-one", "rx-two"}) {
			t.Errorf("A owns topics %v", got)
		}
		g := kip848Describe(t, c, group)
		if g.AssignorName != "range" || len(g.Members) != 1 || g.Members[0].SubscribedTopicRegex == nil || *g.Members[0].SubscribedTopicRegex != "rx-.*" {
			t.Errorf("described %+v", g)
		}
		if sink.count("other") != 0 {
			t.Errorf("consumed %d records of an unmatched topic", sink.count("other"))
		}
	})
}

// TestConsumerPollTimeout stops polling past the max poll interval: the
// member leaves on its own (SessionExpired, Left, Lost) and rejoins with
// epoch 0 on the next Poll (Java's STALE state and maybeRejoinStaleMember).
func TestConsumerPollTimeout(t *testing.T) {
	kip848EachVersion(t, func(t *testing.T, v string, c *cluster.Cluster) {
		const topic, group = "polltimeout", "polltimeout-group"
		log, sink := kip848Start(t, c, topic, 2, 5)
		a, _ := kip848New(t, c, "member-a", group, log, consumer.Topics(topic), consumer.MaxPollInterval(3*time.Second), consumer.RebalanceTimeout(10*time.Second))
		p := kip848Poll(t, a, sink)
		eventually(t, "A owns 2 and consumed 10", func() bool { return a.Owned().Count() == 2 && sink.count(topic) == 10 })
		p.stop()
		eventually(t, "A left after the poll timeout", func() bool {
			return len(log.of("member-a", clients.SessionExpired)) == 1 && len(log.of("member-a", clients.Left)) == 1 && a.Owned().Count() == 0
		})
		if l := log.of("member-a", clients.Lost); len(l) != 1 || l[0].Partitions.Count() != 2 {
			t.Errorf("lost %+v, want both partitions", l)
		}
		if l := log.of("member-a", clients.Left); l[0].MemberEpoch != -1 {
			t.Errorf("left at epoch %d, want -1", l[0].MemberEpoch)
		}
		eventually(t, "the broker to drop A", func() bool {
			g := kip848Describe(t, c, group)
			return g.Err == nil && len(g.Members) == 0
		})
		kip848Poll(t, a, sink)
		eventually(t, "A rejoined on the next Poll", func() bool {
			return len(log.of("member-a", clients.Joined)) == 2 && a.Owned().Count() == 2
		})
		kip848NoDuplicates(t, sink, topic)
	})
}

// TestConsumerUnreleasedInstanceID starts a second member with an instance
// id a live member holds: the broker answers UNRELEASED_INSTANCE_ID, which
// is fatal (ConsumerHeartbeatRequestManager): the member stops and Poll
// returns the error; the first member is untouched.
func TestConsumerUnreleasedInstanceID(t *testing.T) {
	kip848EachVersion(t, func(t *testing.T, v string, c *cluster.Cluster) {
		const topic, group = "unreleased", "unreleased-group"
		log, sink := kip848Start(t, c, topic, 2, 1)
		a, _ := kip848New(t, c, "member-a", group, log, consumer.Topics(topic), consumer.InstanceID("same"))
		kip848Poll(t, a, sink)
		eventually(t, "A owns 2", func() bool { return a.Owned().Count() == 2 })
		dup, _ := kip848New(t, c, "member-dup", group, log, consumer.Topics(topic), consumer.InstanceID("same"))
		eventually(t, "the duplicate to fail fatally", func() bool { return len(log.of("member-dup", clients.Error)) > 0 })
		if e := log.of("member-dup", clients.Error)[0]; e.Err != kerr.UnreleasedInstanceID.Message {
			t.Fatalf("duplicate failed with %q, want UNRELEASED_INSTANCE_ID", e.Err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := dup.Poll(ctx)
		cancel()
		if !errors.Is(err, kerr.UnreleasedInstanceID) {
			t.Errorf("duplicate's Poll returned %v", err)
		}
		if dup.Owned().Count() != 0 || a.Owned().Count() != 2 {
			t.Errorf("duplicate owns %v, A owns %v", dup.Owned(), a.Owned())
		}
		if f := log.of("member-a", clients.Fenced); len(f) != 0 {
			t.Errorf("A fenced: %+v", f)
		}
	})
}
