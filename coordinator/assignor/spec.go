package assignor

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/groupquake/groupquake/coordinator/internal/same"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TopicID is a Kafka topic id (org.apache.kafka.common.Uuid), 16 bytes, most
// significant bits first.
type TopicID [16]byte

// String renders the id as Kafka does (Uuid.toString): URL-safe base64 without
// padding, 22 characters.
func (t TopicID) String() string {
	return base64.RawURLEncoding.EncodeToString(t[:])
}

// ParseTopicID parses the 22-character form Kafka prints (Uuid.fromString).
func ParseTopicID(s string) (TopicID, error) {
	var t TopicID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return t, fmt.Errorf("topic id %q is not a Kafka Uuid: want 22 characters of URL-safe base64 for 16 bytes", s)
	}
	copy(t[:], b)
	return t, nil
}

// msb and lsb are Uuid.getMostSignificantBits / getLeastSignificantBits.
func (t TopicID) msb() int64 { return int64(binary.BigEndian.Uint64(t[:8])) }
func (t TopicID) lsb() int64 { return int64(binary.BigEndian.Uint64(t[8:])) }

// compareTopicIDs is Uuid.compareTo: the two halves compared as signed longs,
// which is not byte order.
func compareTopicIDs(a, b TopicID) int {
	if c := cmp.Compare(a.msb(), b.msb()); c != 0 {
		return c
	}
	return cmp.Compare(a.lsb(), b.lsb())
}

// SubscriptionType mirrors org.apache.kafka.coordinator.group.api.assignor.SubscriptionType.
// The coordinator decides it (ConsumerGroup.subscriptionType), not the assignor:
// an assignor told Homogeneous trusts the first member's subscription for all.
type SubscriptionType int8

const (
	// Homogeneous means every member subscribes to the same topics.
	Homogeneous SubscriptionType = iota
	// Heterogeneous means members subscribe to different topics.
	Heterogeneous
)

func (s SubscriptionType) String() string {
	switch s {
	case Homogeneous:
		return "Homogeneous"
	case Heterogeneous:
		return "Heterogeneous"
	}
	return "SubscriptionType(" + strconv.Itoa(int(s)) + ")"
}

// TopicPartitions is one topic of a member's assignment. Partitions are in the
// order Java iterates the member's Set<Integer>; the homogeneous uniform builder
// keeps the first ones when the member is over quota.
type TopicPartitions struct {
	Topic      TopicID
	Partitions []int32
}

// MemberSpec is one member as the assignor sees it
// (MemberSubscriptionAndAssignmentImpl).
type MemberSpec struct {
	ID string
	// InstanceID is the static member id; "" means none (Optional.empty()).
	InstanceID string
	// RackID is the member's rack; "" means none. No 4.0–4.4 assignor reads it.
	RackID string
	// Topics are the subscribed topic ids, in the member's subscription
	// iteration order (Kafka's TopicIds view over the subscribed names).
	Topics []TopicID
	// Assignment is the member's previous *target* assignment (not its current
	// one), topics and partitions in Java iteration order.
	Assignment []TopicPartitions
}

// GroupSpec mirrors GroupSpecImpl.
type GroupSpec struct {
	// Members in Kafka's GroupSpec.memberIds() order (see the package doc).
	Members []MemberSpec
	// Subscription is the group's subscription type.
	Subscription SubscriptionType
	// InvertedTargetAssignment is Kafka's topic → partition → member map behind
	// isPartitionAssigned. Nil means: derive it from the members' assignments,
	// which is what the coordinator's group state holds in practice. A non-nil
	// map (even empty) is used as given, as GroupSpecImpl does.
	InvertedTargetAssignment map[TopicID]map[int32]string
	// RecordOrder says the members' Assignments list topics and partitions
	// in the order of their ConsumerGroupTargetAssignmentMember records (as
	// the coordinator keeps them), not in the order Kafka iterates them:
	// the assignor then takes Kafka's order to be JavaAssignmentOrder of
	// each (what Assignment.fromRecord builds), and works it out only for
	// a member whose order matters (one holding more than its quota in a
	// homogeneous group), as the order of the others changes nothing.
	RecordOrder bool
}

