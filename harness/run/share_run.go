package run

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/clients/kgoshare"
	"github.com/groupquake/groupquake/clients/share"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/observe"
)

// Share groups (KIP-932) in runs. A plan whose members are all share
// kinds runs a share group: groupquake's share members (clients/share)
// acquire and acknowledge records while the producers write and the
// nemesis draws node and link faults; the share checkers
// (harness/check/share.go) judge the history. The consumer-group
// machinery (ownership, commits, the describe loop, __consumer_offsets)
// has nothing to do there, so the share run has its own phases in
// runShare, reusing the cluster, the producers, the nemesis and the
// history of every run.

// IsShare reports whether p runs a share group.
func (p Plan) IsShare() bool {
	return len(p.Members) > 0 && p.Members[0].Protocol == history.ProtocolShare
}

// checkSharePlan refuses what a share run cannot do, naming why: share
// and consumer-group members in one group (a group id has one type),
// releases before 4.2 (version.CheckShareGroups; an upgrade's target
// too, and the embedded cluster's release), and the migration scenario. It drops static ids (share groups have
// none) and records the broker's share settings the checkers judge by.
func checkSharePlan(p *Plan) error {
	n := 0
	for _, m := range p.Members {
		if m.Protocol == history.ProtocolShare {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	o := p.Options
	if n != len(p.Members) {
		return fmt.Errorf("--kinds mixes share members with consumer-group members: a group is a share group or a consumer group, never both; run the share kinds (%s) alone", strings.Join(kinds.ShareKindNames(), ", "))
	}
	if o.Kafka != "" && len(o.Bootstrap) == 0 {
		if err := needShareGroups("--kafka", o.Kafka); err != nil {
			return err
		}
	}
	switch o.Scenario {
	case ScenarioBaseline, ScenarioMemberLinks, ScenarioBrokerFaults, ScenarioChurn, ScenarioCombined:
	default:
		return fmt.Errorf("--scenario %s with share members: share runs draw node, link and churn faults (scenarios %s, %s, %s, %s, %s); a migration moves consumer-group members between their protocols", o.Scenario, ScenarioBaseline, ScenarioMemberLinks, ScenarioBrokerFaults, ScenarioChurn, ScenarioCombined)
	}
	if o.UpgradeTo != "" && len(o.Bootstrap) == 0 {
		// Every release the cluster runs must have share groups: the
		// upgrade's target, and the old release again after a downgrade.
		if err := needShareGroups("--upgrade-to", o.UpgradeTo); err != nil {
			return err
		}
	}
	if err := checkJavaShare(*p); err != nil {
		return err
	}
	for _, f := range p.Faults {
		if fam := f.Family(); fam != faults.FamilyNode && fam != faults.FamilyLink && fam != faults.FamilyChurn && fam != faults.FamilyUpgrade {
			return fmt.Errorf("fault %s with share members: share runs draw node, link and churn faults (and an upgrade's steps) only", f)
		}
	}
	for i := range p.Members {
		p.Members[i].InstanceID = ""
	}
	if len(o.Bootstrap) == 0 {
		p.Share = &history.SharePlan{DeliveryCountLimit: cluster.FastShareDeliveryCountLimit, RecordLockMs: cluster.FastShareRecordLockMs,
			SessionTimeoutMs: cluster.FastShareSessionTimeoutMs, HeartbeatIntervalMs: cluster.FastShareHeartbeatMs}
	}
	return nil
}

// checkJavaShare refuses java-share members on a machine without a JDK
// and Maven, and on kafka-clients releases whose KafkaShareConsumer is not
// production-ready (the same facts as the brokers', version.CheckShareGroups).
func checkJavaShare(p Plan) error {
	var named bool
	for _, m := range p.Members {
		if k, ok := kinds.Share(m.Kind); ok && k.Java {
			named = true
		}
	}
	if !named {
		return nil
	}
	kc := p.KafkaClients()
	v, err := version.Parse(kc)
	if err != nil {
		return fmt.Errorf("java-share: kafka-clients %s: %w", kc, err)
	}
	if err := version.CheckShareGroups(v); err != nil {
		return fmt.Errorf("java-share runs the KafkaShareConsumer of kafka-clients %s: %w", kc, err)
	}
	if err := java.CheckJava(); err != nil {
		return fmt.Errorf("member kind java-share: %w", err)
	}
	return nil
}

// shareOptions reports whether o names share kinds (then every member is
// one, or checkSharePlan refuses the plan).
func shareOptions(o Options, kinds map[string]string) bool {
	return len(o.Kinds) > 0 && kinds[o.Kinds[0]] == history.ProtocolShare
}

// shareWorkload is a share run's default workload length: long enough for
// its faults to hit records under a lock. Node faults are carried out one at
// a time and each takes a restart (nodeRestartAllowance), so broker faults
// get a minute; churn keeps members away for up to two session timeouts.
func shareWorkload(scenario string) time.Duration {
	switch scenario {
	case ScenarioBrokerFaults, ScenarioCombined:
		return 60 * time.Second
	case ScenarioChurn:
		return 40 * time.Second
	case ScenarioMemberLinks:
		return 30 * time.Second
	}
	return 20 * time.Second
}

// shareStallSpan is a share run's Timers.PollInterval. A share member has no
// poll interval (nothing removes a member that stops polling; only its
// records' locks lapse): member-stall draws its length from half to one
// and a half of it, so that most stalls outlast the records' lock.
const shareStallSpan = 10 * time.Second

// shapeShare fits a share plan's workload: one producer per partition,
// each at its share of the rate (a send that waits out a leader change
// holds back only its partition, so the other partitions' records keep
// coming while a node is down), and the stall span.
func shapeShare(p *Plan) {
	p.Timers.PollInterval = shareStallSpan
	rate := 0
	for _, pp := range p.Producers {
		rate += pp.Rate
	}
	n := int32(0)
	for _, t := range p.Topics {
		n = max(n, t.Partitions)
	}
	if n <= 1 {
		return
	}
	p.Producers = nil
	for i := range n {
		p.Producers = append(p.Producers, ProducerPlan{Name: "p" + strconv.Itoa(int(i)), Rate: max(1, (rate+int(i))/int(n)), Partitions: []int32{i}})
	}
}

// shareAckFor is the share driver's acknowledgement of a record: a fixed
// policy on its sequence number, so that every run exercises each type
// and the delivery count, and a rerun does the same to the same records.
// 1 in 59 is released on every delivery (archived at the limit), 1 in 23
// released on its first delivery (delivered again, then accepted), 1 in
// 41 rejected, 1 in 31 renewed on its first delivery where the brokers
// serve RENEW (and accepted by the next poll); the rest accepted.
func shareAckFor(seq int64, count int16, renew bool) int8 {
	switch {
	case seq%59 == 0:
		return clients.AckRelease
	case seq%23 == 0 && count == 1:
		return clients.AckRelease
	case seq%41 == 0:
		return clients.AckReject
	case renew && seq%31 == 0 && count == 1:
		return clients.AckRenew
	}
	return clients.AckAccept
}

// shareClient is what a share run drives: groupquake's share member
// (clients/share) or kgo's share consumer (clients/kgoshare).
type shareClient interface {
	Start(ctx context.Context) error
	Poll(ctx context.Context) ([]share.Record, error)
	Acknowledge(recs []share.Record, t int8) error
	Assigned() clients.Partitions
	Close(ctx context.Context) error
	// Abandon is the process dying (nothing more is sent); Drop closes
	// the connections it left.
	Abandon()
	Drop()
	// Holding and Unsent count the records acquired by the member that
	// it has not finally acknowledged, or whose acknowledgement it has not
	// sent.
	Holding() int
	Unsent() int
}

var (
	_ shareClient = (*share.Member)(nil)
	_ shareClient = (*kgoshare.Member)(nil)
	_ shareClient = (*java.ShareMember)(nil)
)

// shareMember is one incarnation of a share member of a share run.
type shareMember struct {
	plan  MemberPlan
	m     shareClient
	h     *ShareRecorder
	renew bool
	done  chan struct{}
	// cancel stops its driver (set when it is launched); stalled holds its
	// polls (a member-stall or member-freeze); muted silences its hooks
	// (a crash: a dead process reports nothing).
	cancel  context.CancelFunc
	stalled atomic.Bool
	parked  atomic.Bool // the driver saw stalled and polls no more
	muted   *atomic.Bool
	hooks   shareHooks
}

// shareHooks records a share member's events and keeps the ledger of
// settled records: acknowledged accepts, rejects and gaps, and records
// delivered at the limit (archived once released or lapsed).
type shareHooks struct {
	h       *ShareRecorder
	led     *ledger
	limit   int16
	unknown *unknownAcks
	muted   *atomic.Bool
	// inflight holds the acknowledgements of the call on the member's
	// fetch lane, until its answer is recorded.
	inflight *inflightAcks
}

type inflightAcks struct {
	mu   sync.Mutex
	acks map[uint64][]clients.ShareAck // by call
}

// lost is a crash's end of the call in flight: its answer will never be
// recorded, so its accepts and rejects may or may not have been applied.
func (s shareHooks) lost() {
	if s.inflight == nil {
		return
	}
	s.inflight.mu.Lock()
	var acks []clients.ShareAck
	for _, as := range s.inflight.acks {
		acks = append(acks, as...)
	}
	s.inflight.acks = nil
	s.inflight.mu.Unlock()
	for _, a := range acks {
		if a.Type == clients.AckAccept || a.Type == clients.AckReject {
			for o := a.First; o <= a.Last; o++ {
				s.unknown.add(history.TP{Topic: a.Topic, Partition: a.Partition}, o)
			}
		}
	}
}

// unknownAcks are the records accepted or rejected by a call whose answer
// never came, or came with an error Kafka may answer after the state write
// landed (version.ShareAckMayHaveApplied): the broker may have applied it
// (then nobody is delivered the record again) or not (then its lock lapses
// and it comes back). Quiesce
// does not wait for them to be delivered again; ShareRecordsSettle judges
// them with the share-partition start offsets.
type unknownAcks struct {
	mu   sync.Mutex
	recs map[history.TP]map[int64]bool
}

func (u *unknownAcks) add(tp history.TP, off int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.recs[tp] == nil {
		u.recs[tp] = map[int64]bool{}
	}
	u.recs[tp][off] = true
}

// taken is a test of whether an unanswered acknowledgement may have
// settled a record, on a copy of what it knows now (so that a ledger may
// call it under its own lock).
func (u *unknownAcks) taken() func(history.TP, int64) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	recs := make(map[history.TP]map[int64]bool, len(u.recs))
	for tp, offs := range u.recs {
		recs[tp] = maps.Clone(offs)
	}
	return func(tp history.TP, off int64) bool { return recs[tp][off] }
}

// unsettled counts the records producers got acknowledged that no member
// has settled, leaving out those an unanswered acknowledgement may have.
func (u *unknownAcks) unsettled(l *ledger) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for tp, offs := range l.acked {
		for off := range offs {
			if !l.consumed[tp][off] && !u.recs[tp][off] {
				n++
			}
		}
	}
	return n
}

