package results

import (
	"bytes"
	"cmp"
	"fmt"
	"html"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// The timeline is one SVG: lanes stacked from the top (faults, one lane per target; the group's
// coordinator; records consumed per second; one lane per member; one row per partition, with a
// sub-lane per owner that overlaps another), nemesis bands behind them, and the violations marked
// on the lanes they concern. Everything placed in time sits in <g class="zoom"> at the x of the
// unzoomed scale; the page's script moves it when the reader zooms or pans.

// Geometry, in SVG user units (pixels at 100%).
const (
	laneH     = 16.0 // a fault, coordinator or member lane
	subLaneH  = 14.0 // one owner's sub-lane in a partition row
	rowPad    = 4.0  // a partition row's padding (top + bottom)
	rateH     = 44.0 // the throughput lane
	captionH  = 16.0 // a section's caption
	sectionGp = 6.0
	charW     = 6.6 // width of a character of the 11px labels, for the gutter and the label fits
	// rightMargin leaves room past the plot for the last tick's label.
	rightMargin = 16.0
)

// Fault families, each with its colour (labels on them are #1a1a1a: contrast ≥ 4.5:1, see
// TestTimelineContrast).
var faultFamilies = []struct{ prefix, class, fill, name string }{
	{"link-", "link", "#f6c987", "link faults"},
	{"node-", "node", "#c9b3e6", "node faults"},
	{"member-", "churn", "#9fd8c8", "member churn"},
	{"", "other", "#d0d0d0", "other faults"},
}

func faultFamily(what string) int {
	for i, f := range faultFamilies {
		if strings.HasPrefix(what, f.prefix) {
			return i
		}
	}
	return len(faultFamilies) - 1
}

// nodeFills colour the coordinator lane's nodes (light, under #1a1a1a labels).
var nodeFills = []string{"#cfe0f3", "#d5ecc9", "#fbe5a8", "#e4d4ef", "#c8ecec", "#f4d6c0", "#e6e6e6"}

const (
	textDark = "#1a1a1a"
	violRed  = "#c00000"
)

func esc(s string) string { return html.EscapeString(s) }

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// svgw writes SVG elements; every string from the history goes through esc.
type svgw struct{ bytes.Buffer }

func (w *svgw) rect(class string, x, y, wd, h float64, attrs, title string) {
	fmt.Fprintf(w, `<rect class="%s" x="%s" y="%s" width="%s" height="%s"`, class, f1(x), f1(y), f1(wd), f1(h))
	if attrs != "" {
		w.WriteString(" " + attrs)
	}
	if title == "" {
		w.WriteString("/>\n")
		return
	}
	w.WriteString("><title>" + esc(title) + "</title></rect>\n")
}

// span draws a rectangle from x0 to x1 at least min wide; a clamped width keeps the true one in
// data-w, so that zooming in draws it to scale.
func (w *svgw) span(class string, x0, x1, y, h, least float64, attrs, title string) {
	wd := x1 - x0
	if wd < least {
		a := `data-w="` + strconv.FormatFloat(max(0, wd), 'f', 3, 64) + `"`
		if attrs != "" {
			a += " " + attrs
		}
		attrs, wd = a, least
	}
	w.rect(class, x0, y, wd, h, attrs, title)
}

func (w *svgw) text(class string, x, y float64, anchor, attrs, s string) {
	fmt.Fprintf(w, `<text class="%s" x="%s" y="%s"`, class, f1(x), f1(y))
	if anchor != "" {
		w.WriteString(` text-anchor="` + anchor + `"`)
	}
	if attrs != "" {
		w.WriteString(" " + attrs)
	}
	w.WriteString(">" + esc(s) + "</text>\n")
}

// label writes the text of a bar from x0 to x1 when it fits (the script shows and hides it as the
// zoom changes).
func (w *svgw) label(class string, x0, x1, y float64, s string) {
	need := charW*float64(len([]rune(s))) + 6
	attrs := fmt.Sprintf(`data-fit="%s" data-x1="%s"`, f1(need), f1(x1))
	if x1-x0 < need {
		attrs += ` visibility="hidden"`
	}
	w.text(class, x0+3, y, "", attrs, s)
}

func (w *svgw) line(class string, x1, y1, x2, y2 float64, title string) {
	fmt.Fprintf(w, `<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s"`, class, f1(x1), f1(y1), f1(x2), f1(y2))
	if title == "" {
		w.WriteString("/>\n")
		return
	}
	w.WriteString("><title>" + esc(title) + "</title></line>\n")
}

// glyph draws path d placed at (x, y).
func (w *svgw) glyph(class string, x, y float64, d, attrs, title string) {
	fmt.Fprintf(w, `<path class="%s" transform="translate(%s %s)" d="%s"`, class, f1(x), f1(y), d)
	if attrs != "" {
		w.WriteString(" " + attrs)
	}
	w.WriteString("><title>" + esc(title) + "</title></path>\n")
}

// Glyph shapes, centred on the point they mark.
const (
	glyphCross = "M-4 -4L4 4M-4 4L4 -4"                             // fenced, lost, session expired
	glyphLeft  = "M-3 -5L3 0L-3 5Z"                                 // left the group
	glyphStop  = "M-4 -4H4V4H-4Z"                                   // stopped for good
	glyphRedo  = "M0 -5A5 5 0 1 1 -5 0"                             // restarted
	glyphVMark = "M0 0L-6 -10H6Z"                                   // a cited event (tip at the point)
	glyphNC    = "M-1.5 -6H1.5V6H-1.5Z"                             // not the coordinator
	glyphDot   = "M-3.5 0A3.5 3.5 0 1 0 3.5 0A3.5 3.5 0 1 0 -3.5 0" // a violation on this lane
)

// violationMark is one listed violation placed on the timeline: the events it cites, and the
// partitions and members they concern.
type violationMark struct {
	checker, message string
	events           []citedEvent
	t0, t1           time.Duration
	tps              []history.TP
	members          []string
}

// mapViolation places vi: the partitions are those its message names, else those every cited
// event names, else those any names; the members are those its message names, else those of the
// cited events.
func mapViolation(checker string, vi check.Violation, cited map[int64]citedEvent, isTP map[history.TP]bool, isMember map[string]bool) violationMark {
	m := violationMark{checker: checker, message: vi.Message, t0: -1}
	names := map[string]bool{}
	for _, tok := range strings.FieldsFunc(vi.Message, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '>')
	}) {
		names[strings.TrimRight(tok, ".")] = true
	}
	var union, common []history.TP
	first := true
	for _, i := range vi.EventIndexes {
		c, ok := cited[i]
		if !ok {
			continue
		}
		m.events = append(m.events, c)
		if m.t0 < 0 || c.t < m.t0 {
			m.t0 = c.t
		}
		m.t1 = max(m.t1, c.t)
		for _, tp := range c.tps {
			if !slices.Contains(union, tp) {
				union = append(union, tp)
			}
		}
		if len(c.tps) > 0 {
			if first {
				common, first = slices.Clone(c.tps), false
			} else {
				common = slices.DeleteFunc(common, func(tp history.TP) bool { return !slices.Contains(c.tps, tp) })
			}
		}
	}
	for tp := range isTP {
		if names[tp.String()] {
			m.tps = append(m.tps, tp)
		}
	}
	switch {
	case len(m.tps) > 0:
	case len(common) > 0:
		m.tps = common
	default:
		m.tps = union
	}
	m.tps = slices.DeleteFunc(m.tps, func(tp history.TP) bool { return !isTP[tp] })
	slices.SortFunc(m.tps, func(a, b history.TP) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for name := range isMember {
		if names[name] {
			m.members = append(m.members, name)
		}
	}
	if len(m.members) == 0 {
		for _, c := range m.events {
			if c.member != "" && isMember[c.member] && !slices.Contains(m.members, c.member) {
				m.members = append(m.members, c.member)
			}
		}
	}
	slices.Sort(m.members)
	return m
}

