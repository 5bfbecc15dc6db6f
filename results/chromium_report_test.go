package results

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// artifactDir is where a test keeps what CI should keep: under $GROUPQUAKE_RUNS_DIR (the run
// directories CI uploads) when that is set, else a temporary directory.
func artifactDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv("GROUPQUAKE_RUNS_DIR")
	if root == "" {
		return t.TempDir()
	}
	d := filepath.Join(root, t.Name())
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestReportInChromium renders a failing run's report in headless Chromium and reads the page as
// the browser built it: the page's scripts ran without an error, every violation link leads to an
// event row, there is a timeline row per partition, the fault's band and the violation marks are
// there. A screenshot of the page (report.png, beside report.html) is kept under
// $GROUPQUAKE_RUNS_DIR for CI to keep as an artifact.
func TestReportInChromium(t *testing.T) {
	bin := needChromium(t)
	r, ix := failingStory(t)
	dir := artifactDir(t)
	page := filepath.Join(dir, "report.html")
	var buf bytes.Buffer
	if err := WriteReport(&buf, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	dom := headless(t, bin, page, "--dump-dom")
	doc := parsePage(t, dom)
	html := doc.all(byTagClass("html", ""))
	if len(html) != 1 {
		t.Fatalf("the dumped DOM has %d <html> elements:\n%s", len(html), tail([]byte(dom)))
	}
	if html[0].attr["data-ready"] != "1" {
		t.Errorf("the page's script did not run to its end (data-ready=%q)", html[0].attr["data-ready"])
	}
	if n := html[0].attr["data-script-errors"]; n != "0" {
		errs := doc.all(func(n *node) bool { return n.attr["id"] == "script-errors" })
		t.Errorf("%s script errors in the page: %s", n, errs[0].allText())
	}
	links, _ := strconv.Atoi(html[0].attr["data-links-checked"])
	if links == 0 {
		t.Errorf("the page's script checked no violation link (data-links-checked=%q)", html[0].attr["data-links-checked"])
	}
	if got := len(doc.all(byTagClass("g", "row"))); got != 4 {
		t.Errorf("%d timeline rows in the browser's DOM, want 4 (one per partition)", got)
	}
	if got := len(doc.all(byTagClass("rect", "faultband"))); got != 1 {
		t.Errorf("%d fault bands in the browser's DOM, want 1", got)
	}
	ids := map[string]bool{}
	for _, n := range doc.all(func(n *node) bool { return n.attr["id"] != "" }) {
		ids[n.attr["id"]] = true
	}
	marks := doc.all(func(n *node) bool { return n.name == "a" && n.class("vmark") })
	if len(marks) == 0 {
		t.Errorf("no violation marks on the timeline")
	}
	for _, m := range marks {
		if !ids[strings.TrimPrefix(m.attr["href"], "#")] {
			t.Errorf("timeline mark %s leads to no event row", m.attr["href"])
		}
	}
	if !ids["e"+strconv.FormatInt(ix["c-assigned-t2"], 10)] {
		t.Errorf("the event NoDoubleOwnership cites (#%d) has no row", ix["c-assigned-t2"])
	}

	// The screenshot CI keeps; it must show the bars (member a's colour is on it).
	shot := filepath.Join(dir, "report.png")
	os.Remove(shot)
	headless(t, bin, page, "--screenshot="+shot, "--window-size=1300,1100")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	var want [3]uint32
	for i := range want {
		v, _ := strconv.ParseUint(palette[0][1+2*i:3+2*i], 16, 8)
		want[i] = uint32(v)
	}
	found := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, want[0]) && near(g>>8, want[1]) && near(bl>>8, want[2]) {
				found++
			}
		}
	}
	if found < 100 {
		t.Errorf("the screenshot %s shows %d pixels of member a's colour %s: the timeline did not render", shot, found, palette[0])
	}
	t.Logf("report and screenshot kept in %s", dir)
}

func near(a, b uint32) bool { return a+3 >= b && b+3 >= a }

// TestChromiumSeesScriptErrors proves the page's error recorder bites: a script that throws shows up
// in the DOM Chromium dumps.
func TestChromiumSeesScriptErrors(t *testing.T) {
	bin := needChromium(t)
	r, _ := failingStory(t)
	var buf bytes.Buffer
	if err := WriteReport(&buf, r); err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(buf.String(), "</body>", "<script>noSuchFunction();</script></body>", 1)
	page := filepath.Join(t.TempDir(), "broken.html")
	if err := os.WriteFile(page, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := parsePage(t, headless(t, bin, page, "--dump-dom"))
	html := doc.all(byTagClass("html", ""))[0]
	if html.attr["data-script-errors"] != "1" {
		t.Errorf("a throwing script left data-script-errors=%q, want 1", html.attr["data-script-errors"])
	}
	errs := doc.all(func(n *node) bool { return n.attr["id"] == "script-errors" })
	if len(errs) != 1 || !strings.Contains(errs[0].allText(), "noSuchFunction") {
		t.Errorf("the error is not written into #script-errors: %v", errs)
	}
}

// TestLongRunReportInChromium: the page of a long run, streamed from its history.jsonl as
// `groupquake report` does (200,000 events), opens in Chromium
// without script errors, with a row per partition, its fault bands, and a row for the event a
// violation cites near the end of the run.
func TestLongRunReportInChromium(t *testing.T) {
	bin := needChromium(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	events := genRun(t, path, 200_000)
	cited := events[len(events)-100].Index
	faults := 0
	for _, e := range events {
		if e.F == history.FFaultStart && e.Type == history.OK {
			faults++
		}
	}
	plan := history.Plan{Group: "g", Protocol: history.ProtocolConsumer, Topics: []history.TopicPlan{{Name: "t", Partitions: 12}}}
	events = nil
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	r := Report{Title: "long run", Partitions: plan.Partitions(),
		Verdicts: []check.Verdict{{Name: "Late", Violations: []check.Violation{{Message: "near the end", EventIndexes: []int64{cited}}}}}}
	if err := WriteReportFrom(&buf, r, f); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := parsePage(t, headless(t, bin, page, "--dump-dom"))
	html := doc.all(byTagClass("html", ""))
	if len(html) != 1 || html[0].attr["data-ready"] != "1" || html[0].attr["data-script-errors"] != "0" {
		t.Fatalf("the page of a long run did not load cleanly (%d <html>, attributes %v)", len(html), html[0].attr)
	}
	if got := len(doc.all(byTagClass("g", "row"))); got != 12 {
		t.Errorf("%d timeline rows, want 12", got)
	}
	if got := len(doc.all(byTagClass("rect", "faultband"))); got != faults || faults == 0 {
		t.Errorf("%d fault bands, want %d", got, faults)
	}
	if len(doc.all(func(n *node) bool { return n.attr["id"] == "e"+strconv.FormatInt(cited, 10) })) != 1 {
		t.Errorf("the cited event %d has no row", cited)
	}
}