// IsPartitionAssigned is GroupSpec.isPartitionAssigned.
func (g *GroupSpec) IsPartitionAssigned(topic TopicID, partition int32) bool {
	if g.InvertedTargetAssignment != nil {
		_, ok := g.InvertedTargetAssignment[topic][partition]
		return ok
	}
	for i := range g.Members {
		for _, tp := range g.Members[i].Assignment {
			if tp.Topic == topic && slices.Contains(tp.Partitions, partition) {
				return true
			}
		}
	}
	return false
}

// SubscribedTopicDescriber mirrors the Kafka interface of the same name.
type SubscribedTopicDescriber interface {
	// NumPartitions returns the partition count, or -1 if the topic does not exist.
	NumPartitions(topic TopicID) int
	// RacksForPartition returns the racks of the partition's replicas. Kafka 4.0
	// always returns none; 4.1+ returns the brokers' racks. No assignor here
	// reads it.
	RacksForPartition(topic TopicID, partition int32) []string
}

// PartitionCounts is a SubscribedTopicDescriber over a fixed map of partition
// counts with no rack information.
type PartitionCounts map[TopicID]int

// NumPartitions implements SubscribedTopicDescriber.
func (p PartitionCounts) NumPartitions(topic TopicID) int {
	if n, ok := p[topic]; ok {
		return n
	}
	return -1
}

// RacksForPartition implements SubscribedTopicDescriber.
func (p PartitionCounts) RacksForPartition(TopicID, int32) []string { return nil }

// MemberAssignment is one member's target assignment (Kafka's
// Map<Uuid, Set<Integer>>): each topic it holds partitions of, once, with
// those partitions in ascending order, never empty. The topics are in no
// particular order (the same for the same input).
//
// An assignment is read-only: its slices may be shared with other members'
// and with the GroupSpec the assignor was given (a member that keeps what it
// held is handed its previous partitions back, as Kafka hands back the same
// set), so neither may be changed while the other is in use.
type MemberAssignment []TopicPartitions

// Partitions returns the partitions of topic t, or nil.
func (a MemberAssignment) Partitions(t TopicID) []int32 {
	for i := range a {
		if a[i].Topic == t {
			return a[i].Partitions
		}
	}
	return nil
}

// Size is the number of partitions.
func (a MemberAssignment) Size() int {
	n := 0
	for i := range a {
		n += len(a[i].Partitions)
	}
	return n
}

// GroupAssignment is the target assignment, keyed by member id. Which members
// appear follows Kafka: range lists every member (possibly with an empty
// assignment); uniform lists none when no member subscribes to anything.
type GroupAssignment struct {
	Members map[string]MemberAssignment
	// work is the builders' memory, kept by AssignInto.
	work *assignWork
}

// IntoAssignor is an Assignor that can reuse the memory of an earlier
// result: AssignInto is Assign writing the result into *into, reusing its
// map and arrays, so that what into held before is no longer valid
// afterwards. A coordinator that computes a group's target assignments one
// after the other, and is done with each before the next, keeps one
// GroupAssignment for them (a Go heap does not take the garbage of a large
// group's assignment as cheaply as a JVM's young generation).
type IntoAssignor interface {
	Assignor
	AssignInto(spec GroupSpec, topics SubscribedTopicDescriber, into *GroupAssignment) error
}

// ErrPartitionAssignor marks the failures that Kafka reports as
// PartitionAssignorException (the heartbeat then fails with
// UNKNOWN_SERVER_ERROR): a subscribed topic missing from the metadata, or
// partitions left unassigned.
var ErrPartitionAssignor = errors.New("partition assignor failed")

// ErrInvalidSpec marks a GroupSpec that no Kafka coordinator could hand an
// assignor: duplicate members, topics or partitions, or partitions outside the
// topic. Java would fail on some of these with an unchecked exception and
// silently accept others; here they are refused up front.
var ErrInvalidSpec = errors.New("invalid group spec")

