package wire

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/coordinator/version"
)

// Share-partition leadership (KIP-932), served when Config.ShareFetch is
// set: ShareFetch (78) and ShareAcknowledge (79) through the model of
// Kafka's share-partition leader (package coordinator/sharegroup), with
// the share sessions of Kafka's ShareSessionCache and
// SharePartitionManager.newContext / acknowledgeSessionUpdate (4.2 and
// 4.4 branches), and the share coordinator's records written to
// __share_group_state.
//
// Share sessions: epoch 0 opens a session for (group, member), replacing
// any it had (piggy-backed acknowledgements there are INVALID_REQUEST);
// -1 closes it after the request is served (SHARE_SESSION_NOT_FOUND when
// there is none) and releases the member's records
// (SharePartitionManager.releaseSession); any other epoch must be the
// session's, or SHARE_SESSION_NOT_FOUND (no session) or
// INVALID_SHARE_SESSION_EPOCH, and moves it on by one. ShareAcknowledge
// at epoch 0 is INVALID_SHARE_SESSION_EPOCH. A session dies with the
// connection it was opened on, its records released (Kafka's
// ShareSessionCache.ClientConnectionDisconnectListener, which calls the
// share group listener's onMemberLeave); a session replaced on another
// connection is not closed by the old one's end. Leaving the group
// releases nothing by itself, in Kafka as here.
//
// Not modelled: the group coordinator's part in initializing a
// share-partition (the leader initializes the state itself at its first
// fetch, as InitializeShareGroupState would have, with state epoch 0, and
// the group's share.auto.offset.reset, earliest or latest, picks the
// start offset then); the share-session cache limit
// (SHARE_SESSION_LIMIT_REACHED); byte limits (MaxBytes and
// PartitionMaxBytes bound nothing, MaxRecords does); the acquire modes of
// v2 (ShareAcquireMode is read as batch-optimized).

// shareTP names a partition by topic id.
type shareTP struct {
	id [16]byte
	p  int32
}

type shareSessionKey struct{ group, member string }

type shareSession struct {
	epoch int32
	conn  uint64
	parts []shareTP // in the order they joined the session
}

// shareLeader is the server's share-partition leadership and its share
// coordinator. Guarded by the server's mu.
type shareLeader struct {
	cfg      sharegroup.PartitionConfig
	coord    *sharegroup.Coordinator
	parts    map[sharegroup.StateKey]*sharegroup.Partition
	sessions map[shareSessionKey]*shareSession
	reset    map[string]string // share.auto.offset.reset by group, where set
}

// shareStateTopic is the share coordinator's topic.
const shareStateTopic = "__share_group_state"

// startShare builds the share leader and replays __share_group_state
// (created with ShareStatePartitions partitions if missing) into its
// share coordinator. Called with s.mu held, before serving.
func (s *Server) startShare() error {
	p := s.cfg.Version.Profile()
	pcfg, ccfg := sharegroup.ConfigsFor(p)
	if s.cfg.ShareLockDuration > 0 {
		pcfg.LockMs = s.cfg.ShareLockDuration.Milliseconds()
	}
	if s.cfg.ShareDeliveryCountLimit > 0 {
		pcfg.DeliveryCountLimit = int16(s.cfg.ShareDeliveryCountLimit)
	}
	sl := &shareLeader{cfg: pcfg, parts: map[sharegroup.StateKey]*sharegroup.Partition{}, sessions: map[shareSessionKey]*shareSession{}}
	sl.coord = sharegroup.NewCoordinator(ccfg, func() int64 { return s.last.UnixMilli() })
	t := s.topics[shareStateTopic]
	if t == nil {
		var err error
		if t, err = s.createTopic(shareStateTopic, s.cfg.ShareStatePartitions, true); err != nil {
			return err
		}
	}
	err := eachRecord(t, func(kr kmsg.Record) error {
		r, err := sharegroup.DecodeStateRecord(kr.Key, kr.Value)
		if err != nil {
			return err
		}
		sl.coord.States.Replay(r)
		return nil
	})
	if err != nil {
		return err
	}
	s.share = sl
	return s.loadGroupConfigs()
}

