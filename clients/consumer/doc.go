// Package consumer is a KIP-848 consumer-group member: it speaks the
// `consumer` protocol (ConsumerGroupHeartbeat, API key 68) with the
// membership rules of Java's AsyncKafkaConsumer (Kafka 4.x
// ConsumerHeartbeatRequestManager, AbstractMembershipManager,
// ConsumerMembershipManager), commits and fetches offsets with its member
// epoch, and fetches records with kgo's direct-partition consumer, moved as
// the assignment changes. It implements clients.Member and reports every
// state change through clients.Hooks with a why.
//
// The protocol logic is a pure state machine (machine.go): heartbeat
// requests out, answers in, reconciliation plans out. The Member
// (member.go, loop.go) does the IO around it. The heartbeat answer carries
// no group epoch, so events carry GroupEpoch -1; ConsumerGroupDescribe is
// where a harness reads it.
//
// Routing: the member finds its coordinator itself (one FindCoordinator
// per attempt, clients/internal/coord, reported as FoundCoordinator) and
// sends every heartbeat, Close's leave included, to that node through
// kgo's Broker(node).Request, forgetting it on NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE or a request error. OffsetCommit, OffsetFetch
// and metadata still go through kgo's Client.Request, which looks the
// coordinator up and caches it on its own and retries coordinator errors
// inside the request: those lookups are not reported, and the node a
// commit goes to may differ from the one the last FoundCoordinator named.
package consumer
