package check

import (
	"fmt"

	"github.com/groupquake/groupquake/harness/history"
)

// Option configures All.
type Option interface{ apply(*options) }

type options struct {
	replay    ReplayFunc
	truncated *history.Truncation
	flaws     []history.Flaw
	unjudged  int
}

type optionFunc func(*options)

func (o optionFunc) apply(c *options) { o(c) }

// WithReplay gives All the coordinator's replay for RecoveredStateMatchesLog; without it that
// checker is reported as skipped.
func WithReplay(fn ReplayFunc) Option { return optionFunc(func(o *options) { o.replay = fn }) }

// WithTruncation tells All that the history file ended in a truncated line (history.Loaded's
// Truncated), so HistoryWellFormed says the run was killed mid-write.
func WithTruncation(t *history.Truncation) Option {
	return optionFunc(func(o *options) { o.truncated = t })
}

// WithFlaws tells All what the loader of the history file set aside (history.ReadWhole's Flaws
// and Unjudged): HistoryWellFormed fails naming each, and the other checkers judge the events they
// were given, which end where the history stops being whole.
func WithFlaws(flaws []history.Flaw, unjudged int) Option {
	return optionFunc(func(o *options) { o.flaws, o.unjudged = flaws, unjudged })
}

// All runs every checker over one history and its observations, decoding the history once. The
// first verdict, HistoryWellFormed, says whether the history itself follows the rules (paired calls,
// payloads of the right type); the other checkers judge what they can of a malformed one.
func All(events []history.Event, obs *history.Observations, plan history.Plan, opts ...Option) []Verdict {
	var o options
	for _, opt := range opts {
		opt.apply(&o)
	}
	return all(build(events, obs), obs, plan, o)
}

// Judge runs every checker and measures the rebalance cost from one decoding of the history:
// what `groupquake check RUN_DIR` writes to verdicts.json.
func Judge(events []history.Event, obs *history.Observations, plan history.Plan, opts ...Option) Report {
	var o options
	for _, opt := range opts {
		opt.apply(&o)
	}
	f := build(events, obs)
	rep := NewReport(all(f, obs, plan, o), rebalanceCost(f))
	rep.Findings = sightings(f, rep.Verdicts)
	return rep
}

func all(f *facts, obs *history.Observations, plan history.Plan, o options) []Verdict {
	f.kinds, f.session, f.rebalance = plan.Kinds, plan.SessionTimeout, plan.RebalanceTimeout
	f.plan = plan
	for _, t := range plan.Partitions() {
		f.tp(t)
	}
	// Share groups (share.go): judged only when the run has share members.
	// A run of share members alone has no consumer-group member for the
	// consumer-group checkers to judge: they do not apply, and are not
	// reported as skipped (a skipped checker is a gap; these are none).
	sf := f.shareFacts()
	var present Groups
	if len(f.mems) > 0 || !sf.any {
		present |= ConsumerGroups
	}
	if sf.any {
		present |= ShareGroups
	}
	in := &judging{f: f, sf: sf, obs: obs, plan: plan, o: o}
	var vs []Verdict
	notApply := 0
	for _, c := range Checkers {
		if c.Groups&present == 0 {
			if c.Groups&ConsumerGroups != 0 {
				notApply++
			}
			continue
		}
		vs = append(vs, judgeOne(c, in))
	}
	labelStalls(f, vs)
	if notApply > 0 {
		vs[0].Notes = append(vs[0].Notes, fmt.Sprintf("%d consumer-group checkers do not apply: the run has no consumer-group members, its share members are judged by the Share* checkers", notApply))
	}
	return vs
}

const NameHistoryWellFormed = "HistoryWellFormed"

var _ = register(Checker{Name: NameHistoryWellFormed, Place: 10, Groups: AnyGroup,
	Asserts: "the history itself follows the rules: every answer pairs with its request, no member has two calls of one kind open",
	judge:   func(in *judging) Verdict { return wellFormedWith(in.f, in.o) }})

// wellFormedWith is HistoryWellFormed with what the loader of the history
// file set aside: its flaws fail it, a truncated last line is noted.
func wellFormedWith(f *facts, o options) Verdict {
	wf := wellFormed(f)
	if len(o.flaws) > 0 {
		w := newVerdict(wf.Name)
		w.Verdict = wf
		for _, fl := range o.flaws {
			var at []int64
			if fl.Index >= 0 {
				at = []int64{fl.Index}
			}
			w.fail(at, "history.jsonl: %s", fl.Message)
		}
		if o.unjudged > 0 {
			w.note("%d complete events after the first missing or conflicting one were not judged by any checker", o.unjudged)
		}
		wf = w.done()
	}
	if o.truncated != nil {
		wf.Notes = append(wf.Notes, fmt.Sprintf("the history ends in a truncated line %d (%d bytes): the run was killed while writing; every complete event before it was checked", o.truncated.Line, o.truncated.Bytes))
	}
	return wf
}

// HistoryWellFormed checks the history itself: every completion pairs with an invoke of its process
// and F, no process has two calls open, every payload has the type its F calls for.
func HistoryWellFormed(events []history.Event) Verdict { return wellFormed(build(events, nil)) }

func wellFormed(f *facts) Verdict {
	v := newVerdict(NameHistoryWellFormed)
	if f.pairErr != nil {
		v.fail(nil, "%v", f.pairErr)
	}
	for _, p := range f.problems {
		v.fail(p.EventIndexes, "%s", p.Message)
	}
	open := 0
	for i, e := range f.ev {
		if e.Type == history.Invoke && f.partner[i] < 0 {
			open++
		}
	}
	v.note("%d events, %d calls never completed (judged as unknown outcomes)", len(f.ev), open)
	return v.done()
}