// bannerItem is one violated checker in the banner at the top of the page.
type bannerItem struct {
	Checker string
	Message string
	Count   int
	// First is the earliest event the violation cites (-1: none on the timeline); Events are the
	// events it cites, in time order (at most maxBannerEvents), and At is when the last of them
	// happened: when the evidence was complete.
	First      int64
	Events     []int64
	MoreEvents int
	At         string
	Partitions []string
	Members    []string
	// Finding names the registered finding (groupquake findings) the shown violation matches, or
	// the first one another violation of the checker matches.
	Finding string
	// X0, X1 are the timeline's x of the stretch "show on the timeline" zooms to.
	X0, X1 float64
	Zoom   bool
}

const maxBannerEvents = 6

// faultRow is one fault in the faults table under the timeline.
type faultRow struct {
	Span
	Family  string
	Target  string
	Stopped bool
}

type laneLabel struct {
	y     float64
	text  string
	class string
	title string
}

// timeline lays out and draws the timeline of one report.
type timeline struct {
	v      *view
	d      *digest
	owns   []check.Ownership
	tps    []history.TP
	rowOf  map[history.TP]int
	colors map[string]legend
	order  []legend
	sc     timeScale
	left   float64
	end    time.Duration

	// Faults grouped by target (a lane each, more where a target's faults overlap); the y of
	// each fault's lane.
	targets   []faultTarget
	faultLane []float64
	// The violations placed, and those on each row, member lane, or on neither.
	marks      []violationMark
	rowViol    [][]int
	memberViol map[string][]int
	unplaced   []int
	// Each ownership's sub-lane in its row, and each row's count of sub-lanes.
	subOf, subs []int
	share       shareLayout

	// The vertical layout.
	y, height                             float64
	faultTop, coordTop, rateTop, otherTop float64
	stallTop                              float64 // the harness's lane; -1: no stall, no lane
	memberTop                             map[string]float64
	rowY                                  []float64
	labels                                []laneLabel

	bg svgw // stripes, not zoomed
	z  svgw // everything placed in time
	vz svgw // the violations, on top
}

type faultTarget struct {
	key    string
	faults []int
}

// layoutTimeline draws the timeline of v's digested history, and the banner that points into it.
func (v *view) layoutTimeline(d *digest, owns []check.Ownership, tps []history.TP) {
	t := &timeline{v: v, d: d, owns: owns, tps: tps, end: d.end, rateTop: -1, otherTop: -1, stallTop: -1}
	t.place()
	t.stack()
	t.backdrop()
	t.faults()
	t.stalls()
	t.coordinator()
	if t.rateTop >= 0 {
		t.rates()
	}
	t.members()
	rows := t.ownershipRows() + t.shareRows()
	t.violations()
	t.banner()
	v.Timeline = template.HTML(t.svg(rows)) // built by svgw: every string from the history escaped
	v.SVGHeight = t.height
}

