package coordinator

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TestConformance runs the vectors in testdata/classic, testdata/offsets
// and testdata/consumer (consumer groups through the shell, with the
// default consumergroup.Manager engine).
// After every command it checks that a fresh coordinator fed every record
// written so far (encoded and decoded through the record codec) holds the
// same State as the live one: the "kill at any point and restart" property.
//
// If this test fails, run `go test ./coordinator -run Conformance -rewrite`
// and inspect the diff. Commit a changed expectation only if you understand
// what caused it and it is what Kafka does.
func TestConformance(t *testing.T) {
	for _, dir := range []string{"testdata/classic", "testdata/offsets", "testdata/consumer"} {
		datadriven.Walk(t, dir, func(t *testing.T, path string) {
			e := &env{t: t}
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				e.t = t
				out := e.handle(d)
				e.checkReplay(d)
				return out
			})
		})
	}
}

// shortIDs makes member ids short enough to read in vectors: "1", "2", …
type shortIDs struct{ n int }

func (s *shortIDs) NewID() string { s.n++; return strconv.Itoa(s.n) }

// env drives one coordinator through a vector. Usage of each command is in
// the comment of its handler.
type env struct {
	t       *testing.T
	topics  testTopics
	profile version.Profile
	cfg     Config
	c       *Coordinator
	now     time.Time
	log     []records.Record
	shown   int // records already printed by `records`
}

func (e *env) handle(d *datadriven.TestData) string {
	if d.Cmd != "new" && e.c == nil {
		e.new(&datadriven.TestData{})
	}
	var b strings.Builder
	switch d.Cmd {
	case "new":
		e.new(d)
		return "ok"
	case "join":
		e.request(&b, d, e.joinReq(d))
	case "sync":
		e.request(&b, d, e.syncReq(d))
	case "heartbeat":
		e.request(&b, d, e.heartbeatReq(d))
	case "leave":
		e.request(&b, d, e.leaveReq(d))
	case "describe":
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Version = e.version(d, 5)
		r.Groups = e.list(d, "groups")
		e.request(&b, d, r)
	case "list":
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = e.version(d, 5)
		r.StatesFilter = e.list(d, "states")
		r.TypesFilter = e.list(d, "types")
		e.request(&b, d, r)
	case "delete":
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Version = e.version(d, 2)
		r.Groups = e.list(d, "groups")
		e.request(&b, d, r)
	case "commit":
		e.request(&b, d, e.commitReq(d))
	case "fetch":
		e.request(&b, d, e.fetchReq(d))
	case "offset-delete":
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = e.arg(d, "group", "g")
		for _, tp := range e.list(d, "partitions") {
			topic, p := splitTP(e.t, tp)
			i := slices.IndexFunc(r.Topics, func(x kmsg.OffsetDeleteRequestTopic) bool { return x.Topic == topic })
			if i < 0 {
				r.Topics = append(r.Topics, kmsg.NewOffsetDeleteRequestTopic())
				i = len(r.Topics) - 1
				r.Topics[i].Topic = topic
			}
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rp.Partition = p
			r.Topics[i].Partitions = append(r.Topics[i].Partitions, rp)
		}
		e.request(&b, d, r)
	case "cg-heartbeat":
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group = e.arg(d, "group", "g")
		r.MemberID = e.arg(d, "member", "")
		r.MemberEpoch = int32(e.int(d, "epoch", 0))
		e.request(&b, d, r)
	case "consumer-group-heartbeat":
		e.request(&b, d, e.consumerHeartbeatReq(d))
	case "consumer-group-describe":
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		r.Version = e.version(d, 0)
		r.Groups = e.list(d, "groups")
		e.request(&b, d, r)
	case "tick":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			e.t.Fatalf("%s: tick: %v", d.Pos, err)
		}
		e.now = e.now.Add(dur)
		e.tick(&b)
	case "state":
		return strings.TrimSuffix(e.c.State().String(), "\n")
	case "records":
		// records: the records written since the last `records`.
		for _, r := range e.log[e.shown:] {
			fmt.Fprintf(&b, "%s\n", fmtRecord(r))
		}
		e.shown = len(e.log)
	case "restart":
		// restart [max-size=N]: a new coordinator loads the log (Replay,
		// then Loaded), as after a coordinator failover; parked requests
		// are lost. max-size changes group.max.size across the restart.
		if d.HasArg("max-size") {
			e.cfg.MaxGroupSize = e.int(d, "max-size", 0)
		}
		c := e.replayed()
		e.c = c
		recs := c.Loaded(e.now)
		e.append(&b, recs)
	case "replay":
		// replay: compare a coordinator loaded from the log with the live
		// one (done after every command anyway).
		return "ok"
	default:
		e.t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if out == "" {
		return "ok"
	}
	return out
}

