package results

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// shareCall records one share call of member m: its invoke at the story's time, then its answer
// (typ OK, Fail or Info) at answered.
func (s *story) shareCall(m, f string, typ history.Type, answered time.Duration, sent, answer history.ShareFetch) (inv, ans int64) {
	s.t.Helper()
	proc := m + "/fetch"
	inv = s.must(s.r.Invoke(proc, f, sent, ""))
	s.now = answered
	switch typ {
	case history.OK:
		ans = s.must(s.r.OK(proc, answer, ""))
	case history.Fail:
		ans = s.must(s.r.Fail(proc, answer, ""))
	default:
		ans = s.must(s.r.Info(proc, f, answer, ""))
	}
	return inv, ans
}

func (s *story) shareJoin(m string, epoch int32) {
	s.t.Helper()
	s.must(s.r.Invoke(m+"/hb", history.FShareHeartbeat, history.ShareHeartbeat{Member: m, Epoch: 0}, ""))
	s.must(s.r.OK(m+"/hb", history.ShareHeartbeat{Member: m, Epoch: 0, ResultEpoch: epoch}, ""))
}

func shareRange(first, last int64) history.ShareRange {
	return history.ShareRange{Topic: "t", Partition: 0, First: first, Last: last}
}

// shareStory is a share run on t-0 with the delivery count limit at 3: m1 acquires offsets 0–4
// and accepts 0–2, releases 3 and rejects 4 (archived); m2 acquires 3 again at delivery count 2
// (a redelivery), releases it, acquires it at count 3 and never acknowledges it: its lock lapses
// at the limit (archived) while a fault stalls m2; m1 acquires 5–6 and its next fetch gets no
// answer, which ends its share session. It returns the report and the indexes the test
// looks for.
func shareStory(t testing.TB) (Report, map[string]int64) {
	s := newStory(t)
	ix := map[string]int64{}
	plan := history.Plan{Group: "g", Protocol: history.ProtocolShare, Topics: []history.TopicPlan{{Name: "t", Partitions: 2}},
		Share: &history.SharePlan{DeliveryCountLimit: 3, RecordLockMs: 5000}}
	s.at(0).phase(history.PhaseWarmup)
	s.at(100*time.Millisecond).shareJoin("m1", 1)
	s.at(200*time.Millisecond).shareJoin("m2", 2)
	fetch := func(m string, acks ...history.ShareAck) history.ShareFetch {
		return history.ShareFetch{Member: m, Node: 1, Fetch: []history.TP{{Topic: "t", Partition: 0}}, Acks: acks}
	}
	answer := func(f history.ShareFetch, acq ...history.ShareAcquired) history.ShareFetch {
		f.LockTimeoutMs, f.Acquired = 5000, acq
		return f
	}
	s.at(time.Second).phase(history.PhaseWorkload)
	_, ix["m1-acquired"] = s.at(time.Second).shareCall("m1", history.FShareFetch, history.OK, 1100*time.Millisecond, fetch("m1"),
		answer(fetch("m1"), history.ShareAcquired{ShareRange: shareRange(0, 4), DeliveryCount: 1}))
	acks := []history.ShareAck{{ShareRange: shareRange(0, 2), Type: history.AckAccept}, {ShareRange: shareRange(3, 3), Type: history.AckRelease}, {ShareRange: shareRange(4, 4), Type: history.AckReject}}
	ix["m1-acked"], _ = s.at(2*time.Second).shareCall("m1", history.FShareFetch, history.OK, 2100*time.Millisecond, fetch("m1", acks...), answer(fetch("m1", acks...)))
	_, ix["m2-redelivered"] = s.at(3*time.Second).shareCall("m2", history.FShareFetch, history.OK, 3100*time.Millisecond, fetch("m2"),
		answer(fetch("m2"), history.ShareAcquired{ShareRange: shareRange(3, 3), DeliveryCount: 2}))
	rel := history.ShareAck{ShareRange: shareRange(3, 3), Type: history.AckRelease}
	_, ix["m2-last"] = s.at(4*time.Second).shareCall("m2", history.FShareFetch, history.OK, 4100*time.Millisecond, fetch("m2", rel),
		answer(fetch("m2", rel), history.ShareAcquired{ShareRange: shareRange(3, 3), DeliveryCount: 3}))
	ix["fault-start"] = s.at(4500*time.Millisecond).fault("nemesis/0", history.FFaultStart, "member-stall", "m2")
	_, ix["m1-later"] = s.at(5*time.Second).shareCall("m1", history.FShareFetch, history.OK, 5100*time.Millisecond, fetch("m1"),
		answer(fetch("m1"), history.ShareAcquired{ShareRange: shareRange(5, 6), DeliveryCount: 1}))
	s.at(6*time.Second).shareCall("m1", history.FShareFetch, history.Info, 6500*time.Millisecond, fetch("m1"), fetch("m1"))
	ix["fault-stop"] = s.at(11*time.Second).fault("nemesis/0", history.FFaultStop, "member-stall", "m2")
	s.at(12 * time.Second).phase(history.PhaseFinal)
	evs := s.events()
	members := []MemberInfo{{Name: "m1", Kind: "share", Protocol: history.ProtocolShare}, {Name: "m2", Kind: "kgo-share", Protocol: history.ProtocolShare}}
	rep := check.Judge(evs, nil, plan)
	return Report{
		Title:      "a share run",
		Run:        RunInfo{Seed: 7, Scenario: "churn", Kafka: "4.4.0", Protocol: history.ProtocolShare, Members: members},
		Events:     evs,
		Verdicts:   rep.Verdicts,
		Notes:      rep.Notes,
		Partitions: plan.Partitions(),
		Share:      plan.Share,
	}, ix
}

