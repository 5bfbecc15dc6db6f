package light

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config is what every member of one group shares.
type Config struct {
	// Bootstrap lists broker addresses for FindCoordinator and Metadata.
	Bootstrap []string
	Group     string
	// Topic is the one subscribed topic; Partitions its partition count.
	Topic      string
	Partitions int32
	// SessionTimeout and RebalanceTimeout are sent by classic members
	// (JoinGroup) and, for the rebalance timeout, by consumer members on
	// their joining heartbeat.
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	// HeartbeatInterval is the classic members' heartbeat interval;
	// consumer members use the one the coordinator returns.
	HeartbeatInterval time.Duration
	// CommitInterval is how often a member commits the partitions it
	// owns; 0 commits only when a partition is given up.
	CommitInterval time.Duration
	// Conns bounds the connections the consumer-protocol members share to
	// each broker; 0 is MaxShared. The pool opens them as its queue needs
	// them (see Pool). Classic members always get one each (see the
	// package doc).
	Conns int
	// RequestTimeout bounds the wait for the answer to a written request
	// (Kafka's request.timeout.ms, 30 s by default); past it the
	// connection is broken. A classic JoinGroup or SyncGroup waits the
	// rebalance timeout and 10 s more instead. The wait in the queue before
	// a request is written has no bound: a member does not send a request
	// again while the last one is still queued.
	RequestTimeout time.Duration
	// Seed drives the heartbeat jitter, so that members do not beat in step.
	Seed uint64
	// Addr maps a broker address (as the bootstrap list and the
	// coordinator's metadata name it) to the one to dial; nil dials it as is.
	Addr func(string) string
	// Dial connects to a broker; nil dials TCP.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logf reports what the shared pieces do (coordinator moves); nil is silent.
	Logf func(format string, args ...any)
}

func (c *Config) check() error {
	switch {
	case len(c.Bootstrap) == 0:
		return errors.New("no bootstrap brokers")
	case c.Group == "" || c.Topic == "":
		return errors.New("a group and a topic are needed")
	case c.Partitions <= 0:
		return fmt.Errorf("partitions %d: a topic has at least one partition", c.Partitions)
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 45 * time.Second
	}
	if c.RebalanceTimeout == 0 {
		c.RebalanceTimeout = 60 * time.Second
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 3 * time.Second
	}
	if c.Conns <= 0 {
		c.Conns = MaxShared
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return nil
}

// Group is the shared environment of one group's members: the
// coordinator's address, the connections, the ownership tracker and the
// request counters.
type Group struct {
	cfg    Config
	Stats  *Stats
	Owners *Owners
	pool   *Pool // consumer-protocol members
	own    *Pool // classic members, one connection each
	boot   *Pool

	mu      sync.Mutex
	coord   string // coordinator address, "" when unknown
	coordID int32
	coordV  uint64 // counts lookups, so a stale Forget is ignored
	topicID [16]byte
	lookup  chan struct{} // closed when the lookup in progress ends
	rng     *rand.Rand
}

// ClientID is the members' client id, empty: a classic member id is the
// client id, "-" and a Uuid, and the classic group's metadata record
// (GroupMetadataValue) carries every member's id and client id, under
// message.max.bytes (see cmd/groupquake/scale's TestClassicRecordFits).
const ClientID = ""

// NewGroup checks cfg and makes the shared environment.
func NewGroup(cfg Config) (*Group, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	st := &Stats{}
	g := &Group{
		cfg: cfg, Stats: st, Owners: NewOwners(cfg.Partitions),
		pool: NewSharedPool(cfg.Conns, ClientID, st),
		own:  NewOwnPool(ClientID, st),
		boot: NewOwnPool("gq-boot", st),
		rng:  rand.New(rand.NewPCG(cfg.Seed, 0x5ca1e)),
	}
	if cfg.Addr != nil {
		g.pool.mapAddr, g.own.mapAddr, g.boot.mapAddr = cfg.Addr, cfg.Addr, cfg.Addr
	}
	if cfg.Dial != nil {
		g.pool.dialFn, g.own.dialFn, g.boot.dialFn = cfg.Dial, cfg.Dial, cfg.Dial
	}
	return g, nil
}

// Config returns the group's configuration with defaults filled in.
func (g *Group) Config() Config { return g.cfg }

// Close closes every connection.
func (g *Group) Close() {
	g.pool.Close()
	g.own.Close()
	g.boot.Close()
}

func (g *Group) jitter(d time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Duration(g.rng.Int64N(int64(d) + 1))
}

// Coordinator returns the coordinator's address and node id, looking it
// up once for every member that asks while a lookup runs.
func (g *Group) Coordinator(ctx context.Context) (string, int32, error) {
	c, err := g.coordinator(ctx)
	return c.addr, c.node, err
}

// coord is one answer of a coordinator lookup.
type coord struct {
	addr string
	node int32
	v    uint64
}

func (g *Group) coordinator(ctx context.Context) (coord, error) {
	for {
		g.mu.Lock()
		if g.coord != "" {
			c := coord{g.coord, g.coordID, g.coordV}
			g.mu.Unlock()
			return c, nil
		}
		if w := g.lookup; w != nil {
			g.mu.Unlock()
			select {
			case <-w:
				continue
			case <-ctx.Done():
				return coord{}, ctx.Err()
			}
		}
		w := make(chan struct{})
		g.lookup = w
		g.mu.Unlock()
		addr, id, tid, err := g.find(ctx)
		g.mu.Lock()
		g.lookup = nil
		if err == nil {
			g.coord, g.coordID, g.topicID = addr, id, tid
			g.coordV++
			g.cfg.Logf("group %s: coordinator is node %d at %s", g.cfg.Group, id, addr)
		}
		close(w)
		g.mu.Unlock()
		if err != nil {
			return coord{}, err
		}
	}
}

// forget drops the coordinator c (when a member got NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE or a transport error from it), so the next
// lookup asks again; a member that learned of a newer lookup meanwhile
// does not undo it.
func (g *Group) forget(c coord) {
	g.mu.Lock()
	if g.coordV == c.v && g.coord != "" {
		g.coord = ""
	}
	g.mu.Unlock()
}

func (g *Group) topic() [16]byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.topicID
}

