package results

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
)

// scorecardRuns: r1 runs a broken classic member beside groupquake's consumer and fails, one
// violation citing both, one only the broken member, one no member; r2 and r3 hold with
// groupquake's and kgo's members, r3 on another Kafka under another scenario; r2's history sights a
// finding, without a violation, at its kgo-classic member.
func scorecardRuns() []check.ScoredRun {
	broken := []check.RunMember{{Name: "m1", Kind: "broken-classic-ignore-fence", Protocol: "classic"}, {Name: "m2", Kind: "consumer", Protocol: "consumer"}}
	mixed := []check.RunMember{{Name: "m1", Kind: "consumer", Protocol: "consumer"}, {Name: "m2", Kind: "kgo-classic", Protocol: "classic"}, {Name: "m3", Kind: "kgo-consumer", Protocol: "consumer"}}
	return []check.ScoredRun{
		{Dir: "runs/r1", Kafka: "4.4.0", Scenario: "member-links", Attribution: check.Attribution{Members: broken, Hold: 10, Violated: 3,
			Violations: []check.Charge{
				{Checker: check.NameNoDoubleOwnership, Message: "partition t-0 owned by m1 and m2 at once", Members: []string{"m1", "m2"}},
				{Checker: check.NameEventuallyConverges, Message: "never converged: t-0 has 2 owners", Members: []string{"m1"}},
				{Checker: check.NameNoLostRecords, Message: "record t-1 offset 3 was never consumed"},
			},
			Known:  []check.Charge{{Checker: check.NameEventuallyConverges, Finding: "kafka-offset-fetch-unstable"}},
			Pauses: []check.MemberPause{{Member: "m2", Duration: 1500 * time.Millisecond}, {Member: "m2", Partition: "t-0", Duration: 300 * time.Millisecond}}}},
		{Dir: "runs/r2", Kafka: "4.4.0", Scenario: "member-links", Attribution: check.Attribution{Members: mixed, Holds: true, Hold: 13,
			Sighted: []check.Charge{{Finding: check.FindingDeposedGroupIDNotFound, Message: "m2's heartbeat at generation 3 answered GROUP_ID_NOT_FOUND", Members: []string{"m2"}}},
			Pauses:  []check.MemberPause{{Member: "m2", Duration: 4 * time.Second}, {Member: "m1", Duration: 500 * time.Millisecond}}}},
		{Dir: "runs/r3", Kafka: "4.1.2", Scenario: "churn", Attribution: check.Attribution{Members: mixed, Holds: true, Hold: 12, Skipped: 1}},
	}
}

func renderScorecard(t *testing.T) (string, *node) {
	t.Helper()
	runs := scorecardRuns()
	var buf bytes.Buffer
	err := WriteScorecard(&buf, ScorecardPage{Title: "groupquake: client scorecard", Trend: "trend.html",
		ByClient: check.BuildScorecard(runs, check.ByClient), ByKind: check.BuildScorecard(runs, check.ByKind),
		Reports: map[string]string{"runs/r1": "r1/report.html", "runs/r2": "r2/report.html"}})
	if err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	return page, checkPage(t, page, "scorecard")
}

func cellsText(n *node) string {
	var cells []string
	for _, td := range n.all(byTagClass("td", "")) {
		cells = append(cells, strings.TrimSpace(td.allText()))
	}
	return strings.Join(cells, "|")
}