func (s shareHooks) OnEvent(e clients.Event) {
	if s.muted != nil && s.muted.Load() {
		return
	}
	s.h.OnEvent(e)
	if e.Share == nil {
		return
	}
	if s.inflight != nil {
		s.inflight.mu.Lock()
		if e.Kind == clients.Sent {
			if s.inflight.acks == nil {
				s.inflight.acks = map[uint64][]clients.ShareAck{}
			}
			s.inflight.acks[e.Call] = e.Share.Acks
		} else {
			delete(s.inflight.acks, e.Call)
		}
		s.inflight.mu.Unlock()
	}
	if e.Kind == clients.Sent {
		return
	}
	if e.Err != "" {
		if e.ErrCode == 0 { // no answer: the acknowledgements may have been applied
			for _, a := range e.Share.Acks {
				if a.Type == clients.AckAccept || a.Type == clients.AckReject {
					for o := a.First; o <= a.Last; o++ {
						s.unknown.add(history.TP{Topic: a.Topic, Partition: a.Partition}, o)
					}
				}
			}
		}
		return
	}
	for _, a := range e.Share.Acks {
		if a.Type == clients.AckRelease || a.Type == clients.AckRenew {
			continue
		}
		if err := e.Share.AckErrs[a.Topic][a.Partition]; err != "" {
			// An error Kafka may answer after the state write landed
			// (version.ShareAckMayHaveApplied): the record may never
			// come back, so quiesce does not wait for it.
			if version.ShareAckMayHaveApplied(err) && (a.Type == clients.AckAccept || a.Type == clients.AckReject) {
				for o := a.First; o <= a.Last; o++ {
					s.unknown.add(history.TP{Topic: a.Topic, Partition: a.Partition}, o)
				}
			}
			continue
		}
		for o := a.First; o <= a.Last; o++ {
			s.led.consume(history.TP{Topic: a.Topic, Partition: a.Partition}, o)
		}
	}
	for _, a := range e.Share.Acquired {
		if s.limit > 0 && a.DeliveryCount >= s.limit {
			for o := a.First; o <= a.Last; o++ {
				s.led.consume(history.TP{Topic: a.Topic, Partition: a.Partition}, o)
			}
		}
	}
}

