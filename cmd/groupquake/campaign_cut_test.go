package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// TestCampaignCutShortIsNoHold: in the campaign's summary a run cut short
// (interrupted, or stopped by its bound) with no violation up to there
// says so, never "hold: N of M", and says where it stopped; the campaign
// does not hold with such a run (exit 3), even one that came back without
// an error, while a campaign of runs that reached their end holds.
func TestCampaignCutShortIsNoHold(t *testing.T) {
	p, err := run.NewPlan(5, run.Options{Embedded: true, Kinds: []string{"consumer"}, Members: 1, Duration: 2 * time.Second}, kinds.Default().Kinds())
	if err != nil {
		t.Fatal(err)
	}
	verdicts := []check.Verdict{{Name: "A", Holds: true}, {Name: "B", Holds: true}}
	judged := func(stopped string) *run.Judged {
		return &run.Judged{Plan: p, Report: check.Report{Holds: true, Verdicts: verdicts, Stopped: stopped}}
	}
	const where = "stopped by its bound (--bound) in its workload phase at 1.5s"
	outcome := func(name string, j *run.Judged, err error) campaignOutcome {
		return campaignOutcome{Run: campaignRun{Name: name, Plan: p}, Dir: t.TempDir(), Judged: j, Err: err}
	}
	whole := outcome("1-whole", judged(""), nil)
	bound := outcome("2-bound", judged(where), errors.New("the run was "+where))
	quiet := outcome("3-quiet", judged(where), nil)

	var w bytes.Buffer
	writeCampaignSummary(&w, campaignJSON{Seed: 5, Cluster: "embedded"}, []campaignOutcome{whole, bound, quiet})
	rows := map[string]string{}
	for _, l := range strings.Split(w.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = l
		}
	}
	if r := rows["1-whole"]; !strings.Contains(r, "hold: 2 of 2") {
		t.Errorf("the run that reached its end: %q, want hold: 2 of 2", r)
	}
	for _, name := range []string{"2-bound", "3-quiet"} {
		if r := rows[name]; strings.Contains(r, "hold:") || !strings.Contains(r, "CUT SHORT") {
			t.Errorf("the run cut short: %q, want CUT SHORT and no hold", r)
		}
	}
	if n := strings.Count(w.String(), "cut short: the run "+where); n != 2 {
		t.Errorf("the summary says %d times where a run stopped, want 2:\n%s", n, w.String())
	}

	if err := campaignStatus([]campaignOutcome{whole}, 1); err != nil {
		t.Errorf("a campaign whose run reached its end: %v, want it to hold", err)
	}
	for _, oc := range []campaignOutcome{bound, quiet} {
		var ex exitError
		if err := campaignStatus([]campaignOutcome{whole, oc}, 2); !errors.As(err, &ex) || ex.code != exitFailed {
			t.Errorf("a campaign with run %s cut short: %v, want exit %d", oc.Run.Name, err, exitFailed)
		}
	}
}
