package consumergroup

import (
	"slices"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TargetAssignmentInput is what one TargetAssignmentBuilder.build is
// given: a group's members with their subscriptions and current targets,
// and the member that joins or changes. It lets a caller outside the state
// machine run the target assignment alone on the input it hands Kafka's own
// TargetAssignmentBuilder (harness/kafkaref compares and benchmarks the
// two, as Kafka's TargetAssignmentBuilderBenchmark), without records or
// timers around it. The assignor is the configuration's default unless a
// member asks for another (Config.Assignors).
type TargetAssignmentInput struct {
	GroupID    string
	GroupEpoch int32
	// SubscriptionType is the group's (Kafka's ConsumerGroup computes it
	// from the members' subscriptions).
	SubscriptionType assignor.SubscriptionType
	// Members are the group's members in the order they joined (Kafka's
	// TimelineHashMap order, which decides ties of the HashMap order the
	// builder iterates them in).
	Members []TargetMember
	// Updated joins the group, or replaces the member of its id.
	Updated TargetMember
	Topics  TopicMetadata
}

// TargetMember is one member of a TargetAssignmentInput.
type TargetMember struct {
	ID         string
	InstanceID string // "" means none
	RackID     string
	Subscribed []string
	// Target is the member's current target assignment (nil: none yet).
	Target map[TopicID][]int32
}

// TargetAssignment is one prepared TargetAssignmentBuilder.build. Run does
// not change what it computes from, so it can be run repeatedly (a
// benchmark's loop); like Kafka's group, which keeps every member's target
// as the Assignment object the assignor iterates, it keeps each previous
// target as the list the assignor is handed once asked for.
type TargetAssignment struct {
	m            *Manager
	g            *group
	topics       TopicMetadata
	epoch        int32
	subType      assignor.SubscriptionType
	old, updated *member
}

// NewTargetAssignment prepares the build under the behaviour of profile p
// and the coordinator configuration cfg (its assignors and JavaVersion).
func NewTargetAssignment(p version.Profile, cfg Config, in TargetAssignmentInput) (*TargetAssignment, error) {
	m, err := New(p, cfg)
	if err != nil {
		return nil, err
	}
	g := newGroup(in.GroupID, in.GroupEpoch)
	newMb := func(tm TargetMember) *member {
		mb := newMember(tm.ID)
		mb.instanceID, mb.rackID = tm.InstanceID, tm.RackID
		mb.setSubscribed(sortedSet(tm.Subscribed))
		return mb
	}
	// The group's members as replaying their records leaves them.
	newGroupMb := func(tm TargetMember) *member {
		mb := newMb(tm)
		mb.setSubscribed(g.internSubscription(mb.subscribed))
		return mb
	}
	sortedTarget := func(a map[TopicID][]int32) map[TopicID][]int32 {
		out := make(map[TopicID][]int32, len(a))
		for t, ps := range a {
			out[t] = slices.Compact(slices.Sorted(slices.Values(ps)))
		}
		return out
	}
	for _, tm := range in.Members {
		mb := newGroupMb(tm)
		g.members[mb.id] = mb
		g.countMember(mb, 1)
		g.order = append(g.order, mb.id)
		if mb.instanceID != "" {
			g.staticMembers[mb.instanceID] = mb.id
		}
		if tm.Target != nil {
			g.target[mb.id] = sortedTarget(tm.Target)
		}
	}
	x := &TargetAssignment{m: m, g: g, topics: orEmpty(in.Topics), epoch: in.GroupEpoch, subType: in.SubscriptionType,
		old: g.members[in.Updated.ID], updated: newMb(in.Updated)}
	return x, nil
}

// TargetAssignmentOutput is the result of one build.
type TargetAssignmentOutput struct {
	// Target is the updated member's new target.
	Target map[TopicID][]int32
	// Records are the target records of the members whose target changed,
	// then the target metadata record.
	Records []records.Record
}

// Run is TargetAssignmentBuilder.build(). The error is an *Error
// (UNKNOWN_SERVER_ERROR) when the assignor fails.
func (x *TargetAssignment) Run() (TargetAssignmentOutput, error) {
	mine, recs, err := x.m.buildTarget(x.g, x.topics, x.epoch, x.old, x.updated, x.subType, 0)
	if err != nil {
		return TargetAssignmentOutput{}, err
	}
	return TargetAssignmentOutput{Target: mine, Records: recs}, nil
}
