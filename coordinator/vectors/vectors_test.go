package vectors

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Format's meta re-encodes a subscription through Norm; with Identity that
// must give back the same bytes, or the two harnesses would disagree.
func TestSubscriptionRoundTrip(t *testing.T) {
	for _, ts := range [][]string{nil, {"t"}, {"t", "u", "a-long-topic"}} {
		b := Subscription(ts)
		got, ok := ParseSubscription(b)
		if !ok || !slices.Equal(got, ts) {
			t.Errorf("ParseSubscription(Subscription(%q)) = %q, %v", ts, got, ok)
		}
		if m := meta(b, Identity{}); m != Bytes(b) {
			t.Errorf("meta(%q) = %s, want %s", ts, m, Bytes(b))
		}
	}
	if _, ok := ParseSubscription([]byte("m")); ok {
		t.Error(`ParseSubscription("m") = ok, want not a subscription`)
	}
}

func TestTopicIDName(t *testing.T) {
	if got := TopicName(TopicID("orders")); got != "orders" {
		t.Errorf("TopicName(TopicID(orders)) = %q", got)
	}
	if got := TopicName([16]byte{1}); got != "01000000000000000000000000000000" {
		t.Errorf("TopicName of a foreign id = %q, want hex", got)
	}
}

// Sorted sorts only what a broker may order by hash; AsAnswered keeps the
// coordinator's order.
func TestFormatOrder(t *testing.T) {
	r := kmsg.NewPtrDeleteGroupsResponse()
	for _, g := range []string{"b", "a"} {
		x := kmsg.NewDeleteGroupsResponseGroup()
		x.Group = g
		r.Groups = append(r.Groups, x)
	}
	if got, want := Format(r, Identity{}, AsAnswered), "delete\n  b\n  a"; got != want {
		t.Errorf("AsAnswered: %q, want %q", got, want)
	}
	if got, want := Format(r, Identity{}, Sorted), "delete\n  a\n  b"; got != want {
		t.Errorf("Sorted: %q, want %q", got, want)
	}
}

func TestRequestBadArg(t *testing.T) {
	_, ok, err := Request(Identity{}, "heartbeat", Args{{Key: "gen", Vals: []string{"x"}}})
	if !ok || err == nil {
		t.Fatalf("heartbeat gen=x: ok=%v err=%v, want an error", ok, err)
	}
	if _, ok, _ := Request(Identity{}, "tick", nil); ok {
		t.Error("tick built a request")
	}
}
