// Package assignor holds the KIP-848 server-side partition assignors of the
// reference group coordinator: "uniform" and "range", as the Kafka group
// coordinator runs them for consumer-protocol groups
// (group-coordinator/src/main/java/org/apache/kafka/coordinator/group/assignor/).
//
// The package is pure: no IO, no goroutines, no clock, no package-level mutable
// state. Every assignor is a function of (GroupSpec, SubscribedTopicDescriber).
//
// # Why iteration order is part of the input
//
// The Java assignors are deterministic only given the iteration order of the
// Java collections they are handed. UniformHomogeneousAssignmentBuilder walks
// GroupSpec.memberIds() (a java.util.HashMap key set), each member's previous
// target assignment (a HashMap of HashSets) and a HashSet copy of the first
// member's subscription; which partitions an over-quota member keeps, and which
// member gets the extra partition, follow those orders. To give the same target
// assignment as a broker, the Go types carry order explicitly:
//
//   - GroupSpec.Members is in Kafka's memberIds() order.
//   - MemberSpec.Topics is in the member's subscription iteration order.
//   - MemberSpec.Assignment is a slice of topics, each with a partition slice,
//     both in the order Java would iterate them.
//
// Where Kafka builds a collection itself from one of those (the HashSet copy of
// the subscription in the homogeneous builder), this package emulates Java's
// HashSet/HashMap iteration order (see javaorder.go). JavaHashMapOrder and
// JavaAssignmentOrder compute the orders Kafka gets when it builds the same
// collections from records, so a caller that has only sets can reproduce them.
//
// The heterogeneous uniform builder and range depend only on member order (range
// sorts members itself), so for them the member order is the only input that
// matters.
//
// # Versions
//
// The assignor sources are identical in behaviour on the Apache Kafka 4.1, 4.2,
// 4.3 and 4.4 branches and on 4.0 since 4.0.1 (the diffs are javadoc and
// refactoring). The one behaviour change in the 4.x line is KAFKA-18688
// (apache/kafka#19677, first released in 4.0.1): the homogeneous uniform builder
// lets any member keep the "extra" partition instead of reserving it for the
// first members in iteration order: version.Profile.UniformHomogeneousStable,
// so Profile(version.V4_0_0.Profile()) or KafkaVersion("4.0.0") selects the old rule.
// No server-side assignor in 4.0–4.4 reads racks, even though
// SubscribedTopicDescriber.racksForPartition returns real racks from 4.1 on.
//
// The broker's JDK matters too: `new HashSet<>(collection)` sizes its table
// differently before JDK 19, which changes the homogeneous builder's order for
// subscriptions of 12, 24, 48, … topics. JavaVersion(17) selects that; the
// default is 21, the JDK of the official apache/kafka images.
//
// # Evidence
//
// testdata/kafka-*.txt are differential vectors: random groups, evolved round
// by round, with Kafka's own output from the kafka-group-coordinator jars of
// 4.0.0, 4.0.1, 4.1.0, 4.2.0, 4.3.0 and 4.4.0 (JDK 25 and JDK 17), produced by
// testdata/kafkadiff. TestKafkaVectors requires the exact same target
// assignment for every case.
package assignor