// drive polls until ctx ends, acknowledging every record by shareAckFor;
// a record renewed is accepted by the next round. While stalled it does
// not poll, so what it queued waits.
func (sm *shareMember) drive(ctx context.Context) {
	defer close(sm.done)
	var renewed []share.Record
	for ctx.Err() == nil {
		if sm.stalled.Load() {
			sm.parked.Store(true)
			sleepUntil(ctx, time.Now().Add(20*time.Millisecond))
			continue
		}
		sm.parked.Store(false)
		if len(renewed) > 0 {
			sm.m.Acknowledge(renewed, clients.AckAccept)
			renewed = nil
		}
		// The member bounds each request itself (MaxWait plus its request
		// timeout); a shorter bound here would cut answers off and turn
		// them into unknown outcomes.
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		recs, err := sm.m.Poll(pctx)
		cancel()
		if errors.Is(err, share.ErrClosed) || errors.Is(err, kgoshare.ErrClosed) {
			return
		}
		by := map[int8][]share.Record{}
		for _, r := range recs {
			t := shareAckFor(parseSeq(r.Value), r.DeliveryCount, sm.renew)
			by[t] = append(by[t], r)
		}
		for _, t := range []int8{clients.AckRenew, clients.AckRelease, clients.AckReject, clients.AckAccept} {
			if len(by[t]) == 0 {
				continue
			}
			sm.m.Acknowledge(by[t], t)
			if t == clients.AckRenew {
				renewed = append(renewed, by[t]...)
			}
		}
	}
}

