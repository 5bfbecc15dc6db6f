package differential

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/vectors"
	"github.com/groupquake/groupquake/coordinator/version"
)

// Model replays secs through the reference coordinator alone, with profile
// p and the broker settings a target of Run has (referenceConfig), and
// returns the answers Run would compare a target with: the same Pos,
// Command and Ticket, Reference set and Target equal to it, every
// comparison Same. Steps Run skips are skipped for the same reasons (state
// reads; a section needing other broker settings; the rest of a section
// after a step that ends it, endsSection).
// Records holds, on the answer to each request, the __consumer_offsets
// records the reference wrote when the request was submitted ("(none)"
// when it wrote none or refused the request).
//
// Model needs no target, so it runs in the unit tier: it is how two
// releases' profiles are compared over the vectors (groupquake diff
// --embedded) and which profile behaviour makes a step answer differently.
func Model(p version.Profile, secs []Section, javaVersion int) ([]Result, error) {
	var out []Result
	sent := map[string]string{}
	for _, s := range secs {
		if why := shareBefore42(p, s); why != "" {
			for _, st := range s.Steps {
				out = append(out, Result{Section: s.Name(), Pos: st.Pos, Command: command(st), Outcome: Skipped, Why: why})
			}
			continue
		}
		if needsBrokerSetting(newStep(s)) == "" {
			if why := sameRequests(sent, s); why != "" {
				for _, st := range s.Steps {
					out = append(out, Result{Section: s.Name(), Pos: st.Pos, Command: command(st), Outcome: Skipped, Why: why})
				}
				continue
			}
		}
		rs, err := modelSection(p, s, javaVersion)
		if err != nil {
			return out, fmt.Errorf("%s: %v", s.Name(), err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// newStep is the section's `new`, or an empty step.
func newStep(s Section) Step {
	if s.New != nil {
		return *s.New
	}
	return Step{}
}

func modelSection(p version.Profile, s Section, javaVersion int) ([]Result, error) {
	name := s.Name()
	var out []Result
	add := func(x Result) {
		x.Section = name
		if x.Outcome != Skipped {
			x.Outcome, x.Target = Same, x.Reference
		}
		out = append(out, x)
	}
	newArgs := Step{}
	if s.New != nil {
		newArgs = *s.New
	}
	if why := needsBrokerSetting(newArgs); why != "" {
		for _, st := range s.Steps {
			add(Result{Pos: st.Pos, Command: command(st), Outcome: Skipped, Why: why})
		}
		return out, nil
	}
	img, _ := sectionTopics(s)
	ref, err := coordinator.New(p, referenceConfig(p, img, javaVersion))
	if err != nil {
		return nil, fmt.Errorf("reference coordinator: %v", err)
	}
	parked := map[int]Step{}
	// written holds the records each request wrote when it was submitted,
	// rendered, until its answer is reported.
	written := map[int]string{}
	now := time.UnixMilli(0).UTC()
	completed := func(st Step, first *coordinator.Outcome) error {
		var own *coordinator.Completion
		if first != nil {
			own = &coordinator.Completion{Ticket: first.Ticket, Response: first.Response}
		}
		for _, c := range answered(own, ref.Completed()) {
			x, _, _ := referenceResult(st, c, parked)
			x.Records = written[x.Ticket]
			add(x)
		}
		return nil
	}
	for i, st := range s.Steps {
		switch st.Cmd {
		case "state", "records", "replay":
			add(Result{Pos: st.Pos, Command: command(st), Outcome: Skipped, Why: "reads the reference's internal state"})
			continue
		case "tick":
			d, err := time.ParseDuration(argKey(st))
			if err != nil {
				return nil, fmt.Errorf("%s: tick: %v", st.Pos, err)
			}
			if d == 0 {
				ref.Tick(now)
				if err := completed(st, nil); err != nil {
					return nil, err
				}
				continue
			}
		}
		if why := endsSection(st); why != "" {
			for _, rest := range s.Steps[i:] {
				add(Result{Pos: rest.Pos, Command: command(rest), Outcome: Skipped, Why: why})
			}
			return modelFinish(out, parked, written, name), nil
		}
		req, ok, err := buildRequest(vectors.Identity{}, st)
		if err != nil {
			return nil, err
		}
		if !ok {
			add(Result{Pos: st.Pos, Command: command(st), Outcome: Skipped, Why: fmt.Sprintf("unknown command %q", st.Cmd)})
			continue
		}
		o, err := ref.Submit(now, coordinator.Client{ID: clientID(st), Host: "/127.0.0.1"}, req)
		if err != nil {
			add(Result{Pos: st.Pos, Command: command(st), Ticket: int(o.Ticket), Reference: "refused: " + err.Error(), Records: RenderRecords(nil)})
			continue
		}
		written[int(o.Ticket)] = RenderRecords(o.Records)
		ref.Tick(now)
		if o.Response == nil {
			parked[int(o.Ticket)] = st
			if err := completed(st, nil); err != nil {
				return nil, err
			}
			continue
		}
		if err := completed(st, &o); err != nil {
			return nil, err
		}
	}
	return modelFinish(out, parked, written, name), nil
}

// modelFinish reports the requests the reference still parks at the end
// of a section, as Run's finish does.
func modelFinish(out []Result, parked map[int]Step, written map[int]string, name string) []Result {
	keys := slices.Sorted(maps.Keys(parked))
	for _, t := range keys {
		st := parked[t]
		out = append(out, Result{Section: name, Pos: st.Pos, Command: command(st), Ticket: t, Outcome: Same,
			Reference: "parked (at the section's end)", Target: "parked (at the section's end)", Records: written[t]})
	}
	return out
}

// RenderRecords renders __consumer_offsets records one a line: the type,
// the key and the value as JSON (every exported field, pointers followed),
// so that two releases' records compare as text.
func RenderRecords(rs []records.Record) string {
	if len(rs) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for _, r := range rs {
		k, _ := json.Marshal(r.Key)
		if r.Value == nil {
			fmt.Fprintf(&b, "%s %s tombstone\n", r.Type(), k)
			continue
		}
		v, _ := json.Marshal(r.Value)
		fmt.Fprintf(&b, "%s %s v%d %s\n", r.Type(), k, r.Value.ValueVersion(), v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
