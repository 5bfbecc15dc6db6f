package vectors

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Arg is one argument of a vector command: key=val or key=(val,…). It
// mirrors datadriven.CmdArg, which this package may not import (the
// coordinator is a leaf, see layout_test.go).
type Arg struct {
	Key  string
	Vals []string
}

// Args are the arguments of one command.
type Args []Arg

// Has reports whether the argument key is given.
func (as Args) Has(key string) bool {
	return slices.ContainsFunc(as, func(a Arg) bool { return a.Key == key })
}

// Val is the first value of key, "" for a key without values, def when
// key is absent.
func (as Args) Val(key, def string) string {
	for _, a := range as {
		if a.Key == key {
			if len(a.Vals) == 0 {
				return ""
			}
			return a.Vals[0]
		}
	}
	return def
}

// List is every value of key, nil when key is absent.
func (as Args) List(key string) []string {
	for _, a := range as {
		if a.Key == key {
			return a.Vals
		}
	}
	return nil
}

// ClientID is the client.id a command's request carries (client=, default c).
func ClientID(args Args) string { return args.Val("client", "c") }

// Request builds the request of a vector command, with the vectors'
// defaults, through n. ok is false for commands that are not requests
// (new, tick, state, …); err says which argument was malformed.
//
// Commands and their arguments:
//
//	join group=g [member=] [instance=] [session=10s] [rebalance=10s] [v=9]
//	  [type=consumer] [protocols=(range,…)|none] [meta=m] [topics=(t,…)]
//	  [owned=(t/0,…)]
//	  (a protocol written name:meta carries its own metadata; owned makes
//	  the subscription a v1 ConsumerProtocolSubscription that names them)
//	sync group=g member= gen= [instance=] [v=5] [assign=(member:bytes,…)] [ptype=] [pname=]
//	  (bytes written @t/0+t/1 are a ConsumerProtocolAssignment of those partitions)
//	heartbeat group=g member= gen= [instance=] [v=4]
//	leave group=g [member=] | members=(memberID/instance,…) [v=5]
//	  (a member written "/i1" is removed by instance id only)
//	describe groups=(…) [v=5]
//	list [states=(…)] [types=(…)] [v=5]
//	delete groups=(…) [v=2]
//	commit group=g [member=] [gen=-1] [instance=] [v=9] [retention=-1]
//	  offsets=(t/0=10,…) [metadata=] [metadata-size=N]
//	  (an offset written t/0=10@3 carries leader epoch 3)
//	fetch group=g [partitions=(t/0,…)] [v=8] [member= epoch=] (v9+);
//	  without partitions, all offsets
//	offset-delete group=g partitions=(t/0,…)
//	cg-heartbeat group=g member= epoch=
//	consumer-group-heartbeat group=g member= epoch= [subscribe=(t,…)]
//	  [regex=] [owned=(t/0,…)] [instance=] [rack=] [assignor=] [rebalance=60s] [v=1] [raw]
//	  (regex= with no value sends an empty regex, which drops the member's;
//	  raw sends a join without the defaults a Java consumer's join carries)
//	consumer-group-describe groups=(…) [v=0]
//	share-group-heartbeat group=g member= epoch= [subscribe=(t,…)] [rack=] [v=1]
//	  (subscribe= with no topics sends an empty list; without it, null)
//	share-group-describe groups=(…) [v=1]
func Request(n Names, cmd string, args Args) (req kmsg.Request, ok bool, err error) {
	b := &builder{n: n, args: args}
	switch cmd {
	case "join":
		req = b.join()
	case "sync":
		req = b.sync()
	case "heartbeat":
		r := kmsg.NewPtrHeartbeatRequest()
		r.Version = b.version(4)
		r.Group = b.group()
		r.MemberID = b.member()
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
		r.StatesFilter = b.args.List("states")
		r.TypesFilter = b.args.List("types")
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
		r.Group = b.group()
		_, r.Topics = byTopic(b, b.args.List("partitions"), n.Topic,
			func(topic, _ string) kmsg.OffsetDeleteRequestTopic {
				t := kmsg.NewOffsetDeleteRequestTopic()
				t.Topic = topic
				return t
			},
			func(t *kmsg.OffsetDeleteRequestTopic, p int32) {
				rp := kmsg.NewOffsetDeleteRequestTopicPartition()
				rp.Partition = p
				t.Partitions = append(t.Partitions, rp)
			})
		req = r
	case "cg-heartbeat":
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group = b.group()
		r.MemberID = b.member()
		r.MemberEpoch = int32(b.int("epoch", 0))
		req = r
	case "consumer-group-heartbeat":
		req = b.consumerHeartbeat()
	case "consumer-group-describe":
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		r.Version = b.version(0)
		r.Groups = b.groups("groups")
		req = r
	case "share-group-heartbeat":
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.Version = b.version(1)
		r.GroupID = b.group()
		r.MemberID = b.member()
		r.MemberEpoch = int32(b.int("epoch", 0))
		r.RackID = b.opt("rack")
		r.SubscribedTopicNames = b.subscribed()
		req = r
	case "share-group-describe":
		r := kmsg.NewPtrShareGroupDescribeRequest()
		r.Version = b.version(1)
		r.GroupIDs = b.groups("groups")
		req = r
	default:
		return nil, false, nil
	}
	if b.err != nil {
		return nil, true, fmt.Errorf("%s: %v", cmd, b.err)
	}
	return req, true, nil
}

