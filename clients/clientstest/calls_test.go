package clientstest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/clients"
)

// errs is a testing.TB that keeps what Errorf says.
type errs struct {
	testing.TB
	said []string
}

func (e *errs) Helper() {}

func (e *errs) Errorf(format string, args ...any) {
	e.said = append(e.said, fmt.Sprintf(format, args...))
}

// TestCheckCalls passes calls that keep the contract and names each way of
// breaking it.
func TestCheckCalls(t *testing.T) {
	sent := func(call uint64, op clients.Op) clients.Event {
		return clients.Event{Kind: clients.Sent, Call: call, Op: op}
	}
	answer := func(call uint64, op clients.Op) clients.Event {
		return clients.Event{Kind: clients.Heartbeat, Call: call, Op: op}
	}
	hb, commit, join := clients.OpHeartbeat, clients.OpCommit, clients.OpJoin
	for _, tc := range []struct {
		name   string
		events []clients.Event
		want   string
	}{
		{"kept", []clients.Event{sent(1, hb), sent(2, commit), answer(1, hb), {Kind: clients.Assigned}, answer(2, commit)}, ""},
		{"twice", []clients.Event{sent(1, hb), sent(1, hb), answer(1, hb)}, "call 1 sent twice"},
		{"lane-busy", []clients.Event{sent(1, hb), sent(2, hb), answer(1, hb), answer(2, hb)}, "sent while call 1 of lane"},
		{"not-open", []clients.Event{answer(3, join)}, "answers call 3, which is not open"},
		{"other-op", []clients.Event{sent(1, hb), answer(1, commit)}, "sent as heartbeat answered as commit"},
		{"unanswered", []clients.Event{sent(1, commit)}, "call 1 () never answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := &errs{TB: t}
			var pairs []string
			answered := CheckCalls(tb, tc.events, func(_ int, s, a clients.Event) { pairs = append(pairs, fmt.Sprintf("%d:%d", s.Call, a.Call)) })
			got := strings.Join(tb.said, "\n")
			switch {
			case tc.want == "" && got != "":
				t.Fatalf("calls that keep the contract failed it:\n%s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("want a problem saying %q, got:\n%s", tc.want, got)
			case tc.want == "" && (answered[hb] != 1 || answered[commit] != 1):
				t.Fatalf("answered %v, want one heartbeat and one commit", answered)
			case tc.want == "" && strings.Join(pairs, " ") != "1:1 2:2":
				t.Fatalf("check saw the pairs %v, want [1:1 2:2]", pairs)
			}
		})
	}
}
