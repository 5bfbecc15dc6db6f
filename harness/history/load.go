package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
)

// Reader reads history.jsonl one event at a time, so a checker or a report can stream a history that
// does not fit in memory.
type Reader struct {
	br        *bufio.Reader
	line      int
	lastIndex int64
	truncated *Truncation
	err       error
	decode    func(Event) bool
	dec       decoder
	long      []byte // a line longer than the buffer
}

// readLine returns the next line, its '\n' included, valid until the next call: decoding copies
// what it keeps, so reading a history allocates nothing per line.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, err
	}
	r.long = append(r.long[:0], line...)
	for err == bufio.ErrBufferFull {
		line, err = r.br.ReadSlice('\n')
		r.long = append(r.long, line...)
	}
	return r.long, err
}

// ReaderOption configures a Reader.
type ReaderOption interface{ apply(*Reader) }

type readerOpt func(*Reader)

func (o readerOpt) apply(r *Reader) { o(r) }

// DecodeIf decodes the payload only of the events want accepts, asked with the event before its
// payload is set; the others keep theirs as json.RawMessage, which ValueAs and TypedValue decode
// when asked. Decoding the payloads is most of the cost of reading a history, so a reader that
// looks at few of them (the report of a long run) reads much faster. A payload left raw is only
// checked to be JSON, not to be its F's payload.
func DecodeIf(want func(e Event) bool) ReaderOption {
	return readerOpt(func(r *Reader) { r.decode = want })
}

// Truncation describes an unterminated, undecodable last line: what a SIGKILL during a write leaves.
type Truncation struct {
	Line  int `json:"line"`
	Bytes int `json:"bytes"`
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader, opts ...ReaderOption) *Reader {
	rd := &Reader{br: bufio.NewReaderSize(r, 1<<16), lastIndex: -1}
	for _, o := range opts {
		o.apply(rd)
	}
	return rd
}

// Next returns the next event, or io.EOF after the last complete one. A line that does not decode is
// an error naming its line number, except an unterminated last line, which is reported by Truncated
// and ends the stream. Indexes must increase strictly.
func (r *Reader) Next() (Event, error) {
	for r.err == nil {
		line, err := r.readLine()
		if len(line) == 0 && err == io.EOF {
			r.err = io.EOF
			break
		}
		if err != nil && err != io.EOF {
			r.err = fmt.Errorf("history: reading line %d: %w", r.line+1, err)
			break
		}
		r.line++
		terminated := err == nil
		body := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(body)) == 0 {
			if !terminated {
				r.err = io.EOF
			}
			continue // a blank line (an editor's trailing newline) carries nothing
		}
		e, derr := r.dec.decode(body, r.decode)
		if derr != nil {
			if !terminated {
				r.truncated = &Truncation{Line: r.line, Bytes: len(line)}
				r.err = io.EOF
				break
			}
			r.err = fmt.Errorf("history: line %d is not a valid event (%v): the file is corrupt in the middle, not just truncated; inspect line %d (sed -n %dp history.jsonl)", r.line, derr, r.line, r.line)
			break
		}
		if !e.Type.Valid() {
			r.err = fmt.Errorf("history: line %d has event type %q, want invoke, ok, fail or info", r.line, e.Type)
			break
		}
		if e.Index <= r.lastIndex {
			r.err = fmt.Errorf("history: line %d has index %d after index %d: indexes must increase; was the file concatenated or written by two recorders?", r.line, e.Index, r.lastIndex)
			break
		}
		r.lastIndex = e.Index
		if !terminated {
			// A complete event without its newline: the write was cut just before '\n'. Keep it.
			r.err = io.EOF
		}
		return e, nil
	}
	return Event{}, r.err
}

// Truncated reports the truncated last line, if Next met one.
func (r *Reader) Truncated() *Truncation { return r.truncated }

// Loaded is a whole history read into memory.
type Loaded struct {
	Events []Event
	// Truncated is set when the last line was cut off (the run was killed mid-write); every complete
	// event before it is in Events.
	Truncated *Truncation
	// Flaws and Unjudged are set by ReadWhole only: what breaks the Recorder's rules, and how
	// many complete events it left out because they come after a missing or conflicting one.
	Flaws    []Flaw
	Unjudged int
}

