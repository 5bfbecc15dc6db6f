package run_test

import (
	"bytes"
	"testing"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/run"
)

// TestShareRecorder: a share member's calls become paired share events on
// its own processes, an answer with a Kafka error a fail, one without an
// answer an unknown outcome; acquisitions keep their delivery count and
// lock, acknowledgements their type and per-partition outcome; the history
// reads back typed and well formed.
func TestShareRecorder(t *testing.T) {
	rec, buf := newRec(t)
	h := run.NewShareRecorder(rec, "s1")
	base := func(k clients.Kind, call uint64, op clients.Op) clients.Event {
		return clients.Event{Kind: k, Protocol: clients.Share, Member: "s1", MemberID: "s1-id", Generation: -1, MemberEpoch: -1, GroupEpoch: -1, Call: call, Op: op, Why: "test"}
	}
	hb := base(clients.Sent, 1, clients.OpHeartbeat)
	hb.MemberEpoch = 0
	h.OnEvent(hb)
	hbA := base(clients.Heartbeat, 1, clients.OpHeartbeat)
	hbA.MemberEpoch, hbA.Partitions = 3, parts("t", 0, 1)
	h.OnEvent(hbA)

	r0 := clients.ShareRange{Topic: "t", Partition: 0, First: 0, Last: 4}
	fs := base(clients.Sent, 2, clients.OpShareFetch)
	fs.Share = &clients.ShareCall{Node: 1, SessionEpoch: 0, Fetch: parts("t", 0)}
	h.OnEvent(fs)
	fa := base(clients.ShareFetched, 2, clients.OpShareFetch)
	fa.Share = &clients.ShareCall{Node: 1, SessionEpoch: 0, Fetch: parts("t", 0), LockTimeoutMs: 5000,
		Acquired: []clients.ShareAcquired{{ShareRange: r0, DeliveryCount: 2}}}
	h.OnEvent(fa)

	as := base(clients.Sent, 3, clients.OpShareAck)
	as.Share = &clients.ShareCall{Node: 1, SessionEpoch: 1, Acks: []clients.ShareAck{{ShareRange: r0, Type: clients.AckReject}}}
	h.OnEvent(as)
	aa := base(clients.ShareAcked, 3, clients.OpShareAck)
	aa.Share = &clients.ShareCall{Node: 1, SessionEpoch: 1, Acks: as.Share.Acks, AckErrs: map[string]map[int32]string{"t": {0: "INVALID_RECORD_STATE"}}}
	h.OnEvent(aa)

	lost := base(clients.Sent, 4, clients.OpShareFetch)
	lost.Share = &clients.ShareCall{Node: 1, SessionEpoch: 2, Fetch: parts("t", 0)}
	h.OnEvent(lost)
	la := base(clients.ShareFetched, 4, clients.OpShareFetch)
	la.Share, la.Err = lost.Share, "connection reset"
	h.OnEvent(la)

	refused := base(clients.Sent, 5, clients.OpShareFetch)
	refused.Share = &clients.ShareCall{Node: 1, SessionEpoch: 3, Fetch: parts("t", 0)}
	h.OnEvent(refused)
	ra := base(clients.ShareFetched, 5, clients.OpShareFetch)
	ra.Share, ra.Err, ra.ErrCode = refused.Share, "SHARE_SESSION_NOT_FOUND", 122
	h.OnEvent(ra)

	open := base(clients.Sent, 6, clients.OpShareFetch)
	open.Share = &clients.ShareCall{Node: 1, SessionEpoch: 0}
	h.OnEvent(open)
	h.Finish("member closed")
	if err := h.Err(); err != nil {
		t.Fatal(err)
	}

	loaded, err := history.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	evs := loaded.Events
	var got []string
	for _, e := range evs {
		got = append(got, e.Process+" "+e.F+" "+string(e.Type))
	}
	want := []string{
		"s1/hb share-heartbeat invoke", "s1/hb share-heartbeat ok",
		"s1/fetch share-fetch invoke", "s1/fetch share-fetch ok",
		"s1/fetch share-ack invoke", "s1/fetch share-ack ok",
		"s1/fetch share-fetch invoke", "s1/fetch share-fetch info",
		"s1/fetch share-fetch invoke", "s1/fetch share-fetch fail",
		"s1/fetch share-fetch invoke", "s1/fetch share-fetch info",
	}
	if len(got) != len(want) {
		t.Fatalf("events:\n%v\nwant\n%v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %q, want %q", i, got[i], want[i])
		}
	}
	hbDone := evs[1].Value.(history.ShareHeartbeat)
	if hbDone.Epoch != 0 || hbDone.ResultEpoch != 3 || !hbDone.HasAssignment || len(hbDone.Assignment) != 2 {
		t.Errorf("heartbeat completion %+v", hbDone)
	}
	f := evs[3].Value.(history.ShareFetch)
	if f.LockTimeoutMs != 5000 || len(f.Acquired) != 1 || f.Acquired[0].DeliveryCount != 2 || f.Acquired[0].Last != 4 {
		t.Errorf("fetch completion %+v", f)
	}
	a := evs[5].Value.(history.ShareFetch)
	if len(a.Acks) != 1 || a.Acks[0].Type != history.AckReject || a.AckError(history.TP{Topic: "t", Partition: 0}) != "INVALID_RECORD_STATE" {
		t.Errorf("ack completion %+v", a)
	}
	if v := check.HistoryWellFormed(evs); !v.Holds {
		t.Errorf("history not well formed: %+v", v.Violations)
	}
}
