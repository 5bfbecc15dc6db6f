package scale

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients/light"
	"github.com/groupquake/groupquake/clients/share"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
)

// Share groups (KIP-932) at scale: one share group of many lightweight
// share members on a few partitions. Each member heartbeats on a
// connection shared with others (ShareGroupHeartbeat is answered at once)
// and fetches on a connection of its own (a broker answers one request of
// a connection at a time, and a ShareFetch waits up to its MaxWait),
// accepting on its next ShareFetch whatever the previous one acquired.
// ShareOptions say what to measure; ShareReport is what was measured:
// the time until every member has joined with an assignment and the
// coordinator describes the group Stable with all of them at the group's
// epoch, then how fast the group drains a preloaded backlog (records
// accepted per second) and how many deliveries were redeliveries; then the
// time to a stable group after one member leaves and, when asked, after
// the coordinator's node restarts (the embedded cluster's, which serves
// again on the same address).

// ShareOptions describe one share scale run.
type ShareOptions struct {
	Members    int
	Partitions int32
	// Records is the backlog produced before the members start, drained
	// after the group is stable.
	Records      int
	Group, Topic string
	Replication  int16
	// Conns is the size of the heartbeat connection pool per broker.
	Conns int
	// MaxWait is each ShareFetch's MaxWaitMs; MaxRecords its MaxRecords.
	MaxWait       time.Duration
	MaxRecords    int32
	StableTimeout time.Duration
	DrainTimeout  time.Duration
	// Restart restarts the coordinator's node after the leave; the
	// cluster must then take node faults (ShareRestarter) and serve again
	// on the same addresses (the members keep the coordinator and the
	// leaders they found at the start).
	Restart bool
	Logf    func(format string, args ...any)
}

// ShareRestarter is what ShareOptions.Restart needs of the cluster.
type ShareRestarter interface {
	StopNode(ctx context.Context, id cluster.NodeID) error
	StartNode(ctx context.Context, id cluster.NodeID) error
}

// ShareReport is what a share scale run measured.
type ShareReport struct {
	Members    int   `json:"members"`
	Partitions int32 `json:"partitions"`
	// ToStable is the time from the first join to a stable group.
	ToStable   time.Duration `json:"to_stable_ns"`
	GroupEpoch int32         `json:"group_epoch"`
	// MembersPerPartition is how many members the coordinator gave each
	// partition (min and max over partitions).
	MinSharing int `json:"min_members_per_partition"`
	MaxSharing int `json:"max_members_per_partition"`
	// Drained records of the backlog were accepted in DrainTime;
	// RecordsPerSecond is their rate.
	Backlog          int           `json:"backlog"`
	Drained          int64         `json:"drained"`
	DrainTime        time.Duration `json:"drain_ns"`
	RecordsPerSecond float64       `json:"records_per_second"`
	// Deliveries counts acquired records, Redeliveries those at a delivery
	// count above 1, EmptyFetches the ShareFetches that acquired nothing.
	Deliveries   int64 `json:"deliveries"`
	Redeliveries int64 `json:"redeliveries"`
	EmptyFetches int64 `json:"empty_fetches"`
	// Errors counts the members' errors by name.
	Errors       map[string]int64 `json:"errors,omitempty"`
	HeartbeatRPS float64          `json:"heartbeat_rps"`
	FetchRPS     float64          `json:"fetch_rps"`
	// LeaveToStable is the time from one member's leave (a heartbeat at
	// epoch -1) to a stable group of the others; RestartToStable the time
	// from the coordinator's node being stopped to a stable group whose
	// every member was answered after that (0: not restarted), said in
	// RestartNote.
	LeaveToStable   time.Duration `json:"leave_to_stable_ns,omitempty"`
	LeaveEpoch      int32         `json:"leave_epoch,omitempty"`
	RestartToStable time.Duration `json:"restart_to_stable_ns,omitempty"`
	RestartEpoch    int32         `json:"restart_epoch,omitempty"`
	RestartNote     string        `json:"restart_note,omitempty"`
}

// shareCounters are the members' shared counters.
type shareCounters struct {
	deliveries, redeliveries, accepted, empty, heartbeats, fetches atomic.Int64
	mu                                                             sync.Mutex
	errs                                                           map[string]int64
}

