package results

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// TestReportShowsTheFailure: the failing story's page says at once what failed and where. The
// banner names the violated checker with its first event, the partition and the members; the
// violated checkers head the verdicts table; the marks sit on the row of the partition the
// violation concerns (t-2) and on no other; the two owners of t-2 get a sub-lane each; a's
// ownerships that ended at its fence are hatched; the coordinator lane shows node 1, then node 2
// with b's NOT_COORDINATOR answer; the member lanes show a fenced and c leaving.
func TestReportShowsTheFailure(t *testing.T) {
	r, ix := failingStory(t)
	_, doc := render(t, r)

	// The banner.
	banners := doc.all(byTagClass("div", "banner"))
	if len(banners) != 1 || !banners[0].class("violated") {
		t.Fatalf("want one violated banner, got %d", len(banners))
	}
	var item *node
	for _, li := range banners[0].all(byTagClass("li", "bitem")) {
		if li.attr["data-checker"] == "NoDoubleOwnership" {
			item = li
		}
	}
	if item == nil {
		t.Fatalf("the banner does not name NoDoubleOwnership: %q", banners[0].allText())
	}
	if got := attrInt(t, item, "data-first-event"); got != ix["b-assigned"] {
		t.Errorf("the banner's first event of NoDoubleOwnership is %d, want b's assignment %d", got, ix["b-assigned"])
	}
	var on []string
	for _, sp := range item.all(byTagClass("span", "on")) {
		on = append(on, sp.text)
	}
	if got := strings.Join(on, "; "); got != "t-2; b, c" {
		t.Errorf("the banner's item names %q, want the partition t-2 and the members b, c", got)
	}
	var cites []string
	for _, a := range item.all(byTagClass("a", "")) {
		cites = append(cites, a.attr["href"])
	}
	if want := fmt.Sprintf("#v-NoDoubleOwnership #e%d #e%d", ix["b-assigned"], ix["c-assigned-t2"]); strings.Join(cites, " ") != want {
		t.Errorf("the banner's item links %v, want %s", cites, want)
	}
	if len(item.all(func(n *node) bool { return n.name == "button" && n.class("show") })) != 1 {
		t.Errorf("the banner's item has no \"show on the timeline\" button")
	}

	// The violated checkers first.
	rows := doc.all(byTagClass("tr", "verdict"))
	if len(rows) == 0 || !rows[0].class("violated") {
		t.Errorf("the verdicts table does not start with a violated checker")
	}

	// The marks: on t-2's row, not on the rows of t-0, t-1, t-3.
	onRow := map[string]int{}
	for _, a := range doc.all(func(n *node) bool {
		return n.name == "a" && n.class("vmark") && n.attr["data-checker"] == "NoDoubleOwnership"
	}) {
		if tp := a.attr["data-tp"]; tp != "" {
			onRow[tp]++
		}
	}
	if onRow["t-2"] < 2 || len(onRow) != 1 {
		t.Errorf("NoDoubleOwnership's marks by row: %v, want both cited events on t-2 and nothing else", onRow)
	}
	var lanes []string
	for _, txt := range doc.all(byTagClass("text", "violated")) {
		lanes = append(lanes, strings.TrimSpace(txt.text))
	}
	slices.Sort(lanes)
	if got := strings.Join(lanes, " "); got != "b c t-2" {
		t.Errorf("lanes labelled violated: %q, want b c t-2", got)
	}

	// Sub-lanes: b and c own t-2 at once, one above the other.
	var t2 *node
	for _, g := range doc.all(byTagClass("g", "row")) {
		if g.attr["data-tp"] == "t-2" {
			t2 = g
		}
		if g.attr["data-tp"] != "t-2" && g.attr["data-sublanes"] != "1" {
			t.Errorf("row %s has %s sub-lanes, want 1", g.attr["data-tp"], g.attr["data-sublanes"])
		}
	}
	if t2 == nil || t2.attr["data-sublanes"] != "2" {
		t.Fatalf("row t-2 does not have two sub-lanes: %v", t2)
	}
	ys := map[string]float64{}
	for _, rc := range t2.all(byTagClass("rect", "own")) {
		ys[rc.attr["data-member"]] = attrFloat(t, rc, "y")
	}
	if len(ys) != 2 || ys["b"] == ys["c"] {
		t.Errorf("the owners of t-2 are drawn at y %v, want b and c apart", ys)
	}

	// a's ownerships ended at its fence: hatched.
	if n := len(doc.all(byTagClass("g", "rows"))[0].all(byTagClass("rect", "lostmark"))); n != 2 {
		t.Errorf("%d hatched ownerships, want a's two", n)
	}

	// The coordinator: node 1, then node 2 (named by b, then the observer), b's NOT_COORDINATOR.
	coord := doc.all(byTagClass("g", "coordlane"))
	if len(coord) != 1 {
		t.Fatalf("%d coordinator lanes", len(coord))
	}
	var nodes []string
	for _, rc := range coord[0].all(byTagClass("rect", "coord")) {
		if !rc.class("stale") {
			nodes = append(nodes, rc.attr["data-node"]+"@"+rc.attr["data-event"])
		}
	}
	if want := fmt.Sprintf("1@%d 2@%d", ix["coord-1"], ix["coord-2"]); strings.Join(nodes, " ") != want {
		t.Errorf("coordinator spans %v, want %s", nodes, want)
	}
	nc := coord[0].all(byTagClass("path", "ncmark"))
	if len(nc) != 1 || attrInt(t, nc[0], "data-event") != ix["not-coord"] {
		t.Errorf("NOT_COORDINATOR marks %v, want one at event %d", nc, ix["not-coord"])
	}

	// Members: a in the group, then fenced and out; c leaves.
	lane := map[string]*node{}
	for _, g := range doc.all(byTagClass("g", "mlane")) {
		lane[g.attr["data-lane"]] = g
	}
	if len(lane) != 3 {
		t.Fatalf("member lanes %v, want a, b, c", lane)
	}
	var states []string
	for _, rc := range lane["a"].all(byTagClass("rect", "mstate")) {
		states = append(states, rc.attr["data-state"])
	}
	if got := strings.Join(states, ", "); got != stInGroup+", "+stOut {
		t.Errorf("a's membership: %s", got)
	}
	fenced := lane["a"].all(byTagClass("path", "m-fenced"))
	if len(fenced) != 1 || attrInt(t, fenced[0], "data-event") != ix["a-fenced"] {
		t.Errorf("a's lane does not mark its fence at event %d: %v", ix["a-fenced"], fenced)
	}
	left := lane["c"].all(byTagClass("path", "m-left"))
	if len(left) != 1 || attrInt(t, left[0], "data-event") != ix["c-left"] {
		t.Errorf("c's lane does not mark its leave at event %d", ix["c-left"])
	}

	// The fault: on its target's lane, its kind written on it.
	var labels []string
	for _, txt := range doc.all(byTagClass("text", "faultlabel")) {
		labels = append(labels, txt.text)
	}
	if strings.Join(labels, " ") != "pause" {
		t.Errorf("fault labels %q, want the pause's", labels)
	}
	if len(doc.all(func(n *node) bool { return n.name == "text" && n.class("lane") && n.text == "broker-1" })) != 1 {
		t.Errorf("no fault lane labelled with the target broker-1")
	}
}

