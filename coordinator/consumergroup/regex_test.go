package consumergroup

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TestCheckRE2J pins where Go's regexp and Kafka's RE2/J part: the
// PatternSyntaxException descriptions Kafka reports (read in re2j 1.7 and
// 1.8 Parser.java) and the patterns the model refuses as not modelled.
func TestCheckRE2J(t *testing.T) {
	v40, v44 := version.V4_0_0.Profile(), version.V4_4_0.Profile()
	for _, c := range []struct {
		pattern     string
		p           version.Profile
		desc        string
		unsupported bool
	}{
		{pattern: "foo-.*", p: v44},
		{pattern: `topic\.[a-z]+|other`, p: v44},
		{pattern: `\Qa.b`, p: v44},
		{pattern: "(?i)FOO", p: v44},
		{pattern: "foo)", p: v44, desc: "regexp/syntax: internal error"}, // Go: "unexpected )"; Kafka 4.1.2 and 4.4.0 answer this
		{pattern: "(foo", p: v44, desc: "missing closing )"},
		{pattern: "[a", p: v44, desc: "missing closing ]"},
		{pattern: "a**", p: v44, desc: "invalid nested repetition operator"},
		{pattern: "*a", p: v44, desc: "missing argument to repetition operator"},
		{pattern: `\C`, p: v44, desc: "invalid escape sequence"},
		{pattern: "(?z)", p: v44, desc: "invalid or unsupported Perl syntax"},
		{pattern: "(?P<a>x)(?P<a>y)", p: v44, desc: "duplicate capture group name"}, // Go accepts it
		{pattern: "(?<n>x)", p: v44},
		{pattern: "(?<n>x)", p: v40, desc: "invalid or unsupported Perl syntax"}, // re2j 1.7
		{pattern: `[(?<]x`, p: v40},                                              // in a class: literal
		{pattern: `\Q(?<\E`, p: v40},                                             // quoted: literal
		{pattern: `\pL+`, p: v44, unsupported: true},
		{pattern: `[\P{Greek}]`, p: v44, unsupported: true},
		{pattern: `\\pL`, p: v44}, // an escaped backslash, then "pL"
		{pattern: `[[:alpha:]]+`, p: v44},
		{pattern: "x{1001}", p: v44, desc: "invalid repeat count"},
		{pattern: strings.Repeat("(", 1001) + "a" + strings.Repeat(")", 1001), p: v44, unsupported: true}, // Go's nesting limit
	} {
		desc, why := checkRE2J(c.p, c.pattern)
		if desc != c.desc || (why != "") != c.unsupported {
			t.Errorf("checkRE2J(RE2/J %s, %q) = (%q, %q), want (%q, unsupported %v)", c.p.RE2J, c.pattern, desc, why, c.desc, c.unsupported)
		}
	}
}

// TestResolveRegex checks the match Kafka makes: the whole topic name
// (Matcher.matches, not find), sorted as the record writes it.
func TestResolveRegex(t *testing.T) {
	names := []string{"foo-2", "foo-1", "xfoo-1", "foo-1x", "bar", "a.b", "axb", "__consumer_offsets"}
	p := version.V4_4_0.Profile()
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{"foo-.*", []string{"foo-1", "foo-1x", "foo-2"}},
		{"foo-\\d", []string{"foo-1", "foo-2"}},
		{"foo-1|bar", []string{"bar", "foo-1"}}, // the alternation is anchored as a whole
		{`\Qa.b`, []string{"a.b"}},              // an open \Q quotes to the end
		{"a.b", []string{"a.b", "axb"}},
		{".*", []string{"__consumer_offsets", "a.b", "axb", "bar", "foo-1", "foo-1x", "foo-2", "xfoo-1"}},
		{"(?i)BAR", []string{"bar"}},
		{"nothing", []string{}},
		{"foo)", []string{}}, // invalid: matches nothing, as Kafka ignores it
	} {
		if got := resolveRegex(p, c.pattern, names); !slices.Equal(got, c.want) {
			t.Errorf("resolveRegex(%q) = %q, want %q", c.pattern, got, c.want)
		}
	}
}

