package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// producerIDBlockSize is how many producer ids the server takes at a time,
// as a broker takes blocks of 1000 from the controller
// (ProducerIdManager, PRODUCER_ID_BLOCK_SIZE).
const producerIDBlockSize = 1000

// producerIDs hands out producer ids for InitProducerId. The end of the
// current block is written to the data directory before an id of it is
// given, so a restarted server never gives an id twice, even to a producer
// that never wrote a batch (Kafka keeps the blocks in the metadata log).
type producerIDs struct {
	next, blockEnd int64
	path           string // "" without a data directory
}

func (p *producerIDs) load(dir string) error {
	if dir == "" {
		return nil
	}
	p.path = filepath.Join(dir, "producer-id-block")
	data, err := os.ReadFile(p.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read producer id block: %w", err)
	}
	end, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || end < 0 {
		return fmt.Errorf("%s holds %q; want the end of the last producer id block", p.path, data)
	}
	// Start after the last block handed out, as a restarted broker asks
	// the controller for a new block.
	p.next = max(p.next, end)
	p.blockEnd = p.next
	return nil
}

// seen notes an id found in the log, so new ids start above it.
func (p *producerIDs) seen(id int64) {
	if id >= p.next {
		p.next = id + 1
		p.blockEnd = p.next
	}
}

func (p *producerIDs) take() (int64, error) {
	if p.next >= p.blockEnd {
		end := p.next + producerIDBlockSize
		if p.path != "" {
			if err := os.WriteFile(p.path, []byte(strconv.FormatInt(end, 10)+"\n"), 0o644); err != nil {
				return 0, fmt.Errorf("write producer id block: %w", err)
			}
		}
		p.blockEnd = end
	}
	id := p.next
	p.next++
	return id, nil
}

// producerStates is the idempotence state of one partition, per producer
// id: the epoch and the last five batches (ProducerStateEntry,
// NUM_BATCHES_TO_RETAIN = 5, which is also the most in-flight requests an
// idempotent producer may have).
type producerStates map[int64]*producerState

type producerState struct {
	epoch   int16
	batches []batchSeqs // oldest first, at most 5
}

type batchSeqs struct {
	firstSeq, lastSeq int32
	base, last        int64 // offsets the batch was written at
}

// batchProducer is the idempotence part of a batch header.
type batchProducer struct {
	id                int64
	epoch             int16
	firstSeq, lastSeq int32
}

func producerIDOf(raw []byte) int64 { return int64(binary.BigEndian.Uint64(raw[43:])) }

func batchProducerOf(raw []byte) batchProducer {
	firstSeq := int32(binary.BigEndian.Uint32(raw[53:]))
	lastDelta := int32(binary.BigEndian.Uint32(raw[23:]))
	return batchProducer{
		id:       producerIDOf(raw),
		epoch:    int16(binary.BigEndian.Uint16(raw[51:])),
		firstSeq: firstSeq,
		lastSeq:  lastSequence(firstSeq, lastDelta),
	}
}

// lastSequence is DefaultRecordBatch.incrementSequence: sequences wrap from
// Integer.MAX_VALUE to 0.
func lastSequence(first, delta int32) int32 {
	if first > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - first) - 1
	}
	return first + delta
}

// check validates an idempotent batch against the partition's state, as
// UnifiedLog.analyzeAndValidateProducerState and ProducerAppendInfo do for
// a client append, in that order:
//
//  1. A batch equal (same epoch, first and last sequence) to one of the
//     last five written is a duplicate: it is not written again, and the
//     producer is told the offset it got the first time, with no error
//     (ProducerStateEntry.findDuplicateBatch). Kafka 4.x never answers
//     DUPLICATE_SEQUENCE_NUMBER to a produce; an older duplicate falls to
//     rule 4 and gets OUT_OF_ORDER_SEQUENCE_NUMBER.
//  2. An epoch below the stored one is INVALID_PRODUCER_EPOCH
//     (checkProducerEpoch; ProducerFenced before 2.7).
//  3. A new epoch must start at sequence 0, else
//     OUT_OF_ORDER_SEQUENCE_NUMBER.
//  4. The same epoch must continue at the last sequence + 1, else
//     OUT_OF_ORDER_SEQUENCE_NUMBER.
//
// A producer with no state here may start at any sequence (KIP-360; the
// KAFKA-15591 check for never-written partitions ships only in 4.5).
func (ps producerStates) check(b batchProducer) (dup *batchSeqs, err error) {
	st := ps[b.id]
	if st == nil {
		return nil, nil
	}
	if b.epoch == st.epoch {
		for i := range st.batches {
			if x := st.batches[i]; x.firstSeq == b.firstSeq && x.lastSeq == b.lastSeq {
				return &x, nil
			}
		}
	}
	switch {
	case b.epoch < st.epoch:
		return nil, kerr.InvalidProducerEpoch
	case b.epoch > st.epoch:
		if b.firstSeq != 0 {
			return nil, kerr.OutOfOrderSequenceNumber
		}
	default:
		last := int32(-1)
		if n := len(st.batches); n > 0 {
			last = st.batches[n-1].lastSeq
		}
		if !(int64(b.firstSeq) == int64(last)+1 || b.firstSeq == 0 && last == math.MaxInt32) {
			return nil, kerr.OutOfOrderSequenceNumber
		}
	}
	return nil, nil
}

// record notes a written batch (ProducerStateEntry.addBatch): a new epoch
// drops the batches of the old one.
func (ps producerStates) record(b batchProducer, base, last int64) {
	st := ps[b.id]
	if st == nil {
		st = &producerState{epoch: b.epoch}
		ps[b.id] = st
	}
	if b.epoch != st.epoch {
		st.epoch = b.epoch
		st.batches = st.batches[:0]
	}
	st.batches = append(st.batches, batchSeqs{firstSeq: b.firstSeq, lastSeq: b.lastSeq, base: base, last: last})
	if len(st.batches) > 5 {
		st.batches = append(st.batches[:0], st.batches[len(st.batches)-5:]...)
	}
}

// rebuild replays a stored batch into the state, as loading a log without
// a producer snapshot does (ProducerStateManager via LogLoader).
func (ps producerStates) rebuild(sb storedBatch) {
	b := batchProducerOf(sb.raw)
	if b.id < 0 {
		return
	}
	ps.record(b, sb.base, sb.last)
}