// javaShare builds a java-share member: Kafka's KafkaShareConsumer of the
// plan's kafka-clients, its driver compiled on first use.
func (r *runner) javaShare(ctx context.Context, tc *java.Toolchain, mp MemberPlan, links []kgo.Opt, hooks clients.Hooks) (*java.ShareMember, error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	rt, err := tc.PrepareShare(pctx, r.p.KafkaClients())
	if err != nil {
		return nil, fmt.Errorf("member %s (java-share): %w", mp.Name, err)
	}
	return java.NewShare(mp.Name, r.p.Group, java.ShareKgoOpts(links...), java.ShareTopics(r.p.TopicNames()...),
		java.ShareHooks(hooks), java.ShareClock(clients.ClockFunc(r.cfg.Now)), java.ShareRuntime(rt))
}

// shareGroupView is what coordinator-aware faults ask of a share run:
// the group coordinator, and for a workload partition its leader (the
// share-partition leader) and its share coordinator.
type shareGroupView struct {
	adm   *kadm.Client
	cl    *kgo.Client
	group string
	topic string
}

var _ faults.Leaders = shareGroupView{}

// topicMeta is the brokers' metadata of the workload topic.
func (g shareGroupView) topicMeta(ctx context.Context) (kadm.TopicDetail, error) {
	md, err := g.adm.Metadata(ctx, g.topic)
	if err != nil {
		return kadm.TopicDetail{}, err
	}
	td, ok := md.Topics[g.topic]
	if !ok || td.Err != nil {
		return td, fmt.Errorf("metadata of topic %s: %v", g.topic, td.Err)
	}
	return td, nil
}

