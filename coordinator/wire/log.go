package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// crc32c is the Castagnoli table Kafka's record batch CRC uses
// (DefaultRecordBatch.computeChecksum, Crc32C).
var crc32c = crc32.MakeTable(crc32.Castagnoli)

// Offsets of the record batch v2 header fields (DefaultRecordBatch).
const (
	batchLengthOffset      = 8  // int32 batchLength: bytes after this field
	batchLeaderEpochOffset = 12 // int32 partitionLeaderEpoch, outside the CRC
	batchMagicOffset       = 16
	batchCRCOffset         = 17 // uint32 CRC-32C of everything from attributes on
	batchAttrOffset        = 21
	batchHeaderSize        = 61 // RECORD_BATCH_OVERHEAD
	// segmentName is the one segment of every partition: Kafka names a
	// segment after its base offset, zero-padded to 20 digits
	// (LogFileUtils.logFile), and a log that never rolls has only this one.
	segmentName = "00000000000000000000.log"
)

// storedBatch is one record batch of a partition log, as it sits in the
// segment file: the base offset already rewritten to its place in the log.
type storedBatch struct {
	base, last   int64 // first and last offset
	maxTimestamp int64
	raw          []byte
}

// partitionLog is one partition: its batches in memory, and, with a data
// directory, the same bytes in a segment file, so a restarted server reads
// them back. Kafka's segment file is exactly the concatenation of record
// batches with their final offsets (FileRecords), which is what this
// writes; there are no index files because the whole log is in memory.
//
// Invariant: batches are contiguous, batches[i+1].base == batches[i].last+1,
// and next == the last offset + 1 (0 for an empty log). next is the high
// watermark: one replica, so every append is committed when it is written.
type partitionLog struct {
	batches []storedBatch
	next    int64
	file    *os.File // nil without a data directory
	sync    bool
}

// openPartitionLog loads the segment in dir (creating dir if needed) and
// returns the log positioned after its last whole batch. A torn or corrupt
// tail, as a crash leaves behind, is cut off, as Kafka's LogLoader
// recovery truncates a segment at the first invalid batch; logf says so.
func openPartitionLog(dir string, sync bool, logf func(string, ...any)) (*partitionLog, error) {
	l := &partitionLog{sync: sync}
	if dir == "" {
		return l, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create partition directory: %w", err)
	}
	path := filepath.Join(dir, segmentName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read segment %s: %w", path, err)
	}
	valid := 0
	for valid < len(data) {
		raw, err := checkStoredBatch(data[valid:], l.next)
		if err != nil {
			logf("wire: segment %s: cutting the log at byte %d of %d (offset %d): %v", path, valid, len(data), l.next, err)
			break
		}
		b := newStoredBatch(append([]byte(nil), raw...))
		l.batches = append(l.batches, b)
		l.next = b.last + 1
		valid += len(raw)
	}
	if valid < len(data) {
		if err := f.Truncate(int64(valid)); err != nil {
			f.Close()
			return nil, fmt.Errorf("truncate segment %s to its last whole batch: %w", path, err)
		}
	}
	if _, err := f.Seek(int64(valid), io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("seek segment %s: %w", path, err)
	}
	l.file = f
	return l, nil
}

// checkStoredBatch checks the batch that starts data: whole, magic 2, CRC
// right, at the expected offset. It returns the batch's bytes.
func checkStoredBatch(data []byte, want int64) ([]byte, error) {
	if len(data) < batchHeaderSize {
		return nil, fmt.Errorf("%d bytes left, less than a batch header (%d)", len(data), batchHeaderSize)
	}
	size := int64(int32(binary.BigEndian.Uint32(data[batchLengthOffset:]))) + 12
	if size < batchHeaderSize || size > int64(len(data)) {
		return nil, fmt.Errorf("batch of %d bytes with %d bytes left", size, len(data))
	}
	raw := data[:size]
	if raw[batchMagicOffset] != 2 {
		return nil, fmt.Errorf("magic %d, want 2", raw[batchMagicOffset])
	}
	if crc32.Checksum(raw[batchAttrOffset:], crc32c) != binary.BigEndian.Uint32(raw[batchCRCOffset:]) {
		return nil, errors.New("CRC mismatch")
	}
	if base := int64(binary.BigEndian.Uint64(raw)); base != want {
		return nil, fmt.Errorf("base offset %d, want %d", base, want)
	}
	return raw, nil
}

func newStoredBatch(raw []byte) storedBatch {
	base := int64(binary.BigEndian.Uint64(raw))
	lastDelta := int64(int32(binary.BigEndian.Uint32(raw[23:])))
	return storedBatch{
		base:         base,
		last:         base + lastDelta,
		maxTimestamp: int64(binary.BigEndian.Uint64(raw[35:])),
		raw:          raw,
	}
}

// append writes raw (a validated batch) at the end of the log, rewriting
// its base offset and leader epoch, which are outside the CRC (Kafka's
// LogValidator assigns offsets in place the same way). It returns the base
// offset given. raw is kept; the caller must not reuse it.
func (l *partitionLog) append(raw []byte) (int64, error) {
	binary.BigEndian.PutUint64(raw, uint64(l.next))
	binary.BigEndian.PutUint32(raw[batchLeaderEpochOffset:], 0)
	b := newStoredBatch(raw)
	if l.file != nil {
		if _, err := l.file.Write(raw); err != nil {
			return 0, fmt.Errorf("append to segment %s: %w", l.file.Name(), err)
		}
		if l.sync {
			if err := l.file.Sync(); err != nil {
				return 0, fmt.Errorf("sync segment %s: %w", l.file.Name(), err)
			}
		}
	}
	l.batches = append(l.batches, b)
	l.next = b.last + 1
	return b.base, nil
}

