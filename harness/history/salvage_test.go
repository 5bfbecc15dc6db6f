package history

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestReadWhole: ReadWhole keeps what is certainly the history of a file that breaks the
// Recorder's rules, and says what it set aside.
func TestReadWhole(t *testing.T) {
	t.Parallel()
	lines := func() [][]byte { return bytes.SplitAfter(bytes.TrimRight(sampleHistory(t), "\n"), []byte("\n")) }
	fix := func(ls [][]byte) [][]byte { // every line ends with its newline
		out := make([][]byte, len(ls))
		for i, l := range ls {
			out[i] = append(bytes.TrimRight(slices.Clone(l), "\n"), '\n')
		}
		return out
	}
	indexes := func(l Loaded) []int64 {
		var out []int64
		for _, e := range l.Events {
			out = append(out, e.Index)
		}
		return out
	}
	for _, c := range []struct {
		name     string
		file     func() [][]byte
		want     []int64
		unjudged int
		flaw     string // in the flaws, "" for none
	}{
		{"a whole history", func() [][]byte { return fix(lines()) }, []int64{0, 1, 2, 3, 4}, 0, ""},
		{"lines out of order", func() [][]byte {
			l := fix(lines())
			l[1], l[3] = l[3], l[1]
			return l
		}, []int64{0, 1, 2, 3, 4}, 0, "out of index order (the first: line 3, event 2"},
		{"a line repeated", func() [][]byte {
			l := fix(lines())
			return slices.Insert(l, 2, l[1])
		}, []int64{0, 1, 2, 3, 4}, 0, "line 3 repeats line 2 (event 1): read once"},
		{"the file written twice", func() [][]byte { return append(fix(lines()), fix(lines())...) }, []int64{0, 1, 2, 3, 4}, 0, "line 6 repeats line 1"},
		{"a line lost", func() [][]byte { return slices.Delete(fix(lines()), 2, 3) }, []int64{0, 1}, 2, "events 2 to 2 are missing"},
		{"a line garbled", func() [][]byte {
			l := fix(lines())
			l[2] = []byte("{\"index\":2,\"ti\n")
			return l
		}, []int64{0, 1}, 2, "line 3 is not a valid event"},
		{"a line of another type", func() [][]byte {
			l := fix(lines())
			l[2] = bytes.Replace(l[2], []byte(`"type":"info"`), []byte(`"type":"maybe"`), 1)
			return l
		}, []int64{0, 1}, 2, `event 2) has event type "maybe"`},
		{"an index given twice", func() [][]byte {
			l := fix(lines())
			other := bytes.Replace(l[3], []byte(`"m1"`), []byte(`"m2"`), 1)
			return slices.Insert(l, 4, other)
		}, []int64{0, 1, 2}, 2, "lines 4 and 5 both hold event 3"},
		{"the first lines lost", func() [][]byte { return fix(lines())[2:] }, nil, 3, "events 0 to 1 are missing"},
		{"a garbage line that held no event", func() [][]byte { return slices.Insert(fix(lines()), 0, []byte("not an event\n")) }, []int64{0, 1, 2, 3, 4}, 0, "line 1 is not a valid event"},
		{"the last line cut short", func() [][]byte {
			l := fix(lines())
			l[4] = l[4][:10]
			return l
		}, []int64{0, 1, 2, 3}, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := ReadWhole(bytes.NewReader(bytes.Join(c.file(), nil)))
			if err != nil {
				t.Fatal(err)
			}
			if got := indexes(l); !slices.Equal(got, c.want) || l.Unjudged != c.unjudged {
				t.Fatalf("kept %v and set %d aside, want %v and %d (flaws %v)", got, l.Unjudged, c.want, c.unjudged, l.Flaws)
			}
			var msgs []string
			for _, f := range l.Flaws {
				msgs = append(msgs, f.Message)
			}
			all := strings.Join(msgs, "\n")
			if c.flaw == "" && len(l.Flaws) > 0 || c.flaw != "" && !strings.Contains(all, c.flaw) {
				t.Fatalf("flaws %q, want %q", all, c.flaw)
			}
			if c.unjudged > 0 && !strings.Contains(all, "is whole only up to event") {
				t.Fatalf("flaws do not say where the history stops being whole: %q", all)
			}
			// On a history without flaws, Read agrees.
			if strict, err := Read(bytes.NewReader(bytes.Join(c.file(), nil))); c.flaw == "" && (err != nil || !slices.Equal(indexes(strict), c.want)) {
				t.Fatalf("Read: %v, %v", indexes(strict), err)
			}
		})
	}
}
