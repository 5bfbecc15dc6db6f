package differential

// What two Kafka releases do differently to consumer groups (groupquake
// diff): the answers to the conformance vectors (and, in the model, the
// __consumer_offsets records written for them), step by step, and the
// measures of a few scripted scenario runs; every difference is listed,
// each either explained by named behaviours of the releases' version
// profiles (coordinator/version.Profile's fields) or unexplained.
//
// The core (Behaviours, CompareReleases, MeasureRun) is pure:
// CompareReleases takes each release's outcomes, what its profile
// predicted for each, and which profile behaviours change each point
// (Attribute finds them for the vectors by flipping one behaviour at a
// time in the reference coordinator; a scenario's measures name the
// behaviours that govern them), and classifies. The drivers gather the
// outcomes: ModelOutcomes from the reference coordinator alone (Model),
// RunVectors and RealOutcomes from a real broker (Run), RunScenarios from
// runs on a container or embedded cluster.

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/coordinator/version"
)

// Behaviour is one field of version.Profile whose value differs between
// two releases: a named behaviour of the version profiles.
type Behaviour struct {
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
}

func (b Behaviour) String() string { return fmt.Sprintf("%s (%s → %s)", b.Name, b.From, b.To) }

// Behaviours lists the profile fields whose values differ between from and
// to, in the order Profile declares them (Version itself excluded).
func Behaviours(from, to version.Profile) []Behaviour {
	var out []Behaviour
	a, b := reflect.ValueOf(from), reflect.ValueOf(to)
	for i := range a.NumField() {
		f := a.Type().Field(i)
		if f.Name == "Version" {
			continue
		}
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			out = append(out, Behaviour{Name: f.Name, From: fmt.Sprint(a.Field(i).Interface()), To: fmt.Sprint(b.Field(i).Interface())})
		}
	}
	return out
}

// WithBehaviour returns p with the field named name set to src's value:
// the counterfactual release that differs from p by that one behaviour.
func WithBehaviour(p, src version.Profile, name string) (version.Profile, error) {
	f := reflect.ValueOf(&p).Elem().FieldByName(name)
	if !f.IsValid() || name == "Version" {
		return p, fmt.Errorf("version.Profile has no behaviour %q", name)
	}
	f.Set(reflect.ValueOf(src).FieldByName(name))
	return p, nil
}

// Kind says what an outcome is.
type Kind string

const (
	// Answer is a vector step's answer (or a parked request's completion).
	Answer Kind = "answer"
	// Records are the __consumer_offsets records written for a step.
	Records Kind = "records"
)

// ReleaseOutcome is what one release did at one point of the comparison.
type ReleaseOutcome struct {
	// Key names the point in both releases' outcomes: the vector step's
	// file:line and the reference's ticket ("consumer/x.txt:10 #1"), with
	// " records" for the records written there.
	Key  string `json:"key"`
	Kind Kind   `json:"kind"`
	// What is the step as written.
	What string `json:"what"`
	// Value is what the release did (its canonical answer); Model is what
	// the reference coordinator with the release's profile predicted.
	Value string `json:"value"`
	Model string `json:"model"`
	// Agrees is true when the release did what its profile predicts (for a
	// real broker, the differential run's comparison of Value and Model).
	Agrees bool `json:"agrees"`
	// Numeric outcomes (a scenario's measures) are equal within Slack:
	// two releases' values differ only when they are further apart than
	// the larger of their slacks.
	Numeric bool    `json:"numeric,omitempty"`
	Num     float64 `json:"num,omitempty"`
	Slack   float64 `json:"slack,omitempty"`
}

// sameOutcome reports whether a and b are the same outcome: equal values, or
// numbers within their slack.
func sameOutcome(a, b ReleaseOutcome) bool {
	if a.Numeric && b.Numeric {
		d := a.Num - b.Num
		return max(d, -d) <= max(a.Slack, b.Slack)
	}
	return a.Value == b.Value
}

