package check

import "strings"

// A checker that had nothing to judge in a history (no member ever owned a
// partition, no record was consumed, no commit was made) did not find its
// property to hold: it found nothing to judge it on. Its verdict says so,
// as a skipped one ("nothing to judge: ..."), whatever the reason the
// history holds nothing of the kind: a run interrupted before any member
// joined, or a run that went to its end without, say, a single commit. A
// skipped verdict is counted neither as a hold nor as a violation (the
// tally, the report, `groupquake check`, the findings triage and the
// scorecard all count it apart), so a run with nothing to judge is never
// called a hold by the checkers that judged nothing. What each checker needs
// to have anything to judge is its nothing function below; its notes stay.

// nothingPrefix begins the Skipped of a checker that had nothing to judge.
const nothingPrefix = "nothing to judge: "

// NothingToJudge reports whether v is the verdict of a checker that had
// nothing to judge (a skip, not a hold).
func NothingToJudge(v Verdict) bool { return strings.HasPrefix(v.Skipped, nothingPrefix) }

// nothingToJudge returns why c has nothing to judge in what in holds, ""
// when it has something.
func nothingToJudge(c Checker, in *judging) string {
	if c.nothing == nil {
		return ""
	}
	return c.nothing(in)
}

// judgeOne is c's verdict on in: its judgement, made a skip when c had
// nothing to judge and found nothing (a violation always stands).
func judgeOne(c Checker, in *judging) Verdict {
	v := c.judge(in)
	if v.Skipped != "" || !v.Holds {
		return v
	}
	if why := nothingToJudge(c, in); why != "" {
		v.Skipped = nothingPrefix + why
	}
	return v
}

// What the consumer-group checkers need to judge anything.

func noOwnership(in *judging) string {
	if len(in.f.intervals) == 0 && len(in.f.pairs) == 0 {
		return "no member owned a partition in the history"
	}
	return ""
}

func noConsumption(in *judging) string {
	for _, cs := range in.f.consumes {
		if len(cs) > 0 {
			return ""
		}
	}
	return "no record was consumed in the history"
}

func noCommit(in *judging) string {
	if len(in.f.commits) == 0 {
		return "no commit was made in the history"
	}
	return ""
}

// noCommitOrRead: commits are judged against each other and against what
// the observer and the final observations read of the committed offsets.
func noCommitOrRead(in *judging) string {
	if len(in.f.commits) == 0 && len(in.f.describes) == 0 && in.obs == nil {
		return "no commit was made and no committed offset was read (no observer read, no final observations)"
	}
	return ""
}

func noEpoch(in *judging) string {
	if len(in.f.mems) == 0 && len(in.f.describes) == 0 && len(in.f.snaps) == 0 {
		return "no member and no read of the group gave an epoch in the history"
	}
	return ""
}

func noProduce(in *judging) string {
	if len(in.f.produces) == 0 {
		return "no record was produced in the history"
	}
	return ""
}
