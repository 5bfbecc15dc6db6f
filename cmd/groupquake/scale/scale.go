// Package scale puts one consumer group of thousands of lightweight
// members (clients/light) on a cluster and measures what the coordinator
// does with it: the time to a stable group after a join wave, after one
// member leaves and after the coordinator's node restarts; how long each
// partition was without an owner (the rebalance pause); how many requests
// per second the coordinator answered; and, kept apart, the harness's own
// CPU and memory per member (getrusage and /proc of this process only, so
// the brokers' containers never count).
//
// A group is stable when every member says it is settled at one
// generation (classic) or member epoch (consumer), every partition has
// exactly one owner by the members' own account, and the coordinator's
// describe agrees: the group is Stable with exactly the members of the
// run, all at the group's epoch, and its assignments cover every
// partition once. The time recorded is when the members' view first held
// (the describe confirms it afterwards); a describe is polled only then,
// so the polling adds little load.
package scale

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients/assign"
	"github.com/groupquake/groupquake/clients/light"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/internal/machine"
)

// Protocol names a group protocol.
type Protocol string

const (
	Classic  Protocol = "classic"
	Consumer Protocol = "consumer"
	// Share is a share group (KIP-932, Kafka 4.2+): RunShare measures it.
	Share Protocol = "share"
)

// ParseProtocol checks a protocol name.
func ParseProtocol(s string) (Protocol, error) {
	switch Protocol(s) {
	case Classic, Consumer, Share:
		return Protocol(s), nil
	}
	return "", fmt.Errorf("unknown protocol %q: use classic, consumer or share", s)
}

// Names returns the group and topic names of a run of members of protocol
// p with seed. The topic's name is four characters: a classic member's
// subscription names it and the classic group's metadata record carries
// every member's subscription, under message.max.bytes (see
// TestClassicRecordFits); the group's name appears once in that record.
func Names(p Protocol, members int, seed uint64) (group, topic string) {
	group = fmt.Sprintf("gq%s%d-%d", p[:2], members, seed%100000)
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d/%d", p, members, seed)
	topic = strconv.FormatUint(36*36*36+h.Sum64()%(35*36*36*36), 36) // four characters, the first not 0
	return group, topic
}

// Options describe one scale run: one group on one cluster.
type Options struct {
	Protocol   Protocol
	Members    int
	Partitions int32
	// Group and Topic name the group and its topic; the topic is created
	// with Partitions partitions.
	Group, Topic string
	// Replication of the topic; 0 means min(3, brokers).
	Replication int16
	// Light is the members' configuration beyond the bootstrap, group and
	// topic (timers, commit interval, connection pool).
	Light light.Config
	// Direct makes members dial a container cluster's brokers at their
	// container addresses instead of the published loopback ports (see
	// cluster.DirectAddr); other clusters ignore it.
	Direct bool
	// Steady is how long the stable group is left alone after the join
	// wave to measure the steady request rate and CPU; 0 skips it.
	Steady time.Duration
	// Restart restarts the coordinator's node after the leave.
	Restart bool
	// StableTimeout bounds each wait for a stable group; 0 means 10 minutes.
	StableTimeout time.Duration
	// CPUProfile, when set, is a directory where each phase's CPU profile
	// of this process goes (PROTOCOL-MEMBERS-PHASE.pprof); on the embedded
	// cluster the coordinator is in it.
	CPUProfile string
	Logf       func(format string, args ...any)
	// OnPhase, when set, is called as each phase begins, with the run's
	// context (tests hold a phase with it, to interrupt the run there).
	OnPhase func(ctx context.Context, phase string)
}