func (t *timeline) x(d time.Duration) float64 { return t.sc.x(d) }

// runSpan is the time the timeline covers.
func (t *timeline) runSpan() time.Duration { return t.sc.segs[len(t.sc.segs)-1].t1 }

// place works out what goes where: members and their colours, fault targets, the violations'
// lanes, the partitions' sub-lanes, the gutter, the time scale.
func (t *timeline) place() {
	d, v := t.d, t.v
	origin, teardown := time.Duration(-1), time.Duration(-1)
	for _, p := range d.phases {
		switch p.Label {
		case history.PhaseWarmup:
			if origin < 0 {
				origin = p.Start
			}
		case history.PhaseTeardown:
			teardown = p.Start
		}
	}
	if origin < 0 {
		// No warm-up phase: the story starts at the first event of anything but the harness.
		origin = d.first
	}

	// Members: the plan's, then every other that owned a partition or spoke in the group.
	t.colors, t.order = memberColors(v.Run.Members, t.owns, d.lanes.memberOrder)
	v.Legend = t.order
	isMember := map[string]bool{}
	for _, l := range t.order {
		isMember[l.Member] = true
	}
	isTP := map[history.TP]bool{}
	t.rowOf = map[history.TP]int{}
	for i, tp := range t.tps {
		isTP[tp] = true
		t.rowOf[tp] = i
	}

	byKey := map[string]int{}
	for i, f := range d.faults {
		k := strings.Join(f.Target, ",")
		j, ok := byKey[k]
		if !ok {
			j = len(t.targets)
			byKey[k] = j
			t.targets = append(t.targets, faultTarget{key: k})
		}
		t.targets[j].faults = append(t.targets[j].faults, i)
	}

	t.rowViol = make([][]int, len(t.tps))
	t.memberViol = map[string][]int{}
	for _, vr := range v.Verdicts {
		for _, vi := range vr.Violations {
			m := mapViolation(vr.Name, vi, d.citedAt, isTP, isMember)
			if len(m.events) == 0 {
				continue
			}
			k := len(t.marks)
			t.marks = append(t.marks, m)
			for _, tp := range m.tps {
				t.rowViol[t.rowOf[tp]] = append(t.rowViol[t.rowOf[tp]], k)
			}
			for _, mb := range m.members {
				t.memberViol[mb] = append(t.memberViol[mb], k)
			}
			if len(m.tps) == 0 && len(m.members) == 0 {
				t.unplaced = append(t.unplaced, k)
			}
		}
	}

	// A sub-lane per owner overlapping another: an ownership takes the first sub-lane free at its
	// start.
	t.subOf, t.subs = make([]int, len(t.owns)), make([]int, len(t.tps))
	ends := make([][]time.Duration, len(t.tps))
	for i, o := range t.owns {
		row := t.rowOf[o.Partition]
		l := slices.IndexFunc(ends[row], func(e time.Duration) bool { return e <= o.Start })
		if l < 0 {
			l = len(ends[row])
			ends[row] = append(ends[row], 0)
		}
		ends[row][l] = max(o.End, o.Start+1)
		t.subOf[i] = l
	}
	for i := range t.tps {
		t.subs[i] = max(1, len(ends[i]))
	}
	t.placeShare()

	// The gutter: wide enough for every label.
	left := labelWidth
	widen := func(s string) { left = max(left, charW*float64(len([]rune(s)))+18) }
	for _, tp := range t.tps {
		widen(tp.String())
	}
	for _, ft := range t.targets {
		widen(ft.key)
	}
	for _, l := range t.order {
		widen(l.Member)
	}
	t.left = min(left, chartWidth/3)
	t.sc = newScale(t.left, origin, teardown, t.end)
}

