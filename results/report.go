package results

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// Report is what one run's HTML report shows. The page is self-contained: no script, style or
// font is fetched from anywhere, so it opens offline and from a CI artifact.
type Report struct {
	Title string
	// Run describes the plan; the zero value leaves the run table out.
	Run RunInfo
	// Command reruns the run (shown verbatim).
	Command  string
	Events   []history.Event
	Verdicts []check.Verdict
	// Cost is the rebalance cost from verdicts.json (nil: no pauses table).
	Cost *check.Cost
	// Notes say how the judgement was limited and what else a reader should know.
	Notes []string
	// Truncated is set when the history ended mid-line (a killed run).
	Truncated bool
	// Partitions are the plan's partitions: each gets a timeline row even if nobody owned it.
	Partitions []history.TP
	// Ownerships are the ownership intervals as the checkers see them; nil means derive them from
	// the events as check.Ownerships does (the same pass the checkers make).
	Ownerships []check.Ownership
}

// RunInfo is what a report or the trend page says about a run's plan.
type RunInfo struct {
	Dir      string
	Seed     uint64
	Scenario string
	// Kafka is the broker version, "embedded <version>" for the embedded cluster, or "external".
	Kafka string
	// Protocol is the group's mix of member protocols: classic, consumer or mixed.
	Protocol string
	Members  []MemberInfo
	// Started is when the run began (plan.json's time).
	Started time.Time
}

// MemberInfo is one planned member.
type MemberInfo struct {
	Name, Kind, Protocol string
}

// ProtocolMix names the mix of the members' protocols: "classic", "consumer" or "mixed".
func ProtocolMix(members []MemberInfo) string {
	var classic, consumer bool
	for _, m := range members {
		switch m.Protocol {
		case history.ProtocolConsumer:
			consumer = true
		default:
			classic = true
		}
	}
	switch {
	case classic && consumer:
		return "mixed"
	case consumer:
		return history.ProtocolConsumer
	case classic:
		return history.ProtocolClassic
	}
	return ""
}

// Span is a fault or a phase drawn across the timeline.
type Span struct {
	Label string
	// Detail is what the fault was seen to do (its effect, or why it had none).
	Detail     string
	Start, End time.Duration
	// Event starts the span; StopEvent ends it (-1 when it never stopped).
	Event, StopEvent int64
}

// digest is what the page needs of a history, gathered in one pass over its events so that a
// history can be streamed through it: the page never holds more of a long run than it shows.
type digest struct {
	cited map[int64][]string // events a listed violation cites, and by which checkers
	n     int
	end   time.Duration
	// first is the time of the first event of anything but the harness (-1: none yet).
	first  time.Duration
	phases []Span
	// faults pairs each fault that took effect (a fault-start completed ok or info) with the
	// completion of the next fault-stop of the same nemesis process (each scheduled fault is
	// one); a fault never stopped lasts to the end (End -1 until finish). A start recorded as
	// failed was not applied.
	faults    []Span
	openFault map[string]int
	// owning holds the events check.ShapesOwnership keeps, when the ownerships are derived here
	// (the report gives none); nil otherwise.
	owning  []history.Event
	keepOwn bool
	times   map[int64]time.Duration // times of the cited events
	rows    []eventRow
	dropped int
}

func newDigest(cited map[int64][]string, keepOwn bool) *digest {
	return &digest{cited: cited, first: -1, openFault: map[string]int{}, keepOwn: keepOwn, times: map[int64]time.Duration{}}
}

// needsValue reports whether the page reads e's payload: what add looks at, and every event the
// events table may list. The others may come with their payload undecoded.
func (d *digest) needsValue(e history.Event) bool {
	if _, ok := d.cited[e.Index]; ok || e.Type == history.Fail || check.ShapesOwnership(&e) {
		return true
	}
	return listable(&e)
}

// listable: what changes ownership or membership (a member stopping for good and its supervisor
// restarting it included), faults and phases (not the calls in flight).
func listable(e *history.Event) bool {
	switch e.F {
	case history.FAssigned, history.FRevoked, history.FLost, history.FFenced, history.FLeft,
		history.FSessionExpired, history.FStopped, history.FRestart,
		history.FFaultStart, history.FFaultStop, history.FPhase, history.FJoin, history.FSync:
		return e.Type != history.Invoke
	}
	return false
}