// ReleaseOutcomes are one release's outcomes.
type ReleaseOutcomes struct {
	Version string           `json:"version"`
	Items   []ReleaseOutcome `json:"items"`
}

// Difference is one point where the two releases differ, or where the
// profiles predict they do.
type Difference struct {
	Key  string `json:"key"`
	Kind Kind   `json:"kind"`
	What string `json:"what"`
	// From and To are what each release did ("" when it has no outcome
	// there).
	From string `json:"from"`
	To   string `json:"to"`
	// Explained is true when the profiles predict exactly this difference
	// and Behaviours names the profile fields that cause it.
	Explained  bool     `json:"explained"`
	Behaviours []string `json:"behaviours,omitempty"`
	// Why says, for an unexplained difference, what is missing.
	Why string `json:"why,omitempty"`
}

// ReleaseDiff is the comparison of two releases.
type ReleaseDiff struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Behaviours are the profile fields that differ between the two.
	Behaviours  []Behaviour  `json:"behaviours"`
	Compared    int          `json:"compared"`
	Differences []Difference `json:"differences"`
}

// Count returns how many differences are explained and unexplained.
func (r ReleaseDiff) Count() (explained, unexplained int) {
	for _, d := range r.Differences {
		if d.Explained {
			explained++
		} else {
			unexplained++
		}
	}
	return
}

// CompareReleases classifies every point where from and to differ, or
// where the profiles predict they do:
//   - both releases did what their profiles predict, and the predictions
//     differ: explained by the behaviours attribution names for the key
//     (the behaviours whose flip alone changes the reference's answer
//     there, Attribute); with none named it is unexplained;
//   - a release did something other than its profile predicts: unexplained
//     (the reference or its profile is wrong for that release), whether or
//     not the two releases differ there;
//   - a point only one release has (a request parked on one and answered
//     on the other) is a difference like any other: its absence is what
//     the other release's profile predicts.
//
// Points where both releases did the same and the profiles agree are not
// differences. CompareReleases of a release with itself is empty when the
// release did what its profile predicts.
func CompareReleases(from, to ReleaseOutcomes, behaviours []Behaviour, attribution map[string][]string) ReleaseDiff {
	res := ReleaseDiff{From: from.Version, To: to.Version, Behaviours: behaviours}
	names := map[string]bool{}
	for _, b := range behaviours {
		names[b.Name] = true
	}
	fromByKey, toByKey := map[string]ReleaseOutcome{}, map[string]ReleaseOutcome{}
	var keys []string
	for _, o := range from.Items {
		fromByKey[o.Key] = o
		keys = append(keys, o.Key)
	}
	for _, o := range to.Items {
		if _, ok := fromByKey[o.Key]; !ok {
			keys = append(keys, o.Key)
		}
		toByKey[o.Key] = o
	}
	for _, k := range keys {
		a, inA := fromByKey[k]
		b, inB := toByKey[k]
		// A point a release does not have is one its reference did not
		// have either (every point is a reference's answer): absent, as
		// predicted.
		if !inA {
			a = ReleaseOutcome{Key: k, Kind: b.Kind, What: b.What, Agrees: true}
		}
		if !inB {
			b = ReleaseOutcome{Key: k, Kind: a.Kind, What: a.What, Agrees: true}
		}
		if inA && inB {
			res.Compared++
		}
		if sameOutcome(a, b) && a.Agrees && b.Agrees {
			continue
		}
		d := Difference{Key: k, Kind: a.Kind, What: a.What, From: a.Value, To: b.Value}
		switch {
		case !a.Agrees || !b.Agrees:
			var off []string
			for _, o := range []struct {
				v string
				o ReleaseOutcome
			}{{from.Version, a}, {to.Version, b}} {
				if !o.o.Agrees {
					off = append(off, fmt.Sprintf("Kafka %s answered %q where its profile predicts %q", o.v, o.o.Value, o.o.Model))
				}
			}
			d.Why = strings.Join(off, "; ")
		default:
			for _, n := range attribution[k] {
				if names[n] && !slices.Contains(d.Behaviours, n) {
					d.Behaviours = append(d.Behaviours, n)
				}
			}
			_, known := attribution[k]
			switch {
			case len(d.Behaviours) > 0:
				d.Explained = true
			case !known:
				d.Why = "no behaviour of the version profiles is known to change this point"
			default:
				d.Why = "no single profile behaviour that differs between the releases changes this point"
			}
		}
		res.Differences = append(res.Differences, d)
	}
	return res
}

