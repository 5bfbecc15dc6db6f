package wire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId: v0 to v5, for idempotent producers only.
//
// Without a transactional id Kafka hands out a fresh producer id at epoch
// 0 every time, also when the request names the producer's current id and
// epoch to bump it (KIP-360; TransactionCoordinator.handleInitProducerId
// takes a new id from the ProducerIdManager for a null transactional id).
// A transactional id needs a transaction coordinator, which this server
// does not have: COORDINATOR_NOT_AVAILABLE, as FindCoordinator says.
func (s *Server) handleInitProducerID(req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	s.mu.Lock()
	id, err := s.producerIDs.take()
	s.mu.Unlock()
	if err != nil {
		s.logf("wire: %v", err)
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}