func (d *digest) add(e *history.Event) {
	d.n++
	d.end = max(d.end, e.Time)
	if d.first < 0 && e.Process != "harness" {
		d.first = e.Time
	}
	if d.keepOwn && check.ShapesOwnership(e) {
		d.owning = append(d.owning, *e)
	}
	by, isCited := d.cited[e.Index]
	if isCited {
		d.times[e.Index] = e.Time
	}
	if isCited || e.Type == history.Fail || listable(e) {
		// The events table: at most maxEventRow of them besides every cited one.
		if len(d.rows) >= maxEventRow && !isCited {
			d.dropped++
		} else {
			d.rows = append(d.rows, eventRow{Event: *e, CitedBy: by})
		}
	}
	switch e.F {
	case history.FPhase:
		if p, err := history.ValueAs[history.Phase](*e); err == nil {
			d.phases = append(d.phases, Span{Label: p.Name, Start: e.Time, Event: e.Index, StopEvent: -1})
		}
	case history.FFaultStart, history.FFaultStop:
		if e.Type == history.Invoke {
			return
		}
		f, err := history.ValueAs[history.Fault](*e)
		if err != nil {
			return
		}
		if e.F == history.FFaultStart {
			if e.Type == history.Fail {
				return
			}
			label := strings.TrimSpace(f.What + " " + strings.Join(f.Target, ","))
			d.openFault[e.Process] = len(d.faults)
			d.faults = append(d.faults, Span{Label: label, Detail: f.Effect, Start: e.Time, End: -1, Event: e.Index, StopEvent: -1})
			return
		}
		if i, ok := d.openFault[e.Process]; ok {
			s := &d.faults[i]
			s.End, s.StopEvent = e.Time, e.Index
			if f.NoEffect != "" {
				s.Detail = strings.TrimSpace(s.Detail + "; no observed effect: " + f.NoEffect)
			} else if f.Effect != "" {
				s.Detail = strings.TrimSpace(s.Detail + "; " + f.Effect)
			}
			delete(d.openFault, e.Process)
		}
	}
}

// finish ends the faults never stopped at the history's end.
func (d *digest) finish() {
	for i := range d.faults {
		if d.faults[i].End < 0 {
			d.faults[i].End = d.end
		}
	}
}

// palette is the fixed set of member colours, in the order members are given them: sixteen hues
// told apart at a glance, with no pure red (red marks violations and lost ownerships).
var palette = []string{
	"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7",
	"#1f3b73", "#8cd17d", "#bab0ac", "#d37295", "#a0cbe8", "#86bcb6", "#f1ce63", "#d4a6c8",
}

// memberColors gives each member a colour of the palette, in order: the plan's members first
// (their planned order), then any other member in the order its first ownership appears. Past
// the palette's size, colours repeat and the bars of the repeat get a dashed outline (Cycle > 0).
func memberColors(planned []MemberInfo, owns []check.Ownership) (map[string]legend, []legend) {
	by := map[string]legend{}
	var order []legend
	add := func(name string) {
		if _, ok := by[name]; ok || name == "" {
			return
		}
		n := len(order)
		l := legend{Member: name, Color: palette[n%len(palette)], Cycle: n / len(palette)}
		by[name] = l
		order = append(order, l)
	}
	for _, m := range planned {
		add(m.Name)
	}
	for _, o := range owns {
		add(o.Member)
	}
	for i := range order {
		for _, m := range planned {
			if m.Name == order[i].Member {
				order[i].Kind = m.Kind
			}
		}
	}
	return by, order
}

type eventRow struct {
	history.Event
	CitedBy []string
}

// Geometry of the timeline, in SVG user units (pixels at 100%).
const (
	chartWidth  = 1200.0
	labelWidth  = 110.0 // the least room for the partition names; long names get more
	rowHeight   = 18.0
	laneHeight  = 14.0
	axisHeight  = 40.0
	squeezed    = 64.0 // width of a compressed stretch (setup, teardown)
	maxEventRow = 5000
)

// timeScale maps run time to x piecewise: the setup before the warm-up and the teardown are
// squeezed into a fixed width when drawing them to scale would take more, so the timeline is
// about what the group did, not about how long the brokers took to start.
type timeScale struct{ segs []segment }

type segment struct {
	t0, t1     time.Duration
	x0, x1     float64
	compressed bool
	label      string
}

func (s timeScale) x(t time.Duration) float64 {
	for i, g := range s.segs {
		if t <= g.t1 || i == len(s.segs)-1 {
			if g.t1 <= g.t0 {
				return g.x0
			}
			f := float64(t-g.t0) / float64(g.t1-g.t0)
			return g.x0 + (g.x1-g.x0)*min(1, max(0, f))
		}
	}
	return chartWidth
}