// builder reads one command's arguments; the first malformed one is kept
// in err.
type builder struct {
	n    Names
	args Args
	err  error
}

func (b *builder) opt(key string) *string {
	if !b.args.Has(key) {
		return nil
	}
	s := b.args.Val(key, "")
	return &s
}

func (b *builder) int(key string, def int) int {
	return parseArg(b, key, def, strconv.Atoi, "an integer")
}

func (b *builder) version(def int) int16 { return int16(b.int("v", def)) }

func (b *builder) dur(key string, def time.Duration) time.Duration {
	return parseArg(b, key, def, time.ParseDuration, "a duration such as 10s")
}

// parseArg parses the argument key, def when it is absent or has no value;
// the first malformed value is kept in b.err, saying what was wanted.
func parseArg[T any](b *builder, key string, def T, parse func(string) (T, error), want string) T {
	s := b.args.Val(key, "")
	if s == "" {
		return def
	}
	v, err := parse(s)
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("%s=%q: want %s", key, s, want)
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
	m := b.n.Member(*s)
	return &m
}

// group is the group= argument (default g) in the side's names.
func (b *builder) group() string { return b.n.Group(b.args.Val("group", "g")) }

// member is the member= argument (default "") in the side's names.
func (b *builder) member() string { return b.n.Member(b.args.Val("member", "")) }

// subscribed maps the subscribe= topics: nil when the argument is absent
// (the request sends null), an empty list for subscribe=().
func (b *builder) subscribed() []string {
	if !b.args.Has("subscribe") {
		return nil
	}
	out := []string{}
	for _, t := range nonEmpty(b.args.List("subscribe")) {
		out = append(out, b.n.Topic(t))
	}
	return out
}

// groups maps a list of groups; an absent list stays nil.
func (b *builder) groups(key string) []string {
	vs := b.args.List(key)
	if vs == nil {
		return nil
	}
	out := make([]string, 0, len(vs))
	for _, g := range vs {
		out = append(out, b.n.Group(g))
	}
	return out
}

