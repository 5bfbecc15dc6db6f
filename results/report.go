package results

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
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
	// Stopped says where a run that did not reach its end stopped (check.Report's Stopped): with
	// no violation, the page says the run was cut short, never that it holds.
	Stopped string
	// Partitions are the plan's partitions: each gets a timeline row even if nobody owned it.
	Partitions []history.TP
	// Ownerships are the ownership intervals as the checkers see them; nil means derive them from
	// the events as check.Ownerships does (the same pass the checkers make).
	Ownerships []check.Ownership
	// Share is the plan's share settings (nil: no share members); the share lanes count archives at
	// its delivery count limit.
	Share *history.SharePlan
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

// ProtocolMix names the mix of the members' protocols: "classic", "consumer", "share" or "mixed".
func ProtocolMix(members []MemberInfo) string {
	var classic, consumer, share bool
	for _, m := range members {
		switch m.Protocol {
		case history.ProtocolConsumer:
			consumer = true
		case history.ProtocolShare:
			share = true
		default:
			classic = true
		}
	}
	switch {
	case classic && consumer, share && (classic || consumer):
		return "mixed"
	case consumer:
		return history.ProtocolConsumer
	case share:
		return history.ProtocolShare
	case classic:
		return history.ProtocolClassic
	}
	return ""
}

// Span is a fault or a phase drawn across the timeline.
type Span struct {
	Label string
	// What and Target are the fault's (empty for a phase).
	What   string
	Target []string
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
	// stalls are the times the harness process itself did not run (history.FStall), from the
	// stall's start to its end; Event and StopEvent are both the stall's event, recorded at its end.
	stalls []Span
	// owning holds the events check.ShapesOwnership keeps, when the ownerships are derived here
	// (the report gives none); nil otherwise.
	owning  []history.Event
	keepOwn bool
	citedAt map[int64]citedEvent // the cited events: when, and what they concern
	rows    []eventRow
	dropped int
	lanes   lanes
	share   shareLanes
}

// citedEvent is an event a violation cites, placed: its time, and the member and partitions its
// payload names.
type citedEvent struct {
	index  int64
	t      time.Duration
	member string
	tps    []history.TP
}

