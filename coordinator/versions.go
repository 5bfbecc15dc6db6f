package coordinator

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/version"
)

// apiVersions returns the request versions the Kafka release of p accepts
// for a group-coordinator API (version.Profile.APIVersions, the one table
// of them). A broker answers any other version with UNSUPPORTED_VERSION
// before the coordinator sees it (SocketServer's Processor.parseRequestHeader
// closes the connection on an unstable one); here Submit returns an error,
// for the wire adapter to answer.
func apiVersions(p version.Profile, key int16) (lo, hi int16, ok bool) {
	if !version.IsGroupAPI(key) {
		return 0, 0, false
	}
	r, ok := p.APIVersions()[key]
	return r.Min, r.Max, ok
}

func (c *Coordinator) checkVersion(req kmsg.Request) error {
	r, ok := c.apis[req.Key()]
	lo, hi := r.Min, r.Max
	if !version.IsGroupAPI(req.Key()) {
		return nil // dispatch names the API it does not serve
	}
	if !ok {
		// The share-group APIs before 4.2 (version.ShareCoordinatorAPIs).
		return fmt.Errorf("coordinator: %s is not served by Kafka %s (share groups are %s there); a broker does not advertise it",
			kmsg.NameForKey(req.Key()), c.profile.Version, c.profile.ShareGroups)
	}
	if v := req.GetVersion(); v < lo || v > hi {
		return fmt.Errorf("coordinator: %s v%d is not served by Kafka %s (versions %d–%d); a broker answers UNSUPPORTED_VERSION",
			kmsg.NameForKey(req.Key()), v, c.profile.Version, lo, hi)
	}
	return nil
}
