package run

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/results"
)

// ReportFile is the run directory's HTML report, written after verdicts.json by every run (and
// rewritten by `groupquake check` and `groupquake report`).
const ReportFile = "report.html"

// Info is what the report and the trend page say about the run of plan p in dir.
func Info(dir string, p Plan) results.RunInfo {
	info := results.RunInfo{Dir: dir, Seed: p.Seed, Scenario: p.Options.Scenario, Kafka: p.Options.Kafka}
	switch {
	case len(p.Options.Bootstrap) > 0 && p.Options.Kafka != "":
		info.Kafka = "external " + p.Options.Kafka
	case len(p.Options.Bootstrap) > 0:
		info.Kafka = "external"
	case p.Options.Embedded:
		info.Kafka = "embedded " + p.Options.Kafka
	}
	for _, m := range p.Members {
		info.Members = append(info.Members, results.MemberInfo{Name: m.Name, Kind: m.Kind, Protocol: m.Protocol})
	}
	info.Protocol = results.ProtocolMix(info.Members)
	info.Started = started(dir)
	return info
}

// started is when the run in dir began: the time its directory's name begins with (run
// directories are named <UTC time>-<seed> by `groupquake run` and the suites), which survives
// copying an artifact, else plan.json's modification time.
func started(dir string) time.Time {
	base := filepath.Base(dir)
	for _, layout := range []string{"20060102T150405Z", "20060102T150405"} {
		if len(base) >= len(layout) {
			if t, err := time.Parse(layout, base[:len(layout)]); err == nil {
				return t
			}
		}
	}
	if st, err := os.Stat(filepath.Join(dir, PlanFile)); err == nil {
		return st.ModTime()
	}
	return time.Time{}
}

// ReportOf is the report of the judged run in dir.
func ReportOf(dir string, j Judged) results.Report {
	info := Info(dir, j.Plan)
	notes := append([]string(nil), j.Notes...)
	if st := j.Report.Stopped; st != "" && !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, st) }) {
		notes = append(notes, "the run "+st+"; judged up to there") // read back from verdicts.json
	}
	return results.Report{
		Title:      fmt.Sprintf("groupquake run: seed %d, scenario %s, Kafka %s, %s protocol", info.Seed, info.Scenario, info.Kafka, info.Protocol),
		Run:        info,
		Command:    j.Plan.Command(),
		Events:     j.Events,
		Verdicts:   j.Report.Verdicts,
		Cost:       j.Report.RebalanceCost,
		Notes:      append(notes, j.Report.Notes...),
		Truncated:  j.Truncated != nil,
		Stopped:    j.Report.Stopped,
		Partitions: j.Plan.Check().Partitions(),
		Share:      j.Plan.Share,
	}
}

// WriteReport writes report.html into the run directory dir, atomically.
func WriteReport(dir string, j Judged) error {
	var b bytes.Buffer
	if err := results.WriteReport(&b, ReportOf(dir, j)); err != nil {
		return fmt.Errorf("rendering %s: %w", ReportFile, err)
	}
	return writeFileAtomic(filepath.Join(dir, ReportFile), b.Bytes(), 0o644)
}

// ReadVerdicts reads the verdicts.json of the run directory dir.
func ReadVerdicts(dir string) (check.Report, error) {
	data, err := os.ReadFile(filepath.Join(dir, VerdictsFile))
	if err != nil {
		return check.Report{}, err
	}
	return check.ReadVerdicts(bytes.NewReader(data))
}

// RenderReport writes the report of the run directory dir to w, as `groupquake report` does. With
// verdicts.json readable it streams history.jsonl through the page (results.WriteReportFrom), so a
// run of millions of events renders without holding its history; otherwise it judges the run now,
// as Saved does. What cannot be read (plan, history) is an *IncompleteError.
func RenderReport(w io.Writer, dir string) error {
	rep, err := ReadVerdicts(dir)
	if err != nil {
		j, err := Saved(dir)
		if err != nil {
			return err
		}
		return results.WriteReport(w, ReportOf(dir, j))
	}
	var missing []string
	plan, err := LoadPlan(filepath.Join(dir, PlanFile))
	if errors.Is(err, fs.ErrNotExist) {
		missing = append(missing, PlanFile)
	} else if err != nil {
		return &IncompleteError{Dir: dir, Err: err}
	}
	f, err := os.Open(filepath.Join(dir, HistoryFile))
	if errors.Is(err, fs.ErrNotExist) {
		missing = append(missing, HistoryFile)
	} else if err != nil {
		return &IncompleteError{Dir: dir, Missing: missing, Err: err}
	}
	if len(missing) > 0 {
		if f != nil {
			f.Close()
		}
		return &IncompleteError{Dir: dir, Missing: missing}
	}
	defer f.Close()
	err = results.WriteReportFrom(w, ReportOf(dir, Judged{Plan: plan, Report: rep}), f)
	if he := (*results.HistoryError)(nil); errors.As(err, &he) {
		return &IncompleteError{Dir: dir, Err: fmt.Errorf("%s: %w", HistoryFile, he.Err)}
	}
	return err
}

// Saved reads a run directory as its run left it: the plan, the history and the verdicts of
// verdicts.json. When verdicts.json is absent or unreadable (a run killed before its end) it
// judges the run now, as `groupquake check` does, and says so in Notes. It returns an
// *IncompleteError when plan.json or history.jsonl is missing or unreadable.
func Saved(dir string) (Judged, error) {
	rep, err := ReadVerdicts(dir)
	if err != nil {
		j, jerr := Judge(dir)
		if jerr != nil {
			return j, jerr
		}
		why := "it is absent"
		if !errors.Is(err, fs.ErrNotExist) {
			why = err.Error()
		}
		j.Notes = append(j.Notes, fmt.Sprintf("judged now, not read from %s: %s", VerdictsFile, why))
		return j, nil
	}
	var j Judged
	plan, loaded, err := loadRun(dir)
	if err != nil {
		return j, err
	}
	j.Plan, j.Events, j.Truncated, j.Report = plan, loaded.Events, loaded.Truncated, rep
	return j, nil
}

// Summary is the run directory dir as the trend page shows it; a directory that cannot be read
// is a summary with Err set.
func Summary(dir string, j Judged, err error) results.RunSummary {
	if err != nil {
		return results.RunSummary{Run: results.RunInfo{Dir: dir}, Err: err.Error()}
	}
	s := results.RunSummary{Run: Info(dir, j.Plan), Truncated: j.Truncated != nil}
	s.Summarize(j.Report)
	s.Pressure = check.MeasurePressure(j.Plan.Options.Scenario, j.Events)
	return s
}
