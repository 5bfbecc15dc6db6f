package results

import (
	"fmt"
	"html/template"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/groupquake/groupquake/harness/check"
)

// ScorecardPage is the client scorecard as scorecard.html shows it: the runs summed per client and
// per member kind, on each Kafka version, under each scenario family (check.BuildScorecard).
type ScorecardPage struct {
	Title string
	// ByClient and ByKind are the same runs summed per client and per member kind.
	ByClient, ByKind check.Scorecard
	// Reports links run directories to their report.html, relative to the page.
	Reports map[string]string
	// Trend links the trend page, relative to the page ("" for none).
	Trend string
}

// maxCellViolations caps the violations a cell lists (on the page and in the text): the first ones
// say what happened, the counts say how often.
const maxCellViolations = 10

type scoreMatrixCell struct {
	Row, Kafka, Scenario string
	Class                string
	Cell                 *check.Cell
}

type scoreMatrixRow struct {
	Row   string
	Cells []scoreMatrixCell
}

type scoreSection struct {
	Name      string // "client" or "kind"
	Card      check.Scorecard
	Kafkas    []string
	Scenarios []string
	Matrix    []scoreMatrixRow
	Cells     []scoreCellView
}

type scoreCellView struct {
	check.Cell
	Class      string
	Violations []scoreViolationView
	More       int
	Sightings  []scoreViolationView
	MoreSeen   int
	RunLinks   []scoreRunLink
}

type scoreViolationView struct {
	check.CellViolation
	Report  string
	Concern string
}

type scoreRunLink struct{ Dir, Name, Report string }

type scorecardView struct {
	Title, Summary, Trend, Status string
	Sections                      []scoreSection
}

// cellClass says how a cell reads at a glance: charged (a violation charged to its row), others
// (its runs had violations, none charged to it), holds.
func cellClass(c *check.Cell) string {
	switch {
	case c.Charged > 0:
		return "charged"
	case c.RunsViolated > 0:
		return "others"
	case c.RunsHold == 0 && c.RunsCutShort > 0:
		return "cut-short"
	}
	return "holds"
}

// concern says whom a violation concerns, from the point of view of row.
func concern(v check.CellViolation, row string) string {
	switch {
	case len(v.Clients) == 0:
		return "no member's: the run's"
	case len(v.Clients) == 1:
		return "charged to " + row
	}
	var others []string
	for _, c := range v.Clients {
		if c != row {
			others = append(others, c)
		}
	}
	return "charged to " + row + ", shared with " + strings.Join(others, ", ")
}

func newScoreSection(name string, sc check.Scorecard, reports map[string]string) scoreSection {
	s := scoreSection{Name: name, Card: sc, Kafkas: sc.Kafkas, Scenarios: sc.Scenarios}
	at := map[[3]string]*check.Cell{}
	for i := range sc.Cells {
		c := &sc.Cells[i]
		at[[3]string{c.Row(), c.Kafka, c.Scenario}] = c
	}
	for _, row := range sc.Rows {
		r := scoreMatrixRow{Row: row}
		for _, k := range sc.Kafkas {
			for _, scen := range sc.Scenarios {
				mc := scoreMatrixCell{Row: row, Kafka: k, Scenario: scen, Class: "empty", Cell: at[[3]string{row, k, scen}]}
				if mc.Cell != nil {
					mc.Class = cellClass(mc.Cell)
				}
				r.Cells = append(r.Cells, mc)
			}
		}
		s.Matrix = append(s.Matrix, r)
	}
	for _, c := range sc.Cells {
		v := scoreCellView{Cell: c, Class: cellClass(&c)}
		for i, x := range c.Violations {
			if i == maxCellViolations {
				v.More = len(c.Violations) - i
				break
			}
			v.Violations = append(v.Violations, scoreViolationView{CellViolation: x, Report: reports[x.Dir], Concern: concern(x, c.Row())})
		}
		for i, x := range c.Sightings {
			if i == maxCellViolations {
				v.MoreSeen = len(c.Sightings) - i
				break
			}
			cv := check.CellViolation(x)
			v.Sightings = append(v.Sightings, scoreViolationView{CellViolation: cv, Report: reports[x.Dir], Concern: concern(cv, c.Row())})
		}
		for _, d := range c.RunDirs {
			v.RunLinks = append(v.RunLinks, scoreRunLink{Dir: d, Name: filepath.Base(d), Report: reports[d]})
		}
		s.Cells = append(s.Cells, v)
	}
	return s
}

