package differential

import (
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/coordinator/version"
)

func out(v string, items ...ReleaseOutcome) ReleaseOutcomes {
	return ReleaseOutcomes{Version: v, Items: items}
}

// agreeing is an outcome that did what its profile predicts.
func agreeing(key, value string) ReleaseOutcome {
	return ReleaseOutcome{Key: key, Kind: Answer, What: "step " + key, Value: value, Model: value, Agrees: true}
}

var twoBehaviours = []Behaviour{{Name: "FirstMemberEpoch", From: "1", To: "2"}, {Name: "RejoinWithEpochZero", From: "false", To: "true"}}

// CompareReleases finds no difference where both releases answered the
// same as their profiles predict, explains a difference the profiles
// predict by the behaviours attributed to it, and leaves unexplained a
// difference attributed to no differing behaviour, one where a release did
// otherwise than its profile predicts (even when both releases answered
// alike), and one attributed only to a behaviour the two releases share.
func TestCompareReleases(t *testing.T) {
	attr := map[string][]string{
		"a.txt:3 #1": {"FirstMemberEpoch"},
		"a.txt:9 #4": {"AssignorChangeRecomputes"}, // not a behaviour that differs here
		"a.txt:5 #2": {"RejoinWithEpochZero", "FirstMemberEpoch", "RejoinWithEpochZero"},
	}
	from := out("4.1.2",
		agreeing("a.txt:1 #0", "skipped: reads state"),
		agreeing("a.txt:3 #1", "epoch=1"),
		agreeing("a.txt:5 #2", "FENCED_MEMBER_EPOCH"),
		agreeing("a.txt:7 #3", "ok"),
		agreeing("a.txt:9 #4", "x"),
		ReleaseOutcome{Key: "a.txt:11 #5", Kind: Answer, What: "describe", Value: "Stable", Model: "Empty", Agrees: false},
		agreeing("a.txt:13 #6", "parked"),
	)
	to := out("4.4.0",
		agreeing("a.txt:1 #0", "skipped: reads state"),
		agreeing("a.txt:3 #1", "epoch=2"),
		agreeing("a.txt:5 #2", "epoch=3"),
		agreeing("a.txt:7 #3", "ok"),
		agreeing("a.txt:9 #4", "y"),
		ReleaseOutcome{Key: "a.txt:11 #5", Kind: Answer, What: "describe", Value: "Stable", Model: "Stable", Agrees: true},
		agreeing("a.txt:15 #6", "parked"),
	)
	res := CompareReleases(from, to, twoBehaviours, attr)
	by := map[string]Difference{}
	for _, d := range res.Differences {
		by[d.Key] = d
	}
	if _, ok := by["a.txt:1 #0"]; ok {
		t.Errorf("a point answered alike is a difference: %+v", by["a.txt:1 #0"])
	}
	if _, ok := by["a.txt:7 #3"]; ok {
		t.Errorf("a point answered alike is a difference: %+v", by["a.txt:7 #3"])
	}
	if d := by["a.txt:3 #1"]; !d.Explained || !slices.Equal(d.Behaviours, []string{"FirstMemberEpoch"}) || d.From != "epoch=1" || d.To != "epoch=2" {
		t.Errorf("first epoch: %+v, want explained by FirstMemberEpoch", d)
	}
	if d := by["a.txt:5 #2"]; !d.Explained || !slices.Equal(d.Behaviours, []string{"RejoinWithEpochZero", "FirstMemberEpoch"}) {
		t.Errorf("rejoin: %+v, want explained by RejoinWithEpochZero and FirstMemberEpoch, each once", d)
	}
	if d := by["a.txt:9 #4"]; d.Explained || !strings.Contains(d.Why, "no single profile behaviour that differs") {
		t.Errorf("a difference attributed to a behaviour both releases share: %+v, want unexplained", d)
	}
	if d := by["a.txt:11 #5"]; d.Explained || !strings.Contains(d.Why, `Kafka 4.1.2 answered "Stable" where its profile predicts "Empty"`) {
		t.Errorf("a release that answered otherwise than its profile: %+v, want unexplained saying so", d)
	}
	// A request parked until a later step on one release: the point of
	// each release's completion is absent on the other, as predicted, and
	// with nothing attributed to it, unexplained.
	for _, k := range []string{"a.txt:13 #6", "a.txt:15 #6"} {
		if d, ok := by[k]; !ok || d.Explained {
			t.Errorf("%s (only one release has it): %+v, want an unexplained difference", k, d)
		}
	}
	if ex, un := res.Count(); ex != 2 || un != 4 || res.Compared != 6 {
		t.Errorf("counts: %d explained, %d unexplained, %d compared; want 2, 4, 6\n%s", ex, un, res.Compared, res)
	}
	s := res.Summary(false)
	for _, want := range []string{
		"Kafka 4.1.2 → 4.4.0: 6 points compared, 6 differences (2 explained, 4 unexplained)",
		"1 × FirstMemberEpoch (1 → 2)\n",
		"1 × RejoinWithEpochZero (false → true) + FirstMemberEpoch (1 → 2)\n",
		"UNEXPLAINED: Kafka 4.1.2 answered",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}

	// A release compared with itself: nothing.
	if self := CompareReleases(from, from, nil, nil); len(self.Differences) != 1 || self.Differences[0].Key != "a.txt:11 #5" {
		t.Errorf("4.1.2 with itself: %+v, want only the point where it disagrees with its profile", self.Differences)
	}
	to2 := to
	to2.Version = "4.4.0"
	if self := CompareReleases(to, to2, nil, attr); len(self.Differences) != 0 {
		t.Errorf("4.4.0 with itself: %+v, want none", self.Differences)
	}
}