// stack stacks the lanes from the top, each section under its caption.
func (t *timeline) stack() {
	d := t.d
	t.y = axisHeight
	caption := func(s string) {
		t.labels = append(t.labels, laneLabel{y: t.y + 12, text: s, class: "caption"})
		t.y += captionH
	}
	stripe := func(y0, h float64, n int) {
		if n%2 == 1 {
			t.bg.rect("stripe", 0, y0, chartWidth, h, "", "")
		}
	}
	// label names the lane at t.y in the gutter.
	label := func(text, class, title string) {
		t.labels = append(t.labels, laneLabel{y: t.y + 12, text: text, class: class, title: title})
	}
	// oneLane stacks a section of one lane under its caption and returns
	// the lane's top.
	oneLane := func(section, text, class, title string) float64 {
		caption(section)
		top := t.y
		label(text, class, title)
		t.y += laneH + sectionGp
		return top
	}

	t.faultTop = t.y
	t.faultLane = make([]float64, len(d.faults))
	if len(t.targets) > 0 {
		caption("faults")
	}
	for ti, ft := range t.targets {
		spans := make([]Span, len(ft.faults))
		for j, i := range ft.faults {
			spans[j] = d.faults[i]
		}
		n := 0
		for j, l := range laneOf(spans) {
			t.faultLane[ft.faults[j]] = t.y + laneH*float64(l)
			n = max(n, l+1)
		}
		stripe(t.y, laneH*float64(n), ti)
		label(ft.key, "lane", "faults on "+ft.key)
		t.y += laneH * float64(n)
	}
	if len(t.targets) > 0 {
		t.y += sectionGp
	}

	if len(d.stalls) > 0 {
		t.stallTop = oneLane("harness", "stalled", "lane", "times the harness process itself did not run (its pulse woke late): neither did the members in its process")
	}

	t.coordTop = oneLane("coordinator", "node", "lane", "the node the history names as the group's coordinator")

	if d.lanes.consumed.total+d.lanes.produced.total > 0 {
		caption("records/s")
		t.rateTop = t.y
		t.y += rateH + sectionGp
	}

	caption("members")
	t.memberTop = map[string]float64{}
	for i, l := range t.order {
		t.memberTop[l.Member] = t.y
		stripe(t.y, laneH, i)
		cls := "lane"
		if len(t.memberViol[l.Member]) > 0 {
			cls += " violated"
		}
		title := l.Member
		if l.Kind != "" {
			title += " (" + l.Kind + ")"
		}
		label(l.Member, cls, title)
		t.y += laneH
	}
	t.y += sectionGp

	if len(t.unplaced) > 0 {
		t.otherTop = oneLane("other violations", "group", "lane violated", "violations whose events name no partition and no member")
	}

	caption("partitions")
	t.rowY = make([]float64, len(t.tps))
	for i, tp := range t.tps {
		t.rowY[i] = t.y
		h := t.rowHeight(i)
		stripe(t.y, h, i)
		cls := "tp"
		if len(t.rowViol[i]) > 0 {
			cls += " violated"
		}
		title := tp.String()
		if t.subs[i] > 1 {
			title += fmt.Sprintf(": %d owners at once at some point (one sub-lane each)", t.subs[i])
		}
		t.labels = append(t.labels, laneLabel{y: t.y + rowPad/2 + 11, text: tp.String(), class: cls, title: title})
		t.y += h
	}
	t.height = t.y + 8
}

func (t *timeline) rowHeight(row int) float64 { return rowPad + subLaneH*float64(t.subs[row]) }

// backdrop draws the nemesis bands behind every lane, the compressed stretches and the phases.
func (t *timeline) backdrop() {
	z, sc := &t.z, t.sc
	for _, s := range t.d.faults {
		fam := faultFamilies[faultFamily(s.What)]
		z.span("faultband band-"+fam.class, t.x(s.Start), t.x(s.End), t.faultTop, t.height-t.faultTop, 2, "", "")
	}
	for _, s := range t.d.stalls {
		z.span("stallband", t.x(s.Start), t.x(s.End), t.faultTop, t.height-t.faultTop, 2, "", "")
	}
	for _, g := range sc.segs {
		if !g.compressed {
			continue
		}
		z.rect("squeezed", g.x0, axisHeight-14, g.x1-g.x0, t.height-axisHeight+14, "",
			fmt.Sprintf("%s, from %s to %s, drawn compressed", g.label, roundDur(g.t0), roundDur(g.t1)))
		z.text("squeezedlabel", (g.x0+g.x1)/2, 12, "middle", "", g.label)
	}
	for i, p := range t.d.phases {
		px := t.x(p.Start)
		z.line("phase", px, axisHeight-12, px, t.height, fmt.Sprintf("phase %s at %s (event %d)", p.Label, roundDur(p.Start), p.Event))
		if p.Label == history.PhaseSetup || p.Label == history.PhaseTeardown && len(sc.segs) > 1 && sc.segs[len(sc.segs)-1].compressed {
			continue // named by its compressed stretch
		}
		anchor, lx := "", px+3
		if px > chartWidth-60 {
			anchor, lx = "end", px-3
		}
		z.text("phaselabel", lx, 11+10*float64(i%2), anchor, "", p.Label)
	}
}

// stalls draws each of the harness's stalls as a bar in the harness's lane, labelled
// "harness stalled Xs" when it fits (its title says so always), beside its band behind every lane.
func (t *timeline) stalls() {
	for _, s := range t.d.stalls {
		x0, x1 := t.x(s.Start), t.x(s.End)
		title := fmt.Sprintf("%s: the harness process did not run from %s to %s (event %d), nor the members in it", s.Label, roundDur(s.Start), roundDur(s.End), s.Event)
		t.z.span("stall", x0, x1, t.stallTop+1, laneH-2, 2, fmt.Sprintf(`data-event="%d"`, s.Event), title)
		t.z.label("faultlabel", x0, max(x1, x0+2), t.stallTop+laneH-4, s.Label)
	}
}

// faults draws each fault as a bar in its target's lane, its kind written on it when it fits.
func (t *timeline) faults() {
	for i, s := range t.d.faults {
		fam := faultFamilies[faultFamily(s.What)]
		x0, x1 := t.x(s.Start), t.x(s.End)
		ly := t.faultLane[i]
		stop := "never stopped"
		if s.StopEvent >= 0 {
			stop = fmt.Sprintf("healed at %s (event %d)", roundDur(s.End), s.StopEvent)
		}
		title := fmt.Sprintf("fault %s from %s (event %d), %s", s.Label, roundDur(s.Start), s.Event, stop)
		if s.Detail != "" {
			title += ": " + s.Detail
		}
		t.z.span("fault fam-"+fam.class, x0, x1, ly+1, laneH-2, 2, fmt.Sprintf(`data-event="%d" data-stop-event="%d"`, s.Event, s.StopEvent), title)
		t.z.label("faultlabel", x0, max(x1, x0+2), ly+laneH-4, s.What)
	}
}

