package version

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
	}{
		{"4.0.0", V4_0_0},
		{"4.0.1", V4_0_1},
		{"4.0.2", V4_0_2},
		{"4.1.2", V4_1_2},
		{" 4.3.1 ", V4_3_1},
		{"4.2.2", V4_2_2},
		{"4.3.2", V4_3_2},
		{"4.4.0", V4_4_0},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if strings.TrimSpace(tc.in) != got.String() {
			t.Errorf("Parse(%q).String() = %q", tc.in, got.String())
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{"4.9.1", "3.9.0", "4.1.3", "4.5.0", "4.1", "4", "", "4.1.2.0", "v4.1.2", "04.1.2", "4.01.2", "4.1.-2", "4.1.2-SNAPSHOT", "256.0.0", "4.1.x", "4.2.3", "4.3.3"} {
		_, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q) accepted", in)
			continue
		}
		prefix := `unknown Kafka version "` + in + `": served versions are 4.0.0–4.4.0 (`
		if !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("Parse(%q) error %q, want prefix %q", in, err, prefix)
		}
	}
	// The message the brief asks for, and the list of what to write instead.
	_, err := Parse("4.9.1")
	const want = `unknown Kafka version "4.9.1": served versions are 4.0.0–4.4.0 (4.0.0, 4.0.1, 4.0.2, 4.1.0, 4.1.1, 4.1.2, 4.2.0, 4.2.1, 4.2.2, 4.3.0, 4.3.1, 4.3.2, 4.4.0)`
	if err == nil || err.Error() != want {
		t.Errorf("Parse(4.9.1) error\n got %v\nwant %s", err, want)
	}
}

func TestServedIsSortedAndParses(t *testing.T) {
	s := Served()
	if s[0] != V4_0_0 || s[len(s)-1] != V4_4_0 || Default != V4_4_0 {
		t.Fatalf("served %v, default %v", s, Default)
	}
	for i, v := range s {
		if i > 0 && s[i-1] >= v {
			t.Errorf("served list not sorted at %v", v)
		}
		if got := MustParse(v.String()); got != v {
			t.Errorf("MustParse(%s) = %v", v, got)
		}
		if v.Line() != v.String()[:3] {
			t.Errorf("%v.Line() = %q", v, v.Line())
		}
	}
	s[0] = 0
	if Served()[0] != V4_0_0 {
		t.Error("Served returned the package's own slice")
	}
}

// TestProfiles pins the behaviour table. Each row cites where it was read.
func TestProfiles(t *testing.T) {
	type row struct {
		ocv              int16 // OffsetCommitValue version (GroupCoordinatorRecordHelpers.offsetCommitValueVersion)
		topicID          bool  // OffsetCommitValue.json topicId, 4.1+
		partitionMeta    bool  // ConsumerGroupPartitionMetadata values written, 4.0 only
		hash             bool  // ConsumerGroupMetadataValue.MetadataHash, 4.1+
		assignTimestamp  bool  // ConsumerGroupTargetAssignmentMetadataValue.AssignmentTimestamp, 4.3+
		assignEpochs     bool  // ConsumerGroupCurrentMemberAssignmentValue AssignmentEpochs, 4.3+
		firstMemberEpoch int32 // KAFKA-20268, 4.3+
		commitLeniency   bool  // KIP-1251, 4.3+
		rejoinZero       bool  // KAFKA-19233, 4.2.0+
		interval         bool  // KIP-1263 group.consumer.assignment.interval.ms, 4.3+
		pendingFix       bool  // KAFKA-19449: 4.0.2, 4.1.2, 4.2.0+
		staticFull       bool  // KAFKA-20601: 4.3.2, 4.4.0
	}
	want := map[Version]row{
		V4_0_0: {3, false, true, false, false, false, 1, false, false, false, false, false},
		V4_0_1: {3, false, true, false, false, false, 1, false, false, false, false, false},
		V4_0_2: {3, false, true, false, false, false, 1, false, false, false, true, false},
		V4_1_0: {4, true, false, true, false, false, 1, false, false, false, false, false},
		V4_1_1: {4, true, false, true, false, false, 1, false, false, false, false, false},
		V4_1_2: {4, true, false, true, false, false, 1, false, false, false, true, false},
		V4_2_0: {4, true, false, true, false, false, 1, false, true, false, true, false},
		V4_2_1: {4, true, false, true, false, false, 1, false, true, false, true, false},
		V4_2_2: {4, true, false, true, false, false, 1, false, true, false, true, false},
		V4_3_0: {4, true, false, true, true, true, 2, true, true, true, true, false},
		V4_3_1: {4, true, false, true, true, true, 2, true, true, true, true, false},
		V4_3_2: {4, true, false, true, true, true, 2, true, true, true, true, true},
		V4_4_0: {4, true, false, true, true, true, 2, true, true, true, true, true},
	}
	for _, v := range Served() {
		w, ok := want[v]
		if !ok {
			t.Errorf("no expected profile for %v", v)
			continue
		}
		p := v.Profile()
		got := row{p.OffsetCommitValueVersion, p.OffsetCommitTopicID, p.WritesPartitionMetadata, p.MetadataHash,
			p.AssignmentTimestamp, p.AssignmentEpochs, p.FirstMemberEpoch, p.OffsetCommitAssignmentEpochs,
			p.RejoinWithEpochZero, p.AssignmentInterval, p.OwnPendingRevocationNotUnreleased, p.StaticRejoinFullGroup}
		if got != w {
			t.Errorf("%v profile\n got %+v\nwant %+v", v, got, w)
		}
		if p.Version != v || p.OffsetCommitValueVersionWithExpiry != 1 || p.GroupMetadataValueVersion != 3 || p.ConsumerGroupValueVersion != 0 {
			t.Errorf("%v: record versions %+v", v, p)
		}
		if p.FirstMemberEpoch != p.InitialGroupEpoch+1 {
			t.Errorf("%v: first member epoch %d, initial group epoch %d", v, p.FirstMemberEpoch, p.InitialGroupEpoch)
		}
		if p.AssignmentInterval != (p.DefaultAssignmentIntervalMs == 1000) {
			t.Errorf("%v: assignment interval %v with default %d", v, p.AssignmentInterval, p.DefaultAssignmentIntervalMs)
		}
	}
}

