package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
)

// handleOffsetCommit serves OffsetCommit (key 8): the topic checks of
// KafkaApis.handleOffsetCommitRequest, then GroupCoordinatorService.commitOffsets
// and OffsetMetadataManager.commitOffset (4.4).
//
// Topic checks (only with Config.Topics; authorization is not modelled):
// a v10 topic id the image does not know gets UNKNOWN_TOPIC_ID, an unknown
// topic name or a partition beyond the topic's count
// UNKNOWN_TOPIC_OR_PARTITION; those partitions never reach the
// coordinator, and if none is left the coordinator is not asked at all.
//
// Fencing (OffsetMetadataManager.validateOffsetCommit):
//   - unknown group: a commit with generation < 0 creates a "simple" group
//     (Empty, no protocol type); otherwise GROUP_ID_NOT_FOUND from v9,
//     ILLEGAL_GENERATION before;
//   - classic group: ClassicGroup.validateOffsetCommit (Dead,
//     member/instance, generation, REBALANCE_IN_PROGRESS in
//     CompletingRebalance);
//   - consumer group: ConsumerGroups.ValidateOffsetCommit.
//
// A validation error fails every partition the coordinator was given with
// the same code (OffsetCommitRequest.getErrorResponse). Per partition,
// metadata longer than offset.metadata.max.bytes gets
// OFFSET_METADATA_TOO_LARGE and the others are written, one
// OffsetCommitValue each: v1 when the request carried a retention time
// (v2–v4), else the profile's version (records.AsWrittenBy). A commit in
// Stable or PreparingRebalance keeps the member's session alive.
//
// A simple group whose every partition failed the size check is not
// created here; Kafka creates it in memory without writing a record, so it
// would not survive a restart either.
func (c *Coordinator) handleOffsetCommit(req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrOffsetCommitResponse()
	// The builder matches topics by id from v10 on (two unknown topic
	// ids both have the empty name), so it needs the version now, not
	// when Submit stamps the answer.
	resp.Version = req.Version
	b := commitResponseBuilder{resp: resp}
	useIDs := req.Version >= 10

	// KafkaApis: resolve and check topics against the metadata image.
	var valid []kmsg.OffsetCommitRequestTopic
	for _, t := range req.Topics {
		name, id := t.Topic, t.TopicID
		if useIDs {
			name = ""
			if c.cfg.Topics != nil {
				name, _, _ = c.cfg.Topics.TopicByID(id)
			}
			if name == "" {
				b.addAll(t, name, kerr.UnknownTopicID)
				continue
			}
		}
		if c.cfg.Topics == nil {
			vt := t
			vt.Topic = name
			valid = append(valid, vt)
			continue
		}
		metaID, partitions, ok := c.cfg.Topics.TopicByName(name)
		if !ok {
			b.addAll(t, name, kerr.UnknownTopicOrPartition)
			continue
		}
		// The topic id stored with the offset: the request's (v10), or
		// the image's for older versions too where
		// OffsetCommitResolvesTopicIDs (4.3+); 4.0 stores none.
		if !useIDs && c.profile.OffsetCommitResolvesTopicIDs {
			id = metaID
		}
		vt := kmsg.NewOffsetCommitRequestTopic()
		vt.Topic, vt.TopicID = name, id
		for _, p := range t.Partitions {
			if p.Partition < 0 || int(p.Partition) >= partitions {
				b.add(id, name, p.Partition, kerr.UnknownTopicOrPartition)
				continue
			}
			vt.Partitions = append(vt.Partitions, p)
		}
		if len(vt.Partitions) > 0 {
			valid = append(valid, vt)
		}
	}
	if len(valid) == 0 {
		return resp, nil
	}
	coordinatorResp := c.commitOffsets(req, valid)
	b.merge(coordinatorResp)
	return resp, nil
}

