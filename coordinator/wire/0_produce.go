package wire

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce: v3 to v12 (v13 from 4.1: topic ids).
//
// One replica, so acks=1 and acks=-1 are the same: a batch is committed
// (and fsynced with SyncWrites) when Produce answers; acks=0 gets no
// response at all (Kafka sends none). Batches are stored as they arrive;
// only the base offset and the partition leader epoch are rewritten, both
// outside the CRC. With LogAppendTime the timestamps are set and the CRC
// recomputed, as LogValidator does.
//
// Checks, with Kafka's errors: acks other than -1/0/1 is
// INVALID_REQUIRED_ACKS; writing to __consumer_offsets is
// INVALID_TOPIC_EXCEPTION (internal topics take no client writes); a batch
// that is not one whole magic-2 batch with offset 0 and a right CRC is
// CORRUPT_MESSAGE; a control batch is INVALID_RECORD; a transactional one
// is INVALID_TXN_STATE (this server has no transaction coordinator). The
// idempotence rules are producerStates.check.
//
// Called with s.mu held (Server.handle).
func (s *Server) handleProduce(req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	now := s.now().UnixMilli()
	appended := false
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t := s.topicOf(req.Version, rt.Topic, rt.TopicID)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			code, msg := int16(0), ""
			switch {
			case req.Acks != -1 && req.Acks != 0 && req.Acks != 1:
				code = kerr.InvalidRequiredAcks.Code
			case t == nil && req.Version >= 13:
				code = kerr.UnknownTopicID.Code
			case t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.partitions):
				code = kerr.UnknownTopicOrPartition.Code
			case t.internal:
				code, msg = kerr.InvalidTopicException.Code, "Cannot append to internal topic "+t.name
			default:
				var err *kerr.Error
				sp.BaseOffset, sp.LogAppendTime, err = s.appendBatch(t.partitions[rp.Partition], rp.Records, now)
				if err != nil {
					code, msg = err.Code, err.Description
				} else {
					appended = true
				}
			}
			sp.ErrorCode = code
			sp.LogStartOffset = 0 // no retention: every log starts at 0
			if code != 0 {
				sp.LogStartOffset = -1
				sp.BaseOffset = -1
				if req.Version >= 8 && msg != "" {
					sp.ErrorMessage = &msg
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if appended {
		s.notifyData()
	}
	if req.Acks == 0 {
		return nil
	}
	return resp
}

// appendBatch validates one partition's records and appends them. It
// returns the base offset (the first one, for a duplicate) and the log
// append time (-1 for CreateTime).
func (s *Server) appendBatch(p *partition, raw []byte, now int64) (int64, int64, *kerr.Error) {
	raw, err := validateBatch(raw)
	if err != nil {
		return -1, -1, err
	}
	attrs := binary.BigEndian.Uint16(raw[batchAttrOffset:])
	if attrs&0x20 != 0 {
		return -1, -1, kerr.InvalidRecord
	}
	if attrs&0x10 != 0 {
		return -1, -1, kerr.InvalidTxnState
	}
	bp := batchProducerOf(raw)
	if bp.id >= 0 {
		dup, err := p.producers.check(bp)
		if err != nil {
			return -1, -1, err.(*kerr.Error)
		}
		if dup != nil {
			return dup.base, -1, nil
		}
	}
	appendTime := int64(-1)
	if attrs&0x08 != 0 { // LogAppendTime: the broker's clock names the time
		appendTime = now
		binary.BigEndian.PutUint64(raw[27:], uint64(now))
		binary.BigEndian.PutUint64(raw[35:], uint64(now))
		binary.BigEndian.PutUint32(raw[batchCRCOffset:], crc32.Checksum(raw[batchAttrOffset:], crc32c))
	}
	base, aerr := p.log.append(raw)
	if aerr != nil {
		s.logf("wire: %v", aerr)
		return -1, -1, kerr.KafkaStorageError
	}
	if bp.id >= 0 {
		p.producers.record(bp, base, p.log.next-1)
	}
	return base, appendTime, nil
}

// validateBatch checks that raw is exactly one record batch as a client
// must send it (LogValidator.validateBatch, ByteBufferLogInputStream) and
// returns a copy the log may keep.
func validateBatch(raw []byte) ([]byte, *kerr.Error) {
	if len(raw) < batchHeaderSize {
		return nil, kerr.CorruptMessage
	}
	if int64(int32(binary.BigEndian.Uint32(raw[batchLengthOffset:])))+12 != int64(len(raw)) {
		return nil, kerr.CorruptMessage // not exactly one batch
	}
	if raw[batchMagicOffset] != 2 {
		return nil, kerr.UnsupportedForMessageFormat
	}
	if binary.BigEndian.Uint64(raw) != 0 {
		return nil, kerr.CorruptMessage
	}
	if crc32.Checksum(raw[batchAttrOffset:], crc32c) != binary.BigEndian.Uint32(raw[batchCRCOffset:]) {
		return nil, kerr.CorruptMessage
	}
	if binary.BigEndian.Uint16(raw[batchAttrOffset:])&0x7 > 4 {
		return nil, kerr.CorruptMessage // no such compression codec
	}
	lastDelta := int32(binary.BigEndian.Uint32(raw[23:]))
	count := int32(binary.BigEndian.Uint32(raw[57:]))
	if count <= 0 || lastDelta != count-1 {
		return nil, kerr.InvalidRecord
	}
	return append([]byte(nil), raw...), nil
}
