// Package light holds lightweight consumer-group members for scale runs:
// thousands of them in one process, speaking the group protocol directly
// with kmsg requests and fetching no records. A member does membership,
// assignment and commits, nothing else, so that what a run measures is the
// group coordinator and not the harness.
//
// Connections. A Kafka broker reads a connection's next request only after
// it has answered the last one (SocketServer mutes the channel while a
// request is in flight). The KIP-848 ConsumerGroupHeartbeat is always
// answered at once, so consumer-protocol members share pipelined
// connections (the request carries the member id), which their Pool opens
// as its queue of requests needs them (see Pool). The classic protocol
// parks JoinGroup and SyncGroup in the broker until the rebalance
// completes, and a parked request would stall every member behind it on a
// shared connection (the heartbeats that tell the others to rejoin
// included): each classic member gets its own connection.
//
// Requests wait in the pool's queue, not in the broker's socket: a member
// does not send a request again while the last one still waits there, and
// one it gives up there (its run ends, it leaves) is dropped, never sent.
//
// Ownership. Every member reports what it takes and gives up to one Owners
// tracker, which measures how long each partition had no owner (the
// rebalance pause) and counts overlaps (a partition taken while another
// member still held it).
//
// Members of this package are not the reference members of clients/classic
// and clients/consumer: they skip everything a scale run does not exercise
// (static membership, cooperative rebalancing, regex subscriptions, the
// history contract) and keep just enough to behave as a real consumer does
// toward the coordinator.
package light