// new version=4.4.0 [delay=0s] [min-session=1s] [max-session=…] [max-size=N] [retention=…] [retention-check=…]
// [topics=(name:partitions,…)] [consumer-session=45s] [assignment-interval=…]
// starts over with an empty coordinator.
func (e *env) new(d *datadriven.TestData) {
	v := version.Default
	if s := e.arg(d, "version", ""); s != "" {
		var err error
		if v, err = version.Parse(s); err != nil {
			e.t.Fatal(err)
		}
	}
	e.profile = v.Profile()
	e.topics = nil
	for _, spec := range e.list(d, "topics") {
		name, n, _ := strings.Cut(spec, ":")
		parts, err := strconv.Atoi(n)
		if err != nil {
			e.t.Fatalf("%s: topics: %q: want name:partitions", d.Pos, spec)
		}
		e.topics = append(e.topics, testTopic{name: name, id: topicID(name), partitions: parts})
	}
	e.cfg = Config{
		InitialRebalanceDelay:         e.dur(d, "delay", 0),
		MinSessionTimeout:             e.dur(d, "min-session", time.Second),
		MaxSessionTimeout:             e.dur(d, "max-session", 30*time.Minute),
		MaxGroupSize:                  e.int(d, "max-size", 0),
		NewMemberJoinTimeout:          e.dur(d, "new-member-timeout", 5*time.Minute),
		OffsetsRetention:              e.dur(d, "retention", 0),
		OffsetsRetentionCheckInterval: e.dur(d, "retention-check", 10*time.Minute),
		IDs:                           &shortIDs{},
	}
	if e.topics != nil {
		e.cfg.Topics = e.topics
	}
	// The consumer-group engine: group.consumer.session.timeout.ms and
	// group.consumer.assignment.interval.ms (4.3+ only; vectors set 0s as
	// the harness's brokers do).
	if d.HasArg("consumer-session") {
		e.cfg.Consumer.SessionTimeout = e.dur(d, "consumer-session", 0)
	}
	if d.HasArg("assignment-interval") {
		iv := e.dur(d, "assignment-interval", 0)
		e.cfg.Consumer.AssignmentInterval = &iv
	}
	c, err := New(e.profile, e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.c, e.now, e.log, e.shown = c, time.UnixMilli(0).UTC(), nil, 0
}

// request sends one request, prints its outcome, then lets due timers fire
// at the same instant, as a broker's timer does.
func (e *env) request(b *strings.Builder, d *datadriven.TestData, req kmsg.Request) {
	o, err := e.c.Submit(e.now, Client{ID: e.arg(d, "client", "c"), Host: "/127.0.0.1"}, req)
	if err != nil {
		fmt.Fprintf(b, "error: %v\n", err)
		return
	}
	if o.Response == nil {
		fmt.Fprintf(b, "#%d parked\n", o.Ticket)
	} else {
		fmt.Fprintf(b, "#%d %s\n", o.Ticket, fmtResponse(o.Response))
	}
	e.append(b, o.Records)
	e.tick(b)
}

func (e *env) tick(b *strings.Builder) {
	recs := e.c.Tick(e.now)
	e.append(b, recs)
	done := e.c.Completed()
	slices.SortFunc(done, func(a, b Completion) int { return int(a.Ticket) - int(b.Ticket) })
	for _, x := range done {
		fmt.Fprintf(b, "#%d → %s\n", x.Ticket, fmtResponse(x.Response))
	}
}

// append records written records, checking that each survives the codec.
func (e *env) append(b *strings.Builder, recs []records.Record) {
	for _, r := range recs {
		k, v, err := records.EncodeRecord(r)
		if err != nil {
			e.t.Fatalf("encode %s: %v", fmtRecord(r), err)
		}
		back, err := records.DecodeRecord(k, v)
		if err != nil {
			e.t.Fatalf("decode %s: %v", fmtRecord(r), err)
		}
		e.log = append(e.log, back)
		fmt.Fprintf(b, "write %s\n", fmtRecord(back))
	}
}

// replayed is a fresh coordinator that loaded the log.
func (e *env) replayed() *Coordinator {
	c, err := New(e.profile, e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	c.now = e.now.UnixMilli()
	for _, r := range e.log {
		if err := c.Replay(r); err != nil {
			e.t.Fatalf("replay %s: %v", fmtRecord(r), err)
		}
	}
	return c
}

func (e *env) checkReplay(d *datadriven.TestData) {
	if e.c == nil {
		return
	}
	live, loaded := e.c.State(), e.replayed().State()
	if !live.Equal(loaded) {
		e.t.Errorf("%s: after %q, replaying the log does not give the live state\nlive:\n%s\nreplayed:\n%s", d.Pos, d.Cmd, live, loaded)
	}
}

// join group=g [member=] [instance=] [client=c] [session=10s] [rebalance=10s] [v=9]
// [type=consumer] [protocols=(range,…)|none] [meta=m] [topics=(t,…)]
// A protocol written name:meta carries its own metadata.
func (e *env) joinReq(d *datadriven.TestData) kmsg.Request {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = e.version(d, 9)
	r.Group = e.arg(d, "group", "g")
	r.MemberID = e.arg(d, "member", "")
	r.InstanceID = e.optArg(d, "instance")
	r.SessionTimeoutMillis = int32(e.dur(d, "session", 10*time.Second).Milliseconds())
	r.RebalanceTimeoutMillis = int32(e.dur(d, "rebalance", 10*time.Second).Milliseconds())
	r.ProtocolType = e.arg(d, "type", "consumer")
	meta := []byte(e.arg(d, "meta", "m"))
	if d.HasArg("topics") {
		meta = subscription(e.list(d, "topics"))
	}
	names := []string{"range"}
	if d.HasArg("protocols") {
		names = e.list(d, "protocols")
	}
	if len(names) == 1 && names[0] == "none" {
		names = nil
	}
	for _, n := range names {
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = n, meta
		if name, m, ok := strings.Cut(n, ":"); ok {
			p.Name, p.Metadata = name, []byte(m)
		}
		r.Protocols = append(r.Protocols, p)
	}
	return r
}

// subscription is ConsumerProtocolSubscription v0: version, topics, null
// user data.
func subscription(topics []string) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(topics)))
	for _, t := range topics {
		b = binary.BigEndian.AppendUint16(b, uint16(len(t)))
		b = append(b, t...)
	}
	return binary.BigEndian.AppendUint32(b, 0xffffffff)
}

