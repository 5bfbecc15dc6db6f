package consumergroup

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// ReconcileInput is what one CurrentAssignmentBuilder step is given: one
// member, the target it is reconciled toward, and the group's view of who
// holds which partition. It lets a caller outside the state machine run the
// reconciliation alone on the same input it hands Kafka's own
// CurrentAssignmentBuilder (harness/kafkaref compares and benchmarks the
// two), without a group, records or timers around it.
type ReconcileInput struct {
	MemberID  string
	State     records.MemberState
	Epoch     int32
	PrevEpoch int32
	// Subscribed are the subscribed topic names; a step resolves the ids
	// it asks about through Topics on every Run, as CAB resolves them
	// through the metadata image on every build.
	Subscribed []string
	// Assigned and Pending are partition → assignment epoch, per topic.
	Assigned map[TopicID]map[int32]int32
	Pending  map[TopicID]map[int32]int32
	// TargetEpoch and Target are the member's target assignment.
	TargetEpoch int32
	Target      map[TopicID][]int32
	// HasSubscriptionChanged is CAB.withHasSubscriptionChanged.
	HasSubscriptionChanged bool
	Topics                 TopicMetadata
	// PartitionEpoch is CAB.withCurrentPartitionEpoch: the epoch of the
	// partition's current owner, -1 when free. Nil means every partition is
	// free.
	PartitionEpoch func(TopicID, int32) int32
	// Owned is the request's TopicPartitions; nil means the request did not
	// say (CAB then assumes the member still owns everything).
	Owned []kmsg.ConsumerGroupHeartbeatRequestTopic
}

// ReconcileOutput is the member after the step.
type ReconcileOutput struct {
	State     records.MemberState
	Epoch     int32
	PrevEpoch int32
	Assigned  map[TopicID]map[int32]int32
	Pending   map[TopicID]map[int32]int32
}

// Reconciliation is one prepared CurrentAssignmentBuilder step. Run does
// not change it, so it can be run repeatedly (a benchmark's loop).
type Reconciliation struct {
	r reconciler
	// bound: the subscription changed and, from 4.2, bounds the
	// assignment (KAFKA-19431).
	bound bool
	// same is the member as given, what Run returns when it leaves the
	// member as it is (CAB.build returns the very member it was given).
	same ReconcileOutput
}

// NewReconciliation prepares the step under the behaviour of profile p.
// The maps of in are used as given, not copied: do not change them while
// the Reconciliation is in use.
func NewReconciliation(p version.Profile, in ReconcileInput) *Reconciliation {
	m := newMember(in.MemberID)
	m.state, m.epoch, m.prevEpoch = in.State, in.Epoch, in.PrevEpoch
	m.setSubscribed(slices.Sorted(slices.Values(in.Subscribed)))
	if in.Assigned != nil {
		m.assigned = in.Assigned
	}
	if in.Pending != nil {
		m.pending = in.Pending
	}
	epochOf := in.PartitionEpoch
	if epochOf == nil {
		epochOf = func(TopicID, int32) int32 { return -1 }
	}
	return &Reconciliation{
		same: ReconcileOutput{State: m.state, Epoch: m.epoch, PrevEpoch: m.prevEpoch, Assigned: m.assigned, Pending: m.pending},
		r: reconciler{
			profile:                p,
			member:                 m,
			targetEpoch:            in.TargetEpoch,
			target:                 in.Target,
			sub:                    subscription{topics: orEmpty(in.Topics), member: m},
			hasSubscriptionChanged: in.HasSubscriptionChanged,
			partitionEpoch:         epochOf,
			owned:                  in.Owned,
		},
		bound: p.SubscriptionBoundsAssignment && in.HasSubscriptionChanged,
	}
}

// Run is CurrentAssignmentBuilder.build(): the next state of the member,
// its subscription resolved to topic ids as the step asks about them (the
// view CAB gets from TopicIds). The error is an *Error
// (FENCED_MEMBER_EPOCH) for a member in an unknown state that still claims
// partitions. The output is read-only, and its maps may share the input's;
// a member left as it is comes back as the same output every time.
func (x *Reconciliation) Run() (*ReconcileOutput, error) {
	m := x.r.member
	// As the heartbeat does: a member reconciled to the target whose
	// subscription did not change is left as it is (CAB.build returns it
	// too).
	if x.bound || m.state != records.MemberStable || m.epoch != x.r.targetEpoch {
		return x.build()
	}
	return &x.same, nil
}

func (x *Reconciliation) build() (*ReconcileOutput, error) {
	s, changed, err := x.r.next()
	if err != nil {
		return nil, err
	}
	if !changed {
		return &x.same, nil
	}
	return &ReconcileOutput{State: s.state, Epoch: s.epoch, PrevEpoch: s.prevEpoch, Assigned: s.assigned, Pending: s.pending}, nil
}
