package wiretap

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
)

func shareCallsUnder() (*ShareCalls, *[]clients.Event) {
	var got []clients.Event
	at := time.Unix(0, 0)
	now := func() time.Time { at = at.Add(time.Millisecond); return at }
	c := NewShareCalls(CallsConfig{
		Group: "g", Protocol: clients.Share, Client: "kgo",
		Event: func(k clients.Kind) clients.Event {
			return clients.Event{Kind: k, Protocol: clients.Share, Member: "m", Generation: -1, MemberEpoch: -1, GroupEpoch: -1, At: now()}
		},
		Now:    now,
		Report: func(e clients.Event) { got = append(got, e) },
	})
	return c, &got
}

var topicID = [16]byte{7}

// metadata answers a Metadata request naming topic t (topicID) and
// brokers 1 and 2.
func metadata(c *ShareCalls) {
	tok := c.RequestOn("b1:9092", kmsg.NewPtrMetadataRequest())
	resp := kmsg.NewPtrMetadataResponse()
	for _, n := range []int32{1, 2} {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = n, "b"+string(rune('0'+n)), 9092
		resp.Brokers = append(resp.Brokers, b)
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic, mt.TopicID = kmsg.StringPtr("t"), topicID
	resp.Topics = append(resp.Topics, mt)
	c.Response(tok, resp)
}

// TestShareCallsReportFetchAndAck: a ShareFetch is reported on the lane of
// the broker it went to (its node id learned from Metadata), with the
// acknowledgements it carried (one type per batch, or one per offset), and
// its answer with the ranges acquired, their delivery counts, the lock and
// the partitions' acknowledgement errors; a ShareAcknowledge to another
// broker runs on that broker's lane at the same time; a request lost
// answers as an unknown outcome; requests of another group are not
// reported.
func TestShareCallsReportFetchAndAck(t *testing.T) {
	c, got := shareCallsUnder()
	metadata(c)
	f := kmsg.NewPtrShareFetchRequest()
	f.GroupID, f.MemberID, f.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr("id-1"), 3
	ft := kmsg.NewShareFetchRequestTopic()
	ft.TopicID = topicID
	fp := kmsg.NewShareFetchRequestTopicPartition()
	fp.Partition = 0
	b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 4, 7, []int8{1, 1, 2, 0}
	fp.AcknowledgementBatches = append(fp.AcknowledgementBatches, b)
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	ftok := c.RequestOn("b1:9092", f)

	a := kmsg.NewPtrShareAcknowledgeRequest()
	a.GroupID, a.MemberID, a.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr("id-1"), 5
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = topicID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ap.Partition = 1
	ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, 2, []int8{3}
	ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, ab)
	at.Partitions = append(at.Partitions, ap)
	a.Topics = append(a.Topics, at)
	atok := c.RequestOn("b2:9092", a)

	resp := kmsg.NewPtrShareFetchResponse()
	resp.AcquisitionLockTimeoutMillis = 5000
	rt := kmsg.NewShareFetchResponseTopic()
	rt.TopicID = topicID
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.AcknowledgeErrorCode = kerr.InvalidRecordState.Code
	rp.AcquiredRecords = []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 8, LastOffset: 9, DeliveryCount: 2}}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	c.Response(ftok, resp)
	c.Lost(atok, errors.New("connection closed"))

	other := kmsg.NewPtrShareFetchRequest()
	other.GroupID = kmsg.StringPtr("h")
	if tok := c.RequestOn("b1:9092", other); tok != nil {
		t.Errorf("a ShareFetch of another group was reported")
	}
	if len(*got) != 4 {
		t.Fatalf("%d events, want 4: %+v", len(*got), *got)
	}
	fs, as, fa, aa := (*got)[0], (*got)[1], (*got)[2], (*got)[3]
	if fs.Kind != clients.Sent || fs.Op != clients.OpShareFetch || fs.MemberID != "id-1" || fs.Share.Node != 1 || fs.Share.SessionEpoch != 3 {
		t.Errorf("fetch sent %+v %+v", fs, fs.Share)
	}
	if acks := fs.Share.Acks; len(acks) != 3 || acks[0].First != 4 || acks[0].Last != 5 || acks[0].Type != clients.AckAccept ||
		acks[1].Type != clients.AckRelease || acks[2].First != 7 || acks[2].Type != clients.AckGap {
		t.Errorf("fetch's acks %+v, want accept 4-5, release 6, gap 7", acks)
	}
	if as.Op != clients.OpShareAck || as.Share.Node != 2 || len(as.Share.Acks) != 1 || as.Share.Acks[0].Type != clients.AckReject || as.Share.Acks[0].Partition != 1 {
		t.Errorf("acknowledge sent %+v %+v", as, as.Share)
	}
	if fa.Kind != clients.ShareFetched || fa.Call != fs.Call || fa.Err != "" || fa.Share.LockTimeoutMs != 5000 ||
		len(fa.Share.Acquired) != 1 || fa.Share.Acquired[0].DeliveryCount != 2 || fa.Share.AckErrs["t"][0] != "INVALID_RECORD_STATE" {
		t.Errorf("fetch answered %+v %+v", fa, fa.Share)
	}
	if aa.Kind != clients.ShareAcked || aa.Call != as.Call || aa.Err == "" || aa.ErrCode != 0 {
		t.Errorf("lost acknowledge answered %+v, want an error without a code", aa)
	}
}

// TestShareCallsHeartbeat: the heartbeat lane reports the join, the
// assignment (topic ids named) and the leave; a top-level error is
// reported by its name and code.
func TestShareCallsHeartbeat(t *testing.T) {
	c, got := shareCallsUnder()
	metadata(c)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch = "g", "id-1", 0
	tok := c.RequestOn("b1:9092", hb)
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.MemberEpoch = 4
	resp.Assignment = &kmsg.ShareGroupHeartbeatResponseAssignment{TopicPartitions: []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{{TopicID: topicID, Partitions: []int32{1, 0}}}}
	c.Response(tok, resp)
	leave := kmsg.NewPtrShareGroupHeartbeatRequest()
	leave.GroupID, leave.MemberID, leave.MemberEpoch = "g", "id-1", -1
	tok = c.RequestOn("b1:9092", leave)
	lresp := kmsg.NewPtrShareGroupHeartbeatResponse()
	lresp.ErrorCode = kerr.UnknownMemberID.Code
	c.Response(tok, lresp)
	if len(*got) != 4 {
		t.Fatalf("%d events: %+v", len(*got), *got)
	}
	if e := (*got)[1]; e.Kind != clients.Heartbeat || e.MemberEpoch != 4 || len(e.Partitions["t"]) != 2 || e.Partitions["t"][0] != 0 {
		t.Errorf("join answered %+v", e)
	}
	if e := (*got)[2]; e.Op != clients.OpLeave || e.MemberEpoch != -1 {
		t.Errorf("leave sent %+v", e)
	}
	if e := (*got)[3]; e.Kind != clients.Left || e.Err != "UNKNOWN_MEMBER_ID" || e.ErrCode != kerr.UnknownMemberID.Code {
		t.Errorf("leave answered %+v", e)
	}
}