// TestScorecardPage: the matrix per client has one row per client and a column per Kafka version
// and scenario, each cell red when a violation was charged to its client, amber when its runs had
// violations charged elsewhere, green when they held, empty without runs; the table of cells says
// every count; the violations are listed under each cell with whom they concern, linked to the run's
// report; the same runs are summed per kind.
func TestScorecardPage(t *testing.T) {
	page, doc := renderScorecard(t)
	classes := map[string]string{}
	for _, td := range doc.all(byTagClass("td", "matrix")) {
		if td.attr["class"] == "" {
			continue
		}
		key := td.attr["data-row"] + "/" + td.attr["data-kafka"] + "/" + td.attr["data-scenario"]
		classes[key] = strings.TrimPrefix(td.attr["class"], "matrix ")
	}
	wantEach(t, "matrix cell", classes, map[string]string{
		"broken/4.4.0/member-links":     "charged",
		"broken/4.1.2/churn":            "empty",
		"groupquake/4.4.0/member-links": "charged", // the shared double ownership
		"groupquake/4.1.2/churn":        "holds",
		"kgo/4.4.0/member-links":        "holds",
		"kgo/4.1.2/churn":               "holds",
		// by kind
		"consumer/4.4.0/member-links":    "charged",
		"kgo-classic/4.4.0/member-links": "holds",
	})

	rows := map[string]string{}
	for _, tbl := range doc.all(byTagClass("table", "cells")) {
		for _, tr := range tbl.all(byTagClass("tr", "cell")) {
			rows[tbl.attr["data-by"]+":"+tr.attr["data-row"]+"/"+tr.attr["data-kafka"]+"/"+tr.attr["data-scenario"]] = cellsText(tr)
		}
	}
	wantEach(t, "cell", rows, map[string]string{
		// row|kinds|Kafka|scenario|runs|hold|violated|verdicts|charged|per checker|the run's|member pauses|partition pauses|findings|sighted|runs
		"client:broken/4.4.0/member-links":     "broken|broken-classic-ignore-fence|4.4.0|member-links|1|0|1|10/3/0|2 in 1 runs (1 shared)|EventuallyConverges ×1, NoDoubleOwnership ×1|1|0|0|kafka-offset-fetch-unstable ×1||r1",
		"client:groupquake/4.4.0/member-links": "groupquake|consumer|4.4.0|member-links|2|1|1|23/3/0|1 in 1 runs (1 shared)|NoDoubleOwnership ×1|1|2, p50 500ms, max 1.5s|1, p50 300ms, max 300ms|kafka-offset-fetch-unstable ×1||r1r2",
		"client:kgo/4.4.0/member-links":        "kgo|kgo-classic, kgo-consumer|4.4.0|member-links|1|1|0|13/0/0|0||0|1, p50 4s, max 4s|0||kafka-deposed-coordinator-group-id-not-found ×1|r2",
		"client:kgo/4.1.2/churn":               "kgo|kgo-classic, kgo-consumer|4.1.2|churn|1|1|0|12/0/1|0||0|0|0|||r3",
		"kind:kgo-classic/4.4.0/member-links":  "kgo-classic|kgo|4.4.0|member-links|1|1|0|13/0/0|0||0|1, p50 4s, max 4s|0||kafka-deposed-coordinator-group-id-not-found ×1|r2",
	})

	// Each violation listed under its cell: the checker, whom it concerns, its run (linked).
	var lis []string
	for _, h := range doc.all(byTagClass("ul", "violations")) {
		for _, li := range h.all(byTagClass("li", "violation")) {
			concern := li.all(byTagClass("span", "concern"))[0].text
			run := ""
			if as := li.all(byTagClass("a", "")); len(as) > 0 {
				run = as[0].attr["href"]
			}
			lis = append(lis, li.attr["data-checker"]+" "+concern+" "+run+":"+strings.TrimSpace(li.text))
		}
	}
	joined := strings.Join(lis, "\n")
	wantLacksNone(t, "violations list", joined,
		"NoDoubleOwnership (charged to broken, shared with groupquake) r1/report.html:in : partition t-0 owned by m1 and m2 at once",
		"NoDoubleOwnership (charged to groupquake, shared with broken) r1/report.html:in : partition t-0 owned by m1 and m2 at once",
		"EventuallyConverges (charged to broken) r1/report.html:in : never converged",
		"NoLostRecords (no member's: the run's) r1/report.html:in : record t-1 offset 3 was never consumed",
		"NoDoubleOwnership (charged to broken-classic-ignore-fence, shared with consumer) r1/report.html",
	)
	// r2's sighting, under kgo's and kgo-classic's cells only.
	var seen []string
	for _, li := range doc.all(byTagClass("li", "sighting")) {
		concern := li.all(byTagClass("span", "concern"))[0].text
		seen = append(seen, li.attr["data-finding"]+" "+li.attr["data-clients"]+" "+concern)
	}
	if want := "kafka-deposed-coordinator-group-id-not-found kgo (charged to kgo)\nkafka-deposed-coordinator-group-id-not-found kgo-classic (charged to kgo-classic)"; strings.Join(seen, "\n") != want {
		t.Errorf("sightings listed:\n%s\nwant\n%s", strings.Join(seen, "\n"), want)
	}
	if !strings.Contains(page, `kgo on Kafka 4.4.0, member-links: 0 charged to it, 0 the run&#39;s, 1 sighting(s) of a finding without a violation</h3>`) {
		t.Errorf("the sighting's cell has no heading")
	}
	if strings.Contains(joined, "EventuallyConverges (charged to groupquake") || strings.Contains(joined, "EventuallyConverges (charged to consumer") {
		t.Errorf("the broken member's convergence is charged to groupquake's member:\n%s", joined)
	}
	if !strings.Contains(page, `href="r1/report.html"`) || !strings.Contains(page, `href="trend.html"`) {
		t.Errorf("the page does not link the run's report and the trend page")
	}
	if !strings.Contains(page, "3 runs: 2 hold, 1 violated, 0 unreadable; 3 clients, Kafka 4.4.0, 4.1.2, scenarios churn, member-links") {
		t.Errorf("the summary is wrong")
	}
}