// newScale builds the scale from the first event (0) to end: origin is where the group's story
// starts (the warm-up), teardown where it ends (-1: none).
func newScale(left float64, origin, teardown, end time.Duration) timeScale {
	if end <= 0 {
		end = time.Second
	}
	w := chartWidth - left
	perNs := w / float64(end)
	squeeze := func(d time.Duration) bool { return float64(d)*perNs > squeezed*1.5 }
	var segs []segment
	x := left
	mainFrom, mainTo := time.Duration(0), end
	room := w
	if origin > 0 && squeeze(origin) {
		segs = append(segs, segment{t0: 0, t1: origin, x0: x, x1: x + squeezed, compressed: true, label: "setup " + roundDur(origin)})
		x += squeezed
		room -= squeezed
		mainFrom = origin
	}
	var tail *segment
	if teardown > mainFrom && teardown < end && squeeze(end-teardown) {
		tail = &segment{t0: teardown, t1: end, x0: chartWidth - squeezed, x1: chartWidth, compressed: true, label: "teardown " + roundDur(end-teardown)}
		room -= squeezed
		mainTo = teardown
	}
	segs = append(segs, segment{t0: mainFrom, t1: mainTo, x0: x, x1: x + room})
	if tail != nil {
		segs = append(segs, *tail)
	}
	return timeScale{segs}
}

func roundDur(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// ticks returns tick times on the uncompressed stretch: a round step giving at most about 12.
func (s timeScale) ticks() []time.Duration {
	var main segment
	for _, g := range s.segs {
		if !g.compressed {
			main = g
		}
	}
	span := main.t1 - main.t0
	step := time.Duration(0)
	for _, c := range []time.Duration{
		10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour,
	} {
		if span/c <= 12 {
			step = c
			break
		}
	}
	if step == 0 {
		step = span / 12
	}
	if step <= 0 {
		return nil
	}
	var out []time.Duration
	for t := (main.t0 + step - 1) / step * step; t <= main.t1; t += step {
		out = append(out, t)
	}
	return out
}

type svgRect struct {
	X, Y, W, H float64
	Fill       string
	Class      string
	Title      string
	Member     string
	Data       template.HTMLAttr
	// Count is how many ownerships a merged bar stands for (0: one, not merged).
	Count int
}

type svgText struct {
	X, Y   float64
	Text   string
	Class  string
	Anchor string
}

type svgLine struct {
	X1, Y1, X2, Y2 float64
	Class          string
	Title          string
}

type svgMark struct {
	X, Y    float64
	Event   int64
	Checker string
	Title   string
}

type svgRow struct {
	TP    string
	Y     float64
	Label svgText
	Rects []svgRect
}

type legend struct {
	Member string
	Kind   string
	Color  string
	Cycle  int
}

type verdictRow struct {
	check.Verdict
	Status string
	// More counts violations beyond those listed.
	More int
}

type pauseRow struct {
	Protocol          string
	Partition, Member check.Stats
}

type view struct {
	Report
	Summary   string
	Status    string
	Verdicts  []verdictRow
	Legend    []legend
	SVGHeight float64
	Segments  []svgRect
	Texts     []svgText
	Lines     []svgLine
	Faults    []svgRect
	Marks     []svgMark
	Rows      []svgRow
	Events    []eventRow
	Dropped   int
	Pauses    []pauseRow
	// Merged ownerships are drawn as MergedBars grey bars.
	Merged, MergedBars int

	cited           map[int64][]string
	failed, skipped int
}

// maxViolationsListed bounds the violations the verdicts table lists per checker (verdicts.json
// has them all); the timeline marks the events of those listed.
const maxViolationsListed = 50

// WriteReport writes the HTML report of r to w.
func WriteReport(w io.Writer, r Report) error {
	v := newView(r)
	d := newDigest(v.cited, r.Ownerships == nil)
	for i := range r.Events {
		d.add(&r.Events[i])
	}
	return v.render(w, d)
}

// WriteReportFrom writes the HTML report of r with its events read from history (a history.jsonl)
// instead of r.Events. It holds only what the page shows (the events that shape ownership, the
// listed and the cited ones), and decodes only the payloads it reads, so a run of millions of
// events renders in seconds and bounded memory. A history whose last line is cut off marks the
// report truncated. An error reading the history is a *HistoryError, returned before anything is
// written.
func WriteReportFrom(w io.Writer, r Report, jsonl io.Reader) error {
	v := newView(r)
	d := newDigest(v.cited, r.Ownerships == nil)
	rd := history.NewReader(jsonl, history.DecodeIf(d.needsValue))
	for {
		e, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return &HistoryError{Err: err}
		}
		d.add(&e)
	}
	if rd.Truncated() != nil {
		v.Truncated = true
	}
	return v.render(w, d)
}

