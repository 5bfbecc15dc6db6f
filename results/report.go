package results

import (
	"fmt"
	"hash/fnv"
	"html/template"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// Report is what one HTML report shows.
type Report struct {
	Title string
	// Command reruns the run (shown verbatim).
	Command  string
	Events   []history.Event
	Verdicts []check.Verdict
	// Truncated is set when the history ended mid-line (a killed run).
	Truncated bool
}

// Ownership is one member owning one partition from Start to End. Lost
// says the ownership ended without a clean revocation; Open that it had not
// ended when the history did.
type Ownership struct {
	Partition  history.TP
	Member     string
	Epoch      int32
	Start, End time.Duration
	StartEvent int64
	EndEvent   int64 // -1 while open
	Lost, Open bool
}

// Ownerships derives every ownership interval from the assigned, revoked
// and lost events of a history, sorted by partition then start.
func Ownerships(events []history.Event) []Ownership {
	type key struct {
		member string
		tp     history.TP
	}
	open := map[key]int{}
	var out []Ownership
	var last time.Duration
	for _, e := range events {
		last = max(last, e.Time)
		switch e.F {
		case history.FAssigned, history.FRevoked, history.FLost:
		default:
			continue
		}
		a, err := history.ValueAs[history.Assignment](e)
		if err != nil {
			continue
		}
		for _, tp := range a.Partitions {
			k := key{a.Member, tp}
			if e.F == history.FAssigned {
				if _, ok := open[k]; ok {
					continue // already owned: an epoch bump keeps the ownership
				}
				open[k] = len(out)
				out = append(out, Ownership{Partition: tp, Member: a.Member, Epoch: a.Epoch, Start: e.Time, StartEvent: e.Index, EndEvent: -1})
				continue
			}
			if i, ok := open[k]; ok {
				out[i].End, out[i].EndEvent, out[i].Lost = e.Time, e.Index, e.F == history.FLost
				delete(open, k)
			}
		}
	}
	for _, i := range open {
		out[i].End, out[i].Open = last, true
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Partition != b.Partition {
			if a.Partition.Topic != b.Partition.Topic {
				return a.Partition.Topic < b.Partition.Topic
			}
			return a.Partition.Partition < b.Partition.Partition
		}
		return a.Start < b.Start
	})
	return out
}

// Span is a fault or a phase drawn across the timeline.
type Span struct {
	Label      string
	Start, End time.Duration
	Event      int64
}

// faultSpans pairs each fault-start with the next fault-stop of the same
// fault description; a fault never stopped lasts to the end.
func faultSpans(events []history.Event, end time.Duration) []Span {
	var out []Span
	open := map[string][]int{}
	for _, e := range events {
		if e.F != history.FFaultStart && e.F != history.FFaultStop || e.Type == history.Invoke || e.Type == history.Fail {
			continue // a fault recorded as not applied (fail) never was in force
		}
		f, err := history.ValueAs[history.Fault](e)
		if err != nil {
			continue
		}
		label := strings.TrimSpace(f.What + " " + strings.Join(f.Target, ","))
		if e.F == history.FFaultStart {
			open[label] = append(open[label], len(out))
			out = append(out, Span{Label: label, Start: e.Time, End: end, Event: e.Index})
		} else if q := open[label]; len(q) > 0 {
			out[q[0]].End = e.Time
			open[label] = q[1:]
		}
	}
	return out
}

func phaseMarks(events []history.Event) []Span {
	var out []Span
	for _, e := range events {
		if e.F != history.FPhase {
			continue
		}
		p, err := history.ValueAs[history.Phase](e)
		if err != nil {
			continue
		}
		out = append(out, Span{Label: p.Name, Start: e.Time, Event: e.Index})
	}
	return out
}

// memberColor gives each member a stable hue. It is CSS the report makes
// itself from a hash, never text from the run, so it is marked safe.
func memberColor(member string) template.CSS {
	h := fnv.New32a()
	h.Write([]byte(member))
	return template.CSS(fmt.Sprintf("hsl(%d,62%%,52%%)", h.Sum32()%360))
}