func (c *shareCounters) err(name string) {
	c.mu.Lock()
	c.errs[name]++
	c.mu.Unlock()
}

// lightShare is one lightweight share member.
type lightShare struct {
	id      string
	idx     int
	o       *ShareOptions
	hbPool  *light.Pool
	fPool   *light.Pool
	coord   func() string
	leaders func() map[int32]string
	topicID [16]byte
	cnt     *shareCounters
	stop    context.CancelFunc // ends its loops

	mu       sync.Mutex
	lastOK   time.Time // its last heartbeat answered without an error
	epoch    int32
	assigned []int32
	sessions map[string]int32   // leader address → next session epoch
	pending  map[string][]int64 // leader address → partition<<40|offset acquired, to accept
}

func (m *lightShare) heartbeatLoop(ctx context.Context) {
	interval := time.Second
	for ctx.Err() == nil {
		m.mu.Lock()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version = shareVersion(version.APIShareGroupHeartbeat)
		req.GroupID, req.MemberID, req.MemberEpoch = m.o.Group, m.id, m.epoch
		if m.epoch == 0 {
			req.SubscribedTopicNames = []string{m.o.Topic}
		}
		m.mu.Unlock()
		resp, err := m.hbPool.Do(ctx, m.coord(), m.idx, req, 0)
		m.cnt.heartbeats.Add(1)
		if err != nil {
			m.cnt.err("heartbeat transport: " + errText(err))
			light.Sleep(ctx, 200*time.Millisecond)
			continue
		}
		r := resp.(*kmsg.ShareGroupHeartbeatResponse)
		if r.ErrorCode != 0 {
			m.cnt.err("heartbeat " + kerr.ErrorForCode(r.ErrorCode).Error())
			m.mu.Lock()
			if r.ErrorCode == kerr.UnknownMemberID.Code || r.ErrorCode == kerr.FencedMemberEpoch.Code {
				m.epoch, m.assigned = 0, nil
			}
			m.mu.Unlock()
			light.Sleep(ctx, 200*time.Millisecond)
			continue
		}
		m.mu.Lock()
		m.epoch, m.lastOK = r.MemberEpoch, time.Now()
		if r.Assignment != nil {
			m.assigned = nil
			for _, t := range r.Assignment.TopicPartitions {
				if t.TopicID == m.topicID {
					m.assigned = append(m.assigned, t.Partitions...)
				}
			}
			sort.Slice(m.assigned, func(i, j int) bool { return m.assigned[i] < m.assigned[j] })
		}
		m.mu.Unlock()
		if r.HeartbeatIntervalMillis > 0 {
			interval = time.Duration(r.HeartbeatIntervalMillis) * time.Millisecond
		}
		light.Sleep(ctx, interval)
	}
}

func (m *lightShare) state() (int32, []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch, append([]int32(nil), m.assigned...)
}

// answeredSince reports whether the member has an epoch and an assignment,
// and its last heartbeat was answered after t (any time when t is zero).
func (m *lightShare) answeredSince(t time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch > 0 && len(m.assigned) > 0 && (t.IsZero() || m.lastOK.After(t))
}

// leave stops the member's loops and sends its leave (epoch -1).
func (m *lightShare) leave(ctx context.Context) error {
	m.stop()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = shareVersion(version.APIShareGroupHeartbeat)
	req.GroupID, req.MemberID, req.MemberEpoch = m.o.Group, m.id, -1
	resp, err := m.hbPool.Do(ctx, m.coord(), m.idx, req, 30*time.Second)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode)
}

func (m *lightShare) fetchLoop(ctx context.Context) {
	turn := 0
	for ctx.Err() == nil {
		_, parts := m.state()
		if len(parts) == 0 {
			light.Sleep(ctx, 100*time.Millisecond)
			continue
		}
		leaders := m.leaders()
		byLeader := map[string][]int32{}
		var addrs []string
		for _, p := range parts {
			a, ok := leaders[p]
			if !ok {
				continue
			}
			if byLeader[a] == nil {
				addrs = append(addrs, a)
			}
			byLeader[a] = append(byLeader[a], p)
		}
		if len(addrs) == 0 {
			light.Sleep(ctx, 100*time.Millisecond)
			continue
		}
		sort.Strings(addrs)
		addr := addrs[turn%len(addrs)]
		turn++
		m.fetch(ctx, addr, byLeader[addr])
	}
}

