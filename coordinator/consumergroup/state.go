package consumergroup

import (
	"fmt"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/coordinator/records"
)

// Snapshot is the canonical, replayable state of every consumer group: what
// the records determine, sorted, without timers. Two Managers whose
// snapshots are Equal answer every request the same way (timers aside).
type Snapshot struct {
	Groups []GroupSnapshot
}

// GroupSnapshot is one group's state.
type GroupSnapshot struct {
	ID    string
	Epoch int32
	// MetadataHash is ConsumerGroupMetadataValue.MetadataHash (4.1+).
	MetadataHash int64
	// SubscriptionMetadata is the last PartitionMetadata value (4.0), by name.
	SubscriptionMetadata []TopicSnapshot
	// LegacyPartitionMetadata: a PartitionMetadata value awaits its tombstone.
	LegacyPartitionMetadata bool
	AssignmentEpoch         int32
	AssignmentTimestampMs   int64
	// State is Empty, Assigning, Reconciling or Stable.
	State   string
	Members []MemberSnapshot
	// Targets is the target assignment by member id.
	Targets []TargetSnapshot
	// PartitionEpochs is the owner epoch of every owned partition.
	PartitionEpochs []PartitionEpoch
	// Regexes are the resolved regular expressions, by regex.
	Regexes []RegexSnapshot
}

// RegexSnapshot is one ConsumerGroupRegularExpression value.
type RegexSnapshot struct {
	Regex              string
	Topics             []string
	Version, Timestamp int64
}

// TopicSnapshot is one topic of PartitionMetadata.
type TopicSnapshot struct {
	Name       string
	ID         TopicID
	Partitions int32
}

// MemberSnapshot is one member.
type MemberSnapshot struct {
	ID, InstanceID, RackID, ClientID, ClientHost string
	Subscribed                                   []string
	Regex                                        string
	RebalanceTimeoutMs                           int32
	ServerAssignor                               string
	Epoch, PreviousEpoch                         int32
	State                                        records.MemberState
	// Assigned and PendingRevocation carry each partition's assignment epoch.
	Assigned, PendingRevocation []PartitionEpoch
	// Classic is the classic-protocol metadata of a classic member inside
	// the consumer group, nil for a consumer-protocol member.
	Classic *ClassicSnapshot
}

// ClassicSnapshot is a classic member's ClassicMemberMetadata.
type ClassicSnapshot struct {
	SessionTimeoutMs int32
	// Protocols are the supported protocols in the member's order, each
	// name with its subscription bytes.
	Protocols []ClassicProtocolSnapshot
}

// ClassicProtocolSnapshot is one supported classic protocol.
type ClassicProtocolSnapshot struct {
	Name     string
	Metadata []byte
}

// TargetSnapshot is one member's target assignment.
type TargetSnapshot struct {
	MemberID   string
	Partitions []PartitionEpoch // Epoch unused (0)
}

// PartitionEpoch is a partition with an epoch.
type PartitionEpoch struct {
	Topic     TopicID
	Partition int32
	Epoch     int32
}

// State returns the canonical snapshot of every group.
func (m *Manager) State() Snapshot {
	var s Snapshot
	ids := make([]string, 0, len(m.rp.groups))
	for id := range m.rp.groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s.Groups = append(s.Groups, m.rp.groups[id].snapshot())
	}
	return s
}

func (g *group) snapshot() GroupSnapshot {
	gs := GroupSnapshot{
		ID:                      g.id,
		Epoch:                   g.epoch,
		MetadataHash:            g.metadataHash,
		LegacyPartitionMetadata: g.hasLegacyPartitionMetadata,
		AssignmentEpoch:         g.assignmentEpoch,
		AssignmentTimestampMs:   g.assignmentTimestampMs,
		State:                   g.state(),
	}
	for _, n := range keys(g.subscriptionMetadata) {
		t := g.subscriptionMetadata[n]
		gs.SubscriptionMetadata = append(gs.SubscriptionMetadata, TopicSnapshot{Name: n, ID: t.id, Partitions: t.partitions})
	}
	for _, id := range keys(g.members) {
		mb := g.members[id]
		gs.Members = append(gs.Members, MemberSnapshot{
			ID: mb.id, InstanceID: mb.instanceID, RackID: mb.rackID, ClientID: mb.clientID, ClientHost: mb.clientHost,
			Subscribed: slices.Clone(mb.subscribed), Regex: mb.regex, RebalanceTimeoutMs: mb.rebalanceTimeoutMs,
			ServerAssignor: mb.serverAssignor, Epoch: mb.epoch, PreviousEpoch: mb.prevEpoch, State: mb.state,
			Assigned: flatten(mb.assigned), PendingRevocation: flatten(mb.pending),
			Classic: classicSnapshot(mb.classic),
		})
	}
	for _, id := range keys(g.target) {
		ts := TargetSnapshot{MemberID: id}
		for t, ps := range g.target[id] {
			for _, p := range ps {
				ts.Partitions = append(ts.Partitions, PartitionEpoch{Topic: t, Partition: p})
			}
		}
		sortPartitions(ts.Partitions)
		gs.Targets = append(gs.Targets, ts)
	}
	gs.PartitionEpochs = flatten(g.partitionEpochs)
	for _, re := range keys(g.resolved) {
		r := g.resolved[re]
		gs.Regexes = append(gs.Regexes, RegexSnapshot{Regex: re, Topics: slices.Clone(r.topics), Version: r.version, Timestamp: r.timestamp})
	}
	return gs
}

