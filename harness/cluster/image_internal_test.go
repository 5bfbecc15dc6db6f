package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/coordinator/version"
)

func TestMirrorFromAptSources(t *testing.T) {
	deb822 := `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.example.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.example.org/debian-security
Suites: bookworm-security
Components: main
`
	if got := mirrorFromDeb822(deb822, "bookworm"); got != "http://deb.example.org/debian" {
		t.Errorf("deb822: got %q", got)
	}
	if got := mirrorFromDeb822(deb822, "trixie"); got != "" {
		t.Errorf("deb822 for another release: got %q", got)
	}
	list := `# comment
deb-src http://src.example.org/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] http://mirror.example.org/debian bookworm main contrib
deb http://other.example.org/debian bookworm-updates main
`
	if got := mirrorFromList(list, "bookworm"); got != "http://mirror.example.org/debian" {
		t.Errorf("one-line sources: got %q", got)
	}
	if got := mirrorFromList("deb http://x.example.org/debian bookworm contrib\n", "bookworm"); got != "" {
		t.Errorf("a source without main was taken: %q", got)
	}
}

func TestEnvNameMatchesImageMapping(t *testing.T) {
	// The image's entrypoint maps back with _ -> ".", then "..." -> "-", then ".." -> "_".
	for prop, env := range map[string]string{
		"node.id":                             "KAFKA_NODE_ID",
		"group.consumer.session.timeout.ms":   "KAFKA_GROUP_CONSUMER_SESSION_TIMEOUT_MS",
		"listener.name.internal.ssl.key_pass": "KAFKA_LISTENER_NAME_INTERNAL_SSL_KEY__PASS",
		"some-dashed.name":                    "KAFKA_SOME___DASHED_NAME",
	} {
		if got := envName(prop); got != env {
			t.Errorf("envName(%q) = %q, want %q", prop, got, env)
		}
	}
}

func TestFastGroupSettingsAreVersionAware(t *testing.T) {
	if _, ok := FastGroupSettings(version.V4_1_2.Profile(), 1)["group.consumer.assignment.interval.ms"]; ok {
		t.Errorf("4.1.2 has no group.consumer.assignment.interval.ms (KIP-1263 is 4.3+)")
	}
	if got := FastGroupSettings(version.V4_3_0.Profile(), 1)["group.consumer.assignment.interval.ms"]; got != "0" {
		t.Errorf("4.3.0: assignment interval %q, want 0", got)
	}
	if got := FastGroupSettings(version.V4_4_0.Profile(), 3)["offsets.topic.replication.factor"]; got != "3" {
		t.Errorf("3 brokers: offsets RF %q, want 3", got)
	}
	if got := FastGroupSettings(version.V4_4_0.Profile(), 1)["min.insync.replicas"]; got != "1" {
		t.Errorf("1 broker: min ISR %q, want 1", got)
	}
}

// TestFastShareSettings: share-group timers go only to releases where
// share groups are production-ready, satisfy the bounds the broker checks
// at start (ShareGroupConfig.validate: min <= lock duration <= max 60 s;
// delivery count limit 2–10; session timeout and heartbeat interval at or
// above their minimums), and the share assignment interval only to 4.3+.
func TestFastShareSettings(t *testing.T) {
	if _, ok := FastGroupSettings(version.V4_1_2.Profile(), 1)["group.share.record.lock.duration.ms"]; ok {
		t.Errorf("4.1.2 has share groups as a preview only: no share settings expected")
	}
	num := func(s map[string]string, k string) int {
		t.Helper()
		n, err := strconv.Atoi(s[k])
		if err != nil {
			t.Fatalf("%s = %q: %v", k, s[k], err)
		}
		return n
	}
	for _, v := range version.ShareServed() {
		s := FastGroupSettings(v.Profile(), 1)
		lock, minLock := num(s, "group.share.record.lock.duration.ms"), num(s, "group.share.min.record.lock.duration.ms")
		if minLock < 1000 || minLock > lock || lock > 60000 {
			t.Errorf("%v: lock %d ms with minimum %d breaks 1000 <= min <= lock <= 60000", v, lock, minLock)
		}
		if l := num(s, "group.share.delivery.count.limit"); l < 2 || l > 10 {
			t.Errorf("%v: delivery count limit %d outside 2–10", v, l)
		}
		if num(s, "group.share.session.timeout.ms") < num(s, "group.share.min.session.timeout.ms") ||
			num(s, "group.share.heartbeat.interval.ms") < num(s, "group.share.min.heartbeat.interval.ms") {
			t.Errorf("%v: share timers below their minimums: %v", v, s)
		}
		if _, ok := s["group.share.assignment.interval.ms"]; ok != (v >= version.V4_3_0) {
			t.Errorf("%v: group.share.assignment.interval.ms set = %v, want %v (KIP-1263 is 4.3+)", v, ok, v >= version.V4_3_0)
		}
	}
}

func TestClusterIDNeverStartsWithDash(t *testing.T) {
	for range 5000 {
		id := newClusterID()
		if len(id) != 22 || id[0] == '-' {
			t.Fatalf("cluster id %q: want 22 base64url characters not starting with '-'", id)
		}
	}
}

// TestBuildSteps: the engine's build stream is said stage by stage, "step
// N of M", and its other lines are not.
func TestBuildSteps(t *testing.T) {
	stream := strings.Join([]string{
		`{"stream":"Step 1/3 : FROM groupquake/jre:trixie"}`,
		`{"stream":"\n"}`,
		`{"stream":" ---\u003e 1a2b3c\n"}`,
		`{"stream":"Step 2/3 : COPY libs /opt/kafka/libs\n"}`,
		`{"stream":"Step 3/3 : ENTRYPOINT [\"/opt/kafka/run\"]\n"}`,
		`{"stream":"Successfully built 4d5e6f\n"}`,
	}, "\n")
	var said []string
	logf := func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	if err := drainJSONStream(strings.NewReader(stream), nil, buildSteps("groupquake/kafka:4.4.0", logf)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"image: building groupquake/kafka:4.4.0: step 1 of 3: FROM groupquake/jre:trixie",
		"image: building groupquake/kafka:4.4.0: step 2 of 3: COPY libs /opt/kafka/libs",
		`image: building groupquake/kafka:4.4.0: step 3 of 3: ENTRYPOINT ["/opt/kafka/run"]`,
	}
	if !slices.Equal(said, want) {
		t.Errorf("said %q, want %q", said, want)
	}
}