func (m *lightShare) fetch(ctx context.Context, addr string, parts []int32) {
	m.mu.Lock()
	epoch := m.sessions[addr]
	acks := m.pending[addr]
	if epoch == 0 {
		acks = nil // an opening fetch carries no acknowledgement
	}
	m.mu.Unlock()
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = shareVersion(version.APIShareFetch)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.o.Group), kmsg.StringPtr(m.id), epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(m.o.MaxWait.Milliseconds()), 1, 1<<20
	req.MaxRecords, req.BatchSize = m.o.MaxRecords, m.o.MaxRecords
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = m.topicID
	byPart := map[int32][]int64{}
	for _, a := range acks {
		byPart[int32(a>>40)] = append(byPart[int32(a>>40)], a&(1<<40-1))
	}
	for _, p := range parts {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		offs := byPart[p]
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for i := 0; i < len(offs); {
			j := i
			for j+1 < len(offs) && offs[j+1] == offs[j]+1 {
				j++
			}
			b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = offs[i], offs[j], []int8{1}
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
			i = j + 1
		}
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	resp, err := m.fPool.Do(ctx, addr, m.idx, req, m.o.MaxWait+10*time.Second)
	m.cnt.fetches.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			m.cnt.err("fetch transport: " + errText(err))
		}
		delete(m.sessions, addr)
		return
	}
	r := resp.(*kmsg.ShareFetchResponse)
	if r.ErrorCode != 0 {
		m.cnt.err("fetch " + kerr.ErrorForCode(r.ErrorCode).Error())
		delete(m.sessions, addr)
		return
	}
	if epoch > 0 {
		m.cnt.accepted.Add(int64(len(acks)))
		m.pending[addr] = nil
	}
	m.sessions[addr] = epoch + 1
	got := 0
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				m.cnt.err("fetch partition " + kerr.ErrorForCode(rp.ErrorCode).Error())
			}
			for _, a := range rp.AcquiredRecords {
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					got++
					m.cnt.deliveries.Add(1)
					if a.DeliveryCount > 1 {
						m.cnt.redeliveries.Add(1)
					}
					m.pending[addr] = append(m.pending[addr], int64(rp.Partition)<<40|o)
				}
			}
		}
	}
	if got == 0 {
		m.cnt.empty.Add(1)
	}
}

// ShareCluster is what RunShare needs of a cluster (every cluster.Handle
// has it). A cluster served in this process (cluster.Embedded) also has
// DialContext, and the members then connect to it without sockets.
type ShareCluster interface {
	Bootstrap() []string
	Admin() (*kadm.Client, error)
}

var _ ShareCluster = cluster.Handle(nil)

