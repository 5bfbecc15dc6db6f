package assign

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The classic "consumer" protocol embeds two small structures in JoinGroup
// and SyncGroup: ConsumerProtocolSubscription (versions 0–3) and
// ConsumerProtocolAssignment (0–3), both an int16 version followed by
// non-flexible fields (Java internals/ConsumerProtocol.java and the JSON
// schemas in clients/src/main/resources/common/message/). kmsg's
// ConsumerMemberMetadata and ConsumerMemberAssignment carry them.

// HighestProtocolVersion is the highest ConsumerProtocolSubscription and
// ConsumerProtocolAssignment version in Kafka 4.x.
const HighestProtocolVersion = 3

// Subscription is a decoded ConsumerProtocolSubscription.
type Subscription struct {
	// Version is the version it was (or is to be) encoded with. Java
	// decodes a higher version than it knows as its highest one.
	Version int16
	Topics  []string
	// UserData is the assignor's opaque data (nil is distinct from empty
	// on the wire: a nullable bytes field).
	UserData []byte
	// Owned is ownedPartitions (v1+), topic → partitions.
	Owned map[string][]int32
	// Generation is generationId (v2+); -1 when absent.
	Generation int32
	// Rack is rackId (v3+); nil when absent.
	Rack *string
}

// Member turns a subscription from a JoinGroup response member into the
// assignors' input, the way Java's ConsumerProtocol.deserializeSubscription
// and ConsumerCoordinator.onLeaderElected do: an empty rack is no rack.
func (s Subscription) Member(memberID string, instanceID *string) Member {
	m := Member{
		ID:         memberID,
		InstanceID: instanceID,
		Topics:     s.Topics,
		Owned:      s.Owned,
		Generation: s.Generation,
		UserData:   s.UserData,
	}
	if s.Rack != nil {
		m.Rack = *s.Rack
	}
	return m
}

// EncodeSubscription encodes s with s.Version, which must be 0–3. Topics
// are written sorted and owned partitions grouped by topic in topic and
// partition order, as Java's serializeSubscription writes them; fields the
// version lacks are dropped.
func EncodeSubscription(s Subscription) ([]byte, error) {
	if err := encodable(s.Version, "subscription", "ConsumerProtocolSubscription"); err != nil {
		return nil, err
	}
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = s.Version
	meta.Topics = slices.Clone(s.Topics)
	slices.SortFunc(meta.Topics, javaCompare)
	meta.UserData = s.UserData
	for _, op := range sortedTopics(s.Owned) {
		meta.OwnedPartitions = append(meta.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition(op))
	}
	meta.Generation = s.Generation
	meta.Rack = s.Rack
	return meta.AppendTo(nil), nil
}

// sortedTopics lists parts as the consumer protocol does, topics in order
// and each topic's partitions in order (the owned partitions of a
// subscription have the same fields: the type converts).
func sortedTopics(parts map[string][]int32) []kmsg.ConsumerMemberAssignmentTopic {
	var out []kmsg.ConsumerMemberAssignmentTopic
	for _, t := range sortedKeys(parts) {
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic = t
		at.Partitions = slices.Sorted(slices.Values(parts[t]))
		out = append(out, at)
	}
	return out
}

// encodable checks that version v of a consumer protocol what
// ("subscription", "assignment"; schema names its message) can be written.
func encodable(v int16, what, schema string) error {
	if v < 0 || v > HighestProtocolVersion {
		return fmt.Errorf("%s version %d: %s versions are 0–%d", what, v, schema, HighestProtocolVersion)
	}
	return nil
}

// checkVersion checks that b starts with the int16 version of a consumer
// protocol what ("subscription", "assignment"; schema names its message)
// and that the version is not negative, as Java requires.
func checkVersion(b []byte, what, schema string) error {
	if len(b) < 2 {
		return fmt.Errorf("%s is %d bytes: too short for the int16 version", what, len(b))
	}
	if v := int16(binary.BigEndian.Uint16(b)); v < 0 {
		return fmt.Errorf("%s version %d: %s versions start at 0", what, v, schema)
	}
	return nil
}