// TestReconcileEpochFlags pins the two CurrentAssignmentBuilder changes the
// consumer-group state machine keys on, as read in the 4.0–4.4 branches:
// KAFKA-19974 (4fb27146af on 4.2, 8ff7addcec on trunk) and #21325
// (b8692f3158, 4.3+ only).
func TestReconcileEpochFlags(t *testing.T) {
	for _, v := range Served() {
		p := v.Profile()
		wantSince(t, v, "RevocationAckKeepsEpoch", p.RevocationAckKeepsEpoch, V4_2_0)
		wantSince(t, v, "UnsubscribeUpdatesPreviousEpoch", p.UnsubscribeUpdatesPreviousEpoch, V4_3_0)
	}
}

// TestMixedGroupFlags pins the behaviours of classic members inside a
// consumer group that differ by release: KAFKA-20272 (rejoin against the
// assignment epoch, 4.3 branch, in the 4.4.0 jar) and KAFKA-20640 (the
// disabled migration policy refuses classic joins: in the 4.2.2, 4.3.1,
// 4.3.2 and 4.4.0 jars, not in the 4.1.2, 4.2.1 or 4.3.0 ones),
// KAFKA-20442 (the last leave resets the assignment epoch: in the 4.3.2
// and 4.4.0 jars, not in 4.3.1's), and KAFKA-20662 (a malformed embedded
// subscription is INCONSISTENT_GROUP_PROTOCOL, not UNKNOWN_SERVER_ERROR:
// in the 4.2.2, 4.3.2 and 4.4.0 jars, not in the 4.1.2, 4.2.1 or 4.3.1
// ones).
func TestMixedGroupFlags(t *testing.T) {
	for _, v := range Served() {
		p := v.Profile()
		wantSince(t, v, "DowngradeRebalancesOnStaleAssignment", p.DowngradeRebalancesOnStaleAssignment, V4_3_0)
		wantSince(t, v, "ClassicRejoinOnNewAssignment", p.ClassicRejoinOnNewAssignment, V4_3_0)
		wantSince(t, v, "LastLeaveResetsAssignmentEpoch", p.LastLeaveResetsAssignmentEpoch, V4_3_2)
		refused := map[Version]bool{V4_2_2: true, V4_3_1: true, V4_3_2: true, V4_4_0: true}
		if got := p.ClassicJoinRefusedWhenMigrationDisabled; got != refused[v] {
			t.Errorf("%v: ClassicJoinRefusedWhenMigrationDisabled %v, want %v (4.2.2, 4.3.1, 4.3.2, 4.4.0)", v, got, refused[v])
		}
		malformed := map[Version]bool{V4_2_2: true, V4_3_2: true, V4_4_0: true}
		if got := p.MalformedJoinSubscriptionInconsistent; got != malformed[v] {
			t.Errorf("%v: MalformedJoinSubscriptionInconsistent %v, want %v (4.2.2, 4.3.2, 4.4.0)", v, got, malformed[v])
		}
	}
}