// RunShare carries out one share scale run on h.
func RunShare(ctx context.Context, h ShareCluster, o ShareOptions) (*ShareReport, error) {
	if o.Members < 1 || o.Partitions < 1 {
		return nil, fmt.Errorf("members %d, partitions %d: a share scale run needs at least one of each", o.Members, o.Partitions)
	}
	if o.Group == "" || o.Topic == "" {
		return nil, errors.New("a share scale run needs a group and a topic")
	}
	o.setDefaults()
	adm, err := h.Admin()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	rf := o.Replication
	if rf == 0 {
		rf = int16(min(3, len(h.Bootstrap())))
	}
	if resp, err := adm.CreateTopic(ctx, o.Partitions, rf, nil, o.Topic); err != nil || resp.Err != nil {
		return nil, fmt.Errorf("creating topic %s: %v %v", o.Topic, err, resp.Err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.Bootstrap()...), kgo.ProducerLinger(5*time.Millisecond), kgo.DefaultProduceTopic(o.Topic))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := share.StartFromEarliest(ctx, cl, o.Group); err != nil {
		return nil, err
	}
	// The backlog: produced before the members start, drained once stable.
	if err := produceShareBacklog(ctx, cl, o); err != nil {
		return nil, err
	}
	rt, err := findShareRoutes(ctx, adm, o)
	if err != nil {
		return nil, err
	}
	cnt := &shareCounters{errs: map[string]int64{}}
	stats := &light.Stats{}
	hbPool := light.NewSharedPool(o.Conns, "groupquake-share-scale", stats) // heartbeats share o.Conns connections per broker
	fPool := light.NewOwnPool("groupquake-share-scale", stats)              // each member fetches on its own connection
	if d, ok := h.(inProcess); ok {
		// The embedded cluster: every member's fetch connection in
		// process, without a socket (a file descriptor each otherwise).
		hbPool.DialWith(d.DialContext)
		fPool.DialWith(d.DialContext)
	}
	defer hbPool.Close()
	defer fPool.Close()
	mctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	members := make([]*lightShare, o.Members)
	start := time.Now()
	for i := range members {
		m := &lightShare{id: cluster.NewID(16), idx: i, o: &o, hbPool: hbPool, fPool: fPool, topicID: rt.topicID, cnt: cnt,
			coord:    func() string { return rt.coordAddr },
			leaders:  func() map[int32]string { rt.mu.Lock(); defer rt.mu.Unlock(); return rt.leaderAddrs },
			sessions: map[string]int32{}, pending: map[string][]int64{}}
		members[i] = m
		var c context.Context
		c, m.stop = context.WithCancel(mctx)
		wg.Add(2)
		go func() { defer wg.Done(); m.heartbeatLoop(c) }()
		go func() { defer wg.Done(); m.fetchLoop(c) }()
	}
	defer func() { stop(); wg.Wait() }()

	rep := &ShareReport{Members: o.Members, Partitions: o.Partitions, Backlog: o.Records}
	g, err := waitShareStable(ctx, adm, o, members, cnt, time.Time{})
	if err != nil {
		return rep, fmt.Errorf("join wave: %w", err)
	}
	rep.ToStable, rep.GroupEpoch = time.Since(start), g.GroupEpoch
	rep.MinSharing, rep.MaxSharing = sharing(g, o.Partitions)
	o.Logf("share group of %d members stable after %s at epoch %d (%d–%d members a partition)", o.Members, rep.ToStable.Round(time.Millisecond), rep.GroupEpoch, rep.MinSharing, rep.MaxSharing)

	drainShare(ctx, o, cnt, start, rep)
	o.Logf("drained %d of %d records in %s: %.0f records/s, %d deliveries, %d redeliveries", rep.Drained, o.Records, rep.DrainTime.Round(time.Millisecond), rep.RecordsPerSecond, rep.Deliveries, rep.Redeliveries)
	live := members
	if len(members) > 1 { // one member leaves, another stays
		if live, err = shareLeave(ctx, adm, o, members, cnt, rep); err != nil {
			return rep, err
		}
	}
	if !o.Restart {
		return rep, nil
	}
	return rep, shareRestart(ctx, h, adm, o, live, cnt, rep)
}

// shareLeave makes the last member leave and waits for a stable group of
// the others, whom it returns.
func shareLeave(ctx context.Context, adm *kadm.Client, o ShareOptions, members []*lightShare, cnt *shareCounters, rep *ShareReport) ([]*lightShare, error) {
	live := members[:len(members)-1]
	t0 := time.Now()
	if err := members[len(members)-1].leave(ctx); err != nil {
		o.Logf("the leaving member: %v", err)
	}
	g, err := waitShareStable(ctx, adm, o, live, cnt, time.Time{})
	if err != nil {
		return live, fmt.Errorf("one leaves: %w", err)
	}
	rep.LeaveToStable, rep.LeaveEpoch = time.Since(t0), g.GroupEpoch
	o.Logf("one leaves: stable after %s at epoch %d", rep.LeaveToStable.Round(time.Millisecond), g.GroupEpoch)
	return live, nil
}