// TestViolationPlacement: a violation concerns the partitions its message names, else those every
// cited event names, else those any names; its members are those the message names, else the
// cited events'.
func TestViolationPlacement(t *testing.T) {
	tp := func(p int32) history.TP { return history.TP{Topic: "t", Partition: p} }
	isTP := map[history.TP]bool{tp(0): true, tp(1): true, tp(10): true}
	isMember := map[string]bool{"a": true, "c": true, "m1": true}
	cited := map[int64]citedEvent{
		1: {index: 1, t: time.Second, member: "a", tps: []history.TP{tp(0), tp(1)}},
		2: {index: 2, t: 3 * time.Second, member: "c", tps: []history.TP{tp(1)}},
		3: {index: 3, t: 2 * time.Second, member: "", tps: []history.TP{tp(0)}},
	}
	for _, c := range []struct {
		msg        string
		events     []int64
		tps, names string
	}{
		{"partition t-1 owned by a and c at once", []int64{1, 2}, "[t-1]", "[a c]"},
		{"owned twice", []int64{1, 2}, "[t-1]", "[a c]"},         // the partition both events name
		{"consumed again", []int64{2, 3}, "[t-0 t-1]", "[c]"},    // no common partition: each
		{"t-10 moved: m1 and m10", []int64{1}, "[t-10]", "[m1]"}, // names are whole words
		{"nothing cited on the timeline", []int64{99}, "[]", "[]"},
	} {
		m := mapViolation("C", check.Violation{Message: c.msg, EventIndexes: c.events}, cited, isTP, isMember)
		if got := fmt.Sprint(m.tps); got != c.tps {
			t.Errorf("%q: partitions %s, want %s", c.msg, got, c.tps)
		}
		if got := fmt.Sprint(m.members); got != c.names {
			t.Errorf("%q: members %s, want %s", c.msg, got, c.names)
		}
	}
	m := mapViolation("C", check.Violation{Message: "x", EventIndexes: []int64{2, 1, 3}}, cited, isTP, isMember)
	if m.t0 != time.Second || m.t1 != 3*time.Second || len(m.events) != 3 {
		t.Errorf("the cited events span %v to %v (%d events), want 1s to 3s", m.t0, m.t1, len(m.events))
	}
}

