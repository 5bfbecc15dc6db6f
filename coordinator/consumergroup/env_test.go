package consumergroup_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// env drives one Manager through a conformance vector, like raft's
// InteractionEnv: the test owns the clock and the metadata, every record
// written is kept in log, and after every command the log is replayed into a
// fresh Manager whose State must equal the live one.
type env struct {
	profile version.Profile
	cfg     consumergroup.Config
	m       *consumergroup.Manager
	now     time.Time
	start   time.Time
	topics  consumergroup.Topics
	// log is every record written, in order; unread is the part the
	// `records` command has not printed yet.
	log    []records.Record
	unread int
	// classic stands in for the shell's classic groups: id → empty.
	classic fakeClassic
}

// fakeClassic is a ClassicGroups with groups that exist only by name.
type fakeClassic map[string]bool

func (f fakeClassic) LookupClassic(id string) (bool, bool) {
	empty, ok := f[id]
	return ok, empty
}

func (f fakeClassic) ConvertEmptyClassic(id string) []records.Record {
	if empty, ok := f[id]; !ok || !empty {
		return nil
	}
	delete(f, id)
	return []records.Record{{Key: records.GroupMetadataKey{Group: id}}}
}

func newEnv(t testing.TB, v version.Version, cfg consumergroup.Config) *env {
	e := &env{profile: v.Profile(), cfg: cfg, start: time.UnixMilli(1_700_000_000_000), classic: fakeClassic{}}
	e.now = e.start
	m, err := consumergroup.New(e.profile, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	return e
}

// topicID makes a readable, deterministic topic id from a name.
func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], "topic:"+name)
	return id
}

func (e *env) topicName(id consumergroup.TopicID) string {
	if name, _, ok := e.topics.TopicByID(id); ok {
		return name
	}
	for i, b := range id {
		if b == 0 {
			return string(id[6:i]) + "(deleted)"
		}
	}
	return id.String()
}

// handle runs one datadriven command. Usage:
//
//	version v=4.2.0 [session=45s] [heartbeat=5s] [max-size=N] [assignors=(uniform,range)] [interval=1s]
//	    starts over with a Manager for that Kafka release.
//	topics
//	<name> <partitions>   (one per line; replaces the metadata)
//	heartbeat group=g member=A epoch=N [instance=i] [rack=r] [rebalance-timeout=ms]
//	    [subscribe=(t,…)] [assignor=a] [owned=(t-0,…)] [v=0|1] [client=c] [raw]
//	    epoch 0 defaults rebalance-timeout=60000 and owned=() unless raw.
//	describe groups=(g,…)
//	commit-check group=g member=A epoch=N [instance=i] [txn] [v=9] [partitions=(t-0,…)]
//	classic group=g [empty]       a classic group the shell holds
//	info group=g | delete group=g | fetch-check group=g [member=A] epoch=N
//	tick <duration>        advances the clock and fires timers
//	state | records | replay | restart [v=4.1.0]
func (e *env) handle(t *testing.T, d *datadriven.TestData) string {
	out := e.run(t, d)
	e.checkReplay(t, d)
	if out == "" {
		return "ok\n"
	}
	return out
}

