package coordinator

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/version"
)

// apiVersions returns the request versions the Kafka release of p accepts
// for a group-coordinator API (validVersions in
// clients/src/main/resources/common/message/*Request.json of each branch).
// A broker answers any other version with UNSUPPORTED_VERSION before the
// coordinator sees it; here Submit returns an error, for the wire adapter
// to answer.
func apiVersions(p version.Profile, key int16) (lo, hi int16, ok bool) {
	switch key {
	case 8: // OffsetCommit: v10 (topic ids, KAFKA-14690) from 4.1.
		if p.Version >= version.V4_1_0 {
			return 2, 10, true
		}
		return 2, 9, true
	case 9: // OffsetFetch: v10 (topic ids, KAFKA-14691) from 4.1.
		if p.Version >= version.V4_1_0 {
			return 1, 10, true
		}
		return 1, 9, true
	case 11:
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
