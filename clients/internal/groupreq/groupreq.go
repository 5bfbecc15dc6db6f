// Package groupreq builds the group requests that groupquake's own members
// (clients/classic, clients/consumer, clients/share) send alike, and checks
// what every such request carries of a new member.
package groupreq

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit is the OffsetCommit of offsets for group, sent by memberID
// (with instanceID, if not nil) at generation: the classic generation or
// the consumer protocol's member epoch. Topics and partitions go in order,
// each offset with no leader epoch (-1); ids names each topic's id too
// (OffsetCommit v10+, Kafka 4.2+), nil for none.
func OffsetCommit(group, memberID string, instanceID *string, generation int32, offsets map[string]map[int32]int64, ids map[string][16]byte) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = generation
	req.MemberID = memberID
	req.InstanceID = instanceID
	for _, t := range slices.Sorted(maps.Keys(offsets)) {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = t
		rt.TopicID = ids[t]
		for _, p := range slices.Sorted(maps.Keys(offsets[t])) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition = p
			rp.Offset = offsets[t][p]
			rp.LeaderEpoch = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// NewMemberID is a member id of the client's choosing, as Java's
// Uuid.randomUuid().toString() makes it: 16 random bytes, base64url without
// padding (22 characters; the broker refuses ids over 36).
// ConsumerGroupHeartbeat v1 (KIP-1082) and ShareGroupHeartbeat (KIP-932)
// require the client to choose it; a member keeps it across fencing and
// rejoins.
func NewMemberID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// CheckNew says what is wrong with a new member of one of the protocols
// groupquake's own members speak with the broker alone (consumer, share):
// its name (the harness's), its group id (the broker refuses an empty one
// with INVALID_REQUEST) and invalid, what checking its options found (nil:
// nothing). kind names the member in the error ("consumer", "share").
func CheckNew(kind, name, group string, invalid error) error {
	var errs []error
	if name == "" {
		errs = append(errs, errors.New("member name is empty"))
	}
	if group == "" {
		errs = append(errs, errors.New("group id is empty: the broker rejects it with INVALID_REQUEST"))
	}
	if invalid != nil {
		errs = append(errs, invalid)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s member %q: %w", kind, name, err)
	}
	return nil
}