func (b *builder) join() kmsg.Request {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = b.version(9)
	r.Group = b.group()
	r.MemberID = b.member()
	r.InstanceID = b.opt("instance")
	r.SessionTimeoutMillis = int32(b.dur("session", 10*time.Second).Milliseconds())
	r.RebalanceTimeoutMillis = int32(b.dur("rebalance", 10*time.Second).Milliseconds())
	r.ProtocolType = b.args.Val("type", "consumer")
	meta := []byte(b.args.Val("meta", "m"))
	if b.args.Has("topics") {
		var ts []string
		for _, t := range b.args.List("topics") {
			ts = append(ts, b.n.Topic(t))
		}
		meta = Subscription(ts)
		if b.args.Has("owned") {
			// ConsumerProtocolSubscription v1 with the partitions the
			// member owns, which a consumer group reconciles a classic
			// member with (GMM.classicGroupJoinToConsumerGroup).
			sub := kmsg.NewConsumerMemberMetadata()
			sub.Version, sub.Topics = 1, ts
			_, sub.OwnedPartitions = byTopic(b, b.args.List("owned"), b.n.Topic,
				func(topic, _ string) kmsg.ConsumerMemberMetadataOwnedPartition {
					return kmsg.ConsumerMemberMetadataOwnedPartition{Topic: topic}
				},
				func(o *kmsg.ConsumerMemberMetadataOwnedPartition, p int32) { o.Partitions = append(o.Partitions, p) })
			meta = sub.AppendTo(nil)
		}
	}
	protos := []string{"range"}
	if b.args.Has("protocols") {
		protos = b.args.List("protocols")
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

// Subscription is ConsumerProtocolSubscription v0: version, topics, null
// user data.
func Subscription(topics []string) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(topics)))
	for _, t := range topics {
		b = binary.BigEndian.AppendUint16(b, uint16(len(t)))
		b = append(b, t...)
	}
	return binary.BigEndian.AppendUint32(b, 0xffffffff)
}