// sync group=g member= gen= [instance=] [v=5] [assign=(member:bytes,…)] [ptype=] [pname=]
func (e *env) syncReq(d *datadriven.TestData) kmsg.Request {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = e.version(d, 5)
	r.Group = e.arg(d, "group", "g")
	r.MemberID = e.arg(d, "member", "")
	r.Generation = int32(e.int(d, "gen", 0))
	r.InstanceID = e.optArg(d, "instance")
	r.ProtocolType = e.optArg(d, "ptype")
	r.Protocol = e.optArg(d, "pname")
	for _, a := range e.list(d, "assign") {
		m, v, _ := strings.Cut(a, ":")
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m, []byte(v)
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

// heartbeat group=g member= gen= [instance=] [v=4]
func (e *env) heartbeatReq(d *datadriven.TestData) kmsg.Request {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = e.version(d, 4)
	r.Group = e.arg(d, "group", "g")
	r.MemberID = e.arg(d, "member", "")
	r.Generation = int32(e.int(d, "gen", 0))
	r.InstanceID = e.optArg(d, "instance")
	return r
}

// leave group=g [member=] | members=(memberID/instance,…) [v=5]
// A member written "/i1" is removed by instance id only.
func (e *env) leaveReq(d *datadriven.TestData) kmsg.Request {
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version = e.version(d, 5)
	r.Group = e.arg(d, "group", "g")
	if r.Version < 3 {
		r.MemberID = e.arg(d, "member", "")
		return r
	}
	ms := e.list(d, "members")
	if d.HasArg("member") {
		ms = append(ms, e.arg(d, "member", ""))
	}
	for _, s := range ms {
		m := kmsg.NewLeaveGroupRequestMember()
		id, inst, ok := strings.Cut(s, "/")
		m.MemberID = id
		if ok {
			m.InstanceID = &inst
		}
		r.Members = append(r.Members, m)
	}
	return r
}

// commit group=g [member=] [gen=-1] [instance=] [v=9] [retention=-1] offsets=(t/0=10,…) [metadata=]
// An offset written t/0=10@3 carries leader epoch 3.
func (e *env) commitReq(d *datadriven.TestData) kmsg.Request {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = e.version(d, 9)
	r.Group = e.arg(d, "group", "g")
	r.MemberID = e.arg(d, "member", "")
	r.Generation = int32(e.int(d, "gen", -1))
	r.InstanceID = e.optArg(d, "instance")
	r.RetentionTimeMillis = int64(e.int(d, "retention", -1))
	md := e.optArg(d, "metadata")
	if n := e.int(d, "metadata-size", -1); n >= 0 {
		s := strings.Repeat("x", n)
		md = &s
	}
	for _, s := range e.list(d, "offsets") {
		tp, off, _ := strings.Cut(s, "=")
		off, epoch, hasEpoch := strings.Cut(off, "@")
		topic, p := splitTP(e.t, tp)
		i := slices.IndexFunc(r.Topics, func(x kmsg.OffsetCommitRequestTopic) bool { return x.Topic == topic })
		if i < 0 {
			r.Topics = append(r.Topics, kmsg.NewOffsetCommitRequestTopic())
			i = len(r.Topics) - 1
			r.Topics[i].Topic = topic
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = p
		rp.Offset, _ = strconv.ParseInt(off, 10, 64)
		if hasEpoch {
			ep, _ := strconv.Atoi(epoch)
			rp.LeaderEpoch = int32(ep)
		}
		rp.Metadata = md
		r.Topics[i].Partitions = append(r.Topics[i].Partitions, rp)
	}
	if r.Version >= 10 {
		for i := range r.Topics {
			r.Topics[i].TopicID, r.Topics[i].Topic = topicID(r.Topics[i].Topic), ""
		}
	}
	return r
}

// fetch group=g [partitions=(t/0,…)] [v=8] [member= epoch=] (v9+); without
// partitions, all offsets.
func (e *env) fetchReq(d *datadriven.TestData) kmsg.Request {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = e.version(d, 8)
	group := e.arg(d, "group", "g")
	var topics []kmsg.OffsetFetchRequestGroupTopic
	if d.HasArg("partitions") {
		topics = []kmsg.OffsetFetchRequestGroupTopic{}
		for _, tp := range e.list(d, "partitions") {
			topic, p := splitTP(e.t, tp)
			i := slices.IndexFunc(topics, func(x kmsg.OffsetFetchRequestGroupTopic) bool { return x.Topic == topic })
			if i < 0 {
				topics = append(topics, kmsg.NewOffsetFetchRequestGroupTopic())
				i = len(topics) - 1
				topics[i].Topic = topic
			}
			topics[i].Partitions = append(topics[i].Partitions, p)
		}
	}
	if r.Version >= 10 {
		for i := range topics {
			topics[i].TopicID, topics[i].Topic = topicID(topics[i].Topic), ""
		}
	}
	if r.Version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.Topics = group, topics
		if r.Version >= 9 {
			// KIP-848: a consumer-group member fetches with its id and epoch.
			g.MemberID = e.optArg(d, "member")
			g.MemberEpoch = int32(e.int(d, "epoch", -1))
		}
		r.Groups = []kmsg.OffsetFetchRequestGroup{g}
		return r
	}
	r.Group = group
	if topics != nil {
		r.Topics = []kmsg.OffsetFetchRequestTopic{}
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic, rt.Partitions = t.Topic, t.Partitions
			r.Topics = append(r.Topics, rt)
		}
	}
	return r
}

// --- argument helpers ---

func (e *env) arg(d *datadriven.TestData, key, def string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			if len(a.Vals) == 0 {
				return ""
			}
			return a.Vals[0]
		}
	}
	return def
}

