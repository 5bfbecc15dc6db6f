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
// What the member keeps true:
//  1. Every change of membership or ownership is reported through
//     clients.Hooks exactly once, with the generation and a why.
//  2. A partition is owned only between a SyncGroup of the member's
//     current generation that gave it and the Revoked or Lost event that
//     gave it up; Poll returns records of owned partitions only.
//  3. A response is applied only to the generation it was sent with; an
//     answer for an older generation is ignored, as Java's
//     generationUnchanged check does.
//  4. EAGER revokes everything before JoinGroup; COOPERATIVE revokes only
//     what the new assignment takes away, after SyncGroup, and then rejoins
//     (KIP-429). The protocol is the highest one every assignor supports.
//  5. FENCED_INSTANCE_ID and the other fatal errors stop the member: it
//     reports them, loses its partitions and sends nothing more.
package classic
