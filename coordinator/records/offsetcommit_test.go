package records

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// offsetCommitInputs are the encodings of random records of every type
// (gen.record), then, for each offset commit among them, the same bytes
// broken: the key and the value cut short, a byte changed, a byte added,
// the value version set to every version from -1 to 6 (valid ones and
// not), and an empty value.
func offsetCommitInputs(t *testing.T, g gen, n int) [][2][]byte {
	t.Helper()
	var out [][2][]byte
	for range n {
		r := g.record()
		key, value, err := EncodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, [2][]byte{key, value})
		if _, ok := r.Key.(OffsetCommitKey); !ok {
			continue
		}
		out = append(out, [2][]byte{key[:g.rng.IntN(len(key))], value})
		flipped := append([]byte(nil), key...)
		flipped[g.rng.IntN(len(flipped))] ^= byte(1 + g.rng.IntN(255))
		out = append(out, [2][]byte{flipped, value}, [2][]byte{append(append([]byte(nil), key...), 0), value})
		if value == nil {
			out = append(out, [2][]byte{key, []byte{}})
			continue
		}
		out = append(out, [2][]byte{key, value[:g.rng.IntN(len(value))]})
		flipped = append([]byte(nil), value...)
		flipped[g.rng.IntN(len(flipped))] ^= byte(1 + g.rng.IntN(255))
		out = append(out, [2][]byte{key, flipped}, [2][]byte{key, append(append([]byte(nil), value...), 0)})
		for ver := -1; ver <= 6; ver++ {
			v := append([]byte(nil), value...)
			binary.BigEndian.PutUint16(v, uint16(int16(ver)))
			out = append(out, [2][]byte{key, v})
		}
	}
	return out
}

// TestDecodeOffsetCommitSameAsDecode: for every key of type 0 or 1,
// Decoder.DecodeOffsetCommit, with one value reused throughout, gives what
// DecodeRecord gives (the same key and value, or the same error), and
// leaves the value alone for a tombstone; for every other key it fails.
// The inputs cover every value version of both types, tombstones, unknown
// and known tagged fields and broken bytes of every kind.
func TestDecodeOffsetCommitSameAsDecode(t *testing.T) {
	g := gen{rng: rand.New(rand.NewPCG(3, 4))}
	inputs := offsetCommitInputs(t, g, 20000)
	for _, tc := range goldenRecords {
		key := hx(t, tc.key)
		var value []byte
		if tc.rec.Value != nil {
			value = hx(t, tc.value)
		}
		inputs = append(inputs, [2][]byte{key, value})
	}
	inputs = append(inputs, [2][]byte{nil, nil}, [2][]byte{{0}, nil}, [2][]byte{{0, 1}, nil}, [2][]byte{{0, 0}, []byte{}})
	// Metadata of a two-byte compact length, and of the longest string.
	for _, n := range []int{126, 127, 200, 0x7fff} {
		for _, ver := range []int16{3, 4} {
			w := NewOffsetCommitValue(ver)
			w.Metadata = strings.Repeat("m", n)
			key, value, err := EncodeRecord(Record{Key: OffsetCommitKey{Group: "g", Topic: "t"}, Value: w})
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, [2][]byte{key, value})
		}
	}

	d := NewDecoder()
	var v OffsetCommitValue
	seen := map[string]int{}
	for _, in := range inputs {
		key, value := in[0], in[1]
		what, err := sameAsDecodeRecord(d, key, value, &v)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range what {
			seen[w]++
		}
	}
	want := []string{"other type", "error", "LegacyOffsetCommit/v0", "LegacyOffsetCommit/tombstone", "OffsetCommit/tombstone", "unknown tags",
		"straight key", "reader's key", "straight LegacyOffsetCommit/v0", "reader's value"}
	for ver := range 5 {
		want = append(want, fmt.Sprintf("OffsetCommit/v%d", ver), fmt.Sprintf("straight OffsetCommit/v%d", ver))
	}
	for _, w := range want {
		if seen[w] == 0 {
			t.Errorf("no input decoded as %s (decoded: %v)", w, seen)
		}
	}
}