func (e *env) optArg(d *datadriven.TestData, key string) *string {
	if !d.HasArg(key) {
		return nil
	}
	s := e.arg(d, key, "")
	return &s
}

func (e *env) list(d *datadriven.TestData, key string) []string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return a.Vals
		}
	}
	return nil
}

func (e *env) int(d *datadriven.TestData, key string, def int) int {
	s := e.arg(d, key, "")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		e.t.Fatalf("%s: %s=%q: %v", d.Pos, key, s, err)
	}
	return n
}

func (e *env) version(d *datadriven.TestData, def int) int16 { return int16(e.int(d, "v", def)) }

func (e *env) dur(d *datadriven.TestData, key string, def time.Duration) time.Duration {
	s := e.arg(d, key, "")
	if s == "" {
		return def
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		e.t.Fatalf("%s: %s=%q: %v", d.Pos, key, s, err)
	}
	return v
}

func splitTP(t *testing.T, s string) (string, int32) {
	topic, p, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(p)
	if !ok || err != nil {
		t.Fatalf("partition %q: want topic/partition", s)
	}
	return topic, int32(n)
}

// --- canonical output ---

func errName(code int16) string {
	if code == 0 {
		return ""
	}
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return fmt.Sprintf("error(%d)", code)
}

func withErr(code int16, s string) string {
	if n := errName(code); n != "" {
		if s == "" {
			return n
		}
		return s + " " + n
	}
	return s
}