func newDigest(cited map[int64][]string, keepOwn bool) *digest {
	return &digest{cited: cited, first: -1, openFault: map[string]int{}, keepOwn: keepOwn, citedAt: map[int64]citedEvent{}}
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
// restarting it included), faults (a flapping link's cuts and restores included), phases and the
// harness's own stalls (not the calls in flight).
func listable(e *history.Event) bool {
	switch e.F {
	case history.FAssigned, history.FRevoked, history.FLost, history.FFenced, history.FLeft,
		history.FSessionExpired, history.FStopped, history.FRestart,
		history.FFaultStart, history.FFaultStop, history.FFaultEdge, history.FPhase, history.FStall, history.FJoin, history.FSync:
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
		m, tps := concerns(e)
		d.citedAt[e.Index] = citedEvent{index: e.Index, t: e.Time, member: m, tps: tps}
	}
	d.lanes.add(e)
	d.share.add(e, &d.lanes)
	if isCited || e.Type == history.Fail || listable(e) {
		// The events table: at most maxEventRow of them besides every cited one.
		if len(d.rows) >= maxEventRow && !isCited {
			d.dropped++
		} else {
			d.rows = append(d.rows, eventRow{Event: *e, CitedBy: by})
		}
	}
	switch e.F {
	case history.FStall:
		if st, err := history.ValueAs[history.Stall](*e); err == nil && st.To > st.From {
			d.stalls = append(d.stalls, Span{Label: "harness stalled " + roundDur(st.Len()), What: history.FStall,
				Start: st.From, End: st.To, Event: e.Index, StopEvent: e.Index})
		}
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
			d.faults = append(d.faults, Span{Label: label, What: f.What, Target: f.Target, Detail: f.Effect, Start: e.Time, End: -1, Event: e.Index, StopEvent: -1})
			return
		}
		if i, ok := d.openFault[e.Process]; ok {
			s := &d.faults[i]
			s.End, s.StopEvent = e.Time, e.Index
			if f.NoEffect != "" {
				s.Detail = joinDetail(s.Detail, "no observed effect: "+f.NoEffect)
			} else if f.Effect != "" {
				s.Detail = joinDetail(s.Detail, f.Effect)
			}
			delete(d.openFault, e.Process)
		}
	}
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
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
// (their planned order), then any other member in the order its first ownership appears, then the
// others given (members that spoke in the group but owned nothing). Past
// the palette's size, colours repeat and the bars of the repeat get a dashed outline (Cycle > 0).
func memberColors(planned []MemberInfo, owns []check.Ownership, others []string) (map[string]legend, []legend) {
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
	for _, m := range others {
		add(m)
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
	Summary  string
	Status   string
	Banner   []bannerItem
	Verdicts []verdictRow
	Legend   []legend
	// Families are the fault families the run had, for the key.
	Families  []faultFamilyKey
	Timeline  template.HTML
	SVGHeight float64
	Faults    []faultRow
	Events    []eventRow
	Dropped   int
	Pauses    []pauseRow
	// Merged ownerships are drawn as MergedBars grey bars.
	Merged, MergedBars int
	// Failed counts the violated checkers.
	Failed int
	// DroppedMarks counts membership and coordinator glyphs left off past maxMarks a lane.
	DroppedMarks int
	// ShareLanes is the share partitions' key and counts (empty: no share calls).
	ShareLanes template.HTML

	cited           map[int64][]string
	failed, skipped int
}

type faultFamilyKey struct{ Class, Fill, Name string }

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
	// The violated checkers first, then the skipped, then those that hold, each in the checkers'
	// order.
	rank := map[string]int{"violated": 0, "skipped": 1, "holds": 2}
	slices.SortStableFunc(v.Verdicts, func(a, b verdictRow) int { return cmp.Compare(rank[a.Status], rank[b.Status]) })
	v.Status = "holds"
	switch {
	case v.failed > 0:
		v.Status = "violated"
	case r.Stopped != "":
		v.Status = "cut-short"
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
	v.Summary = fmt.Sprintf("%d checkers: %d hold, %d violated, %d skipped; %d events", len(r.Verdicts), len(r.Verdicts)-v.failed-v.skipped, v.failed, v.skipped, d.n)

	// Rows: the plan's partitions and every partition someone owned, sorted.
	seen := map[history.TP]bool{}
	var tps []history.TP
	for _, tp := range r.Partitions {
		if !seen[tp] {
			seen[tp] = true
			tps = append(tps, tp)
		}
	}
	for _, o := range owns {
		if !seen[o.Partition] {
			seen[o.Partition] = true
			tps = append(tps, o.Partition)
		}
	}
	tps = d.share.shareRowTPs(tps, seen)
	slices.SortFunc(tps, func(a, b history.TP) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	v.layoutTimeline(d, owns, tps)

	had := map[int]bool{}
	for _, s := range d.faults {
		fam := faultFamily(s.What)
		had[fam] = true
		target := strings.Join(s.Target, ",")
		v.Faults = append(v.Faults, faultRow{Span: s, Family: faultFamilies[fam].class, Target: target, Stopped: s.StopEvent >= 0})
	}
	for i, f := range faultFamilies {
		if had[i] {
			v.Families = append(v.Families, faultFamilyKey{Class: f.class, Fill: f.fill, Name: f.name})
		}
	}
	v.DroppedMarks = d.lanes.droppedMarks
	v.Failed = v.failed

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
	ks := slices.Sorted(maps.Keys(m))
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

// pageHead opens every page (report, trend, scorecard): the title, then
// pageScript, which sets the data-script-errors attribute it starts at 0,
// then the style rule the pages share. Each page's own rules follow it.
const pageHead = `<!DOCTYPE html>
<html lang="en" data-script-errors="0"><head><meta charset="utf-8"><title>{{.Title}}</title>
<script>{{pageScript}}</script>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
`

// pageBody closes every page's style with the rule of its #script-errors
// block and opens its body: the page's status as a class, then its title.
const pageBody = `#script-errors{color:#b42318;background:#fff0f0;padding:.5em}
</style></head><body class="status-{{.Status}}">
<h1>{{.Title}}</h1>
`

// pageFoot ends the trend and scorecard pages: the #script-errors block,
// then the mark that the page has loaded (data-ready).
const pageFoot = `<pre id="script-errors" hidden></pre>
<script>document.documentElement.setAttribute('data-ready','1');</script>
</body></html>
`