// commitOffsets is OffsetMetadataManager.commitOffset for the topics that
// passed the metadata checks, with GroupCoordinatorService's mapping of a
// failure to every partition.
func (c *Coordinator) commitOffsets(req *kmsg.OffsetCommitRequest, topics []kmsg.OffsetCommitRequestTopic) []kmsg.OffsetCommitResponseTopic {
	failAll := func(err *kerr.Error) []kmsg.OffsetCommitResponseTopic {
		return answerCommit(topics, func(kmsg.OffsetCommitRequestTopic, kmsg.OffsetCommitRequestTopicPartition) int16 { return err.Code })
	}
	tooLarge := func(p kmsg.OffsetCommitRequestTopicPartition) bool {
		return p.Metadata != nil && javaLength(*p.Metadata) > c.cfg.OffsetMetadataMaxBytes
	}
	generation := req.Generation
	if req.Version == 0 {
		generation = -1
	}
	g := c.classic[req.Group]
	createSimple := false
	switch {
	case g != nil:
		if err := g.validateOffsetCommit(req.MemberID, req.InstanceID, generation); err != nil {
			return failAll(asKerr(err))
		}
	default:
		if _, ok := c.consumer.Lookup(req.Group); ok {
			check := OffsetCommitCheck{
				GroupID: req.Group, MemberID: req.MemberID, InstanceID: req.InstanceID,
				MemberEpoch: generation, APIVersion: req.Version,
			}
			for _, t := range topics {
				for _, p := range t.Partitions {
					if !tooLarge(p) {
						check.Partitions = append(check.Partitions, CommitPartition{Topic: t.Topic, TopicID: t.TopicID, Partition: p.Partition})
					}
				}
			}
			if err := c.consumer.ValidateOffsetCommit(check); err != nil {
				return failAll(asKerr(err))
			}
		} else if generation < 0 {
			createSimple = true
		} else if req.Version >= 9 {
			return failAll(kerr.GroupIDNotFound)
		} else {
			return failAll(kerr.IllegalGeneration)
		}
	}
	if g != nil && (g.in(Stable) || g.in(PreparingRebalance)) {
		if m := g.member(req.MemberID); m != nil {
			c.rescheduleHeartbeat(g, m, int64(m.sessionTimeoutMs))
		}
	}
	expire := int64(-1)
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
		expire = c.now + req.RetentionTimeMillis
	}
	var recs []records.Record
	out := answerCommit(topics, func(t kmsg.OffsetCommitRequestTopic, p kmsg.OffsetCommitRequestTopicPartition) int16 {
		if tooLarge(p) {
			return kerr.OffsetMetadataTooLarge.Code
		}
		v := records.NewOffsetCommitValue(c.profile.OffsetCommitValueVersion)
		v.Offset = p.Offset
		if req.Version >= 6 {
			v.LeaderEpoch = p.LeaderEpoch
		}
		if p.Metadata != nil {
			v.Metadata = *p.Metadata
		}
		v.CommitTimestamp = c.now
		v.ExpireTimestamp = expire
		v.TopicID = t.TopicID
		recs = append(recs, records.Record{
			Key:   records.OffsetCommitKey{Group: req.Group, Topic: t.Topic, Partition: p.Partition},
			Value: v,
		})
		return 0
	})
	if createSimple && len(recs) > 0 {
		c.classic[req.Group] = newClassicGroup(req.Group, c.now)
	}
	for _, r := range recs {
		c.write(r, true)
	}
	return out
}

// answerCommit answers every partition of topics, in their order, with the
// error code code gives it.
func answerCommit(topics []kmsg.OffsetCommitRequestTopic, code func(kmsg.OffsetCommitRequestTopic, kmsg.OffsetCommitRequestTopicPartition) int16) []kmsg.OffsetCommitResponseTopic {
	var out []kmsg.OffsetCommitResponseTopic
	for _, t := range topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code(t, p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// commitResponseBuilder is OffsetCommitResponse.Builder: topics in the
// order first seen, keyed by id (v10) or name, and merge appends the
// coordinator's partitions to a topic already present.
type commitResponseBuilder struct {
	resp *kmsg.OffsetCommitResponse
}

func (b *commitResponseBuilder) topic(id [16]byte, name string) *kmsg.OffsetCommitResponseTopic {
	for i := range b.resp.Topics {
		t := &b.resp.Topics[i]
		if (b.resp.Version >= 10 && t.TopicID == id) || (b.resp.Version < 10 && t.Topic == name) {
			return t
		}
	}
	t := kmsg.NewOffsetCommitResponseTopic()
	t.Topic, t.TopicID = name, id
	b.resp.Topics = append(b.resp.Topics, t)
	return &b.resp.Topics[len(b.resp.Topics)-1]
}

func (b *commitResponseBuilder) add(id [16]byte, name string, partition int32, err *kerr.Error) {
	t := b.topic(id, name)
	p := kmsg.NewOffsetCommitResponseTopicPartition()
	p.Partition, p.ErrorCode = partition, err.Code
	t.Partitions = append(t.Partitions, p)
}

func (b *commitResponseBuilder) addAll(t kmsg.OffsetCommitRequestTopic, name string, err *kerr.Error) {
	rt := b.topic(t.TopicID, name)
	for _, p := range t.Partitions {
		rp := kmsg.NewOffsetCommitResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p.Partition, err.Code
		rt.Partitions = append(rt.Partitions, rp)
	}
}

func (b *commitResponseBuilder) merge(topics []kmsg.OffsetCommitResponseTopic) {
	if len(b.resp.Topics) == 0 {
		b.resp.Topics = topics
		return
	}
	for _, nt := range topics {
		t := b.topic(nt.TopicID, nt.Topic)
		t.Partitions = append(t.Partitions, nt.Partitions...)
	}
}
