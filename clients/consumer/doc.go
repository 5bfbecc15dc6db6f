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
package consumer