func ps(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// topicName names a topic of a response: by name, or by the id topicID
// gave it.
func topicName(name string, id [16]byte) string {
	if name != "" || id == [16]byte{} {
		return name
	}
	if id[0] == 'T' {
		return "id:" + strings.TrimRight(string(id[1:]), "\x00")
	}
	return fmt.Sprintf("id:%x", id)
}

// topicID is the id the vectors give a topic: "T" and the name, padded.
func topicID(name string) [16]byte {
	var id [16]byte
	id[0] = 'T'
	copy(id[1:], name)
	return id
}

type testTopic struct {
	name       string
	id         [16]byte
	partitions int
}

type testTopics []testTopic

func (ts testTopics) TopicByName(name string) ([16]byte, int, bool) {
	for _, t := range ts {
		if t.name == name {
			return t.id, t.partitions, true
		}
	}
	return [16]byte{}, 0, false
}

func (ts testTopics) TopicByID(id [16]byte) (string, int, bool) {
	for _, t := range ts {
		if t.id == id {
			return t.name, t.partitions, true
		}
	}
	return "", 0, false
}

func fmtResponse(r kmsg.Response) string {
	switch r := r.(type) {
	case *kmsg.JoinGroupResponse:
		s := fmt.Sprintf("join member=%s", r.MemberID)
		if r.ErrorCode == 0 {
			s += fmt.Sprintf(" gen=%d type=%s proto=%s leader=%s", r.Generation, ps(r.ProtocolType), ps(r.Protocol), r.LeaderID)
			if r.SkipAssignment {
				s += " skip-assignment"
			}
			if len(r.Members) > 0 {
				var ms []string
				for _, m := range r.Members {
					x := m.MemberID
					if m.InstanceID != nil {
						x += "/" + *m.InstanceID
					}
					ms = append(ms, x+":"+fmtBytes(m.ProtocolMetadata))
				}
				s += " members=(" + strings.Join(ms, ", ") + ")"
			}
		}
		return withErr(r.ErrorCode, s)
	case *kmsg.SyncGroupResponse:
		if r.ErrorCode != 0 {
			return "sync " + errName(r.ErrorCode)
		}
		return fmt.Sprintf("sync type=%s proto=%s assignment=%s", ps(r.ProtocolType), ps(r.Protocol), fmtBytes(r.MemberAssignment))
	case *kmsg.HeartbeatResponse:
		return withErr(r.ErrorCode, "heartbeat")
	case *kmsg.LeaveGroupResponse:
		s := withErr(r.ErrorCode, "leave")
		for _, m := range r.Members {
			x := m.MemberID
			if m.InstanceID != nil {
				x += "/" + *m.InstanceID
			}
			if n := errName(m.ErrorCode); n != "" {
				x += " " + n
			}
			s += "\n  " + x
		}
		return s
	case *kmsg.DescribeGroupsResponse:
		s := "describe"
		for _, g := range r.Groups {
			s += fmt.Sprintf("\n  %s state=%s type=%q proto=%q", g.Group, g.State, g.ProtocolType, g.Protocol)
			if g.ErrorCode != 0 {
				s += " " + errName(g.ErrorCode)
			}
			for _, m := range g.Members {
				s += fmt.Sprintf("\n    %s instance=%s client=%s host=%s metadata=%s assignment=%s",
					m.MemberID, ps(m.InstanceID), m.ClientID, m.ClientHost, fmtBytes(m.ProtocolMetadata), fmtBytes(m.MemberAssignment))
			}
		}
		return s
	case *kmsg.ListGroupsResponse:
		s := withErr(r.ErrorCode, "list")
		for _, g := range r.Groups {
			s += fmt.Sprintf("\n  %s type=%s state=%s protocol-type=%q", g.Group, g.GroupType, g.GroupState, g.ProtocolType)
		}
		return s
	case *kmsg.DeleteGroupsResponse:
		s := "delete"
		for _, g := range r.Groups {
			s += "\n  " + g.Group
			if n := errName(g.ErrorCode); n != "" {
				s += " " + n
			}
		}
		return s
	case *kmsg.OffsetCommitResponse:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				x := fmt.Sprintf("%s/%d", topicName(t.Topic, t.TopicID), p.Partition)
				if n := errName(p.ErrorCode); n != "" {
					x += " " + n
				}
				parts = append(parts, x)
			}
		}
		return "commit " + strings.Join(parts, ", ")
	case *kmsg.OffsetFetchResponse:
		var parts []string
		add := func(g string, code int16, topic string, p, epoch int32, off int64, md *string, perr int16) {
			x := fmt.Sprintf("%s/%d=%d", topic, p, off)
			if epoch != -1 {
				x += fmt.Sprintf("@%d", epoch)
			}
			if md != nil && len(*md) > 20 {
				x += fmt.Sprintf(" metadata-size=%d", len(*md))
			} else if md != nil && *md != "" {
				x += fmt.Sprintf(" %q", *md)
			}
			if n := errName(perr); n != "" {
				x += " " + n
			}
			parts = append(parts, x)
		}
		if r.Version < 8 {
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					add("", 0, t.Topic, p.Partition, p.LeaderEpoch, p.Offset, p.Metadata, p.ErrorCode)
				}
			}
			return withErr(r.ErrorCode, "fetch "+strings.Join(parts, ", "))
		}
		s := "fetch"
		for _, g := range r.Groups {
			parts = nil
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					add(g.Group, g.ErrorCode, topicName(t.Topic, t.TopicID), p.Partition, p.LeaderEpoch, p.Offset, p.Metadata, p.ErrorCode)
				}
			}
			s += fmt.Sprintf(" %s: %s", g.Group, withErr(g.ErrorCode, strings.Join(parts, ", ")))
		}
		return s
	case *kmsg.OffsetDeleteResponse:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				x := fmt.Sprintf("%s/%d", t.Topic, p.Partition)
				if n := errName(p.ErrorCode); n != "" {
					x += " " + n
				}
				parts = append(parts, x)
			}
		}
		return withErr(r.ErrorCode, "offset-delete "+strings.Join(parts, ", "))
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return fmtConsumerHeartbeat(r)
	case *kmsg.ConsumerGroupDescribeResponse:
		return fmtConsumerDescribe(r)
	}
	return fmt.Sprintf("%T", r)
}

