package differential

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/vectors"
)

// format renders a response in the vectors' canonical form
// (coordinator/vectors.Format) with every list whose order is a hash-map
// iteration order in Kafka sorted: the target hashes its own member ids and
// namespaced names, so only the set can be compared. n maps the side's
// names back to the vector's: vectors.Identity for the reference,
// targetNorm for a target.
func format(r kmsg.Response, n vectors.Norm) string {
	return vectors.Format(r, n, vectors.Sorted)
}

// memberID returns the member id a response hands out, if any: the id a
// target generated that later requests must carry.
func memberID(r kmsg.Response) string {
	switch r := r.(type) {
	case *kmsg.JoinGroupResponse:
		return r.MemberID
	case *kmsg.ConsumerGroupHeartbeatResponse:
		if r.MemberID != nil {
			return *r.MemberID
		}
		return "null"
	}
	return ""
}