// TestMembershipAndCoordinatorLanes: the lanes follow what the members and the observer record. A
// classic member joins, syncs, rebalances, is fenced, rejoins and stops for good; a
// consumer-protocol member joins with a heartbeat and leaves. The coordinator is node 1 (a member's
// FindCoordinator answer, the observer's describe) until a member finds node 2; NOT_COORDINATOR
// answers (a heartbeat's, and one a member reports as an error) are marked. The member that stopped
// is restarted by its supervisor (marked) and joins again.
func TestMembershipAndCoordinatorLanes(t *testing.T) {
	s := newStory(t)
	call := func(proc, f string, invoke, done any, typ history.Type) int64 {
		s.must(s.r.Invoke(proc, f, invoke, ""))
		return s.must(s.r.Record(history.Event{Type: typ, Process: proc, F: f, Value: done}))
	}
	join := history.Join{Member: "k", Generation: 1}
	sync := history.Sync{Member: "k", Generation: 1}
	s.at(time.Second)
	s.coordinator("k", 1)
	call("k/join", history.FJoin, join, join, history.OK)
	call("k/join", history.FSync, sync, sync, history.OK)
	hb := history.Heartbeat{Member: "q", Protocol: history.ProtocolConsumer}
	hbOK := hb
	hbOK.ResultEpoch = 3
	s.at(2 * time.Second)
	call("q/hb", history.FHeartbeat, hb, hbOK, history.OK)
	s.describe(1)
	s.at(3 * time.Second)
	call("k/join", history.FJoin, join, join, history.OK)
	call("k/join", history.FSync, sync, sync, history.OK)
	s.at(4 * time.Second)
	nc := s.notCoordinator("q", 3)
	ncErr := s.must(s.r.Info("k", "error", map[string]any{"member": "k", "error": "NOT_COORDINATOR"}, "JoinGroup answered NOT_COORDINATOR"))
	s.coordinator("q", 2)
	s.at(5 * time.Second)
	s.must(s.r.Fenced("k", history.Membership{Member: "k", Protocol: history.ProtocolClassic, Error: "ILLEGAL_GENERATION"}, ""))
	s.at(6 * time.Second)
	call("k/join", history.FJoin, join, join, history.OK)
	s.must(s.r.Info("k", history.FStopped, history.Membership{Member: "k", Error: "FENCED_INSTANCE_ID"}, "stopped for good"))
	s.must(s.r.Restarted("k", history.Restart{Member: "k", Action: history.RestartScheduled, Attempt: 1, Backoff: time.Second}, ""))
	s.must(s.r.Left("q", history.Membership{Member: "q", Protocol: history.ProtocolConsumer}, ""))
	s.at(7 * time.Second)
	s.must(s.r.Restarted("k", history.Restart{Member: "k", Action: history.RestartStarted, Attempt: 1, Backoff: time.Second}, ""))
	s.at(8 * time.Second)
	call("k/join", history.FJoin, join, join, history.OK)
	call("k/join", history.FSync, sync, sync, history.OK)

	var l lanes
	for _, e := range s.events() {
		l.add(&e)
	}
	states := func(m string) string {
		var out []string
		for _, sp := range l.members[m].spans {
			out = append(out, fmt.Sprintf("%s@%s", sp.state, sp.start))
		}
		return strings.Join(out, ", ")
	}
	if got, want := states("k"), "joining@1s, in group@1s, rebalancing@3s, in group@3s, out of the group@5s, joining@6s, stopped for good@6s, joining@7s, in group@8s"; got != want {
		t.Errorf("k's membership:\n got %s\nwant %s", got, want)
	}
	if got, want := states("q"), "joining@2s, in group@2s, out of the group@6s"; got != want {
		t.Errorf("q's membership:\n got %s\nwant %s", got, want)
	}
	var marks []string
	for _, m := range l.members["k"].marks {
		marks = append(marks, m.f+": "+m.detail)
	}
	if got := strings.Join(marks, "; "); got != "fenced: ILLEGAL_GENERATION; stopped: FENCED_INSTANCE_ID stopped for good; restart: by its supervisor (attempt 1, after 1s)" {
		t.Errorf("k's marks: %s", got)
	}
	var spans []string
	for _, c := range l.coord {
		spans = append(spans, fmt.Sprintf("node %d from %s by %s (%d)", c.node, c.start, c.by, c.seen))
	}
	if got, want := strings.Join(spans, "; "), "node 1 from 1s by k (2); node 2 from 4s by q (1)"; got != want {
		t.Errorf("coordinator:\n got %s\nwant %s", got, want)
	}
	var ncs []int64
	for _, m := range l.coordMarks {
		ncs = append(ncs, m.event)
	}
	if !slices.Equal(ncs, []int64{nc, ncErr}) {
		t.Errorf("NOT_COORDINATOR marks at events %v, want %d and %d", ncs, nc, ncErr)
	}
}

