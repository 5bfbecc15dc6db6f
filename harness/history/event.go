package history

import (
	"encoding/json"
	"fmt"
	"time"
)

// Type says what an event is in the call model: a call starts (Invoke), succeeds (OK), certainly
// failed (Fail), or has an unknown outcome or is a standalone fact (Info). A timeout is Info, never
// Fail: a commit that timed out may still have landed, and the checkers must allow for that.
type Type string

// The four event types, spelled as in Jepsen histories.
const (
	Invoke Type = "invoke"
	OK     Type = "ok"
	Fail   Type = "fail"
	Info   Type = "info"
)

// Valid reports whether t is one of the four types.
func (t Type) Valid() bool {
	switch t {
	case Invoke, OK, Fail, Info:
		return true
	}
	return false
}

// Event is one line of history.jsonl.
//
// Value holds the typed payload for F (see vocab.go: Produce, Consume, Commit, …). Events read by
// Load or Unmarshal carry the typed value (a struct, not a pointer) for every F of the vocabulary, and
// the raw JSON (json.RawMessage) for an F this package does not know, so newer writers never break an
// older reader. Use ValueAs to get a payload whatever form it is in.
type Event struct {
	// Index is dense and increasing from 0, assigned by the Recorder; checkers cite it.
	Index int64 `json:"index"`
	// Time is monotonic time since the start of the run, in nanoseconds on the wire. It is taken
	// under the Recorder's lock, so it never decreases along the indexes when the clock is monotonic.
	Time    time.Duration `json:"time"`
	Type    Type          `json:"type"`
	Process string        `json:"process"`
	F       string        `json:"f"`
	Value   any           `json:"value,omitempty"`
	// Why is the franz-go-style reason for a transition ("session expired during partition"),
	// free text for people reading a timeline.
	Why string `json:"why,omitempty"`
}

// wireEvent is Event with the value left raw, so it can be decoded by F.
type wireEvent struct {
	Index   int64           `json:"index"`
	Time    time.Duration   `json:"time"`
	Type    Type            `json:"type"`
	Process string          `json:"process"`
	F       string          `json:"f"`
	Value   json.RawMessage `json:"value,omitempty"`
	Why     string          `json:"why,omitempty"`
}

// UnmarshalJSON decodes an event and its payload, typed by F.
func (e *Event) UnmarshalJSON(b []byte) error {
	d, err := decodeEvent(b)
	if err != nil {
		return err
	}
	*e = d
	return nil
}

// decodeEvent decodes one line; the Reader calls it directly, which saves the validation pass
// json.Unmarshal makes before calling UnmarshalJSON.
func decodeEvent(b []byte) (Event, error) { return decodeEventIf(b, nil) }

// decodeEventIf decodes an event, and its payload when want is nil or accepts the event (asked
// before the payload is set); otherwise the payload stays raw JSON.
func decodeEventIf(b []byte, want func(Event) bool) (Event, error) {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return Event{}, err
	}
	e := Event{Index: w.Index, Time: w.Time, Type: w.Type, Process: w.Process, F: w.F, Why: w.Why}
	if len(w.Value) == 0 || string(w.Value) == "null" {
		return e, nil
	}
	if want != nil && !want(e) {
		e.Value = w.Value // json.Unmarshal copied it out of b
		return e, nil
	}
	return withValue(e, w.Value)
}

// withValue sets e's payload decoded from raw by its F.
func withValue(e Event, raw []byte) (Event, error) {
	v, err := DecodeValue(e.F, raw)
	if err != nil {
		return Event{}, fmt.Errorf("event %d (f %q): %w", e.Index, e.F, err)
	}
	e.Value = v
	return e, nil
}

// String renders an event the way people quote it in bug reports.
func (e Event) String() string {
	b, _ := json.Marshal(e.Value)
	s := fmt.Sprintf("#%d %v %s %s %s %s", e.Index, e.Time, e.Process, e.Type, e.F, b)
	if e.Why != "" {
		s += " (" + e.Why + ")"
	}
	return s
}

// ValueAs returns e's payload as T whether the event holds a T, a *T or raw JSON. The error names
// the event, so a checker can report a malformed payload instead of guessing.
func ValueAs[T any](e Event) (T, error) {
	var zero T
	switch v := e.Value.(type) {
	case T:
		return v, nil
	case *T:
		if v == nil {
			return zero, fmt.Errorf("event %d (%s %s): nil %T payload", e.Index, e.Type, e.F, v)
		}
		return *v, nil
	case json.RawMessage:
		var t T
		if err := json.Unmarshal(v, &t); err != nil {
			return zero, fmt.Errorf("event %d (%s %s): payload is not a %T: %w", e.Index, e.Type, e.F, t, err)
		}
		return t, nil
	case nil:
		return zero, fmt.Errorf("event %d (%s %s): no payload, want %T", e.Index, e.Type, e.F, zero)
	default:
		return zero, fmt.Errorf("event %d (%s %s): payload is %T, want %T", e.Index, e.Type, e.F, v, zero)
	}
}
