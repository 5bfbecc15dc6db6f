package coordinator

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// Coordinator is one coordinator shard: the groups and offsets of one
// __consumer_offsets partition (GroupCoordinatorShard). It is a pure state
// machine: it changes only in Submit/Handle, Tick, Replay and Loaded, time
// comes in as an argument, and the same calls give the same answers.
//
// Kafka answers some requests later: a JoinGroup waits in PreparingRebalance
// until every member has joined or the join timer fires, a follower's
// SyncGroup waits for the leader's. Such a request is parked: Submit returns
// no response, and the response appears later in Completed under the
// request's ticket, produced by another request or by Tick.
//
// Writes are taken to succeed: the records a call returns count as appended
// and committed before the response is given, as Kafka would have it once
// they reach the high watermark. A caller that fails to append them must
// drop the coordinator and load the log again (Replay then Loaded), which is
// what Kafka's failover does; there is no rollback here.
//
// A Coordinator is not safe for concurrent use.
type Coordinator struct {
	profile version.Profile
	// apis is profile.APIVersions, the request versions served.
	apis     map[int16]version.APIRange
	cfg      Config
	consumer ConsumerGroups
	ids      IDSource

	now     int64  // ms since the epoch, of the call being served
	client  Client // of the request being served
	classic map[string]*classicGroup
	offsets offsetStore
	timers  timers

	nextTicket Ticket
	// cur is the ticket of the request being served; its own response may
	// come from code that completes parked requests (curResp).
	cur       Ticket
	curResp   kmsg.Response
	completed []Completion
	written   []records.Record
	// converted holds the GroupMetadata tombstones of classic groups the
	// consumer-group engine converted during the request being served
	// (ConvertEmptyClassic), to check that they reach the log.
	converted []records.Record
	// nextExpiry is when Tick next runs the offset expiry task
	// (GroupCoordinatorShard.cleanupGroupMetadata), once expiryArmed.
	nextExpiry  int64
	expiryArmed bool

	// share holds the share groups (KIP-932; share_groups.go), served
	// where the profile's release has them production-ready.
	share        shareGroups
	shareInitSeq uint64
}

// Ticket names one request handed to Submit, so that a parked request can
// be matched with its response.
type Ticket uint64

// Completion is the response to a request that was parked.
type Completion struct {
	Ticket   Ticket
	Response kmsg.Response
}

// Outcome is everything one request produced.
type Outcome struct {
	Ticket Ticket
	// Response is nil when the request is parked.
	Response kmsg.Response
	// Records are the records written, in order, as the profile's Kafka
	// release writes them.
	Records []records.Record
}

// Client is the part of the request context that Kafka puts into group
// state: the client id (member id prefix, GroupMetadataValue.clientId) and
// the client's address as InetAddress.toString gives it ("/127.0.0.1").
type Client struct {
	ID   string
	Host string
}

// New returns an empty coordinator that behaves as the Kafka release of
// profile with the broker settings of cfg. Unless cfg.ConsumerGroups names
// another engine, it serves consumer groups (KIP-848) with a
// consumergroup.Manager of the same profile.
func New(profile version.Profile, cfg Config) (*Coordinator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.ConsumerGroups == nil {
		cgc := cfg.Consumer
		if cgc.NewMemberID == nil {
			cgc.NewMemberID = cfg.IDs.NewID
		}
		if cgc.ClassicMaxSize == 0 {
			// group.max.size bounds a downgraded group too.
			cgc.ClassicMaxSize = cfg.MaxGroupSize
		}
		m, err := consumergroup.New(profile, cgc)
		if err != nil {
			return nil, fmt.Errorf("coordinator: Config.Consumer: %w", err)
		}
		// Timers fire without a request to bring the metadata image, and a
		// fence writes the group's metadata hash from it: a coordinator
		// just loaded (Loaded, then Tick) must see the topics too.
		m.SetTopics(cgTopics(cfg.Topics))
		cfg.ConsumerGroups = NewConsumerGroups(m)
	}
	c := &Coordinator{
		profile:  profile,
		apis:     profile.APIVersions(),
		cfg:      cfg,
		consumer: cfg.ConsumerGroups,
		ids:      cfg.IDs,
		classic:  map[string]*classicGroup{},
		offsets:  newOffsetStore(),
		timers:   timers{byKey: map[string]*timer{}},
		share:    shareGroups{},
	}
	if s, ok := cfg.ConsumerGroups.(interface{ setShell(ClassicGroups) }); ok {
		s.setShell(c)
	}
	return c, nil
}