func fmtBytes(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%x", b)
		}
	}
	return fmt.Sprintf("%q", b)
}

func fmtRecord(r records.Record) string {
	switch k := r.Key.(type) {
	case records.GroupMetadataKey:
		if r.Value == nil {
			return "GroupMetadata " + k.Group + " tombstone"
		}
		v := r.Value.(*records.GroupMetadataValue)
		s := fmt.Sprintf("GroupMetadata %s v%d gen=%d type=%q proto=%s leader=%s ts=%d",
			k.Group, v.Version, v.Generation, v.ProtocolType, ps(v.Protocol), ps(v.Leader), v.CurrentStateTimestamp)
		for _, m := range v.Members {
			s += fmt.Sprintf("\n  member %s instance=%s client=%s host=%s rebalance=%d session=%d subscription=%s assignment=%s",
				m.MemberID, ps(m.InstanceID), m.ClientID, m.ClientHost, m.RebalanceTimeoutMillis, m.SessionTimeoutMillis, fmtBytes(m.Subscription), fmtBytes(m.Assignment))
		}
		return s
	case records.OffsetCommitKey:
		if r.Value == nil {
			return fmt.Sprintf("OffsetCommit %s %s/%d tombstone", k.Group, k.Topic, k.Partition)
		}
		v := r.Value.(*records.OffsetCommitValue)
		md := fmt.Sprintf("metadata=%q", v.Metadata)
		if len(v.Metadata) > 20 {
			md = fmt.Sprintf("metadata-size=%d", len(v.Metadata))
		}
		s := fmt.Sprintf("OffsetCommit %s %s/%d v%d offset=%d leader-epoch=%d %s commit-ts=%d",
			k.Group, k.Topic, k.Partition, v.Version, v.Offset, v.LeaderEpoch, md, v.CommitTimestamp)
		if v.Version == 1 {
			s += fmt.Sprintf(" expire-ts=%d", v.ExpireTimestamp)
		}
		if v.TopicID != [16]byte{} {
			s += " topic-id=" + topicName("", v.TopicID)
		}
		return s
	}
	if s, ok := fmtConsumerRecord(r); ok {
		return s
	}
	return fmt.Sprintf("%s record", r.Type())
}
