package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
)

// sameAsJSON checks the direct path against encoding/json on line b: where the direct path takes a
// line, encoding/json must decode it to the same event (payload decoded, and left raw); where
// encoding/json refuses a line, the direct path must not take it.
func sameAsJSON(t *testing.T, b []byte) (direct bool) {
	t.Helper()
	var d decoder
	_, raw, ok := d.direct(b)
	want, wantErr := decodeEventIf(b, nil)
	wantRaw, wantRawErr := decodeEventIf(b, func(Event) bool { return false })
	if !ok {
		return false
	}
	if wantRawErr != nil {
		t.Fatalf("the direct path took %q, which encoding/json refuses: %v", b, wantRawErr)
	}
	if raw != nil && !json.Valid(raw) {
		t.Fatalf("the direct path took %q with a payload that is not JSON: %q", b, raw)
	}
	got, gotErr := d.decode(b, nil)
	if (gotErr != nil) != (wantErr != nil) || gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("line %q:\n direct        %+v (%v)\n encoding/json %+v (%v)", b, got, gotErr, want, wantErr)
	}
	gotRaw, err := d.decode(b, func(Event) bool { return false })
	if err != nil || !reflect.DeepEqual(gotRaw, wantRaw) {
		t.Fatalf("line %q with its payload left raw:\n direct        %+v (%v)\n encoding/json %+v", b, gotRaw, err, wantRaw)
	}
	return true
}

// TestDirectDecodingIsEncodingJSON: every line the Recorder wrote in a recorded run, and lines in
// other shapes, decode on the direct path exactly as encoding/json decodes them; the lines the
// Recorder writes do take the direct path.
func TestDirectDecodingIsEncodingJSON(t *testing.T) {
	f, err := os.Open("../check/testdata/mixed-conversion-seed-7/history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	n := 0
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !sameAsJSON(t, bytes.TrimRight(line, "\n")) {
			t.Errorf("a line the Recorder wrote missed the direct path: %s", line)
		}
		n++
	}
	if n < 500 {
		t.Fatalf("only %d lines read", n)
	}
	for _, c := range []struct {
		line   string
		direct bool
	}{
		{`{"index":1,"time":2,"type":"ok","process":"m","f":"heartbeat","value":{"member":"m","epoch":3}}`, true},
		{`{"index":1,"time":-2,"type":"info","process":"p","f":"custom","value":[1,2.5e-3,"x\u00e9\n",true,null,{}]}`, true},
		{`{"index":1,"time":2,"type":"ok","process":"m","f":"heartbeat","value":null,"why":"é ok"}`, true},
		{`{"index":1,"time":2,"type":"ok","process":"m\u0041","f":"heartbeat"}`, false}, // an escape in a name
		{`{"index":1, "time":2,"type":"ok","process":"m","f":"heartbeat"}`, false},
		{`{"time":2,"index":1,"type":"ok","process":"m","f":"heartbeat"}`, false},
		{`{"index":1.5,"time":2,"type":"ok","process":"m","f":"heartbeat"}`, false},
		{`{"index":01,"time":2,"type":"ok","process":"m","f":"heartbeat"}`, false},
		{`{"index":99999999999999999999,"time":2,"type":"ok","process":"m","f":"x"}`, false},
		{`{"index":1,"time":2,"type":"ok","process":"m","f":"heartbeat","value":{"member":}}`, false},
		{`{"index":1,"time":2,"type":"ok","process":"m","f":"heartbeat","value":{"member":"m"}`, false},
		{`{"index":1,"time":2,"type":"ok","process":"m","f":"heartbeat","value":{"epoch":"three"}}`, true}, // JSON, not a heartbeat: an error when decoded
		{`{"index":1,"time":2,"type":"ok","process":"m","f":"heartbeat","value":{"a":01}}`, false},
		{`{"index":1,"time":2,"type":"ok","process":"m","f":"heartbeat","value":"\x"}`, false},
		{`{"index":1,"time":2,"type":"ok","process":"m","f":"heartbeat","extra":1}`, false},
		{`{"index":1,"time":2,"type":"ok","process":"m","f":"heartbeat"} x`, false},
		{"{\"index\":1,\"time\":2,\"type\":\"ok\",\"process\":\"m\xff\",\"f\":\"x\"}", false},
	} {
		if got := sameAsJSON(t, []byte(c.line)); got != c.direct {
			t.Errorf("%s: direct path %v, want %v", c.line, got, c.direct)
		}
	}
}

// FuzzDirectDecoding: on any line, the direct path agrees with encoding/json or leaves the line
// to it.
func FuzzDirectDecoding(f *testing.F) {
	for _, s := range []string{
		`{"index":1,"time":2,"type":"ok","process":"m","f":"heartbeat","value":{"member":"m","epoch":3}}`,
		`{"index":7,"time":433719521,"type":"invoke","process":"m1/join","f":"join","value":{"member":"m1","member_id":"g-1","generation":-1},"why":"JoinGroup"}`,
		`{"index":1,"time":-2,"type":"info","process":"p","f":"custom","value":[1,2.5e-3,"x\u00e9\n",true,null,{}]}`,
		`{"index":3,"time":4,"type":"ok","process":"m","f":"consume","value":{"member":"m","topic":"t","partition":1,"offset":2,"seq":2,"epoch":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if bytes.ContainsAny(b, "\n") || strings.TrimSpace(string(b)) == "" {
			return
		}
		sameAsJSON(t, b)
	})
}