// TestRateBins: counting per bin keeps every event however long the run (the bins widen), and a
// stretch's count is its bins' in proportion.
func TestRateBins(t *testing.T) {
	var b rateBins
	const n = 200_000
	for i := range n {
		b.add(time.Duration(i) * 50 * time.Millisecond) // 20 a second for 10,000 s
	}
	if len(b.n) > maxRateBins || b.width <= 100*time.Millisecond {
		t.Errorf("%d bins of %v: the bins did not widen", len(b.n), b.width)
	}
	if got := b.count(0, time.Duration(n)*50*time.Millisecond); math.Abs(got-n) > 0.5 {
		t.Errorf("the whole run counts %.1f events, want %d", got, n)
	}
	if got := b.count(1000*time.Second, 1010*time.Second); math.Abs(got-200) > 20 {
		t.Errorf("10 s in the middle count %.1f events, want about 200", got)
	}
}

// TestTimelineContrast: every text drawn on the timeline has a contrast of at least 4.5:1 with
// what it is drawn on (WCAG 2's ratio), read from the page's own style sheet.
func TestTimelineContrast(t *testing.T) {
	r, _ := failingStory(t)
	page, _ := render(t, r)
	style := page[strings.Index(page, "<style>"):strings.Index(page, "</style>")]
	fill := map[string]string{}
	for _, m := range regexp.MustCompile(`([.\w, -]+)\{[^}]*?\bfill:#([0-9a-f]{6}|[0-9a-f]{3})\b`).FindAllStringSubmatch(style, -1) {
		c := m[2]
		if len(c) == 3 {
			c = string([]byte{c[0], c[0], c[1], c[1], c[2], c[2]})
		}
		for _, sel := range strings.Split(m[1], ",") {
			fill[strings.TrimSpace(sel)] = "#" + c
		}
	}
	get := func(sel string) string {
		c, ok := fill[sel]
		if !ok {
			t.Fatalf("the style sheet gives %s no fill (have %v)", sel, fill)
		}
		return c
	}
	type pair struct{ what, fg, bg string }
	pairs := []pair{
		{"tick labels", get(".ticklabel"), "#ffffff"},
		{"phase labels", get(".phaselabel"), "#ffffff"},
		{"lane labels on a stripe", get(".lane"), get(".stripe")},
		{"violated lane labels on a stripe", get(".lane.violated"), get(".stripe")},
		{"compressed stretch labels", get(".squeezedlabel"), "#ffffff"},
		{"joining on a pale member colour", get(".mlabel"), blend(palette[8], .35)},
		{"stopped", get(".mlabel.light"), get(".mstate.stopped")},
	}
	for _, f := range faultFamilies {
		pairs = append(pairs, pair{f.name, get(".faultlabel"), get(".fam-" + f.class)})
	}
	for _, n := range nodeFills {
		pairs = append(pairs, pair{"coordinator node " + n, get(".coordlabel"), n})
	}
	for _, p := range pairs {
		if c := contrast(p.fg, p.bg); c < 4.5 {
			t.Errorf("%s: %s on %s has contrast %.2f:1, want at least 4.5:1", p.what, p.fg, p.bg, c)
		}
	}
}

