package run_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/run"
)

// TestContractWritesUnsentUnknown scripts the order of events that made
// TestMemberContract/classic fail once: the classic member reports its
// fourth heartbeat sent (the invoke is recorded) as it hands the request to
// kgo, the member's close cancels the request's context before kgo writes
// it (kgo checks the context once more right before the write), and the
// member reports the call ended with "context canceled", no answer. The
// history holds four heartbeat invokes, the wire three heartbeats. That
// history is legitimate (the fourth call's outcome is unknown, and nothing
// was written is one of the outcomes), so the contract's comparison of the
// lane with the wire must accept it; and it must still refuse a lane whose
// calls and writes really differ.
func TestContractWritesUnsentUnknown(t *testing.T) {
	t.Parallel()
	const name, group = "c-classic", "contract-classic"
	// last is how the member ends the fourth heartbeat; written, whether
	// the tap sees it on the wire; extra, a heartbeat of that generation
	// written that the member never reported.
	type script struct {
		last    func(clients.Event) clients.Event
		written bool
		extra   int32
	}
	canceled := func(e clients.Event) clients.Event {
		e.Err, e.Why = "context canceled", "member closing: stopped waiting for the Heartbeat answer"
		return e
	}
	answeredOK := func(e clients.Event) clients.Event { return e }
	fenced := func(e clients.Event) clients.Event {
		e.Err, e.ErrCode = kerr.UnknownMemberID.Message, kerr.UnknownMemberID.Code
		return e
	}
	play := func(t *testing.T, s script) bool {
		t.Helper()
		rec, _ := newRec(t)
		h := run.NewHookRecorder(rec, name, "classic")
		wit := &witness{group: group, proto: clients.Classic, lanes: map[clients.Lane][]string{}}
		write := func(gen int32) {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.Generation = group, gen
			wit.Request(req)
		}
		hb := ev(clients.Heartbeat, clients.Classic, name, 1)
		for n := uint64(1); n <= 3; n++ {
			h.OnEvent(sent(hb, n, clients.OpHeartbeat))
			write(1)
			h.OnEvent(answered(hb, n, clients.OpHeartbeat))
		}
		// The fourth: recorded as invoked, then close cancels it.
		h.OnEvent(sent(hb, 4, clients.OpHeartbeat))
		if s.written {
			write(1)
		}
		h.OnEvent(s.last(answered(hb, 4, clients.OpHeartbeat)))
		if s.extra != 0 {
			write(s.extra)
		}
		if err := h.Finish(); err != nil {
			t.Fatal(err)
		}
		es := rec.Events()
		if v := check.HistoryWellFormed(es); !v.Holds {
			t.Fatalf("HistoryWellFormed: %+v\nhistory:\n%s", v.Violations, dump(es))
		}
		got := invokes(t, es, name, clients.Classic)[clients.LaneHeartbeat]
		if len(got) != 4 {
			t.Fatalf("%d heartbeat invokes, want 4:\n%s", len(got), dump(es))
		}
		return sameWrites(got, wit.get()[clients.LaneHeartbeat])
	}
	for _, c := range []struct {
		name string
		s    script
		want bool
	}{
		// The flake: invoked, cancelled by close before the write.
		{"cancelled before the write", script{last: canceled}, true},
		// The same outcome after the write: the wire shows it too.
		{"cancelled after the write", script{last: canceled, written: true}, true},
		// Bugs the comparison still catches: an answer to a request
		// never written, ...
		{"answered but never written", script{last: answeredOK}, false},
		{"refused but never written", script{last: fenced}, false},
		// ... a request written that no invoke reports, ...
		{"written but not reported", script{last: answeredOK, written: true, extra: 1}, false},
		// ... and an unknown call in place of a write it does not carry.
		{"unknown call, other generation written", script{last: canceled, extra: 2}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := play(t, c.s); got != c.want {
				t.Errorf("lane and wire agree: %v, want %v", got, c.want)
			}
		})
	}
}

// TestSameWritesSkipsOnlyWhatItMust: an unknown call may be left out of
// the writes, but a written request matches one call only; whether the
// first or second of two identical calls went unwritten, the lane agrees.
func TestSameWritesSkipsOnlyWhatItMust(t *testing.T) {
	t.Parallel()
	hb := func(unknown bool) laneCall { return laneCall{req: "heartbeat epoch=1", unknown: unknown} }
	for _, c := range []struct {
		name  string
		calls []laneCall
		wire  []string
		want  bool
	}{
		{"nothing", nil, nil, true},
		{"first of two unwritten", []laneCall{hb(true), hb(false)}, []string{"heartbeat epoch=1"}, true},
		{"both written", []laneCall{hb(true), hb(false)}, []string{"heartbeat epoch=1", "heartbeat epoch=1"}, true},
		{"answered one unwritten", []laneCall{hb(false), hb(false)}, []string{"heartbeat epoch=1"}, false},
		{"one write too many", []laneCall{hb(true)}, []string{"heartbeat epoch=1", "heartbeat epoch=1"}, false},
		{"order", []laneCall{{req: "leave"}, hb(false)}, []string{"heartbeat epoch=1", "leave"}, false},
	} {
		if got := sameWrites(c.calls, c.wire); got != c.want {
			t.Errorf("%s: sameWrites = %v, want %v", c.name, got, c.want)
		}
	}
}