// Phase is what one phase of a run measured.
type Phase struct {
	Name string `json:"name"`
	// Members is the group size the phase waits for.
	Members int `json:"members"`
	// ToStable is the time from the phase's start to a stable group.
	ToStable time.Duration `json:"to_stable_ns"`
	// Pauses: how many partitions had to wait for an owner, and the
	// percentiles of how long.
	Paused   int           `json:"paused_partitions"`
	PauseP50 time.Duration `json:"pause_p50_ns"`
	PauseP99 time.Duration `json:"pause_p99_ns"`
	PauseMax time.Duration `json:"pause_max_ns"`
	// Answered is the number of member requests the coordinator answered
	// during the phase, RPS the same per second, ByAPI the split.
	Answered int64            `json:"answered"`
	RPS      float64          `json:"rps"`
	ByAPI    map[string]int64 `json:"by_api"`
	// Heartbeat latency of the protocol's heartbeat request, from the
	// member's asking to the answer (its wait in the members' queue
	// included), p50 and p99, each an upper bound within a quarter octave;
	// HeartbeatWait is the part spent in the queue, before it was written.
	HeartbeatP50     time.Duration `json:"heartbeat_p50_ns"`
	HeartbeatP99     time.Duration `json:"heartbeat_p99_ns"`
	HeartbeatWaitP50 time.Duration `json:"heartbeat_wait_p50_ns"`
	HeartbeatWaitP99 time.Duration `json:"heartbeat_wait_p99_ns"`
	PhaseTraffic
	// HarnessCPU is the CPU time this process used during the phase.
	HarnessCPU time.Duration `json:"harness_cpu_ns"`
	// BrokerCPU is the CPU time the brokers' containers used (container
	// clusters only; a restarted node's counter starts over).
	BrokerCPU time.Duration `json:"broker_cpu_ns,omitempty"`
	// Epoch is the generation or group epoch the group settled at.
	Epoch int32 `json:"epoch"`
	// Extra notes (the restarted node and how long it took).
	Note string `json:"note,omitempty"`
}

// PhaseTraffic is what became of the members' requests and connections
// during a phase: the part of Phase that `groupquake scale --json` writes
// as it is.
type PhaseTraffic struct {
	// Dropped counts, by API, the requests members gave up while they
	// were still queued (never sent); Void those given up after they were
	// written (their answer thrown away).
	Dropped map[string]int64 `json:"dropped,omitempty"`
	Void    map[string]int64 `json:"void,omitempty"`
	// Conns is the members' connections open at the phase's end,
	// PeakConns the most open at once during it, Dialed how many were
	// dialed during it.
	Conns     int64 `json:"connections"`
	PeakConns int64 `json:"peak_connections"`
	Dialed    int64 `json:"dialed"`
	// Errors counts the errors members got during the phase, by name
	// ("transport" for a broken connection or a timeout).
	Errors map[string]int64 `json:"errors,omitempty"`
	// ErrorSamples holds the latest text of each error name.
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
}

// Report is a whole run.
type Report struct {
	Protocol   Protocol `json:"protocol"`
	Members    int      `json:"members"`
	Partitions int32    `json:"partitions"`
	// Conns is the most connections the members had open at once;
	// MaxShared the bound of the consumer members' shared connections
	// to one broker.
	Conns     int64   `json:"connections"`
	MaxShared int     `json:"max_shared_connections"`
	Phases    []Phase `json:"phases"`
	Footprint
}

// Footprint is what a run cost this process and the brokers once the join
// wave was stable, and the overlaps the members saw: the part of Report
// that `groupquake scale --json` writes as it is.
type Footprint struct {
	// Memory of this process once the join wave is stable: resident set
	// and Go heap in use, above what they were before the members
	// started, per member; Goroutines counts all of the process's.
	RSSPerMember  float64 `json:"rss_bytes_per_member"`
	HeapPerMember float64 `json:"heap_bytes_per_member"`
	RSS           uint64  `json:"rss_bytes"`
	MaxRSS        uint64  `json:"max_rss_bytes"`
	Goroutines    int     `json:"goroutines"`
	// SteadyCPUPerMember is the harness's CPU per member per second of
	// the steady stretch (microseconds of CPU per second per member).
	SteadyCPUPerMember float64 `json:"steady_cpu_us_per_member_s"`
	// BrokerMemory is each broker's memory after the join wave (container
	// clusters only).
	BrokerMemory map[int32]uint64 `json:"broker_memory_bytes,omitempty"`
	// Overlaps counts partitions taken while another member held them
	// (the members' own account; 0 expected).
	Overlaps int `json:"overlaps"`
}

