package check

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// Verdict is what one checker concluded.
type Verdict struct {
	Name  string `json:"name"`
	Holds bool   `json:"holds"`
	// Skipped says why the checker could not judge (then Holds is true but nothing was checked).
	Skipped    string      `json:"skipped,omitempty"`
	Violations []Violation `json:"violations,omitempty"`
	// Notes carry counts and measurements that help read the verdict ("checked 1200 commits").
	Notes []string `json:"notes,omitempty"`
	// Known lists what the verdict matched with a registered finding (Findings): a violation
	// labelled, a member's loss or a sighting that failed it or was noted.
	Known []Known `json:"known,omitempty"`
}

// Violation is one breach of the property, citing the events that show it.
type Violation struct {
	Message      string  `json:"message"`
	EventIndexes []int64 `json:"event_indexes,omitempty"`
	// Finding is the id of the registered finding (Findings) the violation matches: a known bug.
	Finding string `json:"finding,omitempty"`
}

// maxViolations caps what one verdict lists: a broken run can breach a property a million times,
// and the first ones are what a person reads.
const maxViolations = 1000

type verdict struct {
	Verdict
	dropped int
}

func newVerdict(name string) *verdict { return &verdict{Verdict: Verdict{Name: name, Holds: true}} }

func (v *verdict) fail(idx []int64, format string, args ...any) {
	v.Holds = false
	if len(v.Violations) >= maxViolations {
		v.dropped++
		return
	}
	idx = dedupSorted(idx)
	v.Violations = append(v.Violations, Violation{Message: fmt.Sprintf(format, args...), EventIndexes: idx})
}

// failKnown is fail for a violation that matches finding x (a bug that fails the run): the
// message names the finding and the verdict lists the match.
func (v *verdict) failKnown(x Finding, k Known, idx []int64, format string, args ...any) {
	v.fail(idx, "known bug "+x.ID+": "+format, args...)
	if n := len(v.Violations); n > 0 && v.dropped == 0 {
		v.Violations[n-1].Finding = x.ID
	}
	k.Finding, k.Failed = x.ID, true
	v.Known = append(v.Known, k)
}

// noteKnown notes a match with finding x that does not fail the run.
func (v *verdict) noteKnown(x Finding, k Known, format string, args ...any) {
	v.note(format, args...)
	k.Finding, k.Failed = x.ID, false
	v.Known = append(v.Known, k)
}

func (v *verdict) note(format string, args ...any) {
	v.Notes = append(v.Notes, fmt.Sprintf(format, args...))
}

func (v *verdict) done() Verdict {
	if v.dropped > 0 {
		v.note("%d more violations not listed (the first %d are)", v.dropped, maxViolations)
	}
	return v.Verdict
}

func skipped(name, why string) Verdict {
	return Verdict{Name: name, Holds: true, Skipped: why}
}

func dedupSorted(idx []int64) []int64 {
	out := make([]int64, 0, len(idx))
	for _, i := range idx {
		if i >= 0 {
			out = append(out, i)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	j := 0
	for i := range out {
		if i == 0 || out[i] != out[j-1] {
			out[j] = out[i]
			j++
		}
	}
	return out[:j]
}

// Report is verdicts.json: whether the run holds, every verdict, and the rebalance cost.
type Report struct {
	// Holds is whether no verdict found a violation. For a run that did not reach its end
	// (Stopped) that is no violation up to there, not a hold of the run: every reader that says
	// whether a run holds (check's exit and --json, the report, the trend page, the scorecard,
	// the findings triage) also asks Stopped.
	Holds         bool      `json:"holds"`
	Verdicts      []Verdict `json:"verdicts"`
	RebalanceCost *Cost     `json:"rebalance_cost,omitempty"`
	// Notes say what else a reader of the verdicts should know about the
	// run: how many faults it went through, and which had no observed effect.
	Notes []string `json:"notes,omitempty"`
	// Stopped says where a run that did not reach its end stopped, and why
	// when the run could say (an interrupt, its bound): the verdicts judge
	// the history up to there. Empty for a run that reached its end.
	Stopped string `json:"stopped,omitempty"`
	// Findings lists every place the history shows a registered finding
	// (Sightings), whatever the verdicts made of it.
	Findings []Sighting `json:"findings,omitempty"`
}

// SightedWithoutViolation lists the report's sightings (Findings) of the findings that none of its
// violations is labelled with, in sighting order: a finding the history shows without a violation to
// match it (a behaviour noted, a bug whose window passed without harm). The findings triage and the
// scorecard both list these.
func (r Report) SightedWithoutViolation() []Sighting {
	labelled := map[string]bool{}
	for _, v := range r.Verdicts {
		for _, x := range v.Violations {
			labelled[x.Finding] = true
		}
	}
	var out []Sighting
	for _, s := range r.Findings {
		if !labelled[s.Finding] {
			out = append(out, s)
		}
	}
	return out
}

// NewReport bundles verdicts (and optionally the cost) into a Report.
func NewReport(verdicts []Verdict, cost *Cost) Report {
	r := Report{Holds: true, Verdicts: verdicts, RebalanceCost: cost}
	for _, v := range verdicts {
		r.Holds = r.Holds && v.Holds
	}
	return r
}

// ReadVerdicts reads verdicts.json back (for the report and the trend across runs); run.WriteVerdicts
// writes it.
func ReadVerdicts(r io.Reader) (Report, error) {
	var rep Report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return Report{}, fmt.Errorf("verdicts.json is not valid (%v): re-run `groupquake check RUN_DIR` to regenerate it", err)
	}
	return rep, nil
}
