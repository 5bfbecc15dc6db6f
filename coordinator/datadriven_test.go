package coordinator

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/vectors"
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
	for _, dir := range []string{"testdata/classic", "testdata/offsets", "testdata/consumer", "testdata/share"} {
		datadriven.Walk(t, dir, func(t *testing.T, path string) {
			e := &env{t: t}
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				e.t = t
				out := e.handle(d)
				e.checkReplay(d)
				e.checkInvariants(d)
				return out
			})
		})
	}
}

// env drives one coordinator through a vector. Usage of each command is in
// the comment of its handler; the request commands are built, and their
// answers rendered, by package vectors (vectors.Request lists them), which
// harness/differential shares.
type env struct {
	t       *testing.T
	topics  consumergroup.Topics
	profile version.Profile
	cfg     Config
	c       *Coordinator
	now     time.Time
	log     []records.Record
	shown   int // records already printed by `records`
}

func (e *env) handle(d *datadriven.TestData) string {
	if d.Cmd != "new" && e.c == nil {
		e.t.Fatalf("%s: %s before new: a vector starts with `new version=V` (every vector names the Kafka version it describes)", d.Pos, d.Cmd)
	}
	var b strings.Builder
	switch d.Cmd {
	case "new":
		e.new(d)
		return "ok"
	case "tick":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			e.t.Fatalf("%s: tick: %v", d.Pos, err)
		}
		e.now = e.now.Add(dur)
		e.tick(&b)
	case "state":
		// The consumer groups with topic names for ids (vectors.TopicName),
		// which the coordinator's State keeps as ids.
		st := e.c.State()
		if st.Consumer != "" {
			st.Consumer = e.consumerManager().State().Format(func(id consumergroup.TopicID) string { return vectors.TopicName(id) })
		}
		return strings.TrimSuffix(st.String(), "\n")
	case "records":
		// records: the records written since the last `records`.
		for _, r := range e.log[e.shown:] {
			fmt.Fprintf(&b, "%s\n", fmtRecord(r))
		}
		e.shown = len(e.log)
	case "restart":
		// restart [max-size=N] [version=V]: a new coordinator loads the
		// log (Replay, then Loaded), as after a coordinator failover;
		// parked requests are lost. max-size changes group.max.size across
		// the restart; version makes the new coordinator another release
		// (a rolling upgrade or downgrade), with
		// group.consumer.assignment.interval.ms at 0 where the release
		// has it and the vector did not set it.
		if d.HasArg("max-size") {
			e.cfg.MaxGroupSize = e.int(d, "max-size", 0)
		}
		if s := e.arg(d, "version", ""); s != "" {
			v, err := version.Parse(s)
			if err != nil {
				e.t.Fatalf("%s: restart: %v", d.Pos, err)
			}
			e.profile = v.Profile()
			if !e.profile.AssignmentInterval {
				e.cfg.Consumer.AssignmentInterval = nil
			} else if e.cfg.Consumer.AssignmentInterval == nil {
				zero := time.Duration(0)
				e.cfg.Consumer.AssignmentInterval = &zero
			}
			if !e.profile.RegexPeriodicRefresh {
				e.cfg.Consumer.RegexRefreshInterval = nil
			}
		}
		c := e.replayed()
		e.c = c
		recs := c.Loaded(e.now)
		e.append(&b, recs)
	case "replay":
		// replay: compare a coordinator loaded from the log with the live
		// one (done after every command anyway).
		return "ok"
	case "create-topic":
		// create-topic topics=(name:partitions,…): topics appear in the
		// metadata image (needs topics= on new). Nothing is written; a
		// regex subscription sees them at its next resolution.
		if e.cfg.Topics == nil {
			e.t.Fatalf("%s: create-topic needs an image: give new topics=(…)", d.Pos)
		}
		for _, spec := range e.list(d, "topics") {
			e.topics = append(e.topics, e.parseTopic(d, spec))
		}
		return "ok"
	case "set-topics":
		// set-topics topics=(name:partitions,…): the metadata image becomes
		// exactly these topics (a topic left out was deleted, a count that
		// grew gained partitions), as a broker's group coordinator learns
		// from a new metadata image (GMM.onNewMetadataImage). Nothing is
		// written; a consumer group sees the change at its next heartbeat.
		if e.cfg.Topics == nil {
			e.t.Fatalf("%s: set-topics needs an image: give new topics=(…)", d.Pos)
		}
		e.topics = e.topics[:0]
		for _, spec := range e.list(d, "topics") {
			e.topics = append(e.topics, e.parseTopic(d, spec))
		}
		e.consumerManager().SetTopics(cgTopics(e.cfg.Topics))
		return "ok"
	default:
		req, ok, err := vectors.Request(vectors.Identity{}, d.Cmd, args(d))
		if !ok {
			e.t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		}
		if err != nil {
			e.t.Fatalf("%s: %v", d.Pos, err)
		}
		e.request(&b, d, req)
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if out == "" {
		return "ok"
	}
	return out
}

