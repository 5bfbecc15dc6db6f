package records

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reader decodes Kafka's primitive types from one key or value and, unlike
// kbin.Reader, remembers where and why it stopped, so that an error names the
// field and the byte offset.
//
// Invariants: 0 <= off <= end <= len(src). After the first failure err is set
// and every method returns zero values, so decoders read straight through and
// check err once.
type reader struct {
	src []byte
	off int
	end int
	// withinStruct and withinTag name the region end closes when it is not
	// the whole buffer (a tagged field of a struct), for messages.
	withinStruct string
	withinTag    uint32
	err          error
	// strings, when not nil, hands back the same string for the same bytes
	// (Decoder), and the readers of tagged fields.
	strings *interner
	// depth is how many tagged fields this one is within.
	depth int
}

func newReader(src []byte) *reader {
	return &reader{src: src, end: len(src)}
}

// tagReader returns a reader for the n bytes at the current offset (the
// data of tag tag of structName) and skips them in r. Offsets in its errors
// stay absolute.
func (r *reader) tagReader(n int, structName string, tag uint32) reader {
	if r.err != nil || n < 0 || r.end-r.off < n {
		r.need(n, fmt.Sprintf("%s tag %d", structName, tag))
		return reader{err: r.err}
	}
	s := reader{src: r.src, off: r.off, end: r.off + n, withinStruct: structName, withinTag: tag, strings: r.strings}
	r.off += n
	return s
}

func (r *reader) failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// need checks that n bytes remain for field.
func (r *reader) need(n int, field string) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || r.end-r.off < n {
		if r.withinStruct == "" {
			r.failf("truncated at byte %d of %d: %s needs %d bytes, %d remain", r.off, len(r.src), field, n, r.end-r.off)
		} else {
			r.failf("truncated at byte %d: %s needs %d bytes, %s tag %d ends at byte %d", r.off, field, n, r.withinStruct, r.withinTag, r.end)
		}
		return false
	}
	return true
}

func (r *reader) remaining() int { return r.end - r.off }

func (r *reader) span(n int, field string) []byte {
	if !r.need(n, field) {
		return nil
	}
	b := r.src[r.off : r.off+n : r.off+n]
	r.off += n
	return b
}

func (r *reader) int8(field string) int8 {
	b := r.span(1, field)
	if b == nil {
		return 0
	}
	return int8(b[0])
}

func (r *reader) int16(field string) int16 {
	b := r.span(2, field)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *reader) int32(field string) int32 {
	b := r.span(4, field)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *reader) int64(field string) int64 {
	b := r.span(8, field)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (r *reader) uuid(field string) (u [16]byte) {
	copy(u[:], r.span(16, field))
	return u
}

// uvarint reads an unsigned varint of at most 5 bytes (ByteUtils.readUnsignedVarint).
func (r *reader) uvarint(field string) uint32 {
	return r.uvarintOf(func() string { return field })
}

// uvarintOf is uvarint with the field's name made only for an error (the
// names of tagged fields are built from their struct's and tag's).
func (r *reader) uvarintOf(field func() string) uint32 {
	if r.err != nil {
		return 0
	}
	v, n := kbin.Uvarint(r.src[r.off:r.end])
	switch {
	case n == 0:
		r.need(r.remaining()+1, field()) // reports the truncation
		return 0
	case n < 0:
		r.failf("invalid unsigned varint at byte %d: %s does not fit in 32 bits", r.off, field())
		return 0
	}
	r.off += n
	return v
}

// length reads the length prefix of a string, bytes or array: int16 (strings)
// or int32 (bytes, arrays) when not flexible, uvarint length+1 when flexible.
// It returns -1 for null. Java treats any negative non-flexible length as
// null, and so does this.
func (r *reader) length(field string, flexible, int16Len bool) int {
	if flexible {
		start := r.off
		u := r.uvarint(field)
		if r.err != nil {
			return -1
		}
		if u > 1<<31-1 {
			r.failf("invalid length at byte %d: %s has compact length %d", start, field, u)
			return -1
		}
		return int(u) - 1
	}
	if int16Len {
		n := int(r.int16(field))
		if n < 0 {
			return -1
		}
		return n
	}
	n := int(r.int32(field))
	if n < 0 {
		return -1
	}
	return n
}

// nullableString reads a nullable string.
func (r *reader) nullableString(field string, flexible bool) *string {
	s, null := r.readString(field, flexible)
	if null {
		return nil
	}
	return &s
}

// readString reads a nullable string; null (or a failure) is reported as
// null.
func (r *reader) readString(field string, flexible bool) (s string, null bool) {
	start := r.off
	n := r.length(field, flexible, true)
	if r.err != nil || n < 0 {
		return "", true
	}
	if n > 0x7fff {
		// Readable.readString: string fields are at most 32767 bytes.
		r.failf("invalid length at byte %d: string %s has length %d, more than 32767", start, field, n)
		return "", true
	}
	b := r.span(n, field)
	if b == nil {
		return "", true
	}
	if r.strings != nil {
		return r.strings.get(b), false
	}
	return string(b), false
}

// string reads a non-nullable string; null is an error, as in Kafka's
// generated readers ("non-nullable field X was serialized as null").
func (r *reader) string(field string, flexible bool) string {
	start := r.off
	s, null := r.readString(field, flexible)
	if null {
		if r.err == nil {
			r.failf("null at byte %d: non-nullable string %s was serialized as null", start, field)
		}
		return ""
	}
	return s
}

// interner hands back one string for equal bytes (Decoder), up to a bound.
// A small table of recent strings, indexed by the bytes' length and ends,
// answers the common case (the same few group ids and topic names over and
// over) without hashing the bytes.
type interner struct {
	m      map[string]string
	recent [64]string
	// readers are the readers of tagged fields, one per depth, reused from
	// one field to the next.
	readers []*reader
}

// reader returns a reader for a tagged field at depth: a Decoder's own,
// or a new one without a Decoder.
func (in *interner) reader(depth int) *reader {
	if in == nil {
		return new(reader)
	}
	for len(in.readers) <= depth {
		in.readers = append(in.readers, new(reader))
	}
	return in.readers[depth]
}

func newInterner() *interner { return &interner{m: map[string]string{}} }

// maxInterned bounds what a Decoder keeps: the distinct group ids, topic
// names, member ids and metadata of a partition are few; anything past the
// bound is decoded afresh.
const maxInterned = 1 << 16

func (in *interner) get(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	slot := &in.recent[(len(b)*7+int(b[0])*3+int(b[len(b)-1]))%len(in.recent)]
	if *slot == string(b) {
		return *slot
	}
	s, ok := in.m[string(b)]
	if !ok {
		s = string(b)
		if len(in.m) < maxInterned && len(b) <= 256 {
			in.m[s] = s
		}
	}
	*slot = s
	return s
}

// bytes reads non-nullable bytes; empty bytes decode as nil.
func (r *reader) bytes(field string, flexible bool) []byte {
	start := r.off
	n := r.length(field, flexible, false)
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.failf("null at byte %d: non-nullable bytes %s were serialized as null", start, field)
		return nil
	}
	b := r.span(n, field)
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// arrayLen reads an array length. A null array is an error unless nullable,
// and a count that cannot fit in the remaining bytes, given that every
// element takes at least minElem bytes, is an error before anything is
// allocated. It returns -1 for a null nullable array.
func (r *reader) arrayLen(field string, flexible, nullable bool, minElem int) int {
	start := r.off
	n := r.length(field, flexible, false)
	if r.err != nil {
		return 0
	}
	if n < 0 {
		if nullable {
			return -1
		}
		r.failf("null at byte %d: non-nullable array %s was serialized as null", start, field)
		return 0
	}
	if int64(n)*int64(minElem) > int64(r.remaining()) {
		r.failf("invalid length at byte %d: array %s has %d elements of at least %d bytes, %d bytes remain",
			start, field, n, minElem, r.remaining())
		return 0
	}
	return n
}

func (r *reader) stringArray(field string, flexible bool) []string {
	minElem := 2
	if flexible {
		minElem = 1
	}
	n := r.arrayLen(field, flexible, false, minElem)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.string(field, flexible)
	}
	return out
}