// listedEvents are the events the report's table shows: what changes
// ownership or membership, faults, phases, failed calls, and every event a
// violation cites.
func listedEvents(events []history.Event, verdicts []check.Verdict, limit int) (rows []history.Event, dropped int) {
	cited := map[int64]bool{}
	for _, v := range verdicts {
		for _, vi := range v.Violations {
			for _, i := range vi.EventIndexes {
				cited[i] = true
			}
		}
	}
	for _, e := range events {
		interesting := cited[e.Index] || e.Type == history.Fail
		switch e.F {
		case history.FAssigned, history.FRevoked, history.FLost, history.FFenced, history.FLeft,
			history.FSessionExpired, history.FFaultStart, history.FFaultStop, history.FPhase, history.FJoin, history.FSync:
			interesting = interesting || e.Type != history.Invoke
		}
		if !interesting {
			continue
		}
		if len(rows) >= limit && !cited[e.Index] {
			dropped++
			continue
		}
		rows = append(rows, e)
	}
	return rows, dropped
}

const (
	chartWidth = 1100.0
	labelWidth = 130.0
	rowHeight  = 18.0
)

type svgRect struct {
	X, Y, W, H float64
	Fill       template.CSS
	Title      string
	Class      string
}

type svgText struct {
	X, Y  float64
	Text  string
	Class string
}

type view struct {
	Report
	Summary   string
	SVGHeight float64
	Rects     []svgRect
	Texts     []svgText
	Rows      []history.Event
	Dropped   int
	Members   []legend
}

type legend struct {
	Member string
	Color  template.CSS
}

