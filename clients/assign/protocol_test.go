package assign

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// Bytes from Apache Kafka 4.4.0's own encoders (ConsumerProtocol.
// serializeSubscription / serializeAssignment, StickyAssignor and
// CooperativeStickyAssignor.subscriptionUserData after onAssignment with
// generation 5), for: topics [t1 t0], user data 0102, owned t0-1 t0-0
// t1-2, generation 7, rack r1; assignment t0-0 t0-1 t1-2 without user data.
var javaSubscriptions = map[int16]string{
	0: "0000000000020002743000027431000000020102",
	1: "00010000000200027430000274310000000201020000000200027430000000020000000000000001000274310000000100000002",
	2: "0002000000020002743000027431000000020102000000020002743000000002000000000000000100027431000000010000000200000007",
	3: "000300000002000274300002743100000002010200000002000274300000000200000000000000010002743100000001000000020000000700027231",
}

const (
	javaAssignmentV0 = "00000000000200027430000000020000000000000001000274310000000100000002ffffffff"
	javaStickyV1     = "0000000200027430000000010000000000027431000000010000000200000005"
	javaCooperative  = "00000005"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSubscriptionMatchesJava(t *testing.T) {
	t.Parallel()
	rack := "r1"
	for v, want := range javaSubscriptions {
		s := Subscription{Version: v, Topics: []string{"t1", "t0"}, UserData: []byte{1, 2},
			Owned: map[string][]int32{"t0": {1, 0}, "t1": {2}}, Generation: 7, Rack: &rack}
		got, err := EncodeSubscription(s)
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(got) != want {
			t.Errorf("v%d: encoded %x, Java encodes %s", v, got, want)
		}
		dec, err := DecodeSubscription(unhex(t, want))
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		exp := Subscription{Version: v, Topics: []string{"t0", "t1"}, UserData: []byte{1, 2}, Generation: -1}
		if v >= 1 {
			exp.Owned = map[string][]int32{"t0": {0, 1}, "t1": {2}}
		}
		if v >= 2 {
			exp.Generation = 7
		}
		if v >= 3 {
			exp.Rack = &rack
		}
		if !reflect.DeepEqual(dec, exp) {
			t.Errorf("v%d: decoded %+v, want %+v", v, dec, exp)
		}
	}
}

func TestAssignmentMatchesJava(t *testing.T) {
	t.Parallel()
	for v := int16(0); v <= HighestProtocolVersion; v++ {
		want := unhex(t, javaAssignmentV0)
		want[1] = byte(v) // only the version differs across 0–3
		got, err := EncodeAssignment(MemberAssignment{Version: v, Partitions: map[string][]int32{"t1": {2}, "t0": {1, 0}}})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("v%d: encoded %x, Java encodes %x", v, got, want)
		}
		dec, err := DecodeAssignment(want)
		if err != nil {
			t.Fatal(err)
		}
		if exp := (MemberAssignment{Version: v, Partitions: map[string][]int32{"t0": {0, 1}, "t1": {2}}}); !reflect.DeepEqual(dec, exp) {
			t.Errorf("v%d: decoded %+v, want %+v", v, dec, exp)
		}
	}
	plan := Assignment{"a": {"t0": {0, 1}, "t1": {2}}, "b": {}}
	payloads, err := AssignmentFor(plan, 0)
	if err != nil || hex.EncodeToString(payloads["a"]) != javaAssignmentV0 {
		t.Errorf("AssignmentFor: %x, %v", payloads["a"], err)
	}
	if dec, err := DecodeAssignment(payloads["b"]); err != nil || len(dec.Partitions) != 0 {
		t.Errorf("empty member: %+v, %v", dec, err)
	}
}

func TestUserDataMatchesJava(t *testing.T) {
	t.Parallel()
	got := EncodeStickyUserData(StickyUserData{Owned: map[string][]int32{"t1": {2}, "t0": {0}}, Generation: 5})
	if hex.EncodeToString(got) != javaStickyV1 {
		t.Errorf("sticky user data %x, Java encodes %s", got, javaStickyV1)
	}
	dec, err := DecodeStickyUserData(unhex(t, javaStickyV1))
	if err != nil || dec.Generation != 5 || !reflect.DeepEqual(dec.Owned, map[string][]int32{"t0": {0}, "t1": {2}}) {
		t.Errorf("decoded %+v, %v", dec, err)
	}
	if got := hex.EncodeToString(EncodeCooperativeUserData(5)); got != javaCooperative {
		t.Errorf("cooperative user data %s, Java encodes %s", got, javaCooperative)
	}
}

