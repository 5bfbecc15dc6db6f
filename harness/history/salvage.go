package history

import (
	"bytes"
	"fmt"
	"io"
	"sort"
)

// Flaw is one way a history file breaks the Recorder's rules (one event per line, indexes dense
// and increasing from 0) that ReadWhole found and set aside, so that a judge can say so instead
// of refusing the file or judging events that are not there.
type Flaw struct {
	// Line is the line of the file (1-based), 0 for events that are missing altogether.
	Line int `json:"line,omitempty"`
	// Index is the event index concerned, -1 when unknown (a line that does not decode).
	Index   int64  `json:"index"`
	Message string `json:"message"`
}

func (f Flaw) String() string { return f.Message }

// maxFlaws bounds the flaws listed one by one; the rest are counted in one more.
const maxFlaws = 20

// ReadWhole reads a history for judging, as Read does, but instead of refusing a file that breaks
// the Recorder's rules it keeps what is certainly the history and says what it set aside (Flaws):
//
//   - lines out of index order are put back in index order (the index is the Recorder's own
//     numbering, so the order is the one recorded);
//   - a line repeated with the same index and the same content is read once;
//   - Events ends where the history stops being whole: before the first index that no line
//     holds (lines lost, a line that does not decode, a type that is not one of the four), or
//     that two lines give different events (two writers, or a corrupt copy). The complete events
//     after it are not returned (Unjudged counts them): judged without what is missing, they
//     would prove things the run never did (an ownership without its revocation, a commit
//     without its answer).
//
// A truncated last line is reported in Truncated, as Read does. Only a file that cannot be read
// is an error.
func ReadWhole(r io.Reader) (Loaded, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Loaded{}, fmt.Errorf("history: reading: %w", err)
	}
	type line struct {
		n    int
		body []byte
		e    Event
	}
	var (
		out   Loaded
		lines []line
		flaws []Flaw
		holes []int64 // indexes of lines whose event is unusable
		more  int
	)
	flaw := func(f Flaw) {
		if len(flaws) < maxFlaws {
			flaws = append(flaws, f)
		} else {
			more++
		}
	}
	var d decoder
	n := 0
	for len(data) > 0 {
		n++
		raw := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			raw, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		terminated := raw[len(raw)-1] == '\n'
		body := bytes.TrimRight(raw, "\r\n")
		if len(bytes.TrimSpace(body)) == 0 {
			continue
		}
		e, derr := d.decode(body, nil)
		switch {
		case derr != nil && !terminated:
			out.Truncated = &Truncation{Line: n, Bytes: len(raw)}
		case derr != nil:
			flaw(Flaw{Line: n, Index: -1, Message: fmt.Sprintf("line %d is not a valid event (%v): the event it held, if any, is missing", n, derr)})
		case !e.Type.Valid():
			flaw(Flaw{Line: n, Index: e.Index, Message: fmt.Sprintf("line %d (event %d) has event type %q, not invoke, ok, fail or info: the event is unusable", n, e.Index, e.Type)})
			holes = append(holes, e.Index)
		default:
			lines = append(lines, line{n, body, e})
		}
	}
	disorder, firstDisorder := 0, -1
	last := int64(-1)
	for i, l := range lines {
		if l.e.Index < last {
			disorder++
			if firstDisorder < 0 {
				firstDisorder = i
			}
		}
		last = max(last, l.e.Index)
	}
	if disorder > 0 {
		l := lines[firstDisorder]
		flaw(Flaw{Line: l.n, Index: l.e.Index, Message: fmt.Sprintf("%d line(s) out of index order (the first: line %d, event %d after a higher index): read in index order", disorder, l.n, l.e.Index)})
	}
	sort.SliceStable(lines, func(a, b int) bool { return lines[a].e.Index < lines[b].e.Index })
	sort.Slice(holes, func(a, b int) bool { return holes[a] < holes[b] })
	// cut is the first index at which the history stops being whole.
	cut, why := int64(-1), ""
	setCut := func(at int64, message string) {
		if cut < 0 || at < cut {
			cut, why = at, message
		}
	}
	if len(holes) > 0 {
		setCut(holes[0], fmt.Sprintf("event %d is unusable", holes[0]))
	}
	kept := make([]line, 0, len(lines))
	for _, l := range lines {
		if k := len(kept); k > 0 && kept[k-1].e.Index == l.e.Index {
			if bytes.Equal(kept[k-1].body, l.body) {
				flaw(Flaw{Line: l.n, Index: l.e.Index, Message: fmt.Sprintf("line %d repeats line %d (event %d): read once", l.n, kept[k-1].n, l.e.Index)})
				continue
			}
			flaw(Flaw{Line: l.n, Index: l.e.Index, Message: fmt.Sprintf("lines %d and %d both hold event %d, with different content: two writers, or a corrupt copy", kept[k-1].n, l.n, l.e.Index)})
			setCut(l.e.Index, fmt.Sprintf("event %d is given twice", l.e.Index))
			continue
		}
		kept = append(kept, l)
	}
	next := int64(0)
	for _, l := range kept {
		if l.e.Index != next {
			if next < l.e.Index {
				flaw(Flaw{Index: next, Message: fmt.Sprintf("events %d to %d are missing: no line holds them", next, l.e.Index-1)})
				setCut(next, fmt.Sprintf("event %d is missing", next))
			}
			break
		}
		next++
	}
	for _, l := range kept {
		if cut >= 0 && l.e.Index >= cut {
			out.Unjudged++
			continue
		}
		out.Events = append(out.Events, l.e)
	}
	if cut >= 0 {
		flaw(Flaw{Index: cut, Message: fmt.Sprintf("the history is whole only up to event %d (%s): the %d complete events after it are set aside", cut-1, why, out.Unjudged)})
	}
	if more > 0 {
		flaws = append(flaws, Flaw{Index: -1, Message: fmt.Sprintf("and %d more flaws", more)})
	}
	out.Flaws = flaws
	return out, nil
}

// LoadWhole reads the history file at path with ReadWhole.
func LoadWhole(path string) (Loaded, error) { return loadWith(path, ReadWhole) }
