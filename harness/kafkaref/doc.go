// Package kafkaref runs Kafka's own group-coordinator classes beside
// groupquake's reference pieces on identical inputs: the server-side
// assignors (coordinator/assignor against UniformAssignor and RangeAssignor,
// whose UniformHomogeneousAssignmentBuilder and
// UniformHeterogeneousAssignmentBuilder do the uniform work), the
// reconciliation (coordinator/consumergroup's reconciler against
// CurrentAssignmentBuilder) and the target assignment
// (consumergroup.TargetAssignment, the heartbeat's builder, against
// TargetAssignmentBuilder).
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
// BenchmarkAssignVsKafka, BenchmarkReconcileVsKafka and
// BenchmarkTargetVsKafka time both sides per case and report the ratio
// (make bench). The two sides are timed in alternating rounds, one JVM
// serving the case (KafkaRef serve) while the Go side waits, so that on a
// shared machine both see the same load; the ratio is the median of the
// rounds' ratios.
//
// Each side is called as its coordinator calls it: Kafka's assign() and
// build(); groupquake's AssignInto (reusing the previous result's memory,
// as consumergroup does), its Reconciliation and TargetAssignment steps.
// Kafka's side gets the inverted target assignment built, as its
// coordinator keeps it; groupquake's derives it inside the call, as its
// heartbeat does.
package kafkaref