// TestRegexSubscriptionType is ConsumerGroup.subscriptionType with regexes.
func TestRegexSubscriptionType(t *testing.T) {
	for _, c := range []struct {
		name    string
		regexes map[string]int
		counts  map[string]subCount
		members int
		want    assignor.SubscriptionType
	}{
		{"one regex for all", map[string]int{"f.*": 2}, map[string]subCount{"f1": {0, 1}, "f2": {0, 1}}, 2, assignor.Homogeneous},
		{"one regex, not all members", map[string]int{"f.*": 1}, map[string]subCount{"f1": {0, 1}}, 2, assignor.Heterogeneous},
		{"regex and a name", map[string]int{"f.*": 2}, map[string]subCount{"f1": {1, 1}}, 2, assignor.Heterogeneous},
		{"two regexes matching one topic", map[string]int{"f.*": 2, "f1": 0}, map[string]subCount{"f1": {0, 2}}, 2, assignor.Heterogeneous},
		{"names only", map[string]int{}, map[string]subCount{"f1": {2, 0}}, 2, assignor.Homogeneous},
	} {
		if got := subscriptionType(c.regexes, c.counts, c.members); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func regexHeartbeat(member string, epoch int32, regex *string, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch = "g", member, epoch
	r.RebalanceTimeoutMillis = -1
	r.SubscribedTopicRegex = regex
	r.Topics = owned
	if epoch == 0 {
		r.RebalanceTimeoutMillis = 60000
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return r
}

func regexTopics(names ...string) Topics {
	var ts Topics
	for i, n := range names {
		ts = append(ts, Topic{Name: n, ID: [16]byte{byte(i + 1)}, Partitions: 2})
	}
	return ts
}

// TestRegexJoinResolvesAfterHeartbeat drives a Manager as a host does: the
// heartbeat writes no regex record; the Tick at the same instant resolves
// it and bumps the epoch; the next heartbeat is assigned the matched
// topics only, and a log of those records replays (through the codec, byte
// for byte) to the same state.
func TestRegexJoinResolvesAfterHeartbeat(t *testing.T) {
	m, err := New(version.V4_4_0.Profile(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	topics := regexTopics("foo-1", "foo-2", "bar")
	now := time.UnixMilli(1000)
	re := "foo-.*"
	resp, recs := m.Heartbeat(now, RequestContext{ClientID: "c", ClientHost: "/h"}, regexHeartbeat("A", 0, &re, nil), topics)
	if resp.ErrorCode != 0 {
		t.Fatalf("join: %v %s", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	for _, r := range recs {
		if r.Type() == records.TypeConsumerGroupRegularExpression {
			t.Fatalf("the heartbeat wrote %v: the resolution must come later", r)
		}
	}
	if at, ok := m.NextDeadline(); !ok || !at.Equal(now) {
		t.Fatalf("NextDeadline = %v %v, want the resolution due now", at, ok)
	}
	resolved := m.Tick(now)
	if len(resolved) != 2 {
		t.Fatalf("resolution wrote %d records, want the regex and the epoch bump: %v", len(resolved), resolved)
	}
	v, ok := resolved[0].Value.(*records.ConsumerGroupRegularExpressionValue)
	if !ok || resolved[0].Key != (records.ConsumerGroupRegularExpressionKey{GroupID: "g", RegularExpression: re}) {
		t.Fatalf("first record %v, want the regex record", resolved[0])
	}
	if !slices.Equal(v.Topics, []string{"foo-1", "foo-2"}) || v.Timestamp != 1000 || v.Version < 1 {
		t.Fatalf("regex value %+v", v)
	}
	if e, ok := resolved[1].Value.(*records.ConsumerGroupMetadataValue); !ok || e.Epoch != 2 || e.MetadataHash != metadataHash(topics, []string{"foo-1", "foo-2"}) {
		t.Fatalf("second record %v, want epoch 2 with the hash of foo-1 and foo-2", resolved[1])
	}
	log := append(recs, resolved...)

	resp, recs = m.Heartbeat(now, RequestContext{ClientID: "c", ClientHost: "/h"}, regexHeartbeat("A", 1, nil, []kmsg.ConsumerGroupHeartbeatRequestTopic{}), topics)
	if resp.ErrorCode != 0 || resp.Assignment == nil {
		t.Fatalf("second heartbeat: %+v", resp)
	}
	var got []byte
	for _, tp := range resp.Assignment.Topics {
		got = append(got, tp.TopicID[0])
	}
	slices.Sort(got)
	if !bytes.Equal(got, []byte{1, 2}) {
		t.Fatalf("assigned topics %v, want foo-1 and foo-2 (ids 1, 2), not bar", got)
	}
	log = append(log, recs...)

	// Replay through the codec into a fresh Manager.
	r, err := New(version.V4_4_0.Profile(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range log {
		k, val, err := records.EncodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		back, err := records.DecodeRecord(k, val)
		if err != nil {
			t.Fatal(err)
		}
		if k2, v2, _ := records.EncodeRecord(back); !bytes.Equal(k, k2) || !bytes.Equal(val, v2) {
			t.Fatalf("%v does not re-encode byte for byte", rec)
		}
		if err := r.Replay(back); err != nil {
			t.Fatalf("replay %v: %v", rec, err)
		}
	}
	if live, loaded := m.State(), r.State(); !live.Equal(loaded) {
		t.Fatalf("replayed state differs\nlive:\n%s\nreplayed:\n%s", live, loaded)
	}
	if g := r.State().Groups[0]; len(g.Regexes) != 1 || !slices.Equal(g.Regexes[0].Topics, []string{"foo-1", "foo-2"}) {
		t.Fatalf("replayed regexes %+v", g.Regexes)
	}
}

// TestRegexReplayOfBrokerLog replays a regex record as a broker writes it
// (its version is a KRaft offset) and continues: a resolution after a
// created topic records a version above the replayed one, and a tombstone
// removes the regex's topics from the group.
func TestRegexReplayOfBrokerLog(t *testing.T) {
	m, err := New(version.V4_4_0.Profile(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	re := "foo-.*"
	log := []records.Record{
		{Key: records.ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: "A"}, Value: &records.ConsumerGroupMemberMetadataValue{ClientID: "c", ClientHost: "/h", SubscribedTopicNames: []string{}, SubscribedTopicRegex: &re, RebalanceTimeoutMs: 60000}},
		{Key: records.ConsumerGroupRegularExpressionKey{GroupID: "g", RegularExpression: re}, Value: &records.ConsumerGroupRegularExpressionValue{Topics: []string{"foo-1"}, Version: 4711, Timestamp: 1000}},
		{Key: records.ConsumerGroupMetadataKey{GroupID: "g"}, Value: &records.ConsumerGroupMetadataValue{Epoch: 2}},
		{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "A"}, Value: &records.ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: 1, PreviousMemberEpoch: 0, State: records.MemberStable}},
	}
	for _, r := range log {
		if err := m.Replay(r); err != nil {
			t.Fatalf("replay %v: %v", r, err)
		}
	}
	if names := keys(m.rp.groups["g"].subscribedTopicNames(nil, nil)); !slices.Equal(names, []string{"foo-1"}) {
		t.Fatalf("subscribed topic names %v, want the regex's foo-1", names)
	}
	m.Loaded(time.UnixMilli(2000))
	now := time.UnixMilli(20000)
	topics := regexTopics("foo-1", "foo-2")
	resp, _ := m.Heartbeat(now, RequestContext{ClientID: "c", ClientHost: "/h"}, regexHeartbeat("A", 1, nil, nil), topics)
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	recs := m.Tick(now)
	if len(recs) == 0 {
		t.Fatal("no resolution after load with a topic created: want one")
	}
	v := recs[0].Value.(*records.ConsumerGroupRegularExpressionValue)
	if !slices.Equal(v.Topics, []string{"foo-1", "foo-2"}) || v.Version <= 4711 || v.Timestamp != 20000 {
		t.Fatalf("resolution %+v: want foo-1, foo-2 at a version above 4711, ts 20000", v)
	}
	if err := m.Replay(records.Record{Key: records.ConsumerGroupRegularExpressionKey{GroupID: "g", RegularExpression: re}}); err != nil {
		t.Fatal(err)
	}
	if names := m.rp.groups["g"].subscribedTopicNames(nil, nil); len(names) != 0 {
		t.Fatalf("after the tombstone the group subscribes to %v", names)
	}
}

// TestRegexInvalidOnlyWhenNew: Kafka validates a regex only when no member
// of the group uses it yet (GMM.maybeUpdateRegularExpressions); the error
// is INVALID_REGULAR_EXPRESSION and nothing is written.
func TestRegexInvalidOnlyWhenNew(t *testing.T) {
	m, err := New(version.V4_4_0.Profile(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	bad := "foo("
	resp, recs := m.Heartbeat(time.UnixMilli(0), RequestContext{}, regexHeartbeat("A", 0, &bad, nil), regexTopics("foo"))
	if !errors.Is(kerr.ErrorForCode(resp.ErrorCode), kerr.InvalidRegularExpression) || len(recs) != 0 {
		t.Fatalf("got %v with %d records, want INVALID_REGULAR_EXPRESSION and none", kerr.ErrorForCode(resp.ErrorCode), len(recs))
	}
	if want := "SubscribedTopicRegex `foo(` is not a valid regular expression: missing closing )."; deref(resp.ErrorMessage) != want {
		t.Fatalf("message %q, want %q", deref(resp.ErrorMessage), want)
	}
	if _, ok := m.NextDeadline(); ok {
		t.Fatal("a refused heartbeat scheduled something")
	}
}