// new version=4.4.0 [delay=0s] [min-session=1s] [max-session=…] [max-size=N] [retention=…] [retention-check=…]
// [topics=(name:partitions,…)] [consumer-session=45s] [consumer-heartbeat=5s] [consumer-max-size=N]
// [assignors=(uniform,range)] [assignment-interval=…] [regex-refresh=10m] [migration=bidirectional]
// starts over with an empty coordinator.
func (e *env) new(d *datadriven.TestData) {
	s := e.arg(d, "version", "")
	if s == "" {
		e.t.Fatalf("%s: new without version=: every vector names the Kafka version it describes (e.g. new version=%s)", d.Pos, version.Default)
	}
	v, err := version.Parse(s)
	if err != nil {
		e.t.Fatalf("%s: %v", d.Pos, err)
	}
	e.profile = v.Profile()
	e.topics = nil
	for _, spec := range e.list(d, "topics") {
		e.topics = append(e.topics, e.parseTopic(d, spec))
	}
	e.cfg = Config{
		InitialRebalanceDelay:         e.dur(d, "delay", 0),
		MinSessionTimeout:             e.dur(d, "min-session", time.Second),
		MaxSessionTimeout:             e.dur(d, "max-session", 30*time.Minute),
		MaxGroupSize:                  e.int(d, "max-size", 0),
		NewMemberJoinTimeout:          e.dur(d, "new-member-timeout", 5*time.Minute),
		OffsetsRetention:              e.dur(d, "retention", 0),
		OffsetsRetentionCheckInterval: e.dur(d, "retention-check", 10*time.Minute),
		IDs:                           &vectors.ShortIDs{},
	}
	if e.topics != nil {
		// A pointer, so that create-topic changes the image the
		// coordinator reads.
		e.cfg.Topics = &e.topics
	}
	// The consumer-group engine: group.consumer.session.timeout.ms and
	// group.consumer.assignment.interval.ms (4.3+ only; vectors set 0s as
	// the harness's brokers do).
	if d.HasArg("consumer-session") {
		e.cfg.Consumer.SessionTimeout = e.dur(d, "consumer-session", 0)
	}
	// group.consumer.migration.policy: bidirectional, upgrade, downgrade, disabled.
	e.cfg.Consumer.MigrationPolicy = e.arg(d, "migration", "")
	// group.consumer.regex.refresh.interval.ms (4.1+, at least 10s).
	if d.HasArg("regex-refresh") {
		iv := e.dur(d, "regex-refresh", 0)
		e.cfg.Consumer.RegexRefreshInterval = &iv
	}
	if d.HasArg("assignment-interval") {
		iv := e.dur(d, "assignment-interval", 0)
		e.cfg.Consumer.AssignmentInterval = &iv
	}
	// group.consumer.heartbeat.interval.ms; with consumer-session, the
	// lower bounds of both go down to 1s so that a vector may use short
	// timers (Kafka's minimums are 45s and 5s).
	if d.HasArg("consumer-heartbeat") {
		e.cfg.Consumer.HeartbeatInterval = e.dur(d, "consumer-heartbeat", 0)
		e.cfg.Consumer.MinHeartbeatInterval = time.Second
	}
	if d.HasArg("consumer-session") {
		e.cfg.Consumer.MinSessionTimeout = time.Second
	}
	// group.consumer.max.size and group.consumer.assignors.
	e.cfg.Consumer.MaxSize = e.int(d, "consumer-max-size", 0)
	e.cfg.Consumer.Assignors = e.list(d, "assignors")
	// Share groups: group.share.session.timeout.ms, group.share.max.size
	// and group.share.assignment.interval.ms (4.3+; 0 unless the vector
	// sets it, as the harness's brokers run).
	e.cfg.Share.SessionTimeout = e.dur(d, "share-session", 0)
	e.cfg.Share.MaxSize = e.int(d, "share-max-size", 0)
	if e.profile.ShareAssignmentInterval {
		iv := e.dur(d, "share-assignment-interval", 0)
		e.cfg.Share.AssignmentInterval = &iv
	}
	e.c, e.now, e.log, e.shown = newCoordinator(e.t, e.profile, e.cfg), time.UnixMilli(0).UTC(), nil, 0
}

// parseTopic reads name:partitions.
func (e *env) parseTopic(d *datadriven.TestData, spec string) consumergroup.Topic {
	name, n, _ := strings.Cut(spec, ":")
	parts, err := strconv.Atoi(n)
	if err != nil {
		e.t.Fatalf("%s: topics: %q: want name:partitions", d.Pos, spec)
	}
	return consumergroup.Topic{Name: name, ID: topicID(name), Partitions: parts}
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
		// What a coordinator loads from the log must write the same bytes
		// again (a decoded record re-encodes byte for byte).
		k2, v2, err := records.EncodeRecord(back)
		if err != nil || !bytes.Equal(k, k2) || !bytes.Equal(v, v2) {
			e.t.Fatalf("%s re-encodes as %x/%x (%v), written %x/%x", fmtRecord(r), k2, v2, err, k, v)
		}
		e.log = append(e.log, back)
		fmt.Fprintf(b, "write %s\n", fmtRecord(back))
	}
}