// Profile returns the Kafka release the coordinator behaves as.
func (c *Coordinator) Profile() version.Profile { return c.profile }

// Handle serves one request from an anonymous client (client id "", host
// "/127.0.0.1"). See Submit.
func (c *Coordinator) Handle(now time.Time, req kmsg.Request) (kmsg.Response, []records.Record, error) {
	o, err := c.Submit(now, Client{Host: "/127.0.0.1"}, req)
	return o.Response, o.Records, err
}

// Submit serves one request. The error is for requests this coordinator
// does not serve: not a group-coordinator API, or a version the profile's
// release does not accept (a broker answers UNSUPPORTED_VERSION). Kafka
// errors travel in the response. A record the coordinator cannot shape as
// the release writes it is a bug in this package and panics. Callers
// should call Tick after Submit: like Kafka's timer, a zero delay
// (group.initial.rebalance.delay.ms=0; a share group's share-partition
// initialization) fires on the next Tick, not inside
// Submit. Time must not go backwards between calls.
func (c *Coordinator) Submit(now time.Time, client Client, req kmsg.Request) (Outcome, error) {
	c.nextTicket++
	t := c.nextTicket
	c.begin(now, t)
	c.client = client
	resp, err := c.dispatch(client, req)
	if err == nil && resp == nil {
		resp = c.curResp
	}
	out := Outcome{Ticket: t, Response: resp, Records: c.written}
	c.end()
	if err != nil {
		return Outcome{Ticket: t}, err
	}
	if resp != nil {
		resp.SetVersion(req.GetVersion())
	}
	return out, nil
}

func (c *Coordinator) begin(now time.Time, t Ticket) {
	c.now = now.UnixMilli()
	c.cur = t
	c.curResp = nil
	c.written = nil
}

func (c *Coordinator) end() {
	c.cur = 0
	c.curResp = nil
	c.written = nil
}

func (c *Coordinator) dispatch(client Client, req kmsg.Request) (kmsg.Response, error) {
	if err := c.checkVersion(req); err != nil {
		return nil, err
	}
	switch r := req.(type) {
	case *kmsg.OffsetCommitRequest:
		return c.handleOffsetCommit(r)
	case *kmsg.OffsetFetchRequest:
		return c.handleOffsetFetch(r)
	case *kmsg.JoinGroupRequest:
		return c.handleJoinGroup(client, r)
	case *kmsg.HeartbeatRequest:
		return c.handleHeartbeat(r)
	case *kmsg.LeaveGroupRequest:
		return c.handleLeaveGroup(r)
	case *kmsg.SyncGroupRequest:
		return c.handleSyncGroup(r)
	case *kmsg.DescribeGroupsRequest:
		return c.handleDescribeGroups(r)
	case *kmsg.ListGroupsRequest:
		return c.handleListGroups(r)
	case *kmsg.DeleteGroupsRequest:
		return c.handleDeleteGroups(r)
	case *kmsg.OffsetDeleteRequest:
		return c.handleOffsetDelete(r)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return c.handleConsumerGroupHeartbeat(r)
	case *kmsg.ConsumerGroupDescribeRequest:
		return c.handleConsumerGroupDescribe(r)
	case *kmsg.ShareGroupHeartbeatRequest:
		return c.handleShareGroupHeartbeat(r)
	case *kmsg.ShareGroupDescribeRequest:
		return c.handleShareGroupDescribe(r)
	}
	return nil, fmt.Errorf("coordinator: %s (key %d) is not a group coordinator API this coordinator serves",
		kmsg.NameForKey(req.Key()), req.Key())
}

