package version

import (
	"fmt"
	"strings"
)

// Feature names of Kafka's finalized features (KIP-584) that an upgrade
// finalizes: MetadataVersion.FEATURE_NAME and GroupVersion.FEATURE_NAME in
// server-common/src/main/java/org/apache/kafka/server/common/.
const (
	FeatureMetadataVersion = "metadata.version"
	FeatureGroupVersion    = "group.version"
)

// metadataVersions are the metadata.version feature levels of the 4.x
// releases, from MetadataVersion.java (server-common): the level, its
// name, and whether it changed the metadata records (didMetadataChange,
// which decides whether a downgrade past it loses information). Read from
// the released kafka-server-common jars of every served version (a
// program printing MetadataVersion.VERSIONS, LATEST_PRODUCTION and
// GroupVersion.LATEST_PRODUCTION, 2026-12-02), and agreeing with
// `kafka-storage version-mapping` of the 4.1.2 and 4.4.0 images.
var metadataVersions = []struct {
	level   int16
	name    string
	changed bool
}{
	{22, "4.0-IV0", false},
	{23, "4.0-IV1", true}, // ELR records (KIP-966)
	{24, "4.0-IV2", false},
	{25, "4.0-IV3", false},
	{26, "4.1-IV0", false},
	{27, "4.1-IV1", false},
	{28, "4.2-IV0", false},
	{29, "4.2-IV1", false},
	{30, "4.3-IV0", true}, // cordoned log dirs in broker registrations
	{31, "4.4-IV0", false},
	{32, "4.4-IV1", true}, // CIDR ACL host patterns (KIP-1276)
	{33, "4.4-IV2", true}, // controller unregistration (KIP-1312)
}

// MetadataVersionName is the name of a metadata.version feature level
// ("4.4-IV2" for 33), or the level as a number when it is not a 4.x one.
func MetadataVersionName(level int16) string {
	for _, m := range metadataVersions {
		if m.level == level {
			return m.name
		}
	}
	return fmt.Sprintf("level %d", level)
}

// MetadataChangedBetween lists the metadata.version levels in (lo, hi] that
// changed the metadata records: Kafka refuses to downgrade metadata.version
// from hi to lo when there is any (FeatureControlManager.updateMetadataVersion:
// "Refusing to perform the requested downgrade because it might delete
// metadata information"; unsafe downgrades are not supported in 4.x).
func MetadataChangedBetween(lo, hi int16) []string {
	var out []string
	for _, m := range metadataVersions {
		if m.changed && m.level > lo && m.level <= hi {
			out = append(out, fmt.Sprintf("%s (%d)", m.name, m.level))
		}
	}
	return out
}

// CheckUpgrade says whether a rolling upgrade of a cluster from release
// from to release to is one groupquake can run and Kafka supports: both
// served (KRaft, 4.0.0 or later: a 3.x cluster would first have to be
// upgraded to 4.x, and groupquake serves no 3.x image), and to newer than
// from. Kafka 4.x upgrades from any older 4.x release in place, one node at
// a time, with metadata.version finalized after the last node (the upgrade
// notes of docs/upgrade.html).
func CheckUpgrade(from, to string) (Version, Version, error) {
	return CheckUpgradeFlags("--from", "--to", from, to)
}

// CheckUpgradeFlags is CheckUpgrade for a command whose flags for the two
// releases are named fromFlag and toFlag (groupquake run's --kafka and
// --upgrade-to): its messages name those flags.
func CheckUpgradeFlags(fromFlag, toFlag, from, to string) (Version, Version, error) {
	f, err := parseEnd(fromFlag, from)
	if err != nil {
		return 0, 0, err
	}
	t, err := parseEnd(toFlag, to)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case t == f:
		return f, t, fmt.Errorf("%s and %s are both %s: an upgrade needs a newer %s (served: %s)", fromFlag, toFlag, f, toFlag, servedList())
	case t < f:
		return f, t, fmt.Errorf("%s %s is older than %s %s: an upgrade goes to a newer release (to upgrade from %s to %s, swap them)", toFlag, t, fromFlag, f, t, f)
	}
	return f, t, nil
}

// parseEnd parses one end of an upgrade, saying which flag was wrong and,
// for a 3.x release, why it is not served.
func parseEnd(flag, s string) (Version, error) {
	v, err := Parse(s)
	if err == nil {
		return v, nil
	}
	if old, ok := parseTriple(strings.TrimSpace(s)); ok && old.Major() < 4 {
		return 0, fmt.Errorf("%s %s: Kafka %s is not served: groupquake runs KRaft clusters of 4.0.0 and later (%s); a 3.x cluster upgrades to 4.x outside groupquake first", flag, s, old, servedList())
	}
	return 0, fmt.Errorf("%s: %w", flag, err)
}

// CheckDowngrade says whether a cluster of release from whose
// metadata.version is finalized at level finalized can have its binaries
// rolled back to release to: the older binaries must support the finalized
// level. Before an upgrade is finalized they do (it is still the old
// release's level). After it, Kafka refuses to lower metadata.version past
// a level that changed the metadata records; and where it does lower it,
// the older controllers still fail to start: they replay the metadata log
// from their last snapshot, which holds the FeatureLevelRecord of the higher
// level ("Tried to apply FeatureLevelRecord(name='metadata.version',
// featureLevel=29), but this controller only supports versions 7-27", seen
// rolling 4.2.1 back to 4.1.2 after lowering 29 to 27, 2026-12-02), until
// every controller has a snapshot past the downgrade, which groupquake
// cannot bring about.
func CheckDowngrade(from, to Version, finalized int16) error {
	if to >= from {
		return fmt.Errorf("a downgrade goes to an older release: %s is not older than %s", to, from)
	}
	supported := to.Profile().MetadataVersionLevel
	if finalized <= supported {
		return nil
	}
	if changed := MetadataChangedBetween(supported, finalized); len(changed) > 0 {
		return fmt.Errorf("Kafka refuses to downgrade from %s to %s once metadata.version is finalized at %s (%d): %s supports at most %s (%d), and the levels between changed the metadata records (%s), so metadata.version cannot be lowered; roll the binaries back only before finalizing the upgrade",
			from, to, MetadataVersionName(finalized), finalized, to, MetadataVersionName(supported), supported, strings.Join(changed, ", "))
	}
	return fmt.Errorf("%s cannot go back to %s once metadata.version is finalized at %s (%d): Kafka lowers it to %s (%d), but %s's controllers then stop at the higher level's FeatureLevelRecord still in the metadata log until a snapshot past the downgrade exists, which groupquake cannot bring about; roll the binaries back only before finalizing the upgrade",
		from, to, MetadataVersionName(finalized), finalized, MetadataVersionName(supported), supported, to)
}