// replayed is a fresh coordinator that loaded the log.
func (e *env) replayed() *Coordinator {
	c := newCoordinator(e.t, e.profile, e.cfg)
	c.now = e.now.UnixMilli()
	return replayed(e.t, c, e.log)
}

func (e *env) checkReplay(d *datadriven.TestData) {
	if e.c == nil {
		return
	}
	live, loaded := e.c.State(), e.replayed().State()
	if why, ok := replayDiverges[d.Pos]; ok {
		if live.Equal(loaded) {
			e.t.Errorf("%s: after %q, replaying the log gives the live state, but replayDiverges says it does not (%s): remove the entry", d.Pos, d.Cmd, why)
		}
		return
	}
	if !live.Equal(loaded) {
		e.t.Errorf("%s: after %q, replaying the log does not give the live state\nlive:\n%s\nreplayed:\n%s", d.Pos, d.Cmd, live, loaded)
	}
}

// replayDiverges lists the commands after which Kafka's own state is not
// what its log replays to, with why; checkReplay requires the divergence
// there, and only there.
var replayDiverges = map[string]string{
	"testdata/consumer/mixed_empty_conversion_unknown_member.txt:37": "GMM.classicGroupJoinToClassicGroup removes the empty consumer group, then answers UNKNOWN_MEMBER_ID with EMPTY_RESULT: its tombstones are never written, so the log still holds the empty group until the next GroupMetadata record replaces it",
}

// --- argument helpers ---

// args are d's arguments as the vectors package takes them.
func args(d *datadriven.TestData) vectors.Args {
	out := make(vectors.Args, 0, len(d.CmdArgs))
	for _, a := range d.CmdArgs {
		out = append(out, vectors.Arg{Key: a.Key, Vals: a.Vals})
	}
	return out
}

func (e *env) arg(d *datadriven.TestData, key, def string) string { return args(d).Val(key, def) }

func (e *env) list(d *datadriven.TestData, key string) []string { return args(d).List(key) }

func (e *env) int(d *datadriven.TestData, key string, def int) int {
	return parseArg(e, d, key, def, strconv.Atoi)
}

func (e *env) dur(d *datadriven.TestData, key string, def time.Duration) time.Duration {
	return parseArg(e, d, key, def, time.ParseDuration)
}

// parseArg is the argument key parsed by parse, def when it is not given;
// a malformed one fails the test.
func parseArg[T any](e *env, d *datadriven.TestData, key string, def T, parse func(string) (T, error)) T {
	s := e.arg(d, key, "")
	if s == "" {
		return def
	}
	v, err := parse(s)
	if err != nil {
		e.t.Fatalf("%s: %s=%q: %v", d.Pos, key, s, err)
	}
	return v
}

// --- canonical output ---

// topicID is the id the vectors give a topic (vectors.TopicID).
func topicID(name string) [16]byte { return vectors.TopicID(name) }

// subscription is ConsumerProtocolSubscription v0 (vectors.Subscription).
func subscription(topics []string) []byte { return vectors.Subscription(topics) }

// fmtResponse renders a response in the vectors' canonical form, in the
// order the coordinator answered.
func fmtResponse(r kmsg.Response) string {
	return vectors.Format(r, vectors.Identity{}, vectors.AsAnswered)
}

func fmtRecord(r records.Record) string {
	switch k := r.Key.(type) {
	case records.GroupMetadataKey:
		if r.Value == nil {
			return "GroupMetadata " + k.Group + " tombstone"
		}
		v := r.Value.(*records.GroupMetadataValue)
		s := fmt.Sprintf("GroupMetadata %s v%d gen=%d type=%q proto=%s leader=%s ts=%d",
			k.Group, v.Version, v.Generation, v.ProtocolType, nullable(v.Protocol), nullable(v.Leader), v.CurrentStateTimestamp)
		for _, m := range v.Members {
			s += fmt.Sprintf("\n  member %s instance=%s client=%s host=%s rebalance=%d session=%d subscription=%s assignment=%s",
				m.MemberID, nullable(m.InstanceID), m.ClientID, m.ClientHost, m.RebalanceTimeoutMillis, m.SessionTimeoutMillis, vectors.Bytes(m.Subscription), vectors.Bytes(m.Assignment))
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
			s += " topic-id=id:" + vectors.TopicName(v.TopicID)
		}
		return s
	}
	if s, ok := fmtConsumerRecord(r); ok {
		return s
	}
	if s, ok := fmtShareRecord(r); ok {
		return s
	}
	return fmt.Sprintf("%s record", r.Type())
}
