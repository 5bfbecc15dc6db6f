package wire

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/coordinator/version"
)

// The admin side of share groups, served with Config.ShareFetch:
//
//	44 IncrementalAlterConfigs: GROUP resources only (type 32), and of a
//	   group's configs only share.auto.offset.reset, SET to earliest or
//	   latest or DELETEd (back to latest); anything else is INVALID_CONFIG
//	   (a name Kafka knows but this server does not keep) or
//	   INVALID_REQUEST (another resource type). The configs are kept in
//	   the data directory (group-configs.json), as Kafka keeps them in its
//	   metadata log, so a restart keeps them.
//	90 DescribeShareGroupOffsets: each share-partition's start offset and
//	   leader epoch from the share coordinator's state, -1 for one it has
//	   none of (UNINITIALIZED_START_OFFSET); v1's lag is the high
//	   watermark less the start offset and the delivery-complete count
//	   (KIP-1226), -1 without a state. A group with no state answers no
//	   topics: the server does not ask the coordinator whether the group
//	   exists (Kafka answers GROUP_ID_NOT_FOUND).

const groupResource = 32 // ConfigResource.Type.GROUP

const groupConfigsFile = "group-configs.json"

func (s *Server) loadGroupConfigs() error {
	s.share.reset = map[string]string{}
	if s.cfg.DataDir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(s.cfg.DataDir, groupConfigsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = json.Unmarshal(b, &s.share.reset)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", groupConfigsFile, err)
	}
	return nil
}

func (s *Server) saveGroupConfigs() error {
	if s.cfg.DataDir == "" {
		return nil
	}
	b, err := json.Marshal(s.share.reset)
	if err != nil {
		return err
	}
	path := filepath.Join(s.cfg.DataDir, groupConfigsFile)
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func (s *Server) handleIncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		if e, msg := s.alterGroupConfigs(r, req.ValidateOnly); e != nil {
			rr.ErrorCode, rr.ErrorMessage = e.Code, &msg
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (s *Server) alterGroupConfigs(r kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (*kerr.Error, string) {
	if r.ResourceType != groupResource {
		return kerr.InvalidRequest, fmt.Sprintf("resource type %d: the embedded server alters group configs (type %d) only", r.ResourceType, groupResource)
	}
	val, set := s.share.reset[r.ResourceName], false
	for _, c := range r.Configs {
		if c.Name != version.ShareAutoOffsetResetConfig {
			return kerr.InvalidConfig, fmt.Sprintf("config %q: the embedded server keeps only %s of a group", c.Name, version.ShareAutoOffsetResetConfig)
		}
		switch {
		case c.Op == kmsg.IncrementalAlterConfigOpSet && c.Value != nil && (*c.Value == "earliest" || *c.Value == "latest"):
			val, set = *c.Value, true
		case c.Op == kmsg.IncrementalAlterConfigOpDelete:
			val, set = "", true
		default:
			return kerr.InvalidConfig, fmt.Sprintf("%s: operation %v with value %v; the embedded server takes SET earliest or latest, or DELETE", c.Name, c.Op, c.Value)
		}
	}
	if !set || validateOnly {
		return nil, ""
	}
	if val == "" {
		delete(s.share.reset, r.ResourceName)
	} else {
		s.share.reset[r.ResourceName] = val
	}
	if err := s.saveGroupConfigs(); err != nil {
		s.logf("wire: save group configs: %v", err)
		return kerr.UnknownServerError, err.Error()
	}
	return nil, ""
}

func (s *Server) handleDescribeShareGroupOffsets(req *kmsg.DescribeShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		topics := g.Topics
		if topics == nil {
			topics = s.shareTopicsOf(g.GroupID)
		}
		for _, t := range topics {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = t.Topic
			tp := s.topics[t.Topic]
			if tp != nil {
				rt.TopicID = tp.id
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
				if tp == nil || p < 0 || int(p) >= len(tp.partitions) {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else if st := s.share.coord.States[sharegroup.StateKey{GroupID: g.GroupID, TopicID: tp.id, Partition: p}]; st != nil {
					rp.StartOffset, rp.LeaderEpoch = st.StartOffset, st.LeaderEpoch
					if st.StartOffset >= 0 {
						rp.Lag = tp.partitions[p].log.next - st.StartOffset - int64(max(st.DeliveryCompleteCount, 0))
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// shareTopicsOf lists the partitions group has share state of, by topic
// name.
func (s *Server) shareTopicsOf(group string) []kmsg.DescribeShareGroupOffsetsRequestGroupTopic {
	byName := map[string][]int32{}
	for k := range s.share.coord.States {
		if t := s.topicIDs[k.TopicID]; k.GroupID == group && t != nil {
			byName[t.name] = append(byName[t.name], k.Partition)
		}
	}
	var out []kmsg.DescribeShareGroupOffsetsRequestGroupTopic
	for name, ps := range byName {
		slices.Sort(ps)
		t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		t.Topic, t.Partitions = name, ps
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeShareGroupOffsetsRequestGroupTopic) int {
		return cmp.Compare(a.Topic, b.Topic)
	})
	return out
}
