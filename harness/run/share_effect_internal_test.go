package run

import (
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/history"
)

// shareScript writes share calls to a metered recorder, as a share
// member's recorder does: the invoke when the request leaves, then its
// answer.
type shareScript struct {
	t   *testing.T
	rec *history.Recorder
}

func (s shareScript) fetch(member string, acks []history.ShareAck, acquired []history.ShareAcquired, ackErrs ...history.PartitionError) {
	s.t.Helper()
	p := member + "/fetch"
	inv := &history.ShareFetch{Member: member, Node: 1, SessionEpoch: 1, Fetch: []history.TP{{Topic: "t", Partition: 0}}, Acks: acks}
	if _, err := s.rec.Invoke(p, history.FShareFetch, inv, ""); err != nil {
		s.t.Fatal(err)
	}
	ans := *inv
	ans.LockTimeoutMs, ans.Acquired, ans.AckErrors = 5000, acquired, ackErrs
	if _, err := s.rec.OK(p, &ans, ""); err != nil {
		s.t.Fatal(err)
	}
}

func (s shareScript) invoke(member string, acks []history.ShareAck) {
	s.t.Helper()
	inv := &history.ShareFetch{Member: member, Node: 1, SessionEpoch: 2, Acks: acks}
	if _, err := s.rec.Invoke(member+"/fetch", history.FShareAck, inv, ""); err != nil {
		s.t.Fatal(err)
	}
}

func (s shareScript) answer(member string, acks []history.ShareAck) {
	s.t.Helper()
	if _, err := s.rec.OK(member+"/fetch", &history.ShareFetch{Member: member, Node: 1, SessionEpoch: 2, Acks: acks}, ""); err != nil {
		s.t.Fatal(err)
	}
}

func acq(first, last int64, count int16) []history.ShareAcquired {
	return []history.ShareAcquired{{ShareRange: history.ShareRange{Topic: "t", First: first, Last: last}, DeliveryCount: count}}
}

func ackOf(typ string, first, last int64) []history.ShareAck {
	return []history.ShareAck{{ShareRange: history.ShareRange{Topic: "t", First: first, Last: last}, Type: typ}}
}

// A share member's stall that let its locks lapse had an effect: the
// records it held went to another member at a higher delivery count while
// it stalled, and its late acknowledgement was refused. The meter says so,
// naming the stalled member, instead of "no observed effect".
func TestEffectMeterShareStall(t *testing.T) {
	rec, meter, _ := meteredRecorder(t)
	s := shareScript{t, rec}
	s.fetch("m1", nil, acq(0, 9, 1))
	s.fetch("m2", nil, acq(10, 14, 1))
	stall := faults.Fault{Kind: faults.MemberStall, Member: "m1"}
	mk := meter.mark()
	// m1 stalls; its locks lapse; m2 acquires its records again.
	s.fetch("m2", ackOf(history.AckAccept, 10, 14), acq(0, 9, 2))
	eff, none := meter.since(mk, stall)
	if none != "" {
		t.Fatalf("no effect claimed for a stall whose records were redelivered: %q", none)
	}
	for _, want := range []string{"10 acquired records came back without their holder releasing them", "held by m1 10", "records m1 held were acquired again without its release"} {
		if !strings.Contains(eff, want) {
			t.Errorf("effect %q lacks %q", eff, want)
		}
	}
	// The heal: m1's acknowledgement comes too late.
	heal := meter.mark()
	s.fetch("m1", ackOf(history.AckAccept, 0, 9), nil, history.PartitionError{Topic: "t", Partition: 0, Error: "INVALID_RECORD_STATE"})
	if eff, _ := meter.since(heal, stall); !strings.Contains(eff, "1 acknowledgements refused INVALID_RECORD_STATE") || !strings.Contains(eff, "m1 1") {
		t.Errorf("effect after the heal %q: want m1's refused acknowledgement", eff)
	}
}

// Records the acknowledgement policy sends back (release) and records
// settled do not count: a fault during which only that happened (and
// nothing else) still has no observed effect.
func TestEffectMeterShareNoEffect(t *testing.T) {
	rec, meter, _ := meteredRecorder(t)
	s := shareScript{t, rec}
	s.fetch("m1", nil, acq(0, 9, 1))
	s.fetch("m2", nil, acq(10, 19, 1))
	stall := faults.Fault{Kind: faults.MemberStall, Member: "m3"}
	mk := meter.mark()
	if eff, none := meter.since(mk, stall); eff != "" || none == "" || !strings.Contains(none, "no share record came back without a release") {
		t.Fatalf("nothing happened, yet effect %q / no effect %q", eff, none)
	}
	// m1 releases 0–4 and accepts 5–9; m2 acquires 0–4 again before m1's
	// answer is recorded. m2 accepts all it holds.
	s.invoke("m1", append(ackOf(history.AckRelease, 0, 4), ackOf(history.AckAccept, 5, 9)...))
	s.fetch("m2", ackOf(history.AckAccept, 10, 19), acq(0, 4, 2))
	s.answer("m1", append(ackOf(history.AckRelease, 0, 4), ackOf(history.AckAccept, 5, 9)...))
	s.fetch("m2", ackOf(history.AckAccept, 0, 4), nil)
	if eff, none := meter.since(mk, stall); eff != "" || none == "" {
		t.Errorf("only releases and accepts, yet effect %q / no effect %q", eff, none)
	}
}

// A share member fenced by the group coordinator (its heartbeat answered
// FENCED_MEMBER_EPOCH after its session expired) counts as fenced, and
// the meter reads share payloads decoded from a history file (values, not
// pointers) as well.
func TestEffectMeterShareFenced(t *testing.T) {
	m := newEffectMeter(func() time.Duration { return 0 })
	freeze := faults.Fault{Kind: faults.MemberFreeze, Member: "m1"}
	mk := m.mark()
	m.tap(history.Event{Type: history.Fail, Process: "m1/hb", F: history.FShareHeartbeat, Time: time.Second,
		Value: history.ShareHeartbeat{Member: "m1", Epoch: 4, Error: "FENCED_MEMBER_EPOCH"}})
	m.tap(history.Event{Type: history.OK, Process: "m2/fetch", F: history.FShareFetch, Time: time.Second,
		Value: history.ShareFetch{Member: "m2", Acquired: acq(0, 0, 1)}})
	eff, none := m.since(mk, freeze)
	if none != "" || !strings.Contains(eff, "m1 was fenced, expired or lost its partitions 1s after") {
		t.Errorf("effect %q / no effect %q: want m1 fenced", eff, none)
	}
	m.tap(history.Event{Type: history.OK, Process: "m3/fetch", F: history.FShareFetch, Time: 2 * time.Second,
		Value: history.ShareFetch{Member: "m3", Acquired: acq(0, 0, 2)}})
	if eff, _ := m.since(mk, freeze); !strings.Contains(eff, "held by m2 1") {
		t.Errorf("effect %q: want m2's record acquired again by m3 without a release", eff)
	}
}