// HistoryError is the error WriteReportFrom met reading the history (a corrupt line, an I/O
// error), as opposed to one writing the page.
type HistoryError struct{ Err error }

func (e *HistoryError) Error() string { return e.Err.Error() }
func (e *HistoryError) Unwrap() error { return e.Err }

// newView starts the page of r: its verdicts, and the events they cite.
func newView(r Report) *view {
	v := &view{Report: r, cited: map[int64][]string{}}
	for _, vd := range r.Verdicts {
		row := verdictRow{Verdict: vd, Status: "holds"}
		switch {
		case vd.Skipped != "":
			row.Status = "skipped"
			v.skipped++
		case !vd.Holds:
			row.Status = "violated"
			v.failed++
		}
		if len(vd.Violations) > maxViolationsListed {
			row.Violations = vd.Violations[:maxViolationsListed]
			row.More = len(vd.Violations) - maxViolationsListed
		}
		for _, vi := range row.Violations {
			for _, i := range vi.EventIndexes {
				if by := v.cited[i]; len(by) == 0 || by[len(by)-1] != vd.Name {
					v.cited[i] = append(by, vd.Name)
				}
			}
		}
		v.Verdicts = append(v.Verdicts, row)
	}
	v.Status = "holds"
	if v.failed > 0 {
		v.Status = "violated"
	}
	return v
}