// TestStaticRejoinFlags pins the two static-member fixes that reached 4.3.2
// but not 4.2.2 (their methods are in the 4.3.2 jar, byte-for-byte those
// of 4.4.0's): KAFKA-20434 (a changed preferred assignor bumps the epoch)
// and KAFKA-20601 (a known instance id rejoins a full group).
func TestStaticRejoinFlags(t *testing.T) {
	for _, v := range Served() {
		p := v.Profile()
		wantSince(t, v, "AssignorChangeRecomputes", p.AssignorChangeRecomputes, V4_3_2)
		wantSince(t, v, "StaticRejoinFullGroup", p.StaticRejoinFullGroup, V4_3_2)
	}
}

// TestAPIVersions pins the request-version facts the coordinator and the
// embedded broker both read from APIVersions.
func TestAPIVersions(t *testing.T) {
	for _, tc := range []struct {
		v    Version
		key  int16
		want APIRange
	}{
		{V4_0_0, APIJoinGroup, APIRange{2, 9}},
		{V4_0_1, APIJoinGroup, APIRange{0, 9}},
		{V4_1_2, APIOffsetCommit, APIRange{2, 9}},
		{V4_2_0, APIOffsetCommit, APIRange{2, 10}},
		{V4_2_0, APIOffsetFetch, APIRange{1, 10}},
		{V4_0_2, APIProduce, APIRange{3, 12}},
		{V4_1_0, APIFetch, APIRange{4, 18}},
		{V4_3_1, APIDeleteGroups, APIRange{0, 2}},
		{V4_4_0, APIDeleteGroups, APIRange{0, 3}},
		{V4_4_0, APIApiVersions, APIRange{0, 5}},
	} {
		if got, ok := tc.v.Profile().APIVersions()[tc.key]; !ok || got != tc.want {
			t.Errorf("%s API %d: %v (listed %v), want %v", tc.v, tc.key, got, ok, tc.want)
		}
	}
	for _, v := range Served() {
		apis := v.Profile().APIVersions()
		for _, k := range groupAPIs {
			if (k == APIShareGroupHeartbeat || k == APIShareGroupDescribe) && v.Profile().ShareGroups != ShareProduction {
				continue // TestShareGroupFacts
			}
			if r, ok := apis[k]; !ok || r.Min > r.Max {
				t.Errorf("%s: group API %d has no valid range: %v", v, k, r)
			}
		}
	}
}

// TestFieldsMovedFromPackages pins the facts that other packages used to
// derive from the version number themselves: JoinGroup v0 (KAFKA-19444,
// 4.0.1), OffsetCommit/OffsetFetch v10 (KAFKA-19186, 4.2.0), the uniform
// assignor's KAFKA-18688 (4.0.1) and the topic ids OffsetCommit resolves
// (apache/kafka #21809, 4.3.0).
func TestFieldsMovedFromPackages(t *testing.T) {
	for _, v := range Served() {
		p := v.Profile()
		for _, f := range []struct {
			name      string
			got, want bool
		}{
			{"JoinGroupV0", p.JoinGroupV0, v >= V4_0_1},
			{"UniformHomogeneousStable", p.UniformHomogeneousStable, v >= V4_0_1},
			{"OffsetsTopicIDs", p.OffsetsTopicIDs, v >= V4_2_0},
			{"OffsetCommitResolvesTopicIDs", p.OffsetCommitResolvesTopicIDs, v >= V4_3_0},
		} {
			if f.got != f.want {
				t.Errorf("%v: %s = %v, want %v", v, f.name, f.got, f.want)
			}
		}
	}
}

// TestRegexFlags pins the regex-subscription facts read in the 4.0–4.4
// branches: the RE2/J release of gradle/dependencies.gradle, KAFKA-18961
// (time-based refresh, 4.1.0+) and KAFKA-19891/KAFKA-19899 (dropping a
// regex bumps the epoch: 474bd6f7f1 is an ancestor of the 4.1.2 "Bump
// version" commit c82fd9b934 and not of 4.1.1's be816b82d2; 63a777a162 is
// in 4.2.0; neither is on the 4.0 branch).
func TestRegexFlags(t *testing.T) {
	for _, v := range Served() {
		p := v.Profile()
		want := "1.8"
		if v < V4_1_0 {
			want = "1.7"
		}
		if p.RE2J != want {
			t.Errorf("%v: RE2J %q, want %q", v, p.RE2J, want)
		}
		wantSince(t, v, "RegexPeriodicRefresh", p.RegexPeriodicRefresh, V4_1_0)
		wantSince(t, v, "RegexDropBumpsEpoch", p.RegexDropBumpsEpoch, V4_1_2)
	}
}

