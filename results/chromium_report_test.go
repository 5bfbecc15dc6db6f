package results

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/check/checktest"
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

	// What a reader sees at once, as the browser built it: the banner names the checker and its
	// first event, the marks sit on t-2's row, b and c own t-2 in two sub-lanes, the coordinator
	// lane shows node 1 then node 2.
	var item *node
	for _, li := range doc.all(byTagClass("li", "bitem")) {
		if li.attr["data-checker"] == "NoDoubleOwnership" {
			item = li
		}
	}
	if item == nil || attrInt(t, item, "data-first-event") != ix["b-assigned"] {
		t.Errorf("the banner does not name NoDoubleOwnership with its first event %d: %v", ix["b-assigned"], item)
	}
	onT2 := 0
	for _, m := range marks {
		if m.attr["data-checker"] == "NoDoubleOwnership" && m.attr["data-tp"] == "t-2" {
			onT2++
		}
	}
	if onT2 < 2 {
		t.Errorf("%d NoDoubleOwnership marks on t-2's row, want one per cited event", onT2)
	}
	for _, g := range doc.all(byTagClass("g", "row")) {
		if g.attr["data-tp"] == "t-2" && len(distinctY(t, g.all(byTagClass("rect", "own")))) != 2 {
			t.Errorf("the two owners of t-2 are not drawn in two sub-lanes")
		}
	}
	var nodes []string
	for _, rc := range doc.all(byTagClass("rect", "coord")) {
		if !rc.class("stale") {
			nodes = append(nodes, rc.attr["data-node"])
		}
	}
	if strings.Join(nodes, " ") != "1 2" {
		t.Errorf("the coordinator lane shows nodes %v, want 1 then 2", nodes)
	}
	checkZoom(t, bin, page, buf.String(), bannerAt(t, item))

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

// distinctY is the set of y the rectangles are drawn at.
func distinctY(t *testing.T, rs []*node) map[float64]bool {
	ys := map[float64]bool{}
	for _, r := range rs {
		ys[attrFloat(t, r, "y")] = true
	}
	return ys
}

// zoomProbe runs in the page after its own scripts: it sends the timeline a mouse-wheel event over
// the middle of the plot, then clicks the banner's first "show on the timeline", and writes what
// the timeline showed (data-view) and the width of the first ownership bar before and after into
// attributes of <html>, for the dumped DOM to tell.
const zoomProbe = `<script>(function(){
var h=document.documentElement,svg=document.querySelector('svg.timeline');
var r=svg.getBoundingClientRect(),L=+svg.getAttribute('data-left'),W=+svg.getAttribute('width');
var bar=svg.querySelector('g.row rect.own');
h.setAttribute('data-probe-view-before',svg.getAttribute('data-view'));
h.setAttribute('data-probe-bar-before',bar.getAttribute('width'));
svg.dispatchEvent(new WheelEvent('wheel',{deltaY:-400,clientX:r.left+(L+(W-L)/2)*r.width/W,clientY:r.top+r.height/2,bubbles:true,cancelable:true}));
h.setAttribute('data-probe-view-wheel',svg.getAttribute('data-view'));
h.setAttribute('data-probe-bar-wheel',bar.getAttribute('width'));
document.querySelector('button.show').click();
h.setAttribute('data-probe-view-show',svg.getAttribute('data-view'));
h.setAttribute('data-probe-ticks',String(svg.querySelectorAll('g.ticklabels text').length));
})();</script>`

