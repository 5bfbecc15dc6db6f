package results

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// node is an element of a parsed page.
type node struct {
	name     string
	attr     map[string]string
	children []*node
	text     string
}

func (n *node) class(c string) bool { return slices.Contains(strings.Fields(n.attr["class"]), c) }

// all returns every element below n (n included) that match accepts, in document order.
func (n *node) all(match func(*node) bool) []*node {
	var out []*node
	var walk func(*node)
	walk = func(m *node) {
		if match(m) {
			out = append(out, m)
		}
		for _, c := range m.children {
			walk(c)
		}
	}
	walk(n)
	return out
}

func (n *node) allText() string {
	var b strings.Builder
	var walk func(*node)
	walk = func(m *node) {
		b.WriteString(m.text)
		for _, c := range m.children {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func byTagClass(tag, class string) func(*node) bool {
	return func(n *node) bool { return n.name == tag && (class == "" || n.class(class)) }
}

// parsePage parses the report as HTML (encoding/xml's HTML mode: void elements close themselves)
// into a tree; a page that does not nest properly fails the test.
func parsePage(t *testing.T, page string) *node {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	root := &node{name: "#root"}
	stack := []*node{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the report does not parse as HTML: %v", err)
		}
		top := stack[len(stack)-1]
		switch x := tok.(type) {
		case xml.StartElement:
			n := &node{name: x.Name.Local, attr: map[string]string{}}
			for _, a := range x.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			top.children = append(top.children, n)
			stack = append(stack, n)
		case xml.EndElement:
			if top.name != x.Name.Local {
				t.Fatalf("the report closes <%s> while <%s> is open", x.Name.Local, top.name)
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			top.text += string(x)
		}
	}
	if len(stack) != 1 {
		t.Fatalf("the report leaves <%s> open", stack[len(stack)-1].name)
	}
	return root
}

func render(t *testing.T, r Report) (string, *node) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteReport(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	return page, checkPage(t, page, "report")
}

// checkPage checks that the template escaper rejected no value and that
// the page loads nothing from anywhere (offline; the SVG namespace is a
// name, not a fetch), and parses it.
func checkPage(t *testing.T, page, what string) *node {
	t.Helper()
	if strings.Contains(page, "ZgotmplZ") {
		t.Errorf("the template escaper rejected a value (ZgotmplZ in the output)")
	}
	if m := regexp.MustCompile(`(src|href)="(https?:)?//`).FindString(page); m != "" {
		t.Errorf("the %s loads something from the network: %q", what, m)
	}
	return parsePage(t, page)
}

func attrInt(t *testing.T, n *node, name string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(n.attr[name], 10, 64)
	if err != nil {
		t.Fatalf("<%s class=%q> %s=%q: %v", n.name, n.attr["class"], name, n.attr[name], err)
	}
	return v
}

func attrFloat(t *testing.T, n *node, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.attr[name], 64)
	if err != nil {
		t.Fatalf("<%s class=%q> %s=%q: %v", n.name, n.attr["class"], name, n.attr[name], err)
	}
	return v
}

// TestReportStructure reads the report of a failing run as a browser's DOM would hold it: one
// timeline row per planned partition, the fault's bar and band, ownerships that end where the
// checkers end them, distinct member colours, the setup squeezed, and every violation linked
// (from its verdict and from the timeline) to a row of the events table.
func TestReportStructure(t *testing.T) {
	r, ix := failingStory(t)
	page, doc := render(t, r)

	if !strings.Contains(page, "NoDoubleOwnership") || len(doc.all(byTagClass("body", "status-violated"))) != 1 {
		t.Fatalf("the failing run's page is not marked violated")
	}

	// Rows: one per planned partition, in order.
	rows := doc.all(byTagClass("g", "row"))
	var tps []string
	for _, g := range rows {
		tps = append(tps, g.attr["data-tp"])
	}
	if got := strings.Join(tps, " "); got != "t-0 t-1 t-2 t-3" {
		t.Errorf("timeline rows %q, want one per partition: t-0 t-1 t-2 t-3", got)
	}

	// Ownership bars, as the checkers see them: a's ends at its fence, not at the later "lost".
	type bar struct {
		tp, member string
		start, end int64
		lost       bool
	}
	var bars []bar
	fill := map[string]string{}
	for _, g := range rows {
		for _, rc := range g.all(byTagClass("rect", "own")) {
			m := rc.attr["data-member"]
			bars = append(bars, bar{g.attr["data-tp"], m, attrInt(t, rc, "data-start-event"), attrInt(t, rc, "data-end-event"), rc.class("lost")})
			fill[m] = rc.attr["style"]
		}
	}
	want := []bar{
		{"t-0", "a", ix["a-assigned"], ix["a-fenced"], true},
		{"t-0", "c", ix["c-assigned"], ix["c-left"], false},
		{"t-1", "a", ix["a-assigned"], ix["a-fenced"], true},
		{"t-1", "c", ix["c-assigned"], ix["c-left"], false},
		{"t-2", "b", ix["b-assigned"], ix["c-left"] - 1, false},
		{"t-2", "c", ix["c-assigned-t2"], ix["c-left"], false},
		{"t-3", "b", ix["b-assigned"], ix["c-left"] - 1, false},
	}
	if fmt.Sprint(bars) != fmt.Sprint(want) {
		t.Errorf("ownership bars\n got %v\nwant %v", bars, want)
	}
	// Distinct colours from the palette, in the plan's member order.
	for i, m := range []string{"a", "b", "c"} {
		if w := "fill:" + palette[i]; fill[m] != w {
			t.Errorf("bars of %s have style %q, want %q", m, fill[m], w)
		}
	}

	// The fault: a bar in the fault lane and a band over the rows, both from start to stop.
	faults := doc.all(byTagClass("rect", "fault"))
	if len(faults) != 1 || attrInt(t, faults[0], "data-event") != ix["fault-start"] || attrInt(t, faults[0], "data-stop-event") != ix["fault-stop"] {
		t.Fatalf("fault bars %v, want one from event %d to %d", faults, ix["fault-start"], ix["fault-stop"])
	}
	if !strings.Contains(faults[0].allText(), "fault pause broker-1") {
		t.Errorf("fault bar title %q does not name the fault", faults[0].allText())
	}
	if n := len(doc.all(byTagClass("rect", "faultband"))); n != 1 {
		t.Errorf("%d fault bands, want 1", n)
	}

	// Every violation link, in the verdicts and on the timeline, leads to an event row.
	rowsByID := map[string]*node{}
	for _, tr := range doc.all(byTagClass("tr", "")) {
		if id := tr.attr["id"]; id != "" {
			rowsByID[id] = tr
		}
	}
	links := doc.all(func(n *node) bool { return n.name == "a" && strings.HasPrefix(n.attr["href"], "#e") })
	if len(links) == 0 {
		t.Fatal("no violation links")
	}
	for _, a := range links {
		if rowsByID[a.attr["href"][1:]] == nil {
			t.Errorf("link %s leads to no event row", a.attr["href"])
		}
	}
	var vrow *node
	for _, tr := range doc.all(byTagClass("tr", "verdict")) {
		if tr.attr["id"] == "v-NoDoubleOwnership" {
			vrow = tr
		}
	}
	if vrow == nil || !vrow.class("violated") {
		t.Fatalf("NoDoubleOwnership's verdict row is missing or not violated")
	}
	cites := map[string]bool{}
	for _, a := range vrow.all(byTagClass("a", "ev")) {
		cites[a.attr["href"]] = true
	}
	for _, k := range []string{"b-assigned", "c-assigned-t2"} {
		h := fmt.Sprintf("#e%d", ix[k])
		if !cites[h] {
			t.Errorf("NoDoubleOwnership's violation does not link %s (%s); links %v", h, k, cites)
		}
		if tr := rowsByID[h[1:]]; tr == nil || !tr.class("cited") || !strings.Contains(tr.allText(), "NoDoubleOwnership") {
			t.Errorf("event row %s is not marked as cited by NoDoubleOwnership", h)
		}
	}
	marks := doc.all(func(n *node) bool {
		return n.name == "a" && n.class("vmark") && n.attr["data-checker"] == "NoDoubleOwnership"
	})
	if len(marks) < 2 {
		t.Errorf("%d timeline marks for NoDoubleOwnership, want one per cited event", len(marks))
	}

	// The axis: 40s of setup is squeezed, the rest is to scale.
	sq := doc.all(byTagClass("rect", "squeezed"))
	if len(sq) == 0 || attrFloat(t, sq[0], "width") != squeezed || !strings.Contains(sq[0].allText(), "setup 40s") {
		t.Fatalf("setup is not drawn squeezed: %+v", sq)
	}
	var warm *node
	for _, l := range doc.all(byTagClass("line", "phase")) {
		if strings.Contains(l.allText(), "phase warmup") {
			warm = l
		}
	}
	if warm == nil || attrFloat(t, warm, "x1") != labelWidth+squeezed {
		t.Errorf("the warm-up does not start right after the squeezed setup: %+v", warm)
	}
	// Without squeezing, 40s of a 58s run would take 69%% of the width.
	workload := 0.0
	for _, l := range doc.all(byTagClass("line", "phase")) {
		if strings.Contains(l.allText(), "phase heal") {
			workload = attrFloat(t, l, "x1") - attrFloat(t, warm, "x1")
		}
	}
	if workload < (chartWidth-labelWidth)/2 {
		t.Errorf("warm-up to heal (12s of 58s) takes %.0f px, want most of the %.0f px", workload, chartWidth-labelWidth)
	}

	if len(doc.all(byTagClass("table", "pauses"))) != 1 {
		t.Errorf("no rebalance pauses table")
	}
	if doc.all(func(n *node) bool { return n.name == "pre" && n.attr["id"] == "script-errors" }) == nil {
		t.Errorf("no #script-errors block for the page's error recorder")
	}
}

// TestPaletteCycles: members beyond the palette reuse its colours with a dashed outline, so no two
// members look alike.
func TestPaletteCycles(t *testing.T) {
	s := newStory(t)
	var members []MemberInfo
	for i := range len(palette) + 2 {
		m := fmt.Sprintf("m%02d", i)
		members = append(members, MemberInfo{Name: m, Protocol: history.ProtocolConsumer})
		s.at(time.Duration(i+1)*time.Second).own(history.FAssigned, m, int32(i+1), int32(i))
	}
	_, doc := render(t, Report{Title: "many", Run: RunInfo{Members: members}, Events: s.events()})
	seen := map[string]string{}
	for _, rc := range doc.all(byTagClass("rect", "own")) {
		look := rc.attr["style"]
		if rc.class("again") {
			look += " dashed"
		}
		if other, ok := seen[look]; ok && other != rc.attr["data-member"] {
			t.Errorf("%s and %s look alike (%s)", other, rc.attr["data-member"], look)
		}
		seen[look] = rc.attr["data-member"]
	}
	if len(seen) != len(members) {
		t.Errorf("%d looks for %d members", len(seen), len(members))
	}
}

// TestReportMergesTinyOwnerships: thousands of ownerships narrower than a pixel in one row are
// drawn as a few merged bars that say how many they stand for.
func TestReportMergesTinyOwnerships(t *testing.T) {
	s := newStory(t)
	s.at(0).phase(history.PhaseWarmup)
	const n = 5000
	for i := range n {
		m := []string{"a", "b"}[i%2]
		s.at(time.Duration(i)*10*time.Millisecond).own(history.FAssigned, m, int32(i+1), 0)
		s.at(time.Duration(i)*10*time.Millisecond+5*time.Millisecond).own(history.FRevoked, m, int32(i+1), 0)
	}
	s.at(10 * time.Minute).phase(history.PhaseTeardown)
	_, doc := render(t, Report{Title: "busy", Events: s.events()})
	own := doc.all(byTagClass("rect", "own"))
	total := 0
	for _, rc := range own {
		if rc.class("many") {
			total += int(attrInt(t, rc, "data-count"))
		} else {
			total++
		}
	}
	if total != n {
		t.Errorf("the bars stand for %d ownerships, want %d", total, n)
	}
	if len(own) > n/10 {
		t.Errorf("%d bars drawn for %d sub-pixel ownerships: they are not merged", len(own), n)
	}
	// The page says what it aggregated.
	merged, bars := 0, 0
	for _, rc := range own {
		if rc.class("many") {
			merged += int(attrInt(t, rc, "data-count"))
			bars++
		}
	}
	notes := doc.all(byTagClass("p", "aggregated"))
	if want := fmt.Sprintf("%d ownerships narrower than a pixel, next to one another, are drawn as %d grey bars", merged, bars); len(notes) != 1 || !strings.Contains(notes[0].allText(), want) {
		t.Errorf("the page does not say what it aggregated (want %q)", want)
	}
}

// TestProtocolMix names the protocol mixes the trend groups runs by.
func TestProtocolMix(t *testing.T) {
	c, k, s := MemberInfo{Protocol: history.ProtocolClassic}, MemberInfo{Protocol: history.ProtocolConsumer}, MemberInfo{Protocol: history.ProtocolShare}
	for _, tc := range []struct {
		ms   []MemberInfo
		want string
	}{{nil, ""}, {[]MemberInfo{c, c}, "classic"}, {[]MemberInfo{k}, "consumer"}, {[]MemberInfo{k, c}, "mixed"}, {[]MemberInfo{s, s}, "share"}, {[]MemberInfo{s, c}, "mixed"}} {
		if got := ProtocolMix(tc.ms); got != tc.want {
			t.Errorf("ProtocolMix(%v) = %q, want %q", tc.ms, got, tc.want)
		}
	}
}

// TestStreamedReportIsTheSamePage: the page streamed from history.jsonl (what `groupquake report`
// renders, keeping only what the page shows) is byte for byte the page of the events in memory:
// a failing run whose violations cite events of every kind (a heartbeat call and a consumption
// included, whose payloads the stream otherwise leaves undecoded), a busy run whose events table
// and timeline are cut to their bounds, and a generated run of both; and both are the page drawn
// from check.Ownerships over every event. A history cut off mid-line
// is drawn up to its last complete event and says so.
func TestStreamedReportIsTheSamePage(t *testing.T) {
	failing, _ := failingStory(t)
	// Cite a heartbeat invoke and add a consumption the events table would not list otherwise.
	var hbInvoke int64 = -1
	for _, e := range failing.Events {
		if e.F == history.FHeartbeat && e.Type == history.Invoke {
			hbInvoke = e.Index
			break
		}
	}
	if hbInvoke < 0 {
		t.Fatal("the failing story has no heartbeat call")
	}
	failing.Verdicts = append(slices.Clone(failing.Verdicts), check.Verdict{Name: "Cited", Violations: []check.Violation{{Message: "cites a call", EventIndexes: []int64{hbInvoke}}}})

	busy := newStory(t)
	busy.at(0).phase(history.PhaseWarmup)
	for i := range 6000 {
		m := []string{"a", "b"}[i%2]
		busy.at(time.Duration(i)*10*time.Millisecond).own(history.FAssigned, m, int32(i+1), 0)
		busy.at(time.Duration(i)*10*time.Millisecond+5*time.Millisecond).own(history.FRevoked, m, int32(i+1), 0)
	}
	busy.at(10 * time.Minute).phase(history.PhaseTeardown)
	busyEvents := busy.events()
	late := busyEvents[len(busyEvents)-3].Index // past the table's bound: listed because cited

	gen := genRun(t, filepath.Join(t.TempDir(), "history.jsonl"), 30_000)
	genPlan := history.Plan{Group: "g", Protocol: history.ProtocolConsumer, Topics: []history.TopicPlan{{Name: "t", Partitions: 12}}}
	var consume int64 = -1
	for _, e := range gen[len(gen)/2:] {
		if e.F == history.FConsume {
			consume = e.Index
			break
		}
	}

	for _, c := range []struct {
		name string
		r    Report
	}{
		{"failing", failing},
		{"busy", Report{Title: "busy", Events: busyEvents, Verdicts: []check.Verdict{{Name: "Late", Violations: []check.Violation{{Message: "late", EventIndexes: []int64{late}}}}}}},
		{"generated", Report{Title: "generated", Events: gen, Partitions: genPlan.Partitions(),
			Verdicts: []check.Verdict{{Name: "Consumed", Violations: []check.Violation{{Message: "a consumption", EventIndexes: []int64{consume}}}}}}},
	} {
		var mem, streamed, jsonl bytes.Buffer
		if err := WriteReport(&mem, c.r); err != nil {
			t.Fatal(err)
		}
		if err := history.Write(&jsonl, c.r.Events); err != nil {
			t.Fatal(err)
		}
		r := c.r
		r.Events = nil
		if err := WriteReportFrom(&streamed, r, bytes.NewReader(jsonl.Bytes())); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(mem.Bytes(), streamed.Bytes()) {
			a, b := mem.String(), streamed.String()
			i := 0
			for i < min(len(a), len(b)) && a[i] == b[i] {
				i++
			}
			t.Errorf("%s: the streamed page differs from the page in memory at byte %d:\n in memory: %.300s\n  streamed: %.300s", c.name, i, a[i:], b[i:])
		}
		// The ownerships both derive are check.Ownerships over every event.
		var given bytes.Buffer
		withOwns := c.r
		withOwns.Ownerships = check.Ownerships(c.r.Events)
		if err := WriteReport(&given, withOwns); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(given.Bytes(), streamed.Bytes()) {
			t.Errorf("%s: the page drawn from check.Ownerships over every event differs from the streamed page", c.name)
		}
		for _, v := range r.Verdicts {
			for _, vi := range v.Violations {
				for _, i := range vi.EventIndexes {
					if !strings.Contains(streamed.String(), fmt.Sprintf(`<tr id="e%d"`, i)) {
						t.Errorf("%s: the event %d that %s cites has no row", c.name, i, v.Name)
					}
				}
			}
		}
	}

	// Cut off mid-line: the complete events are drawn, and the page says the history ends there.
	var jsonl bytes.Buffer
	if err := history.Write(&jsonl, failing.Events); err != nil {
		t.Fatal(err)
	}
	cut := jsonl.Bytes()[:jsonl.Len()-20]
	r := failing
	r.Events = nil
	var page bytes.Buffer
	if err := WriteReportFrom(&page, r, bytes.NewReader(cut)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "the history ends mid-line") || !strings.Contains(page.String(), fmt.Sprintf("; %d events", len(failing.Events)-1)) {
		t.Errorf("a history cut off mid-line: the page does not say so, or counts the wrong events: %.400s", page.String())
	}
	// A corrupt line in the middle is an error reading the history, and nothing is written.
	bad := bytes.Replace(jsonl.Bytes(), []byte(`"index":3,`), []byte(`"index":"x",`), 1)
	page.Reset()
	err := WriteReportFrom(&page, r, bytes.NewReader(bad))
	var he *HistoryError
	if !errors.As(err, &he) || page.Len() != 0 {
		t.Errorf("a corrupt line: got error %v (want a *HistoryError) and %d bytes written", err, page.Len())
	}
}

// TestConcerns: an event concerns the member its payload names, for every payload that names
// one, else its process's member; the harness's own processes are no member.
func TestConcerns(t *testing.T) {
	for _, v := range []any{
		history.Consume{Member: "named"}, history.Assignment{Member: "named"}, history.Membership{Member: "named"},
		history.Join{Member: "named"}, history.Sync{Member: "named"}, history.Heartbeat{Member: "named"},
		history.Leave{Member: "named"}, history.Commit{Member: "named"},
		history.ShareFetch{Member: "named"}, history.ShareHeartbeat{Member: "named"},
	} {
		if m, _ := concerns(&history.Event{Process: "proc/call", Value: v}); m != "named" {
			t.Errorf("%T: concerns %q, want the member it names", v, m)
		}
	}
	for process, want := range map[string]string{"m1/join": "m1", "nemesis": "", "observer/describe": ""} {
		if m, _ := concerns(&history.Event{Process: process, Value: history.Join{}}); m != want {
			t.Errorf("a join of %s without a member: concerns %q, want %q", process, m, want)
		}
	}
}

// TestStallListed: the harness's stalls are in the events table, and
// concern no member.
func TestStallListed(t *testing.T) {
	e := history.Event{Type: history.Info, Process: "harness", F: history.FStall, Value: history.Stall{From: time.Second, To: 3 * time.Second}}
	if !listable(&e) {
		t.Fatal("a stall is not listed in the events table")
	}
	if m, tps := concerns(&e); m != "" || tps != nil {
		t.Fatalf("a stall concerns %q %v, want nothing", m, tps)
	}
}

// stallStory is a short passing run; with stalled, the harness does not run from 22 s to 30 s, in
// its quiesce, and its pulse records the stall at 30 s.
func stallStory(t *testing.T, stalled bool) (Report, int64) {
	s := newStory(t)
	s.at(0).phase(history.PhaseSetup)
	s.at(10 * time.Second).phase(history.PhaseWarmup)
	s.at(11*time.Second).own(history.FAssigned, "a", 1, 0, 1, 2, 3)
	s.at(12 * time.Second).phase(history.PhaseWorkload)
	s.at(20 * time.Second).phase(history.PhaseHeal)
	s.at(21 * time.Second).phase(history.PhaseQuiesce)
	stall := int64(-1)
	if stalled {
		stall = s.at(30 * time.Second).must(s.r.Stalled(history.Stall{From: 22 * time.Second, To: 30 * time.Second, Every: 100 * time.Millisecond}, "pulse late"))
	}
	s.at(40 * time.Second).phase(history.PhaseFinal)
	s.at(41 * time.Second).phase(history.PhaseTeardown)
	evs := s.events()
	return Report{Title: "stall", Run: RunInfo{Seed: 7, Scenario: "churn"}, Events: evs, Partitions: storyPlan.Partitions()}, stall
}

// TestStallBand: a stall of the harness is drawn on the timeline as a fault is: a bar in the
// harness's lane, labelled "harness stalled 8s" and linked to its event, and a band behind every
// lane, both from where the harness stopped running to where it ran again (after the quiesce
// marker, before the final one); a history without a stall has neither, nor the lane.
func TestStallBand(t *testing.T) {
	rep, stall := stallStory(t, true)
	page, doc := render(t, rep)
	bars := doc.all(byTagClass("rect", "stall"))
	if len(bars) != 1 {
		t.Fatalf("%d stall bars, want 1", len(bars))
	}
	bar := bars[0]
	if got := attrInt(t, bar, "data-event"); got != stall {
		t.Errorf("the stall bar cites event %d, want the stall's %d", got, stall)
	}
	if title := bar.allText(); !strings.Contains(title, "harness stalled 8s") || !strings.Contains(title, "from 22s to 30s") {
		t.Errorf("the stall bar's title %q does not say how long and when", title)
	}
	var labelled bool
	for _, txt := range doc.all(byTagClass("text", "faultlabel")) {
		labelled = labelled || txt.allText() == "harness stalled 8s"
	}
	if !labelled {
		t.Errorf("no label \"harness stalled 8s\" on the timeline")
	}
	bands := doc.all(byTagClass("rect", "stallband"))
	if len(bands) != 1 {
		t.Fatalf("%d stall bands, want 1", len(bands))
	}
	phaseX := map[string]float64{}
	for _, l := range doc.all(byTagClass("line", "phase")) {
		for _, p := range []string{history.PhaseQuiesce, history.PhaseFinal} {
			if strings.HasPrefix(l.allText(), "phase "+p+" ") {
				phaseX[p] = attrFloat(t, l, "x1")
			}
		}
	}
	for _, r := range []*node{bar, bands[0]} {
		x0 := attrFloat(t, r, "x")
		x1 := x0 + attrFloat(t, r, "width")
		if q, f := phaseX[history.PhaseQuiesce], phaseX[history.PhaseFinal]; !(q < x0 && x0 < x1 && x1 < f) {
			t.Errorf("<rect class=%q> spans x %.1f–%.1f, want within the quiesce (x %.1f) and the final marker (x %.1f)", r.attr["class"], x0, x1, q, f)
		}
	}
	var lane bool
	for _, l := range doc.all(byTagClass("text", "lane")) {
		lane = lane || strings.TrimSpace(l.text) == "stalled"
	}
	if !lane {
		t.Error("no lane \"stalled\" for the harness")
	}
	if !strings.Contains(page, ".stallband{") {
		t.Error("the page's style gives stall bands no look")
	}

	rep, _ = stallStory(t, false)
	_, doc = render(t, rep)
	if n := len(doc.all(byTagClass("rect", "stall"))) + len(doc.all(byTagClass("rect", "stallband"))); n != 0 {
		t.Errorf("a history without a stall has %d stall bars and bands", n)
	}
	for _, l := range doc.all(byTagClass("text", "lane")) {
		if strings.TrimSpace(l.text) == "stalled" {
			t.Error("a history without a stall has the harness's lane")
		}
	}
}

// TestFaultEdgesListed: a flapping link's cuts and restores (fault-edge) are rows of the events
// table, concern no member, and are not faults: the faults table and the timeline have the one
// link-flap, from its start to its stop, whatever edges it had.
func TestFaultEdgesListed(t *testing.T) {
	s := newStory(t)
	s.at(0).phase(history.PhaseSetup)
	s.at(10*time.Second).own(history.FAssigned, "a", 1, 0, 1, 2, 3)
	s.at(11 * time.Second).phase(history.PhaseWorkload)
	target := []string{"a->all-brokers"}
	var edges []int64
	edge := func(at time.Duration, x history.FaultEdge) {
		x.What, x.Target = "link-flap", target
		edges = append(edges, s.at(at).must(s.r.Info("nemesis/0", history.FFaultEdge, x, "")))
	}
	v := history.Fault{What: "link-flap", Target: target}
	s.at(12 * time.Second).must(s.r.Invoke("nemesis/0", history.FFaultStart, v, ""))
	edge(12*time.Second, history.FaultEdge{Edge: history.EdgeCut, Cut: 1})
	start := s.must(s.r.OK("nemesis/0", v, ""))
	edge(13*time.Second, history.FaultEdge{Edge: history.EdgeUp, Cut: 1})
	edge(14*time.Second, history.FaultEdge{Edge: history.EdgeCut, Cut: 2})
	s.at(15 * time.Second).must(s.r.Invoke("nemesis/0", history.FFaultStop, v, ""))
	edge(15*time.Second, history.FaultEdge{Edge: history.EdgeUp, Cut: 2, Final: true})
	stop := s.must(s.r.OK("nemesis/0", v, ""))
	s.at(20 * time.Second).phase(history.PhaseFinal)
	s.at(21 * time.Second).phase(history.PhaseTeardown)
	evs := s.events()
	for _, i := range edges {
		if e := evs[i]; !listable(&e) {
			t.Errorf("edge %s is not listed", e)
		} else if m, tps := concerns(&e); m != "" || tps != nil {
			t.Errorf("edge %s concerns %q %v, want nothing", e, m, tps)
		}
	}
	_, doc := render(t, Report{Title: "flap", Run: RunInfo{Seed: 7, Scenario: "baseline"}, Events: evs, Partitions: storyPlan.Partitions()})
	rows := doc.all(byTagClass("tr", "fault"))
	if len(rows) != 1 || !strings.Contains(rows[0].allText(), fmt.Sprintf("(event %d)", start)) || !strings.Contains(rows[0].allText(), fmt.Sprintf("(event %d)", stop)) {
		var txt []string
		for _, r := range rows {
			txt = append(txt, r.allText())
		}
		t.Errorf("faults table %q, want the one link-flap from event %d to %d", txt, start, stop)
	}
	if bars := doc.all(byTagClass("rect", "fault")); len(bars) != 1 {
		t.Errorf("%d fault bars on the timeline, want 1", len(bars))
	}
	for _, i := range edges {
		row := doc.all(func(n *node) bool { return n.name == "tr" && n.attr["id"] == fmt.Sprintf("e%d", i) })
		if len(row) != 1 || !strings.Contains(row[0].allText(), history.FFaultEdge) {
			t.Errorf("edge %d: events table rows %v", i, row)
		}
	}
}
