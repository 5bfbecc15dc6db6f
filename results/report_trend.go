package results

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/groupquake/groupquake/harness/check"
)

// RunSummary is one run as the trend page shows it.
type RunSummary struct {
	Run RunInfo
	// Report is the link to the run's report.html, relative to the trend page.
	Report string
	// Err says why the run could not be read; the rest is then empty.
	Err string
	// Holds is false when some checker found a violation, or the run was cut short (Stopped).
	Holds bool
	// Stopped says where a run that did not reach its end stopped: with no violation it is cut
	// short, never a hold.
	Stopped string
	// Violated and Skipped name the checkers that found a violation and those that were skipped.
	Violated, Skipped []string
	Checkers          int
	Truncated         bool
	// Cost is the run's rebalance cost (verdicts.json's).
	Cost *check.Cost
	// Pressure is how hard the nemesis pushed (check.MeasurePressure over the history).
	Pressure check.Pressure
}

// CutShort reports whether the run did not reach its end and found no violation up to there.
func (s RunSummary) CutShort() bool { return s.Err == "" && s.Stopped != "" && len(s.Violated) == 0 }

// Summarize fills the verdict fields of s from a report.
func (s *RunSummary) Summarize(rep check.Report) {
	s.Holds, s.Cost, s.Checkers = rep.Holds && rep.Stopped == "", rep.RebalanceCost, len(rep.Verdicts)
	s.Stopped = rep.Stopped
	for _, v := range rep.Verdicts {
		switch {
		case v.Skipped != "":
			s.Skipped = append(s.Skipped, v.Name)
		case !v.Holds:
			s.Violated = append(s.Violated, v.Name)
		}
	}
}

// pauses gathers the partition and member pauses of the runs, of every protocol or of one.
func pauses(runs []RunSummary, protocol string) (part, mem []time.Duration) {
	for _, r := range runs {
		if r.Cost == nil {
			continue
		}
		for p, pc := range r.Cost.Protocols {
			if protocol != "" && p != protocol {
				continue
			}
			for _, s := range pc.Stops {
				if s.Partition != "" {
					part = append(part, s.Duration)
				} else {
					mem = append(mem, s.Duration)
				}
			}
		}
	}
	return part, mem
}

// pauseStats summarises durations: count, p50, p99 and max (nearest rank).
type pauseStats struct {
	Count         int
	P50, P99, Max time.Duration
}

func statsOfPauses(ds []time.Duration) pauseStats {
	if len(ds) == 0 {
		return pauseStats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p int) time.Duration { return s[(len(s)*p+99)/100-1] }
	return pauseStats{Count: len(s), P50: rank(50), P99: rank(99), Max: s[len(s)-1]}
}

type trendGroup struct {
	Key                          string
	Runs, Hold, Violated, Unread int
	// CutShort counts the runs that did not reach their end and found no violation up to there.
	CutShort                 int
	Partition, Member        pauseStats
	MidRebalance, UnderFault float64
	Checkers                 []string // checkers violated in the group, with counts
}

// groupRuns groups runs by key and summarises each group; pauses are every pause of the group's
// runs under the protocol protocolOf(key) ("" for all).
func groupRuns(runs []RunSummary, key func(RunSummary) string, protocolOf func(string) string) []trendGroup {
	by := map[string][]RunSummary{}
	for _, r := range runs {
		k := key(r)
		if k == "" {
			k = "unknown"
		}
		by[k] = append(by[k], r)
	}
	var out []trendGroup
	for _, k := range sortedKeys(by) {
		rs := by[k]
		g := trendGroup{Key: k, Runs: len(rs)}
		count := map[string]int{}
		read := 0
		for _, r := range rs {
			switch {
			case r.Err != "":
				g.Unread++
				continue
			case r.Holds:
				g.Hold++
			case r.CutShort():
				g.CutShort++
			default:
				g.Violated++
			}
			read++
			g.MidRebalance += r.Pressure.MidRebalance
			g.UnderFault += r.Pressure.UnderFault
			for _, c := range r.Violated {
				count[c]++
			}
		}
		if read > 0 {
			g.MidRebalance /= float64(read)
			g.UnderFault /= float64(read)
		}
		for _, c := range sortedKeys(count) {
			g.Checkers = append(g.Checkers, fmt.Sprintf("%s ×%d", c, count[c]))
		}
		part, mem := pauses(rs, protocolOf(k))
		g.Partition, g.Member = statsOfPauses(part), statsOfPauses(mem)
		out = append(out, g)
	}
	return out
}

