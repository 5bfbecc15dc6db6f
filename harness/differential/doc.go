// Package differential replays the reference coordinator's conformance
// vectors (coordinator/testdata/{classic,offsets,consumer,share}) against a real
// group coordinator — a Kafka broker or franz-go's kfake — and reports every
// answer that differs from the reference's.
//
// The expectation of each request is computed by running the reference
// coordinator (coordinator.New) beside the target, step by step, with the
// target's version profile and the target's broker settings. Where a vector
// pins the same version, that is exactly the vector file's expected output
// (coordinator.TestConformance keeps the two equal); where it pins another
// release, the reference's version profile decides what the target's
// release must answer, so a version difference that the profile encodes
// never shows up as a difference, and one it misses does.
//
// Requests are built and answers rendered by coordinator/vectors, the same
// code coordinator.TestConformance uses; a target's names go through the
// section's namespace and come back through targetNorm.
//
// Only what a client can see is compared: the responses to requests. The
// commands that read internal state (state, records, replay) are skipped;
// a section ends at its first tick that moves time or at a restart, because
// the reference's clock is virtual and the target's is not (see Run).
//
// Requests go to the target over plain Kafka-protocol connections (wire.go)
// rather than through kgo: kgo rewrites every request's version to the
// highest both sides speak (kgo/broker.go, req.SetVersion(ourMax)) and
// retries coordinator errors, while the vectors pin versions (JoinGroup v3,
// OffsetFetch v7, OffsetCommit v10) and must see the raw answer, parked
// requests included. kgo/kadm still set the target up (topics, ids,
// coordinator readiness).
//
// The same vectors also compare two Kafka releases (groupquake diff,
// releases*.go): each release's answers, what its version profile
// predicted, and every difference either explained by named behaviours of
// the profiles or listed as unexplained (CompareReleases).
package differential
