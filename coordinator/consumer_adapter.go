package coordinator

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
)

// ConsumerGroupsLoader is an optional extension of ConsumerGroups: an
// engine that keeps timers beside its state re-arms them when the shell
// finishes loading a log (GMM.onLoaded arms a session timeout for every
// consumer-group member and a rebalance timeout for every member in
// UNREVOKED_PARTITIONS). Records it returns follow the rules of
// ConsumerGroups: shaped and already applied.
type ConsumerGroupsLoader interface {
	Loaded(now time.Time) []records.Record
}

// managerGroups serves the ConsumerGroups seam with package consumergroup's
// Manager, the KIP-848 half of Kafka's GroupMetadataManager. The two halves
// were built apart: consumergroup cannot import this package, so its
// arguments have their own types. The method sets of ClassicGroups and
// TopicMetadata are the same on both sides, so those values pass through
// unchanged (a PartitionRacks behind a TopicMetadata stays visible).
//
// The Manager already keeps rule 2 of ConsumerGroups: Heartbeat, Tick and
// Delete return records shaped with records.AsWrittenBy and already
// replayed into it, so the shell only appends them to the log.
type managerGroups struct {
	m *consumergroup.Manager
}

// NewConsumerGroups returns the ConsumerGroups seam served by m. New uses
// it for the default engine; a caller that wants to reach the Manager
// itself (NextDeadline, TickVerbose) builds one and passes the result in
// Config.ConsumerGroups.
func NewConsumerGroups(m *consumergroup.Manager) ConsumerGroups {
	return managerGroups{m: m}
}

// Heartbeat implements ConsumerGroups.
func (a managerGroups) Heartbeat(now time.Time, client Client, classic ClassicGroups, topics TopicMetadata, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, []records.Record) {
	rc := consumergroup.RequestContext{ClientID: client.ID, ClientHost: client.Host}
	if classic != nil {
		rc.Classic = classic
	}
	return a.m.Heartbeat(now, rc, req, cgTopics(topics))
}

// setShell gives the Manager the shell's classic groups, for the
// downgrades its timers and LeaveGroup trigger (New calls it).
func (a managerGroups) setShell(c ClassicGroups) { a.m.SetClassicGroups(c) }

// ClassicJoin implements ClassicMembers.
func (a managerGroups) ClassicJoin(now time.Time, client Client, topics TopicMetadata, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, []records.Record) {
	return a.m.ClassicJoin(now, consumergroup.RequestContext{ClientID: client.ID, ClientHost: client.Host}, req, cgTopics(topics))
}

// ClassicSync implements ClassicMembers.
func (a managerGroups) ClassicSync(now time.Time, topics TopicMetadata, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	return a.m.ClassicSync(now, req, cgTopics(topics))
}

// ClassicHeartbeat implements ClassicMembers.
func (a managerGroups) ClassicHeartbeat(now time.Time, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	return a.m.ClassicHeartbeat(now, req)
}

// ClassicLeave implements ClassicMembers.
func (a managerGroups) ClassicLeave(now time.Time, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, []records.Record) {
	return a.m.ClassicLeave(now, req)
}

// Describe implements ConsumerGroups.
func (a managerGroups) Describe(now time.Time, topics TopicMetadata, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	resp.Groups = a.m.Describe(now, req.Groups, cgTopics(topics))
	return resp
}

// Replay implements ConsumerGroups.
func (a managerGroups) Replay(r records.Record) error { return a.m.Replay(r) }

// Tick implements ConsumerGroups.
func (a managerGroups) Tick(now time.Time) []records.Record { return a.m.Tick(now) }

// Loaded implements ConsumerGroupsLoader: the Manager only re-arms timers,
// it writes nothing.
func (a managerGroups) Loaded(now time.Time) []records.Record {
	a.m.Loaded(now)
	return nil
}

// Lookup implements ConsumerGroups. Described stays nil: from 4.0,
// GMM.describeGroups answers GROUP_ID_NOT_FOUND ("is not a classic
// group") for a consumer group.
func (a managerGroups) Lookup(groupID string) (ConsumerGroupInfo, bool) {
	info, ok := a.m.Info(groupID)
	if !ok {
		return ConsumerGroupInfo{}, false
	}
	subscribed := make(map[string]bool, len(info.SubscribedTopics))
	for _, t := range info.SubscribedTopics {
		subscribed[t] = true
	}
	return ConsumerGroupInfo{State: info.State, Empty: info.Members == 0, SubscribedTopics: subscribed}, true
}

// GroupIDs implements ConsumerGroups.
func (a managerGroups) GroupIDs() []string { return a.m.GroupIDs() }

// ValidateOffsetCommit implements ConsumerGroups.
func (a managerGroups) ValidateOffsetCommit(c OffsetCommitCheck) error {
	check := consumergroup.OffsetCommitCheck{
		GroupID:     c.GroupID,
		MemberID:    c.MemberID,
		MemberEpoch: c.MemberEpoch,
		APIVersion:  c.APIVersion,
	}
	if c.InstanceID != nil {
		check.InstanceID = *c.InstanceID
	}
	for _, p := range c.Partitions {
		check.Partitions = append(check.Partitions, consumergroup.CommitPartition{Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition})
	}
	return groupNotFound(c.GroupID, a.m.ValidateOffsetCommit(check))
}

// ValidateOffsetFetch implements ConsumerGroups.
func (a managerGroups) ValidateOffsetFetch(groupID string, memberID *string, memberEpoch int32) error {
	return groupNotFound(groupID, a.m.ValidateOffsetFetch(groupID, memberID, memberEpoch))
}

// Delete implements ConsumerGroups.
func (a managerGroups) Delete(groupID string) ([]records.Record, error) {
	recs, err := a.m.Delete(groupID)
	return recs, groupNotFound(groupID, err)
}

// State implements ConsumerGroups: the Manager's canonical snapshot, topic
// ids in hex (the log holds ids, not names), and "" when there is no
// consumer group, as NoConsumerGroups says it.
func (a managerGroups) State() string {
	s := a.m.State()
	if len(s.Groups) == 0 {
		return ""
	}
	return s.String()
}

// groupNotFound gives consumergroup.ErrGroupNotFound, which carries no
// Kafka error, the one Kafka answers for an id that is not a consumer
// group (GroupIdNotFoundException), so that rule 4 of ConsumerGroups
// holds. Other errors already wrap their kerr error.
func groupNotFound(groupID string, err error) error {
	if errors.Is(err, consumergroup.ErrGroupNotFound) {
		return fmt.Errorf("group %q is not a consumer group: %w", groupID, kerr.GroupIDNotFound)
	}
	return err
}

// cgTopics passes the shell's metadata image on; a nil image stays nil
// (the Manager reads nil as a cluster without topics).
func cgTopics(t TopicMetadata) consumergroup.TopicMetadata {
	if t == nil {
		return nil
	}
	return t
}