// TestDecodeOffsetCommitDoesNotAllocate: once a Decoder has seen a
// partition's group, topic and metadata, an offset commit of any version
// decodes without allocating, tagged topic id included.
func TestDecodeOffsetCommitDoesNotAllocate(t *testing.T) {
	d := NewDecoder()
	var v OffsetCommitValue
	for ver := int16(0); ver <= 4; ver++ {
		w := NewOffsetCommitValue(ver)
		w.Offset, w.Metadata, w.CommitTimestamp = 42, "meta", 1_700_000_000_000
		if ver >= 4 {
			w.TopicID = [16]byte{1, 2, 3}
		}
		key, value, err := EncodeRecord(Record{Key: OffsetCommitKey{Group: "group", Topic: "topic", Partition: 7}, Value: w})
		if err != nil {
			t.Fatal(err)
		}
		decode := func() {
			if _, _, err := d.DecodeOffsetCommit(key, value, &v); err != nil {
				t.Fatal(err)
			}
		}
		decode()
		if n := testing.AllocsPerRun(100, decode); n != 0 {
			t.Errorf("OffsetCommitValue v%d: %v allocations a record, want 0", ver, n)
		}
		if !reflect.DeepEqual(&v, w) {
			t.Errorf("OffsetCommitValue v%d decoded as %+v, want %+v", ver, v, *w)
		}
	}
}

// sameAsDecodeRecord decodes key and value with d.DecodeOffsetCommit into
// v and with DecodeRecord, and says how they differ, if they do. what
// names what the input was and which ways DecodeOffsetCommit read it.
func sameAsDecodeRecord(d *Decoder, key, value []byte, v *OffsetCommitValue) (what []string, err error) {
	want, werr := DecodeRecord(key, value)
	before := *v
	k, tombstone, gerr := d.DecodeOffsetCommit(key, value, v)
	typ, ok := KeyType(key)
	if !ok || (typ != TypeOffsetCommit && typ != TypeLegacyOffsetCommit) {
		if gerr == nil {
			return nil, fmt.Errorf("DecodeOffsetCommit(%x, %x) of a key that is not an offset commit's: no error", key, value)
		}
		return []string{"other type"}, nil
	}
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		return nil, fmt.Errorf("DecodeOffsetCommit(%x, %x): error %v; DecodeRecord's %v", key, value, gerr, werr)
	}
	// Which way it went: the straight-line reading or the reader's.
	if _, _, _, ok := splitOffsetCommitKey(key); ok {
		what = append(what, "straight key")
	} else {
		what = append(what, "reader's key")
	}
	var w OffsetCommitValue
	if value != nil && readOffsetCommitValueFast(typ, value, d.strings, &w) {
		what = append(what, fmt.Sprintf("straight %s/v%d", typ, w.Version))
	} else if value != nil {
		what = append(what, "reader's value")
	}
	if gerr != nil {
		return append(what, "error"), nil
	}
	got := Record{Key: k}
	if tombstone {
		if !reflect.DeepEqual(*v, before) {
			return nil, fmt.Errorf("DecodeOffsetCommit(%x, nil), a tombstone, changed the value from %+v to %+v", key, before, *v)
		}
		what = append(what, want.Type().String()+"/tombstone")
	} else {
		w := *v
		got.Value = &w
		what = append(what, fmt.Sprintf("%s/v%d", want.Type(), v.Version))
		if v.UnknownTags.Len() > 0 {
			what = append(what, "unknown tags")
		}
	}
	if !reflect.DeepEqual(got, want) {
		return nil, fmt.Errorf("DecodeOffsetCommit(%x, %x) gives %s; DecodeRecord %s", key, value, describe(got), describe(want))
	}
	return what, nil
}
