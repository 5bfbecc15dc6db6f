package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/internal/interrupt"
)

// The files of a run directory, in the order a run writes them:
//
//	plan.json          the plan, written before anything starts
//	rerun.sh           the command that reruns the plan
//	history.jsonl      the history, appended event by event as the run goes
//	observations.json  the final observations (after heal and quiesce)
//	verdicts.json      the checkers' verdicts and the rebalance cost
//	report.html        the HTML report: verdicts, the ownership timeline, events
//	client.log         the members' kgo client log, only with Config.ClientLog
//	                   (ClientLogFile), appended line by line as the run goes
//
// plan.json, rerun.sh, observations.json, verdicts.json and report.html are written to a
// temporary name and renamed, so a crash leaves each whole or absent;
// history.jsonl is written one complete line per write, so a crash leaves at
// most a truncated last line, which the reader tolerates.
const (
	PlanFile         = "plan.json"
	RerunFile        = "rerun.sh"
	HistoryFile      = "history.jsonl"
	ObservationsFile = "observations.json"
	VerdictsFile     = "verdicts.json"
)

// WriteFileAtomic writes data to a temporary file next to path, syncs it
// and renames it over path: an interrupted write leaves the old file or
// the new one, never half of either.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFileAtomic(path, data, perm)
}

// writeFileAtomic is WriteFileAtomic.
// The temporary file is tracked (internal/interrupt) until it is renamed
// or removed: a second Ctrl-C, which exits at once, removes it with the
// process's other temporary files instead of leaving it in the run
// directory.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer interrupt.Keep(tmp)
	if beforeRename != nil {
		beforeRename(tmp)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("renaming %s into place: %w", path, err)
	}
	return nil
}

// writeTemp writes data, synced, with perm, to a new temporary file beside
// path, tracked (internal/interrupt) until the caller calls
// interrupt.Keep with it; on an error it leaves nothing.
func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	interrupt.Track(tmp)
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		interrupt.Keep(tmp)
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp, perm); err != nil {
		os.Remove(tmp)
		interrupt.Keep(tmp)
		return "", err
	}
	return tmp, nil
}

// beforeRename, when set (by the tests), is called with the temporary file
// of writeFileAtomic, whole, before it is renamed into place.
var beforeRename func(tmp string)

func writeJSONAtomic(path string, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	return writeFileAtomic(path, b.Bytes(), 0o644)
}