// Assignor is ConsumerGroupPartitionAssignor.
type Assignor interface {
	// Name is the name members request (ConsumerGroupHeartbeat ServerAssignor).
	Name() string
	// Assign computes the target assignment.
	Assign(spec GroupSpec, topics SubscribedTopicDescriber) (GroupAssignment, error)
}

// Names Kafka accepts in group.consumer.assignors and in the heartbeat.
const (
	UniformName = "uniform"
	RangeName   = "range"

	uniformClass = "org.apache.kafka.coordinator.group.assignor.UniformAssignor"
	rangeClass   = "org.apache.kafka.coordinator.group.assignor.RangeAssignor"
)

type config struct {
	profile     version.Profile
	javaVersion int
}

// Opt configures an assignor at construction.
type Opt interface{ apply(*config) error }

type optFunc func(*config) error

func (f optFunc) apply(c *config) error { return f(c) }

// Profile selects the behaviour of the Kafka release p describes
// (version.Profile.UniformHomogeneousStable is the one assignor fact that
// changed in 4.x; see the package doc). Default: version.Default's profile.
func Profile(p version.Profile) Opt {
	return optFunc(func(c *config) error {
		c.profile = p
		return nil
	})
}

// KafkaVersion is Profile of a served release named as version.Parse reads
// it ("4.0.0"); anything else is an error that lists the served releases.
func KafkaVersion(v string) Opt {
	return optFunc(func(c *config) error {
		ver, err := version.Parse(v)
		if err != nil {
			return fmt.Errorf("server-side assignors: %w", err)
		}
		c.profile = ver.Profile()
		return nil
	})
}

// JavaVersion names the broker's JDK major version (default 21, the official
// images). It matters only to the homogeneous uniform builder, whose HashSet
// copy of a subscription of 12, 24, 48, … topics iterates differently on JDK
// 17/18 than on 19+; a broker image built on Debian's openjdk-17 needs 17.
func JavaVersion(major int) Opt {
	return optFunc(func(c *config) error {
		if major < 17 {
			return fmt.Errorf("Java version %d: Kafka 4.x brokers need Java 17 or later", major)
		}
		c.javaVersion = major
		return nil
	})
}

