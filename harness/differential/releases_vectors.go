package differential

import (
	"fmt"
	"maps"
	"slices"

	"github.com/groupquake/groupquake/coordinator/version"
)

// pointKey names a differential result in both releases' outcomes: the step's
// file:line and the reference's ticket, which numbers the requests of a
// section in order whatever the release answers.
func pointKey(x Result) string { return fmt.Sprintf("%s #%d", x.Pos, x.Ticket) }

// pointValue is what a result says the side did: its canonical answer, or why
// the step was not compared.
func pointValue(x Result, answer string) string {
	if x.Outcome == Skipped {
		return "skipped: " + x.Why
	}
	return answer
}

// ShareComparable returns secs without the share-group sections when from
// or to has share groups only as early access or preview (4.0, 4.1), and
// why ("" when none was left out): the share vectors describe
// production-ready share groups, and a broker before 4.2 is not compared
// with them (differential's runner skips them there).
func ShareComparable(from, to version.Profile, secs []Section) ([]Section, string) {
	var old version.Profile
	switch {
	case from.ShareGroups != version.ShareProduction:
		old = from
	case to.ShareGroups != version.ShareProduction:
		old = to
	default:
		return secs, ""
	}
	kept := make([]Section, 0, len(secs))
	for _, s := range secs {
		if !s.Share() {
			kept = append(kept, s)
		}
	}
	if len(kept) == len(secs) {
		return secs, ""
	}
	return kept, fmt.Sprintf("%d share-group vector sections left out: share groups are %s in Kafka %s", len(secs)-len(kept), old.ShareGroups, old.Version)
}

// ModelOutcomes are the outcomes of the reference coordinator alone with
// release p's profile: every answer and, per step, the records written.
// Value and Model are the same: the model did what it predicts.
func ModelOutcomes(p version.Profile, secs []Section) (ReleaseOutcomes, error) {
	rs, err := Model(p, secs, 0)
	if err != nil {
		return ReleaseOutcomes{}, err
	}
	out := ReleaseOutcomes{Version: p.Version.String()}
	for _, x := range rs {
		v := pointValue(x, x.Reference)
		out.Items = append(out.Items, ReleaseOutcome{Key: pointKey(x), Kind: Answer, What: x.Command, Value: v, Model: v, Agrees: true})
		if x.Records != "" {
			out.Items = append(out.Items, ReleaseOutcome{Key: pointKey(x) + " records", Kind: Records, What: x.Command, Value: x.Records, Model: x.Records, Agrees: true})
		}
	}
	return out, nil
}

// RealOutcomes are the outcomes of a differential run against a real
// broker: Value is the broker's answer, Model the reference's with the
// broker's release's profile, and Agrees the run's own comparison (a
// request version neither serves agrees though the texts differ).
func RealOutcomes(rep Report) ReleaseOutcomes {
	out := ReleaseOutcomes{Version: rep.Version}
	for _, x := range rep.Results {
		out.Items = append(out.Items, ReleaseOutcome{Key: pointKey(x), Kind: Answer, What: x.Command,
			Value: pointValue(x, x.Target), Model: pointValue(x, x.Reference), Agrees: x.Outcome != Different})
	}
	return out
}

// Attribute finds, for every point of the vectors, the profile behaviours
// that change the reference's outcome there on their own: each behaviour
// that differs between from and to is flipped, alone, in from's profile
// (to to's value) and in to's profile (to from's value), and every point
// whose answer or records the flip changes names it.
func Attribute(from, to version.Profile, secs []Section) (map[string][]string, error) {
	base := map[version.Version]map[string]string{}
	outcomes := func(p version.Profile) (map[string]string, error) {
		o, err := ModelOutcomes(p, secs)
		if err != nil {
			return nil, err
		}
		m := map[string]string{}
		for _, x := range o.Items {
			m[x.Key] = x.Value
		}
		return m, nil
	}
	for _, p := range []version.Profile{from, to} {
		m, err := outcomes(p)
		if err != nil {
			return nil, fmt.Errorf("Kafka %s: %v", p.Version, err)
		}
		base[p.Version] = m
	}
	attr := map[string][]string{}
	for _, b := range Behaviours(from, to) {
		for _, side := range [][2]version.Profile{{from, to}, {to, from}} {
			flipped, err := WithBehaviour(side[0], side[1], b.Name)
			if err != nil {
				return nil, err
			}
			m, err := outcomes(flipped)
			if err != nil {
				// A profile no release has may be refused by the
				// reference; the behaviour is then not attributed from
				// this side.
				continue
			}
			orig := base[side[0].Version]
			for _, k := range slices.Sorted(maps.Keys(union(orig, m))) {
				if orig[k] != m[k] && !slices.Contains(attr[k], b.Name) {
					attr[k] = append(attr[k], b.Name)
				}
			}
		}
	}
	return attr, nil
}

func union(a, b map[string]string) map[string]bool {
	u := map[string]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}
