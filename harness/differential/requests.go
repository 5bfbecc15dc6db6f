package differential

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// names maps the names a vector writes to the names one side uses: the
// reference takes them as written; a target gets them in the section's
// namespace, with the member ids it generated and its real topic ids.
type names interface {
	group(string) string
	topic(string) string
	topicID(string) [16]byte
	member(string) string
}

// builder turns a vector command into the request the coordinator test
// harness (coordinator/datadriven_test.go) builds for it, with the same
// defaults, through names. It is a port of that harness: the two must agree
// on every default, and the reference side of Run checks that they do by
// reproducing the vector file's expectations.
type builder struct {
	n    names
	args []datadriven.CmdArg
	err  error
}

func (b *builder) arg(key, def string) string { return argVal(b.args, key, def) }
func (b *builder) list(key string) []string   { return argList(b.args, key) }

func (b *builder) opt(key string) *string {
	if !hasArg(b.args, key) {
		return nil
	}
	s := b.arg(key, "")
	return &s
}

func (b *builder) int(key string, def int) int {
	s := b.arg(key, "")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("%s=%q: want an integer", key, s)
	}
	return n
}

func (b *builder) version(def int) int16 { return int16(b.int("v", def)) }

func (b *builder) dur(key string, def time.Duration) time.Duration {
	s := b.arg(key, "")
	if s == "" {
		return def
	}
	v, err := time.ParseDuration(s)
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("%s=%q: want a duration", key, s)
	}
	return v
}

func (b *builder) tp(s string) (string, int32) {
	topic, p, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(p)
	if (!ok || err != nil) && b.err == nil {
		b.err = fmt.Errorf("partition %q: want topic/partition", s)
	}
	return topic, int32(n)
}

func (b *builder) optMember(key string) *string {
	s := b.opt(key)
	if s == nil {
		return nil
	}
	m := b.n.member(*s)
	return &m
}

// groupArg is the group= argument in the side's namespace; the empty group
// (INVALID_GROUP_ID) stays empty.
func (b *builder) groupArg() string { return b.n.group(b.arg("group", "g")) }

func (b *builder) groups(key string) []string {
	var out []string
	for _, g := range b.list(key) {
		out = append(out, b.n.group(g))
	}
	return out
}

