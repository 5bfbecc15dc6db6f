package kinds

import (
	"fmt"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/share"
	"github.com/groupquake/groupquake/harness/check"
)

func init() {
	register(Family{
		Help:     "the share-group kinds, every member of the run one of them, on Kafka 4.2+ (docs/share-groups.md)",
		Names:    ShareKindNames(),
		Registry: shareRegistry,
	})
}

// ShareKind is a share member kind: groupquake's share member, or one of
// its deliberately broken variants (suites/bite).
type ShareKind struct {
	Name string
	Doc  string
	// Kgo runs franz-go's share consumer (clients/kgoshare) instead of
	// groupquake's share member; Java runs Kafka's KafkaShareConsumer
	// (clients/java.ShareMember).
	Kgo  bool
	Java bool
	// Bug is the defect a broken kind carries; Catches the check.Verdict
	// that names it.
	Bug     share.Bug
	Catches string
}

// ShareKinds lists the share member kinds. None is in Default: a seed
// never draws them; `--kinds share` names them (Registry.WithNamed, and
// Registry.WithBroken, add the named ones).
func ShareKinds() []ShareKind {
	return []ShareKind{
		{Name: "share", Doc: "groupquake's KIP-932 share member (clients/share: ShareGroupHeartbeat, ShareFetch, ShareAcknowledge; accept, release, reject, renew by a fixed policy on each record's sequence number); Kafka 4.2+, every member of the run a share member"},
		{Name: "kgo-share", Kgo: true, Doc: "franz-go's share consumer (kgo.ShareGroup; its requests observed on its connections, clients/kgoshare), acknowledging by the same policy as share; Kafka 4.2+"},
		{Name: "java-share", Java: true, Doc: "Kafka's KafkaShareConsumer (kafka-clients of --kafka-clients, else the cluster's version) in a JVM of its own, explicit acknowledgement (acknowledge(record, type), then commitAsync) by the same policy as share, without renew; its requests observed in its gateway (clients/java); Kafka 4.2+, needs a JDK and Maven"},
		{Name: "broken-share-ack-not-sent", Bug: share.BugAckNotSent, Catches: check.NameShareAckedNotRedelivered,
			Doc: "a share member that leaves its accepts out of the ShareFetch requests that should carry them and reports them acknowledged: the broker delivers each record again when its lock lapses"},
		{Name: "broken-share-ack-not-acquired", Bug: share.BugAckNotAcquired, Catches: check.NameShareAcksOnlyAcquired,
			Doc: "a share member that stretches its accepts to offsets it never acquired and reports them acknowledged"},
		{Name: "broken-share-ignore-delivery-count", Bug: share.BugIgnoreDeliveryCount, Catches: check.NameShareDeliveryCountBounded,
			Doc: "a share member that never reads the delivery count and reports every delivery as the first"},
	}
}

// Share finds the share kind named k.
func Share(k string) (ShareKind, bool) {
	for _, s := range ShareKinds() {
		if s.Name == k {
			return s, true
		}
	}
	return ShareKind{}, false
}

// IsShareKind reports whether k is a share member kind.
func IsShareKind(k string) bool {
	_, ok := Share(k)
	return ok
}

// shareFactory is the registry entry of a share kind: it says the kind's
// protocol; share members are built by harness/run's share run (from the
// ShareKind), not through Factory.New.
func shareFactory(k ShareKind) Factory {
	return Factory{
		Protocol: clients.Share,
		Doc:      k.Doc,
		New: func(s MemberSpec) (clients.Member, error) {
			return nil, fmt.Errorf("member %s: a share member (%s) runs only in a share run, where every member is a share member", s.Name, k.Name)
		},
	}
}

// shareRegistry returns the share kinds as a registry.
func shareRegistry() Registry {
	r := Registry{}
	for _, k := range ShareKinds() {
		r[k.Name] = shareFactory(k)
	}
	return r
}

// ShareKindNames lists the names of ShareKinds, in their order.
func ShareKindNames() []string {
	var out []string
	for _, k := range ShareKinds() {
		out = append(out, k.Name)
	}
	return out
}
