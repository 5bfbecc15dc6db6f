package results

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
)

func costOf(protocol string, partitionPauses ...time.Duration) *check.Cost {
	pc := &check.ProtocolCost{}
	for _, d := range partitionPauses {
		pc.Stops = append(pc.Stops, check.Stop{Partition: "t-0", Duration: d})
	}
	pc.Stops = append(pc.Stops, check.Stop{Member: "m", Duration: time.Minute}) // a member pause
	return &check.Cost{Protocols: map[string]*check.ProtocolCost{protocol: pc}}
}

// TestTrendGroups: runs are grouped per Kafka version and per protocol, each group counting its
// verdicts and summarising every partition pause of its runs; the runs are listed in the order
// they started, each linked to its report.
func TestTrendGroups(t *testing.T) {
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	runs := []RunSummary{
		{Run: RunInfo{Dir: "r3", Kafka: "4.4.0", Protocol: "consumer", Scenario: "churn", Started: day.Add(3 * time.Hour)}, Report: "r3/report.html", Holds: true, Cost: costOf("consumer", 300*ms)},
		{Run: RunInfo{Dir: "r1", Kafka: "4.4.0", Protocol: "classic", Scenario: "churn", Started: day.Add(1 * time.Hour)}, Report: "r1/report.html", Holds: true, Cost: costOf("classic", 100*ms, 200*ms)},
		{Run: RunInfo{Dir: "r2", Kafka: "4.1.2", Protocol: "classic", Scenario: "churn", Started: day.Add(2 * time.Hour)}, Report: "r2/report.html", Violated: []string{"NoDoubleOwnership"}, Cost: costOf("classic", 900*ms)},
		{Run: RunInfo{Dir: "r4"}, Err: "missing plan.json"},
	}
	var buf bytes.Buffer
	if err := WriteTrend(&buf, "nightly", runs); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	doc := parsePage(t, page)
	groups := map[string]string{}
	for _, tr := range doc.all(byTagClass("tr", "group")) {
		var cells []string
		for _, td := range tr.all(byTagClass("td", "")) {
			cells = append(cells, strings.TrimSpace(td.allText()))
		}
		groups[tr.attr["data-key"]] = strings.Join(cells, "|")
	}
	for key, want := range map[string]string{
		// key|runs|hold|cut short|violated|checkers|partition pauses|p50|p99|max|member pauses|max|...
		"4.4.0":    "4.4.0|2|2|0|0||3|200ms|300ms|300ms|2|1m0s|",
		"4.1.2":    "4.1.2|1|0|0|1|NoDoubleOwnership ×1|1|900ms|900ms|900ms|1|1m0s|",
		"classic":  "classic|2|1|0|1|NoDoubleOwnership ×1|3|200ms|900ms|900ms|2|1m0s|",
		"consumer": "consumer|1|1|0|0||1|300ms|300ms|300ms|1|1m0s|",
		"unknown":  "unknown|1|0|0|0||0|0s|0s|0s|0|0s|",
	} {
		if got := groups[key]; !strings.HasPrefix(got, want) {
			t.Errorf("group %s:\n got %s\nwant %s…", key, got, want)
		}
	}
	if !strings.Contains(page, "4 runs: 2 hold, 1 violated, 0 cut short, 1 unreadable") {
		t.Errorf("the trend's summary is wrong")
	}
	var order []string
	for _, a := range doc.all(byTagClass("a", "report")) {
		order = append(order, a.attr["href"])
	}
	if got := strings.Join(order, " "); got != "r1/report.html r2/report.html r3/report.html" {
		t.Errorf("runs listed as %q, want in the order they started, each linked to its report", got)
	}
	if n := len(doc.all(byTagClass("circle", "violated"))); n != 1 {
		t.Errorf("%d red dots in the chart, want 1 (the violated run)", n)
	}
	// The chart's axes say what they measure, in which unit.
	titles := map[string]string{}
	for _, txt := range doc.all(byTagClass("text", "axistitle")) {
		titles[txt.attr["id"]] = txt.text
	}
	if !strings.Contains(titles["y-axis-title"], "longest partition pause (s)") || !strings.Contains(titles["x-axis-title"], "run number") {
		t.Errorf("axis titles %v, want the y axis in seconds and the x axis in run numbers", titles)
	}
	var xs, ys []string
	for _, txt := range doc.all(byTagClass("text", "xlabel")) {
		xs = append(xs, txt.text)
	}
	for _, txt := range doc.all(byTagClass("text", "ylabel")) {
		ys = append(ys, txt.text)
	}
	if strings.Join(xs, " ") != "1 2 3 4" || strings.Join(ys, " ") != "0 0.2 0.4 0.6 0.8 1" {
		t.Errorf("axis ticks x %v, y %v; want the run numbers and 0 to 1 s (the longest pause is 0.9 s)", xs, ys)
	}
}

// TestTrendCutShort: a run that did not reach its end (killed, interrupted) and found no violation
// up to there is cut short on the trend page, never counted as holding (it was: its verdicts.json
// holds), in the summary, its groups, its row and its dot; one that found a violation is violated.
func TestTrendCutShort(t *testing.T) {
	killed := RunSummary{Run: RunInfo{Dir: "k", Kafka: "4.4.0", Protocol: "classic", Scenario: "churn"}}
	killed.Summarize(check.Report{Holds: true, Stopped: "was killed, or ended by an error, in its workload phase (begun at 1s; last event 9, at 2s)",
		Verdicts: []check.Verdict{{Name: "NoDoubleOwnership", Holds: true}}})
	red := RunSummary{Run: RunInfo{Dir: "v", Kafka: "4.4.0", Protocol: "classic", Scenario: "churn"}}
	red.Summarize(check.Report{Stopped: "was interrupted by SIGINT in its workload phase at 3s (event 20)",
		Verdicts: []check.Verdict{{Name: "NoDoubleOwnership", Violations: []check.Violation{{Message: "x"}}}}})
	if killed.Holds || !killed.CutShort() || red.CutShort() {
		t.Fatalf("killed: holds %v, cut short %v; violated: cut short %v", killed.Holds, killed.CutShort(), red.CutShort())
	}
	var buf bytes.Buffer
	if err := WriteTrend(&buf, "t", []RunSummary{killed, red}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	doc := parsePage(t, page)
	if !strings.Contains(page, "2 runs: 0 hold, 1 violated, 1 cut short, 0 unreadable") {
		t.Errorf("the trend's summary does not count the killed run cut short")
	}
	if !strings.Contains(page, "cut short, no violation up to there: the run was killed") {
		t.Errorf("the killed run's row does not say it was cut short")
	}
	if n := len(doc.all(byTagClass("circle", "cut-short"))); n != 1 {
		t.Errorf("%d cut-short dots, want 1", n)
	}
	if n := len(doc.all(byTagClass("circle", "holds"))); n != 0 {
		t.Errorf("%d green dots, want none", n)
	}
	for _, tr := range doc.all(byTagClass("tr", "group")) {
		var cells []string
		for _, td := range tr.all(byTagClass("td", "")) {
			cells = append(cells, strings.TrimSpace(td.allText()))
		}
		// key|runs|hold|cut short|violated
		if got := strings.Join(cells[:5], "|"); got != tr.attr["data-key"]+"|2|0|1|1" {
			t.Errorf("group %s: %s, want 2 runs, 0 hold, 1 cut short, 1 violated", tr.attr["data-key"], got)
		}
	}
}