// PartitionLeader asks the brokers which node leads partition p of the
// workload topic now.
func (g shareGroupView) PartitionLeader(ctx context.Context, p int32) (faults.NodeID, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	td, err := g.topicMeta(cctx)
	if err != nil {
		return 0, err
	}
	pd, ok := td.Partitions[p]
	switch {
	case !ok:
		return 0, fmt.Errorf("topic %s has no partition %d", g.topic, p)
	case pd.Err != nil:
		return 0, fmt.Errorf("metadata of %s-%d: %w", g.topic, p, pd.Err)
	case pd.Leader < 0:
		return 0, fmt.Errorf("%s-%d has no leader now", g.topic, p)
	}
	return pd.Leader, nil
}

// ShareCoordinator asks the brokers which node is the share coordinator
// of the share group's partition p: FindCoordinator with the SHARE key
// type (2) and the key groupId:topicId:partition
// (SharePartitionKey.asCoordinatorKey), the leader of the
// __share_group_state partition that key hashes to.
func (g shareGroupView) ShareCoordinator(ctx context.Context, p int32) (faults.NodeID, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	td, err := g.topicMeta(cctx)
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 2
	req.CoordinatorKeys = []string{shareCoordinatorKey(g.group, td.ID, p)}
	resp, err := req.RequestWith(cctx, g.cl)
	if err != nil {
		return 0, err
	}
	for _, c := range resp.Coordinators {
		if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
			return 0, fmt.Errorf("FindCoordinator(share, %s): %w", c.Key, err)
		}
		return c.NodeID, nil
	}
	return 0, fmt.Errorf("FindCoordinator(share, %s) named no coordinator", req.CoordinatorKeys[0])
}

// shareCoordinatorKey is SharePartitionKey.asCoordinatorKey: the group,
// the topic id as Kafka prints a Uuid (URL-safe base64 without padding)
// and the partition, joined by colons.
func shareCoordinatorKey(group string, topicID [16]byte, p int32) string {
	return fmt.Sprintf("%s:%s:%d", group, base64.RawURLEncoding.EncodeToString(topicID[:]), p)
}

// Coordinator asks the brokers which node coordinates the share group (the
// group coordinator keeps share groups' membership, KIP-932).
func (g shareGroupView) Coordinator(ctx context.Context) (faults.NodeID, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for _, c := range g.adm.FindGroupCoordinators(cctx, g.group) {
		if c.Err != nil {
			return 0, c.Err
		}
		return c.NodeID, nil
	}
	return 0, fmt.Errorf("no coordinator found for group %s", g.group)
}

// Rebalancing is false: a share group hands the same partitions to many
// members and has no revocation to wait for, so a fault waiting for a
// rebalance starts after faults.RebalanceWait and says so.
func (g shareGroupView) Rebalancing() bool { return false }

// runShare is run for a share group: setup → warm-up → workload ∥ faults
// (and an upgrade's steps) → heal → quiesce (until every acknowledged
// record settled) → final observations (share-partition start offsets) →
// teardown. Each phase is a method of its own.
func (r *runner) runShare(ctx context.Context) (err error) {
	if err := r.phase(ctx, history.PhaseSetup, "start or reach the cluster, create the topics, start the share group at the earliest offset, build producers and share members"); err != nil {
		return err
	}
	defer r.closeOwnCluster(ctx)
	sr, err := r.setupShare(ctx)
	if sr.ctl != nil {
		defer sr.ctl.Close()
	}
	if err != nil {
		return err
	}
	workCtx, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopWork()
		wg.Wait()
		if terr := r.teardownShare(ctx, sr.crew); terr != nil && err == nil {
			err = terr
		}
	}()
	if err := r.warmShare(ctx, workCtx, &wg, sr.crew); err != nil {
		return err
	}
	if err := r.workAndHeal(ctx, workCtx, "an upgrade's"); err != nil {
		return err
	}
	if err := r.phase(ctx, history.PhaseQuiesce, "wait until every acknowledged record is accepted, rejected or delivered at the limit"); err != nil {
		return err
	}
	none := make(chan error, 1)
	if ok, waited := r.waitFor(ctx, none, "quiesce", r.p.QuiesceMax, func() bool { return sr.unknown.unsettled(r.led) == 0 }); !ok {
		r.note("%s", timedOut("quiesce", r.p.QuiesceMax, r.p.quiesceWhy(), waited,
			fmt.Sprintf("%d of %d acknowledged records to be settled (%s)", sr.unknown.unsettled(r.led), r.led.Acked(), r.led.missingRecords(sr.unknown.taken()))))
	}
	return r.finalShare(ctx)
}

