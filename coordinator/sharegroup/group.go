package sharegroup

import (
	"slices"
)

// Member is a share group member as the group's records describe it.
type Member struct {
	ID                   string
	SubscribedTopicNames []string
	// Target is the member's target assignment (record 13), Current its
	// current assignment and epochs (record 14).
	Target      []TopicPartitions
	Current     []TopicPartitions
	MemberEpoch int32
	HasCurrent  bool
}

// Group is a share group as the group coordinator rebuilds it from
// __consumer_offsets (GroupMetadataManager.replay of the share-group
// records).
type Group struct {
	ID              string
	Epoch           int32
	MetadataHash    int64
	AssignmentEpoch int32
	Members         map[string]*Member
	// Initialized are the share-partitions whose state the group
	// coordinator has had the share coordinator initialize, by topic id.
	Initialized  map[[16]byte][]int32
	Initializing map[[16]byte][]int32
	Deleting     map[[16]byte]bool
}

// Groups replays share-group records of __consumer_offsets.
type Groups map[string]*Group

func (gs Groups) group(id string) *Group {
	g := gs[id]
	if g == nil {
		g = &Group{ID: id, Members: map[string]*Member{}, Initialized: map[[16]byte][]int32{}, Initializing: map[[16]byte][]int32{}, Deleting: map[[16]byte]bool{}}
		gs[id] = g
	}
	return g
}

func (g *Group) member(id string) *Member {
	m := g.Members[id]
	if m == nil {
		m = &Member{ID: id}
		g.Members[id] = m
	}
	return m
}

// Replay applies one record. A tombstone of the group's metadata deletes
// the group; a tombstone of a member's metadata removes the member (its
// assignment records are tombstoned with it).
func (gs Groups) Replay(r GroupRecord) {
	if r.Value == nil {
		g := gs[r.GroupID]
		if g == nil {
			return
		}
		switch r.Type {
		case TypeGroupMetadata:
			delete(gs, r.GroupID)
		case TypeMemberMetadata:
			delete(g.Members, r.MemberID)
		case TypeTargetAssignmentMember:
			if m := g.Members[r.MemberID]; m != nil {
				m.Target = nil
			}
		case TypeCurrentMemberAssignment:
			if m := g.Members[r.MemberID]; m != nil {
				m.Current, m.HasCurrent = nil, false
			}
		case TypeStatePartitionMetadata:
			g.Initialized, g.Initializing, g.Deleting = map[[16]byte][]int32{}, map[[16]byte][]int32{}, map[[16]byte]bool{}
		}
		return
	}
	g := gs.group(r.GroupID)
	switch v := r.Value.(type) {
	case *GroupMetadataValue:
		g.Epoch, g.MetadataHash = v.Epoch, v.MetadataHash
	case *MemberMetadataValue:
		g.member(r.MemberID).SubscribedTopicNames = slices.Clone(v.SubscribedTopicNames)
	case *TargetAssignmentMetadataValue:
		g.AssignmentEpoch = v.AssignmentEpoch
	case *TargetAssignmentMemberValue:
		g.member(r.MemberID).Target = v.TopicPartitions
	case *CurrentMemberAssignmentValue:
		m := g.member(r.MemberID)
		m.Current, m.MemberEpoch, m.HasCurrent = v.AssignedPartitions, v.MemberEpoch, true
	case *StatePartitionMetadataValue:
		g.Initialized, g.Initializing, g.Deleting = map[[16]byte][]int32{}, map[[16]byte][]int32{}, map[[16]byte]bool{}
		for _, t := range v.InitializedTopics {
			g.Initialized[t.TopicID] = slices.Clone(t.Partitions)
		}
		for _, t := range v.InitializingTopics {
			g.Initializing[t.TopicID] = slices.Clone(t.Partitions)
		}
		for _, t := range v.DeletingTopics {
			g.Deleting[t.TopicID] = true
		}
	}
}

// SharingBounds are what Kafka's share assignor (SimpleAssignor, the
// homogeneous builder when every member subscribes to the same topics)
// promises of an assignment of partitions partitions to members members:
// each partition is given to at most DesiredSharing members, which is
// ceil(members/partitions); every partition gets a member; and no member
// gets more than MaxPerMember partitions.
type SharingBounds struct {
	DesiredSharing int
	MaxPerMember   int
}

// Bounds returns the SimpleAssignor's bounds for members members
// subscribed to the same partitions partitions
// (SimpleHomogeneousAssignmentBuilder: desiredSharing and
// desiredAssignmentCount, 4.2–4.4).
func Bounds(members, partitions int) SharingBounds {
	if members == 0 || partitions == 0 {
		return SharingBounds{}
	}
	sharing := (members + partitions - 1) / partitions
	// desiredAssignmentCount[i] = ceil(p*(i+1)) - ceil(p*i), p = sharing*partitions/members.
	p := float64(sharing*partitions) / float64(members)
	most := 0
	for i := range members {
		most = max(most, ceilF(p*float64(i+1))-ceilF(p*float64(i)))
	}
	return SharingBounds{DesiredSharing: sharing, MaxPerMember: most}
}

func ceilF(x float64) int {
	n := int(x)
	if float64(n) < x {
		n++
	}
	return n
}
