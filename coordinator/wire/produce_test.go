package wire

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/version"
)

// idemBatch is a batch of n records from producer pid at epoch, first
// sequence seq.
func idemBatch(pid int64, epoch int16, seq int32, n int) []byte {
	kvs := make([][2][]byte, n)
	for i := range kvs {
		kvs[i] = [2][]byte{nil, []byte("v")}
	}
	b := buildBatch(1, kvs)
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[batchCRCOffset:], crc32.Checksum(b[batchAttrOffset:], crc32c))
	return b
}

type produceResult struct {
	err  error
	base int64
}

func produceRaw(t *testing.T, c *rawConn, topic string, acks int16, batch []byte, corr int32) *produceResult {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(12)
	req.Acks, req.TimeoutMillis = acks, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c.send(req, corr)
	if acks == 0 {
		return nil
	}
	gotCorr, body := c.read()
	if gotCorr != corr {
		t.Fatalf("correlation id %d, want %d", gotCorr, corr)
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(12)
	if err := resp.ReadFrom(body[1:]); err != nil {
		t.Fatalf("parse produce response: %v", err)
	}
	p := resp.Topics[0].Partitions[0]
	return &produceResult{kerr.ErrorForCode(p.ErrorCode), p.BaseOffset}
}

// mustCreateTopic creates topic name with n partitions on s.
func mustCreateTopic(t *testing.T, s *Server, name string, n int) *topic {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	tp, err := s.createTopic(name, n, false)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestIdempotentProduce(t *testing.T) {
	dir := t.TempDir()
	s := startStandIn(t, dir, version.V4_4_0)
	mustCreateTopic(t, s, "t", 1)
	c := dialRaw(t, s)
	corr := int32(0)
	step := func(name string, batch []byte, wantErr error, wantBase int64) {
		t.Helper()
		corr++
		r := produceRaw(t, c, "t", -1, batch, corr)
		if !errors.Is(r.err, wantErr) || wantErr == nil && r.err != nil || wantErr == nil && r.base != wantBase {
			t.Errorf("%s: got (%v, base %d), want (%v, base %d)", name, r.err, r.base, wantErr, wantBase)
		}
	}
	step("first batch", idemBatch(5, 0, 0, 3), nil, 0)
	step("retried batch is a duplicate: first offset, no error", idemBatch(5, 0, 0, 3), nil, 0)
	step("gap in sequence", idemBatch(5, 0, 5, 1), kerr.OutOfOrderSequenceNumber, 0)
	step("next batch", idemBatch(5, 0, 3, 2), nil, 3)
	step("new epoch must start at 0", idemBatch(5, 1, 5, 1), kerr.OutOfOrderSequenceNumber, 0)
	step("new epoch at 0", idemBatch(5, 1, 0, 1), nil, 5)
	step("old epoch is fenced", idemBatch(5, 0, 5, 1), kerr.InvalidProducerEpoch, 0)
	step("unknown producer starts anywhere", idemBatch(9, 0, 100, 1), nil, 6)
	step("non-idempotent batch", idemBatch(-1, -1, -1, 2), nil, 7)
	bad := idemBatch(9, 0, 101, 1)
	bad[len(bad)-1] ^= 0xff
	step("bad CRC", bad, kerr.CorruptMessage, 0)

	// acks=0: no response, and the next response is the next request's.
	produceRaw(t, c, "t", 0, idemBatch(9, 0, 101, 1), 100)
	step("after acks=0", idemBatch(9, 0, 102, 1), nil, 10)

	// A restarted server rebuilds producer state from the log.
	s.Close()
	s = startStandIn(t, dir, version.V4_4_0)
	defer s.Close()
	c = dialRaw(t, s)
	step("duplicate after restart", idemBatch(5, 1, 0, 1), nil, 5)
	step("in sequence after restart", idemBatch(5, 1, 1, 1), nil, 11)
	step("fenced after restart", idemBatch(5, 0, 5, 1), kerr.InvalidProducerEpoch, 0)
}

func TestTornSegmentTailIsCut(t *testing.T) {
	dir := t.TempDir()
	s := startStandIn(t, dir, version.V4_4_0)
	s.mu.Lock()
	tp, err := s.createTopic("t", 1, false)
	if err == nil {
		for i := 0; i < 3; i++ {
			if _, err = tp.partitions[0].log.append(buildBatch(1, [][2][]byte{{nil, []byte("x")}})); err != nil {
				break
			}
		}
	}
	path := tp.partitions[0].log.file.Name()
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A crash in the middle of the last write leaves half a batch.
	if err := truncateBy(path, 10); err != nil {
		t.Fatal(err)
	}
	s = startStandIn(t, dir, version.V4_4_0)
	defer s.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if next := s.topics["t"].partitions[0].log.next; next != 2 {
		t.Errorf("log ends at %d after cutting the torn batch, want 2", next)
	}
}

func truncateBy(path string, n int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.Truncate(path, fi.Size()-n)
}