// ParseSubscription reverses Subscription; ok is false for anything else.
func ParseSubscription(b []byte) ([]string, bool) {
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
	r.Group = b.group()
	r.MemberID = b.member()
	r.Generation = int32(b.int("gen", 0))
	r.InstanceID = b.opt("instance")
	r.ProtocolType = b.opt("ptype")
	r.Protocol = b.opt("pname")
	for _, a := range b.args.List("assign") {
		m, v, _ := strings.Cut(a, ":")
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = b.n.Member(m), []byte(v)
		if tps, ok := strings.CutPrefix(v, "@"); ok {
			// A ConsumerProtocolAssignment v0 of the partitions, as a
			// consumer leader writes it.
			ca := kmsg.NewConsumerMemberAssignment()
			_, ca.Topics = byTopic(b, nonEmpty(strings.Split(tps, "+")), b.n.Topic,
				func(topic, _ string) kmsg.ConsumerMemberAssignmentTopic {
					return kmsg.ConsumerMemberAssignmentTopic{Topic: topic}
				},
				func(t *kmsg.ConsumerMemberAssignmentTopic, p int32) { t.Partitions = append(t.Partitions, p) })
			ga.MemberAssignment = ca.AppendTo(nil)
		}
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

func (b *builder) leave() kmsg.Request {
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version = b.version(5)
	r.Group = b.group()
	if r.Version < 3 {
		r.MemberID = b.member()
		return r
	}
	ms := b.args.List("members")
	if b.args.Has("member") {
		ms = append(ms, b.args.Val("member", ""))
	}
	for _, s := range ms {
		m := kmsg.NewLeaveGroupRequestMember()
		id, inst, ok := strings.Cut(s, "/")
		m.MemberID = b.n.Member(id)
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
	r.Group = b.group()
	r.MemberID = b.member()
	r.Generation = int32(b.int("gen", -1))
	r.InstanceID = b.opt("instance")
	r.RetentionTimeMillis = int64(b.int("retention", -1))
	md := b.opt("metadata")
	if n := b.int("metadata-size", -1); n >= 0 {
		s := strings.Repeat("x", n)
		md = &s
	}
	var names []string // as the vector writes them, for topic ids
	for _, s := range b.args.List("offsets") {
		tp, off, _ := strings.Cut(s, "=")
		off, epoch, hasEpoch := strings.Cut(off, "@")
		topic, p := b.tp(tp)
		i := at(&names, &r.Topics, topic, func() kmsg.OffsetCommitRequestTopic {
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = b.n.Topic(topic)
			return t
		})
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
			r.Topics[i].TopicID, r.Topics[i].Topic = b.n.TopicID(names[i]), ""
		}
	}
	return r
}

func (b *builder) fetch() kmsg.Request {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = b.version(8)
	group := b.group()
	var topics []kmsg.OffsetFetchRequestGroupTopic
	var names []string
	if b.args.Has("partitions") {
		var listed []kmsg.OffsetFetchRequestGroupTopic
		names, listed = byTopic(b, b.args.List("partitions"), func(topic string) string { return topic },
			func(_, topic string) kmsg.OffsetFetchRequestGroupTopic {
				t := kmsg.NewOffsetFetchRequestGroupTopic()
				t.Topic = b.n.Topic(topic)
				return t
			},
			func(t *kmsg.OffsetFetchRequestGroupTopic, p int32) { t.Partitions = append(t.Partitions, p) })
		topics = append([]kmsg.OffsetFetchRequestGroupTopic{}, listed...)
	}
	if r.Version >= 10 {
		for i := range topics {
			topics[i].TopicID, topics[i].Topic = b.n.TopicID(names[i]), ""
		}
	}
	if r.Version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.Topics = group, topics
		if r.Version >= 9 {
			// KIP-848: a consumer-group member fetches with its id and epoch.
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
// empty owned list, as the Java consumer does, unless raw is given; other
// heartbeats send neither unless asked (owned=() sends an empty list, no
// owned sends null).
func (b *builder) consumerHeartbeat() kmsg.Request {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = b.version(1)
	r.Group = b.group()
	r.MemberID = b.member()
	r.MemberEpoch = int32(b.int("epoch", 0))
	r.InstanceID = b.opt("instance")
	r.RackID = b.opt("rack")
	r.ServerAssignor = b.opt("assignor")
	r.RebalanceTimeoutMillis = -1
	if r.MemberEpoch == 0 && !b.args.Has("raw") {
		r.RebalanceTimeoutMillis = 60000
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if b.args.Has("rebalance") {
		r.RebalanceTimeoutMillis = int32(b.dur("rebalance", 0).Milliseconds())
	}
	r.SubscribedTopicNames = b.subscribed()
	if b.args.Has("regex") {
		re := b.n.Regex(b.args.Val("regex", ""))
		r.SubscribedTopicRegex = &re
	}
	if b.args.Has("owned") {
		_, owned := byTopic(b, nonEmpty(b.args.List("owned")), b.n.TopicID,
			func(id [16]byte, _ string) kmsg.ConsumerGroupHeartbeatRequestTopic {
				return kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id}
			},
			func(t *kmsg.ConsumerGroupHeartbeatRequestTopic, p int32) { t.Partitions = append(t.Partitions, p) })
		r.Topics = append([]kmsg.ConsumerGroupHeartbeatRequestTopic{}, owned...)
	}
	return r
}

// byTopic reads topic/partition arguments and groups their partitions by
// key(topic), in the order the keys first appear: add makes the element of
// a new key (topic as the vector writes it), addPartition adds a partition
// to an element. It returns the keys and the elements, nil for no
// arguments.
func byTopic[K comparable, T any](b *builder, args []string, key func(topic string) K, add func(k K, topic string) T, addPartition func(*T, int32)) ([]K, []T) {
	var keys []K
	var out []T
	for _, s := range args {
		topic, p := b.tp(s)
		k := key(topic)
		i := at(&keys, &out, k, func() T { return add(k, topic) })
		addPartition(&out[i], p)
	}
	return keys, out
}

// at returns the index in *list of the element for key, appending one that
// add makes when key is new; *keys holds the key of each element of *list.
func at[K comparable, T any](keys *[]K, list *[]T, key K, add func() T) int {
	i := slices.Index(*keys, key)
	if i < 0 {
		*keys = append(*keys, key)
		*list = append(*list, add())
		i = len(*list) - 1
	}
	return i
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