// checkZoom loads the page with zoomProbe in Chromium and checks that a wheel event zooms in (the
// visible range narrows inside the run, the bars widen) and that the banner's first "show on the
// timeline" shows a narrower stretch holding second at (when that violation's evidence was
// complete).
func checkZoom(t *testing.T, bin, page, html string, at float64) {
	t.Helper()
	probed := strings.Replace(html, "</body>", zoomProbe+"</body>", 1)
	p := strings.TrimSuffix(page, ".html") + "-zoom.html"
	if err := os.WriteFile(p, []byte(probed), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := parsePage(t, headless(t, bin, p, "--dump-dom"))
	h := doc.all(byTagClass("html", ""))[0]
	if h.attr["data-script-errors"] != "0" {
		errs := doc.all(func(n *node) bool { return n.attr["id"] == "script-errors" })
		t.Fatalf("script errors while zooming: %s", errs[0].allText())
	}
	rng := func(name string) (float64, float64) {
		var a, b float64
		if _, err := fmt.Sscanf(h.attr[name], "%g %g", &a, &b); err != nil {
			t.Fatalf("%s=%q: %v (did the probe run?)", name, h.attr[name], err)
		}
		return a, b
	}
	a0, b0 := rng("data-probe-view-before")
	a1, b1 := rng("data-probe-view-wheel")
	if !(b1-a1 < (b0-a0)*0.9 && a1 >= a0 && b1 <= b0) {
		t.Errorf("a wheel event did not zoom in: the timeline showed %g–%g s, then %g–%g s", a0, b0, a1, b1)
	}
	w0, _ := strconv.ParseFloat(h.attr["data-probe-bar-before"], 64)
	w1, _ := strconv.ParseFloat(h.attr["data-probe-bar-wheel"], 64)
	if !(w1 > w0*1.1) {
		t.Errorf("zooming in left the first bar %g wide (was %g)", w1, w0)
	}
	a2, b2 := rng("data-probe-view-show")
	if !(a2 <= at && at <= b2 && b2-a2 < (b0-a0)/2) {
		t.Errorf("\"show on the timeline\" showed %g–%g s, want a short stretch holding %g s", a2, b2, at)
	}
	if h.attr["data-probe-ticks"] == "0" {
		t.Errorf("no time ticks after zooming")
	}
}

// TestFailingRunReportInChromium renders a real failing run (testdata/member-links-seed-6: the
// embedded cluster, a classic member that ignores its fences, `groupquake run --seed 6 --scenario
// member-links --embedded --kinds broken-classic-ignore-fence,classic,consumer --partitions 4
// --rate 20 --duration 10s`) as `groupquake report` does, streaming its history, and checks in
// Chromium what a reader must see at once: a banner naming NoDoubleOwnership, marks on the rows
// of the partitions it concerns, a partition owned twice drawn in two sub-lanes, the coordinator
// lane (node 1, named by the members and the observer), and a timeline that zooms. The report and
// a screenshot are kept under $GROUPQUAKE_RUNS_DIR for CI.
func TestFailingRunReportInChromium(t *testing.T) {
	bin := needChromium(t)
	const run = "testdata/member-links-seed-6"
	plan := checktest.ReadPlan(t, run)
	hp := plan.History()
	l, err := history.Load(filepath.Join(run, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rep := check.Judge(l.Events, nil, hp)
	var violated []string
	for _, v := range rep.Verdicts {
		if !v.Holds {
			violated = append(violated, v.Name)
		}
	}
	if !slices.Contains(violated, "NoDoubleOwnership") {
		t.Fatalf("the broken member's run no longer violates NoDoubleOwnership (violated: %v): the test's premise is gone", violated)
	}
	var members []MemberInfo
	for _, m := range plan.Members {
		members = append(members, MemberInfo{Name: m.Name, Kind: m.Kind, Protocol: m.Protocol})
	}
	r := Report{Title: "groupquake run: seed 6, scenario member-links (broken-classic-ignore-fence)",
		Run:      RunInfo{Seed: 6, Scenario: "member-links", Kafka: "embedded 4.4.0", Protocol: ProtocolMix(members), Members: members},
		Verdicts: rep.Verdicts, Cost: rep.RebalanceCost, Notes: rep.Notes, Partitions: hp.Partitions()}
	f, err := os.Open(filepath.Join(run, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if err := WriteReportFrom(&buf, r, f); err != nil {
		t.Fatal(err)
	}
	dir := artifactDir(t)
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := parsePage(t, headless(t, bin, page, "--dump-dom"))
	h := doc.all(byTagClass("html", ""))[0]
	if h.attr["data-ready"] != "1" || h.attr["data-script-errors"] != "0" {
		t.Fatalf("the page did not load cleanly: %v", h.attr)
	}
	var named []string
	for _, li := range doc.all(byTagClass("li", "bitem")) {
		named = append(named, li.attr["data-checker"])
	}
	if !slices.Equal(named, violated) {
		t.Errorf("the banner names %v, want the violated checkers %v", named, violated)
	}
	// Each partition NoDoubleOwnership names has its marks, and a second sub-lane.
	rows := map[string]*node{}
	for _, g := range doc.all(byTagClass("g", "row")) {
		rows[g.attr["data-tp"]] = g
	}
	marked := map[string]bool{}
	for _, a := range doc.all(func(n *node) bool {
		return n.name == "a" && n.class("vmark") && n.attr["data-checker"] == "NoDoubleOwnership"
	}) {
		if a.attr["data-tp"] != "" {
			marked[a.attr["data-tp"]] = true
		}
	}
	ndo := rep.Verdicts[slices.IndexFunc(rep.Verdicts, func(v check.Verdict) bool { return v.Name == "NoDoubleOwnership" })]
	for _, vi := range ndo.Violations {
		tp := regexp.MustCompile(`partition (\S+) owned by`).FindStringSubmatch(vi.Message)
		if tp == nil {
			t.Fatalf("NoDoubleOwnership's message %q names no partition", vi.Message)
		}
		if !marked[tp[1]] {
			t.Errorf("no NoDoubleOwnership mark on the row of %s, which %q names", tp[1], vi.Message)
		}
		if g := rows[tp[1]]; g == nil || g.attr["data-sublanes"] == "1" || len(distinctY(t, g.all(byTagClass("rect", "own")))) < 2 {
			t.Errorf("%s, owned twice at once, is not drawn in two sub-lanes", tp[1])
		}
	}
	coord := doc.all(byTagClass("rect", "coord"))
	if len(coord) == 0 || coord[0].attr["data-node"] != "1" {
		t.Errorf("the coordinator lane does not show node 1 (the embedded cluster's only node): %v", coord)
	}
	first := doc.all(byTagClass("li", "bitem"))[0]
	checkZoom(t, bin, page, buf.String(), bannerAt(t, first))

	shot := filepath.Join(dir, "report.png")
	headless(t, bin, page, "--screenshot="+shot, "--window-size=1300,1300")
	if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
		t.Errorf("no screenshot: %v", err)
	}
	t.Logf("report and screenshot kept in %s", dir)
}

// bannerAt is the time, in seconds, the banner item says its violation's evidence was complete.
func bannerAt(t *testing.T, li *node) float64 {
	t.Helper()
	m := regexp.MustCompile(`at (\S+),`).FindStringSubmatch(li.all(byTagClass("span", "where"))[0].allText())
	if m == nil {
		t.Fatalf("the banner item says no time: %q", li.allText())
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatalf("the banner item's time %q: %v", m[1], err)
	}
	return d.Seconds()
}