// WriteReport writes the HTML report of r to w.
func WriteReport(w io.Writer, r Report) error {
	var end time.Duration
	for _, e := range r.Events {
		end = max(end, e.Time)
	}
	if end <= 0 {
		end = time.Second
	}
	x := func(t time.Duration) float64 {
		return labelWidth + (chartWidth-labelWidth)*float64(t)/float64(end)
	}
	v := view{Report: r}
	owns := Ownerships(r.Events)
	var parts []history.TP
	row := map[history.TP]int{}
	members := map[string]bool{}
	for _, o := range owns {
		if _, ok := row[o.Partition]; !ok {
			row[o.Partition] = len(parts)
			parts = append(parts, o.Partition)
		}
		members[o.Member] = true
	}
	top := 28.0
	v.SVGHeight = top + rowHeight*float64(len(parts)) + 20
	for _, s := range faultSpans(r.Events, end) {
		v.Rects = append(v.Rects, svgRect{X: x(s.Start), Y: 0, W: max(1, x(s.End)-x(s.Start)), H: v.SVGHeight, Class: "fault",
			Title: fmt.Sprintf("fault %s from %s to %s (event %d)", s.Label, s.Start, s.End, s.Event)})
		v.Texts = append(v.Texts, svgText{X: x(s.Start) + 2, Y: v.SVGHeight - 4, Text: s.Label, Class: "faultlabel"})
	}
	for i, p := range phaseMarks(r.Events) {
		v.Rects = append(v.Rects, svgRect{X: x(p.Start), Y: 0, W: 1, H: v.SVGHeight, Class: "phase", Title: "phase " + p.Label})
		// Short phases sit close together: stagger their labels on two lines.
		v.Texts = append(v.Texts, svgText{X: x(p.Start) + 2, Y: 10 + 10*float64(i%2), Text: p.Label, Class: "phaselabel"})
	}
	for i, tp := range parts {
		v.Texts = append(v.Texts, svgText{X: 4, Y: top + rowHeight*float64(i) + 13, Text: tp.String(), Class: "tp"})
	}
	for _, o := range owns {
		how := "revoked"
		switch {
		case o.Open:
			how = "still owned at the end"
		case o.Lost:
			how = "lost"
		}
		cls := "own"
		if o.Lost {
			cls = "own lost"
		}
		v.Rects = append(v.Rects, svgRect{
			X: x(o.Start), Y: top + rowHeight*float64(row[o.Partition]) + 2, W: max(1, x(o.End)-x(o.Start)), H: rowHeight - 4,
			Fill: memberColor(o.Member), Class: cls,
			Title: fmt.Sprintf("%s owns %s at epoch %d from %s (event %d) to %s, %s", o.Member, o.Partition, o.Epoch, o.Start, o.StartEvent, o.End, how),
		})
	}
	for _, m := range slices.Sorted(func(yield func(string) bool) {
		for m := range members {
			if !yield(m) {
				return
			}
		}
	}) {
		v.Members = append(v.Members, legend{m, memberColor(m)})
	}
	failed, skipped := 0, 0
	for _, vd := range r.Verdicts {
		if vd.Skipped != "" {
			skipped++
		} else if !vd.Holds {
			failed++
		}
	}
	v.Summary = fmt.Sprintf("%d checkers: %d hold, %d violated, %d skipped; %d events", len(r.Verdicts), len(r.Verdicts)-failed-skipped, failed, skipped, len(r.Events))
	v.Rows, v.Dropped = listedEvents(r.Events, r.Verdicts, 5000)
	return reportTemplate.Execute(w, v)
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"value": func(e history.Event) string {
		s := fmt.Sprintf("%+v", e.Value)
		if len(s) > 300 {
			s = s[:300] + "…"
		}
		return s
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}code{background:#f3f3f3;padding:.1em .3em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .5em;vertical-align:top;text-align:left}
.holds{color:#17803d}.violated{color:#b42318;font-weight:bold}.skipped{color:#8a6d00}
svg{border:1px solid #ccc;background:#fff}
.fault{fill:#ff4d4d;fill-opacity:.12}.phase{fill:#555}.own.lost{stroke:#b42318;stroke-width:2}
.tp,.faultlabel,.phaselabel{font-size:11px;fill:#333}.faultlabel{fill:#b42318}
.swatch{display:inline-block;width:1em;height:1em;vertical-align:middle;margin:0 .3em 0 1em}
tr:target{background:#fff3c4}
</style></head><body>
<h1>{{.Title}}</h1>
<p>{{.Summary}}{{if .Truncated}} — <strong>the history ends mid-line: the run was killed, and it is judged up to there</strong>{{end}}</p>
{{if .Command}}<p>Rerun: <code>{{.Command}}</code></p>{{end}}
<h2>Verdicts</h2>
<table><tr><th>checker</th><th>verdict</th><th>violations and notes</th></tr>
{{range .Verdicts}}<tr><td>{{.Name}}</td>
<td>{{if .Skipped}}<span class="skipped">skipped</span>{{else if .Holds}}<span class="holds">holds</span>{{else}}<span class="violated">violated</span>{{end}}</td>
<td>{{if .Skipped}}{{.Skipped}}<br>{{end}}{{range .Violations}}{{.Message}} {{range .EventIndexes}}<a href="#e{{.}}">#{{.}}</a> {{end}}<br>{{end}}{{range .Notes}}<small>{{.}}</small><br>{{end}}</td></tr>
{{end}}</table>
<h2>Ownership</h2>
<p>One row per partition; a bar is one member owning it (hover for epoch and events), red outline when it was lost; red bands are faults; grey lines start phases.
{{range .Members}}<span class="swatch" style="background:{{.Color}}"></span>{{.Member}}{{end}}</p>
<svg xmlns="http://www.w3.org/2000/svg" width="1100" height="{{.SVGHeight}}">
{{range .Rects}}<rect x="{{printf "%.1f" .X}}" y="{{printf "%.1f" .Y}}" width="{{printf "%.1f" .W}}" height="{{printf "%.1f" .H}}" class="{{.Class}}"{{if .Fill}} fill="{{.Fill}}"{{end}}><title>{{.Title}}</title></rect>
{{end}}{{range .Texts}}<text x="{{printf "%.1f" .X}}" y="{{printf "%.1f" .Y}}" class="{{.Class}}">{{.Text}}</text>
{{end}}</svg>
<h2>Events</h2>
<p>Ownership, membership, faults, phases, failed calls and every event a violation cites{{if .Dropped}} ({{.Dropped}} more not listed){{end}}.</p>
<table><tr><th>#</th><th>time</th><th>process</th><th>type</th><th>f</th><th>value</th><th>why</th></tr>
{{range .Rows}}<tr id="e{{.Index}}"><td>{{.Index}}</td><td>{{.Time}}</td><td>{{.Process}}</td><td>{{.Type}}</td><td>{{.F}}</td><td>{{value .}}</td><td>{{.Why}}</td></tr>
{{end}}</table>
</body></html>
`))
