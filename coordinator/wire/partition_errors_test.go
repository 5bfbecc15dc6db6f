package wire

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/version"
)

// TestFetchListOffsetsPartitionErrors: Fetch and ListOffsets answer a
// partition of a topic the broker does not have, and a partition the topic
// does not have, with UNKNOWN_TOPIC_OR_PARTITION (Fetch by topic id, v13+:
// an unknown id is UNKNOWN_TOPIC_ID), a current leader epoch above the
// stand-in's (0) with UNKNOWN_LEADER_EPOCH, and a partition it has at epoch
// -1 or 0 with no error.
func TestFetchListOffsetsPartitionErrors(t *testing.T) {
	s := startStandIn(t, "", version.V4_4_0)
	defer s.Close()
	tp := mustCreateTopic(t, s, "t", 2)
	c := dialRaw(t, s)
	corr := int32(0)
	roundTrip := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		corr++
		c.send(req, corr)
		got, body := c.read()
		if got != corr {
			t.Fatalf("correlation id %d, want %d", got, corr)
		}
		r := req.ResponseKind()
		r.SetVersion(req.GetVersion())
		if r.IsFlexible() {
			body = body[1:] // the response header's empty tag section
		}
		if err := r.ReadFrom(body); err != nil {
			t.Fatalf("parse %T: %v", r, err)
		}
		return r
	}
	type probe struct {
		topic          string
		partition      int32
		epoch          int32
		want, wantByID *kerr.Error
	}
	probes := []probe{
		{"t", 0, -1, nil, nil},
		{"t", 1, 0, nil, nil},
		{"t", 1, 1, kerr.UnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
		{"t", 2, -1, kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
		{"t", -1, -1, kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
		{"none", 0, -1, kerr.UnknownTopicOrPartition, kerr.UnknownTopicID},
		{"none", 0, 1, kerr.UnknownTopicOrPartition, kerr.UnknownTopicID},
	}
	check := func(api string, i int, code int16, want *kerr.Error) {
		t.Helper()
		var w error // nil, not a nil *kerr.Error
		if want != nil {
			w = want
		}
		if got := kerr.ErrorForCode(code); got != w {
			pr := probes[i]
			t.Errorf("%s of %s/%d at leader epoch %d: error %v, want %v", api, pr.topic, pr.partition, pr.epoch, got, want)
		}
	}
	idOf := func(topic string) [16]byte {
		if topic == "t" {
			return tp.id
		}
		return [16]byte{0xee}
	}

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(7)
	lo.ReplicaID = -1
	for _, pr := range probes {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = pr.topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = pr.partition, pr.epoch, -1
		rt.Partitions = append(rt.Partitions, rp)
		lo.Topics = append(lo.Topics, rt)
	}
	loResp := roundTrip(lo).(*kmsg.ListOffsetsResponse)
	if len(loResp.Topics) != len(probes) {
		t.Fatalf("ListOffsets answered %d topics, asked %d", len(loResp.Topics), len(probes))
	}
	for i, pr := range probes {
		check("ListOffsets", i, loResp.Topics[i].Partitions[0].ErrorCode, pr.want)
	}

	for _, v := range []int16{12, 13} {
		f := kmsg.NewPtrFetchRequest()
		f.SetVersion(v)
		f.ReplicaID, f.MaxWaitMillis, f.MaxBytes, f.SessionEpoch = -1, 0, 1<<20, -1
		for _, pr := range probes {
			rt := kmsg.NewFetchRequestTopic()
			if v >= 13 {
				rt.TopicID = idOf(pr.topic)
			} else {
				rt.Topic = pr.topic
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = pr.partition, pr.epoch, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
			f.Topics = append(f.Topics, rt)
		}
		fResp := roundTrip(f).(*kmsg.FetchResponse)
		if fResp.ErrorCode != 0 || len(fResp.Topics) != len(probes) {
			t.Fatalf("Fetch v%d: error %d, %d topics answered, asked %d", v, fResp.ErrorCode, len(fResp.Topics), len(probes))
		}
		for i, pr := range probes {
			want := pr.want
			if v >= 13 {
				want = pr.wantByID
			}
			check(fmt.Sprintf("Fetch v%d", v), i, fResp.Topics[i].Partitions[0].ErrorCode, want)
		}
	}
}