// String renders the result for a person: a summary line, the behaviours
// that differ, then every difference with both values and its explanation.
func (r ReleaseDiff) String() string {
	var b strings.Builder
	r.writeHead(&b)
	if len(r.Behaviours) > 0 {
		fmt.Fprintf(&b, "behaviours of the profiles that differ (coordinator/version.Profile):\n")
		for _, x := range r.Behaviours {
			fmt.Fprintf(&b, "  %s\n", x)
		}
	}
	for _, d := range r.Differences {
		r.writeDifference(&b, d)
	}
	return b.String()
}

// writeHead writes the summary line: how many points were compared and
// how many differences are explained and unexplained; it returns the
// number unexplained.
func (r ReleaseDiff) writeHead(b *strings.Builder) (unexplained int) {
	ex, un := r.Count()
	fmt.Fprintf(b, "Kafka %s → %s: %d points compared, %d differences (%d explained, %d unexplained)\n", r.From, r.To, r.Compared, ex+un, ex, un)
	return un
}

// writeDifference writes d in full: the point, what each release did
// there, and its explanation or why it has none.
func (r ReleaseDiff) writeDifference(b *strings.Builder, d Difference) {
	status := "explained by " + strings.Join(d.Behaviours, ", ")
	if !d.Explained {
		status = "UNEXPLAINED: " + d.Why
	}
	fmt.Fprintf(b, "%s %s: %s\n  %s: %s\n  %s: %s\n  %s\n", d.Kind, d.Key, d.What, r.From, showValue(d.From), r.To, showValue(d.To), status)
}

func showValue(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return strings.ReplaceAll(s, "\n", "\n    ")
}

// Summary renders the result shortly: the summary line, how many
// differences each set of behaviours explains (with the first point it
// explains), and every unexplained difference in full; all adds every
// explained difference in full.
func (r ReleaseDiff) Summary(all bool) string {
	if all {
		return r.String()
	}
	var b strings.Builder
	un := r.writeHead(&b)
	type group struct {
		n     int
		first Difference
	}
	groups := map[string]*group{}
	var order []string
	for _, d := range r.Differences {
		if !d.Explained {
			continue
		}
		k := strings.Join(d.Behaviours, " + ")
		g, ok := groups[k]
		if !ok {
			g = &group{first: d}
			groups[k] = g
			order = append(order, k)
		}
		g.n++
	}
	slices.SortStableFunc(order, func(x, y string) int { return groups[y].n - groups[x].n })
	if len(order) > 0 {
		fmt.Fprintf(&b, "explained, by the behaviours of coordinator/version.Profile that change them:\n")
	}
	byName := map[string]Behaviour{}
	for _, x := range r.Behaviours {
		byName[x.Name] = x
	}
	for _, k := range order {
		g := groups[k]
		var names []string
		for _, n := range g.first.Behaviours {
			names = append(names, byName[n].String())
		}
		fmt.Fprintf(&b, "  %3d × %s\n        e.g. %s %s: %s\n", g.n, strings.Join(names, " + "), g.first.Kind, g.first.Key, g.first.What)
	}
	if un > 0 {
		fmt.Fprintf(&b, "unexplained:\n")
		for _, d := range r.Differences {
			if !d.Explained {
				r.writeDifference(&b, d)
			}
		}
	}
	return b.String()
}