// coordinator draws the node the history names as the coordinator, from the event that names it
// to the next that names another, and the answers "not the coordinator" as dark ticks.
func (t *timeline) coordinator() {
	z, l := &t.z, &t.d.lanes
	z.WriteString(`<g class="coordlane">` + "\n")
	defer z.WriteString("</g>\n")
	if len(l.coord) == 0 && len(l.coordMarks) == 0 {
		z.text("nodata", t.left+6, t.coordTop+12, "", "", "not recorded: no member reported its coordinator and the observer's describes do not name it")
		return
	}
	nodeIdx := map[int32]int{}
	for i, s := range l.coord {
		to := t.end
		if i+1 < len(l.coord) {
			to = l.coord[i+1].start
		}
		k, ok := nodeIdx[s.node]
		if !ok {
			k = len(nodeIdx)
			nodeIdx[s.node] = k
		}
		// Solid while events name the node, pale from the last of them to the next node named.
		x0, xl, x1 := t.x(s.start), t.x(s.last), t.x(to)
		fill := nodeFills[k%len(nodeFills)]
		title := fmt.Sprintf("node %d is the coordinator as %s saw it at %s (event %d); named by %d event(s) up to %s", s.node, s.by, roundDur(s.start), s.event, s.seen, roundDur(s.last))
		z.span("coord", x0, xl, t.coordTop+1, laneH-2, 1, fmt.Sprintf(`style="fill:%s" data-node="%d" data-event="%d"`, fill, s.node, s.event), title)
		if to > s.last {
			z.span("coord stale", xl, x1, t.coordTop+1, laneH-2, 0, fmt.Sprintf(`style="fill:%s" data-node="%d"`, fill, s.node),
				fmt.Sprintf("node %d was last named the coordinator at %s; no event names one until %s", s.node, roundDur(s.last), roundDur(to)))
		}
		z.label("coordlabel", x0, x1, t.coordTop+laneH-4, fmt.Sprintf("node %d", s.node))
	}
	for _, m := range l.coordMarks {
		z.glyph("ncmark", t.x(m.t), t.coordTop+laneH/2, glyphNC, fmt.Sprintf(`data-event="%d"`, m.event),
			fmt.Sprintf("%s answered %s at %s (event %d)", m.who, m.err, roundDur(m.t), m.event))
	}
}

// members draws each member's membership over time, the churn faults on it, and the facts that
// end it (fenced, lost, session expired, left, stopped).
func (t *timeline) members() {
	z := &t.z
	for _, l := range t.order {
		top, name := t.memberTop[l.Member], l.Member
		fmt.Fprintf(z, `<g class="mlane" data-lane="%s">`+"\n", esc(name))
		tr := t.d.lanes.members[name]
		c := t.colors[name]
		if tr != nil {
			for i, s := range tr.spans {
				to := t.end
				if i+1 < len(tr.spans) {
					to = tr.spans[i+1].start
				}
				x0, x1 := t.x(s.start), t.x(to)
				title := fmt.Sprintf("%s %s from %s (event %d: %s) to %s", name, s.state, roundDur(s.start), s.event, s.why, roundDur(to))
				attrs := fmt.Sprintf(`style="fill:%s" data-member="%s" data-state="%s"`, c.Color, esc(name), s.state)
				switch s.state {
				case stInGroup:
					z.span("mstate in", x0, x1, top+3, laneH-6, 1, attrs, title)
				case stJoining, stRebalancing:
					z.span("mstate joining", x0, x1, top+3, laneH-6, 1, attrs, title)
					z.label("mlabel", x0, x1, top+laneH-4, s.state)
				case stOut:
					z.span("mstate out", x0, x1, top+laneH/2-1, 2, 1, fmt.Sprintf(`data-state="%s"`, s.state), title)
				case stStopped:
					z.span("mstate stopped", x0, x1, top+2, laneH-4, 1, fmt.Sprintf(`data-state="%s"`, s.state), title)
					z.label("mlabel light", x0, x1, top+laneH-4, "stopped")
				}
			}
		}
		// Churn faults on this member: crashed, left, stalled, … until healed.
		for _, s := range t.d.faults {
			if len(s.Target) != 1 || s.Target[0] != name || !strings.HasPrefix(s.What, "member-") {
				continue
			}
			what := strings.TrimPrefix(s.What, "member-")
			x0, x1 := t.x(s.Start), t.x(s.End)
			// A dark strip under the membership it interrupts (the fault's own lane names it).
			z.span("churn", x0, x1, top+laneH-4, 3, 2, fmt.Sprintf(`data-event="%d" data-churn="%s"`, s.Event, esc(what)),
				fmt.Sprintf("%s: %s from %s (event %d) to %s", name, s.What, roundDur(s.Start), s.Event, roundDur(s.End)))
			if s.StopEvent >= 0 && (what == "crash" || what == "restart") {
				z.glyph("gl restarted", x1, top+laneH/2, glyphRedo, fmt.Sprintf(`data-event="%d"`, s.StopEvent),
					fmt.Sprintf("%s restarted at %s (event %d)", name, roundDur(s.End), s.StopEvent))
			}
		}
		if tr != nil {
			for _, mk := range tr.marks {
				g, what := glyphCross, mk.f
				switch mk.f {
				case history.FLeft:
					g = glyphLeft
				case history.FStopped:
					g = glyphStop
				case history.FRestart:
					g, what = glyphRedo, "restarted"
				case history.FLost:
					what = "lost " + mk.detail
				}
				title := fmt.Sprintf("%s %s at %s (event %d)", name, what, roundDur(mk.t), mk.event)
				if mk.detail != "" && mk.f != history.FLost {
					title += ": " + mk.detail
				}
				z.glyph("gl m-"+mk.f, t.x(mk.t), top+laneH/2, g, fmt.Sprintf(`data-event="%d"`, mk.event), title)
			}
		}
		z.WriteString("</g>\n")
	}
}

