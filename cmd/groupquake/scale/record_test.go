package scale_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients/assign"
	"github.com/groupquake/groupquake/clients/light"
	"github.com/groupquake/groupquake/cmd/groupquake/scale"
	"github.com/groupquake/groupquake/coordinator/version"
)

// TestClassicRecordFits: a classic group of a 10,000-member scale run can
// store its generations. Kafka writes the whole membership as one
// GroupMetadataValue (version 3 in every 4.x release) in one
// __consumer_offsets batch, which must stay under message.max.bytes
// (1048588 by default); with longer names a group of 10,000 outgrows it
// (114 bytes a member with the client id "gq" and a 15-character topic:
// 1.14 MB) and never becomes stable. Built here as Kafka builds it: member
// ids of the client id, "-" and a Uuid, the longest client host an IPv4
// address gives, the members' subscription and the range assignment of the
// default 500 partitions.
func TestClassicRecordFits(t *testing.T) {
	const members, partitions = 10000, 500
	group, topic := scale.Names(scale.Classic, members, 99999)
	meta, err := assign.EncodeSubscription(assign.Subscription{Version: 0, Topics: []string{topic}, Generation: -1})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, members)
	subs := make([]assign.Member, members)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%08x-%04x-%04x-%04x-%012x", light.ClientID, rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff)
		s, err := assign.DecodeSubscription(meta)
		if err != nil {
			t.Fatal(err)
		}
		subs[i] = s.Member(ids[i], nil)
	}
	plan, err := assign.Range().Assign(subs, map[string]int32{topic: partitions})
	if err != nil {
		t.Fatal(err)
	}
	payloads, err := assign.AssignmentFor(plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := kmsg.NewGroupMetadataValue()
	v.Version = version.Default.Profile().GroupMetadataValueVersion
	v.ProtocolType, v.Generation, v.Protocol, v.Leader, v.CurrentStateTimestamp = "consumer", 1<<20, kmsg.StringPtr(assign.RangeName), kmsg.StringPtr(ids[0]), 1<<40
	for _, id := range ids {
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.ClientID, m.ClientHost = id, light.ClientID, "/255.255.255.255"
		m.RebalanceTimeoutMillis, m.SessionTimeoutMillis = 60000, 45000
		m.Subscription, m.Assignment = meta, payloads[id]
		v.Members = append(v.Members, m)
	}
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, group
	// A v2 batch's header is 61 bytes; one record adds its length,
	// attributes, timestamp and offset deltas, key and value lengths and
	// header count: 16 bytes at most at this size.
	size := 61 + 16 + len(k.AppendTo(nil)) + len(v.AppendTo(nil))
	t.Logf("a classic group of %d members: a %d-byte batch, %.1f bytes a member", members, size, float64(size)/members)
	if size > version.DefaultMessageMaxBytes {
		t.Fatalf("a classic group of %d members writes a %d-byte batch, over message.max.bytes (%d): it could never store a generation",
			members, size, version.DefaultMessageMaxBytes)
	}
}