// Behaviours lists exactly the profile fields that differ, and
// WithBehaviour flips one of them alone.
func TestBehaviours(t *testing.T) {
	a, b := version.V4_1_2.Profile(), version.V4_4_0.Profile()
	bs := Behaviours(a, b)
	names := map[string]Behaviour{}
	for _, x := range bs {
		names[x.Name] = x
	}
	if x, ok := names["InitialGroupEpoch"]; !ok || x.From != "0" || x.To != "1" {
		t.Errorf("InitialGroupEpoch: %+v", x)
	}
	for _, same := range []string{"Version", "OffsetCommitValueVersion", "GroupVersionLevel"} {
		if _, ok := names[same]; ok {
			t.Errorf("%s listed as differing between 4.1.2 and 4.4.0", same)
		}
	}
	if len(Behaviours(b, b)) != 0 {
		t.Errorf("4.4.0 differs from itself: %v", Behaviours(b, b))
	}
	p, err := WithBehaviour(a, b, "RejoinWithEpochZero")
	if err != nil {
		t.Fatal(err)
	}
	if d := Behaviours(a, p); len(d) != 1 || d[0].Name != "RejoinWithEpochZero" {
		t.Errorf("flipped profile differs by %v, want RejoinWithEpochZero alone", d)
	}
	if _, err := WithBehaviour(a, b, "NoSuchBehaviour"); err == nil {
		t.Error("WithBehaviour took an unknown field")
	}
}

// The model diff of 4.1.2 and 4.4.0 over the vectors explains every
// difference, and names the known changes of the issue: the first epochs,
// the epoch after a revocation is acknowledged, the rejoin of a fenced
// member with epoch 0, the commit fencing by assignment epochs. 4.4.0 with
// itself is empty.
func TestModelDiff(t *testing.T) {
	secs, err := Vectors()
	if err != nil {
		t.Fatal(err)
	}
	diff := func(a, b version.Profile) ReleaseDiff {
		t.Helper()
		oa, ob := modelOutcomes(t, a, secs), modelOutcomes(t, b, secs)
		attr, err := Attribute(a, b, secs)
		if err != nil {
			t.Fatal(err)
		}
		return CompareReleases(oa, ob, Behaviours(a, b), attr)
	}
	res := diff(version.V4_1_2.Profile(), version.V4_4_0.Profile())
	ex, un := res.Count()
	if un != 0 || ex == 0 {
		t.Errorf("4.1.2 → 4.4.0: %d explained, %d unexplained; want only explained ones\n%s", ex, un, res.Summary(false))
	}
	named := map[string]int{}
	for _, d := range res.Differences {
		for _, b := range d.Behaviours {
			named[b]++
		}
	}
	for _, want := range []string{"InitialGroupEpoch", "RevocationAckKeepsEpoch", "RejoinWithEpochZero", "OffsetCommitAssignmentEpochs", "OffsetsTopicIDs", "AssignmentEpochs"} {
		if named[want] == 0 {
			t.Errorf("no difference explained by %s; named: %v", want, named)
		}
	}
	if self := diff(version.V4_4_0.Profile(), version.V4_4_0.Profile()); len(self.Differences) != 0 || self.Compared == 0 {
		t.Errorf("4.4.0 with itself: %d differences of %d points", len(self.Differences), self.Compared)
	}
}