// TestScorecardText: one line per cell, then each cell's violations with whom they concern.
func TestScorecardText(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteScorecardText(&buf, check.BuildScorecard(scorecardRuns(), check.ByClient)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if first, _, _ := strings.Cut(out, "\n"); first != "scorecard by client: 3 runs: 2 hold, 1 violated, 0 unreadable; 3 clients, Kafka 4.4.0, 4.1.2, scenarios churn, member-links" {
		t.Errorf("first line %q", first)
	}
	var byKind bytes.Buffer
	if err := WriteScorecardText(&byKind, check.BuildScorecard(scorecardRuns(), check.ByKind)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(byKind.String(), "scorecard by kind: 3 runs: 2 hold, 1 violated, 0 unreadable; 4 kinds,") {
		t.Errorf("by kind, the first line is %q", strings.SplitN(byKind.String(), "\n", 2)[0])
	}
	lines := strings.Split(out, "\n")
	var table []string
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		table = append(table, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"client kafka scenario runs hold violated verdicts hold/violated/skipped charged to it the run's member pauses partition pauses it ended findings runs that sighted a finding without a violation",
		"broken 4.4.0 member-links 1 0 1 10/3/0 2 in 1 runs (1 shared) 1 0 0 kafka-offset-fetch-unstable ×1 -",
		"groupquake 4.4.0 member-links 2 1 1 23/3/0 1 in 1 runs (1 shared) 1 2, p50 500ms, max 1.5s 1, p50 300ms, max 300ms kafka-offset-fetch-unstable ×1 -",
		"groupquake 4.1.2 churn 1 1 0 12/0/1 0 0 0 0 - -",
		"kgo 4.4.0 member-links 1 1 0 13/0/0 0 0 1, p50 4s, max 4s 0 - kafka-deposed-coordinator-group-id-not-found ×1",
		"kgo 4.1.2 churn 1 1 0 12/0/1 0 0 0 0 - -",
	}
	if strings.Join(table, "\n") != strings.Join(want, "\n") {
		t.Errorf("table:\n%s\nwant:\n%s", strings.Join(table, "\n"), strings.Join(want, "\n"))
	}
	wantLacksNone(t, "text", out,
		"broken on Kafka 4.4.0, member-links: 2 charged to it, 1 the run's",
		"  NoDoubleOwnership (charged to broken, shared with groupquake; runs/r1): partition t-0 owned by m1 and m2 at once",
		"  NoLostRecords (no member's: the run's; runs/r1): record t-1 offset 3 was never consumed",
		"groupquake on Kafka 4.4.0, member-links: 1 charged to it, 1 the run's\n",
		"kgo on Kafka 4.4.0, member-links: 0 charged to it, 0 the run's, 1 sighting(s) of a finding without a violation\n"+
			"  sighted kafka-deposed-coordinator-group-id-not-found, no violation labelled with it (charged to kgo; runs/r2): m2's heartbeat at generation 3 answered GROUP_ID_NOT_FOUND\n",
	)
	if strings.Count(out, "sighted kafka-deposed") != 1 {
		t.Errorf("the sighting is listed under another client's cell too:\n%s", out)
	}
}

// TestTrendLinksScorecard: the trend page links the scorecard of its runs when given one.
func TestTrendLinksScorecard(t *testing.T) {
	for _, link := range []string{"scorecard.html", ""} {
		var buf bytes.Buffer
		if err := WriteTrendPage(&buf, TrendPage{Title: "t", Scorecard: link}); err != nil {
			t.Fatal(err)
		}
		doc := parsePage(t, buf.String())
		as := doc.all(byTagClass("a", "scorecard"))
		if (link != "") != (len(as) == 1) || (len(as) == 1 && as[0].attr["href"] != link) {
			t.Errorf("scorecard link %q: the page has %d scorecard links", link, len(as))
		}
	}
}

// wantEach checks that got holds every value of want under its key; what
// names a key in the message.
func wantEach(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for key, w := range want {
		if g := got[key]; g != w {
			t.Errorf("%s %s:\n got %q\nwant %q", what, key, g, w)
		}
	}
}

// wantLacksNone checks that s (the what) says each of wants.
func wantLacksNone(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("the %s lacks %q:\n%s", what, w, s)
		}
	}
}

// TestScorecardTextCutShort: the scorecard's first line counts runs cut short apart, as not a
// hold.
func TestScorecardTextCutShort(t *testing.T) {
	runs := scorecardRuns()
	for i := range runs {
		if runs[i].Holds {
			runs[i].Holds, runs[i].CutShort = false, true
			break
		}
	}
	var buf bytes.Buffer
	if err := WriteScorecardText(&buf, check.BuildScorecard(runs, check.ByClient)); err != nil {
		t.Fatal(err)
	}
	want := "3 runs: 1 hold, 1 violated, 1 cut short (stopped before their end, no violation up to there: not a hold)"
	if first, _, _ := strings.Cut(buf.String(), "\n"); !strings.Contains(first, want) {
		t.Errorf("first line %q, want it to say %q", first, want)
	}
}