// directAddr is a container cluster's way around Docker's userland proxy.
type directAddr interface {
	Nodes() []*cluster.Node
	DirectAddr(ctx context.Context, id cluster.NodeID) (string, error)
}

// directMap maps each broker's published address to its container
// address, asked again at most every two seconds (a restarted node may
// get another one).
func directMap(d directAddr) func(string) string {
	var mu sync.Mutex
	cache := map[string]string{}
	var at time.Time
	return func(addr string) string {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) > 2*time.Second {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			for _, n := range d.Nodes() {
				if n.IsBroker() {
					if a, err := d.DirectAddr(ctx, n.ID); err == nil {
						cache[n.Addr()] = a
					}
				}
			}
			cancel()
			at = time.Now()
		}
		if a, ok := cache[addr]; ok {
			return a
		}
		return addr
	}
}

// inProcess is a cluster served in this process (the embedded one): its
// members connect without sockets, since this process holds both ends of
// every connection (10,000 classic members would take 20,000 file
// descriptors, the usual limit).
type inProcess interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// nodeStats is what a container cluster adds: broker CPU and memory.
type nodeStats interface {
	NodeMemory(ctx context.Context, id cluster.NodeID) (uint64, error)
	NodeCPU(ctx context.Context, id cluster.NodeID) (time.Duration, error)
}