func (e *env) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "version":
		return e.handleVersion(t, d)
	case "topics":
		e.topics = nil
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				d.Fatalf(t, "topics: want `<name> <partitions>`, got %q", line)
			}
			n, err := strconv.Atoi(f[1])
			if err != nil {
				d.Fatalf(t, "topics: %v", err)
			}
			e.topics = append(e.topics, consumergroup.Topic{Name: f[0], ID: topicID(f[0]), Partitions: n})
		}
		e.m.SetTopics(e.topics)
		return ""
	case "heartbeat":
		return e.handleHeartbeat(t, d)
	case "classic":
		var g string
		d.ScanArgs(t, "group", &g)
		e.classic[g] = d.HasArg("empty")
		return ""
	case "info":
		var g string
		d.ScanArgs(t, "group", &g)
		info, ok := e.m.Info(g)
		if !ok {
			return "not a consumer group\n"
		}
		return fmt.Sprintf("%s members=%d epoch=%d assignment-epoch=%d subscribed=[%s]\n", info.State, info.Members, info.Epoch, info.AssignmentEpoch, strings.Join(info.SubscribedTopics, " "))
	case "delete":
		var g string
		d.ScanArgs(t, "group", &g)
		recs, err := e.m.Delete(g)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return e.writeRecords(recs)
	case "fetch-check":
		var g string
		var epoch int
		d.ScanArgs(t, "group", &g)
		d.ScanArgs(t, "epoch", &epoch)
		var member *string
		if d.HasArg("member") {
			var s string
			d.ScanArgs(t, "member", &s)
			member = &s
		}
		if err := e.m.ValidateOffsetFetch(g, member, int32(epoch)); err != nil {
			return "error: " + err.Error() + "\n"
		}
		return "ok\n"
	case "describe":
		return e.handleDescribe(t, d)
	case "commit-check":
		return e.handleCommitCheck(t, d)
	case "tick":
		dur, err := time.ParseDuration(strings.Fields(d.CmdArgs[0].Key)[0])
		if err != nil {
			d.Fatalf(t, "tick: %v", err)
		}
		e.now = e.now.Add(dur)
		recs, fired := e.m.TickVerbose(e.now)
		var b strings.Builder
		for _, f := range fired {
			what := "no effect"
			if f.Fenced {
				what = "fenced"
			}
			fmt.Fprintf(&b, "%s timeout %s/%s: %s\n", f.Kind, f.Group, f.Member, what)
		}
		b.WriteString(e.writeRecords(recs))
		return b.String()
	case "state":
		return e.m.State().Format(e.topicName)
	case "records":
		var b strings.Builder
		for _, r := range e.log[e.unread:] {
			b.WriteString(e.formatRecord(r, true))
		}
		e.unread = len(e.log)
		if b.Len() == 0 {
			return "no records\n"
		}
		return b.String()
	case "replay":
		if diff := e.replayDiff(); diff != "" {
			return diff
		}
		return fmt.Sprintf("ok: %d records replay to the live state\n", len(e.log))
	case "restart":
		// A coordinator failover: a new Manager loads the log and re-arms
		// the timers at the current time (GMM.onLoaded). With v=, the new
		// coordinator runs another release: a rolling upgrade.
		if d.HasArg("v") {
			var vs string
			d.ScanArgs(t, "v", &vs)
			v, err := version.Parse(vs)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			e.profile = v.Profile()
			if !e.profile.AssignmentInterval {
				e.cfg.AssignmentInterval = nil
			} else if e.cfg.AssignmentInterval == nil {
				zero := time.Duration(0)
				e.cfg.AssignmentInterval = &zero
			}
		}
		m, err := e.replayed()
		if err != nil {
			return "replay failed: " + err.Error() + "\n"
		}
		m.SetTopics(e.topics)
		m.Loaded(e.now)
		e.m = m
		return ""
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (e *env) handleVersion(t *testing.T, d *datadriven.TestData) string {
	var vs string
	d.ScanArgs(t, "v", &vs)
	v, err := version.Parse(vs)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	cfg := consumergroup.Config{
		SessionTimeout:       45 * time.Second,
		MinSessionTimeout:    time.Second,
		HeartbeatInterval:    5 * time.Second,
		MinHeartbeatInterval: time.Second,
	}
	durArg := func(key string, dst *time.Duration) {
		if a, ok := d.Arg(key); ok {
			x, err := time.ParseDuration(a.Vals[0])
			if err != nil {
				d.Fatalf(t, "%s: %v", key, err)
			}
			*dst = x
		}
	}
	durArg("session", &cfg.SessionTimeout)
	durArg("heartbeat", &cfg.HeartbeatInterval)
	if d.HasArg("interval") {
		var x time.Duration
		durArg("interval", &x)
		cfg.AssignmentInterval = &x
	} else if v.Profile().AssignmentInterval {
		// The harness runs 4.3+ brokers with the interval at 0 (DESIGN.md);
		// vectors that test the interval say so.
		zero := time.Duration(0)
		cfg.AssignmentInterval = &zero
	}
	d.MaybeScanArgs(t, "max-size", &cfg.MaxSize)
	if a, ok := d.Arg("assignors"); ok {
		cfg.Assignors = a.Vals
	}
	cfg.JavaVersion = 17
	topics := e.topics
	*e = *newEnv(t, v, cfg)
	e.topics = topics
	e.m.SetTopics(topics)
	return ""
}

