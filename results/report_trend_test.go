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
		// key|runs|hold|violated|checkers|partition pauses|p50|p99|max|member pauses|max|...
		"4.4.0":    "4.4.0|2|2|0||3|200ms|300ms|300ms|2|1m0s|",
		"4.1.2":    "4.1.2|1|0|1|NoDoubleOwnership ×1|1|900ms|900ms|900ms|1|1m0s|",
		"classic":  "classic|2|1|1|NoDoubleOwnership ×1|3|200ms|900ms|900ms|2|1m0s|",
		"consumer": "consumer|1|1|0||1|300ms|300ms|300ms|1|1m0s|",
		"unknown":  "unknown|1|0|0||0|0s|0s|0s|0|0s|",
	} {
		if got := groups[key]; !strings.HasPrefix(got, want) {
			t.Errorf("group %s:\n got %s\nwant %s…", key, got, want)
		}
	}
	if !strings.Contains(page, "4 runs: 2 hold, 1 violated, 1 unreadable") {
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