// shareCoordinatorKey is SharePartitionKey.asCoordinatorKey, whose hash
// picks the __share_group_state partition.
func shareCoordinatorKey(k sharegroup.StateKey) string {
	return fmt.Sprintf("%s:%s:%d", k.GroupID, base64.RawURLEncoding.EncodeToString(k.TopicID[:]), k.Partition)
}

// flushShareState appends what the share coordinator wrote since the last
// flush to __share_group_state, one batch per record (each is one write
// of the coordinator). Called with s.mu held.
func (s *Server) flushShareState() {
	sl := s.share
	if sl == nil || len(sl.coord.Records) == 0 {
		return
	}
	t := s.topics[shareStateTopic]
	now := s.last.UnixMilli()
	for _, r := range sl.coord.Records {
		k, v, err := sharegroup.EncodeStateRecord(r)
		if err == nil {
			part := records.PartitionFor(shareCoordinatorKey(r.Key), len(t.partitions))
			_, err = t.partitions[part].log.append(buildBatch(now, [][2][]byte{{k, v}}))
		}
		if err != nil {
			// The state stays in the model; the log misses the write, as a
			// share coordinator's failed write would leave it.
			s.logf("wire: append to %s: %v", shareStateTopic, err)
		}
	}
	sl.coord.Records = nil
	s.notifyData()
}

// partitionFor returns the leader of share-partition k, initializing its
// state at the first use, or the error code a request for it gets.
func (s *Server) sharePartition(group string, tp shareTP) (*sharegroup.Partition, *kerr.Error) {
	t := s.topicIDs[tp.id]
	if t == nil || t.internal {
		return nil, kerr.UnknownTopicID
	}
	if tp.p < 0 || int(tp.p) >= len(t.partitions) {
		return nil, kerr.UnknownTopicOrPartition
	}
	sl := s.share
	k := sharegroup.StateKey{GroupID: group, TopicID: tp.id, Partition: tp.p}
	end := t.partitions[tp.p].log.next
	if p := sl.parts[k]; p != nil {
		p.GrowLog(end)
		return p, nil
	}
	if sl.coord.States[k] == nil {
		sl.coord.Initialize(k, 0)
	}
	// A state never written starts where share.auto.offset.reset says.
	earliest := int64(0)
	if r := sl.reset[group]; r == "latest" || r == "" && version.ShareAutoOffsetResetDefault == "latest" {
		earliest = end
	}
	p, err := sharegroup.NewPartition(sl.cfg, sl.coord, k, 0, earliest, end)
	if err != nil {
		s.logf("wire: share-partition %s: %v", shareCoordinatorKey(k), err)
		return nil, kerr.UnknownServerError
	}
	sl.parts[k] = p
	return p, nil
}

// shareTick lapses the acquisition locks whose time came (Kafka's
// acquisition-lock timer tasks). Called with s.mu held.
func (s *Server) shareTick() {
	if s.share == nil {
		return
	}
	for _, p := range s.share.parts {
		p.Tick()
	}
	s.flushShareState()
}

// shareSessionFor is newContext's session step for ShareFetch: it returns
// the session, or the error the whole request gets.
func (s *Server) shareSessionFor(group, member string, epoch int32, conn uint64, hasAcks bool) (*shareSession, *kerr.Error) {
	sl := s.share
	key := shareSessionKey{group, member}
	ss := sl.sessions[key]
	switch epoch {
	case -1:
		if ss == nil {
			return nil, kerr.ShareSessionNotFound
		}
		return ss, nil
	case 0:
		if hasAcks {
			return nil, kerr.InvalidRequest
		}
		if ss != nil {
			// Kafka's cache.remove drops the old session without releasing
			// its records; their locks lapse.
			delete(sl.sessions, key)
		}
		ss = &shareSession{epoch: 1, conn: conn}
		sl.sessions[key] = ss
		return ss, nil
	}
	if ss == nil {
		return nil, kerr.ShareSessionNotFound
	}
	if ss.epoch != epoch {
		return nil, kerr.InvalidShareSessionEpoch
	}
	ss.epoch = nextShareEpoch(ss.epoch)
	return ss, nil
}