// A release that does what its profile does not say (here: 4.4.0 as the
// model runs it, beside a 4.4.0 profile that lacks KAFKA-19233's rejoin)
// shows as unexplained at the vector that exercises it, and nowhere else.
func TestProfileMissingABehaviourIsUnexplained(t *testing.T) {
	secs, err := Vectors()
	if err != nil {
		t.Fatal(err)
	}
	from, to := version.V4_1_2.Profile(), version.V4_4_0.Profile()
	oa, real := modelOutcomes(t, from, secs), modelOutcomes(t, to, secs)
	wrong := to
	wrong.RejoinWithEpochZero = false
	predicted := modelOutcomes(t, wrong, secs)
	if len(real.Items) != len(predicted.Items) {
		t.Fatalf("%d and %d points", len(real.Items), len(predicted.Items))
	}
	ob := real
	ob.Items = slices.Clone(real.Items)
	for i := range ob.Items {
		if ob.Items[i].Kind != Answer {
			continue
		}
		ob.Items[i].Model = predicted.Items[i].Value
		ob.Items[i].Agrees = ob.Items[i].Value == ob.Items[i].Model
	}
	attr, err := Attribute(from, wrong, secs)
	if err != nil {
		t.Fatal(err)
	}
	res := CompareReleases(oa, ob, Behaviours(from, wrong), attr)
	var un []Difference
	for _, d := range res.Differences {
		if !d.Explained {
			un = append(un, d)
		}
	}
	if len(un) == 0 {
		t.Fatalf("no unexplained difference:\n%s", res.Summary(false))
	}
	for _, d := range un {
		if !strings.HasPrefix(d.Key, "consumer/rejoin_epoch_zero_kafka_19233.txt:") || !strings.Contains(d.Why, "Kafka 4.4.0 answered") {
			t.Errorf("unexplained %s: %s (%s)", d.Key, d.What, d.Why)
		}
	}
}

// modelOutcomes is ModelOutcomes of p over secs; an error fails the test.
func modelOutcomes(t *testing.T, p version.Profile, secs []Section) ReleaseOutcomes {
	t.Helper()
	o, err := ModelOutcomes(p, secs)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestModelDiffShare: the share vectors are part of the diff. Between 4.1.2
// (share groups a preview: the reference refuses the share APIs) and 4.2.1
// every share answer differs, explained by ShareGroups; between 4.2.1 and
// 4.4.0 the share answers that differ are explained by the share
// behaviours (the assignment interval's pending check, the last leave's
// assignment epoch) and the initial group epoch.
func TestModelDiffShare(t *testing.T) {
	secs, err := Vectors()
	if err != nil {
		t.Fatal(err)
	}
	diff := func(a, b version.Profile) map[string]int {
		t.Helper()
		oa, ob := modelOutcomes(t, a, secs), modelOutcomes(t, b, secs)
		attr, err := Attribute(a, b, secs)
		if err != nil {
			t.Fatal(err)
		}
		res := CompareReleases(oa, ob, Behaviours(a, b), attr)
		named := map[string]int{}
		for _, d := range res.Differences {
			if !strings.HasPrefix(d.Key, "share/") {
				continue
			}
			if !d.Explained {
				t.Errorf("%s → %s: %s unexplained (%s)", a.Version, b.Version, d.Key, d.Why)
			}
			for _, b := range d.Behaviours {
				named[b]++
			}
		}
		return named
	}
	if n := diff(version.V4_1_2.Profile(), version.V4_2_1.Profile()); n["ShareGroups"] == 0 {
		t.Errorf("4.1.2 → 4.2.1: no share difference explained by ShareGroups: %v", n)
	}
	n := diff(version.V4_2_1.Profile(), version.V4_4_0.Profile())
	for _, want := range []string{"ShareAssignmentInterval", "LastLeaveResetsAssignmentEpoch", "InitialGroupEpoch"} {
		if n[want] == 0 {
			t.Errorf("4.2.1 → 4.4.0: no share difference explained by %s: %v", want, n)
		}
	}
}