type trendRow struct {
	RunSummary
	N                 int
	Partition, Member pauseStats
}

type trendDot struct {
	X, Y   float64
	Class  string
	Title  string
	Report string
}

type trendText struct {
	X, Y   float64
	Text   string
	Anchor string
}

type trendView struct {
	Title                           string
	Summary                         string
	Runs                            []trendRow
	ByKafka, ByProtocol, ByScenario []trendGroup
	Dots                            []trendDot
	ChartW, ChartH, ChartTop        float64
	Left, Right, Bottom             float64
	YTicks, XTicks                  []trendText
	Grid                            []float64
	Status                          string
	Scorecard                       string
}

// WriteTrend writes the trend page over runs (a nightly's run directories, say): verdicts and
// rebalance pauses per run, per Kafka version and per protocol, and a chart of each run's longest
// partition pause, red where the run found a violation. Runs are shown in the order they started.
func WriteTrend(w io.Writer, title string, runs []RunSummary) error {
	return WriteTrendPage(w, TrendPage{Title: title, Runs: runs})
}

// TrendPage is what the trend page shows: its title, the runs, and the link to the client
// scorecard of the same runs (scorecard.html, relative to the page; "" for none).
type TrendPage struct {
	Title     string
	Runs      []RunSummary
	Scorecard string
}

// WriteTrendPage writes the trend page of p (WriteTrend), linking p's scorecard.
func WriteTrendPage(w io.Writer, p TrendPage) error {
	title, runs := p.Title, slices.Clone(p.Runs)
	slices.SortStableFunc(runs, func(a, b RunSummary) int {
		return cmp.Or(a.Run.Started.Compare(b.Run.Started), cmp.Compare(a.Run.Dir, b.Run.Dir))
	})
	v := trendView{Title: title, Status: "holds", Scorecard: p.Scorecard}
	hold, violated, cutShort, unread := 0, 0, 0, 0
	for i, r := range runs {
		part, mem := pauses([]RunSummary{r}, "")
		v.Runs = append(v.Runs, trendRow{RunSummary: r, N: i + 1, Partition: statsOfPauses(part), Member: statsOfPauses(mem)})
		switch {
		case r.Err != "":
			unread++
		case r.Holds:
			hold++
		case r.CutShort():
			cutShort++
		default:
			violated++
		}
	}
	if violated > 0 {
		v.Status = "violated"
	}
	v.Summary = fmt.Sprintf("%d runs: %d hold, %d violated, %d cut short, %d unreadable", len(runs), hold, violated, cutShort, unread)
	all := func(string) string { return "" }
	v.ByKafka = groupRuns(runs, func(r RunSummary) string { return r.Run.Kafka }, all)
	v.ByScenario = groupRuns(runs, func(r RunSummary) string { return r.Run.Scenario }, all)
	// Per protocol: the runs of each mix, with the pauses under that protocol (a mixed run's
	// pauses of either protocol count for "mixed").
	v.ByProtocol = groupRuns(runs, func(r RunSummary) string { return r.Run.Protocol }, func(k string) string {
		if k == "mixed" {
			return ""
		}
		return k
	})

	// The chart: one dot per run at its longest partition pause; the y axis in seconds from 0 to
	// a round value above the longest, the x axis the runs' numbers in the order they started.
	const left, width, height, top = 70.0, 1000.0, 180.0, 10.0
	v.ChartW, v.ChartH, v.ChartTop = left+width+20, top+height+46, top
	v.Left, v.Right, v.Bottom = left, left+width, top+height
	var most time.Duration
	for _, r := range v.Runs {
		most = max(most, r.Partition.Max)
	}
	yMax := niceCeil(max(most.Seconds(), 0.001))
	step := width / float64(max(1, len(v.Runs)))
	for i, r := range v.Runs {
		cls := "dot holds"
		switch {
		case r.Err != "":
			cls = "dot unread"
		case r.CutShort():
			cls = "dot cut-short"
		case !r.Holds:
			cls = "dot violated"
		}
		y := top + height - height*r.Partition.Max.Seconds()/yMax
		v.Dots = append(v.Dots, trendDot{X: left + step*(float64(i)+0.5), Y: y, Class: cls, Report: r.Report,
			Title: fmt.Sprintf("run %d (%s, Kafka %s, %s, seed %d): longest partition pause %s", r.N, r.Run.Scenario, r.Run.Kafka, r.Run.Protocol, r.Run.Seed, roundDur(r.Partition.Max))})
	}
	tick := niceCeil(yMax / 5)
	for i := 0; float64(i)*tick <= yMax*(1+1e-9); i++ {
		val := float64(i) * tick
		y := top + height - height*val/yMax
		v.YTicks = append(v.YTicks, trendText{X: left - 6, Y: y + 4, Text: strconv.FormatFloat(val, 'g', 3, 64), Anchor: "end"})
		v.Grid = append(v.Grid, y)
	}
	// Run numbers: every run's when they fit, else about 20 of them.
	every := max(1, (len(v.Runs)+19)/20)
	for i := range v.Runs {
		if i%every == 0 || i == len(v.Runs)-1 {
			v.XTicks = append(v.XTicks, trendText{X: left + step*(float64(i)+0.5), Y: top + height + 14, Text: strconv.Itoa(i + 1), Anchor: "middle"})
		}
	}
	return trendTemplate.Execute(w, v)
}

