package version

import (
	"strings"
	"testing"
)

// The finalized-feature levels of each served release, as the released
// kafka-server-common jars report them (see features.go).
func TestFeatureLevels(t *testing.T) {
	want := map[string]int16{"4.0": 25, "4.1": 27, "4.2": 29, "4.3": 30, "4.4": 33}
	for _, v := range Served() {
		p := v.Profile()
		if p.MetadataVersionLevel != want[v.Line()] {
			t.Errorf("%s: metadata.version level %d, want %d", v, p.MetadataVersionLevel, want[v.Line()])
		}
		if p.GroupVersionLevel != 1 {
			t.Errorf("%s: group.version level %d, want 1", v, p.GroupVersionLevel)
		}
		if strings.HasPrefix(MetadataVersionName(p.MetadataVersionLevel), "level") {
			t.Errorf("%s: level %d has no name", v, p.MetadataVersionLevel)
		}
	}
	if got := MetadataVersionName(33); got != "4.4-IV2" {
		t.Errorf("MetadataVersionName(33) = %q", got)
	}
}

func TestCheckUpgrade(t *testing.T) {
	if f, to, err := CheckUpgrade("4.1.2", "4.4.0"); err != nil || f != V4_1_2 || to != V4_4_0 {
		t.Errorf("4.1.2 → 4.4.0: %v, %v, %v", f, to, err)
	}
	for _, tc := range []struct{ from, to, says string }{
		{"4.4.0", "4.1.2", "older than --from 4.4.0"},
		{"4.1.2", "4.1.2", "both 4.1.2"},
		{"4.9.1", "4.4.0", `--from: unknown Kafka version "4.9.1"`},
		{"4.1.2", "5.0.0", `--to: unknown Kafka version "5.0.0"`},
		{"3.9.0", "4.4.0", "Kafka 3.9.0 is not served: groupquake runs KRaft clusters of 4.0.0 and later"},
	} {
		_, _, err := CheckUpgrade(tc.from, tc.to)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("CheckUpgrade(%s, %s) = %v, want an error saying %q", tc.from, tc.to, err, tc.says)
		}
	}
}

func TestCheckDowngrade(t *testing.T) {
	// Before finalizing, metadata.version is still the old release's: the
	// old binaries run it.
	if err := CheckDowngrade(V4_4_0, V4_1_2, 27); err != nil {
		t.Errorf("binary downgrade before finalizing: %v", err)
	}
	// Within a line the level is the same: finalized or not, back it goes.
	if err := CheckDowngrade(V4_1_2, V4_1_0, 27); err != nil {
		t.Errorf("4.1.2 back to 4.1.0: %v", err)
	}
	// Finalized at 4.4's level: 30, 32 and 33 changed the metadata records.
	err := CheckDowngrade(V4_4_0, V4_1_2, 33)
	if err == nil || !strings.Contains(err.Error(), "Kafka refuses") || !strings.Contains(err.Error(), "4.3-IV0 (30)") {
		t.Errorf("downgrade after finalizing 4.4: %v", err)
	}
	// 4.2's levels 28 and 29 changed nothing, Kafka lowers 29 to 27, and
	// 4.1.2's controllers still stop at the level-29 record of the log.
	err = CheckDowngrade(V4_2_1, V4_1_2, 29)
	if err == nil || strings.Contains(err.Error(), "refuses") || !strings.Contains(err.Error(), "snapshot past the downgrade") {
		t.Errorf("downgrade after finalizing 4.2: %v", err)
	}
	if err := CheckDowngrade(V4_1_2, V4_4_0, 27); err == nil {
		t.Error("a downgrade to a newer release was accepted")
	}
}