func newConfig(opts []Opt) (config, error) {
	c := config{profile: version.Default.Profile(), javaVersion: DefaultJavaVersion}
	for _, o := range opts {
		if err := o.apply(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// New returns the assignor Kafka would load for name: a short name ("uniform",
// "range") or the Java class name, as group.consumer.assignors accepts both.
func New(name string, opts ...Opt) (Assignor, error) {
	switch name {
	case UniformName, uniformClass:
		return NewUniform(opts...)
	case RangeName, rangeClass:
		return NewRange(opts...)
	}
	return nil, fmt.Errorf("unknown server-side assignor %q: known are %q and %q (or their Kafka class names)", name, UniformName, RangeName)
}

// The assignors refuse specs that cannot come from a coordinator
// (ErrInvalidSpec): validateExactly says what is wrong. It does not check
// partitions against topic sizes: the homogeneous builder, like Kafka,
// tolerates stale ones. It runs before every assignment, so a valid spec
// is vouched for cheaply (quickValid: no set per member, a subscription
// equal to the one checked before is not checked again, partitions in
// ascending order hold no duplicate); whatever quickValid cannot vouch for
// goes through validateExactly, which names the first problem.

// validated runs build, an assignor's builder, on a spec that validate
// would let through, and otherwise returns validate's error: everything
// but the member ids is vouched for before (quickValid), and the member
// ids after, by the output (every builder lists every member when it
// lists any, so a repeated id leaves the output short of members), which
// spares a set of all member ids. On any doubt or failure, the exact check
// has the first word, as if validate had run first.
func validated(spec *GroupSpec, javaVersion int, build func() (GroupAssignment, error)) (GroupAssignment, error) {
	if !quickValid(spec, false) {
		if err := validateExactly(spec); err != nil {
			return GroupAssignment{}, inKafkaOrder(spec, javaVersion, err)
		}
	}
	res, err := build()
	if err == nil && (len(res.Members) == len(spec.Members) || (len(res.Members) == 0 && quickValid(spec, true))) {
		return res, nil
	}
	if verr := validateExactly(spec); verr != nil {
		return GroupAssignment{}, inKafkaOrder(spec, javaVersion, verr)
	}
	return res, err
}

// inKafkaOrder is the exact check's error for spec in Kafka's iteration
// order, which names another partition than err when the spec is in record
// order (GroupSpec.RecordOrder) and holds more than one problem.
func inKafkaOrder(spec *GroupSpec, javaVersion int, err error) error {
	if !spec.RecordOrder {
		return err
	}
	ordered := *spec
	ordered.RecordOrder = false
	ordered.Members = slices.Clone(spec.Members)
	for i := range ordered.Members {
		ordered.Members[i].Assignment = JavaAssignmentOrder(ordered.Members[i].Assignment, javaVersion)
	}
	return validateExactly(&ordered)
}

// quickValid reports whether spec passes validateExactly, without saying
// why not; with ids false, member ids are not checked. It is false for
// every spec validateExactly refuses (for a reason it checks).
func quickValid(spec *GroupSpec, ids bool) bool {
	if spec.Subscription != Homogeneous && spec.Subscription != Heterogeneous {
		return false
	}
	var seen map[string]struct{}
	if ids {
		seen = make(map[string]struct{}, len(spec.Members))
	}
	var checked []TopicID      // the last subscription known to hold no duplicate
	var lastAssigned []TopicID // the topics of the last assignment known to hold none
	var stamps map[TopicID]int // stamps[t] == i+1: member i's assignment lists t
	var scratch []TopicID
	var parts []uint64
	for i := range spec.Members {
		m := &spec.Members[i]
		if ids {
			if _, dup := seen[m.ID]; dup {
				return false
			}
			seen[m.ID] = struct{}{}
		}
		if !same.Slice(m.Topics, checked) {
			if hasDuplicateTopic(m.Topics, &scratch) {
				return false
			}
			checked = m.Topics
		}
		if len(m.Assignment) > 1 && !sameAssignmentTopics(m.Assignment, lastAssigned) {
			// Topics listed in the order of the last assignment checked
			// (most often, members' assignments list the topics they share
			// in one order) are checked already.
			lastAssigned = lastAssigned[:0]
			for _, tp := range m.Assignment {
				lastAssigned = append(lastAssigned, tp.Topic)
			}
			if len(lastAssigned) <= 16 {
				if hasDuplicateTopic(lastAssigned, nil) {
					return false
				}
			} else {
				if stamps == nil {
					stamps = map[TopicID]int{}
				}
				for _, t := range lastAssigned {
					if stamps[t] == i+1 {
						return false
					}
					stamps[t] = i + 1
				}
			}
		}
		for _, tp := range m.Assignment {
			if !strictlyAscendingNonNegative(tp.Partitions) && hasBadPartition(tp.Partitions, &parts) {
				return false
			}
		}
	}
	return true
}

// sameAssignmentTopics reports whether a lists the topics ts, in order.
func sameAssignmentTopics(a []TopicPartitions, ts []TopicID) bool {
	if len(a) != len(ts) {
		return false
	}
	for i := range a {
		if a[i].Topic != ts[i] {
			return false
		}
	}
	return true
}

// hasDuplicateTopic reports whether ts lists a topic twice. Long lists are
// sorted in *scratch, which may be ts itself (its order then changes).
func hasDuplicateTopic(ts []TopicID, scratch *[]TopicID) bool {
	if len(ts) <= 16 {
		for i := 1; i < len(ts); i++ {
			for j := range i {
				if ts[i] == ts[j] {
					return true
				}
			}
		}
		return false
	}
	s := append((*scratch)[:0], ts...)
	slices.SortFunc(s, func(a, b TopicID) int { return bytes.Compare(a[:], b[:]) })
	*scratch = s
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return true
		}
	}
	return false
}

func strictlyAscendingNonNegative(ps []int32) bool {
	prev := int32(-1)
	for _, p := range ps {
		if p <= prev {
			return false
		}
		prev = p
	}
	return true
}

// hasBadPartition reports whether ps holds a negative partition or one
// twice: marking them in the bit set *seen (left clear again), or, for
// partitions too large for one, sorting a copy.
func hasBadPartition(ps []int32, seen *[]uint64) bool {
	hi := int32(0)
	for _, p := range ps {
		if p < 0 {
			return true
		}
		hi = max(hi, p)
	}
	if hi >= 1<<20 {
		s := slices.Clone(ps)
		slices.Sort(s)
		return !strictlyAscendingNonNegative(s)
	}
	if words := int(hi)/64 + 1; len(*seen) < words {
		*seen = make([]uint64, words)
	}
	bits := *seen
	dup := false
	for _, p := range ps {
		w, b := p/64, uint64(1)<<(p%64)
		if bits[w]&b != 0 {
			dup = true
		}
		bits[w] |= b
	}
	for _, p := range ps {
		bits[p/64] = 0
	}
	return dup
}

// validateExactly is validate's exact check: the first problem, in member
// order, is the one reported.
func validateExactly(spec *GroupSpec) error {
	if spec.Subscription != Homogeneous && spec.Subscription != Heterogeneous {
		return fmt.Errorf("%w: subscription type %d is neither Homogeneous (0) nor Heterogeneous (1)", ErrInvalidSpec, spec.Subscription)
	}
	// One set of each kind, cleared per member: validation is on every assignment's path, so it
	// allocates per group, not per member (a group of 1,000 members made 12,000 maps here).
	seen := make(map[string]struct{}, len(spec.Members))
	topics := map[TopicID]struct{}{}
	assigned := map[TopicID]struct{}{}
	parts := map[int32]struct{}{}
	for i := range spec.Members {
		m := &spec.Members[i]
		if _, dup := seen[m.ID]; dup {
			return fmt.Errorf("%w: member id %q appears twice", ErrInvalidSpec, m.ID)
		}
		seen[m.ID] = struct{}{}
		clear(topics)
		for _, t := range m.Topics {
			if _, dup := topics[t]; dup {
				return fmt.Errorf("%w: member %q subscribes to topic %s twice", ErrInvalidSpec, m.ID, t)
			}
			topics[t] = struct{}{}
		}
		clear(assigned)
		for _, tp := range m.Assignment {
			if _, dup := assigned[tp.Topic]; dup {
				return fmt.Errorf("%w: member %q lists topic %s twice in its assignment", ErrInvalidSpec, m.ID, tp.Topic)
			}
			assigned[tp.Topic] = struct{}{}
			clear(parts)
			for _, p := range tp.Partitions {
				if p < 0 {
					return fmt.Errorf("%w: member %q holds partition %d of topic %s: partitions are ≥ 0", ErrInvalidSpec, m.ID, p, tp.Topic)
				}
				if _, dup := parts[p]; dup {
					return fmt.Errorf("%w: member %q holds partition %d of topic %s twice", ErrInvalidSpec, m.ID, p, tp.Topic)
				}
				parts[p] = struct{}{}
			}
		}
	}
	return nil
}

// toMemberAssignment turns a working set into the output form, topics in
// Uuid order.
func toMemberAssignment(sets map[TopicID]map[int32]struct{}) MemberAssignment {
	out := make(MemberAssignment, 0, len(sets))
	for t, ps := range sets {
		if len(ps) == 0 {
			continue
		}
		s := slices.Sorted(maps.Keys(ps))
		out = append(out, TopicPartitions{Topic: t, Partitions: s})
	}
	slices.SortFunc(out, func(a, b TopicPartitions) int { return compareTopicIDs(a.Topic, b.Topic) })
	return out
}
