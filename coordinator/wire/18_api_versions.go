package wire

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/version"
)

// ApiVersions: v0 to v4 (v5 from Kafka 4.4 on).
//
// A version above what is served gets a v0 response with
// UNSUPPORTED_VERSION and only ApiVersions' own range, so the client retries
// at a version both sides know (KIP-511; KafkaApis.handleApiVersionsRequest,
// ApiVersionsRequest.getErrorResponse). v3+ requests must name the client
// software with [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, else
// INVALID_REQUEST (ApiVersionsRequest.isValid). v5 (KIP-1242) may name the
// cluster and node the client expects; naming another one is
// REBOOTSTRAP_REQUIRED.

// apiRange is the versions of one API a Kafka release serves.
type apiRange struct{ lo, hi int16 }

// baseVersions is what Kafka 4.0.0 advertises for the APIs this server
// implements (KIP-896 removed the oldest versions in 4.0), with the
// changes of later releases in versionsFor. One exception: 4.0 still
// advertises Produce v0–v2 for old librdkafka clients (KAFKA-18659) but
// refuses them; this server advertises v3 up, what it accepts. Taken from franz-go's kversion
// tables for 4.0–4.4, which are read from the broker's ApiVersions answer.
func baseVersions() map[kmsg.Key]apiRange {
	return map[kmsg.Key]apiRange{
		kmsg.Produce:                {3, 12},
		kmsg.Fetch:                  {4, 17},
		kmsg.ListOffsets:            {1, 10},
		kmsg.Metadata:               {0, 13},
		kmsg.OffsetCommit:           {2, 9},
		kmsg.OffsetFetch:            {1, 9},
		kmsg.FindCoordinator:        {0, 6},
		kmsg.JoinGroup:              {2, 9},
		kmsg.Heartbeat:              {0, 4},
		kmsg.LeaveGroup:             {0, 5},
		kmsg.SyncGroup:              {0, 5},
		kmsg.DescribeGroups:         {0, 6},
		kmsg.ListGroups:             {0, 5},
		kmsg.ApiVersions:            {0, 4},
		kmsg.CreateTopics:           {2, 7},
		kmsg.DeleteTopics:           {1, 6},
		kmsg.InitProducerID:         {0, 5},
		kmsg.DeleteGroups:           {0, 2},
		kmsg.OffsetDelete:           {0, 0},
		kmsg.ConsumerGroupHeartbeat: {0, 1},
		kmsg.ConsumerGroupDescribe:  {0, 1},
	}
}

// versionsFor is baseVersions as Kafka release v advertises them: 4.0.1
// took JoinGroup v0–v1 back (KAFKA-19444, on the 4.0 branch before 4.0.1
// and the 4.1 branch before 4.1.0; JoinGroupRequest.json "0-9"), 4.1 added
// Produce 13 and Fetch 18 (topic ids, KIP-516), 4.2 ListOffsets 11
// and OffsetCommit/OffsetFetch 10 (topic ids; unstable in 4.1, made stable by
// KAFKA-19186), 4.4 ApiVersions 5 (KIP-1242) and DeleteGroups 3.
func versionsFor(v version.Version, consumerProtocol bool) map[kmsg.Key]apiRange {
	out := baseVersions()
	if !consumerProtocol {
		delete(out, kmsg.ConsumerGroupHeartbeat)
		delete(out, kmsg.ConsumerGroupDescribe)
	}
	bump := func(k kmsg.Key, hi int16) {
		r := out[k]
		r.hi = hi
		out[k] = r
	}
	if v >= version.MustParse("4.0.1") {
		out[kmsg.JoinGroup] = apiRange{0, 9} // KAFKA-19444 re-added v0 and v1
	}
	if v >= version.MustParse("4.1.0") {
		bump(kmsg.Produce, 13)
		bump(kmsg.Fetch, 18)
	}
	if v >= version.MustParse("4.2.0") {
		bump(kmsg.ListOffsets, 11)
		bump(kmsg.OffsetCommit, 10)
		bump(kmsg.OffsetFetch, 10)
	}
	if v >= version.MustParse("4.4.0") {
		bump(kmsg.ApiVersions, 5)
		bump(kmsg.DeleteGroups, 3)
	}
	// Never advertise a version kmsg cannot parse.
	for k, r := range out {
		if m := kmsg.RequestForKey(int16(k)).MaxVersion(); r.hi > m {
			r.hi = m
			out[k] = r
		}
	}
	return out
}

// versionRange reports the versions of key this server serves.
func (s *Server) versionRange(key int16) (lo, hi int16, ok bool) {
	r, ok := s.versions[kmsg.Key(key)]
	return r.lo, r.hi, ok
}

func (s *Server) handleApiVersions(req *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	served := s.versions
	own := served[kmsg.ApiVersions]
	if req.Version > own.hi {
		resp.Version = 0
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = int16(kmsg.ApiVersions), own.lo, own.hi
		resp.ApiKeys = append(resp.ApiKeys, k)
		return resp
	}
	if req.Version >= 3 && (!validSoftware(req.ClientSoftwareName) || !validSoftware(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if req.Version >= 5 {
		hasCluster, hasNode := req.ClusterID != nil, req.NodeID != -1
		switch {
		case hasCluster != hasNode:
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp
		case hasCluster && (*req.ClusterID != s.cfg.ClusterID || req.NodeID != s.cfg.NodeID):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return resp
		}
	}
	for k, r := range served {
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MinVersion, ak.MaxVersion = int16(k), r.lo, r.hi
		resp.ApiKeys = append(resp.ApiKeys, ak)
	}
	sort.Slice(resp.ApiKeys, func(i, j int) bool { return resp.ApiKeys[i].ApiKey < resp.ApiKeys[j].ApiKey })
	return resp
}

// validSoftware is the pattern ApiVersionsRequest.isValid checks.
func validSoftware(s string) bool {
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	if s == "" || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}