// DecodeSubscription decodes a JoinGroup member's protocol metadata. It
// fails on a negative version (as Java does) and on truncated input.
// Owned partitions listed under the same topic twice are merged.
func DecodeSubscription(b []byte) (Subscription, error) {
	if err := checkVersion(b, "subscription", "ConsumerProtocolSubscription"); err != nil {
		return Subscription{}, err
	}
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(b); err != nil {
		return Subscription{}, fmt.Errorf("malformed consumer protocol subscription (%d bytes, version %d): %w", len(b), meta.Version, err)
	}
	s := Subscription{
		Version:    meta.Version,
		Topics:     meta.Topics,
		UserData:   meta.UserData,
		Generation: meta.Generation,
		Rack:       meta.Rack,
	}
	for _, op := range meta.OwnedPartitions {
		if s.Owned == nil {
			s.Owned = map[string][]int32{}
		}
		s.Owned[op.Topic] = append(s.Owned[op.Topic], op.Partitions...)
	}
	return s, nil
}

// MemberAssignment is a decoded ConsumerProtocolAssignment: what SyncGroup
// hands one member.
type MemberAssignment struct {
	Version    int16
	Partitions map[string][]int32
	UserData   []byte
}

// EncodeAssignment encodes a with a.Version (0–3), topics and partitions
// sorted.
func EncodeAssignment(a MemberAssignment) ([]byte, error) {
	if err := encodable(a.Version, "assignment", "ConsumerProtocolAssignment"); err != nil {
		return nil, err
	}
	m := kmsg.NewConsumerMemberAssignment()
	m.Version = a.Version
	m.Topics = sortedTopics(a.Partitions)
	m.UserData = a.UserData
	return m.AppendTo(nil), nil
}

// DecodeAssignment decodes a SyncGroup assignment. An empty byte slice is
// the empty assignment (the coordinator sends nothing to a member the
// leader left out); otherwise it fails on a negative version or truncated
// input. Topics listed twice are merged.
func DecodeAssignment(b []byte) (MemberAssignment, error) {
	if len(b) == 0 {
		return MemberAssignment{}, nil
	}
	if err := checkVersion(b, "assignment", "ConsumerProtocolAssignment"); err != nil {
		return MemberAssignment{}, err
	}
	var m kmsg.ConsumerMemberAssignment
	if err := m.ReadFrom(b); err != nil {
		return MemberAssignment{}, fmt.Errorf("malformed consumer protocol assignment (%d bytes, version %d): %w", len(b), m.Version, err)
	}
	a := MemberAssignment{Version: m.Version, UserData: m.UserData}
	for _, t := range m.Topics {
		if a.Partitions == nil {
			a.Partitions = map[string][]int32{}
		}
		a.Partitions[t.Topic] = append(a.Partitions[t.Topic], t.Partitions...)
	}
	return a, nil
}

// AssignmentFor builds the SyncGroup payloads of a plan, one per member,
// at the given version.
func AssignmentFor(plan Assignment, version int16) (map[string][]byte, error) {
	out := make(map[string][]byte, len(plan))
	for member, parts := range plan {
		b, err := EncodeAssignment(MemberAssignment{Version: version, Partitions: parts})
		if err != nil {
			return nil, err
		}
		out[member] = b
	}
	return out, nil
}

// StickyUserData is the user data of the eager "sticky" assignor
// (StickyAssignor STICKY_ASSIGNOR_USER_DATA_V0/V1; kmsg
// StickyMemberMetadata): the member's assignment from its last generation,
// and that generation. The encoding has no version number: V1 is V0 plus
// a trailing int32 generation.
type StickyUserData struct {
	Owned map[string][]int32
	// Generation is -1 when absent (V0).
	Generation int32
}

// EncodeStickyUserData encodes u with kmsg's StickyMemberMetadata: V1, or
// V0 when Generation is -1. Topics and partitions are written sorted.
func EncodeStickyUserData(u StickyUserData) []byte {
	m := kmsg.NewStickyMemberMetadata()
	m.Generation = u.Generation
	for _, t := range sortedKeys(u.Owned) {
		a := kmsg.NewStickyMemberMetadataCurrentAssignment()
		a.Topic = t
		a.Partitions = slices.Sorted(slices.Values(u.Owned[t]))
		m.CurrentAssignment = append(m.CurrentAssignment, a)
	}
	return m.AppendTo(nil)
}