// request builds the request of a step; ok is false for commands that are
// not requests.
func buildRequest(n names, st Step) (kmsg.Request, bool, error) {
	b := &builder{n: n, args: st.Args}
	var req kmsg.Request
	switch st.Cmd {
	case "join":
		req = b.join()
	case "sync":
		req = b.sync()
	case "heartbeat":
		r := kmsg.NewPtrHeartbeatRequest()
		r.Version = b.version(4)
		r.Group = b.groupArg()
		r.MemberID = n.member(b.arg("member", ""))
		r.Generation = int32(b.int("gen", 0))
		r.InstanceID = b.opt("instance")
		req = r
	case "leave":
		req = b.leave()
	case "describe":
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Version = b.version(5)
		r.Groups = b.groups("groups")
		req = r
	case "list":
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = b.version(5)
		r.StatesFilter = b.list("states")
		r.TypesFilter = b.list("types")
		req = r
	case "delete":
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Version = b.version(2)
		r.Groups = b.groups("groups")
		req = r
	case "commit":
		req = b.commit()
	case "fetch":
		req = b.fetch()
	case "offset-delete":
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = b.groupArg()
		for _, s := range b.list("partitions") {
			topic, p := b.tp(s)
			topic = n.topic(topic)
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
		req = r
	case "cg-heartbeat":
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group = b.groupArg()
		r.MemberID = n.member(b.arg("member", ""))
		r.MemberEpoch = int32(b.int("epoch", 0))
		req = r
	case "consumer-group-heartbeat":
		req = b.consumerHeartbeat()
	case "consumer-group-describe":
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		r.Version = b.version(0)
		r.Groups = b.groups("groups")
		req = r
	default:
		return nil, false, nil
	}
	if b.err != nil {
		return nil, true, fmt.Errorf("%s: %v", st.Pos, b.err)
	}
	return req, true, nil
}

// clientID is the client.id a step's request carries (client=, default c).
func clientID(st Step) string { return argVal(st.Args, "client", "c") }

func (b *builder) join() kmsg.Request {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = b.version(9)
	r.Group = b.groupArg()
	r.MemberID = b.n.member(b.arg("member", ""))
	r.InstanceID = b.opt("instance")
	r.SessionTimeoutMillis = int32(b.dur("session", 10*time.Second).Milliseconds())
	r.RebalanceTimeoutMillis = int32(b.dur("rebalance", 10*time.Second).Milliseconds())
	r.ProtocolType = b.arg("type", "consumer")
	meta := []byte(b.arg("meta", "m"))
	if hasArg(b.args, "topics") {
		var ts []string
		for _, t := range b.list("topics") {
			ts = append(ts, b.n.topic(t))
		}
		meta = subscription(ts)
	}
	protos := []string{"range"}
	if hasArg(b.args, "protocols") {
		protos = b.list("protocols")
	}
	if len(protos) == 1 && protos[0] == "none" {
		protos = nil
	}
	for _, s := range protos {
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = s, meta
		if name, m, ok := strings.Cut(s, ":"); ok {
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

// parseSubscription reverses subscription; ok is false for anything else.
func parseSubscription(b []byte) ([]string, bool) {
	if len(b) < 10 || binary.BigEndian.Uint16(b) != 0 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(b[2:]))
	b = b[6:]
	var out []string
	for range n {
		if len(b) < 2 {
			return nil, false
		}
		l := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+l {
			return nil, false
		}
		out = append(out, string(b[2:2+l]))
		b = b[2+l:]
	}
	if len(b) != 4 || binary.BigEndian.Uint32(b) != 0xffffffff {
		return nil, false
	}
	return out, true
}

func (b *builder) sync() kmsg.Request {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = b.version(5)
	r.Group = b.groupArg()
	r.MemberID = b.n.member(b.arg("member", ""))
	r.Generation = int32(b.int("gen", 0))
	r.InstanceID = b.opt("instance")
	r.ProtocolType = b.opt("ptype")
	r.Protocol = b.opt("pname")
	for _, a := range b.list("assign") {
		m, v, _ := strings.Cut(a, ":")
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = b.n.member(m), []byte(v)
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

func (b *builder) leave() kmsg.Request {
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version = b.version(5)
	r.Group = b.groupArg()
	if r.Version < 3 {
		r.MemberID = b.n.member(b.arg("member", ""))
		return r
	}
	ms := b.list("members")
	if hasArg(b.args, "member") {
		ms = append(ms, b.arg("member", ""))
	}
	for _, s := range ms {
		m := kmsg.NewLeaveGroupRequestMember()
		id, inst, ok := strings.Cut(s, "/")
		m.MemberID = b.n.member(id)
		if ok {
			m.InstanceID = &inst
		}
		r.Members = append(r.Members, m)
	}
	return r
}

func (b *builder) commit() kmsg.Request {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = b.version(9)
	r.Group = b.groupArg()
	r.MemberID = b.n.member(b.arg("member", ""))
	r.Generation = int32(b.int("gen", -1))
	r.InstanceID = b.opt("instance")
	r.RetentionTimeMillis = int64(b.int("retention", -1))
	md := b.opt("metadata")
	if n := b.int("metadata-size", -1); n >= 0 {
		s := strings.Repeat("x", n)
		md = &s
	}
	var names []string // as the vector writes them, for topic ids
	for _, s := range b.list("offsets") {
		tp, off, _ := strings.Cut(s, "=")
		off, epoch, hasEpoch := strings.Cut(off, "@")
		topic, p := b.tp(tp)
		i := slices.Index(names, topic)
		if i < 0 {
			names = append(names, topic)
			r.Topics = append(r.Topics, kmsg.NewOffsetCommitRequestTopic())
			i = len(r.Topics) - 1
			r.Topics[i].Topic = b.n.topic(topic)
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
			r.Topics[i].TopicID, r.Topics[i].Topic = b.n.topicID(names[i]), ""
		}
	}
	return r
}

func (b *builder) fetch() kmsg.Request {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = b.version(8)
	group := b.groupArg()
	var topics []kmsg.OffsetFetchRequestGroupTopic
	var names []string
	if hasArg(b.args, "partitions") {
		topics = []kmsg.OffsetFetchRequestGroupTopic{}
		for _, s := range b.list("partitions") {
			topic, p := b.tp(s)
			i := slices.Index(names, topic)
			if i < 0 {
				names = append(names, topic)
				topics = append(topics, kmsg.NewOffsetFetchRequestGroupTopic())
				i = len(topics) - 1
				topics[i].Topic = b.n.topic(topic)
			}
			topics[i].Partitions = append(topics[i].Partitions, p)
		}
	}
	if r.Version >= 10 {
		for i := range topics {
			topics[i].TopicID, topics[i].Topic = b.n.topicID(names[i]), ""
		}
	}
	if r.Version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.Topics = group, topics
		if r.Version >= 9 {
			g.MemberID = b.optMember("member")
			g.MemberEpoch = int32(b.int("epoch", -1))
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

// consumerHeartbeat: a join (epoch=0) sends the rebalance timeout and an
// empty owned list, as the Java consumer does; other heartbeats send
// neither unless asked (owned=() sends an empty list).
func (b *builder) consumerHeartbeat() kmsg.Request {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = b.version(1)
	r.Group = b.groupArg()
	r.MemberID = b.n.member(b.arg("member", ""))
	r.MemberEpoch = int32(b.int("epoch", 0))
	r.InstanceID = b.opt("instance")
	r.RackID = b.opt("rack")
	r.ServerAssignor = b.opt("assignor")
	r.RebalanceTimeoutMillis = -1
	if r.MemberEpoch == 0 {
		r.RebalanceTimeoutMillis = 60000
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if hasArg(b.args, "rebalance") {
		r.RebalanceTimeoutMillis = int32(b.dur("rebalance", 0).Milliseconds())
	}
	if hasArg(b.args, "subscribe") {
		r.SubscribedTopicNames = []string{}
		for _, t := range nonEmpty(b.list("subscribe")) {
			r.SubscribedTopicNames = append(r.SubscribedTopicNames, b.n.topic(t))
		}
	}
	if hasArg(b.args, "owned") {
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, s := range nonEmpty(b.list("owned")) {
			topic, p := b.tp(s)
			id := b.n.topicID(topic)
			i := slices.IndexFunc(r.Topics, func(x kmsg.ConsumerGroupHeartbeatRequestTopic) bool { return x.TopicID == id })
			if i < 0 {
				r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id})
				i = len(r.Topics) - 1
			}
			r.Topics[i].Partitions = append(r.Topics[i].Partitions, p)
		}
	}
	return r
}

// nonEmpty turns the list "()" (one empty value) into an empty list.
func nonEmpty(vs []string) []string {
	out := []string{}
	for _, v := range vs {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