// CheckDir says whether dir can become a run directory, without creating
// anything: it must not hold a run yet (a plan.json), nor lie inside one,
// nor be a file or a Go package's folder (generated output never goes into
// source folders; the default ./runs/ is in .gitignore).
func CheckDir(dir string) error {
	if dir == "" {
		return errors.New("no run directory: set Config.Dir (groupquake run --out DIR)")
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("run directory %s is a file: choose a new directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, PlanFile)); err == nil {
		return takenError(fmt.Sprintf("run directory %s already holds a run (%s): choose a new directory", dir, PlanFile))
	}
	if _, err := os.Stat(filepath.Join(dir, HistoryFile)); err == nil {
		return takenError(fmt.Sprintf("run directory %s already holds a %s without a %s (a run that is starting there now, or one killed before it wrote its plan): choose a new directory", dir, HistoryFile, PlanFile))
	}
	if r := RunDirOf(dir); r != "" && !InShrink(r, dir) {
		return fmt.Errorf("%s is inside the run directory %s: choose a directory outside it", dir, r)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if gos, _ := filepath.Glob(filepath.Join(abs, "*.go")); len(gos) > 0 {
		return fmt.Errorf("run directory %s is a Go source folder (it holds %s): put runs elsewhere, e.g. ./runs/", dir, filepath.Base(gos[0]))
	}
	return nil
}

// IsRunDir reports whether dir holds a run: a plan.json beside its
// history.jsonl or rerun.sh.
func IsRunDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, PlanFile)); err != nil {
		return false
	}
	for _, f := range []string{HistoryFile, RerunFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// ShrinkDir is the folder of a run directory where groupquake shrink
// writes its trials, each a run directory of its own.
const ShrinkDir = "shrink"

// InShrink reports whether dir is a trial's directory in the ShrinkDir of
// the run directory r (directly in it, named as groupquake shrink names
// its trials: RUN_DIR/shrink/NN-<faults>, the faults none, f2+5 or
// 6-faults).
func InShrink(r, dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	return filepath.Dir(filepath.Dir(abs)) == r && filepath.Base(filepath.Dir(abs)) == ShrinkDir && trialName.MatchString(filepath.Base(abs))
}

// trialName is the name of a shrink trial's directory.
var trialName = regexp.MustCompile(`^[0-9]{2,}-(none|f[0-9]+(\+[0-9]+)*|[0-9]+-faults)$`)

// RunDirOf returns the run directory (absolute) that holds path: path
// itself when it is a run directory, else the nearest directory above it
// that is one; "" when none is. Commands refuse to write over what it holds unless asked
// to rewrite that file.
func RunDirOf(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	for d := abs; ; d = filepath.Dir(d) {
		if IsRunDir(d) {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// prepareDir creates the run directory once CheckDir accepts it.
func prepareDir(dir string) error {
	if err := CheckDir(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}

// ErrDirTaken is the error of a run whose directory holds a run, or
// another run took between the check of the directory and the run's
// start: nothing was written there.
var ErrDirTaken = errors.New("another run took the run directory")

// takenError is CheckDir's error for a directory that holds a run, or a
// run's history: it is ErrDirTaken (errors.Is).
type takenError string

func (e takenError) Error() string        { return string(e) }
func (e takenError) Is(target error) bool { return target == ErrDirTaken }

// beforeClaim, when set (by the tests), is called between the check of a
// run directory and its claim: the moment another run may take it.
var beforeClaim func(dir string)

// claimDir creates dir's history, which must not exist: the first file a
// run writes, so that a run whose directory another run took writes
// nothing into it.
func claimDir(dir string) (*os.File, error) {
	hf, err := os.OpenFile(filepath.Join(dir, HistoryFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%w: %s appeared in %s after the directory was checked (two runs were given the same directory at once): nothing was written there; choose a new directory", ErrDirTaken, HistoryFile, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the history: %w", err)
	}
	return hf, nil
}

// ClaimFile creates path holding data, whole, only if it does not exist:
// the data goes to a temporary file beside it, linked to path (which
// fails when path exists) and then removed. A directory a command writes
// into is claimed so, as a run claims its directory with its history: of
// two commands given the same directory at once, the second gets an error
// that is ErrDirTaken (errors.Is) and writes nothing there.
func ClaimFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer interrupt.Keep(tmp)
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s already holds a %s (another command took it: one started at the same moment, or an earlier one): nothing was written there; choose a new directory", ErrDirTaken, filepath.Dir(path), filepath.Base(path))
	}
	if err != nil {
		return fmt.Errorf("claiming %s: %w", filepath.Dir(path), err)
	}
	return nil
}

// RerunScript is a rerun.sh that runs command, passing on its arguments.
func RerunScript(what, command string) []byte {
	return []byte("#!/bin/sh\n# Reruns " + what + " (same seed, same plans; the interleaving will differ).\n# Extra arguments (--out DIR, --keep) are passed on.\nexec " + command + " \"$@\"\n")
}

func rerunScript(p Plan) []byte {
	return []byte("#!/bin/sh\n# Reruns the plan of this run (same seed, same plan; the interleaving will differ).\n# Extra arguments (--out DIR, --keep) are passed on.\nexec " + p.Command() + " \"$@\"\n")
}

// IncompleteError says a run directory cannot be judged, and what is missing.
type IncompleteError struct {
	Dir     string
	Missing []string
	Err     error
}

func (e *IncompleteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run directory %s cannot be judged", e.Dir)
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, ": missing %s", strings.Join(e.Missing, ", "))
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if len(e.Missing) > 0 {
		b.WriteString(" (a run writes plan.json before it starts and history.jsonl as it goes: is this a run directory?)")
	}
	return b.String()
}

func (e *IncompleteError) Unwrap() error { return e.Err }

// Judged is a run directory judged offline.
type Judged struct {
	Plan   Plan
	Events []history.Event
	// Truncated is set when the history ends in a cut-off line: the run was
	// killed while writing. Every complete event before it was judged.
	Truncated *history.Truncation
	// Flaws says how history.jsonl breaks the recorder's rules (lines out of
	// order, repeated, missing, conflicting), as history.ReadWhole read it;
	// Unjudged counts the events it set aside after a missing or conflicting
	// one. HistoryWellFormed fails on any flaw.
	Flaws    []history.Flaw
	Unjudged int
	// Observations is nil when observations.json is absent (the run stopped
	// before its final observations); the checkers then judge the history
	// alone.
	Observations *history.Observations
	Report       check.Report
	// Notes say what was missing and how the judgement was limited.
	Notes []string
}

// loadRun reads the plan and the history of the run directory dir, or
// returns an *IncompleteError naming what is missing or unreadable.
func loadRun(dir string) (Plan, history.Loaded, error) {
	var missing []string
	var errs []error
	plan, err := LoadPlan(filepath.Join(dir, PlanFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		missing = append(missing, PlanFile)
	case err != nil:
		errs = append(errs, err)
	}
	loaded, err := history.LoadWhole(filepath.Join(dir, HistoryFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		missing = append(missing, HistoryFile)
	case err != nil:
		errs = append(errs, err)
	}
	if len(missing) > 0 || len(errs) > 0 {
		return plan, loaded, &IncompleteError{Dir: dir, Missing: missing, Err: errors.Join(errs...)}
	}
	return plan, loaded, nil
}

// Judge re-runs every checker over the run directory dir, offline. It
// returns an *IncompleteError when plan.json or history.jsonl is missing or
// unreadable. RecoveredStateMatchesLog replays the observed records as the
// plan's Kafka version (package replay); it is skipped, with the reason, when
// the plan names no version (an external cluster).
func Judge(dir string) (Judged, error) {
	var j Judged
	plan, loaded, err := loadRun(dir)
	if err != nil {
		return j, err
	}
	j.Plan, j.Events, j.Truncated = plan, loaded.Events, loaded.Truncated
	j.Flaws, j.Unjudged = loaded.Flaws, loaded.Unjudged
	obs, err := history.LoadObservations(filepath.Join(dir, ObservationsFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		j.Notes = append(j.Notes, ObservationsFile+" is absent: the run stopped before its final observations; judged on the history alone")
	case err != nil:
		return j, &IncompleteError{Dir: dir, Err: err}
	default:
		j.Observations = obs
	}
	if j.Truncated != nil {
		j.Notes = append(j.Notes, fmt.Sprintf("%s ends in a truncated line %d (%d bytes): the run was killed while writing; judged up to event %d", HistoryFile, j.Truncated.Line, j.Truncated.Bytes, lastIndex(j.Events)))
	}
	if len(j.Events) == 0 {
		j.Notes = append(j.Notes, HistoryFile+" holds no complete event: nothing happened before the run stopped")
	}
	if len(j.Flaws) > 0 {
		j.Notes = append(j.Notes, fmt.Sprintf("%s breaks the recorder's rules (%s); judged up to event %d, %d later events set aside: HistoryWellFormed says what is wrong", HistoryFile, j.Flaws[0].Message, lastIndex(j.Events), j.Unjudged))
	}
	opts := []check.Option{check.WithTruncation(j.Truncated), check.WithFlaws(j.Flaws, j.Unjudged)}
	fn, why := replayFor(plan, j.Observations)
	if fn != nil {
		opts = append(opts, check.WithReplay(fn))
	}
	j.Report = check.Judge(j.Events, j.Observations, plan.Check(), opts...)
	if fn == nil && why != "" {
		explainSkip(&j.Report, why)
	}
	if stopped := stoppedAt(j.Events); stopped != "" {
		j.Report.Stopped = stopped
		j.Notes = append(j.Notes, "the run "+stopped+"; judged up to there")
		if !check.Phases(j.Events).Reached(history.PhaseFinal) {
			skipEndOfRun(&j.Report, fmt.Sprintf("the run %s, before its %q phase: it never reached the end this property speaks of; rerun the plan (rerun.sh) to judge it", stopped, history.PhaseFinal))
		}
	}
	j.Report.Notes = append(j.Report.Notes, faultNotes(j.Events)...)
	return j, nil
}

// endOfRun are the checkers whose property speaks of the end of a run:
// every acknowledged record consumed once the faults healed and the
// consumers caught up (NoLostRecords), the group settled within the bound
// after the heal (EventuallyConverges). A run that stopped before its final
// phase never got there: judged on the history it left, they would report
// records still in flight and a rebalance still under way as violations.
var endOfRun = []string{check.NameEventuallyConverges, check.NameNoLostRecords}

// skipEndOfRun turns the verdicts of endOfRun into skips that say why, and
// recomputes whether the report holds.
func skipEndOfRun(rep *check.Report, why string) {
	rep.Holds = true
	for i, v := range rep.Verdicts {
		// The run's stop is the first reason it has nothing to judge.
		if slices.Contains(endOfRun, v.Name) && (v.Skipped == "" || check.NothingToJudge(v)) {
			rep.Verdicts[i] = check.Verdict{Name: v.Name, Holds: true, Skipped: why, Notes: v.Notes}
		}
		rep.Holds = rep.Holds && rep.Verdicts[i].Holds
	}
}

// stoppedAt says where and why a run stopped before its end, "" when it
// reached it: what the run recorded on its teardown phase (an interrupt, its
// bound; in its final phase too, whose observations are then missing), else,
// for a history without its final phase, the last phase it reached and its
// last event (a run killed, or ended by an error).
func stoppedAt(events []history.Event) string {
	ms := check.Phases(events)
	phase, at := "", time.Duration(0)
	for _, m := range ms {
		if m.Name == history.PhaseTeardown && m.Stopped != "" {
			return fmt.Sprintf("was %s (event %d)", m.Stopped, m.Event)
		}
		if m.Name != history.PhaseTeardown {
			phase, at = m.Name, m.At
		}
	}
	if ms.Reached(history.PhaseFinal) {
		return ""
	}
	if len(events) == 0 {
		return "stopped before it recorded anything"
	}
	last := events[len(events)-1]
	if phase == "" {
		return fmt.Sprintf("stopped before its first phase, at %s (event %d)", last.Time.Round(100*time.Millisecond), last.Index)
	}
	how := "was killed, or ended by an error,"
	if ms.Reached(history.PhaseTeardown) {
		how = "ended by an error"
	}
	return fmt.Sprintf("%s in its %s phase (begun at %s; last event %d, at %s)", how, phase, at.Round(100*time.Millisecond), last.Index, last.Time.Round(100*time.Millisecond))
}

// faultNotes sums up the faults of a history: how many started and had an
// observed effect, and each one that had none (a fault that changed
// nothing tested nothing: the reader must see it).
func faultNotes(events []history.Event) []string {
	var started, none int
	var notes []string
	for _, e := range events {
		if e.Type == history.Invoke {
			continue
		}
		v, ok := e.Value.(history.Fault)
		if !ok {
			continue
		}
		switch e.F {
		case history.FFaultStart:
			started++
		case history.FFaultStop:
			if v.NoEffect != "" {
				none++
				notes = append(notes, fmt.Sprintf("fault %s on %s (ended at event %d) had no observed effect: %s", v.What, strings.Join(v.Target, ","), e.Index, v.NoEffect))
			}
		}
	}
	if started == 0 {
		return nil
	}
	return append([]string{fmt.Sprintf("%d faults started, %d of them with no observed effect", started, none)}, notes...)
}

func lastIndex(es []history.Event) int64 {
	if len(es) == 0 {
		return -1
	}
	return es[len(es)-1].Index
}