// Read reads a whole history from r. It decodes lines on every CPU (decoding JSON is the cost of
// loading a long run) and then applies the same rules as Reader, reporting the first bad line.
func Read(r io.Reader) (Loaded, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Loaded{}, fmt.Errorf("history: reading: %w", err)
	}
	var lines [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i+1])
		data = data[i+1:]
	}
	events := make([]Event, len(lines))
	errs := make([]error, len(lines))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(lines)/1024))
	chunk := (len(lines) + workers - 1) / max(workers, 1)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, len(lines))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var d decoder
			for i := lo; i < hi; i++ {
				events[i], errs[i] = d.decode(bytes.TrimRight(lines[i], "\r\n"), nil)
			}
		}()
	}
	wg.Wait()
	var out Loaded
	last := int64(-1)
	kept := 0
	for i, line := range lines {
		n := i + 1
		terminated := line[len(line)-1] == '\n'
		if len(bytes.TrimSpace(line)) == 0 {
			continue // a blank line carries nothing
		}
		if errs[i] != nil {
			if !terminated {
				out.Truncated = &Truncation{Line: n, Bytes: len(line)}
				break
			}
			return Loaded{}, fmt.Errorf("history: line %d is not a valid event (%v): the file is corrupt in the middle, not just truncated; inspect line %d (sed -n %dp history.jsonl)", n, errs[i], n, n)
		}
		e := events[i]
		if !e.Type.Valid() {
			return Loaded{}, fmt.Errorf("history: line %d has event type %q, want invoke, ok, fail or info", n, e.Type)
		}
		if e.Index <= last {
			return Loaded{}, fmt.Errorf("history: line %d has index %d after index %d: indexes must increase; was the file concatenated or written by two recorders?", n, e.Index, last)
		}
		last = e.Index
		events[kept] = e
		kept++
		out.Events = events[:kept]
	}
	return out, nil
}

// Load reads the history file at path.
func Load(path string) (Loaded, error) { return loadWith(path, Read) }

// loadWith reads the history file at path with read; an error names the
// file.
func loadWith(path string, read func(io.Reader) (Loaded, error)) (Loaded, error) {
	f, err := os.Open(path)
	if err != nil {
		return Loaded{}, err
	}
	defer f.Close()
	l, err := read(f)
	if err != nil {
		return Loaded{}, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// Write writes events as JSONL, as the Recorder would (for tests, tools and reduced histories).
func Write(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("history: encoding event %d: %w", e.Index, err)
		}
	}
	return bw.Flush()
}

// Pairs links every event to its partner by position in events: an invoke to its completion and a
// completion to its invoke; -1 for standalone info events, for invokes still open at the end
// (unknown outcome) and for events that break the pairing rule of the package doc. It keeps going
// past such events, so checkers can still judge the rest, and returns them joined in the error
// (the first maxPairErrors of them).
func Pairs(events []Event) ([]int, error) {
	const maxPairErrors = 20
	partner := make([]int, len(events))
	open := map[string]int{}
	var errs []error
	n := 0
	keep := func() bool { // counts a pairing error and says whether to keep (format) it
		n++
		return len(errs) < maxPairErrors
	}
	for i, e := range events {
		partner[i] = -1
		inv, isOpen := open[e.Process]
		switch e.Type {
		case Invoke:
			if isOpen {
				if keep() {
					errs = append(errs, fmt.Errorf("event %d: process %q invoked %q while its %q call from event %d is still open", e.Index, e.Process, e.F, events[inv].F, events[inv].Index))
				}
			}
			open[e.Process] = i
		case OK, Fail:
			switch {
			case !isOpen:
				if keep() {
					errs = append(errs, fmt.Errorf("event %d: process %q recorded %s %q with no open call", e.Index, e.Process, e.Type, e.F))
				}
			case events[inv].F != e.F:
				if keep() {
					errs = append(errs, fmt.Errorf("event %d: process %q recorded %s %q but its open call (event %d) is %q", e.Index, e.Process, e.Type, e.F, events[inv].Index, events[inv].F))
				}
			default:
				partner[i], partner[inv] = inv, i
				delete(open, e.Process)
			}
		case Info:
			if isOpen && events[inv].F == e.F {
				partner[i], partner[inv] = inv, i
				delete(open, e.Process)
			}
		default:
			if keep() {
				errs = append(errs, fmt.Errorf("event %d has type %q", e.Index, e.Type))
			}
		}
	}
	if n > len(errs) {
		errs = append(errs, fmt.Errorf("and %d more pairing errors", n-len(errs)))
	}
	if len(errs) > 0 {
		return partner, fmt.Errorf("history: calls are not paired (a writer bypassed the Recorder or two recorders wrote one file): %w", errors.Join(errs...))
	}
	return partner, nil
}