// Run carries out one scale run on h.
func Run(ctx context.Context, h cluster.Handle, o Options) (*Report, error) {
	if o.Members < 2 {
		return nil, fmt.Errorf("members %d: a scale run needs at least 2 (one leaves)", o.Members)
	}
	if o.Partitions < 1 {
		return nil, fmt.Errorf("partitions %d: the topic needs at least one", o.Partitions)
	}
	if _, err := ParseProtocol(string(o.Protocol)); err != nil {
		return nil, err
	}
	if o.StableTimeout == 0 {
		o.StableTimeout = 10 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	adm, err := kgo.NewClient(kgo.SeedBrokers(h.Bootstrap()...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	if err := createTopic(ctx, adm, o, len(h.NodeIDs())); err != nil {
		return nil, err
	}
	lc := o.Light
	lc.Bootstrap, lc.Group, lc.Topic, lc.Partitions = h.Bootstrap(), o.Group, o.Topic, o.Partitions
	if lc.Logf == nil {
		lc.Logf = o.Logf
	}
	if d, ok := h.(directAddr); ok && o.Direct {
		lc.Addr = directMap(d)
	}
	if d, ok := h.(inProcess); ok {
		lc.Dial = d.DialContext
	}
	g, err := light.NewGroup(lc)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	defer deleteTopic(adm, o.Topic)
	r := &runner{o: o, h: h, g: g, adm: adm}
	r.stats, _ = h.(nodeStats)
	return r.run(ctx)
}

func createTopic(ctx context.Context, adm *kgo.Client, o Options, brokers int) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = o.Topic, o.Partitions, o.Replication
	if t.ReplicationFactor == 0 {
		t.ReplicationFactor = int16(min(brokers, 3))
	}
	req.Topics = []kmsg.CreateTopicsRequestTopic{t}
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, adm)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", o.Topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		if errors.Is(err, kerr.TopicAlreadyExists) {
			// The run deletes its topic at the end: never one it did not make.
			return fmt.Errorf("create topic %s: it exists already; a scale run makes its own topic and deletes it afterwards, so delete %s or run with another seed", o.Topic, o.Topic)
		}
		return fmt.Errorf("create topic %s: %w", o.Topic, err)
	}
	// Wait until the metadata knows every partition's leader.
	deadline := time.Now().Add(time.Minute)
	for {
		md := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(o.Topic)
		md.Topics = []kmsg.MetadataRequestTopic{mt}
		mr, err := md.RequestWith(ctx, adm)
		if err == nil && len(mr.Topics) == 1 && mr.Topics[0].ErrorCode == 0 && len(mr.Topics[0].Partitions) == int(o.Partitions) {
			ready := true
			for _, p := range mr.Topics[0].Partitions {
				ready = ready && p.Leader >= 0
			}
			if ready {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("topic %s has no leader for every partition after a minute (last error: %v)", o.Topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deleteTopic removes a run's topic once its members stopped, so that
// later runs on the cluster (and its node restarts) do not carry it.
func deleteTopic(adm *kgo.Client, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{topic}
	t := kmsg.NewDeleteTopicsRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.DeleteTopicsRequestTopic{t}
	req.TimeoutMillis = 30000
	_, _ = req.RequestWith(ctx, adm)
}

type runner struct {
	o       Options
	h       cluster.Handle
	g       *light.Group
	adm     *kgo.Client
	stats   nodeStats
	members []light.Member
	left    map[int]bool
	wg      sync.WaitGroup
}

func (r *runner) run(ctx context.Context) (*Report, error) {
	o := r.o
	rep := &Report{Protocol: o.Protocol, Members: o.Members, Partitions: o.Partitions, MaxShared: r.g.Config().Conns}
	defer func() { // the phases' peaks, once they are all in
		for _, ph := range rep.Phases {
			rep.Conns = max(rep.Conns, ph.PeakConns)
		}
	}()
	mctx, stop := context.WithCancel(ctx)
	defer func() {
		stop()
		r.wg.Wait()
	}()
	r.left = map[int]bool{}

	debug.FreeOSMemory() // what earlier runs of this process freed does not count
	rss0, heap0 := machine.ResidentSet(), machine.HeapInUse()

	// Join wave: every member starts at once.
	join := r.begin(ctx, "join wave", o.Members)
	for i := range o.Members {
		var m light.Member
		if o.Protocol == Classic {
			m = r.g.NewClassic(int32(i))
		} else {
			m = r.g.NewConsumer(int32(i))
		}
		r.members = append(r.members, m)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := m.Run(mctx); err != nil {
				o.Logf("member %d: %v", i, err)
			}
		}()
	}
	ph, err := r.end(ctx, join, time.Time{})
	if err != nil {
		rep.Phases = append(rep.Phases, ph)
		return rep, err
	}
	rep.Phases = append(rep.Phases, ph)
	debug.FreeOSMemory()
	rep.RSS, rep.Goroutines = machine.ResidentSet(), runtime.NumGoroutine()
	rep.RSSPerMember = float64(int64(rep.RSS)-int64(rss0)) / float64(o.Members)
	rep.HeapPerMember = float64(int64(machine.HeapInUse())-int64(heap0)) / float64(o.Members)
	if r.stats != nil {
		rep.BrokerMemory = map[int32]uint64{}
		for _, id := range r.h.NodeIDs() {
			if m, err := r.stats.NodeMemory(ctx, id); err == nil {
				rep.BrokerMemory[id] = m
			}
		}
	}

	if o.Steady > 0 {
		st := r.begin(ctx, "steady", o.Members)
		if err := light.Sleep(ctx, o.Steady); err != nil {
			return rep, err
		}
		ph := r.measure(ctx, st)
		ph.ToStable = 0
		rep.Phases = append(rep.Phases, ph)
		rep.SteadyCPUPerMember = float64(ph.HarnessCPU.Microseconds()) / o.Steady.Seconds() / float64(o.Members)
	}

	// One member leaves: the last one started, never the classic leader
	// by design (any member would do; the last one is as good as any).
	lv := r.begin(ctx, "one leaves", o.Members-1)
	leaver := len(r.members) - 1
	r.left[leaver] = true
	if err := r.members[leaver].Leave(ctx); err != nil {
		o.Logf("the leaving member: %v", err)
	}
	ph, err = r.end(ctx, lv, time.Time{})
	rep.Phases = append(rep.Phases, ph)
	if err != nil {
		return rep, err
	}

	if o.Restart {
		ph, err := r.restart(ctx)
		if ph.Name != "" {
			rep.Phases = append(rep.Phases, ph)
		}
		if err != nil {
			return rep, err
		}
	}
	rep.Overlaps = r.g.Owners.Overlaps()
	// Members stop as crashed consumers would; the group is left to expire.
	return rep, nil
}

// restart restarts the coordinator's node and waits for the group to be
// stable with every member answered by the coordinator after the node
// went down.
func (r *runner) restart(ctx context.Context) (Phase, error) {
	_, node, err := r.g.Coordinator(ctx)
	if err != nil {
		return Phase{}, err
	}
	st := r.begin(ctx, "coordinator restart", r.o.Members-len(r.left))
	if err := r.h.StopNode(ctx, node); err != nil {
		return Phase{}, fmt.Errorf("stop node %d: %w", node, err)
	}
	stopped := time.Now()
	startErr := make(chan error, 1)
	go func() { startErr <- r.h.StartNode(ctx, node) }()
	ph, err := r.end(ctx, st, stopped)
	serr := <-startErr
	back := time.Since(st.start)
	if err != nil {
		return ph, err
	}
	if serr != nil {
		return ph, fmt.Errorf("start node %d again: %w", node, serr)
	}
	_, now, _ := r.g.Coordinator(ctx)
	ph.Note = fmt.Sprintf("node %d (the coordinator) stopped in %s, serving again after %s; coordinator now node %d",
		node, stopped.Sub(st.start).Round(time.Millisecond), back.Round(time.Millisecond), now)
	return ph, nil
}

// mark is a phase's starting point.
type mark struct {
	name          string
	members       int
	start         time.Time
	cpu           time.Duration
	answered      int64
	byAPI         map[string]int64
	errs          map[string]int64
	dropped, void map[string]int64
	hb, hbWait    light.Latencies
	dialed        int64
	brokerCPU     map[int32]time.Duration
	profile       *os.File
}

func (r *runner) begin(ctx context.Context, name string, members int) mark {
	r.o.Logf("%s %d members: %s (group of %d)", r.o.Protocol, r.o.Members, name, members)
	if r.o.OnPhase != nil {
		r.o.OnPhase(ctx, name)
	}
	r.g.Owners.TakePauses()
	st := r.g.Stats
	m := mark{name: name, members: members, cpu: cpuTime(), answered: st.Answered(), byAPI: st.AnsweredBy(), errs: st.Errors(),
		dropped: st.DroppedBy(), void: st.VoidBy(), hb: st.Latencies(r.hbKey()), hbWait: st.Waits(r.hbKey()), brokerCPU: r.brokerCPU(context.Background())}
	_, _, m.dialed = st.Conns()
	st.ResetPeak()
	m.profile = r.startProfile(name)
	m.start = time.Now()
	return m
}

// startProfile starts the CPU profile of phase name, if asked for.
func (r *runner) startProfile(name string) *os.File {
	if r.o.CPUProfile == "" {
		return nil
	}
	path := filepath.Join(r.o.CPUProfile, fmt.Sprintf("%s-%d-%s.pprof", r.o.Protocol, r.o.Members, strings.ReplaceAll(name, " ", "-")))
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		r.o.Logf("CPU profile of %s: %v", name, err)
		return nil
	}
	r.o.Logf("CPU profile of %s: %s", name, path)
	return f
}

// hbKey is the API key of the protocol's heartbeat.
func (r *runner) hbKey() int16 {
	if r.o.Protocol == Classic {
		return int16(kmsg.Heartbeat)
	}
	return int16(kmsg.ConsumerGroupHeartbeat)
}

func (r *runner) brokerCPU(ctx context.Context) map[int32]time.Duration {
	if r.stats == nil {
		return nil
	}
	out := map[int32]time.Duration{}
	for _, id := range r.h.NodeIDs() {
		if c, err := r.stats.NodeCPU(ctx, id); err == nil {
			out[id] = c
		}
	}
	return out
}

// end waits for a stable group of m.members (every member answered after
// since, when since is set) and measures the phase.
func (r *runner) end(ctx context.Context, m mark, since time.Time) (Phase, error) {
	at, epoch, err := r.waitStable(ctx, m.members, since)
	if err != nil {
		ph := r.measure(ctx, m)
		ph.Note = "not stable: " + err.Error()
		return ph, fmt.Errorf("%s: %w", m.name, err)
	}
	ph := r.measure(ctx, m)
	ph.ToStable, ph.Epoch = at.Sub(m.start), epoch
	r.o.Logf("%s: stable after %s at epoch %d", m.name, ph.ToStable.Round(time.Millisecond), epoch)
	return ph, nil
}

func (r *runner) measure(ctx context.Context, m mark) Phase {
	el := time.Since(m.start)
	if m.profile != nil {
		pprof.StopCPUProfile()
		m.profile.Close()
	}
	ph := Phase{Name: m.name, Members: m.members, HarnessCPU: cpuTime() - m.cpu}
	ph.Answered = r.g.Stats.Answered() - m.answered
	ph.RPS = float64(ph.Answered) / el.Seconds()
	ph.ByAPI = since(r.g.Stats.AnsweredBy(), m.byAPI)
	if d := since(r.g.Stats.DroppedBy(), m.dropped); len(d) > 0 {
		ph.Dropped = d
	}
	if d := since(r.g.Stats.VoidBy(), m.void); len(d) > 0 {
		ph.Void = d
	}
	hb := r.g.Stats.Latencies(r.hbKey()).Since(m.hb)
	ph.HeartbeatP50, ph.HeartbeatP99 = hb.Quantile(0.5), hb.Quantile(0.99)
	hw := r.g.Stats.Waits(r.hbKey()).Since(m.hbWait)
	ph.HeartbeatWaitP50, ph.HeartbeatWaitP99 = hw.Quantile(0.5), hw.Quantile(0.99)
	var dialed int64
	ph.Conns, ph.PeakConns, dialed = r.g.Stats.Conns()
	ph.Dialed = dialed - m.dialed
	for k, v := range r.g.Stats.Errors() {
		if d := v - m.errs[k]; d > 0 {
			if ph.Errors == nil {
				ph.Errors = map[string]int64{}
			}
			ph.Errors[k] = d
		}
	}
	if len(ph.Errors) > 0 {
		ph.ErrorSamples = r.g.Stats.Samples()
	}
	for id, c := range r.brokerCPU(ctx) {
		if d := c - m.brokerCPU[id]; d > 0 {
			ph.BrokerCPU += d
		} else {
			ph.BrokerCPU += c // restarted: its counter started over
		}
	}
	p := r.g.Owners.TakePauses()
	slices.Sort(p)
	ph.Paused = len(p)
	if len(p) > 0 {
		ph.PauseP50, ph.PauseP99, ph.PauseMax = pct(p, 0.50), pct(p, 0.99), p[len(p)-1]
	}
	return ph
}

// since returns the counts of now above those of earlier, leaving out
// the ones that did not grow.
func since(now, earlier map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range now {
		if d := v - earlier[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// pct is the nearest-rank percentile of sorted d.
func pct(d []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(d))+0.999999) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// waitStable polls the members' view every 50ms and, when it holds, the
// coordinator's describe; it returns when the view first held in the
// stretch the describe confirmed.
func (r *runner) waitStable(ctx context.Context, n int, since time.Time) (time.Time, int32, error) {
	deadline := time.Now().Add(r.o.StableTimeout)
	var heldSince time.Time
	why := "not checked yet"
	nextLog := time.Now().Add(10 * time.Second)
	for {
		if time.Now().After(nextLog) {
			r.o.Logf("not stable yet: %s (errors so far %v, latest %v)", why, r.g.Stats.Errors(), r.g.Stats.Samples())
			nextLog = time.Now().Add(10 * time.Second)
		}
		epoch, ok, w := r.localStable(n, since)
		if !ok {
			heldSince, why = time.Time{}, w
		} else {
			if heldSince.IsZero() {
				heldSince = time.Now()
			}
			dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			w, err := r.describeStable(dctx, n, epoch)
			cancel()
			if err == nil && w == "" {
				return heldSince, epoch, nil
			}
			if err != nil {
				w = err.Error()
			}
			why = "describe: " + w
		}
		if time.Now().After(deadline) {
			return time.Time{}, 0, fmt.Errorf("no stable group of %d after %s: %s", n, r.o.StableTimeout, why)
		}
		if err := light.Sleep(ctx, 50*time.Millisecond); err != nil {
			return time.Time{}, 0, err
		}
	}
}

// localStable checks the members' view: every live member settled at one
// epoch (and answered after since), every partition owned exactly once.
func (r *runner) localStable(n int, since time.Time) (int32, bool, string) {
	var epoch int32 = -1
	live := 0
	for i, m := range r.members {
		if r.left[i] {
			continue
		}
		live++
		s := m.State()
		switch {
		case !s.Settled:
			ago := "never"
			if !s.LastOK.IsZero() {
				ago = time.Since(s.LastOK).Round(time.Millisecond).String() + " ago"
			}
			return 0, false, fmt.Sprintf("member %d is not settled (epoch %d, member id %q, last answered %s)", i, s.Epoch, s.MemberID, ago)
		case epoch >= 0 && s.Epoch != epoch:
			return 0, false, fmt.Sprintf("members at epochs %d and %d", epoch, s.Epoch)
		case !since.IsZero() && s.LastOK.Before(since):
			return 0, false, fmt.Sprintf("member %d has had no answer since the node stopped", i)
		}
		epoch = s.Epoch
	}
	if live != n {
		return 0, false, fmt.Sprintf("%d live members, want %d", live, n)
	}
	if !r.g.Owners.Exact() {
		return 0, false, "not every partition has exactly one owner"
	}
	return epoch, true, ""
}

// describeStable asks the coordinator; it returns "" when the group is
// stable as the members see it, or what differs.
func (r *runner) describeStable(ctx context.Context, n int, epoch int32) (string, error) {
	owned := make([]int, r.o.Partitions)
	add := func(ps []int32) {
		for _, p := range ps {
			if p >= 0 && p < r.o.Partitions {
				owned[p]++
			}
		}
	}
	if r.o.Protocol == Classic {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{r.o.Group}
		resp, err := req.RequestWith(ctx, r.adm)
		if err != nil {
			return "", err
		}
		d := resp.Groups[0]
		if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
			return "", err
		}
		if d.State != "Stable" || len(d.Members) != n {
			return fmt.Sprintf("state %s with %d members", d.State, len(d.Members)), nil
		}
		for _, m := range d.Members {
			a, err := assign.DecodeAssignment(m.MemberAssignment)
			if err != nil {
				return "", err
			}
			add(a.Partitions[r.o.Topic])
		}
	} else {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{r.o.Group}
		resp, err := req.RequestWith(ctx, r.adm)
		if err != nil {
			return "", err
		}
		d := resp.Groups[0]
		if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
			return "", err
		}
		if !strings.EqualFold(d.State, "Stable") || len(d.Members) != n {
			return fmt.Sprintf("state %s with %d members", d.State, len(d.Members)), nil
		}
		if d.Epoch != epoch || d.AssignmentEpoch != epoch {
			return fmt.Sprintf("group epoch %d, assignment epoch %d, members at %d", d.Epoch, d.AssignmentEpoch, epoch), nil
		}
		for _, m := range d.Members {
			if m.MemberEpoch != epoch {
				return fmt.Sprintf("member %s at epoch %d", m.MemberID, m.MemberEpoch), nil
			}
			for _, t := range m.Assignment.TopicPartitions {
				add(t.Partitions)
			}
		}
	}
	for p, c := range owned {
		if c != 1 {
			return fmt.Sprintf("partition %d assigned %d times", p, c), nil
		}
	}
	return "", nil
}

// cpuTime is the user and system CPU time this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MaxRSS is this process's peak resident set size (getrusage).
func MaxRSS() uint64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Maxrss) * 1024 // kilobytes on Linux
}
