package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/run"
)

// killedRun is a real run killed with SIGKILL in its workload (seed 7,
// member-links, 1 Kafka 4.4.0 node): its history cut after event 599, in
// the middle of event 600's line, and no verdicts.json, report.html or
// observations.json. Members joined, consumed and committed before it.
const killedRun = "testdata/killed-member-links-seed-7"

// TestKilledRunIsCutShortNotAHold: check, report and findings triage of a
// run killed mid-workload judge its history up to its last whole event,
// say it was cut short and where, and never call it a hold: check exits 3
// (it exited 0), its JSON says holds false, the report's banner says cut
// short (it said no violation, green), the triage counts it cut short, not
// holding (it counted it holding).
func TestKilledRunIsCutShortNotAHold(t *testing.T) {
	dir := copyRun(t, killedRun)
	if _, err := os.Stat(filepath.Join(dir, run.VerdictsFile)); err == nil {
		t.Fatal("the fixture has a verdicts.json")
	}
	// On GitHub Actions, the run cut short goes to the job's summary page (it said nothing).
	summary := filepath.Join(t.TempDir(), "summary.md")
	t.Setenv("GITHUB_STEP_SUMMARY", summary)

	code, stdout, stderr := call(t, "check", dir)
	if code != exitFailed {
		t.Errorf("check of a killed run: exit %d, want %d (cut short, not a hold):\n%s%s", code, exitFailed, stdout, stderr)
	}
	for _, want := range []string{
		"history.jsonl ends in a truncated line 601",
		"judged up to event 599",
		"note: the run was killed, or ended by an error, in its workload phase",
		"ok    ConsumedOnlyOwned",
		"ok    CommitsFollowConsumed",
		"SKIP  NoLostRecords: the run was killed",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("check does not say %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{"was cut short, so it does not hold", "groupquake run --seed 7 --scenario member-links"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("check's last word does not say %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, run.VerdictsFile)); err == nil {
		t.Error("check without --write wrote verdicts.json")
	}
	if b, _ := os.ReadFile(summary); !strings.Contains(string(b), "was cut short, so it does not hold") {
		t.Errorf("the CI summary does not say the run was cut short: %q", b)
	}
	os.Remove(summary)

	jcode, out := jsonCall(t, "check", "--json", dir)
	doc := validateJSON(t, "run", out)
	if jcode != exitFailed || doc["holds"] != false || !strings.Contains(doc["stopped"].(string), "killed") || doc["judged"] != true {
		t.Errorf("check --json of a killed run: exit %d, holds %v, judged %v, stopped %v", jcode, doc["holds"], doc["judged"], doc["stopped"])
	}

	if code, _, stderr := call(t, "report", dir); code != exitOK {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	page, err := os.ReadFile(filepath.Join(dir, run.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if p := string(page); strings.Contains(p, "No checker found a violation") || strings.Contains(p, `class="status-holds"`) ||
		!strings.Contains(p, "Cut short: no checker found a violation up to where the run stopped, which is not a hold") ||
		!strings.Contains(p, "the run was killed while writing") {
		t.Errorf("report.html of a killed run does not say it was cut short, or says it holds")
	}

	code, stdout, stderr = call(t, "findings", "triage", dir)
	if code != exitOK {
		t.Fatalf("findings triage: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "cut short: the run was killed, or ended by an error, in its workload phase") {
		t.Errorf("findings triage does not say the run was cut short:\n%s", stdout)
	}
	jcode, out = jsonCall(t, "findings", "triage", "--json", dir)
	tri := validateJSON(t, "findings-triage", out)
	row := tri["scenarios"].([]any)[0].(map[string]any)
	r := tri["runs"].([]any)[0].(map[string]any)
	if jcode != exitOK || fmt.Sprint(row["hold"]) != "0" || fmt.Sprint(row["cut_short"]) != "1" || r["holds"] != false || r["stopped"] == nil {
		t.Errorf("findings triage --json of a killed run: exit %d, scenario %v, run holds %v stopped %v", jcode, row, r["holds"], r["stopped"])
	}
}