// violations draws, on each lane a violation concerns, a mark per event it cites there and, when
// those events are close together, a red band over them.
func (t *timeline) violations() {
	vz := &t.vz
	vband := func(m violationMark, top, h float64, lane string) {
		if m.t1-m.t0 > t.runSpan()/10 {
			return // events far apart: the marks say where, a band would cover most of the run
		}
		vz.span("vband", t.x(m.t0)-2, t.x(m.t1)+2, top, h, 5, fmt.Sprintf(`data-checker="%s" %s`, esc(m.checker), lane), m.checker+": "+m.message)
	}
	vmark := func(m violationMark, c citedEvent, top float64, lane string) {
		fmt.Fprintf(vz, `<a class="vmark" href="#e%d" data-checker="%s" %s>`, c.index, esc(m.checker), lane)
		vz.glyph("vmark", t.x(c.t), top, glyphVMark, "", fmt.Sprintf("%s: %s (event %d at %s)", m.checker, m.message, c.index, roundDur(c.t)))
		vz.WriteString("</a>\n")
	}
	for row, ks := range t.rowViol {
		tp := t.tps[row]
		lane := fmt.Sprintf(`data-tp="%s"`, esc(tp.String()))
		for _, k := range ks {
			m := t.marks[k]
			vband(m, t.rowY[row], t.rowHeight(row), lane)
			for _, c := range m.events {
				if len(c.tps) == 0 || slices.Contains(c.tps, tp) {
					vmark(m, c, t.rowY[row]+8, lane)
				}
			}
		}
	}
	for _, l := range t.order {
		lane := fmt.Sprintf(`data-lane="%s"`, esc(l.Member))
		top := t.memberTop[l.Member]
		for _, k := range t.memberViol[l.Member] {
			m := t.marks[k]
			vband(m, top, laneH, lane)
			for _, c := range m.events {
				if c.member == l.Member || c.member == "" {
					vmark(m, c, top+8, lane)
				}
			}
		}
	}
	for _, k := range t.unplaced {
		m := t.marks[k]
		vband(m, t.otherTop, laneH, `data-lane="group"`)
		for _, c := range m.events {
			vmark(m, c, t.otherTop+8, `data-lane="group"`)
		}
	}
}

// banner lists each violated checker with its earliest violation on the timeline.
func (t *timeline) banner() {
	v := t.v
	for _, vr := range v.Verdicts {
		if vr.Status != "violated" {
			continue
		}
		item := bannerItem{Checker: vr.Name, Count: len(vr.Violations) + vr.More, First: -1}
		best := -1
		for k, m := range t.marks {
			if m.checker == vr.Name && (best < 0 || m.t0 < t.marks[best].t0) {
				best = k
			}
		}
		switch {
		case best >= 0:
			m := t.marks[best]
			item.Message = m.message
			evs := slices.Clone(m.events)
			slices.SortStableFunc(evs, func(a, b citedEvent) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.index, b.index)) })
			item.First, item.At = evs[0].index, roundDur(m.t1)
			for i, c := range evs {
				if i == maxBannerEvents {
					item.MoreEvents = len(evs) - i
					break
				}
				item.Events = append(item.Events, c.index)
			}
			for _, tp := range m.tps {
				item.Partitions = append(item.Partitions, tp.String())
			}
			item.Members = m.members
			// The stretch to show: the cited events, or, when they are far apart, the time
			// around the last of them (where the evidence became complete).
			from, to := m.t0, m.t1
			if to-from > t.runSpan()/10 {
				from, to = m.t1-t.runSpan()/30, min(t.end, m.t1+t.runSpan()/30)
			}
			item.X0, item.X1, item.Zoom = t.x(from), t.x(to), true
		case len(vr.Violations) > 0:
			item.Message = vr.Violations[0].Message
		}
		for _, x := range vr.Violations {
			if x.Finding != "" && (item.Finding == "" || x.Message == item.Message) {
				item.Finding = x.Finding
			}
		}
		v.Banner = append(v.Banner, item)
	}
}