// TestShareLanes renders a small share run: t-0's row has its archive lane and a sub-lane per
// member; a bar per acquisition from the fetch's answer to where the member let its records go
// (acknowledgement sent, lock lapsed), the redelivery outlined with its count, an archive glyph
// for the reject and one for the lock that lapsed at the limit, the fault drawn as for consumer
// groups, and the counts in text; the streamed page is the same page.
func TestShareLanes(t *testing.T) {
	r, ix := shareStory(t)
	page, root := render(t, r)

	rows := root.all(byTagClass("g", "sharerow"))
	if len(rows) != 1 || rows[0].attr["data-tp"] != "t-0" || rows[0].attr["data-members"] != "2" {
		var got []string
		for _, g := range rows {
			got = append(got, fmt.Sprintf("%s/%s", g.attr["data-tp"], g.attr["data-members"]))
		}
		t.Fatalf("share rows: got %v, want one for t-0 with 2 members (t-1 had no acquisition)", got)
	}
	for _, g := range root.all(byTagClass("g", "row")) {
		if want := map[string]string{"t-0": "3", "t-1": "1"}[g.attr["data-tp"]]; g.attr["data-sublanes"] != want {
			t.Errorf("row %s has %s sub-lanes, want %s (t-0: its archive lane and one per member)", g.attr["data-tp"], g.attr["data-sublanes"], want)
		}
	}
	bars := rows[0].all(byTagClass("rect", "share"))
	if len(bars) != 4 {
		t.Fatalf("got %d acquisition bars, want 4", len(bars))
	}
	type want struct {
		member, first, count string
		redelivered          bool
		event                int64
		title                string
	}
	for i, w := range []want{
		{"m1", "0", "1", false, ix["m1-acquired"], "m1 held t-0 offsets 0–4 (5 records) at delivery count 1, acquired from node 1 at 1.1s (event " + fmt.Sprint(ix["m1-acquired"]) + "), to 2s: 3 accept, 1 reject, 1 release"},
		{"m2", "3", "2", true, ix["m2-redelivered"], "to 4s: 1 release (a redelivery: delivery 2)"},
		{"m2", "3", "3", true, ix["m2-last"], "to 9s: 1 lock lapsed (a redelivery: delivery 3)"},
		{"m1", "5", "1", false, ix["m1-later"], "to 6.5s: 2 share session ended"},
	} {
		b := bars[i]
		if b.attr["data-member"] != w.member || b.attr["data-first"] != w.first || b.attr["data-count"] != w.count || attrInt(t, b, "data-event") != w.event || b.class("redelivered") != w.redelivered {
			t.Errorf("bar %d: %v, want member %s first %s count %s event %d redelivered %v", i, b.attr, w.member, w.first, w.count, w.event, w.redelivered)
		}
		if title := b.allText(); !strings.Contains(title, w.title) {
			t.Errorf("bar %d says %q, want it to say %q", i, title, w.title)
		}
	}
	// Where the bars end: m1 let go at its acknowledgement's send (2s), m2's second delivery at
	// its release (4s), its last when the lock lapsed (the fetch's send at 4s plus 5s).
	w0, w2 := attrFloat(t, bars[0], "width"), attrFloat(t, bars[2], "width")
	if w2 < 4*w0 {
		t.Errorf("the bar of the lock that lapsed (%.1f wide, 4.9s) should be about 5 times m1's (%.1f, 0.9s)", w2, w0)
	}
	if got, want := attrFloat(t, bars[1], "x")+attrFloat(t, bars[1], "width"), attrFloat(t, bars[2], "x"); got > want+0.5 {
		t.Errorf("m2's release ends at x %.1f, after its next acquisition starts (x %.1f)", got, want)
	}

	arch := rows[0].all(byTagClass("path", "sarch"))
	if len(arch) != 2 || !arch[0].class("rejected") || arch[0].attr["data-first"] != "4" || !arch[1].class("limit") || arch[1].attr["data-first"] != "3" || arch[1].attr["data-count"] != "3" {
		var got []string
		for _, a := range arch {
			got = append(got, a.attr["class"]+"@"+a.attr["data-first"])
		}
		t.Fatalf("archive glyphs: got %v, want the reject of 4, then 3 archived at the limit", got)
	}
	if title := arch[1].allText(); !strings.Contains(title, "t-0@3 archived at 9s: its lock lapsed at its last delivery (delivery count 3, the limit) by m2") {
		t.Errorf("the archive at the limit says %q", title)
	}
	// The members' sub-lanes are named in the gutter, under the partition's name.
	var names []string
	for _, l := range root.all(byTagClass("text", "sharemember")) {
		names = append(names, strings.TrimSpace(l.text))
	}
	if strings.Join(names, ",") != "m1,m2" {
		t.Errorf("share member labels: %v, want m1,m2", names)
	}
	// The stall on m2 is drawn as the consumer lanes draw faults: its own lane, a band behind
	// every lane, and a strip on m2's membership lane, which the share heartbeats fill.
	if n := len(root.all(byTagClass("rect", "faultband"))); n != 1 {
		t.Errorf("%d fault bands, want 1", n)
	}
	if n := len(root.all(func(n *node) bool { return n.name == "rect" && n.class("churn") && n.attr["data-churn"] == "stall" })); n != 1 {
		t.Errorf("%d churn strips for m2's stall, want 1", n)
	}
	for _, m := range []string{"m1", "m2"} {
		if n := len(root.all(func(n *node) bool { return n.name == "rect" && n.class("in") && n.attr["data-member"] == m })); n != 1 {
			t.Errorf("%s's membership lane has %d spans in the group, want 1 (from its ShareGroupHeartbeat answer)", m, n)
		}
	}

	// The records/s lane counts the acquired records as consumed.
	if n := len(root.all(byTagClass("polygon", "consumed"))); n != 1 {
		t.Errorf("%d areas of records consumed per second, want 1 (the acquisitions)", n)
	}

	// The counts, in text.
	var counts []string
	for _, tr := range root.all(byTagClass("tr", "sharepart")) {
		var cells []string
		for _, td := range tr.all(byTagClass("td", "")) {
			cells = append(cells, strings.TrimSpace(td.text))
		}
		counts = append(counts, strings.Join(cells, " "))
	}
	// partition, members, acquired, redelivered, accepted, released, rejected, renewed, archived
	// at the limit, lock lapsed, acks refused, acks unanswered, still held at the end.
	if want := []string{"t-0 2 9 2 3 2 1 0 1 1 0 0 0"}; strings.Join(counts, "|") != strings.Join(want, "|") {
		t.Errorf("share counts: got %q, want %q", counts, want)
	}
	if !strings.Contains(page, "at delivery count 3, the plan's group.share.delivery.count.limit") {
		t.Errorf("the counts do not name the plan's limit")
	}

	// Streamed, the page is the same.
	var jsonl, streamed bytes.Buffer
	if err := history.Write(&jsonl, r.Events); err != nil {
		t.Fatal(err)
	}
	sr := r
	sr.Events = nil
	if err := WriteReportFrom(&streamed, sr, &jsonl); err != nil {
		t.Fatal(err)
	}
	if streamed.String() != page {
		t.Errorf("the streamed share page differs from the page in memory")
	}

	// Without the plan's limit, nothing is said archived at it: the reject alone is an archive.
	r.Share = nil
	_, root = render(t, r)
	if arch := root.all(byTagClass("g", "sharerow"))[0].all(byTagClass("path", "sarch")); len(arch) != 1 || !arch[0].class("rejected") {
		t.Errorf("without a limit: %d archive glyphs, want the reject alone", len(arch))
	}
}