// scorecardSummary says what the scorecard covers in one line.
func scorecardSummary(sc check.Scorecard) string {
	by := sc.By
	if by == "" {
		by = check.ByClient
	}
	cut := ""
	if sc.CutShort > 0 {
		cut = fmt.Sprintf(", %d cut short (stopped before their end, no violation up to there: not a hold)", sc.CutShort)
	}
	return fmt.Sprintf("%d runs: %d hold, %d violated%s, %d unreadable; %d %ss, Kafka %s, scenarios %s",
		sc.Runs, sc.Hold, sc.Violated, cut, len(sc.Unreadable), len(sc.Rows), by, orNone(sc.Kafkas), orNone(sc.Scenarios))
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// WriteScorecard writes scorecard.html: per client, then per member kind, a matrix of Kafka
// versions × scenario families whose cells say at a glance whether a violation was charged to the
// row, then every cell in full (runs, verdicts, violations charged and shared, the run's own,
// rebalance pauses of the row's members, registered findings) and its violations, each linked to
// its run's report.
func WriteScorecard(w io.Writer, p ScorecardPage) error {
	v := scorecardView{Title: p.Title, Trend: p.Trend, Summary: scorecardSummary(p.ByClient), Status: "holds"}
	if p.ByClient.Violated > 0 {
		v.Status = "violated"
	}
	v.Sections = []scoreSection{newScoreSection(check.ByClient, p.ByClient, p.Reports), newScoreSection(check.ByKind, p.ByKind, p.Reports)}
	return scorecardTemplate.Execute(w, v)
}

// pausesText is "n, p50 x, max y", or "0" without pauses.
func pausesText(s check.Stats) string {
	if s.Count == 0 {
		return "0"
	}
	return fmt.Sprintf("%d, p50 %s, max %s", s.Count, pauseDur(s.P50), pauseDur(s.Max))
}

// pauseDur is roundDur, with a pause shorter than a millisecond said so rather than "0s".
func pauseDur(d time.Duration) string {
	if d > 0 && d < time.Millisecond {
		return "<1ms"
	}
	return roundDur(d)
}

// countsText is "name ×n, …" in name order.
func countsText(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func chargedText(c check.Cell) string {
	if c.Charged == 0 {
		return "0"
	}
	s := fmt.Sprintf("%d in %d runs", c.Charged, c.RunsCharged)
	if c.Shared > 0 {
		s += fmt.Sprintf(" (%d shared)", c.Shared)
	}
	return s
}

// WriteScorecardText writes the scorecard as a table, one line per cell, then the violations of
// each cell that has some (the first of each, with its run directory).
func WriteScorecardText(w io.Writer, sc check.Scorecard) error {
	fmt.Fprintf(w, "scorecard by %s: %s\n", sc.By, scorecardSummary(sc))
	if len(sc.Cells) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "%s\tkafka\tscenario\truns\thold\tviolated\tverdicts hold/violated/skipped\tcharged to it\tthe run's\tmember pauses\tpartition pauses it ended\tfindings\truns that sighted a finding without a violation\n", sc.By)
		for _, c := range sc.Cells {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d/%d/%d\t%s\t%d\t%s\t%s\t%s\t%s\n", c.Row(), c.Kafka, c.Scenario, c.Runs, c.RunsHold, c.RunsViolated,
				c.Hold, c.Violated, c.Skipped, chargedText(c), c.RunLevel, pausesText(c.MemberPauses), pausesText(c.PartitionPauses), orDash(countsText(c.Findings)), orDash(countsText(c.Sighted)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, c := range sc.Cells {
		if len(c.Violations) == 0 && len(c.Sightings) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s on Kafka %s, %s: %s\n", c.Row(), c.Kafka, c.Scenario, cellHeading(c))
		for i, x := range c.Violations {
			if i == maxCellViolations {
				fmt.Fprintf(w, "  … %d more\n", len(c.Violations)-i)
				break
			}
			label := ""
			if x.Finding != "" {
				label = " [" + x.Finding + "]"
			}
			fmt.Fprintf(w, "  %s%s (%s; %s): %s\n", x.Checker, label, concern(x, c.Row()), x.Dir, firstLineOf(x.Message, 240))
		}
		for i, x := range c.Sightings {
			if i == maxCellViolations {
				fmt.Fprintf(w, "  … %d more sightings\n", len(c.Sightings)-i)
				break
			}
			fmt.Fprintf(w, "  sighted %s, no violation labelled with it (%s; %s): %s\n", x.Finding, concern(check.CellViolation(x), c.Row()), x.Dir, firstLineOf(x.Message, 240))
		}
	}
	for _, d := range sc.Unreadable {
		fmt.Fprintf(w, "unreadable: %s\n", d)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cellHeading says what a cell's list holds: its violations charged to it and the run's, and the
// findings sighted without a violation when there are some.
func cellHeading(c check.Cell) string {
	s := fmt.Sprintf("%d charged to it, %d the run's", c.Charged, c.RunLevel)
	if len(c.Sightings) > 0 {
		s += fmt.Sprintf(", %d sighting(s) of a finding without a violation", len(c.Sightings))
	}
	return s
}

func firstLineOf(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

var scorecardTemplate = template.Must(template.New("scorecard").Funcs(template.FuncMap{
	"dur":    roundDur,
	"pauses": pausesText,
	"counts": countsText,
	"charged": func(c any) string {
		if p, ok := c.(*check.Cell); ok {
			return chargedText(*p)
		}
		return chargedText(c.(check.Cell))
	},
	"heading":    cellHeading,
	"first":      func(s string) string { return firstLineOf(s, 400) },
	"join":       strings.Join,
	"pageScript": func() template.JS { return template.JS(pageScript) },
	"span":       func(xs []string) int { return len(xs) },
}).Parse(pageHead + `h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}h3{font-size:1em;margin:1em 0 .3em}code{background:#f3f3f3;padding:.1em .3em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .5em;vertical-align:top;text-align:left}
td.n{text-align:right}
td.matrix{min-width:7em;font-size:12px}
td.holds,.holds{color:#17803d}td.matrix.holds{background:#eef8f0}
td.charged,.charged{color:#b42318}td.matrix.charged{background:#fdecea;font-weight:bold}
td.others,.others{color:#8a6d00}td.matrix.others{background:#fff8e1}td.matrix.cut-short{background:#fdf6e0;color:#6b5400}
td.empty{color:#aaa}
tr.row-charged td:first-child{color:#b42318;font-weight:bold}tr.row-others td:first-child{color:#8a6d00}tr.row-holds td:first-child{color:#17803d}
.status-violated h1{color:#b42318}
ul.violations{margin:.2em 0 .8em;padding-left:1.2em}ul.violations li{margin:.2em 0}
.concern{font-style:italic}
` + pageBody + `<p class="summary">{{.Summary}}</p>
{{if .Trend}}<p><a class="trend" href="{{.Trend}}">the trend page of these runs</a></p>{{end}}
<p>A violation is charged to the members whose events it cites, hence to their client and kind; one that
cites members of several clients is charged to each (<em>shared</em>); one that cites no member (a record
the producer saw acknowledged and nobody consumed, a description of the group) is the run's. A cell is
<span class="charged">red</span> when a violation was charged to its row, <span class="others">amber</span>
when its runs had violations charged elsewhere or to the run, <span class="holds">green</span> when every
run held. Member pauses are the member stops of the row's members (owning nothing until it got partitions
again); partition pauses are the stretches without an owner that a member of the row ended. Findings are
the registered findings the verdicts matched; a run that sighted a finding none of its violations is
labelled with counts under <em>runs that sighted a finding without a violation</em>, charged as a match is.</p>
{{range .Sections}}{{$sec := .}}
<h2 id="by-{{.Name}}">Per {{.Name}}</h2>
<table class="matrix" data-by="{{.Name}}">
<tr><th rowspan="2">{{.Name}}</th>{{range .Kafkas}}<th colspan="{{span $sec.Scenarios}}">Kafka {{.}}</th>{{end}}</tr>
<tr>{{range .Kafkas}}{{range $sec.Scenarios}}<th>{{.}}</th>{{end}}{{end}}</tr>
{{range .Matrix}}<tr><th>{{.Row}}</th>{{range .Cells}}<td class="matrix {{.Class}}" data-row="{{.Row}}" data-kafka="{{.Kafka}}" data-scenario="{{.Scenario}}">{{with .Cell}}{{.Runs}} runs, {{.RunsHold}} hold{{if .RunsCutShort}}, {{.RunsCutShort}} cut short{{end}}<br>charged {{charged .}}{{if .RunLevel}}<br>the run's {{.RunLevel}}{{end}}{{if .Sighted}}<br>sighted {{counts .Sighted}}{{end}}{{if .MemberPauses.Count}}<br>pause p50 {{dur .MemberPauses.P50}}, max {{dur .MemberPauses.Max}}{{end}}{{else}}—{{end}}</td>{{end}}</tr>
{{end}}</table>
<table class="cells" data-by="{{.Name}}"><tr><th>{{.Name}}</th>{{if eq .Name "kind"}}<th>client</th>{{else}}<th>kinds</th>{{end}}<th>Kafka</th><th>scenario</th><th>runs</th><th>hold</th><th>violated</th><th>verdicts hold/violated/skipped</th><th>charged to it</th><th>charged per checker</th><th>the run's</th><th>member pauses</th><th>partition pauses it ended</th><th>findings</th><th>runs that sighted a finding without a violation</th><th>runs</th></tr>
{{range .Cells}}<tr class="cell row-{{.Class}}" data-row="{{.Row}}" data-kafka="{{.Kafka}}" data-scenario="{{.Scenario}}"><td>{{.Row}}</td><td>{{if .Kind}}{{.Client}}{{else}}{{join .Kinds ", "}}{{end}}</td><td>{{.Kafka}}</td><td>{{.Scenario}}</td><td class="n">{{.Runs}}</td><td class="n">{{.RunsHold}}{{if .RunsCutShort}} (+{{.RunsCutShort}} cut short){{end}}</td><td class="n">{{.RunsViolated}}</td><td class="n">{{.Hold}}/{{.Violated}}/{{.Skipped}}</td><td class="n">{{charged .Cell}}</td><td>{{counts .Checkers}}</td><td class="n">{{.RunLevel}}</td><td class="n">{{pauses .MemberPauses}}</td><td class="n">{{pauses .PartitionPauses}}</td><td>{{counts .Findings}}</td><td class="sighted">{{counts .Sighted}}</td><td>{{range .RunLinks}}{{if .Report}}<a class="run" href="{{.Report}}">{{.Name}}</a>{{else}}{{.Name}}{{end}} {{end}}</td></tr>
{{end}}</table>
{{range .Cells}}{{if or .Violations .Sightings}}<h3 class="cell-violations" data-row="{{.Row}}" data-kafka="{{.Kafka}}" data-scenario="{{.Scenario}}">{{.Row}} on Kafka {{.Kafka}}, {{.Scenario}}: {{heading .Cell}}</h3>
<ul class="violations">{{range .Violations}}<li class="violation" data-checker="{{.Checker}}" data-clients="{{join .Clients " "}}"><b>{{.Checker}}</b>{{if .Finding}} [{{.Finding}}]{{end}} <span class="concern">({{.Concern}})</span> in {{if .Report}}<a href="{{.Report}}">{{.Dir}}</a>{{else}}{{.Dir}}{{end}}: {{first .Message}}</li>
{{end}}{{if .More}}<li>… {{.More}} more</li>{{end}}{{range .Sightings}}<li class="sighting" data-finding="{{.Finding}}" data-clients="{{join .Clients " "}}">sighted <b>{{.Finding}}</b>, no violation labelled with it <span class="concern">({{.Concern}})</span> in {{if .Report}}<a href="{{.Report}}">{{.Dir}}</a>{{else}}{{.Dir}}{{end}}: {{first .Message}}</li>
{{end}}{{if .MoreSeen}}<li>… {{.MoreSeen}} more sightings</li>{{end}}</ul>
{{end}}{{end}}{{end}}
{{with .Sections}}{{with index . 0}}{{if .Card.Unreadable}}<h2>Unreadable run directories</h2><ul>{{range .Card.Unreadable}}<li>{{.}}</li>{{end}}</ul>{{end}}{{end}}{{end}}
` + pageFoot))