// DecodeStickyUserData decodes sticky user data the way Java's
// StickyAssignor does: try V1, fall back to V0, ignore trailing bytes. It
// fails where Java would give up and ignore the previous assignment.
//
// It does not use kmsg's StickyMemberMetadata.ReadFrom, which differs from
// Java on hostile input: it reads a negative array length as zero instead
// of failing, and it allocates whatever element count the first four bytes
// claim before checking that the bytes exist.
func DecodeStickyUserData(b []byte) (StickyUserData, error) {
	d, ok := decodeStickyUserDataJava(b)
	if !ok {
		return StickyUserData{}, fmt.Errorf("malformed sticky assignor user data (%d bytes): neither V1 nor V0 parses", len(b))
	}
	u := StickyUserData{Generation: -1}
	if d.hasGeneration {
		u.Generation = d.generation
	}
	for _, p := range d.partitions {
		if u.Owned == nil {
			u.Owned = map[string][]int32{}
		}
		u.Owned[p.topic] = append(u.Owned[p.topic], p.partition)
	}
	return u, nil
}

type stickyUserData struct {
	partitions    []tp
	generation    int32
	hasGeneration bool
}

// decodeStickyUserDataJava follows Java's Schema.read of
// STICKY_ASSIGNOR_USER_DATA_V1 then V0: arrays and strings with a negative
// or too large length fail; V1 parses exactly when V0 parses and four more
// bytes follow.
func decodeStickyUserDataJava(b []byte) (stickyUserData, bool) {
	r := javaReader{b: b, ok: true}
	var out stickyUserData
	n := r.arrayLen()
	for k := int32(0); k < n && r.ok; k++ {
		topic := r.str()
		m := r.arrayLen()
		for j := int32(0); j < m && r.ok; j++ {
			p := r.int32()
			if r.ok {
				out.partitions = append(out.partitions, tp{topic, p})
			}
		}
	}
	if !r.ok {
		return stickyUserData{}, false
	}
	if len(r.b) >= 4 {
		out.generation = r.int32()
		out.hasGeneration = true
	}
	return out, true
}

// javaReader reads big-endian Kafka primitives and turns every short or
// invalid read into ok == false.
type javaReader struct {
	b  []byte
	ok bool
}

func (r *javaReader) int32() int32 {
	if r.ok && len(r.b) >= 4 {
		v := int32(binary.BigEndian.Uint32(r.b))
		r.b = r.b[4:]
		return v
	}
	r.ok = false
	return 0
}

func (r *javaReader) arrayLen() int32 {
	n := r.int32()
	if n < 0 || int(n) > len(r.b) {
		r.ok = false
		return 0
	}
	return n
}

func (r *javaReader) str() string {
	if !r.ok || len(r.b) < 2 {
		r.ok = false
		return ""
	}
	n := int16(binary.BigEndian.Uint16(r.b))
	r.b = r.b[2:]
	if n < 0 || int(n) > len(r.b) {
		r.ok = false
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// EncodeCooperativeUserData is CooperativeStickyAssignor's user data: the
// member's generation as one int32. Members on subscription v2+ also send
// the generation in the subscription, which the leader prefers.
func EncodeCooperativeUserData(generation int32) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(generation))
}

// decodeCooperativeUserData reads the int32 generation; trailing bytes are
// ignored as Java's Schema.read ignores them.
func decodeCooperativeUserData(b []byte) (int32, bool) {
	if len(b) < 4 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(b)), true
}

// SubscriptionUserData is the user data a member puts in its subscription
// for the named built-in assignor, as the Java assignors'
// subscriptionUserData does: nothing for range and roundrobin; for sticky,
// the member's last assignment and its generation (nothing before the
// first assignment, which the caller says with a nil owned map); for
// cooperative-sticky, the generation (-1 before the first assignment).
func SubscriptionUserData(assignor string, owned map[string][]int32, generation int32) ([]byte, error) {
	switch assignor {
	case RangeName, RoundRobinName:
		return nil, nil
	case StickyName:
		if owned == nil {
			return nil, nil
		}
		return EncodeStickyUserData(StickyUserData{Owned: owned, Generation: generation}), nil
	case CooperativeStickyName:
		return EncodeCooperativeUserData(generation), nil
	}
	return nil, fmt.Errorf("no user data for assignor %q: built-in assignors are %s, %s, %s, %s",
		assignor, RangeName, RoundRobinName, StickyName, CooperativeStickyName)
}