// svg assembles the layers: stripes, the axis, the zoomed layer (clipped to the plot), the gutter.
func (t *timeline) svg(rows string) string {
	var ticks, tickLabels svgw
	for _, tk := range t.sc.ticks() {
		tx := t.x(tk)
		ticks.line("tick", tx, axisHeight-4, tx, t.height, "")
		tickLabels.text("ticklabel", tx, axisHeight-6, "middle", "", tickLabel(tk))
	}
	var gut svgw
	maxChars := int((t.left - 14) / charW)
	for _, l := range t.labels {
		text := l.text
		if len([]rune(text)) > maxChars {
			text = string([]rune(text)[:max(1, maxChars-1)]) + "…"
		}
		if l.class == "caption" {
			gut.text("caption", 4, l.y, "", "", text)
			continue
		}
		fmt.Fprintf(&gut, `<text class="%s" x="%s" y="%s" text-anchor="end">%s<title>%s</title></text>`+"\n", l.class, f1(t.left-8), f1(l.y), esc(text), esc(l.title))
		if strings.Contains(l.class, "violated") {
			gut.glyph("vdot", 8, l.y-4, glyphDot, "", "a violation concerns this lane")
		}
	}
	segs := make([]string, len(t.sc.segs))
	for i, g := range t.sc.segs {
		c := 0
		if g.compressed {
			c = 1
		}
		segs[i] = fmt.Sprintf("[%s,%s,%s,%s,%d]", f1(g.x0), f1(g.x1), strconv.FormatFloat(g.t0.Seconds(), 'f', 6, 64), strconv.FormatFloat(g.t1.Seconds(), 'f', 6, 64), c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" data-left="%s" data-right="%s" data-axis="%s" data-segs="[%s]" data-view="0.000 %s">`+"\n",
		f1(chartWidth+rightMargin), f1(t.height), f1(chartWidth+rightMargin), f1(t.height), f1(t.left), f1(chartWidth), f1(axisHeight), strings.Join(segs, ","),
		strconv.FormatFloat(t.end.Seconds(), 'f', 3, 64))
	b.WriteString(`<defs><clipPath id="plotclip"><rect x="` + f1(t.left) + `" y="0" width="` + f1(chartWidth-t.left) + `" height="` + f1(t.height) + `"/></clipPath>` +
		`<pattern id="hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><rect width="2.5" height="6" fill="#000" fill-opacity=".55"/></pattern></defs>` + "\n")
	b.WriteString(`<g class="bg">` + "\n" + t.bg.String() + "</g>\n")
	b.WriteString(`<g class="ticks">` + "\n" + ticks.String() + "</g>\n")
	b.WriteString(`<g class="plot" clip-path="url(#plotclip)">` + "\n")
	b.WriteString(`<g class="zoom">` + "\n" + t.z.String())
	b.WriteString(`<g class="rows">` + "\n" + rows + "</g>\n")
	b.WriteString(`<g class="violations">` + "\n" + t.vz.String() + "</g>\n")
	b.WriteString("</g>\n</g>\n")
	b.WriteString(`<g class="ticklabels">` + "\n" + tickLabels.String() + "</g>\n")
	b.WriteString(`<line class="gutterline" x1="` + f1(t.left) + `" y1="` + f1(axisHeight-14) + `" x2="` + f1(t.left) + `" y2="` + f1(t.height) + `"/>` + "\n")
	b.WriteString(`<g class="gutter">` + "\n" + gut.String() + "</g>\n</svg>")
	return b.String()
}

// ownershipRows draws each partition's row: a bar per ownership in its sub-lane, hatched when it
// ended without a clean revocation.
func (t *timeline) ownershipRows() string {
	v, owns, tps, rowOf, subOf, subs, rowY, colors, x := t.v, t.owns, t.tps, t.rowOf, t.subOf, t.subs, t.rowY, t.colors, t.x
	type lane struct {
		w svgw
		// The last bar drawn: where it starts in w, and its merged bar when it became one.
		x, wd  float64
		at     int
		set    bool
		merged *mergedBar
	}
	lanes := make([][]lane, len(tps))
	for i := range tps {
		lanes[i] = make([]lane, subs[i])
	}
	var merged [][]*mergedBar = make([][]*mergedBar, len(tps))
	for i, o := range owns {
		row, sub := rowOf[o.Partition], subOf[i]
		ln := &lanes[row][sub]
		x0, x1 := x(o.Start), x(o.End)
		by := rowY[row] + rowPad/2 + subLaneH*float64(sub)
		// Ownerships narrower than a pixel next to one another are drawn as one grey bar: a run
		// with a hundred thousand short ownerships stays a page a browser opens.
		if x1-x0 < 1 && ln.set && ln.wd < 1.5 && x0-(ln.x+ln.wd) < 1 {
			if ln.merged == nil {
				// The previous bar, the last this sub-lane wrote, becomes a merged one.
				ln.merged = &mergedBar{x: ln.x, y: by, w: ln.wd, count: 1}
				merged[row] = append(merged[row], ln.merged)
				ln.w.Truncate(ln.at)
			}
			mb := ln.merged
			mb.count++
			mb.w = max(mb.w, x1-mb.x)
			mb.last = o.StartEvent
			ln.wd = mb.w
			continue
		}
		how := "revoked"
		switch {
		case o.Open():
			how = "still owned at the end"
		case o.EndF != history.FRevoked:
			how = o.EndF
		}
		endTxt := fmt.Sprintf("to %s (event %d), %s", roundDur(o.End), o.EndEvent, how)
		if o.Open() {
			endTxt = fmt.Sprintf("to %s, %s", roundDur(o.End), how)
		}
		c := colors[o.Member]
		cls := "own"
		if o.Lost {
			cls += " lost"
		}
		if c.Cycle > 0 {
			cls += " again"
		}
		at := ln.w.Len()
		attrs := fmt.Sprintf(`style="fill:%s" data-member="%s" data-start-event="%d" data-end-event="%d"`, c.Color, esc(o.Member), o.StartEvent, o.EndEvent)
		if sub > 0 {
			attrs += fmt.Sprintf(` data-sublane="%d"`, sub)
		}
		title := fmt.Sprintf("%s owns %s at epoch %d from %s (event %d) %s", o.Member, o.Partition, o.Epoch, roundDur(o.Start), o.StartEvent, endTxt)
		ln.w.span(cls, x0, x1, by+1, subLaneH-2, 1, attrs, title)
		if o.Lost {
			ln.w.span("lostmark", x0, x1, by+1, subLaneH-2, 1, "", "")
		}
		ln.x, ln.wd, ln.at, ln.set, ln.merged = x0, max(1, x1-x0), at, true, nil
	}
	var out svgw
	for row := range tps {
		fmt.Fprintf(&out, `<g class="row" data-tp="%s" data-sublanes="%d">`+"\n", esc(tps[row].String()), subs[row])
		for i := range lanes[row] {
			out.WriteString(lanes[row][i].w.String())
		}
		for _, mb := range merged[row] {
			v.Merged += mb.count
			v.MergedBars++
			out.rect("own many", mb.x, mb.y+1, max(1, mb.w), subLaneH-2, fmt.Sprintf(`data-count="%d"`, mb.count),
				fmt.Sprintf("%d short ownerships of %s, the last from event %d (history.jsonl has each)", mb.count, tps[row], mb.last))
		}
		out.WriteString("</g>\n")
	}
	return out.String()
}

type mergedBar struct {
	x, y, w float64
	count   int
	last    int64
}

// rates draws records consumed and produced per second.
func (t *timeline) rates() {
	z, labels, d, sc, top := &t.z, &t.labels, t.d, t.sc, t.rateTop
	end := d.end
	if end <= 0 {
		return
	}
	bin := max(500*time.Millisecond, d.lanes.consumed.width, d.lanes.produced.width, end/200)
	n := int((end + bin - 1) / bin)
	cons := make([]float64, n)
	prod := make([]float64, n)
	peak := 0.0
	for i := range n {
		from, to := time.Duration(i)*bin, time.Duration(i+1)*bin
		cons[i] = d.lanes.consumed.count(from, to) / bin.Seconds()
		prod[i] = d.lanes.produced.count(from, to) / bin.Seconds()
		peak = max(peak, cons[i], prod[i])
	}
	if peak <= 0 {
		return
	}
	scale := niceCeil(peak)
	yOf := func(r float64) float64 { return top + rateH - 1 - (rateH-4)*r/scale }
	var area, line strings.Builder
	fmt.Fprintf(&area, "%s,%s", f1(sc.x(0)), f1(yOf(0)))
	for i := range n {
		x0, x1 := sc.x(time.Duration(i)*bin), sc.x(time.Duration(i+1)*bin)
		fmt.Fprintf(&area, " %s,%s %s,%s", f1(x0), f1(yOf(cons[i])), f1(x1), f1(yOf(cons[i])))
		if i > 0 {
			line.WriteByte(' ')
		}
		fmt.Fprintf(&line, "%s,%s %s,%s", f1(x0), f1(yOf(prod[i])), f1(x1), f1(yOf(prod[i])))
	}
	fmt.Fprintf(&area, " %s,%s", f1(sc.x(time.Duration(n)*bin)), f1(yOf(0)))
	fmt.Fprintf(z, `<polygon class="rate consumed" points="%s"><title>records consumed per second (all members, %s bins); peak %s/s</title></polygon>`+"\n", area.String(), roundDur(bin), fmtRate(maxOf(cons)))
	if d.lanes.produced.total > 0 {
		fmt.Fprintf(z, `<polyline class="rate produced" points="%s"><title>records produced and acknowledged per second (%s bins); peak %s/s</title></polyline>`+"\n", line.String(), roundDur(bin), fmtRate(maxOf(prod)))
	}
	*labels = append(*labels,
		laneLabel{y: top + 10, text: fmtRate(scale) + "/s", class: "ratetick", title: "top of the lane: " + fmtRate(scale) + " records per second"},
		laneLabel{y: top + rateH - 2, text: "0/s", class: "ratetick", title: "records per second"})
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// niceCeil rounds x up to 1, 2 or 5 times a power of ten.
func niceCeil(x float64) float64 {
	p := 1.0
	for p*10 <= x {
		p *= 10
	}
	for p > x && p > 1e-9 {
		p /= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func fmtRate(r float64) string {
	switch {
	case r >= 10000:
		return strconv.FormatFloat(r/1000, 'f', 0, 64) + "k"
	case r >= 1000:
		return strconv.FormatFloat(r/1000, 'f', 1, 64) + "k"
	case r >= 10:
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

// tickLabel is roundDur without the zero seconds of whole minutes ("2m", not "2m0s"), as the
// page's script writes ticks.
func tickLabel(d time.Duration) string {
	s := roundDur(d)
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
