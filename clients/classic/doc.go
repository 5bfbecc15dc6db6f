// Package classic is a consumer-group member speaking the classic protocol
// (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch) the way the Java consumer's
// AbstractCoordinator and ConsumerCoordinator do (Kafka 4.x,
// clients/src/main/java/org/apache/kafka/clients/consumer/internals/), so
// that brokers and other members cannot tell it from a Java member. Records
// are fetched with kgo's direct-partition consumer on the same kgo client;
// the group protocol is ours.
//
// Three goroutines run per member, each ended and waited for by Close:
// manage (the join loop: Java's joinGroupIfNeeded on the application
// thread), the heartbeat loop (HeartbeatThread: heartbeats, the session
// and max.poll.interval timers) and, with auto-commit, the commit loop.
//
// Every decision (what to send next, how to react to each answer and error,
// eager and cooperative revocation, static membership, the session and poll
// timers) is made by a pure state machine, machine.go, which keeps the
// member's invariants: every change of membership or ownership reported
// exactly once with its generation and a why; a partition owned only
// between a SyncGroup of the current generation and its Revoked or Lost;
// answers applied only to the generation they were sent with; EAGER revokes
// everything before JoinGroup, COOPERATIVE only what the new assignment
// takes away, then rejoins (KIP-429; the protocol is the highest one every
// assignor supports); FENCED_INSTANCE_ID and the other fatal errors stop the
// member. The goroutines above are its IO loop: they send what it builds,
// feed it answers and the time, and carry out its outcomes.
// testdata/machine scripts it without a network (TestMachineScripts).
package classic
