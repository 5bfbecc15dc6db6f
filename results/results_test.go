package results

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

func ev(i int64, t time.Duration, typ history.Type, proc, f string, v any) history.Event {
	return history.Event{Index: i, Time: t, Type: typ, Process: proc, F: f, Value: v}
}

// sample: member a owns t-0 and t-1; b joins, a revokes t-1 and b gets it;
// broker 1 is paused for a while; a loses t-0 at the end.
func sample() []history.Event {
	s := time.Second
	return []history.Event{
		ev(0, 0, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseWorkload}),
		ev(1, 1*s, history.Info, "a", history.FAssigned, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0, 1)}),
		ev(2, 2*s, history.Info, "a", history.FRevoked, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 1)}),
		ev(3, 3*s, history.Info, "b", history.FAssigned, history.Assignment{Member: "b", Epoch: 2, Partitions: history.TPs("t", 1)}),
		ev(4, 4*s, history.Invoke, "nemesis", history.FFaultStart, history.Fault{What: "pause", Target: []string{"broker-1"}}),
		ev(5, 4*s, history.OK, "nemesis", history.FFaultStart, history.Fault{What: "pause", Target: []string{"broker-1"}}),
		ev(6, 6*s, history.Invoke, "nemesis", history.FFaultStop, history.Fault{What: "pause", Target: []string{"broker-1"}}),
		ev(7, 6*s, history.OK, "nemesis", history.FFaultStop, history.Fault{What: "pause", Target: []string{"broker-1"}}),
		ev(8, 8*s, history.Info, "a", history.FLost, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0)}),
		ev(9, 10*s, history.Info, "harness", history.FPhase, history.Phase{Name: history.PhaseFinal}),
	}
}

func verdicts() []check.Verdict {
	return []check.Verdict{
		{Name: "NoDoubleOwnership", Holds: true, Notes: []string{"checked 2 partitions"}},
		{Name: "NoLostRecords", Holds: false, Violations: []check.Violation{{Message: "record 7 of t-0 never consumed", EventIndexes: []int64{3, 8}}}},
		{Name: "RecoveredStateMatchesLog", Holds: true, Skipped: "no replay function"},
	}
}

func TestOwnerships(t *testing.T) {
	got := Ownerships(sample())
	if len(got) != 3 {
		t.Fatalf("got %d ownerships, want 3: %+v", len(got), got)
	}
	a0, a1, b1 := got[0], got[1], got[2]
	if a0.Member != "a" || a0.Partition.Partition != 0 || !a0.Lost || a0.End != 8*time.Second || a0.EndEvent != 8 {
		t.Errorf("a on t-0: %+v, want lost at 8s (event 8)", a0)
	}
	if a1.Member != "a" || a1.Lost || a1.Open || a1.End != 2*time.Second {
		t.Errorf("a on t-1: %+v, want revoked at 2s", a1)
	}
	if b1.Member != "b" || !b1.Open || b1.End != 10*time.Second || b1.EndEvent != -1 {
		t.Errorf("b on t-1: %+v, want open to the end (10s)", b1)
	}
}

func TestWriteReport(t *testing.T) {
	var buf bytes.Buffer
	err := WriteReport(&buf, Report{Title: "run 42", Command: "groupquake run --seed 42", Events: sample(), Verdicts: verdicts()})
	if err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{
		"run 42", "groupquake run --seed 42",
		"3 checkers: 1 hold, 1 violated, 1 skipped; 10 events",
		`<a href="#e3">#3</a>`, `<a href="#e8">#8</a>`, // violation links
		`id="e3"`, `id="e8"`, // and their targets
		"a owns t-0 at epoch 1 from 1s (event 1) to 8s, lost",
		"b owns t-1 at epoch 2 from 3s (event 3) to 10s, still owned at the end",
		"fault pause broker-1 from 4s to 6s",
		`class="own lost"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, "ZgotmplZ") {
		t.Errorf("the template escaper rejected a value (ZgotmplZ in the output)")
	}
	if !strings.Contains(html, `fill="hsl(`) || !strings.Contains(html, `background:hsl(`) {
		t.Errorf("member colours are missing from the bars or the legend")
	}
	// Offline: nothing is loaded from anywhere (the SVG namespace is a name, not a fetch).
	if m := regexp.MustCompile(`(src|href)="(https?:)?//`).FindString(html); m != "" {
		t.Errorf("report loads something from the network: %q", m)
	}
	if got := strings.Count(html, "<rect "); got != 3+1+2 { // 3 ownerships, 1 fault, 2 phases
		t.Errorf("%d rects in the timeline, want 6", got)
	}
}
