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

// versionsFor is what Kafka release v advertises for the APIs this server
// implements: version.Profile.APIVersions, the one table of them, which
// the reference coordinator also checks requests against. Without the
// consumer protocol ConsumerGroupHeartbeat and ConsumerGroupDescribe are
// not advertised; with shareFetch, ShareFetch, ShareAcknowledge and
// DescribeShareGroupOffsets are (version.Profile.ShareAPIVersions), and
// IncrementalAlterConfigs; no version kmsg cannot parse is.
func versionsFor(v version.Version, consumerProtocol, shareFetch bool) map[kmsg.Key]apiRange {
	out := map[kmsg.Key]apiRange{}
	for k, r := range v.Profile().APIVersions() {
		out[kmsg.Key(k)] = apiRange{r.Min, min(r.Max, kmsg.RequestForKey(k).MaxVersion())}
	}
	if shareFetch {
		out[kmsg.IncrementalAlterConfigs] = apiRange{version.IncrementalAlterConfigsVersions.Min, version.IncrementalAlterConfigsVersions.Max}
		for _, k := range []int16{version.APIShareFetch, version.APIShareAcknowledge, version.APIDescribeShareGroupOffsets} {
			if r, ok := v.Profile().ShareAPIVersions()[k]; ok {
				out[kmsg.Key(k)] = apiRange{r.Min, min(r.Max, kmsg.RequestForKey(k).MaxVersion())}
			}
		}
	}
	if !consumerProtocol {
		delete(out, kmsg.ConsumerGroupHeartbeat)
		delete(out, kmsg.ConsumerGroupDescribe)
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
