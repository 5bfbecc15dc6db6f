package assign

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// FuzzAssign builds a group from the fuzzed seed with the shared seeded
// generator (including claims of partitions that do not exist) and checks
// every assignor: no panic, a valid plan (or Java's own failure), the
// cooperative rule, balance where promised, and the same plan twice.
func FuzzAssign(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(seed, uint8(6), uint8(4), uint8(12))
	}
	f.Add(uint64(99), uint8(40), uint8(6), uint8(60))
	f.Fuzz(func(t *testing.T, seed uint64, maxMembers, maxTopics, maxPartitions uint8) {
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		members, topics := genGroup(r, 1+int(maxMembers%48), 1+int(maxTopics%7), int(maxPartitions%64), true)
		identical := identicalSubscriptions(members)
		for _, a := range all() {
			plan, ok := assignHolds(t, a, members, topics, identical)
			if !ok {
				continue
			}
			again, _ := a.Assign(members, topics)
			if again.String() != plan.String() {
				t.Fatalf("%s: not deterministic:\n%s\nvs\n%s", a.Name(), plan, again)
			}
		}
	})
}

// FuzzDecodeSubscription: any bytes decode or fail without panicking, and
// what decodes re-encodes to something that decodes the same.
func FuzzDecodeSubscription(f *testing.F) {
	for _, h := range javaSubscriptions {
		b, _ := hexDecode(h)
		f.Add(b)
	}
	f.Add([]byte{0, 3, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSubscription(b)
		if err != nil {
			return
		}
		if s.Version > HighestProtocolVersion {
			s.Version = HighestProtocolVersion
		}
		enc, err := EncodeSubscription(s)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", s, err)
		}
		back, err := DecodeSubscription(enc)
		if err != nil {
			t.Fatalf("decoding our own encoding %x: %v", enc, err)
		}
		if !reflect.DeepEqual(normalizeSub(back), normalizeSub(s)) {
			t.Fatalf("round trip changed %+v into %+v", s, back)
		}
	})
}

// FuzzSubscriptionRoundTrip: structured subscriptions survive encode and
// decode at every version, less the fields the version lacks.
func FuzzSubscriptionRoundTrip(f *testing.F) {
	f.Add(uint64(1), int16(3))
	f.Add(uint64(2), int16(0))
	f.Fuzz(func(t *testing.T, seed uint64, version int16) {
		version = int16(uint16(version) % (HighestProtocolVersion + 1))
		r := rand.New(rand.NewPCG(seed, 7))
		members, _ := genGroup(r, 3, 5, 10, true)
		m := members[0]
		var rack *string
		if r.IntN(2) == 0 {
			s := "rack-" + m.ID
			rack = &s
		}
		in := Subscription{Version: version, Topics: m.Topics, UserData: m.UserData, Owned: m.Owned, Generation: m.Generation, Rack: rack}
		enc, err := EncodeSubscription(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecodeSubscription(enc)
		if err != nil {
			t.Fatalf("%+v: %v", in, err)
		}
		want := in
		if version < 1 {
			want.Owned = nil
		}
		if version < 2 {
			want.Generation = -1
		}
		if version < 3 {
			want.Rack = nil
		}
		if !reflect.DeepEqual(normalizeSub(out), normalizeSub(want)) {
			t.Fatalf("v%d round trip:\n in %+v\nout %+v", version, want, out)
		}
	})
}

func FuzzDecodeAssignment(f *testing.F) {
	b, _ := hexDecode(javaAssignmentV0)
	f.Add(b)
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAssignment(b)
		if err != nil {
			return
		}
		if a.Version > HighestProtocolVersion {
			a.Version = HighestProtocolVersion
		}
		enc, err := EncodeAssignment(a)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeAssignment(enc)
		if err != nil {
			t.Fatalf("decoding our own encoding %x: %v", enc, err)
		}
		if !reflect.DeepEqual(normalizeParts(back.Partitions), normalizeParts(a.Partitions)) || !slices.Equal(back.UserData, a.UserData) {
			t.Fatalf("round trip changed %+v into %+v", a, back)
		}
	})
}

func FuzzDecodeStickyUserData(f *testing.F) {
	b, _ := hexDecode(javaStickyV1)
	f.Add(b)
	f.Add(b[:len(b)-4])
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := DecodeStickyUserData(b)
		if err != nil {
			return
		}
		back, err := DecodeStickyUserData(EncodeStickyUserData(u))
		if err != nil {
			t.Fatalf("decoding our own encoding of %+v: %v", u, err)
		}
		if back.Generation != u.Generation || !reflect.DeepEqual(normalizeParts(back.Owned), normalizeParts(u.Owned)) {
			t.Fatalf("round trip changed %+v into %+v", u, back)
		}
	})
}

func hexDecode(s string) ([]byte, error) {
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			default:
				v |= byte(c-'a') + 10
			}
		}
		b[i] = v
	}
	return b, nil
}

// normalizeSub puts a subscription in the form encoding produces: topics
// and partitions sorted, empty collections nil.
func normalizeSub(s Subscription) Subscription {
	s.Topics = slices.Clone(s.Topics)
	slices.SortFunc(s.Topics, javaCompare)
	if len(s.Topics) == 0 {
		s.Topics = nil
	}
	s.Owned = normalizeParts(s.Owned)
	return s
}

func normalizeParts(m map[string][]int32) map[string][]int32 {
	if len(m) == 0 {
		return nil
	}
	out := map[string][]int32{}
	for t, ps := range m {
		out[t] = slices.Sorted(slices.Values(ps))
	}
	return out
}