var trendTemplate = template.Must(template.New("trend").Funcs(template.FuncMap{
	"dur":        roundDur,
	"f1":         func(x float64) string { return fmt.Sprintf("%.1f", x) },
	"pct":        func(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) },
	"pageScript": func() template.JS { return template.JS(pageScript) },
	"date":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"groups": func(name string, gs []trendGroup) map[string]any {
		return map[string]any{"Name": name, "Groups": gs}
	},
}).Parse(pageHead + `h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}code{background:#f3f3f3;padding:.1em .3em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .5em;vertical-align:top;text-align:left}
td.n{text-align:right}
.holds{color:#17803d}.violated{color:#b42318;font-weight:bold}.unread{color:#8a6d00}.cut-short{color:#6b5400}
.status-violated h1{color:#b42318}
svg.trend{border:1px solid #ccc;background:#fff;display:block}
.dot.holds{fill:#17803d}.dot.violated{fill:#b42318}.dot.unread{fill:#8a6d00}.dot.cut-short{fill:#d9a400}.axis{stroke:#777}.grid{stroke:#eee}
.ylabel,.xlabel{font-size:11px;fill:#444}.axistitle{font-size:12px;fill:#222}
` + pageBody + `<p class="summary">{{.Summary}}</p>
{{if .Scorecard}}<p><a class="scorecard" href="{{.Scorecard}}">Client scorecard</a>: per client and member kind, on each Kafka version, under each scenario: runs, verdicts, the violations charged to it, its members' rebalance pauses, findings</p>{{end}}
<h2>Longest partition pause per run</h2>
<svg class="trend" xmlns="http://www.w3.org/2000/svg" width="{{f1 .ChartW}}" height="{{f1 .ChartH}}">
{{range .Grid}}<line class="grid" x1="{{f1 $.Left}}" y1="{{f1 .}}" x2="{{f1 $.Right}}" y2="{{f1 .}}"></line>
{{end}}<line class="axis" x1="{{f1 .Left}}" y1="{{f1 .ChartTop}}" x2="{{f1 .Left}}" y2="{{f1 .Bottom}}"></line><line class="axis" x1="{{f1 .Left}}" y1="{{f1 .Bottom}}" x2="{{f1 .Right}}" y2="{{f1 .Bottom}}"></line>
{{range .YTicks}}<text class="ylabel" x="{{f1 .X}}" y="{{f1 .Y}}" text-anchor="end">{{.Text}}</text>
{{end}}{{range .XTicks}}<text class="xlabel" x="{{f1 .X}}" y="{{f1 .Y}}" text-anchor="middle">{{.Text}}</text>
{{end}}<text class="axistitle" id="y-axis-title" transform="translate(18 {{f1 .Bottom}}) rotate(-90)" x="0" y="0">longest partition pause (s)</text>
<text class="axistitle" id="x-axis-title" x="{{f1 .Left}}" y="{{f1 .ChartH}}" dy="-6">run number, in the order the runs started (red: a checker found a violation; click a dot for its report)</text>
{{range .Dots}}{{if .Report}}<a href="{{.Report}}">{{end}}<circle class="{{.Class}}" cx="{{f1 .X}}" cy="{{f1 .Y}}" r="5"><title>{{.Title}}</title></circle>{{if .Report}}</a>{{end}}
{{end}}</svg>
{{define "groups"}}<table class="groups"><tr><th>{{.Name}}</th><th>runs</th><th>hold</th><th>cut short</th><th>violated</th><th>violated checkers</th><th>partition pauses</th><th>p50</th><th>p99</th><th>max</th><th>member pauses</th><th>max</th><th>under a fault</th><th>mid-rebalance</th></tr>
{{range .Groups}}<tr class="group" data-key="{{.Key}}"><td>{{.Key}}</td><td class="n">{{.Runs}}</td><td class="n">{{.Hold}}</td><td class="n">{{.CutShort}}</td><td class="n{{if .Violated}} violated{{end}}">{{.Violated}}</td><td>{{range .Checkers}}{{.}} {{end}}</td>
<td class="n">{{.Partition.Count}}</td><td class="n">{{dur .Partition.P50}}</td><td class="n">{{dur .Partition.P99}}</td><td class="n">{{dur .Partition.Max}}</td><td class="n">{{.Member.Count}}</td><td class="n">{{dur .Member.Max}}</td><td class="n">{{pct .UnderFault}}</td><td class="n">{{pct .MidRebalance}}</td></tr>
{{end}}</table>{{end}}
<h2>Per Kafka version</h2>
{{template "groups" (groups "Kafka" .ByKafka)}}
<h2>Per protocol</h2>
{{template "groups" (groups "protocol" .ByProtocol)}}
<h2>Per scenario</h2>
{{template "groups" (groups "scenario" .ByScenario)}}
<h2>Runs</h2>
<table class="runs"><tr><th>#</th><th>started</th><th>scenario</th><th>Kafka</th><th>protocol</th><th>seed</th><th>verdict</th><th>partition pauses</th><th>p50</th><th>max</th><th>member pauses max</th><th>faults</th><th>report</th></tr>
{{range .Runs}}<tr class="run {{if .Err}}unread{{else if .Holds}}holds{{else if .CutShort}}cut-short{{else}}violated{{end}}"><td class="n">{{.N}}</td><td>{{if not .Run.Started.IsZero}}{{date .Run.Started}}{{end}}</td><td>{{.Run.Scenario}}</td><td>{{.Run.Kafka}}</td><td>{{.Run.Protocol}}</td><td>{{.Run.Seed}}</td>
<td>{{if .Err}}<span class="unread">unreadable: {{.Err}}</span>{{else if .Holds}}<span class="holds">holds</span>{{else if .CutShort}}<span class="cut-short">cut short, no violation up to there: the run {{.Stopped}}</span>{{else}}<span class="violated">violated: {{range .Violated}}{{.}} {{end}}</span>{{end}}{{if .Truncated}} (history cut off){{end}}</td>
<td class="n">{{.Partition.Count}}</td><td class="n">{{dur .Partition.P50}}</td><td class="n">{{dur .Partition.Max}}</td><td class="n">{{dur .Member.Max}}</td><td class="n">{{.Pressure.Faults}}</td>
<td>{{if .Report}}<a class="report" href="{{.Report}}">{{.Run.Dir}}</a>{{else}}{{.Run.Dir}}{{end}}</td></tr>
{{end}}</table>
` + pageFoot))
