// Package vectors turns the commands of the coordinator's conformance
// vectors (coordinator/testdata/{classic,offsets,consumer}/*.txt) into Kafka
// requests and renders the responses in the vectors' canonical form.
//
// It is the one implementation shared by the coordinator's own test harness
// (coordinator/datadriven_test.go), which runs the vectors against the
// coordinator, and by harness/differential, which replays them against a
// real broker: the two must agree on every default and every output form,
// or the differential run compares something the vectors never said.
//
// Names a vector writes reach one side through Names (requests) and come
// back through Norm (responses); Identity is both for a side that takes the
// names as written. The package does no IO and knows nothing of the
// datadriven file format: callers hand it a command and its arguments.
package vectors