func vals(d *datadriven.TestData, key string) ([]string, bool) {
	a, ok := d.Arg(key)
	if !ok {
		return nil, false
	}
	if len(a.Vals) == 1 && a.Vals[0] == "" {
		return []string{}, true
	}
	return a.Vals, true
}

func (e *env) parsePartitions(t *testing.T, d *datadriven.TestData, items []string) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, it := range items {
		i := strings.LastIndexByte(it, '-')
		if i < 0 {
			d.Fatalf(t, "partition %q: want topic-N", it)
		}
		p, err := strconv.Atoi(it[i+1:])
		if err != nil {
			d.Fatalf(t, "partition %q: %v", it, err)
		}
		id := topicID(it[:i])
		j := slices.IndexFunc(out, func(x kmsg.ConsumerGroupHeartbeatRequestTopic) bool { return x.TopicID == id })
		if j < 0 {
			out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id})
			j = len(out) - 1
		}
		out[j].Partitions = append(out[j].Partitions, int32(p))
	}
	return out
}

func (e *env) handleHeartbeat(t *testing.T, d *datadriven.TestData) string {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	d.MaybeScanArgs(t, "v", &req.Version)
	d.MaybeScanArgs(t, "group", &req.Group)
	d.MaybeScanArgs(t, "member", &req.MemberID)
	var epoch int
	d.ScanArgs(t, "epoch", &epoch)
	req.MemberEpoch = int32(epoch)
	if d.HasArg("instance") {
		var s string
		d.ScanArgs(t, "instance", &s)
		req.InstanceID = &s
	}
	if d.HasArg("rack") {
		var s string
		d.ScanArgs(t, "rack", &s)
		req.RackID = &s
	}
	if d.HasArg("assignor") {
		var s string
		d.ScanArgs(t, "assignor", &s)
		req.ServerAssignor = &s
	}
	if d.HasArg("regex") {
		var s string
		d.ScanArgs(t, "regex", &s)
		req.SubscribedTopicRegex = &s
	}
	req.RebalanceTimeoutMillis = -1
	raw := d.HasArg("raw")
	if req.MemberEpoch == 0 && !raw {
		req.RebalanceTimeoutMillis = 60000
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if d.HasArg("rebalance-timeout") {
		var x int
		d.ScanArgs(t, "rebalance-timeout", &x)
		req.RebalanceTimeoutMillis = int32(x)
	}
	if s, ok := vals(d, "subscribe"); ok {
		req.SubscribedTopicNames = s
	}
	if s, ok := vals(d, "owned"); ok {
		req.Topics = e.parsePartitions(t, d, s)
	}
	rc := consumergroup.RequestContext{ClientID: "client", ClientHost: "/127.0.0.1", Classic: e.classic}
	d.MaybeScanArgs(t, "client", &rc.ClientID)

	resp, recs := e.m.Heartbeat(e.now, rc, req, e.topics)
	var b strings.Builder
	if resp.ErrorCode != 0 {
		fmt.Fprintf(&b, "error %s: %s\n", kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error).Message, deref(resp.ErrorMessage))
	} else {
		fmt.Fprintf(&b, "member %s epoch=%d heartbeat=%dms", deref(resp.MemberID), resp.MemberEpoch, resp.HeartbeatIntervalMillis)
		if resp.Assignment != nil {
			var ps []string
			for _, tp := range resp.Assignment.Topics {
				for _, p := range tp.Partitions {
					ps = append(ps, fmt.Sprintf("%s-%d", e.topicName(tp.TopicID), p))
				}
			}
			slices.Sort(ps)
			fmt.Fprintf(&b, " assignment=[%s]", strings.Join(ps, " "))
		}
		b.WriteString("\n")
	}
	b.WriteString(e.writeRecords(recs))
	return b.String()
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// writeRecords appends recs to the log and renders them in short form.
func (e *env) writeRecords(recs []records.Record) string {
	var b strings.Builder
	for _, r := range recs {
		e.log = append(e.log, r)
		b.WriteString("  ")
		b.WriteString(e.formatRecord(r, false))
	}
	return b.String()
}

func (e *env) parts(ts []records.CurrentAssignmentTopic) string {
	var out []string
	for _, t := range ts {
		for i, p := range t.Partitions {
			s := fmt.Sprintf("%s-%d", e.topicName(t.TopicID), p)
			if len(t.AssignmentEpochs) > 0 {
				s += fmt.Sprintf("@%d", t.AssignmentEpochs[i])
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return "[" + strings.Join(out, " ") + "]"
}

// formatRecord renders one record; long adds the fields a short form skips.
func (e *env) formatRecord(r records.Record, long bool) string {
	var key string
	switch k := r.Key.(type) {
	case records.ConsumerGroupMemberMetadataKey:
		key = k.GroupID + "/" + k.MemberID
	case records.ConsumerGroupTargetAssignmentMemberKey:
		key = k.GroupID + "/" + k.MemberID
	case records.ConsumerGroupCurrentMemberAssignmentKey:
		key = k.GroupID + "/" + k.MemberID
	case records.ConsumerGroupMetadataKey:
		key = k.GroupID
	case records.ConsumerGroupTargetAssignmentMetadataKey:
		key = k.GroupID
	case records.ConsumerGroupPartitionMetadataKey:
		key = k.GroupID
	case records.GroupMetadataKey:
		key = k.Group
	}
	head := fmt.Sprintf("%s %s", strings.TrimPrefix(r.Type().String(), "ConsumerGroup"), key)
	if r.Value == nil {
		return head + ": tombstone\n"
	}
	var body string
	switch v := r.Value.(type) {
	case *records.ConsumerGroupMetadataValue:
		body = fmt.Sprintf("epoch=%d", v.Epoch)
		if v.MetadataHash != 0 {
			body += fmt.Sprintf(" hash=%016x", uint64(v.MetadataHash))
		}
	case *records.ConsumerGroupPartitionMetadataValue:
		var ts []string
		for _, t := range v.Topics {
			ts = append(ts, fmt.Sprintf("%s=%d", t.TopicName, t.NumPartitions))
		}
		body = "[" + strings.Join(ts, " ") + "]"
	case *records.ConsumerGroupMemberMetadataValue:
		body = fmt.Sprintf("subscribed=[%s] rebalance-timeout=%d", strings.Join(v.SubscribedTopicNames, " "), v.RebalanceTimeoutMs)
		if v.InstanceID != nil {
			body += " instance=" + *v.InstanceID
		}
		if v.ServerAssignor != nil {
			body += " assignor=" + *v.ServerAssignor
		}
		if long {
			body += fmt.Sprintf(" rack=%s client=%s host=%s regex=%q", deref(v.RackID), v.ClientID, v.ClientHost, deref(v.SubscribedTopicRegex))
		}
	case *records.ConsumerGroupTargetAssignmentMemberValue:
		var ps []string
		for _, t := range v.TopicPartitions {
			for _, p := range t.Partitions {
				ps = append(ps, fmt.Sprintf("%s-%d", e.topicName(t.TopicID), p))
			}
		}
		slices.Sort(ps)
		body = "[" + strings.Join(ps, " ") + "]"
	case *records.ConsumerGroupTargetAssignmentMetadataValue:
		body = fmt.Sprintf("epoch=%d", v.AssignmentEpoch)
		if v.AssignmentTimestamp != 0 {
			body += fmt.Sprintf(" ts=+%dms", v.AssignmentTimestamp-e.start.UnixMilli())
		}
	case *records.ConsumerGroupCurrentMemberAssignmentValue:
		body = fmt.Sprintf("%s epoch=%d prev=%d assigned=%s", v.State, v.MemberEpoch, v.PreviousMemberEpoch, e.parts(v.AssignedPartitions))
		if len(v.PartitionsPendingRevocation) > 0 || long {
			body += " revoking=" + e.parts(v.PartitionsPendingRevocation)
		}
	default:
		body = fmt.Sprintf("%+v", v)
	}
	return head + ": " + body + "\n"
}

func (e *env) handleDescribe(t *testing.T, d *datadriven.TestData) string {
	groups, _ := vals(d, "groups")
	var b strings.Builder
	for _, g := range e.m.Describe(e.now, groups, e.topics) {
		if g.ErrorCode != 0 {
			fmt.Fprintf(&b, "group %s: error %s\n", g.Group, kerr.ErrorForCode(g.ErrorCode).(*kerr.Error).Message)
			continue
		}
		fmt.Fprintf(&b, "group %s: %s epoch=%d assignment-epoch=%d assignor=%s\n", g.Group, g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName)
		for _, m := range g.Members {
			fmt.Fprintf(&b, "  member %s epoch=%d assignment=%s target=%s", m.MemberID, m.MemberEpoch, describeParts(m.Assignment), describeParts(m.TargetAssignment))
			if m.InstanceID != nil {
				fmt.Fprintf(&b, " instance=%s", *m.InstanceID)
			}
			fmt.Fprintf(&b, " subscribed=[%s] type=%d\n", strings.Join(m.SubscribedTopics, " "), m.MemberType)
		}
	}
	return b.String()
}

func describeParts(a kmsg.Assignment) string {
	var ps []string
	for _, t := range a.TopicPartitions {
		for _, p := range t.Partitions {
			ps = append(ps, fmt.Sprintf("%s-%d", t.Topic, p))
		}
	}
	slices.Sort(ps)
	return "[" + strings.Join(ps, " ") + "]"
}

func (e *env) handleCommitCheck(t *testing.T, d *datadriven.TestData) string {
	c := consumergroup.OffsetCommitCheck{APIVersion: 9}
	d.MaybeScanArgs(t, "group", &c.GroupID)
	d.MaybeScanArgs(t, "member", &c.MemberID)
	d.MaybeScanArgs(t, "instance", &c.InstanceID)
	var epoch, v int
	d.ScanArgs(t, "epoch", &epoch)
	c.MemberEpoch = int32(epoch)
	if d.MaybeScanArgs(t, "v", &v) {
		c.APIVersion = int16(v)
	}
	c.Transactional = d.HasArg("txn")
	if ps, ok := vals(d, "partitions"); ok {
		for _, it := range ps {
			i := strings.LastIndexByte(it, '-')
			p, err := strconv.Atoi(it[i+1:])
			if i < 0 || err != nil {
				d.Fatalf(t, "partition %q: want topic-N", it)
			}
			// The shell resolves names with its metadata image; an unknown
			// topic has the zero id.
			id, _, _ := e.topics.TopicByName(it[:i])
			c.Partitions = append(c.Partitions, consumergroup.CommitPartition{Topic: it[:i], TopicID: id, Partition: int32(p)})
		}
	}
	err := e.m.ValidateOffsetCommit(c)
	var ce *consumergroup.Error
	switch {
	case err == nil:
		return "ok\n"
	case errors.Is(err, consumergroup.ErrGroupNotFound):
		return "not a consumer group (the shell decides)\n"
	case errors.As(err, &ce):
		return fmt.Sprintf("error %s: %s\n", ce.Code.Message, ce.Message)
	}
	return "unexpected error: " + err.Error() + "\n"
}

// replayed builds a fresh Manager from the log, every record through the
// byte codec first, as a coordinator loads __consumer_offsets.
func (e *env) replayed() (*consumergroup.Manager, error) {
	m, err := consumergroup.New(e.profile, e.cfg)
	if err != nil {
		return nil, err
	}
	for i, r := range e.log {
		if r.Type() == records.TypeGroupMetadata {
			continue // the shell's record
		}
		k, v, err := records.EncodeRecord(r)
		if err != nil {
			return nil, fmt.Errorf("record %d (%s): encode: %w", i, r.Type(), err)
		}
		dec, err := records.DecodeRecord(k, v)
		if err != nil {
			return nil, fmt.Errorf("record %d (%s): decode: %w", i, r.Type(), err)
		}
		if err := m.Replay(dec); err != nil {
			return nil, fmt.Errorf("record %d (%s): %w", i, r.Type(), err)
		}
	}
	return m, nil
}

func (e *env) replayDiff() string {
	m, err := e.replayed()
	if err != nil {
		return "replay failed: " + err.Error() + "\n"
	}
	live, got := e.m.State().Format(e.topicName), m.State().Format(e.topicName)
	if live != got {
		return "replayed state differs from the live state\nlive:\n" + live + "replayed:\n" + got
	}
	return ""
}

// checkReplay is the invariant of every step: the log replays to the live
// state, and the live state keeps the partition-ownership invariants.
func (e *env) checkReplay(t *testing.T, d *datadriven.TestData) {
	if diff := e.replayDiff(); diff != "" {
		t.Errorf("%s: after %q: %s", d.Pos, d.Cmd, diff)
	}
	if err := checkInvariants(e.m.State()); err != nil {
		t.Errorf("%s: after %q: %v", d.Pos, d.Cmd, err)
	}
}

// checkInvariants checks a snapshot on its own:
//  1. no partition is assigned or pending revocation to two members at one
//     member epoch;
//  2. the partition-epoch index holds exactly the owners' epochs of the
//     partitions some member holds, and a partition held by several
//     members is indexed at the highest of their epochs.
func checkInvariants(s consumergroup.Snapshot) error {
	for _, g := range s.Groups {
		type tp struct {
			t consumergroup.TopicID
			p int32
		}
		owners := map[tp]map[int32]string{}
		for _, m := range g.Members {
			for _, set := range [][]consumergroup.PartitionEpoch{m.Assigned, m.PendingRevocation} {
				for _, pe := range set {
					k := tp{pe.Topic, pe.Partition}
					if owners[k] == nil {
						owners[k] = map[int32]string{}
					}
					if other, ok := owners[k][m.Epoch]; ok && other != m.ID {
						return fmt.Errorf("group %s: partition %s-%d is owned by %s and %s at epoch %d", g.ID, pe.Topic, pe.Partition, other, m.ID, m.Epoch)
					}
					owners[k][m.Epoch] = m.ID
				}
			}
		}
		index := map[tp]int32{}
		for _, pe := range g.PartitionEpochs {
			index[tp{pe.Topic, pe.Partition}] = pe.Epoch
		}
		if len(index) != len(owners) {
			return fmt.Errorf("group %s: %d partitions are owned but %d are in the partition-epoch index", g.ID, len(owners), len(index))
		}
		for k, es := range owners {
			e, ok := index[k]
			if !ok {
				return fmt.Errorf("group %s: partition %s-%d is owned but not indexed", g.ID, k.t, k.p)
			}
			if _, ok := es[e]; !ok {
				return fmt.Errorf("group %s: partition %s-%d is indexed at epoch %d, no owner has that epoch", g.ID, k.t, k.p, e)
			}
		}
	}
	return nil
}

// TestConformance runs the vectors in testdata/. If it fails, run
// `go test ./coordinator/consumergroup -run TestConformance -rewrite` and
// read the diff: commit it only if you understand why it changed.
func TestConformance(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no vectors in testdata")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			e := newEnv(t, version.Default, consumergroup.Config{})
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				return e.handle(t, d)
			})
		})
	}
}