// find asks a bootstrap broker for the coordinator and the metadata
// (broker addresses, the topic's id), trying each broker in turn.
func (g *Group) find(ctx context.Context) (string, int32, [16]byte, error) {
	var last error
	for attempt := 0; ; attempt++ {
		for i, b := range g.cfg.Bootstrap {
			addr, id, tid, err := g.findAt(ctx, b, i)
			if err == nil {
				return addr, id, tid, nil
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return "", -1, [16]byte{}, fmt.Errorf("find the coordinator of %s: %w (last error: %v)", g.cfg.Group, ctx.Err(), last)
		case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, time.Second)):
		}
	}
}

func (g *Group) findAt(ctx context.Context, broker string, i int) (string, int32, [16]byte, error) {
	var tid [16]byte
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{g.cfg.Group}
	r, err := g.boot.Do(ctx, broker, i, fc, 5*time.Second)
	if err != nil {
		return "", -1, tid, err
	}
	fr := r.(*kmsg.FindCoordinatorResponse)
	if len(fr.Coordinators) != 1 {
		return "", -1, tid, fmt.Errorf("FindCoordinator answered %d coordinators for one key", len(fr.Coordinators))
	}
	co := fr.Coordinators[0]
	if err := kerr.ErrorForCode(co.ErrorCode); err != nil {
		return "", -1, tid, fmt.Errorf("FindCoordinator: %w", err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(g.cfg.Topic)
	md.Topics = []kmsg.MetadataRequestTopic{mt}
	r, err = g.boot.Do(ctx, broker, i, md, 5*time.Second)
	if err != nil {
		return "", -1, tid, err
	}
	mr := r.(*kmsg.MetadataResponse)
	if len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 {
		return "", -1, tid, fmt.Errorf("metadata of topic %s: %v", g.cfg.Topic, mr.Topics)
	}
	tid = mr.Topics[0].TopicID
	// FindCoordinator names host and port; the broker list is the same
	// advertised address, but prefer the form the bootstrap list uses.
	addr := net.JoinHostPort(co.Host, strconv.Itoa(int(co.Port)))
	for _, b := range mr.Brokers {
		if b.NodeID == co.NodeID {
			addr = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
	}
	return addr, co.NodeID, tid, nil
}

// retriable reports whether err means "find the coordinator again and
// retry": the coordinator moved or is loading, or the connection broke.
func retriable(err error) bool {
	return errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
		errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.RequestTimedOut) ||
		isTransport(err)
}

func isTransport(err error) bool {
	var ke *kerr.Error
	return err != nil && !errors.As(err, &ke) && !errors.Is(err, context.Canceled)
}

// Sleep waits d or until ctx ends, and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