// blend is colour c at opacity a over white.
func blend(c string, a float64) string {
	out := "#"
	for i := 1; i < 7; i += 2 {
		v, _ := strconv.ParseUint(c[i:i+2], 16, 8)
		out += fmt.Sprintf("%02x", int(math.Round(a*float64(v)+(1-a)*255)))
	}
	return out
}

func contrast(a, b string) float64 {
	lum := func(c string) float64 {
		var l float64
		for i, w := range []float64{.2126, .7152, .0722} {
			v, _ := strconv.ParseUint(c[1+2*i:3+2*i], 16, 8)
			s := float64(v) / 255
			if s <= .04045 {
				s /= 12.92
			} else {
				s = math.Pow((s+.055)/1.055, 2.4)
			}
			l += w * s
		}
		return l
	}
	la, lb := lum(a), lum(b)
	return (max(la, lb) + .05) / (min(la, lb) + .05)
}

// TestTickLabel: whole minutes and hours drop their zero seconds and minutes, as the page's script
// writes the ticks it draws on zoom.
func TestTickLabel(t *testing.T) {
	for d, want := range map[time.Duration]string{
		2 * time.Minute:                  "2m",
		90 * time.Second:                 "1m30s",
		time.Hour:                        "1h",
		1500 * time.Millisecond:          "1.5s",
		200 * time.Millisecond:           "200ms",
		time.Hour + 30*time.Minute:       "1h30m",
		time.Hour + 30*time.Minute + 5e9: "1h30m5s",
		10 * time.Second:                 "10s",
	} {
		if got := tickLabel(d); got != want {
			t.Errorf("tickLabel(%v) = %q, want %q", d, got, want)
		}
	}
}