// invalidShareIDs is what KafkaApis answers, with INVALID_REQUEST, to a
// ShareFetch or ShareAcknowledge without a group id or with an invalid
// member id; "" when both are valid.
func invalidShareIDs(group, member *string) string {
	switch {
	case group == nil:
		return "Invalid group id in the request."
	case !validShareMemberID(member):
		return "Invalid member id in the request."
	}
	return ""
}

// validShareMemberID is KafkaApis.isMemberIdValid: set, not empty, at
// most 36 characters (a UUID's string).
func validShareMemberID(id *string) bool { return id != nil && *id != "" && len(*id) <= 36 }

// nextShareEpoch is ShareRequestMetadata.nextEpoch: it wraps to 1.
func nextShareEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// closeShareSession removes the session and releases every record the
// member holds on its partitions (SharePartitionManager.releaseSession).
func (s *Server) closeShareSession(group, member string) {
	sl := s.share
	key := shareSessionKey{group, member}
	ss := sl.sessions[key]
	if ss == nil {
		return
	}
	delete(sl.sessions, key)
	for _, tp := range ss.parts {
		if p := sl.parts[sharegroup.StateKey{GroupID: group, TopicID: tp.id, Partition: tp.p}]; p != nil {
			p.ReleaseAll(member)
		}
	}
	s.flushShareState()
}

// shareConnClosed closes the sessions opened on connection conn.
func (s *Server) shareConnClosed(conn uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.share == nil {
		return
	}
	var keys []shareSessionKey
	for k, ss := range s.share.sessions {
		if ss.conn == conn {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b shareSessionKey) int {
		if a.group != b.group {
			return cmp.Compare(a.group, b.group)
		}
		return cmp.Compare(a.member, b.member)
	})
	for _, k := range keys {
		s.closeShareSession(k.group, k.member)
	}
}

// shareAcks converts acknowledgement batches to the model's, validating
// them as KafkaApis.validateAcknowledgementBatches does: ordered, not
// overlapping, first ≤ last, one type or one per offset, types 0–3 (0–4
// where RENEW is served), RENEW only in a renew request. false:
// INVALID_REQUEST for the partition.
func shareAcks(batches []ackBatch, renewServed, isRenew bool) ([]sharegroup.Ack, bool) {
	maxType := version.AckReject
	if renewServed {
		maxType = version.AckRenew
	}
	var out []sharegroup.Ack
	prevEnd := int64(-1)
	for _, b := range batches {
		n := len(b.types)
		switch {
		case b.first > b.last, b.first < prevEnd, n == 0, n > 1 && b.last-b.first != int64(n-1):
			return nil, false
		}
		for _, t := range b.types {
			if t < 0 || t > maxType || t == version.AckRenew && !isRenew {
				return nil, false
			}
		}
		prevEnd = b.last
		for i := int64(0); i <= b.last-b.first; i++ {
			t := b.types[0]
			if n > 1 {
				t = b.types[i]
			}
			o := b.first + i
			if m := len(out); m > 0 && out[m-1].Last+1 == o && out[m-1].Type == t {
				out[m-1].Last = o
				continue
			}
			out = append(out, sharegroup.Ack{First: o, Last: o, Type: t})
		}
	}
	return out, true
}

// ackBatch is an acknowledgement batch of either request.
type ackBatch struct {
	first, last int64
	types       []int8
}

// shareAcknowledge applies member's acknowledgements of one partition and
// returns the partition's acknowledge error.
func (s *Server) shareAcknowledge(group, member string, tp shareTP, batches []ackBatch, renewServed, isRenew bool) (*kerr.Error, string) {
	acks, ok := shareAcks(batches, renewServed, isRenew)
	if !ok {
		return kerr.InvalidRequest, ""
	}
	p, kerrCode := s.sharePartition(group, tp)
	if kerrCode != nil {
		return kerrCode, ""
	}
	err := p.Acknowledge(member, acks)
	s.flushShareState()
	if err == nil {
		return nil, ""
	}
	e, _ := err.(*sharegroup.Error)
	if e == nil {
		return kerr.UnknownServerError, err.Error()
	}
	switch e.Code {
	case sharegroup.CodeInvalidRecordState:
		return kerr.InvalidRecordState, e.Message
	case sharegroup.CodeInvalidRequest:
		return kerr.InvalidRequest, e.Message
	}
	return kerr.UnknownServerError, e.Message
}