// read returns the batches from the one holding offset on, at least one
// whole batch and then whole batches while they fit in maxBytes (KIP-74:
// the first batch is returned even if it is larger, so a consumer always
// makes progress).
func (l *partitionLog) read(offset int64, maxBytes int32) []byte {
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].last >= offset })
	var out []byte
	for ; i < len(l.batches); i++ {
		b := l.batches[i]
		if len(out) > 0 && len(out)+len(b.raw) > int(maxBytes) {
			break
		}
		out = append(out, b.raw...)
		if len(out) >= int(maxBytes) {
			break
		}
	}
	return out
}

// readRange returns the batches holding any offset of first..last.
func (l *partitionLog) readRange(first, last int64) []byte {
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].last >= first })
	var out []byte
	for ; i < len(l.batches) && l.batches[i].base <= last; i++ {
		out = append(out, l.batches[i].raw...)
	}
	return out
}

// offsetForTimestamp returns the base offset of the first batch whose max
// timestamp is at least ts, or next if there is none. Kafka returns the
// exact record (LogSegment.findOffsetByTimestamp); batch granularity is
// what this log indexes.
func (l *partitionLog) offsetForTimestamp(ts int64) (int64, int64) {
	for _, b := range l.batches {
		if b.maxTimestamp >= ts {
			return b.base, b.maxTimestamp
		}
	}
	return l.next, -1
}

func (l *partitionLog) close() error {
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}

// buildBatch makes an uncompressed record batch v2 of key/value pairs with
// no producer, as the group coordinator writes its records
// (CoordinatorRuntime with producerId -1 outside transactions).
func buildBatch(now int64, kvs [][2][]byte) []byte {
	var recs []byte
	var rec []byte
	for i, kv := range kvs {
		rec = rec[:0]
		rec = kbin.AppendInt8(rec, 0)    // attributes
		rec = kbin.AppendVarlong(rec, 0) // timestamp delta
		rec = kbin.AppendVarint(rec, int32(i))
		rec = kbin.AppendVarintBytes(rec, kv[0])
		rec = kbin.AppendVarintBytes(rec, kv[1])
		rec = kbin.AppendVarint(rec, 0) // headers
		recs = kbin.AppendVarint(recs, int32(len(rec)))
		recs = append(recs, rec...)
	}
	b := make([]byte, 0, batchHeaderSize+len(recs))
	b = kbin.AppendInt64(b, 0)  // base offset, set on append
	b = kbin.AppendInt32(b, 0)  // length, below
	b = kbin.AppendInt32(b, 0)  // partition leader epoch
	b = kbin.AppendInt8(b, 2)   // magic
	b = kbin.AppendUint32(b, 0) // CRC, below
	b = kbin.AppendInt16(b, 0)  // attributes: no compression, CreateTime
	b = kbin.AppendInt32(b, int32(len(kvs)-1))
	b = kbin.AppendInt64(b, now)
	b = kbin.AppendInt64(b, now)
	b = kbin.AppendInt64(b, -1) // producer id
	b = kbin.AppendInt16(b, -1) // producer epoch
	b = kbin.AppendInt32(b, -1) // base sequence
	b = kbin.AppendInt32(b, int32(len(kvs)))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[batchLengthOffset:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[batchCRCOffset:], crc32.Checksum(b[batchAttrOffset:], crc32c))
	return b
}

// eachRecord calls f with every record of the internal topic t, partition
// by partition in offset order, for replaying it into a coordinator; an
// error, of a batch or of f, is returned naming the partition and offset.
func eachRecord(t *topic, f func(kmsg.Record) error) error {
	for p, part := range t.partitions {
		for _, b := range part.log.batches {
			recs, err := batchRecords(b.raw)
			if err != nil {
				return fmt.Errorf("replay %s-%d: %w", t.name, p, err)
			}
			for i, kr := range recs {
				if err := f(kr); err != nil {
					return fmt.Errorf("replay %s-%d offset %d: %w", t.name, p, b.base+int64(i), err)
				}
			}
		}
	}
	return nil
}

// batchRecords decodes the records of an uncompressed batch, for replaying
// __consumer_offsets. The coordinator writes those batches uncompressed.
func batchRecords(raw []byte) ([]kmsg.Record, error) {
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		return nil, fmt.Errorf("parse batch: %w", err)
	}
	if codec := b.Attributes & 0x7; codec != 0 {
		return nil, fmt.Errorf("batch at offset %d is compressed (codec %d); the coordinator writes uncompressed batches", b.FirstOffset, codec)
	}
	out := make([]kmsg.Record, 0, b.NumRecords)
	src := b.Records
	for i := int32(0); i < b.NumRecords; i++ {
		length, n := kbin.Varint(src)
		if n == 0 || length < 0 || int(length) > len(src)-n {
			return nil, fmt.Errorf("batch at offset %d: record %d is cut off", b.FirstOffset, i)
		}
		var r kmsg.Record
		if err := r.ReadFrom(src[:n+int(length)]); err != nil {
			return nil, fmt.Errorf("batch at offset %d: record %d: %w", b.FirstOffset, i, err)
		}
		out = append(out, r)
		src = src[n+int(length):]
	}
	return out, nil
}
