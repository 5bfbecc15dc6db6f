package clients

import (
	"fmt"

	"github.com/groupquake/groupquake/coordinator/version"
)

// What share members (clients/share, KIP-932) report beyond the consumer
// groups' words. A share member speaks ShareGroupHeartbeat on its heartbeat
// lane (Op OpHeartbeat or OpLeave, Protocol Share, MemberEpoch as sent and
// returned, Partitions the assignment when the answer carries one) and
// ShareFetch and ShareAcknowledge on its fetch lane, each reported as Sent
// and then answered as the package doc says, with Share describing the
// call.

// Share is KIP-932's share-group protocol.
const Share Protocol = "share"

// The share-group calls.
const (
	OpShareFetch Op = "share-fetch" // ShareFetch (acknowledgements piggybacked)
	OpShareAck   Op = "share-ack"   // ShareAcknowledge
)

// LaneFetch is a share member's ShareFetch and ShareAcknowledge: one in
// flight at a time.
const LaneFetch Lane = "fetch"

// Answers of the share-group calls; Err and ErrCode carry a top-level error
// as for the other calls.
const (
	ShareFetched Kind = "share-fetched" // a ShareFetch answered
	ShareAcked   Kind = "share-acked"   // a ShareAcknowledge answered
)

// Acknowledge types (AcknowledgeType.java): GAP marks an acquired offset
// with no record, RENEW (KIP-1222, v2) extends the acquisition lock. They
// are coordinator/version's, the one place protocol facts are kept.
const (
	AckGap     = version.AckGap
	AckAccept  = version.AckAccept
	AckRelease = version.AckRelease
	AckReject  = version.AckReject
	AckRenew   = version.AckRenew
)

// AckName is the history's name of an acknowledge type.
func AckName(t int8) string {
	switch t {
	case AckGap:
		return "gap"
	case AckAccept:
		return "accept"
	case AckRelease:
		return "release"
	case AckReject:
		return "reject"
	case AckRenew:
		return "renew"
	}
	return "unknown"
}

// CheckAppAck refuses an acknowledge type an application does not send:
// anything but accept, release, reject and renew (GAP is the client's own).
func CheckAppAck(t int8) error {
	switch t {
	case AckAccept, AckRelease, AckReject, AckRenew:
		return nil
	}
	return fmt.Errorf("acknowledge type %d is not one an application sends (accept 1, release 2, reject 3, renew 4)", t)
}

// ShareRange is offsets First..Last (inclusive) of one partition.
type ShareRange struct {
	Topic       string
	Partition   int32
	First, Last int64
}

// ShareAck is an acknowledgement of a range, of one type.
type ShareAck struct {
	ShareRange
	Type int8
}

// ShareAcquired is a range the broker handed the member, every record at
// DeliveryCount.
type ShareAcquired struct {
	ShareRange
	DeliveryCount int16
}

// ShareCall describes a ShareFetch or ShareAcknowledge: what was sent (on
// Sent) and what the answer said (on its answer; the answer repeats the
// request's fields).
type ShareCall struct {
	// Node is the broker the request went to.
	Node int32
	// SessionEpoch is the share session epoch sent (0 opens, -1 closes).
	SessionEpoch int32
	// Fetch are the partitions a ShareFetch asks records of.
	Fetch Partitions
	// Acks are the acknowledgements the request carries.
	Acks []ShareAck
	// LockTimeoutMs is the answer's AcquisitionLockTimeoutMs.
	LockTimeoutMs int32
	// Acquired are the ranges the answer acquired for the member.
	Acquired []ShareAcquired
	// AckErrs and FetchErrs are the answer's per-partition errors by Kafka
	// error name (a partition with acknowledgements and no entry was
	// acknowledged).
	AckErrs   map[string]map[int32]string
	FetchErrs map[string]map[int32]string
}