// shareRestart stops the coordinator's node, starts it again, and waits
// for a stable group whose every member was answered after the stop.
func shareRestart(ctx context.Context, h ShareCluster, adm *kadm.Client, o ShareOptions, live []*lightShare, cnt *shareCounters, rep *ShareReport) error {
	r, ok := h.(ShareRestarter)
	if !ok {
		return errors.New("coordinator restart: this cluster takes no node faults")
	}
	coords := adm.FindGroupCoordinators(ctx, o.Group)
	c, ok := coords[o.Group]
	if !ok || c.Err != nil {
		return fmt.Errorf("coordinator restart: finding the coordinator of %s: %v", o.Group, c.Err)
	}
	node := cluster.NodeID(c.NodeID)
	t0 := time.Now()
	if err := r.StopNode(ctx, node); err != nil {
		return fmt.Errorf("coordinator restart: stop node %d: %w", node, err)
	}
	stopped := time.Now()
	startErr := make(chan error, 1)
	go func() { startErr <- r.StartNode(ctx, node) }()
	g, err := waitShareStable(ctx, adm, o, live, cnt, stopped)
	serr := <-startErr
	if err != nil {
		return fmt.Errorf("coordinator restart: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("coordinator restart: start node %d again: %w", node, serr)
	}
	rep.RestartToStable, rep.RestartEpoch = time.Since(t0), g.GroupEpoch
	rep.RestartNote = fmt.Sprintf("node %d (the coordinator) stopped in %s", node, stopped.Sub(t0).Round(time.Millisecond))
	o.Logf("coordinator restart: stable after %s at epoch %d; %s", rep.RestartToStable.Round(time.Millisecond), g.GroupEpoch, rep.RestartNote)
	return nil
}

// setDefaults fills the options a share scale run left zero.
func (o *ShareOptions) setDefaults() {
	if o.Conns <= 0 {
		o.Conns = 8
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 500 * time.Millisecond
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = 50
	}
	if o.StableTimeout <= 0 {
		o.StableTimeout = 10 * time.Minute
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 10 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// produceShareBacklog produces o.Records records round-robin over the
// partitions and waits for all of them.
func produceShareBacklog(ctx context.Context, cl *kgo.Client, o ShareOptions) error {
	if o.Records <= 0 {
		return nil
	}
	var perr error
	var mu sync.Mutex
	for i := range o.Records {
		cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i)), Partition: int32(i) % o.Partitions}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				perr = err
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if perr != nil {
		return fmt.Errorf("producing the backlog: %w", perr)
	}
	return nil
}

// shareRoutes is where the light share members send their requests: the
// topic's ID, each partition's leader and the group's coordinator.
type shareRoutes struct {
	topicID     [16]byte
	mu          sync.Mutex
	leaderAddrs map[int32]string
	coordAddr   string
}

// findShareRoutes reads the topic's metadata and the group's coordinator.
func findShareRoutes(ctx context.Context, adm *kadm.Client, o ShareOptions) (*shareRoutes, error) {
	md, err := adm.Metadata(ctx, o.Topic)
	if err != nil {
		return nil, err
	}
	td := md.Topics[o.Topic]
	brokers := map[int32]string{}
	for _, b := range md.Brokers {
		brokers[b.NodeID] = fmt.Sprintf("%s:%d", b.Host, b.Port)
	}
	rt := &shareRoutes{topicID: td.ID, leaderAddrs: map[int32]string{}}
	for p, pd := range td.Partitions {
		rt.leaderAddrs[p] = brokers[pd.Leader]
	}
	coords := adm.FindGroupCoordinators(ctx, o.Group)
	for _, c := range coords {
		if c.Err != nil {
			return nil, fmt.Errorf("finding the coordinator of %s: %w", o.Group, c.Err)
		}
		rt.coordAddr = fmt.Sprintf("%s:%d", c.Host, c.Port)
	}
	return rt, nil
}

// waitShareStable waits until every member of live holds an assignment at
// an epoch (answered after since, when set), and the coordinator describes
// the group Stable with exactly those members, all at the group's epoch;
// it returns that description.
func waitShareStable(ctx context.Context, adm *kadm.Client, o ShareOptions, live []*lightShare, cnt *shareCounters, since time.Time) (kadm.DescribedShareGroup, error) {
	deadline := time.Now().Add(o.StableTimeout)
	described := "not described yet (it waits for every member to hold an assignment)"
	for {
		ready := 0
		for _, m := range live {
			if m.answeredSince(since) {
				ready++
			}
		}
		if time.Now().After(deadline) {
			return kadm.DescribedShareGroup{}, fmt.Errorf("the share group of %d members was not stable within %s: %d of %d members held an assignment at an epoch; the group %s; the members' errors: %s",
				len(live), o.StableTimeout, ready, len(live), described, cnt.summary())
		}
		if ready == len(live) {
			d, err := adm.DescribeShareGroups(ctx, o.Group)
			g, ok := d[o.Group]
			if err == nil && ok {
				described = fmt.Sprintf("was last described %s with %d members, group epoch %d, assignment epoch %d", g.GroupState, len(g.Members), g.GroupEpoch, g.AssignmentEpoch)
				if shareStable(g, live) {
					return g, nil
				}
			}
		}
		if err := light.Sleep(ctx, 100*time.Millisecond); err != nil {
			return kadm.DescribedShareGroup{}, err
		}
	}
}

// shareVersion is the version the light share members send of api: the
// highest every release with production share groups serves (v1 of each).
// The light pools send a request at the version it carries, and a broker
// closes the connection on one it does not serve (ShareGroupHeartbeat v0
// was early access only).
func shareVersion(api int16) int16 {
	v := int16(-1)
	for _, r := range version.ShareServed() {
		if m := r.Profile().ShareAPIVersions()[api].Max; v < 0 || m < v {
			v = m
		}
	}
	return v
}

// errText is err's message cut to 100 bytes, a key of the error counts.
func errText(err error) string {
	s := err.Error()
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

// summary says the members' errors by count, most first ("none" without).
func (c *shareCounters) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.errs) == 0 {
		return "none"
	}
	names := slices.Collect(maps.Keys(c.errs))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(c.errs[b], c.errs[a]), cmp.Compare(a, b)) })
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s ×%d", n, c.errs[n]))
	}
	return strings.Join(parts, ", ")
}