// shareSetup is what a share run's setup builds for the later phases.
type shareSetup struct {
	ctl     *kgo.Client // the harness's own client (group configs, coordinator look-ups)
	crew    *shareCrew
	unknown *unknownAcks
}

// setupShare reaches the cluster, starts the share group at the earliest
// offset, and builds the producers, the share crew and the nemesis.
func (r *runner) setupShare(ctx context.Context) (shareSetup, error) {
	var sr shareSetup
	p := r.p
	adm, err := r.reach(ctx, true)
	r.shareAdm = adm
	if err != nil {
		return sr, err
	}
	ctl, err := kgo.NewClient(kgo.SeedBrokers(r.h.Bootstrap()...))
	if err != nil {
		return sr, err
	}
	sr.ctl = ctl
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = share.StartFromEarliest(sctx, ctl, p.Group)
	cancel()
	if err != nil {
		return sr, err
	}
	if err := r.healLinks(); err != nil {
		return sr, err
	}
	if err := r.shareProducers(); err != nil {
		return sr, err
	}
	sr.unknown = &unknownAcks{recs: map[history.TP]map[int64]bool{}}
	sr.crew = newShareCrew(r, r.shareBuilder(ctx, sr.unknown))
	view := shareGroupView{adm: r.shareAdm, cl: ctl, group: p.Group, topic: p.Topics[0].Name}
	env := faults.Env{
		Target:  r.h,
		Links:   func(client string) (faults.Link, error) { return r.h.Links(client) },
		Members: sr.crew,
		Group:   view,
		Leaders: view,
	}
	r.nem = newNemesis(p.Faults, env, r.rec, r.meter, r.cfg.Logf)
	return sr, nil
}

// shareProducers builds the plan's producers, each on its own links and
// with its share of the record cap.
func (r *runner) shareProducers() error {
	p := r.p
	for _, pp := range p.Producers {
		l, err := r.h.Links(pp.Name)
		if err != nil {
			return fmt.Errorf("links of producer %s: %w", pp.Name, err)
		}
		limit := p.Options.Records
		if limit > 0 {
			limit = (limit + len(p.Producers) - 1) / len(p.Producers) // the cap is over all producers
		}
		pr, err := newProducer(pp, l.KgoOpts(), r.rec, r.led, p.Topics, limit)
		if err != nil {
			return err
		}
		r.prods = append(r.prods, pr)
	}
	return nil
}

