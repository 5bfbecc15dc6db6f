package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tickClock is a deterministic clock: every reading is 1ms later than the one before.
func tickClock() func() time.Duration {
	var n atomic.Int64
	return func() time.Duration { return time.Duration(n.Add(1)) * time.Millisecond }
}

func newTestRecorder(t *testing.T, w *bytes.Buffer) *Recorder {
	t.Helper()
	r, err := NewRecorder(w, tickClock(), Retain())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRecorderConcurrentUse(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	r, err := NewRecorder(&buf, tickClock(), Retain())
	if err != nil {
		t.Fatal(err)
	}
	const procs, calls = 8, 200
	var wg sync.WaitGroup
	for p := 0; p < procs; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proc := fmt.Sprintf("m%d", p)
			for i := 0; i < calls; i++ {
				c := Commit{Member: proc, Epoch: int32(i), Offsets: []OffsetAt{{"t", int32(p), int64(i)}}}
				if _, err := r.Invoke(proc, FCommit, c, ""); err != nil {
					t.Error(err)
					return
				}
				if _, err := r.Info(proc, FConsume, Consume{Member: proc, Topic: "t", Partition: int32(p), Offset: int64(i)}, "standalone fact while a call is open"); err != nil {
					t.Error(err)
					return
				}
				if _, err := r.OK(proc, c, ""); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	want := int64(procs * calls * 3)
	if r.Len() != want {
		t.Fatalf("recorded %d events, want %d", r.Len(), want)
	}
	l, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(l.Events)) != want || l.Truncated != nil {
		t.Fatalf("loaded %d events (truncated %v), want %d", len(l.Events), l.Truncated, want)
	}
	for i, e := range l.Events {
		if e.Index != int64(i) {
			t.Fatalf("event at line %d has index %d: indexes must be dense", i+1, e.Index)
		}
		if i > 0 && e.Time < l.Events[i-1].Time {
			t.Fatalf("time went back at index %d", i)
		}
	}
	if _, err := Pairs(l.Events); err != nil {
		t.Fatal(err)
	}
	if len(r.Open()) != 0 {
		t.Fatalf("open calls left: %v", r.Open())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b.Bytes()...)
}

func TestRecorderOneOpenCallPerProcess(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := newTestRecorder(t, &buf)
	if _, err := r.Invoke("m1", FCommit, Commit{Member: "m1"}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Invoke("m1", FHeartbeat, Heartbeat{Member: "m1"}, ""); err == nil || !strings.Contains(err.Error(), "still open") {
		t.Fatalf("second invoke while one is open: got %v, want an error", err)
	}
	// Another process is independent.
	if _, err := r.Invoke("m1/hb", FHeartbeat, Heartbeat{Member: "m1"}, ""); err != nil {
		t.Fatal(err)
	}
	// A completion with another f is refused.
	if _, err := r.Record(Event{Type: OK, Process: "m1", F: FJoin}); err == nil {
		t.Fatal("ok with the wrong f was accepted")
	}
	// An info with another f is a standalone fact and does not close the commit.
	if _, err := r.Info("m1", FAssigned, Assignment{Member: "m1"}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Invoke("m1", FCommit, Commit{Member: "m1"}, ""); err == nil {
		t.Fatal("standalone info closed the open commit")
	}
	// An info with the call's f closes it: unknown outcome.
	if _, err := r.Info("m1", FCommit, Commit{Member: "m1"}, "request timed out"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Invoke("m1", FCommit, Commit{Member: "m1"}, ""); err != nil {
		t.Fatalf("invoke after info completion: %v", err)
	}
	if _, err := r.Fail("m2", Commit{}, ""); err == nil {
		t.Fatal("fail without an open call was accepted")
	}
	if _, err := r.Record(Event{Type: "done", Process: "m1", F: FCommit}); err == nil {
		t.Fatal("unknown type accepted")
	}
	open := r.Open()
	if len(open) != 2 || open[0].Process != "m1/hb" || open[1].Process != "m1" {
		t.Fatalf("open calls = %v", open)
	}
	// Refused events were not written: indexes stay dense.
	l, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range l.Events {
		if e.Index != int64(i) {
			t.Fatalf("index %d at position %d", e.Index, i)
		}
	}
	if len(l.Events) != 5 {
		t.Fatalf("wrote %d events, want 5", len(l.Events))
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	if f.n > 1 {
		return 0, fmt.Errorf("disk full")
	}
	return len(p), nil
}

func TestRecorderStopsAfterWriteError(t *testing.T) {
	t.Parallel()
	r, err := NewRecorder(&failWriter{}, tickClock())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Info("harness", FPhase, Phase{Name: PhaseSetup}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Info("harness", FPhase, Phase{Name: PhaseWarmup}, ""); err == nil {
		t.Fatal("write error not reported")
	}
	if _, err := r.Info("harness", FPhase, Phase{Name: PhaseWorkload}, ""); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("recorder kept going after a write error: %v", err)
	}
	if _, err := NewRecorder(nil, tickClock()); err == nil {
		t.Fatal("nil writer accepted")
	}
	if _, err := NewRecorder(&bytes.Buffer{}, nil); err == nil {
		t.Fatal("nil clock accepted")
	}
}

func TestRoundTripTypedValues(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := newTestRecorder(t, &buf)
	must := func(_ Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.Info("harness", FPhase, Phase{Name: PhaseWorkload}, "start"))
	must(r.Invoke("p0", FProduce, Produce{Topic: "t", Partition: 1, Seq: 7, Offset: -1}, ""))
	must(r.OK("p0", Produce{Topic: "t", Partition: 1, Seq: 7, Offset: 3, Acked: true}, ""))
	must(r.Info("m1", FAssigned, Assignment{Member: "m1", Protocol: ProtocolConsumer, Epoch: 4, Partitions: TPs("t", 1, 0)}, "heartbeat assignment"))
	must(r.Info("m1", FConsume, Consume{Member: "m1", Topic: "t", Partition: 1, Offset: 3, Seq: 7, Epoch: 4}, ""))
	must(r.Invoke("nemesis", FFaultStart, Fault{What: "partition", Target: []string{"m1->coordinator"}}, ""))
	must(r.Info("nemesis", FFaultStart, Fault{What: "partition", Target: []string{"m1->coordinator"}}, "toxiproxy slow to answer"))
	must(r.Info("future", "new-thing", map[string]int{"x": 1}, ""))
	must(r.Stalled(Stall{From: 69100 * time.Millisecond, To: 81600 * time.Millisecond, Every: 100 * time.Millisecond}, "pulse late"))
	l, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Events[2].Value.(Produce); got.Offset != 3 || !got.Acked {
		t.Fatalf("produce = %+v", got)
	}
	a, err := ValueAs[Assignment](l.Events[3])
	if err != nil || a.Epoch != 4 || len(a.Partitions) != 2 || a.Partitions[0].Partition != 0 {
		t.Fatalf("assignment = %+v, %v", a, err)
	}
	if l.Events[3].Why != "heartbeat assignment" {
		t.Fatalf("why lost: %q", l.Events[3].Why)
	}
	if _, ok := l.Events[7].Value.(json.RawMessage); !ok {
		t.Fatalf("unknown f decoded as %T, want raw JSON", l.Events[7].Value)
	}
	if st, ok := l.Events[8].Value.(Stall); !ok || st.Len() != 12500*time.Millisecond || st.Every != 100*time.Millisecond || l.Events[8].Process != "harness" {
		t.Fatalf("stall = %#v (process %q)", l.Events[8].Value, l.Events[8].Process)
	}
	// ValueAs works on raw JSON too.
	raw := Event{Index: 9, F: FConsume, Value: json.RawMessage(`{"member":"m2","offset":5}`)}
	c, err := ValueAs[Consume](raw)
	if err != nil || c.Member != "m2" || c.Offset != 5 {
		t.Fatalf("ValueAs raw = %+v, %v", c, err)
	}
	if _, err := ValueAs[Commit](l.Events[4]); err == nil {
		t.Fatal("ValueAs gave a Commit from a Consume")
	}
	// Write produces what Read reads.
	var again bytes.Buffer
	if err := Write(&again, l.Events); err != nil {
		t.Fatal(err)
	}
	l2, err := Read(&again)
	if err != nil || len(l2.Events) != len(l.Events) {
		t.Fatalf("re-read %d events: %v", len(l2.Events), err)
	}
}

func sampleHistory(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	r := newTestRecorder(t, &buf)
	for i := 0; i < 5; i++ {
		if _, err := r.Info("m1", FConsume, Consume{Member: "m1", Topic: "t", Offset: int64(i)}, ""); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestLoadTruncatedLastLine(t *testing.T) {
	t.Parallel()
	full := sampleHistory(t)
	lines := bytes.SplitAfter(full, []byte("\n"))
	// Cut the fifth line in half, as a SIGKILL during the write would.
	cut := append(bytes.Join(lines[:4], nil), lines[4][:len(lines[4])/2]...)
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Load(path)
	if err != nil {
		t.Fatalf("a truncated last line must load: %v", err)
	}
	if len(l.Events) != 4 || l.Truncated == nil || l.Truncated.Line != 5 {
		t.Fatalf("got %d events, truncation %+v; want 4 events and line 5 truncated", len(l.Events), l.Truncated)
	}
	// A complete last event that lost only its newline is kept.
	l, err = Read(bytes.NewReader(bytes.TrimRight(full, "\n")))
	if err != nil || len(l.Events) != 5 || l.Truncated != nil {
		t.Fatalf("unterminated complete last line: %d events, %+v, %v", len(l.Events), l.Truncated, err)
	}
	// An empty file is an empty history.
	l, err = Read(bytes.NewReader(nil))
	if err != nil || len(l.Events) != 0 {
		t.Fatalf("empty history: %v %v", l, err)
	}
}

func TestLoadRejectsCorruptMiddleLine(t *testing.T) {
	t.Parallel()
	full := sampleHistory(t)
	lines := bytes.SplitAfter(full, []byte("\n"))
	lines[2] = []byte("{\"index\":2,\"ti\n")
	_, err := Read(bytes.NewReader(bytes.Join(lines, nil)))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("corrupt line 3: got %v, want an error naming line 3", err)
	}
	// A terminated but corrupt last line is corruption too, not truncation.
	lines = bytes.SplitAfter(full, []byte("\n"))
	lines[4] = []byte("garbage\n")
	if _, err := Read(bytes.NewReader(bytes.Join(lines, nil))); err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Fatalf("corrupt terminated last line: %v", err)
	}
	// Indexes going back are refused with the line.
	lines = bytes.SplitAfter(full, []byte("\n"))
	lines[3], lines[2] = lines[2], lines[3]
	if _, err := Read(bytes.NewReader(bytes.Join(lines, nil))); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Fatalf("swapped lines: %v", err)
	}
}

func TestPairs(t *testing.T) {
	t.Parallel()
	es := []Event{
		{Index: 0, Type: Invoke, Process: "a", F: FCommit},
		{Index: 1, Type: Info, Process: "a", F: FConsume},
		{Index: 2, Type: Invoke, Process: "b", F: FCommit},
		{Index: 3, Type: OK, Process: "a", F: FCommit},
		{Index: 4, Type: Info, Process: "b", F: FCommit},
		{Index: 5, Type: Invoke, Process: "c", F: FJoin},
	}
	p, err := Pairs(es)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{3, -1, 4, 0, 2, -1}
	for i := range want {
		if p[i] != want[i] {
			t.Fatalf("partners = %v, want %v", p, want)
		}
	}
	bad := append(es, Event{Index: 6, Type: OK, Process: "z", F: FJoin}, Event{Index: 7, Type: Invoke, Process: "c", F: FSync})
	if _, err := Pairs(bad); err == nil || !strings.Contains(err.Error(), "event 6") || !strings.Contains(err.Error(), "event 7") {
		t.Fatalf("pairing errors: %v", err)
	}
}

func TestObservationsRoundTrip(t *testing.T) {
	t.Parallel()
	o := &Observations{Group: "g", Final: Snapshot{
		Label: "final", HistoryLen: 43,
		Group:     &GroupDescription{GroupID: "g", Protocol: ProtocolConsumer, State: "Stable", GroupEpoch: 5, AssignmentEpoch: 5, Members: []MemberDescription{{MemberID: "x", MemberEpoch: 5, Assignment: TPs("t", 0)}}},
		Committed: []OffsetAt{{"t", 0, 1 << 60}}, HasCommitted: true,
		Records: []Record{{Offset: 9, KeyType: RecordOffsetCommit,
			Key:   map[string]any{"group": "g", "topic": "t", "partition": 0},
			Value: map[string]any{"offset": int64(1<<60 + 1)}}}, HasRecords: true,
	}}
	path := filepath.Join(t.TempDir(), "observations.json")
	if err := SaveObservations(path, o); err != nil {
		t.Fatal(err)
	}
	got, err := LoadObservations(path)
	if err != nil {
		t.Fatal(err)
	}
	r := got.Final.Records[0]
	if off, ok := r.ValueInt("Offset"); !ok || off != 1<<60+1 {
		t.Fatalf("offset = %d %v: large offsets must survive", off, ok)
	}
	if g, ok := r.KeyString("GROUP"); !ok || g != "g" {
		t.Fatalf("group = %q", g)
	}
	if !got.Final.Group.Stable() || len(got.All()) != 1 {
		t.Fatal("stable group not stable")
	}
}

// BenchmarkRead measures reading history.jsonl back (decoding every payload by its F):
//
//	go test -run '^$' -bench Read ./harness/history/
func BenchmarkRead(b *testing.B) {
	var buf bytes.Buffer
	r, err := NewRecorder(&buf, tickClock())
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100_000; i++ {
		if _, err := r.Info("m1", FConsume, Consume{Member: "m1", Protocol: ProtocolConsumer, Topic: "orders", Partition: int32(i % 12), Offset: int64(i), Seq: int64(i), Epoch: 7}, ""); err != nil {
			b.Fatal(err)
		}
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		l, err := Read(bytes.NewReader(data))
		if err != nil || len(l.Events) != 100_000 {
			b.Fatalf("read %d events: %v", len(l.Events), err)
		}
	}
	b.ReportMetric(100_000, "events/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100_000, "ns/event")
}

func TestTypedHelpersPickFAndType(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := newTestRecorder(t, &buf)
	a := Assignment{Member: "m1", Protocol: ProtocolClassic, Epoch: 3, Partitions: TPs("t", 0)}
	m := Membership{Member: "m1", Epoch: 3, Error: "UNKNOWN_MEMBER_ID"}
	calls := []func() (Event, error){
		func() (Event, error) { return r.BeginPhase(PhaseWorkload, "") },
		func() (Event, error) { return r.Assigned("m1", a, "sync") },
		func() (Event, error) { return r.Consumed("m1", Consume{Member: "m1", Topic: "t"}) },
		func() (Event, error) { return r.Revoked("m1", a, "rejoin") },
		func() (Event, error) { return r.Lost("m1", a, "fenced") },
		func() (Event, error) { return r.Fenced("m1", m, "heartbeat") },
		func() (Event, error) { return r.SessionExpired("observer", m, "gone from describe") },
		func() (Event, error) { return r.Left("m1", m, "close") },
		func() (Event, error) { return r.Stalled(Stall{From: time.Second, To: 3 * time.Second}, "pulse late") },
	}
	want := []string{FPhase, FAssigned, FConsume, FRevoked, FLost, FFenced, FSessionExpired, FLeft, FStall}
	for i, c := range calls {
		e, err := c()
		if err != nil || e.F != want[i] || e.Type != Info {
			t.Fatalf("helper %d: %+v %v, want info %s", i, e, err, want[i])
		}
	}
}

// FuzzRead: whatever bytes a crash or a disk leaves, Read returns events or an error, never panics,
// and what it returns has strictly increasing indexes.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"index":0,"time":1,"type":"info","process":"m1","f":"consume","value":{"member":"m1","offset":3}}` + "\n"))
	f.Add([]byte(`{"index":0,"time":1,"type":"invoke","process":"p0","f":"produce","value":{"topic":"t","offset":-1}}` + "\n" + `{"index":1,"ti`))
	f.Add([]byte(`{"index":0,"type":"ok","f":"commit","value":[1,2]}` + "\n"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := 1; i < len(l.Events); i++ {
			if l.Events[i].Index <= l.Events[i-1].Index {
				t.Fatalf("indexes not increasing: %d then %d", l.Events[i-1].Index, l.Events[i].Index)
			}
		}
	})
}

// readStream reads with the streaming Reader, for comparison with Read.
func readStream(data []byte) (Loaded, error) {
	rd := NewReader(bytes.NewReader(data))
	var out Loaded
	for {
		e, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				out.Truncated = rd.Truncated()
				return out, nil
			}
			return Loaded{}, err
		}
		out.Events = append(out.Events, e)
	}
}

// longLines is a history whose lines are longer than the Reader's buffer, between short ones.
func longLines(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	r := newTestRecorder(t, &buf)
	for i := range 4 {
		why := strings.Repeat("é<\"", i*40_000)
		if _, err := r.Info("m1", FConsume, Consume{Member: "m1", Topic: "t", Offset: int64(i)}, why); err != nil {
			t.Fatal(err)
		}
	}
	if buf.Len() < 3<<16 {
		t.Fatalf("the long lines are %d bytes in all: not longer than the buffer", buf.Len())
	}
	return buf.Bytes()
}

// TestReaderLeavesPayloadsRaw: with DecodeIf, the payloads it turns down stay raw JSON that
// ValueAs decodes to what Read gives; the others are decoded.
func TestReaderLeavesPayloadsRaw(t *testing.T) {
	t.Parallel()
	data := longLines(t)
	all, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	rd := NewReader(bytes.NewReader(data), DecodeIf(func(e Event) bool { return e.Index%2 == 0 }))
	for i := 0; ; i++ {
		e, err := rd.Next()
		if err == io.EOF {
			if i != len(all.Events) {
				t.Fatalf("read %d events, want %d", i, len(all.Events))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		_, raw := e.Value.(json.RawMessage)
		if raw != (e.Index%2 == 1) {
			t.Errorf("event %d: payload %T", e.Index, e.Value)
		}
		c, err := ValueAs[Consume](e)
		if err != nil || c != all.Events[i].Value.(Consume) || e.Why != all.Events[i].Why {
			t.Errorf("event %d: %+v (%v), want %+v", e.Index, c, err, all.Events[i].Value)
		}
	}
}

func TestReaderAgreesWithRead(t *testing.T) {
	t.Parallel()
	full := sampleHistory(t)
	lines := bytes.SplitAfter(full, []byte("\n"))
	corrupt := append(append(append([]byte(nil), lines[0]...), "nonsense\n"...), bytes.Join(lines[1:], nil)...)
	cases := map[string][]byte{
		"full":             full,
		"truncated":        full[:len(full)-9],
		"no last newline":  bytes.TrimRight(full, "\n"),
		"blank lines":      append(append([]byte("\n"), bytes.Join(lines[:3], []byte("\n"))...), "\n\n"...),
		"corrupt line 2":   corrupt,
		"empty":            nil,
		"only blank lines": []byte("\n \n"),
		"long lines":       longLines(t),
	}
	for name, data := range cases {
		a, errA := Read(bytes.NewReader(data))
		b, errB := readStream(data)
		if (errA == nil) != (errB == nil) || len(a.Events) != len(b.Events) || (a.Truncated == nil) != (b.Truncated == nil) {
			t.Fatalf("%s: Read gave %d events, truncated %v, err %v; Reader gave %d, %v, %v", name, len(a.Events), a.Truncated, errA, len(b.Events), b.Truncated, errB)
		}
		if a.Truncated != nil && *a.Truncated != *b.Truncated {
			t.Fatalf("%s: truncation %+v vs %+v", name, a.Truncated, b.Truncated)
		}
		if errA != nil && errA.Error() != errB.Error() {
			t.Fatalf("%s: errors differ:\n%v\n%v", name, errA, errB)
		}
		if !reflect.DeepEqual(a.Events, b.Events) {
			t.Fatalf("%s: Read and Reader decode different events", name)
		}
	}
	if l, _ := Read(bytes.NewReader(cases["blank lines"])); len(l.Events) != 3 {
		t.Fatalf("blank lines: %d events, want 3", len(l.Events))
	}
}

func TestRecorderKeepsValuesNotPointers(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := newTestRecorder(t, &buf)
	e, err := r.Info("m1", FAssigned, &Assignment{Member: "m1", Epoch: 2}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Value.(Assignment); !ok {
		t.Fatalf("recorded value is %T, want history.Assignment", e.Value)
	}
	raw := json.RawMessage(`{"member":"m1","epoch":3,"extra":"kept"}`)
	e, err = r.Info("m1", FAssigned, raw, "")
	if err != nil || !bytes.Contains(buf.Bytes(), []byte(`"extra":"kept"`)) {
		t.Fatalf("raw payload not written as given: %v\n%s", err, buf.Bytes())
	}
	if v, err := TypedValue(e); err != nil || v.(Assignment).Epoch != 3 {
		t.Fatalf("TypedValue(raw) = %v, %v", v, err)
	}
}

// A tap sees every event as written, in index order, and nothing that was
// refused.
func TestRecorderTap(t *testing.T) {
	var seen []int64
	r, err := NewRecorder(io.Discard, func() time.Duration { return 0 }, Tap(func(e Event) { seen = append(seen, e.Index) }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Invoke("p0", FProduce, Produce{Topic: "t"}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Invoke("p0", FProduce, Produce{Topic: "t"}, ""); err == nil {
		t.Fatal("a second open call on p0 was accepted")
	}
	if _, err := r.OK("p0", Produce{Topic: "t", Acked: true}, ""); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, []int64{0, 1}) {
		t.Errorf("tap saw %v, want [0 1]", seen)
	}
}

func TestListsClientOf(t *testing.T) {
	g := &GroupDescription{Members: []MemberDescription{{ClientID: "groupquake-m1"}, {ClientID: "groupquake-m3-give-up-on-no-answer"}}}
	for name, want := range map[string]bool{"m1": true, "m3": true, "m10": false, "m2": false, "": false} {
		if got := g.ListsClientOf(name); got != want {
			t.Errorf("ListsClientOf(%q) = %v, want %v", name, got, want)
		}
	}
	if (*GroupDescription)(nil).ListsClientOf("m1") {
		t.Errorf("a missing description lists a member")
	}
}

// A flapping link's edges are facts of its fault's process: recorded while the fault's start or
// stop is open they close neither, the start and the stop pair with their own completions, and
// the edges read back as FaultEdge values (from a pointer too).
func TestFaultEdgesBesideTheFault(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := newTestRecorder(t, &buf)
	must := func(e Event, err error) Event {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	v := Fault{What: "link-flap", Target: []string{"m1->all-brokers"}}
	edge := func(x FaultEdge) FaultEdge { x.What, x.Target = v.What, v.Target; return x }
	must(r.Invoke("nemesis/2", FFaultStart, v, ""))
	must(r.Info("nemesis/2", FFaultEdge, edge(FaultEdge{Edge: EdgeCut, Cut: 1}), ""))
	must(r.OK("nemesis/2", v, ""))
	must(r.Info("nemesis/2", FFaultEdge, edge(FaultEdge{Edge: EdgeUp, Cut: 1}), ""))
	must(r.Info("nemesis/2", FFaultEdge, edge(FaultEdge{Edge: EdgeCut, Cut: 2}), ""))
	must(r.Invoke("nemesis/2", FFaultStop, v, ""))
	p := edge(FaultEdge{Edge: EdgeUp, Cut: 2, Final: true})
	if e := must(r.Info("nemesis/2", FFaultEdge, &p, "the heal")); !reflect.DeepEqual(e.Value, p) {
		t.Errorf("a *FaultEdge recorded as %T", e.Value)
	}
	must(r.OK("nemesis/2", v, ""))
	if open := r.Open(); len(open) != 0 {
		t.Fatalf("calls left open: %v", open)
	}
	l, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	partner, err := Pairs(l.Events)
	if err != nil {
		t.Fatal(err)
	}
	if partner[0] != 2 || partner[5] != 7 {
		t.Errorf("the start pairs with %d, the stop with %d: want their completions 2 and 7", partner[0], partner[5])
	}
	var got []string
	for _, i := range []int{1, 3, 4, 6} {
		x, ok := l.Events[i].Value.(FaultEdge)
		if !ok || l.Events[i].Type != Info || partner[i] >= 0 {
			t.Fatalf("event %d: %T, %s, partner %d: want a standalone FaultEdge", i, l.Events[i].Value, l.Events[i].Type, partner[i])
		}
		if x.What != "link-flap" || x.Target[0] != "m1->all-brokers" {
			t.Errorf("event %d names %+v", i, x)
		}
		got = append(got, fmt.Sprintf("%s %d %v", x.Edge, x.Cut, x.Final))
	}
	if want := []string{"cut 1 false", "up 1 false", "cut 2 false", "up 2 true"}; !slices.Equal(got, want) {
		t.Errorf("edges %q, want %q", got, want)
	}
}