// TestShareGroupFacts pins the share-group facts read in the 4.0–4.4
// branches: the release stage (4.0 early access, 4.1 preview, 4.2
// production), share.version at format (SV_1 bootstraps at 4.2-IV0, SV_2
// at 4.4-IV0), group.share.enable until 4.3, ShareFetch and
// ShareAcknowledge v2 (RENEW) from 4.2, and the 4.3 configs.
func TestShareGroupFacts(t *testing.T) {
	for _, v := range Served() {
		p := v.Profile()
		stage := ShareEarlyAccess
		switch {
		case v >= V4_2_0:
			stage = ShareProduction
		case v >= V4_1_0:
			stage = SharePreview
		}
		level := int16(0)
		switch {
		case v >= V4_4_0:
			level = 2
		case v >= V4_2_0:
			level = 1
		}
		for _, f := range []struct {
			name      string
			got, want any
		}{
			{"ShareGroups", p.ShareGroups, stage},
			{"ShareVersionLevel", p.ShareVersionLevel, level},
			{"ShareEnableConfig", p.ShareEnableConfig, v < V4_3_0},
			{"ShareFetchV2", p.ShareFetchV2, v >= V4_2_0},
			{"ShareAssignmentInterval", p.ShareAssignmentInterval, v >= V4_3_0},
			{"ShareDeliveryCountBounds", p.ShareDeliveryCountBounds, v >= V4_3_0},
			{"CheckShareGroups ok", CheckShareGroups(v) == nil, v >= V4_2_0},
			{"ShareAPIVersions served", p.ShareAPIVersions() != nil, v >= V4_1_0},
		} {
			if f.got != f.want {
				t.Errorf("%v: %s = %v, want %v", v, f.name, f.got, f.want)
			}
		}
		if p.ShareFetchV2 {
			if r := p.ShareAPIVersions()[APIShareAcknowledge]; r != (APIRange{1, 2}) {
				t.Errorf("%v: ShareAcknowledge %v, want 1–2", v, r)
			}
		}
		// The reference coordinator serves the group coordinator's share
		// APIs where share groups are production-ready, at the release's
		// versions, and no other share API (ShareFetch, ShareAcknowledge,
		// DescribeShareGroupOffsets are the share-partition leader's and
		// the share coordinator's).
		for k, r := range p.ShareAPIVersions() {
			got, ok := p.APIVersions()[k]
			want := p.ShareGroups == ShareProduction && (k == APIShareGroupHeartbeat || k == APIShareGroupDescribe)
			if ok != want || ok && got != r {
				t.Errorf("%v: APIVersions lists share API %d: %v at %v, want %v at %v", v, k, ok, got, want, r)
			}
		}
	}
}

// TestCheckShareGroupsSaysWhatToDo: the refusal of an older release names
// its stage, the setting or feature level it would need, and the releases
// to pick instead.
func TestCheckShareGroupsSaysWhatToDo(t *testing.T) {
	for _, c := range []struct {
		v    Version
		want []string
	}{
		{V4_1_2, []string{"4.1.2", "preview", "share.version=1", "kafka-features.sh", "4.2.0, 4.2.1, 4.2.2, 4.3.0, 4.3.1, 4.3.2, 4.4.0"}},
		{V4_0_0, []string{"4.0.0", "early access", "group.share.enable=true", "unstable.api.versions.enable", "4.2.0"}},
	} {
		err := CheckShareGroups(c.v)
		if err == nil {
			t.Fatalf("%v: share groups accepted", c.v)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q does not say %q", c.v, err, w)
			}
		}
	}
	if got := ShareServed(); len(got) == 0 || got[0] != V4_2_0 {
		t.Errorf("ShareServed = %v, want it to start at 4.2.0", got)
	}
}

// wantSince checks that the flag name (got at release v) is on from release
// first on and off before it.
func wantSince(t *testing.T, v Version, name string, got bool, first Version) {
	t.Helper()
	if want := v >= first; got != want {
		t.Errorf("%v: %s %v, want %v (on from %v)", v, name, got, want, first)
	}
}