// shareStable reports whether the described group is Stable with exactly
// the members of live, every one at the group's epoch.
func shareStable(g kadm.DescribedShareGroup, live []*lightShare) bool {
	if g.GroupState != "Stable" || g.AssignmentEpoch != g.GroupEpoch || len(g.Members) != len(live) {
		return false
	}
	want := map[string]bool{}
	for _, m := range live {
		want[m.id] = true
	}
	for _, m := range g.Members {
		if !want[m.MemberID] || m.MemberEpoch != g.GroupEpoch {
			return false
		}
	}
	return true
}

// sharing is the least and the most members the described group gives a
// partition of the topic's partitions.
func sharing(g kadm.DescribedShareGroup, partitions int32) (least, most int) {
	per := map[int32]int{}
	for _, m := range g.Members {
		for _, ps := range m.Assignment {
			for p := range ps {
				per[p]++
			}
		}
	}
	least = len(g.Members)
	for p := range partitions {
		least, most = min(least, per[p]), max(most, per[p])
	}
	return least, most
}

// drainShare waits, from the moment the group is stable, until the backlog
// is accepted (the records acquired before count too: the rate is over the
// whole backlog from the first join) and records the rates in rep.
func drainShare(ctx context.Context, o ShareOptions, cnt *shareCounters, start time.Time, rep *ShareReport) {
	hb0, f0 := cnt.heartbeats.Load(), cnt.fetches.Load()
	t0 := time.Now()
	ddl := time.Now().Add(o.DrainTimeout)
	for cnt.accepted.Load() < int64(o.Records) && time.Now().Before(ddl) && ctx.Err() == nil {
		light.Sleep(ctx, 100*time.Millisecond)
	}
	rep.Drained = cnt.accepted.Load()
	rep.DrainTime = time.Since(start)
	if rep.DrainTime > 0 {
		rep.RecordsPerSecond = float64(rep.Drained) / rep.DrainTime.Seconds()
	}
	if d := time.Since(t0).Seconds(); d > 0 {
		rep.HeartbeatRPS = float64(cnt.heartbeats.Load()-hb0) / d
		rep.FetchRPS = float64(cnt.fetches.Load()-f0) / d
	}
	rep.Deliveries, rep.Redeliveries, rep.EmptyFetches = cnt.deliveries.Load(), cnt.redeliveries.Load(), cnt.empty.Load()
	cnt.mu.Lock()
	if len(cnt.errs) > 0 {
		rep.Errors = cnt.errs
	}
	cnt.mu.Unlock()
}