// shareBuilder returns what builds each incarnation of a share member:
// its client of the planned kind on its own links, its recorder and the
// hooks that keep the ledger of settled records.
func (r *runner) shareBuilder(ctx context.Context, unknown *unknownAcks) func(MemberPlan) (*shareMember, error) {
	p := r.p
	renew := false
	if v, err := version.Parse(p.Options.Kafka); err == nil {
		renew = v.Profile().ShareFetchV2
	}
	limit := int16(0)
	if p.Share != nil {
		limit = p.Share.DeliveryCountLimit
	}
	tc := &java.Toolchain{Logf: r.cfg.Logf} // java-share's driver, built on first use
	return func(mp MemberPlan) (*shareMember, error) {
		k, ok := kinds.Share(mp.Kind)
		if !ok {
			return nil, fmt.Errorf("member %s: %q is not a share kind (%s)", mp.Name, mp.Kind, strings.Join(kinds.ShareKindNames(), ", "))
		}
		l, err := r.h.Links(mp.Name)
		if err != nil {
			return nil, fmt.Errorf("links of member %s: %w", mp.Name, err)
		}
		h := NewShareRecorder(r.rec, mp.Name)
		if k.Kgo || k.Java {
			h.PerNode()
		}
		muted := &atomic.Bool{}
		hooks := shareHooks{h: h, led: r.led, limit: limit, unknown: unknown, muted: muted, inflight: &inflightAcks{}}
		var m shareClient
		switch {
		case k.Kgo:
			m, err = kgoshare.New(mp.Name, p.Group, kgoshare.KgoOpts(r.kgoOpts(mp.Name, l.KgoOpts(), true)...), kgoshare.Topics(p.TopicNames()...),
				kgoshare.WithHooks(hooks), kgoshare.WithClock(clients.ClockFunc(r.cfg.Now)))
		case k.Java:
			m, err = r.javaShare(ctx, tc, mp, l.KgoOpts(), hooks)
		default:
			m, err = share.New(mp.Name, p.Group, share.KgoOpts(r.kgoOpts(mp.Name, l.KgoOpts(), true)...), share.Topics(p.TopicNames()...),
				share.WithHooks(hooks), share.WithClock(clients.ClockFunc(r.cfg.Now)),
				share.Explicit(), share.Renew(renew), share.WithBug(k.Bug))
		}
		if err != nil {
			return nil, err
		}
		return &shareMember{plan: mp, m: m, h: h, renew: renew && !k.Java, done: make(chan struct{}), muted: muted, hooks: hooks}, nil
	}
}

// warmShare starts the crew and waits, at most WarmupMax, until every
// partition has a member.
func (r *runner) warmShare(ctx, workCtx context.Context, wg *sync.WaitGroup, crew *shareCrew) error {
	if err := r.phase(ctx, history.PhaseWarmup, "share members join, staggered as planned; every partition gets a member"); err != nil {
		return err
	}
	if err := crew.startAll(workCtx, wg); err != nil {
		return err
	}
	without := func() []string {
		got := map[history.TP]bool{}
		for _, sm := range crew.running() {
			for t, ps := range sm.m.Assigned() {
				for _, q := range ps {
					got[history.TP{Topic: t, Partition: q}] = true
				}
			}
		}
		var out []string
		for _, tp := range r.p.Check().Partitions() {
			if !got[tp] {
				out = append(out, tp.String())
			}
		}
		return out
	}
	none := make(chan error, 1)
	if ok, waited := r.waitFor(ctx, none, "warm-up", r.p.WarmupMax, func() bool { return len(without()) == 0 }); !ok {
		r.note("%s; carrying on, the checkers will judge", timedOut("warm-up", r.p.WarmupMax, r.p.warmupWhy(), waited,
			"a share member on every partition (none on "+strings.Join(without(), ", ")+")"))
	}
	return nil
}

// finalShare is the final phase: the share-partition start offsets beside
// the partitions' ends, written to observations.json.
func (r *runner) finalShare(ctx context.Context) error {
	p := r.p
	var names []string
	for _, mp := range p.Members {
		names = append(names, mp.Name)
	}
	r.cfg.Logf("phase %s", history.PhaseFinal)
	r.setPhase(ctx, history.PhaseFinal)
	if _, err := r.rec.BeginFinal(names, "final observations: the share group's share-partition start offsets and the partitions' ends"); err != nil {
		return err
	}
	r.began(ctx, history.PhaseFinal)
	snap := history.Snapshot{Label: "final", Time: r.cfg.Now().Sub(r.start), HistoryLen: r.rec.Len()}
	oc, cancel := context.WithTimeout(ctx, 30*time.Second)
	starts, serr := shareStarts(oc, r.shareAdm, p.Group, p.TopicNames())
	cancel()
	if serr != nil {
		r.note("final observation: %v", serr)
	}
	snap.ShareStarts = starts
	o := &history.Observations{Group: p.Group, Final: snap}
	r.shareObs = o
	return writeJSONAtomic(r.cfg.Dir+"/"+ObservationsFile, o)
}