func TestDecodeStickyUserDataLikeJava(t *testing.T) {
	t.Parallel()
	v1 := unhex(t, javaStickyV1)
	v0 := v1[:len(v1)-4]
	for _, c := range []struct {
		name    string
		data    []byte
		gen     int32
		owned   int
		wantErr bool
	}{
		{"v1", v1, 5, 2, false},
		{"v0 has no generation", v0, -1, 2, false},
		{"v0 with 3 trailing bytes falls back to v0", append(append([]byte{}, v0...), 1, 2, 3), -1, 2, false},
		{"v1 with trailing bytes ignores them", append(append([]byte{}, v1...), 9, 9), 5, 2, false},
		{"negative array length", unhex(t, "ffffffff"), 0, 0, true},
		{"array length beyond the data", unhex(t, "7fffffff0000"), 0, 0, true},
		{"negative string length", unhex(t, "00000001ffff"), 0, 0, true},
		{"truncated partitions", unhex(t, "000000010001610000000200000001"), 0, 0, true},
		{"empty", nil, 0, 0, true},
	} {
		u, err := DecodeStickyUserData(c.data)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: err = %v", c.name, err)
			continue
		}
		n := 0
		for _, ps := range u.Owned {
			n += len(ps)
		}
		if err == nil && (u.Generation != c.gen || n != c.owned) {
			t.Errorf("%s: got %+v", c.name, u)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		data []byte
		want string
	}{
		{nil, "too short"},
		{[]byte{0}, "too short"},
		{[]byte{0xff, 0xff, 0, 0, 0, 0}, "version -1"},
		{unhex(t, javaSubscriptions[3])[:20], "malformed"},
	} {
		if _, err := DecodeSubscription(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DecodeSubscription(%x) = %v, want error with %q", c.data, err, c.want)
		}
	}
	if _, err := DecodeAssignment([]byte{0x80, 0, 0}); err == nil || !strings.Contains(err.Error(), "version -32768") {
		t.Errorf("DecodeAssignment negative version: %v", err)
	}
	if _, err := EncodeSubscription(Subscription{Version: 4}); err == nil {
		t.Error("EncodeSubscription v4 succeeded")
	}
	if _, err := EncodeAssignment(MemberAssignment{Version: -1}); err == nil {
		t.Error("EncodeAssignment v-1 succeeded")
	}
}

// TestHigherVersionDecodesAsHighest: Java reads a version above 3 with
// the v3 layout; so do we, keeping the version number.
func TestHigherVersionDecodesAsHighest(t *testing.T) {
	t.Parallel()
	b := unhex(t, javaSubscriptions[3])
	b[1] = 9
	s, err := DecodeSubscription(b)
	if err != nil || s.Version != 9 || s.Rack == nil || *s.Rack != "r1" || s.Generation != 7 {
		t.Fatalf("got %+v, %v", s, err)
	}
}

func TestSubscriptionMember(t *testing.T) {
	t.Parallel()
	empty, inst := "", "i1"
	m := Subscription{Topics: []string{"t"}, Rack: &empty, Generation: 3}.Member("m1", &inst)
	if m.ID != "m1" || *m.InstanceID != "i1" || m.Rack != "" || m.Generation != 3 || len(m.Topics) != 1 {
		t.Fatalf("got %+v", m)
	}
}

func TestSubscriptionUserData(t *testing.T) {
	t.Parallel()
	owned := map[string][]int32{"t0": {0}, "t1": {2}}
	for _, c := range []struct {
		assignor string
		owned    map[string][]int32
		want     string
	}{
		{RangeName, owned, ""},
		{RoundRobinName, owned, ""},
		{StickyName, nil, ""},
		{StickyName, owned, javaStickyV1},
		{CooperativeStickyName, owned, javaCooperative},
	} {
		got, err := SubscriptionUserData(c.assignor, c.owned, 5)
		if err != nil || hex.EncodeToString(got) != c.want {
			t.Errorf("%s: %x, %v; want %s", c.assignor, got, err, c.want)
		}
	}
	if _, err := SubscriptionUserData("uniform", nil, 1); err == nil {
		t.Error("unknown assignor accepted")
	}
}

// TestVersionOneWithoutOwnedRefused: a subscription that announces version
// 1 but carries only version 0's fields (as kafka-go writes it) is refused
// with "malformed consumer protocol subscription". harness/check's finding
// kafkago-subscription-version-mismatch matches that text in the member's
// error, so the message is pinned here.
func TestVersionOneWithoutOwnedRefused(t *testing.T) {
	b, err := EncodeSubscription(Subscription{Version: 0, Topics: []string{"gq-records"}, Generation: -1})
	if err != nil {
		t.Fatal(err)
	}
	b[0], b[1] = 0, 1 // announce version 1
	_, err = DecodeSubscription(b)
	if err == nil || !strings.Contains(err.Error(), "malformed consumer protocol subscription") {
		t.Fatalf("version 1 without owned_partitions: %v, want a malformed consumer protocol subscription error", err)
	}
}
