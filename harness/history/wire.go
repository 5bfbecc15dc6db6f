package history

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// decoder decodes history lines. Lines in the shape the Recorder writes them (json.Marshal of an
// Event: index, time, type, process, f, then value and why when set, strings without escapes)
// take a direct path that neither reflects nor validates the line twice; any other line (escapes,
// another key order, extra keys, a number that is not an integer) goes through encoding/json,
// which decides what is valid. names interns the few process names and Fs of a history, so a
// long history does not hold a copy of each per event.
type decoder struct {
	names map[string]string
}

// maxNames bounds the interned names: a history with more distinct processes gets the rest
// allocated per event, as encoding/json would.
const maxNames = 4096

func (d *decoder) decode(b []byte, want func(Event) bool) (Event, error) {
	if e, raw, ok := d.direct(b); ok {
		if raw == nil {
			return e, nil
		}
		if want != nil && !want(e) {
			e.Value = json.RawMessage(append(make([]byte, 0, len(raw)), raw...))
			return e, nil
		}
		return withValue(e, raw)
	}
	return decodeEventIf(b, want)
}

// direct parses a line in the Recorder's shape; ok is false when the line is in any other shape
// (or not JSON), and encoding/json must decide. raw is the payload, nil when absent or null; it
// has been checked to be one JSON value.
func (d *decoder) direct(b []byte) (e Event, raw []byte, ok bool) {
	p := wireParser{b: bytes.TrimRight(b, " \t\r\n")}
	if !p.lit(`{"index":`) {
		return e, nil, false
	}
	if e.Index, ok = p.int(); !ok {
		return e, nil, false
	}
	var t int64
	if !p.lit(`,"time":`) {
		return e, nil, false
	}
	if t, ok = p.int(); !ok {
		return e, nil, false
	}
	e.Time = time.Duration(t)
	var typ, proc, f []byte
	if !p.lit(`,"type":`) {
		return e, nil, false
	}
	if typ, ok = p.str(); !ok || !p.lit(`,"process":`) {
		return e, nil, false
	}
	if proc, ok = p.str(); !ok || !p.lit(`,"f":`) {
		return e, nil, false
	}
	if f, ok = p.str(); !ok {
		return e, nil, false
	}
	if p.lit(`,"value":`) {
		start := p.i
		if !p.value(0) {
			return e, nil, false
		}
		raw = p.b[start:p.i]
		if string(raw) == "null" {
			raw = nil
		}
	}
	if p.lit(`,"why":`) {
		why, ok := p.str()
		if !ok {
			return e, nil, false
		}
		e.Why = string(why)
	}
	if !p.lit("}") || p.i != len(p.b) {
		return e, nil, false
	}
	e.Type, e.Process, e.F = Type(d.name(typ)), d.name(proc), d.name(f)
	return e, raw, true
}

func (d *decoder) name(b []byte) string {
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.names == nil {
		d.names = map[string]string{}
	}
	if len(d.names) < maxNames {
		d.names[s] = s
	}
	return s
}

// wireParser reads the JSON of one line from b at i.
type wireParser struct {
	b []byte
	i int
}

func (p *wireParser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// int reads an integer as JSON writes one (no fraction, no exponent) that fits an int64.
func (p *wireParser) int() (int64, bool) {
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || p.b[digits] == '0' && p.i-digits > 1 {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	n, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
	return n, err == nil
}

// str reads a string without escapes, control characters or invalid UTF-8 (encoding/json
// rewrites those); it returns the bytes between the quotes.
func (p *wireParser) str() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	ascii := true
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			p.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// maxDepth bounds the nesting of a payload on the direct path (encoding/json takes deeper ones).
const maxDepth = 64

// value skips one JSON value, checking its grammar (RFC 8259): objects, arrays, strings (escapes
// included), numbers, true, false, null.
func (p *wireParser) value(depth int) bool {
	if depth > maxDepth || p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		return p.elems("}", func() bool { return p.anyStr() && p.lit(":") && p.value(depth+1) })
	case c == '[':
		p.i++
		return p.elems("]", func() bool { return p.value(depth + 1) })
	case c == '"':
		return p.anyStr()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return p.lit("true") || p.lit("false") || p.lit("null")
}

// elems skips the comma-separated elements of an object or array up to
// and including end (its opening bracket already skipped), each with elem.
func (p *wireParser) elems(end string, elem func() bool) bool {
	if p.lit(end) {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if p.lit(end) {
			return true
		}
		if !p.lit(",") {
			return false
		}
	}
}

// anyStr skips a string, escapes included.
func (p *wireParser) anyStr() bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	start := p.i + 1
	ascii := true
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(p.b[start:j]) {
				return false
			}
			p.i = j + 1
			return true
		case c < 0x20:
			return false
		case c >= 0x80:
			ascii = false
		case c == '\\':
			j++
			if j >= len(p.b) {
				return false
			}
			switch p.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(p.b) {
					return false
				}
				for _, h := range p.b[j+1 : j+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

func (p *wireParser) number() bool {
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	p.lit("-")
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return false
	}
	if p.lit(".") && digits() == 0 {
		return false
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if !p.lit("+") {
			p.lit("-")
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
