package records

import (
	"bytes"
	"reflect"
	"testing"
	"unsafe"
)

// FuzzDecodeRecord: DecodeRecord never panics, and whatever it decodes
// encodes without error to bytes that decode to the same record and encode
// to the same bytes again (decode∘encode is the identity on decoded
// records). Byte-for-byte identity with the input is not expected: the input
// may carry out-of-order or duplicate tags, non-minimal varints, or a
// nullable string with a length below -1.
func FuzzDecodeRecord(f *testing.F) {
	fuzzDecoder = NewDecoder()
	for _, tc := range goldenRecords {
		key := hx(f, tc.key)
		if tc.rec.Value == nil {
			f.Add(key, []byte(nil), true)
			continue
		}
		f.Add(key, hx(f, tc.value), false)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		rec, err := DecodeRecord(key, value)
		// A Decoder, which keeps strings from one record to the next,
		// decodes the same (and says the same when it cannot).
		drec, derr := fuzzDecoder.Decode(key, value)
		if (err == nil) != (derr == nil) || (err != nil && err.Error() != derr.Error()) || !reflect.DeepEqual(rec, drec) {
			t.Fatalf("Decoder.Decode gives %s, %v; DecodeRecord %s, %v", describe(drec), derr, describe(rec), err)
		}
		// So does DecodeOffsetCommit, for the keys it takes.
		if _, cerr := sameAsDecodeRecord(fuzzDecoder, key, value, &fuzzValue); cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil {
			return
		}
		if (rec.Value == nil) != (value == nil) {
			t.Fatalf("tombstone-ness changed: value %x decoded to %s", value, describe(rec))
		}
		k2, v2, err := EncodeRecord(rec)
		if err != nil {
			t.Fatalf("decoded %s from %x/%x but cannot encode it: %v", describe(rec), key, value, err)
		}
		rec2, err := DecodeRecord(k2, v2)
		if err != nil {
			t.Fatalf("re-encoded %x/%x does not decode: %v", k2, v2, err)
		}
		if !reflect.DeepEqual(rec, rec2) {
			t.Fatalf("decode∘encode changed the record\nfirst  %s\nsecond %s", describe(rec), describe(rec2))
		}
		k3, v3, err := EncodeRecord(rec2)
		if err != nil || !bytes.Equal(k2, k3) || !bytes.Equal(v2, v3) {
			t.Fatalf("encoding not stable: %x/%x then %x/%x (%v)", k2, v2, k3, v3, err)
		}
	})
}

var (
	fuzzDecoder *Decoder
	fuzzValue   OffsetCommitValue
)

// TestDecoderSameAsDecodeRecord: a Decoder decodes every golden record as
// DecodeRecord does, also the second time round, when it hands back the
// strings it kept.
func TestDecoderSameAsDecodeRecord(t *testing.T) {
	d := NewDecoder()
	for round := range 2 {
		for _, tc := range goldenRecords {
			key := hx(t, tc.key)
			var value []byte
			if tc.rec.Value != nil {
				value = hx(t, tc.value)
			}
			want, werr := DecodeRecord(key, value)
			got, err := d.Decode(key, value)
			if (werr == nil) != (err == nil) || !reflect.DeepEqual(want, got) {
				t.Fatalf("round %d, %s: Decoder gives %s, %v; DecodeRecord %s, %v", round, tc.name, describe(got), err, describe(want), werr)
			}
		}
	}
	if len(d.strings.m) == 0 {
		t.Fatal("the Decoder kept no string")
	}
	// The same bytes give the very same string.
	k := []byte{0, 1, 0, 3, 'g', 'r', 'p', 0, 1, 't', 0, 0, 0, 0}
	a, err1 := d.Decode(k, nil)
	b, err2 := d.Decode(k, nil)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	ga, gb := a.Key.(OffsetCommitKey).Group, b.Key.(OffsetCommitKey).Group
	if unsafe.StringData(ga) != unsafe.StringData(gb) {
		t.Fatalf("group %q decoded twice into two strings", ga)
	}
}