// Completed returns, and forgets, the responses to parked requests that
// were completed since the last call.
func (c *Coordinator) Completed() []Completion {
	out := c.completed
	c.completed = nil
	return out
}

// complete answers a parked request; the request being served gets its
// answer as the return value of Submit.
func (c *Coordinator) complete(p parked, resp kmsg.Response) {
	if !p.waiting() {
		return
	}
	resp.SetVersion(p.version)
	if p.ticket == c.cur {
		c.curResp = resp
		return
	}
	c.completed = append(c.completed, Completion{Ticket: p.ticket, Response: resp})
}

// park returns the parked handle for the request being served.
func (c *Coordinator) park(version int16) parked {
	return parked{ticket: c.cur, version: version}
}

// write appends a record as the profile's release writes it. Records that
// Kafka replays into its own state after writing (offsets, deletions:
// CoordinatorResult.replayRecords) are replayed here too; classic group
// records are not (GMM passes replayRecords=false and changes the group
// directly), but the group's persisted view follows them.
//
// A record that cannot be shaped or replayed is a bug in this package (the
// coordinator builds every record it writes), so write panics on it.
func (c *Coordinator) write(r records.Record, replay bool) {
	shaped, err := records.AsWrittenBy(c.profile, r)
	if err != nil {
		panic(fmt.Sprintf("coordinator: write %s record: %v", r.Type(), err))
	}
	c.written = append(c.written, shaped)
	if replay {
		if err := c.Replay(shaped); err != nil {
			panic(fmt.Sprintf("coordinator: replay own %s record: %v", r.Type(), err))
		}
		return
	}
	if k, ok := shaped.Key.(records.GroupMetadataKey); ok && shaped.Value != nil {
		if g := c.classic[k.Group]; g != nil {
			g.persisted = persistedFromRecord(k.Group, shaped.Value.(*records.GroupMetadataValue))
		}
	}
}

// Tick advances time to now: timers due by then fire in deadline order
// (ties in the order they were set; a timer set while Tick runs waits for
// the next Tick), the consumer-group engine ticks, and
// the offset expiry task runs when its interval has passed. It returns the
// records written; responses to parked requests go to Completed.
func (c *Coordinator) Tick(now time.Time) []records.Record {
	c.begin(now, 0)
	defer c.end()
	maxSeq := c.timers.seq
	for {
		t := c.timers.due(c.now, maxSeq)
		if t == nil {
			break
		}
		t.fire()
	}
	c.written = append(c.written, c.consumer.Tick(now)...)
	if !c.expiryArmed {
		c.expiryArmed = true
		c.nextExpiry = c.now + c.cfg.OffsetsRetentionCheckInterval.Milliseconds()
	} else if c.now >= c.nextExpiry {
		c.nextExpiry = c.now + c.cfg.OffsetsRetentionCheckInterval.Milliseconds()
		c.cleanupGroupMetadata()
	}
	return c.written
}

// Loaded finishes loading a log into a coordinator built with Replay
// (GMM.onLoaded): every classic member gets a fresh session, a group
// over group.max.size starts a rebalance, and a consumer-group engine that
// keeps timers (ConsumerGroupsLoader) re-arms them.
func (c *Coordinator) Loaded(now time.Time) []records.Record {
	c.begin(now, 0)
	defer c.end()
	for _, id := range sortedKeys(c.classic) {
		g := c.classic[id]
		for _, m := range g.allMembers() {
			c.rescheduleHeartbeat(g, m, int64(m.sessionTimeoutMs))
		}
		if g.members.len() > c.cfg.maxGroupSize() {
			c.prepareRebalance(g)
		}
	}
	if l, ok := c.consumer.(ConsumerGroupsLoader); ok {
		c.written = append(c.written, l.Loaded(now)...)
	}
	c.shareLoaded()
	return c.written
}

// asKerr returns the Kafka error err carries (errors.As), or
// UNKNOWN_SERVER_ERROR for an error that carries none, as
// Errors.forException maps an unexpected exception.
func asKerr(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}