func classicSnapshot(c *records.ClassicMemberMetadata) *ClassicSnapshot {
	if c == nil {
		return nil
	}
	out := &ClassicSnapshot{SessionTimeoutMs: c.SessionTimeoutMs}
	for _, p := range c.SupportedProtocols {
		out.Protocols = append(out.Protocols, ClassicProtocolSnapshot{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
	}
	return out
}

func flatten(a map[TopicID]map[int32]int32) []PartitionEpoch {
	var out []PartitionEpoch
	for t, ps := range a {
		for p, e := range ps {
			out = append(out, PartitionEpoch{Topic: t, Partition: p, Epoch: e})
		}
	}
	sortPartitions(out)
	return out
}

func sortPartitions(ps []PartitionEpoch) {
	slices.SortFunc(ps, func(a, b PartitionEpoch) int {
		if c := compareBytes(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
}

// Equal reports whether two snapshots hold the same state.
func (s Snapshot) Equal(o Snapshot) bool { return s.String() == o.String() }

// String renders the snapshot canonically, topic ids in Kafka's base64 form.
func (s Snapshot) String() string { return s.Format(nil) }

// Format renders the snapshot canonically; name, if not nil, renders topic
// ids (for example as topic names in conformance vectors).
func (s Snapshot) Format(name func(TopicID) string) string {
	if name == nil {
		name = func(t TopicID) string { return t.String() }
	}
	pe := func(ps []PartitionEpoch, withEpoch bool) string {
		var parts []string
		for _, p := range ps {
			if withEpoch {
				parts = append(parts, fmt.Sprintf("%s-%d@%d", name(p.Topic), p.Partition, p.Epoch))
			} else {
				parts = append(parts, fmt.Sprintf("%s-%d", name(p.Topic), p.Partition))
			}
		}
		slices.Sort(parts) // names may sort differently from ids
		return "[" + strings.Join(parts, " ") + "]"
	}
	var b strings.Builder
	if len(s.Groups) == 0 {
		return "no groups\n"
	}
	for _, g := range s.Groups {
		fmt.Fprintf(&b, "group %s: %s epoch=%d assignment-epoch=%d", g.ID, g.State, g.Epoch, g.AssignmentEpoch)
		if g.AssignmentTimestampMs != 0 {
			fmt.Fprintf(&b, " assignment-ts=%d", g.AssignmentTimestampMs)
		}
		if g.MetadataHash != 0 {
			fmt.Fprintf(&b, " metadata-hash=%016x", uint64(g.MetadataHash))
		}
		if g.LegacyPartitionMetadata {
			b.WriteString(" legacy-partition-metadata")
		}
		b.WriteString("\n")
		if len(g.SubscriptionMetadata) > 0 {
			var ts []string
			for _, t := range g.SubscriptionMetadata {
				ts = append(ts, fmt.Sprintf("%s(%s)=%d", t.Name, name(t.ID), t.Partitions))
			}
			fmt.Fprintf(&b, "  subscription-metadata: %s\n", strings.Join(ts, " "))
		}
		for _, m := range g.Members {
			fmt.Fprintf(&b, "  member %s: %s epoch=%d prev=%d assigned=%s", m.ID, m.State, m.Epoch, m.PreviousEpoch, pe(m.Assigned, true))
			if len(m.PendingRevocation) > 0 {
				fmt.Fprintf(&b, " revoking=%s", pe(m.PendingRevocation, true))
			}
			fmt.Fprintf(&b, "\n    subscribed=[%s] rebalance-timeout=%d", strings.Join(m.Subscribed, " "), m.RebalanceTimeoutMs)
			for _, kv := range [][2]string{{"instance", m.InstanceID}, {"rack", m.RackID}, {"assignor", m.ServerAssignor}, {"regex", m.Regex}, {"client", m.ClientID}, {"host", m.ClientHost}} {
				if kv[1] != "" {
					fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
				}
			}
			b.WriteString("\n")
			if c := m.Classic; c != nil {
				var ps []string
				for _, p := range c.Protocols {
					ps = append(ps, fmt.Sprintf("%s:%x", p.Name, p.Metadata))
				}
				fmt.Fprintf(&b, "    classic session-timeout=%d protocols=[%s]\n", c.SessionTimeoutMs, strings.Join(ps, " "))
			}
		}
		for _, t := range g.Targets {
			fmt.Fprintf(&b, "  target %s: %s\n", t.MemberID, pe(t.Partitions, false))
		}
		if len(g.PartitionEpochs) > 0 {
			fmt.Fprintf(&b, "  partition-epochs: %s\n", pe(g.PartitionEpochs, true))
		}
		for _, r := range g.Regexes {
			fmt.Fprintf(&b, "  regex %q: [%s] version=%d ts=%d\n", r.Regex, strings.Join(r.Topics, " "), r.Version, r.Timestamp)
		}
	}
	return b.String()
}
