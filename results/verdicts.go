package results

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// Tally counts verdicts by outcome. A skipped checker judged nothing: it is
// neither a hold nor a violation, and a summary must not count it as either.
type Tally struct {
	Total    int      `json:"total"`
	Hold     int      `json:"hold"`
	Violated []string `json:"violated"` // the checkers that found a violation
	Skipped  []string `json:"skipped"`  // the checkers that could not judge
}

// Count tallies verdicts.
func Count(verdicts []check.Verdict) Tally {
	t := Tally{Total: len(verdicts), Violated: []string{}, Skipped: []string{}}
	for _, v := range verdicts {
		switch {
		case v.Skipped != "":
			t.Skipped = append(t.Skipped, v.Name)
		case !v.Holds:
			t.Violated = append(t.Violated, v.Name)
		default:
			t.Hold++
		}
	}
	return t
}

// String reads "14 checkers: 12 hold, 1 violated (NoLostRecords), 1 skipped
// (RecoveredStateMatchesLog)".
func (t Tally) String() string {
	named := func(n []string, what string) string {
		if len(n) == 0 {
			return "0 " + what
		}
		return fmt.Sprintf("%d %s (%s)", len(n), what, strings.Join(n, ", "))
	}
	return fmt.Sprintf("%d checkers: %d hold, %s, %s", t.Total, t.Hold, named(t.Violated, "violated"), named(t.Skipped, "skipped"))
}

// What a person reads of a violated verdict: its first violations, and the
// first events of each; verdicts.json and the history have the rest.
const (
	MaxViolationsShown = 10
	MaxEventsShown     = 8
)

// IndexEvents maps events by their index, to look up the events a violation
// cites.
func IndexEvents(events []history.Event) map[int64]history.Event {
	m := make(map[int64]history.Event, len(events))
	for _, e := range events {
		m[e.Index] = e
	}
	return m
}

// WriteViolations writes v's first violations, each followed by the first
// events it cites (in history order), every line prefixed by indent. An
// event missing from events is named by its index.
func WriteViolations(w io.Writer, v check.Verdict, events map[int64]history.Event, indent string) {
	for i, x := range v.Violations {
		if i == MaxViolationsShown {
			fmt.Fprintf(w, "%s  … and %d more in verdicts.json\n", indent, len(v.Violations)-i)
			break
		}
		fmt.Fprintf(w, "%s- %s\n", indent, x.Message)
		idx := slices.Clone(x.EventIndexes)
		slices.Sort(idx)
		for k, ix := range idx {
			if k == MaxEventsShown {
				fmt.Fprintf(w, "%s    … %d more events\n", indent, len(idx)-k)
				break
			}
			if e, ok := events[ix]; ok {
				fmt.Fprintf(w, "%s    %s\n", indent, e)
			} else {
				fmt.Fprintf(w, "%s    #%d (not in the history)\n", indent, ix)
			}
		}
	}
	for _, n := range v.Notes {
		fmt.Fprintf(w, "%s  note: %s\n", indent, n)
	}
}

// StepSummary is what one run adds to the summary page of a CI job (GitHub
// Actions renders $GITHUB_STEP_SUMMARY as markdown): which checkers a run
// violated, the first events of each violation, where the run directory is
// and how to rerun it.
type StepSummary struct {
	// Title names the run: the test's name, or the command.
	Title string
	Dir   string
	Rerun string
	// Error says why the run could not be carried out; "" when it could.
	Error    string
	Verdicts []check.Verdict
	Events   map[int64]history.Event
}

// failed reports whether s has anything to say: a violation or an error.
func (s StepSummary) failed() bool {
	return s.Error != "" || len(Count(s.Verdicts).Violated) > 0
}

// WriteStepSummary writes s as GitHub-flavoured markdown when the run
// violated a checker or could not be carried out, and nothing otherwise: the
// page is for what needs a person.
func WriteStepSummary(w io.Writer, s StepSummary) error {
	if !s.failed() {
		return nil
	}
	var b strings.Builder
	t := Count(s.Verdicts)
	switch {
	case len(t.Violated) > 0:
		fmt.Fprintf(&b, "### ❌ %s: %s violated\n\n", mdText(s.Title), strings.Join(t.Violated, ", "))
	default:
		fmt.Fprintf(&b, "### ❌ %s: the run could not be carried out\n\n", mdText(s.Title))
	}
	if s.Error != "" {
		fmt.Fprintf(&b, "%s\n\n", mdText(s.Error))
	}
	for _, v := range s.Verdicts {
		if v.Skipped != "" || v.Holds {
			continue
		}
		fmt.Fprintf(&b, "**%s**: %d violations\n\n```text\n", v.Name, len(v.Violations))
		WriteViolations(&b, v, s.Events, "")
		b.WriteString("```\n\n")
	}
	if len(s.Verdicts) > 0 {
		fmt.Fprintf(&b, "%s\n\n", t)
	}
	if s.Dir != "" {
		fmt.Fprintf(&b, "Run directory: `%s`\n\n", s.Dir)
	}
	if s.Rerun != "" {
		fmt.Fprintf(&b, "Rerun:\n\n```sh\n%s\n```\n\n", s.Rerun)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// AppendStepSummary appends s (see WriteStepSummary) to the file at path,
// normally $GITHUB_STEP_SUMMARY; with path "" (not on GitHub Actions) it
// does nothing.
func AppendStepSummary(path string, s StepSummary) error {
	if path == "" || !s.failed() {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("the CI step summary: %w", err)
	}
	werr := WriteStepSummary(f, s)
	if err := f.Close(); werr == nil && err != nil {
		return fmt.Errorf("the CI step summary: %w", err)
	}
	return werr
}

// mdText keeps text from turning into markup (a member id in angle
// brackets would vanish as an HTML tag).
func mdText(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`").Replace(s)
}
