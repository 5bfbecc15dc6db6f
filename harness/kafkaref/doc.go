// Package kafkaref runs Kafka's own group-coordinator classes beside
// groupquake's reference pieces on identical inputs: the server-side
// assignors (coordinator/assignor against UniformAssignor and RangeAssignor,
// whose UniformHomogeneousAssignmentBuilder and
// UniformHeterogeneousAssignmentBuilder do the uniform work) and the
// reconciliation (coordinator/consumergroup's reconciler against
// CurrentAssignmentBuilder).
//
// The Java side is KafkaRef.java, this package's own source, compiled at
// run time against org.apache.kafka:kafka-group-coordinator of the chosen
// release and its runtime dependencies, resolved from Maven Central with
// mvn and cached as clients/java caches kafka-clients (Prepare).
//
// Inputs are identical by construction: the cases are generated from seeds
// (gen.go, suite.go), written to a case file (cases.go says the format), and
// both sides read that file; orders that Kafka's results depend on (members,
// subscriptions, previous targets) are the file's on both sides.
//
// TestSameResultsAsKafka compares the results on small inputs;
// BenchmarkAssignVsKafka and BenchmarkReconcileVsKafka time both sides per
// case and report Kafka's ns/op and the ratio (make bench).
package kafkaref
