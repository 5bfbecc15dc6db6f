package coordinator

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/version"
)

// apiVersions returns the request versions the Kafka release of p accepts
// for a group-coordinator API: validVersions in
// clients/src/main/resources/common/message/*Request.json of each branch,
// less a latest version marked "latestVersionUnstable", which a broker
// neither advertises nor accepts unless the internal
// unstable.api.versions.enable is set (ApiKeys.isVersionEnabled via
// ApiVersionManager.isApiEnabled; SocketServer's Processor.parseRequestHeader
// closes the connection on it). A broker answers any other version with
// UNSUPPORTED_VERSION before the coordinator sees it; here Submit returns
// an error, for the wire adapter to answer.
func apiVersions(p version.Profile, key int16) (lo, hi int16, ok bool) {
	switch key {
	case 8: // OffsetCommit: v10 (topic ids) from 4.2.
		if offsetsV10(p.Version) {
			return 2, 10, true
		}
		return 2, 9, true
	case 9: // OffsetFetch: v10 (topic ids) from 4.2.
		if offsetsV10(p.Version) {
			return 1, 10, true
		}
		return 1, 9, true
	case 11: // JoinGroup: v0 and v1 were removed in 4.0.0 (KIP-896) and put back in 4.0.1.
		if !joinGroupV0(p.Version) {
			return 2, 9, true
		}
		return 0, 9, true
	case 12:
		return 0, 4, true
	case 13:
		return 0, 5, true
	case 14:
		return 0, 5, true
	case 15:
		return 0, 6, true
	case 16:
		return 0, 5, true
	case 42: // DeleteGroups: v3 (per-group ErrorMessage, KAFKA-20620) from 4.4.
		if p.Version >= version.V4_4_0 {
			return 0, 3, true
		}
		return 0, 2, true
	case 47:
		return 0, 0, true
	case 68, 69:
		return 0, 1, true
	}
	return 0, 0, false
}

// offsetsV10 tells whether OffsetCommit and OffsetFetch v10 (topic ids
// instead of names, KIP-848) are served. KAFKA-14690 and KAFKA-14691 added
// v10 on trunk before 4.1 was branched, but marked it
// "latestVersionUnstable": true, which the 4.1 branch keeps (4.1.0–4.1.2
// advertise OffsetCommit v2–v9 and OffsetFetch v1–v9). KAFKA-19186
// (apache/kafka#20923, commit 9599143) dropped the flag on trunk before 4.2
// was released, so 4.2.0 is the first release to serve v10.
func offsetsV10(v version.Version) bool { return v >= version.V4_2_0 }

// joinGroupV0 tells whether JoinGroup v0 and v1 are served. KIP-896
// (KAFKA-18269) made v2 the baseline in 4.0.0; KAFKA-19444 (apache/kafka#20116)
// put v0 and v1 back for librdkafka before 2.11: on trunk (commit 4b60761),
// on the 4.1 branch (487af01) before 4.1.0 and on the 4.0 branch (80b9abe)
// before 4.0.1 (gradle.properties "Bump version to 4.0.1", b3aeb69).
func joinGroupV0(v version.Version) bool { return v >= version.V4_0_1 }

func (c *Coordinator) checkVersion(req kmsg.Request) error {
	lo, hi, ok := apiVersions(c.profile, req.Key())
	if !ok {
		return nil // dispatch names the API it does not serve
	}
	if v := req.GetVersion(); v < lo || v > hi {
		return fmt.Errorf("coordinator: %s v%d is not served by Kafka %s (versions %d–%d); a broker answers UNSUPPORTED_VERSION",
			kmsg.NameForKey(req.Key()), v, c.profile.Version, lo, hi)
	}
	return nil
}