// TestConsumerReportHasNoShareLanes: a consumer-group run's page has no share lane, label or
// counts, and its rows keep the sub-lanes their ownerships need.
func TestConsumerReportHasNoShareLanes(t *testing.T) {
	r, _ := failingStory(t)
	page, root := render(t, r)
	for _, s := range []string{"sharerow", "sharemember", `id="share"`, "sharecounts", "sarch", "Share partitions"} {
		if strings.Contains(page, s) {
			t.Errorf("a consumer-group page contains %q", s)
		}
	}
	for _, g := range root.all(byTagClass("g", "row")) {
		want := map[string]string{"t-0": "1", "t-1": "1", "t-2": "2", "t-3": "1"}[g.attr["data-tp"]]
		if g.attr["data-sublanes"] != want {
			t.Errorf("row %s has %s sub-lanes, want %s", g.attr["data-tp"], g.attr["data-sublanes"], want)
		}
	}
}

// TestShareLetGoAtSend: a member lets a record go when it sends its acknowledgement, even when the
// record is delivered to another member before that acknowledgement's answer is recorded.
func TestShareLetGoAtSend(t *testing.T) {
	s := newStory(t)
	f := func(m string, acks ...history.ShareAck) history.ShareFetch {
		return history.ShareFetch{Member: m, Node: 1, Fetch: []history.TP{{Topic: "t", Partition: 0}}, Acks: acks, LockTimeoutMs: 5000}
	}
	s.at(0).phase(history.PhaseWarmup)
	s.at(time.Second).shareCall("m1", history.FShareFetch, history.OK, 1100*time.Millisecond, f("m1"),
		history.ShareFetch{Member: "m1", Node: 1, LockTimeoutMs: 5000, Acquired: []history.ShareAcquired{{ShareRange: shareRange(0, 0), DeliveryCount: 1}}})
	rel := history.ShareAck{ShareRange: shareRange(0, 0), Type: history.AckRelease}
	s.at(2 * time.Second).must(s.r.Invoke("m1/fetch", history.FShareFetch, f("m1", rel), ""))
	s.at(2050*time.Millisecond).shareCall("m2", history.FShareFetch, history.OK, 2100*time.Millisecond, f("m2"),
		history.ShareFetch{Member: "m2", Node: 1, LockTimeoutMs: 5000, Acquired: []history.ShareAcquired{{ShareRange: shareRange(0, 0), DeliveryCount: 2}}})
	s.at(2200 * time.Millisecond).must(s.r.OK("m1/fetch", f("m1", rel), ""))
	s.at(3 * time.Second).phase(history.PhaseFinal)
	_, root := render(t, Report{Title: "share", Events: s.events(), Partitions: history.TPs("t", 0), Share: &history.SharePlan{DeliveryCountLimit: 3}})
	bars := root.all(byTagClass("g", "sharerow"))[0].all(byTagClass("rect", "share"))
	if len(bars) != 2 {
		t.Fatalf("%d bars, want 2", len(bars))
	}
	if title := bars[0].allText(); !strings.Contains(title, "to 2s: 1 release") {
		t.Errorf("m1's bar says %q, want it let go at its release's send", title)
	}
}