// render lays out the timeline of the digested history and writes the page.
func (v *view) render(w io.Writer, d *digest) error {
	r := v.Report
	d.finish()
	owns := r.Ownerships
	if owns == nil {
		// The checkers' facts over the events they depend on: check.Ownerships of the whole history.
		owns = check.OwnershipsUntil(d.owning, d.end)
		d.owning = nil
	}
	end := d.end
	phases := d.phases
	origin, teardown := time.Duration(-1), time.Duration(-1)
	for _, p := range phases {
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
	v.Summary = fmt.Sprintf("%d checkers: %d hold, %d violated, %d skipped; %d events", len(r.Verdicts), len(r.Verdicts)-v.failed-v.skipped, v.failed, v.skipped, d.n)

	// Rows: the plan's partitions and every partition someone owned, sorted.
	rowOf := map[history.TP]int{}
	var tps []history.TP
	for _, tp := range r.Partitions {
		if _, ok := rowOf[tp]; !ok {
			rowOf[tp] = 0
			tps = append(tps, tp)
		}
	}
	for _, o := range owns {
		if _, ok := rowOf[o.Partition]; !ok {
			rowOf[o.Partition] = 0
			tps = append(tps, o.Partition)
		}
	}
	slices.SortFunc(tps, func(a, b history.TP) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	left := labelWidth
	for i, tp := range tps {
		rowOf[tp] = i
		left = max(left, 6.5*float64(len(tp.String()))+12)
	}
	left = min(left, chartWidth/3)
	sc := newScale(left, origin, teardown, end)
	colors, order := memberColors(r.Run.Members, owns)
	v.Legend = order

	faults := d.faults
	lanes := laneOf(faults)
	nLanes := 0
	for _, l := range lanes {
		nLanes = max(nLanes, l+1)
	}
	faultTop := axisHeight
	markY := faultTop + laneHeight*float64(nLanes) + 2
	rowsTop := markY + laneHeight + 4
	v.SVGHeight = rowsTop + rowHeight*float64(len(tps)) + 8

	// Compressed stretches and the axis.
	for _, g := range sc.segs {
		if !g.compressed {
			continue
		}
		v.Segments = append(v.Segments, svgRect{X: g.x0, Y: axisHeight - 14, W: g.x1 - g.x0, H: v.SVGHeight - axisHeight + 14, Class: "squeezed",
			Title: fmt.Sprintf("%s, from %s to %s, drawn compressed", g.label, roundDur(g.t0), roundDur(g.t1))})
		v.Texts = append(v.Texts, svgText{X: (g.x0 + g.x1) / 2, Y: 12, Text: g.label, Class: "squeezedlabel", Anchor: "middle"})
	}
	for _, t := range sc.ticks() {
		x := sc.x(t)
		v.Lines = append(v.Lines, svgLine{X1: x, Y1: axisHeight - 4, X2: x, Y2: v.SVGHeight, Class: "tick"})
		v.Texts = append(v.Texts, svgText{X: x, Y: axisHeight - 6, Text: roundDur(t), Class: "ticklabel", Anchor: "middle"})
	}
	for i, p := range phases {
		x := sc.x(p.Start)
		v.Lines = append(v.Lines, svgLine{X1: x, Y1: faultTop, X2: x, Y2: v.SVGHeight, Class: "phase", Title: fmt.Sprintf("phase %s at %s (event %d)", p.Label, roundDur(p.Start), p.Event)})
		if p.Label == history.PhaseSetup || p.Label == history.PhaseTeardown && len(sc.segs) > 1 && sc.segs[len(sc.segs)-1].compressed {
			continue // named by its compressed stretch
		}
		label := svgText{X: x + 2, Y: 11 + 10*float64(i%2), Text: p.Label, Class: "phaselabel"}
		if x > chartWidth-60 {
			label.X, label.Anchor = x-2, "end"
		}
		v.Texts = append(v.Texts, label)
	}
	v.Texts = append(v.Texts,
		svgText{X: left - 6, Y: markY + 11, Text: "violations", Class: "lanelabel", Anchor: "end"})
	if nLanes > 0 {
		v.Texts = append(v.Texts, svgText{X: left - 6, Y: faultTop + 11, Text: "faults", Class: "lanelabel", Anchor: "end"})
	}

	// Faults: a labelled bar in its lane and a band across the partition rows.
	for i, s := range faults {
		x0, x1 := sc.x(s.Start), sc.x(s.End)
		stop := "never stopped"
		if s.StopEvent >= 0 {
			stop = fmt.Sprintf("healed at %s (event %d)", roundDur(s.End), s.StopEvent)
		}
		title := fmt.Sprintf("fault %s from %s (event %d), %s", s.Label, roundDur(s.Start), s.Event, stop)
		if s.Detail != "" {
			title += ": " + strings.TrimPrefix(s.Detail, "; ")
		}
		data := template.HTMLAttr(fmt.Sprintf(`data-event="%d" data-stop-event="%d"`, s.Event, s.StopEvent))
		y := faultTop + laneHeight*float64(lanes[i])
		v.Faults = append(v.Faults,
			svgRect{X: x0, Y: y + 1, W: max(2, x1-x0), H: laneHeight - 2, Class: "fault", Title: title, Data: data},
			svgRect{X: x0, Y: rowsTop, W: max(2, x1-x0), H: rowHeight * float64(len(tps)), Class: "faultband", Title: title})
		v.Texts = append(v.Texts, svgText{X: x0 + 2, Y: y + laneHeight - 3, Text: s.Label, Class: "faultlabel"})
	}

	// Violation marks: one per cited event, linked to its row in the events table.
	times := d.times
	for _, vd := range v.Verdicts {
		for _, vi := range vd.Violations {
			for _, i := range vi.EventIndexes {
				t, ok := times[i]
				if !ok {
					continue
				}
				v.Marks = append(v.Marks, svgMark{X: sc.x(t), Y: markY, Event: i, Checker: vd.Name, Title: fmt.Sprintf("%s: %s (event %d)", vd.Name, vi.Message, i)})
			}
		}
	}

	// Ownership rows.
	v.Rows = make([]svgRow, len(tps))
	for i, tp := range tps {
		y := rowsTop + rowHeight*float64(i)
		v.Rows[i] = svgRow{TP: tp.String(), Y: y, Label: svgText{X: left - 6, Y: y + 13, Text: tp.String(), Class: "tp", Anchor: "end"}}
	}
	for _, o := range owns {
		row := &v.Rows[rowOf[o.Partition]]
		x0, x1 := sc.x(o.Start), sc.x(o.End)
		how := "revoked"
		switch {
		case o.Open():
			how = "still owned at the end"
		case o.EndF != history.FRevoked:
			how = o.EndF
		}
		end := fmt.Sprintf("to %s (event %d), %s", roundDur(o.End), o.EndEvent, how)
		if o.Open() {
			end = fmt.Sprintf("to %s, %s", roundDur(o.End), how)
		}
		c := colors[o.Member]
		cls := "own"
		if o.Lost {
			cls += " lost"
		}
		if c.Cycle > 0 {
			cls += " again"
		}
		rect := svgRect{
			X: x0, Y: row.Y + 2, W: x1 - x0, H: rowHeight - 4, Fill: c.Color, Class: cls, Member: o.Member,
			Title: fmt.Sprintf("%s owns %s at epoch %d from %s (event %d) %s", o.Member, o.Partition, o.Epoch, roundDur(o.Start), o.StartEvent, end),
			Data:  template.HTMLAttr(fmt.Sprintf(`data-start-event="%d" data-end-event="%d"`, o.StartEvent, o.EndEvent)),
		}
		// Ownerships narrower than a pixel next to one another are drawn as one grey bar: a run
		// with a hundred thousand short ownerships stays a page a browser opens.
		if n := len(row.Rects); rect.W < 1 && n > 0 && row.Rects[n-1].W < 1.5 && rect.X-(row.Rects[n-1].X+row.Rects[n-1].W) < 1 {
			last := &row.Rects[n-1]
			if last.Count == 0 {
				last.Class, last.Fill, last.Member, last.Count = "own many", "#777", "", 1
			}
			last.Count++
			last.Data = template.HTMLAttr(fmt.Sprintf(`data-count="%d"`, last.Count))
			last.W = max(last.W, x1-last.X)
			last.Title = fmt.Sprintf("%d short ownerships of %s, the last from event %d (history.jsonl has each)", last.Count, o.Partition, o.StartEvent)
			continue
		}
		rect.W = max(1, rect.W)
		row.Rects = append(row.Rects, rect)
	}
	for _, row := range v.Rows {
		for _, rc := range row.Rects {
			if rc.Count > 0 {
				v.Merged += rc.Count
				v.MergedBars++
			}
		}
	}

	if r.Cost != nil {
		for _, p := range sortedKeys(r.Cost.Protocols) {
			pc := r.Cost.Protocols[p]
			v.Pauses = append(v.Pauses, pauseRow{Protocol: p, Partition: pc.PartitionStops, Member: pc.MemberStops})
		}
	}
	v.Events, v.Dropped = d.rows, d.dropped
	return reportTemplate.Execute(w, v)
}

// laneOf gives each span a lane so that overlapping spans never share one.
func laneOf(spans []Span) []int {
	lanes := make([]int, len(spans))
	var ends []time.Duration
	for i, s := range spans {
		l := slices.IndexFunc(ends, func(e time.Duration) bool { return e <= s.Start })
		if l < 0 {
			l = len(ends)
			ends = append(ends, 0)
		}
		ends[l] = max(s.End, s.Start+1)
		lanes[i] = l
	}
	return lanes
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func eventValue(e history.Event) string {
	if e.Value == nil {
		return ""
	}
	b, err := json.Marshal(e.Value)
	if err != nil {
		return fmt.Sprintf("%+v", e.Value)
	}
	s := string(b)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// pageScript records every script error into the page (the data-script-errors attribute and the
// #script-errors block), so that a test reading the DOM, or a reader, sees one.
const pageScript = `(function(){
var n=0;
function record(msg){
  n++;
  document.documentElement.setAttribute('data-script-errors',String(n));
  var p=document.getElementById('script-errors');
  if(p){p.hidden=false;p.textContent+=msg+'\n';}
  else{window.addEventListener('DOMContentLoaded',function(){record(msg);n--;});}
}
window.gqRecordError=record;
window.addEventListener('error',function(e){record('error: '+e.message+' ('+(e.filename||'page')+':'+e.lineno+')');});
window.addEventListener('unhandledrejection',function(e){record('unhandled rejection: '+e.reason);});
})();`

// behaviour highlights one member's bars when its legend entry or a bar is hovered, opens the
// event of a clicked bar, and checks that every violation link leads to an event row.
const behaviour = `(function(){
var svg=document.querySelector('svg.timeline');
function highlight(m){
  if(!svg)return;
  svg.classList.toggle('focus',!!m);
  svg.querySelectorAll('rect.own').forEach(function(r){r.classList.toggle('hl',r.getAttribute('data-member')===m);});
}
document.querySelectorAll('[data-member]').forEach(function(el){
  el.addEventListener('mouseenter',function(){highlight(el.getAttribute('data-member'));});
  el.addEventListener('mouseleave',function(){highlight(null);});
});
document.querySelectorAll('rect.own[data-start-event]').forEach(function(r){
  r.addEventListener('click',function(){location.hash='#e'+r.getAttribute('data-start-event');});
});
var broken=[];
document.querySelectorAll('a[href^="#e"]').forEach(function(a){
  if(!document.getElementById(a.getAttribute('href').slice(1)))broken.push(a.getAttribute('href'));
});
if(broken.length)window.gqRecordError('violation links without an event row: '+broken.join(' '));
document.documentElement.setAttribute('data-links-checked',String(document.querySelectorAll('a[href^="#e"]').length));
document.documentElement.setAttribute('data-ready','1');
})();`

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"value":      eventValue,
	"dur":        roundDur,
	"f1":         func(x float64) string { return fmt.Sprintf("%.1f", x) },
	"css":        func(s string) template.CSS { return template.CSS(s) }, // colours of the fixed palette only
	"pageScript": func() template.JS { return template.JS(pageScript) },  // the page's own constant scripts
	"behaviour":  func() template.JS { return template.JS(behaviour) },
	"join":       strings.Join,
}).Parse(`<!DOCTYPE html>
<html lang="en" data-script-errors="0"><head><meta charset="utf-8"><title>{{.Title}}</title>
<script>{{pageScript}}</script>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}code{background:#f3f3f3;padding:.1em .3em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .5em;vertical-align:top;text-align:left}
span.holds{color:#17803d}span.violated{color:#b42318;font-weight:bold}span.skipped{color:#8a6d00}li.violation{color:#b42318}
.status-violated h1{color:#b42318}
svg.timeline{border:1px solid #ccc;background:#fff;display:block}
.squeezed{fill:#eee}.squeezedlabel{font-size:11px;fill:#555;font-style:italic}
.tick{stroke:#eee}.ticklabel{font-size:10px;fill:#666}
.phase{stroke:#555;stroke-width:1}.phaselabel{font-size:10px;fill:#333}
.fault{fill:#7a7a7a;fill-opacity:.55}.faultband{fill:#7a7a7a;fill-opacity:.10}.faultlabel{font-size:10px;fill:#fff;pointer-events:none}
.lanelabel{font-size:10px;fill:#666}.tp{font-size:11px;fill:#333}
.own{stroke:#fff;stroke-width:.5;cursor:pointer}.own.lost{stroke:#b42318;stroke-width:2}.own.again{stroke:#222;stroke-dasharray:3 2}
.own.many{stroke:none}
svg.focus rect.own{opacity:.25}svg.focus rect.own.hl{opacity:1}
.vmark{fill:#b42318}
.swatch{display:inline-block;width:1em;height:1em;vertical-align:middle;margin:0 .3em 0 1em;border-radius:2px}
tr:target{background:#fff3c4}tr.cited td:first-child{border-left:3px solid #b42318}
#script-errors{color:#b42318;background:#fff0f0;padding:.5em}
</style></head><body class="status-{{.Status}}">
<h1>{{.Title}}</h1>
<p class="summary">{{.Summary}}{{if .Truncated}} — <strong>the history ends mid-line: the run was killed, and it is judged up to there</strong>{{end}}</p>
{{if .Run.Scenario}}<table class="run">
<tr><th>seed</th><td>{{.Run.Seed}}</td><th>scenario</th><td>{{.Run.Scenario}}</td><th>Kafka</th><td>{{.Run.Kafka}}</td><th>protocol</th><td>{{.Run.Protocol}}</td></tr>
{{if .Run.Dir}}<tr><th>run directory</th><td colspan="7"><code>{{.Run.Dir}}</code></td></tr>{{end}}
</table>{{end}}
{{if .Command}}<p>Rerun: <code>{{.Command}}</code></p>{{end}}
{{range .Notes}}<p class="note">note: {{.}}</p>
{{end}}
<h2>Verdicts</h2>
<table class="verdicts"><tr><th>checker</th><th>verdict</th><th>violations and notes</th></tr>
{{range .Verdicts}}<tr id="v-{{.Name}}" class="verdict {{.Status}}"><td>{{.Name}}</td><td><span class="{{.Status}}">{{.Status}}</span></td>
<td>{{if .Skipped}}{{.Skipped}}<br>{{end}}{{if .Violations}}<ol class="violations">{{range .Violations}}<li class="violation">{{.Message}} {{range .EventIndexes}}<a class="ev" href="#e{{.}}">#{{.}}</a> {{end}}</li>{{end}}</ol>{{end}}{{if .More}}<p>… and {{.More}} more in verdicts.json</p>{{end}}{{range .Notes}}<small>{{.}}</small><br>{{end}}</td></tr>
{{end}}</table>
<h2>Timeline</h2>
<p>One row per partition; a bar is one member owning it, from its assignment to where the checkers end it (revoked, lost, fenced, session expired, left); a red outline marks an ownership that ended without a clean revocation. Grey bars on top are faults (their band runs across the rows), red marks link to the events a violation cites, vertical lines start phases. Hover for details; click a bar for its event.</p>
{{if .Merged}}<p class="aggregated">{{.Merged}} ownerships narrower than a pixel, next to one another, are drawn as {{.MergedBars}} grey bars, each saying how many it stands for; the violation marks and the events table still show every event a violation cites, and history.jsonl has every ownership.</p>
{{end}}<p class="legend">{{range .Legend}}<span class="member" data-member="{{.Member}}"><span class="swatch" style="background:{{css .Color}}"></span>{{.Member}}{{if .Kind}} <small>({{.Kind}})</small>{{end}}</span>{{end}}</p>
<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="1200" height="{{f1 .SVGHeight}}" viewBox="0 0 1200 {{f1 .SVGHeight}}">
{{range .Segments}}<rect class="{{.Class}}" x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f1 .W}}" height="{{f1 .H}}"><title>{{.Title}}</title></rect>
{{end}}{{range .Lines}}<line class="{{.Class}}" x1="{{f1 .X1}}" y1="{{f1 .Y1}}" x2="{{f1 .X2}}" y2="{{f1 .Y2}}">{{if .Title}}<title>{{.Title}}</title>{{end}}</line>
{{end}}<g class="faults">{{range .Faults}}<rect class="{{.Class}}" x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f1 .W}}" height="{{f1 .H}}" {{.Data}}><title>{{.Title}}</title></rect>
{{end}}</g>
{{range .Rows}}<g class="row" data-tp="{{.TP}}"><text x="{{f1 .Label.X}}" y="{{f1 .Label.Y}}" class="{{.Label.Class}}" text-anchor="end">{{.Label.Text}}</text>
{{range .Rects}}<rect class="{{.Class}}" x="{{f1 .X}}" y="{{f1 .Y}}" width="{{f1 .W}}" height="{{f1 .H}}"{{if .Fill}} style="fill:{{css .Fill}}"{{end}}{{if .Member}} data-member="{{.Member}}"{{end}} {{.Data}}><title>{{.Title}}</title></rect>
{{end}}</g>
{{end}}{{range .Texts}}<text x="{{f1 .X}}" y="{{f1 .Y}}" class="{{.Class}}"{{if .Anchor}} text-anchor="{{.Anchor}}"{{end}}>{{.Text}}</text>
{{end}}<g class="marks">{{range .Marks}}<a class="vmark" href="#e{{.Event}}" data-checker="{{.Checker}}"><path class="vmark" d="M{{f1 .X}} {{f1 .Y}}l-5 0l5 11l5 -11z"><title>{{.Title}}</title></path></a>
{{end}}</g>
</svg>
{{if .Pauses}}<h2>Rebalance pauses</h2>
<table class="pauses"><tr><th>protocol</th><th>partition pauses</th><th>p50</th><th>p99</th><th>max</th><th>member pauses</th><th>max</th></tr>
{{range .Pauses}}<tr><td>{{.Protocol}}</td><td>{{.Partition.Count}}</td><td>{{dur .Partition.P50}}</td><td>{{dur .Partition.P99}}</td><td>{{dur .Partition.Max}}</td><td>{{.Member.Count}}</td><td>{{dur .Member.Max}}</td></tr>
{{end}}</table>{{end}}
<h2>Events</h2>
<p>Ownership, membership, faults, phases, failed calls and every event a violation cites{{if .Dropped}} ({{.Dropped}} more not listed: history.jsonl has them){{end}}.</p>
<table class="events"><tr><th>#</th><th>time</th><th>process</th><th>type</th><th>f</th><th>value</th><th>why</th><th>cited by</th></tr>
{{range .Events}}<tr id="e{{.Index}}"{{if .CitedBy}} class="cited"{{end}}><td>{{.Index}}</td><td>{{.Time}}</td><td>{{.Process}}</td><td>{{.Type}}</td><td>{{.F}}</td><td>{{value .Event}}</td><td>{{.Why}}</td><td>{{range .CitedBy}}<a href="#v-{{.}}">{{.}}</a> {{end}}</td></tr>
{{end}}</table>
<pre id="script-errors" hidden></pre>
<script>{{behaviour}}</script>
</body></html>
`))