// observeShareRecovery reads, once every member has closed, the records of
// the group's state and what the brokers describe of it, for the recovery
// checker (ShareStateMatchesLog), and adds them to observations.json. Until
// the group is empty (a crashed member's id stays until its session
// expires) it waits, at most a session timeout and a bit; the records are
// read between two describes that must agree, or the read is taken again.
func (r *runner) observeShareRecovery(ctx context.Context) {
	if r.shareObs == nil || r.shareAdm == nil {
		return
	}
	p := r.p
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	deadline := time.Now().Add(p.Timers.SessionTimeout + 5*time.Second)
	for time.Now().Before(deadline) {
		d, err := r.shareAdm.DescribeShareGroups(ctx, p.Group)
		if err == nil && len(d[p.Group].Members) == 0 {
			break
		}
		sleepUntil(ctx, time.Now().Add(250*time.Millisecond))
	}
	same := func(a, b *history.ShareGroupDescription) bool {
		if a == nil || b == nil || a.GroupEpoch != b.GroupEpoch || a.AssignmentEpoch != b.AssignmentEpoch || len(a.Members) != len(b.Members) {
			return false
		}
		for i := range a.Members {
			if a.Members[i].MemberID != b.Members[i].MemberID || a.Members[i].MemberEpoch != b.Members[i].MemberEpoch {
				return false
			}
		}
		return true
	}
	var rec *history.ShareRecovery
	for try := 0; try < 3; try++ {
		before := observe.ShareRecovery(ctx, r.shareAdm, r.h.Bootstrap(), p.Group, p.TopicNames())
		rec = observe.ShareRecovery(ctx, r.shareAdm, r.h.Bootstrap(), p.Group, p.TopicNames())
		if same(before.Describe, rec.Describe) && len(before.GroupRecords) == len(rec.GroupRecords) && len(before.StateRecords) == len(rec.StateRecords) {
			break
		}
		r.note("share recovery observation: the group changed while it was read (try %d); reading it again", try+1)
	}
	rec.Time, rec.HistoryLen = r.cfg.Now().Sub(r.start), int64(r.rec.Len())
	for _, e := range rec.Errors {
		r.note("share recovery observation: %s", e)
	}
	r.shareObs.ShareRecovery = rec
	if err := writeJSONAtomic(r.cfg.Dir+"/"+ObservationsFile, r.shareObs); err != nil {
		r.note("share recovery observation: writing %s: %v", ObservationsFile, err)
	}
}

// shareStarts reads the share group's share-partition start offsets
// (DescribeShareGroupOffsets) beside each partition's end.
func shareStarts(ctx context.Context, adm *kadm.Client, group string, topics []string) ([]history.ShareStart, error) {
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	d, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err == nil {
		err = d.Error()
	}
	out := observe.ShareStarts(ends, d, err, group)
	if err != nil {
		return out, fmt.Errorf("describe share group offsets: %w", err)
	}
	return out, nil
}

// teardownShare closes the share members (their final acknowledgements
// close their sessions; then they leave), drops crashed ones, and closes
// the producers and the admin.
func (r *runner) teardownShare(ctx context.Context, crew *shareCrew) error {
	why := r.beginTeardown(ctx, "share members leave, clients close")
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	crew.closeAll(cctx)
	if why == "" {
		r.observeShareRecovery(ctx) // an interrupted run is judged as far as it got
	}
	for _, pr := range r.prods {
		pr.close()
	}
	if r.shareAdm != nil {
		r.shareAdm.Close()
	}
	return crew.finish()
}

// needShareGroups refuses a release (given by flag) that has no share
// groups.
func needShareGroups(flag, release string) error {
	v, err := version.Parse(release)
	if err != nil {
		return err
	}
	if err := version.CheckShareGroups(v); err != nil {
		return fmt.Errorf("%s %s: %w", flag, release, err)
	}
	return nil
}
