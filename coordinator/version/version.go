// Package version names the Apache Kafka releases groupquake serves (4.0.0 to
// 4.4.0) and, for each, the group-coordinator behaviours that differ between
// them: which __consumer_offsets record versions and fields are written, how
// epochs are numbered, which validation rules and fixes apply.
//
// The package is a leaf: plain data, no IO. Every fact cites the Kafka source
// (branches 4.0 … 4.4 of the Apache repository, read through the
// confluentinc/kafka mirror, and the released kafka-group-coordinator jars on
// Maven Central) so a reader can check it.
package version

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is an Apache Kafka release, packed as major<<16 | minor<<8 | patch
// so that releases compare with < and can be constants.
type Version uint32

// The releases groupquake serves. Every one resolved as
// org.apache.kafka:kafka_2.13:<version> from Maven Central (mvn
// dependency:get; 4.2.2 and 4.3.2 on 2026-12-05, the others on
// 2026-12-02), and each up to 4.2.1 and 4.3.1 is listed as released in
// tests/kafkatest/version.py of the 4.4 branch (4.0.2 in that file of the
// 4.0 branch). 4.2.2 and 4.3.2 are later than the stored copy of that
// file (2026-08-21); kafka/kafka-version.properties of their
// kafka-clients jars names their release commits, c5e9428595 and
// 0a6c96d3b6.
const (
	V4_0_0 Version = 4<<16 | 0<<8 | 0
	V4_0_1 Version = 4<<16 | 0<<8 | 1
	V4_0_2 Version = 4<<16 | 0<<8 | 2
	V4_1_0 Version = 4<<16 | 1<<8 | 0
	V4_1_1 Version = 4<<16 | 1<<8 | 1
	V4_1_2 Version = 4<<16 | 1<<8 | 2
	V4_2_0 Version = 4<<16 | 2<<8 | 0
	V4_2_1 Version = 4<<16 | 2<<8 | 1
	V4_2_2 Version = 4<<16 | 2<<8 | 2
	V4_3_0 Version = 4<<16 | 3<<8 | 0
	V4_3_1 Version = 4<<16 | 3<<8 | 1
	V4_3_2 Version = 4<<16 | 3<<8 | 2
	V4_4_0 Version = 4<<16 | 4<<8 | 0

	// Default is the Kafka version used when a scenario names none.
	Default = V4_4_0
)

// DefaultMessageMaxBytes is message.max.bytes by default in every release
// served: 1 MiB plus Records.LOG_OVERHEAD of 12 bytes
// (server-common/src/main/java/org/apache/kafka/server/config/ServerLogConfigs.java,
// MAX_MESSAGE_BYTES_DEFAULT). __consumer_offsets takes it as its
// max.message.bytes, and the group coordinator writes every batch under it
// (coordinator-common CoordinatorRuntime.maybeAllocateNewBatch): a classic
// group's GroupMetadataValue, which lists every member, cannot be written
// once it outgrows it.
const DefaultMessageMaxBytes = 1024*1024 + 12

// served is the single list of exact releases; Served, Parse and the error
// text are all derived from it. Keep it sorted.
var served = [...]Version{
	V4_0_0, V4_0_1, V4_0_2,
	V4_1_0, V4_1_1, V4_1_2,
	V4_2_0, V4_2_1, V4_2_2,
	V4_3_0, V4_3_1, V4_3_2,
	V4_4_0,
}

// pinned are the releases the real-cluster tier runs on every CI run: the
// default and the newest 4.1, the two whose behaviour the conformance
// expectations pin on both sides of the 4.3 changes (first epochs,
// assignment epochs, the assignment interval).
var pinned = [...]Version{Default, V4_1_2}

// Pinned returns the releases the real-cluster tier runs by default
// (clustertest.Versions, the Makefile's VERSIONS), default first. The slice
// is a copy.
func Pinned() []Version {
	out := make([]Version, len(pinned))
	copy(out, pinned[:])
	return out
}

// Served returns the exact releases groupquake serves, oldest first. The
// slice is a copy.
func Served() []Version {
	out := make([]Version, len(served))
	copy(out, served[:])
	return out
}

// Major returns the major version number.
func (v Version) Major() int { return int(v >> 16 & 0xff) }

// Minor returns the minor version number.
func (v Version) Minor() int { return int(v >> 8 & 0xff) }

// Patch returns the patch version number.
func (v Version) Patch() int { return int(v & 0xff) }

// String returns "major.minor.patch".
func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major(), v.Minor(), v.Patch())
}

// Line returns the release line, "major.minor", which names the Kafka branch.
func (v Version) Line() string {
	return fmt.Sprintf("%d.%d", v.Major(), v.Minor())
}

// IsServed reports whether v is one of the exact releases in Served.
func (v Version) IsServed() bool {
	for _, s := range served {
		if s == v {
			return true
		}
	}
	return false
}

// Parse reads an exact served release such as "4.1.2". Anything else is an
// error that lists what is served, so a typo in a scenario or a flag says
// what to write instead.
func Parse(s string) (Version, error) {
	v, ok := parseTriple(strings.TrimSpace(s))
	if !ok || !v.IsServed() {
		return 0, fmt.Errorf("unknown Kafka version %q: served versions are %s–%s (%s)",
			s, served[0], served[len(served)-1], servedList())
	}
	return v, nil
}

// MustParse is Parse for constants in tests and tables; it panics on error.
func MustParse(s string) Version {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

func parseTriple(s string) (Version, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return 0, false
	}
	var n [3]uint32
	for i, p := range parts {
		// Reject signs, spaces and leading zeros ("04.1.0") so one release has
		// exactly one spelling.
		if p == "" || (len(p) > 1 && p[0] == '0') || strings.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
			return 0, false
		}
		x, err := strconv.ParseUint(p, 10, 8)
		if err != nil {
			return 0, false
		}
		n[i] = uint32(x)
	}
	return Version(n[0]<<16 | n[1]<<8 | n[2]), true
}

func servedList() string {
	names := make([]string, len(served))
	for i, v := range served {
		names[i] = v.String()
	}
	return strings.Join(names, ", ")
}
