package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteGroups serves DeleteGroups (key 42):
// GroupCoordinatorShard.deleteGroups (4.4). Per group: it must exist
// (GROUP_ID_NOT_FOUND) and be empty (NON_EMPTY_GROUP,
// ClassicGroup.validateDeleteGroup); then its offsets get tombstones
// (OffsetMetadataManager.deleteAllOffsets) followed by the group tombstone.
// Consumer groups are validated and tombstoned by the consumer-group engine.
func (c *Coordinator) handleDeleteGroups(req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrDeleteGroupsResponse()
	for _, id := range req.Groups {
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group = id
		if err := c.deleteGroup(id); err != nil {
			r.ErrorCode = err.Code
		}
		resp.Groups = append(resp.Groups, r)
	}
	return resp, nil
}

func (c *Coordinator) deleteGroup(id string) *kerr.Error {
	if g := c.classic[id]; g != nil {
		switch g.state {
		case Dead:
			return kerr.GroupIDNotFound
		case Stable, PreparingRebalance, CompletingRebalance:
			return kerr.NonEmptyGroup
		}
		c.deleteAllOffsets(id)
		c.deleteClassicGroup(g)
		return nil
	}
	if info, ok := c.consumer.Lookup(id); ok {
		if !info.Empty {
			return kerr.NonEmptyGroup
		}
		c.deleteAllOffsets(id)
		recs, err := c.consumer.Delete(id)
		if err != nil {
			// Lookup said the group was empty; the engine disagrees.
			return asKerr(err)
		}
		c.written = append(c.written, recs...)
		return nil
	}
	return kerr.GroupIDNotFound
}
