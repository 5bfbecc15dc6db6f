package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/differential"
	"github.com/groupquake/groupquake/harness/run"
)

func TestFindingsBadInput(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"findings", "list"}, `unknown subcommand "list"`},
		{[]string{"findings", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"findings", "rerun", "no-such-finding"}, `no finding "no-such-finding": the registry has kafka-static-rejoin-own-instance`},
		{[]string{"findings", "rerun", "--kafka", "3.9.0"}, "--kafka: unknown Kafka version"},
		{[]string{"findings", "rerun", "--kafka", "4.4.0", "--image-source", "nearby"}, `--image-source "nearby"`},
		{[]string{"findings", "rerun", check.FindingOffsetFetchUnstable}, "cannot be rerun as asked: no reproducer"},
		{[]string{"findings", "rerun", check.FindingKgoRevokeAfterLost, "--embedded"}, "needs a container cluster"},
		{[]string{"findings", "triage"}, "needs at least one run directory"},
		{[]string{"findings", "triage", filepath.Join(empty, "missing")}, "no such file or directory"},
		{[]string{"findings", "triage", empty}, "no run directory (one with a plan.json)"},
	} {
		code, _, errOut := call(t, tc.args...)
		if code != exitBadInput || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestFindingsList(t *testing.T) {
	t.Parallel()
	code, out, errOut := call(t, "findings")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, x := range check.Findings() {
		if !strings.Contains(out, x.ID+"  "+string(x.Kind)) {
			t.Errorf("the list lacks %s with its kind:\n%s", x.ID, out)
		}
	}
	code, out, _ = call(t, "findings", "--json")
	validateJSON(t, "findings", []byte(out))
	var got struct {
		Findings []check.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || len(got.Findings) != len(check.Findings()) {
		t.Fatalf("--json: exit %d, %v, %d findings", code, err, len(got.Findings))
	}
}

// TestFindingsRerunEmbedded reruns the vector reproducers against the
// reference coordinator as two served releases: every served release has
// the three bugs, so all three reproduce.
func TestFindingsRerunEmbedded(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"4.4.0", "4.1.2"} {
		code, out, errOut := call(t, "findings", "rerun", check.FindingStaticRejoinOwnInstance, check.FindingOnlineUpgradeUnknownError, check.FindingClassicRejoinReadmitted, "--embedded", "--kafka", v, "--json")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", v, code, errOut)
		}
		validateJSON(t, "findings-rerun", []byte(out))
		var doc struct {
			Results []rerunResult `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 3 {
			t.Fatalf("%s: %v: %s", v, err, out)
		}
		for _, r := range doc.Results {
			if r.Outcome != "reproduced" || r.Kafka != v || r.Mode != "embedded" {
				t.Errorf("%s: %+v", v, r)
			}
		}
	}
}

// TestVectorReproducersMatchTheModel: each vector reproducer's step exists
// and the reference coordinator answers it with the finding's error as
// every served release; for the static self-rejoin, the release with the
// fix (version.Profile.StaticRejoinOwnInstance) does not.
func TestVectorReproducersMatchTheModel(t *testing.T) {
	t.Parallel()
	model := func(p version.Profile, x check.Finding) []differential.Result {
		t.Helper()
		secs, err := vectorSections([]check.Finding{x})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := differential.Model(p, secs, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rs {
			rs[i].Target = rs[i].Reference
		}
		return rs
	}
	answer := func(p version.Profile, x check.Finding) string {
		t.Helper()
		rs := model(p, x)
		i := -1
		for j, r := range rs {
			if r.Pos == x.Reproducer.Vector.Step && (i < 0 || r.Ticket > rs[i].Ticket) {
				i = j
			}
		}
		if i < 0 || rs[i].Outcome == differential.Skipped {
			t.Fatalf("%s: step %s not answered", x.ID, x.Reproducer.Vector.Step)
		}
		return rs[i].Reference
	}
	for _, x := range check.Findings() {
		if x.Reproducer.Vector == nil {
			continue
		}
		for _, v := range version.Served() {
			// The rerun's own judgement, its Given steps included.
			if ran, outcome, evidence := vectorOutcome(x.Reproducer.Vector, model(v.Profile(), x)); !ran || outcome != "reproduced" {
				t.Errorf("%s as %s: %s: %s", x.ID, v, outcome, evidence)
			}
		}
	}
	x, _ := check.FindingByID(check.FindingStaticRejoinOwnInstance)
	fixed := version.Default.Profile()
	fixed.StaticRejoinOwnInstance = true
	if a := answer(fixed, x); strings.Contains(a, "UNRELEASED_INSTANCE_ID") {
		t.Errorf("with the fix the retried join is still refused: %s", a)
	}
}

// TestClassicRejoinReadmittedReproducer: the reproducer's step is a
// readmission, not any classic join that is answered: as every served
// release, the reference first removes the member id the step's JoinGroup
// carries (its member metadata tombstoned, a call carrying it answered
// UNKNOWN_MEMBER_ID), then the step writes it again as a new member
// (previous member epoch 0) and answers it a generation; the answer a
// classic group gives there does not carry Want.
func TestClassicRejoinReadmittedReproducer(t *testing.T) {
	t.Parallel()
	x, _ := check.FindingByID(check.FindingClassicRejoinReadmitted)
	vr := x.Reproducer.Vector
	if vr == nil {
		t.Fatalf("%s has no vector reproducer", x.ID)
	}
	secs, err := vectorSections([]check.Finding{x})
	if err != nil || len(secs) != 1 {
		t.Fatalf("sections: %d, %v", len(secs), err)
	}
	member := ""
	for _, st := range secs[0].Steps {
		if st.Pos != vr.Step {
			continue
		}
		for _, a := range st.Args {
			if a.Key == "member" && len(a.Vals) == 1 {
				member = a.Vals[0]
			}
		}
		if st.Cmd != "join" || member == "" {
			t.Fatalf("%s is %s %v: not a JoinGroup carrying a member id", vr.Step, st.Cmd, st.Args)
		}
	}
	if refused := "join member=" + member + " UNKNOWN_MEMBER_ID"; strings.Contains(refused, vr.Want) {
		t.Errorf("a classic group's answer %q carries Want %q", refused, vr.Want)
	}
	key := `{"GroupID":"g","MemberID":"` + member + `"}`
	readmitted := func(records string) bool {
		for _, l := range strings.Split(records, "\n") {
			if strings.HasPrefix(l, "ConsumerGroupCurrentMemberAssignment "+key+" ") && strings.Contains(l, `"PreviousMemberEpoch":0,`) {
				return true
			}
		}
		return false
	}
	for _, v := range version.Served() {
		rs, err := differential.Model(v.Profile(), secs, 0)
		if err != nil {
			t.Fatal(err)
		}
		tomb, unknown := false, false
		i := slices.IndexFunc(rs, func(r differential.Result) bool { return r.Pos == vr.Step })
		if i < 0 {
			t.Fatalf("%s: %s not answered", v, vr.Step)
		}
		for _, r := range rs[:i] {
			tomb = tomb || strings.Contains(r.Records, "ConsumerGroupMemberMetadata "+key+" tombstone")
			unknown = unknown || (tomb && strings.Contains(r.Command, "member="+member+" ") && strings.Contains(r.Reference, "UNKNOWN_MEMBER_ID"))
		}
		if !tomb || !unknown {
			t.Errorf("%s: before %s the reference did not remove %s (tombstone %v, UNKNOWN_MEMBER_ID %v)", v, vr.Step, member, tomb, unknown)
		}
		if r := rs[i]; !strings.Contains(r.Reference, vr.Want) || !readmitted(r.Records) {
			t.Errorf("%s: %s not a readmission: %s\n%s", v, vr.Step, r.Reference, r.Records)
		}
	}
}

// TestFindingsTriage triages the real seed-268778 run (harness/check's
// regression data): one broker-faults run that fails on one violation,
// known as the static self-rejoin.
func TestFindingsTriage(t *testing.T) {
	t.Parallel()
	src := "../../harness/check/testdata/kafka-4.4.0-static-rejoin-seed-268778"
	dir := filepath.Join(t.TempDir(), "runs", "s268778")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"plan.json", "history.jsonl", "observations.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, out := triageJSON(t, filepath.Dir(dir))
	// Its one finding is labelled on its violation: nothing sighted without one.
	if len(got.Sighted) != 0 || len(got.Runs) != 1 || len(got.Runs[0].Sighted) != 0 || got.Scenarios[0].Sighted != nil || !strings.Contains(out, `"sighted": []`) {
		t.Fatalf("sighted %+v, runs %+v: want none, \"sighted\": [] in\n%s", got.Sighted, got.Runs, out)
	}
	want := triageRow{Scenario: "broker-faults", Runs: 1, Violations: 1, Known: map[string]int{check.FindingStaticRejoinOwnInstance: 1}}
	if len(got.Scenarios) != 1 || got.Scenarios[0].Scenario != want.Scenario || got.Scenarios[0].Runs != 1 || got.Scenarios[0].Hold != 0 ||
		got.Scenarios[0].Violations != 1 || got.Scenarios[0].Unexplained != 0 || got.Scenarios[0].Known[check.FindingStaticRejoinOwnInstance] != 1 ||
		got.Scenarios[0].Lost != 1 || got.Scenarios[0].Share <= 0 {
		t.Fatalf("scenarios %+v, want %+v", got.Scenarios, want)
	}
	code, out, _ := call(t, "findings", "triage", filepath.Dir(dir))
	if code != exitOK || !strings.Contains(out, "EventuallyConverges: known "+check.FindingStaticRejoinOwnInstance+": ") ||
		strings.Contains(out, "known bug "+check.FindingStaticRejoinOwnInstance) {
		// The label is said once, not as "known X: known bug X: ...".
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// check --json of the same run: a violation labelled with its finding, the
	// verdict's matches and the run's sightings follow the run schema.
	code, out, errOut := call(t, "check", "--json", dir)
	if code != exitViolation {
		t.Fatalf("check: exit %d, want %d: %s", code, exitViolation, errOut)
	}
	m := validateJSON(t, "run", []byte(out))
	if !strings.Contains(out, `"finding": "`+check.FindingStaticRejoinOwnInstance+`"`) || m["findings"] == nil {
		t.Errorf("check --json does not name the finding:\n%s", out)
	}
	// The report's banner names the finding beside the violated checker.
	if code, _, errOut := call(t, "check", "--write", dir); code != exitViolation {
		t.Fatalf("check --write: exit %d: %s", code, errOut)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `<span class="finding">`+check.FindingStaticRejoinOwnInstance+`</span>`) {
		t.Errorf("report.html's banner does not name %s", check.FindingStaticRejoinOwnInstance)
	}
}

// TestFindingsTriageSighted triages the real seed-2058727196645645882 run (a
// member frozen across a coordinator move): it holds, and its history sights
// kafka-deposed-coordinator-group-id-not-found with no violation to label:
// the table, the list per finding and the run's lines say so.
func TestFindingsTriageSighted(t *testing.T) {
	t.Parallel()
	dir := copyRun(t, "../../harness/check/testdata/kafka-4.4.0-freeze-seed-2058727196645645882")
	root := filepath.Dir(dir)
	got, _ := triageJSON(t, root)
	id := check.FindingDeposedGroupIDNotFound
	if len(got.Sighted) != 1 || got.Sighted[0].Finding != id || len(got.Sighted[0].Runs) != 1 || got.Sighted[0].Runs[0] != dir {
		t.Fatalf("sighted %+v, want %s in %s only", got.Sighted, id, dir)
	}
	if len(got.Scenarios) != 1 || got.Scenarios[0].Violations != 0 || len(got.Scenarios[0].Sighted) != 1 || got.Scenarios[0].Sighted[id] != 1 {
		t.Fatalf("scenarios %+v, want no violation and 1 run sighting %s", got.Scenarios, id)
	}
	if len(got.Runs) != 1 || len(got.Runs[0].Sighted) == 0 || got.Runs[0].Sighted[0].Finding != id || got.Runs[0].Sighted[0].Member == "" ||
		!strings.Contains(got.Runs[0].Sighted[0].What, "GROUP_ID_NOT_FOUND") {
		t.Fatalf("runs %+v, want the run's sighting of %s", got.Runs, id)
	}
	code, out, _ := call(t, "findings", "triage", root)
	if code != exitOK || !strings.Contains(out, "1 "+id) || !strings.Contains(out, "sighted without a matching violation:\n  "+id+": 1 run(s): "+dir+"\n") ||
		!strings.Contains(out, "  sighted "+id+" (") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestFindingsTriageReadmitted triages the real seed-2918632487381593263 run
// (harness/check's regression data): its 7 violations are known as the
// classic member re-admitted under its old member id, none unexplained.
func TestFindingsTriageReadmitted(t *testing.T) {
	t.Parallel()
	dir := copyRun(t, "../../harness/check/testdata/kafka-4.4.0-readmit-seed-2918632487381593263")
	id := check.FindingClassicRejoinReadmitted
	got, _ := triageJSON(t, filepath.Dir(dir))
	if len(got.Scenarios) != 1 || got.Scenarios[0].Hold != 0 || got.Scenarios[0].Violations != 7 || got.Scenarios[0].Unexplained != 0 ||
		got.Scenarios[0].Known[id] != 7 || len(got.Scenarios[0].Known) != 1 {
		t.Fatalf("scenarios %+v, want 7 violations known as %s", got.Scenarios, id)
	}
	code, out, _ := call(t, "findings", "triage", filepath.Dir(dir))
	if code != exitOK || strings.Count(out, "known "+id+": ") != 7 || !strings.Contains(out, "not UNKNOWN_MEMBER_ID") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestTriageSightedOnlyWithoutLabel: a run's sightings are listed as sighted
// without a violation only for the findings none of its violations is
// labelled with; the table counts runs, not sightings.
func TestTriageSightedOnlyWithoutLabel(t *testing.T) {
	t.Parallel()
	var j run.Judged
	j.Plan.Options.Scenario = "churn"
	j.Report = check.Report{
		Verdicts: []check.Verdict{{Name: check.NameNoDoubleOwnership, Violations: []check.Violation{{Message: "overlap", Finding: check.FindingReconvertDropsRevocation}}}},
		Findings: []check.Sighting{
			{Finding: check.FindingReconvertDropsRevocation, Member: "m4", What: "dropped 6"},
			{Finding: check.FindingDeposedGroupIDNotFound, Member: "m3", What: "GROUP_ID_NOT_FOUND\nmore"},
			{Finding: check.FindingDeposedGroupIDNotFound, Member: "m1", What: "again"},
		},
	}
	r := triage("a", j)
	if len(r.Sighted) != 2 || r.Sighted[0] != (triageSighting{Finding: check.FindingDeposedGroupIDNotFound, Member: "m3", What: "GROUP_ID_NOT_FOUND"}) ||
		r.Sighted[1].Member != "m1" {
		t.Fatalf("sighted %+v, want the two sightings of %s only", r.Sighted, check.FindingDeposedGroupIDNotFound)
	}
	j.Report.Verdicts = nil // the same sightings without the violation: both findings sighted only
	b := triage("b", j)
	if len(b.Sighted) != 3 {
		t.Fatalf("sighted %+v, want all three", b.Sighted)
	}
	runs := []triageRun{r, b, {Dir: "c", Scenario: "churn", Holds: true}}
	rows := triageTable(runs)
	if len(rows) != 1 || rows[0].Sighted[check.FindingDeposedGroupIDNotFound] != 2 || rows[0].Sighted[check.FindingReconvertDropsRevocation] != 1 || len(rows[0].Sighted) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	got := triageSightedRuns(runs)
	want := []triageSighted{{check.FindingDeposedGroupIDNotFound, []string{"a", "b"}}, {check.FindingReconvertDropsRevocation, []string{"b"}}}
	if len(got) != len(want) || !slices.EqualFunc(got, want, func(x, y triageSighted) bool { return x.Finding == y.Finding && slices.Equal(x.Runs, y.Runs) }) {
		t.Fatalf("per finding %+v, want %+v", got, want)
	}
	if got := triageSightedRuns(runs[2:]); got == nil || len(got) != 0 {
		t.Fatalf("no sighting: %#v, want []", got)
	}
}

func TestTriageTableSharesAndUnexplained(t *testing.T) {
	t.Parallel()
	rows := triageTable([]triageRun{
		{Scenario: "churn", Holds: true, Lost: []triageLoss{{Member: "m2", Finding: check.FindingOnlineUpgradeUnknownError, Share: 0.2}}, Share: 0.2},
		{Scenario: "churn", Holds: false, Violations: []triageViolation{{Checker: "NoLostRecords"}, {Checker: "NoDoubleOwnership", Finding: check.FindingKgoRevokeAfterLost}}},
		{Scenario: "baseline", Holds: true},
	})
	if len(rows) != 2 || rows[0].Scenario != "baseline" || rows[1].Scenario != "churn" {
		t.Fatalf("rows %+v", rows)
	}
	c := rows[1]
	if c.Runs != 2 || c.Hold != 1 || c.Violations != 2 || c.Unexplained != 1 || c.Known[check.FindingKgoRevokeAfterLost] != 1 || c.Lost != 1 || c.Share != 0.1 {
		t.Fatalf("churn %+v", c)
	}
}

// triageOut is what `findings triage --json` prints, as the tests read it.
type triageOut struct {
	Scenarios []triageRow     `json:"scenarios"`
	Sighted   []triageSighted `json:"sighted"`
	Runs      []triageRun     `json:"runs"`
}

// triageJSON runs `findings triage --json` over root, checks its output
// against the schema and decodes it; out is the output as printed.
func triageJSON(t *testing.T, root string) (got triageOut, out string) {
	t.Helper()
	code, out, errOut := call(t, "findings", "triage", "--json", root)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	validateJSON(t, "findings-triage", []byte(out))
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	return got, out
}

// TestVectorOutcomeNeedsItsGivenState: a vector reproducer's step counts
// only when the steps it is given answered as the finding needs; a broker
// that never reached that state (here: the member was never removed, so
// its rejoin is an ordinary one) does not reproduce it, whatever the step
// answers; a step that was not sent is "not run".
func TestVectorOutcomeNeedsItsGivenState(t *testing.T) {
	vr := &check.VectorReproducer{Step: "v.txt:30", Want: "join member=1 gen=", Given: []check.VectorStep{
		{Step: "v.txt:10", Want: "UNKNOWN_MEMBER_ID"},
		{Step: "v.txt:20", Want: "UNKNOWN_MEMBER_ID"},
	}}
	res := func(pos, target string) differential.Result {
		return differential.Result{Pos: pos, Ticket: 1, Outcome: differential.Same, Target: target}
	}
	removed := []differential.Result{res("v.txt:10", "#7 heartbeat UNKNOWN_MEMBER_ID"), res("v.txt:20", "#8 sync UNKNOWN_MEMBER_ID")}
	for _, c := range []struct {
		name    string
		rs      []differential.Result
		ran     bool
		outcome string
		says    string
	}{
		{"removed, then readmitted", append(slices.Clone(removed), res("v.txt:30", "#9 join member=1 gen=5 type=consumer")), true, "reproduced", "v.txt:10 answered: #7 heartbeat UNKNOWN_MEMBER_ID; v.txt:20 answered: #8 sync UNKNOWN_MEMBER_ID; v.txt:30 answered: #9 join"},
		{"removed, then refused", append(slices.Clone(removed), res("v.txt:30", "#9 join UNKNOWN_MEMBER_ID")), true, "not reproduced", "v.txt:30 answered: #9 join UNKNOWN_MEMBER_ID"},
		{"never removed", []differential.Result{res("v.txt:10", "#7 heartbeat gen=3"), res("v.txt:20", "#8 sync UNKNOWN_MEMBER_ID"), res("v.txt:30", "#9 join member=1 gen=3")}, true, "not reproduced", "v.txt:10 answered: #7 heartbeat gen=3, not UNKNOWN_MEMBER_ID: the state the finding needs was not reached"},
		{"a given step not sent", []differential.Result{res("v.txt:20", "#8 sync UNKNOWN_MEMBER_ID"), res("v.txt:30", "#9 join member=1 gen=5")}, false, "not run", "the step v.txt:10 was not sent"},
		{"the step not sent", removed, false, "not run", "the step v.txt:30 was not sent"},
	} {
		ran, outcome, evidence := vectorOutcome(vr, c.rs)
		if ran != c.ran || outcome != c.outcome || !strings.Contains(evidence, c.says) {
			t.Errorf("%s: ran %v, %q, %q; want ran %v, %q, evidence with %q", c.name, ran, outcome, evidence, c.ran, c.outcome, c.says)
		}
	}
}