// int32Array reads a non-nullable []int32 (nil when empty) or, if nullable,
// a nullable one (nil for null, non-nil empty for empty).
func (r *reader) int32Array(field string, flexible, nullable bool) []int32 {
	n := r.arrayLen(field, flexible, nullable, 4)
	if n < 0 || r.err != nil {
		return nil
	}
	if n == 0 {
		if nullable {
			return []int32{}
		}
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.int32(field)
	}
	return out
}

// tagged reads a tagged-field section. known decodes the data of a tag the
// schema defines and reports whether it did; every other tag is kept in
// unknown, as Kafka's generated readers keep _unknownTaggedFields.
//
// Invariant: a known field must consume exactly its declared size. Kafka
// reads a known field without checking the size; a mismatch means the bytes
// are not what Kafka wrote, so it is an error here.
func (r *reader) tagged(structName string, unknown *kmsg.Tags, known func(tag uint32, f *reader) bool) {
	count := r.uvarintOf(func() string { return structName + " tagged field count" })
	if r.err != nil || count == 0 {
		return
	}
	// Every tagged field takes at least two bytes (tag and size).
	if int64(count)*2 > int64(r.remaining()) {
		r.failf("invalid length at byte %d: %s has %d tagged fields, %d bytes remain", r.off, structName, count, r.remaining())
		return
	}
	for i := uint32(0); i < count && r.err == nil; i++ {
		tag := r.uvarintOf(func() string { return structName + " tag" })
		size := r.uvarintOf(func() string { return fmt.Sprintf("%s tag %d size", structName, tag) })
		if r.err != nil {
			return
		}
		if uint64(size) > uint64(r.remaining()) {
			r.need(int(min(uint64(size), 1<<31-1)), fmt.Sprintf("%s tag %d", structName, tag))
			return
		}
		f := r.strings.reader(r.depth + 1)
		*f = r.tagReader(int(size), structName, tag)
		f.depth = r.depth + 1
		if known != nil && known(tag, f) {
			if f.err != nil {
				r.err = f.err
				return
			}
			if f.remaining() != 0 {
				r.failf("tagged field %d of %s at byte %d has %d bytes left after its value", tag, structName, f.off, f.remaining())
				return
			}
			continue
		}
		unknown.Set(tag, append([]byte{}, f.src[f.off:f.end]...))
	}
}

// done checks that the whole buffer was consumed.
func (r *reader) done() error {
	if r.err != nil {
		return r.err
	}
	if r.off != r.end {
		return fmt.Errorf("%d trailing bytes at byte %d of %d", r.end-r.off, r.off, len(r.src))
	}
	return nil
}
