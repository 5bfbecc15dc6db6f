package results

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// Share lanes: for a run with share members (KIP-932), each partition's row of the timeline gets a
// lane of its archives and, under it, a sub-lane per member that acquired records of it. A bar is
// one acquired range, from the fetch's answer to when the member let the last of its records go:
// it sent their acknowledgement (accept, release, reject), its lock lapsed (the member's deadline:
// the fetch's send plus the answer's lock timeout, moved by an answered renewal), its share session
// with the node ended (a call unanswered, refused with a session error, or at epoch -1), or the
// record was delivered again. A redelivery (delivery count above 1) is outlined, its count in its
// title and data-count; a record archived (rejected, or let go at the delivery count limit) is a glyph on the archive
// lane. The counts under the timeline say the same per partition in text. All of it is what the
// members' calls record; the page infers nothing the share checkers would judge.

// Why a member let a record go, besides an acknowledgement's type.
const (
	goneLapsed  = "lock lapsed"
	goneSession = "share session ended"
	goneAgain   = "delivered again"
	goneHeld    = "still held at the end"
)

// maxShareBars bounds the acquisitions the lanes draw; the counts keep every one.
const maxShareBars = 20000

// shareLanes gathers what the share lanes show, in the digest's one pass over the events.
type shareLanes struct {
	parts map[history.TP]*sharePart
	// inFlight is each process's call in flight (a share member's fetcher has one at a time per
	// node).
	inFlight map[string]shareSent
}

// shareSent is a share call sent: when, and the records its final acknowledgements let go (the
// member lets a record go when it sends its acknowledgement; the answer says what became of it).
type shareSent struct {
	t   time.Duration
	let []shareLet
}

type shareLet struct {
	tp   history.TP
	off  int64
	hold int
	typ  string
}

// sharePart is one partition's acquisitions, archives and counts.
type sharePart struct {
	holds []shareHold
	// open maps each offset some member may still hold to its latest acquisition (an index of
	// holds).
	open     map[int64]int
	archives []shareArchive
	n        shareCounts
}

// shareHold is one acquired range of one member.
type shareHold struct {
	member, id string
	node       int32
	first      int64
	last       int64
	count      int16
	start      time.Duration
	event      int64
	deadline   time.Duration
	// end is when the last of its records was let go; gone counts them by why.
	end  time.Duration
	gone map[string]int64
}

// shareArchive is a range of records archived, or archived when let go at the delivery count limit
// (atLimit: the page keeps those whose count reaches the plan's limit).
type shareArchive struct {
	t           time.Duration
	first, last int64
	count       int16
	member      string
	why         string
	event       int64
	atLimit     bool
}

// shareCounts are a partition's records, counted per delivery or per acknowledgement.
type shareCounts struct {
	Acquired, Redelivered                       int64
	Accepted, Released, Rejected, Renewed       int64
	Lapsed, Refused, Unanswered, Held, Archived int64
}

func (s *shareLanes) part(tp history.TP) *sharePart {
	if s.parts == nil {
		s.parts = map[history.TP]*sharePart{}
	}
	p, ok := s.parts[tp]
	if !ok {
		p = &sharePart{open: map[int64]int{}}
		s.parts[tp] = p
	}
	return p
}

// add takes what the share lanes need of e: share calls, and share heartbeats for the members'
// membership lanes (ml).
func (s *shareLanes) add(e *history.Event, ml *lanes) {
	switch e.F {
	case history.FShareHeartbeat:
		shareMembership(e, ml)
		return
	case history.FShareFetch, history.FShareAck:
	default:
		return
	}
	if e.Type == history.Invoke {
		if s.inFlight == nil {
			s.inFlight = map[string]shareSent{}
		}
		c := shareSent{t: e.Time}
		if v, err := payload[history.ShareFetch](e); err == nil {
			for _, a := range v.Acks {
				c.let = s.send(e, cmp.Or(v.MemberID, v.Member), a, c.let)
			}
		}
		s.inFlight[e.Process] = c
		return
	}
	c, ok := s.inFlight[e.Process]
	if !ok {
		return // a completion without its invoke: HistoryWellFormed says so
	}
	delete(s.inFlight, e.Process)
	v, err := payload[history.ShareFetch](e)
	if err != nil {
		return
	}
	sent := c.t
	id := cmp.Or(v.MemberID, v.Member)
	for _, a := range v.Acks {
		s.ack(e, v, id, a, sent)
	}
	for _, l := range c.let {
		s.settle(e, v, l, sent)
	}
	if e.Type == history.OK {
		lock := time.Duration(v.LockTimeoutMs) * time.Millisecond
		for _, r := range v.Acquired {
			s.acquire(e, v, id, r, sent+lock)
			// Acquired records are handed to the application: the records/s lane counts them.
			for range max(0, r.Last-r.First+1) {
				ml.consumed.add(e.Time)
			}
		}
	}
	if e.Type == history.Info || v.SessionEpoch < 0 || e.Type == history.Fail && (v.Error == "SHARE_SESSION_NOT_FOUND" || v.Error == "INVALID_SHARE_SESSION_EPOCH") {
		// The broker released what the member held there when the session ended.
		for _, p := range s.parts {
			for _, off := range slices.Sorted(maps.Keys(p.open)) {
				if h := p.open[off]; p.holds[h].id == id && p.holds[h].node == v.Node {
					p.letGo(h, off, min(e.Time, p.holds[h].deadline), goneSession, e.Index)
				}
			}
		}
	}
}

// acquire opens a hold of r, letting go whatever earlier hold of its records is still open.
func (s *shareLanes) acquire(e *history.Event, v history.ShareFetch, id string, r history.ShareAcquired, deadline time.Duration) {
	p := s.part(r.TP())
	n := r.Last - r.First + 1
	if n <= 0 {
		return
	}
	p.n.Acquired += n
	if r.DeliveryCount > 1 {
		p.n.Redelivered += n
	}
	for off := r.First; off <= r.Last; off++ {
		if h, ok := p.open[off]; ok {
			why, at := goneAgain, e.Time
			if d := p.holds[h].deadline; d <= e.Time {
				why, at = goneLapsed, d
			}
			p.letGo(h, off, at, why, e.Index)
		}
		p.open[off] = len(p.holds)
	}
	p.holds = append(p.holds, shareHold{member: v.Member, id: id, node: v.Node, first: r.First, last: r.Last, count: r.DeliveryCount,
		start: e.Time, event: e.Index, deadline: deadline, end: -1})
}

// ack takes one acknowledged range of a call sent at sent and answered (or not) by e.
func (s *shareLanes) ack(e *history.Event, v history.ShareFetch, id string, a history.ShareAck, sent time.Duration) {
	p := s.part(a.TP())
	n := a.Last - a.First + 1
	outcome := shareOutcome(e, v, a.TP())
	switch {
	case outcome == "unanswered":
		p.n.Unanswered += n
	case outcome != "ok":
		p.n.Refused += n
	default:
		switch a.Type {
		case history.AckAccept:
			p.n.Accepted += n
		case history.AckRelease:
			p.n.Released += n
		case history.AckReject:
			p.n.Rejected += n
		case history.AckRenew:
			p.n.Renewed += n
		}
	}
	if a.Type != history.AckRenew || outcome != "ok" || v.LockTimeoutMs <= 0 {
		return
	}
	// An answered renewal: the lock runs again from the renewal's send.
	for off := a.First; off <= a.Last; off++ {
		if h, ok := p.open[off]; ok && p.holds[h].id == id {
			p.holds[h].deadline = max(p.holds[h].deadline, sent+time.Duration(v.LockTimeoutMs)*time.Millisecond)
		}
	}
}

// shareOutcome is what answer e says of the acknowledgements of tp: "ok", "unanswered", or
// "refused: " and the error.
func shareOutcome(e *history.Event, v history.ShareFetch, tp history.TP) string {
	switch {
	case e.Type == history.Info:
		return "unanswered"
	case e.Type == history.Fail:
		return "refused: " + v.Error
	case v.AckError(tp) != "":
		return "refused: " + v.AckError(tp)
	}
	return "ok"
}

// send lets go, at e (the call's invoke), the records of a final acknowledgement a that member id
// holds, adding each to let; a record whose lock had lapsed by then was let go at its lapse.
func (s *shareLanes) send(e *history.Event, id string, a history.ShareAck, let []shareLet) []shareLet {
	if a.Type == history.AckRenew {
		return let
	}
	p := s.part(a.TP())
	for off := a.First; off <= a.Last; off++ {
		h, ok := p.open[off]
		if !ok || p.holds[h].id != id {
			continue // not held by this member (any more): the checkers judge it
		}
		if d := p.holds[h].deadline; d < e.Time {
			p.letGo(h, off, d, goneLapsed, e.Index)
			continue
		}
		p.letGo(h, off, e.Time, a.Type, e.Index)
		let = append(let, shareLet{tp: a.TP(), off: off, hold: h, typ: a.Type})
	}
	return let
}

// settle notes, from the answer e to the call sent at sent, the archive of a record it let go:
// rejected, released at its last delivery, or refused so that its lock lapses at it.
func (s *shareLanes) settle(e *history.Event, v history.ShareFetch, l shareLet, sent time.Duration) {
	p := s.part(l.tp)
	hd := &p.holds[l.hold]
	outcome := shareOutcome(e, v, l.tp)
	switch {
	case l.typ == history.AckReject && outcome == "ok":
		p.archive(hd, l.off, sent, "rejected", e.Index, false)
	case l.typ == history.AckRelease:
		p.archive(hd, l.off, sent, "released at its last delivery ("+outcome+")", e.Index, true)
	case outcome != "ok" && outcome != "unanswered":
		// Refused: the record stays acquired until its lock lapses.
		p.archive(hd, l.off, hd.deadline, fmt.Sprintf("its lock lapsed at its last delivery after the %s was %s", l.typ, outcome), e.Index, true)
	}
}

// letGo ends offset off of hold h at t, for why.
func (p *sharePart) letGo(h int, off int64, t time.Duration, why string, event int64) {
	hd := &p.holds[h]
	delete(p.open, off)
	hd.end = max(hd.end, t)
	if hd.gone == nil {
		hd.gone = map[string]int64{}
	}
	hd.gone[why]++
	switch why {
	case goneLapsed:
		p.n.Lapsed++
		p.archive(hd, off, t, "its lock lapsed at its last delivery", event, true)
	case goneSession:
		p.archive(hd, off, t, "its share session ended at its last delivery", event, true)
	case goneHeld:
		p.n.Held++
	}
}

// archive notes that record off of hd was archived at t (atLimit: if hd's delivery count reached
// the limit), joining it to the previous mark when that is the same range's neighbour.
func (p *sharePart) archive(hd *shareHold, off int64, t time.Duration, why string, event int64, atLimit bool) {
	if k := len(p.archives) - 1; k >= 0 {
		a := &p.archives[k]
		if a.t == t && a.last+1 == off && a.why == why && a.member == hd.member && a.count == hd.count {
			a.last = off
			return
		}
	}
	p.archives = append(p.archives, shareArchive{t: t, first: off, last: off, count: hd.count, member: hd.member, why: why, event: event, atLimit: atLimit})
}

// finish lets go, at the end of the history, what is still held: at the lock's deadline when it
// passed, else still held.
func (s *shareLanes) finish(end time.Duration) {
	for _, p := range s.parts {
		for _, off := range slices.Sorted(maps.Keys(p.open)) {
			h := p.open[off]
			if d := p.holds[h].deadline; d <= end {
				p.letGo(h, off, d, goneLapsed, -1)
			} else {
				p.letGo(h, off, end, goneHeld, -1)
			}
		}
	}
}

// shareMembership sets a share member's membership from its ShareGroupHeartbeat calls: epoch 0
// sent joins, an answer with a member epoch is in the group, epoch -1 answered leaves, and an
// answer UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH puts it out of the group.
func shareMembership(e *history.Event, l *lanes) {
	if e.Type == history.Info {
		return
	}
	v, err := payload[history.ShareHeartbeat](e)
	if err != nil {
		return
	}
	m := l.member(cmp.Or(v.Member, memberOf(e.Process)))
	switch {
	case e.Type == history.Invoke:
		if v.Epoch == 0 && m.state() != stInGroup {
			m.set(stJoining, e, "ShareGroupHeartbeat sent to join")
		}
	case e.Type == history.OK && v.Epoch < 0:
		l.keep(m.mark(history.FLeft, e, "ShareGroupHeartbeat at epoch -1"))
		m.set(stOut, e, history.FLeft)
	case e.Type == history.OK && v.ResultEpoch > 0:
		m.set(stInGroup, e, "ShareGroupHeartbeat answered with a member epoch")
	case e.Type == history.Fail && (v.Error == "UNKNOWN_MEMBER_ID" || v.Error == "FENCED_MEMBER_EPOCH"):
		l.keep(m.mark(history.FFenced, e, v.Error))
		m.set(stOut, e, history.FFenced)
	}
}

// shareTPs are the partitions a share call names.
func shareTPs(v history.ShareFetch) []history.TP {
	var tps []history.TP
	add := func(tp history.TP) {
		if !slices.Contains(tps, tp) {
			tps = append(tps, tp)
		}
	}
	for _, a := range v.Acquired {
		add(a.TP())
	}
	for _, a := range v.Acks {
		add(a.TP())
	}
	return tps
}

// shareRowTPs adds to tps the partitions the share lanes have and seen lacks.
func (s *shareLanes) shareRowTPs(tps []history.TP, seen map[history.TP]bool) []history.TP {
	for tp := range s.parts {
		if !seen[tp] {
			seen[tp] = true
			tps = append(tps, tp)
		}
	}
	return tps
}

// shareLayout is where the share lanes go in the rows: each row's first sub-lane of its own (its
// archive lane), and its members, one sub-lane each under it.
type shareLayout struct {
	base    []int
	members [][]string
}

// placeShare gives each partition row with acquisitions its share sub-lanes, under its ownerships'.
func (t *timeline) placeShare() {
	s := &t.d.share
	if len(s.parts) == 0 {
		return
	}
	s.finish(t.end)
	t.share.base = make([]int, len(t.tps))
	t.share.members = make([][]string, len(t.tps))
	for row, tp := range t.tps {
		p := s.parts[tp]
		if p == nil || len(p.holds) == 0 {
			continue
		}
		base := 0
		for i, o := range t.owns {
			if o.Partition == tp {
				base = max(base, t.subOf[i]+1)
			}
		}
		var ms []string
		for _, l := range t.order {
			if slices.ContainsFunc(p.holds, func(h shareHold) bool { return h.member == l.Member }) {
				ms = append(ms, l.Member)
			}
		}
		for _, h := range p.holds {
			if !slices.Contains(ms, h.member) {
				ms = append(ms, h.member)
			}
		}
		t.share.base[row], t.share.members[row] = base, ms
		t.subs[row] = max(t.subs[row], base+1+len(ms))
	}
}

// Archive glyphs: a diamond, filled when the record was let go at the delivery count limit, open
// when it was rejected.
const glyphArchive = "M0 -5L5 0L0 5L-5 0Z"

// shareRows draws the share lanes of every row placeShare gave them, labels their members in the
// gutter, and writes the per-partition counts under the timeline.
func (t *timeline) shareRows() string {
	s := &t.d.share
	if t.share.base == nil {
		return ""
	}
	limit := int16(0)
	if t.v.Share != nil {
		limit = t.v.Share.DeliveryCountLimit
	}
	var out svgw
	sum := shareSummary{Limit: limit}
	for row, tp := range t.tps {
		p := s.parts[tp]
		if p == nil {
			continue
		}
		pr := shareSummaryRow{Partition: tp.String(), shareCounts: p.n, Members: len(t.share.members[row])}
		for _, a := range p.archives {
			if a.atLimit && limit > 0 && a.count >= limit {
				pr.Archived += a.last - a.first + 1
			}
		}
		sum.Rows = append(sum.Rows, pr)
		ms := t.share.members[row]
		if len(ms) == 0 {
			continue
		}
		top := t.rowY[row] + rowPad/2 + subLaneH*float64(t.share.base[row])
		sub := map[string]float64{}
		for k, m := range ms {
			sub[m] = top + subLaneH*float64(k+1)
			title := fmt.Sprintf("%s's acquisitions of %s", m, tp)
			t.labels = append(t.labels, laneLabel{y: sub[m] + 11, text: m, class: "lane sharemember", title: title})
		}
		fmt.Fprintf(&out, `<g class="sharerow" data-tp="%s" data-members="%d">`+"\n", esc(tp.String()), len(ms))
		for _, h := range p.holds {
			if sum.Drawn >= maxShareBars {
				sum.NotDrawn++
				continue
			}
			sum.Drawn++
			t.shareBar(&out, tp, h, sub[h.member])
		}
		for _, a := range p.archives {
			if a.atLimit && (limit <= 0 || a.count < limit) {
				continue
			}
			if sum.Marks >= maxMarks {
				sum.MarksNotDrawn++
				continue
			}
			sum.Marks++
			cls, what := "sarch rejected", "rejected"
			if a.atLimit {
				cls, what = "sarch limit", fmt.Sprintf("%s (delivery count %d, the limit)", a.why, a.count)
			}
			rng := fmt.Sprintf("%s@%d", tp, a.first)
			if a.last > a.first {
				rng += fmt.Sprintf("–%d", a.last)
			}
			title := fmt.Sprintf("%s archived at %s: %s by %s", rng, roundDur(a.t), what, a.member)
			if a.event >= 0 {
				title += fmt.Sprintf(" (event %d)", a.event)
			}
			out.glyph(cls, t.x(a.t), top+subLaneH/2, glyphArchive, fmt.Sprintf(`data-first="%d" data-last="%d" data-count="%d"`, a.first, a.last, a.count), title)
		}
		out.WriteString("</g>\n")
	}
	for _, r := range sum.Rows {
		sum.Total.add(r.shareCounts)
	}
	var b bytes.Buffer
	if err := shareTemplate.Execute(&b, sum); err == nil {
		t.v.ShareLanes = template.HTML(b.String()) // html/template escaped every value
	}
	return out.String()
}

// shareBar draws hold h of tp in the sub-lane at y.
func (t *timeline) shareBar(out *svgw, tp history.TP, h shareHold, y float64) {
	c := t.colors[h.member]
	fill := cmp.Or(c.Color, "#777777")
	cls := "share"
	if h.count > 1 {
		cls += " redelivered"
	}
	rng := fmt.Sprintf("offset %d", h.first)
	if h.last > h.first {
		rng = fmt.Sprintf("offsets %d–%d (%d records)", h.first, h.last, h.last-h.first+1)
	}
	var gone []string
	for _, why := range slices.Sorted(maps.Keys(h.gone)) {
		gone = append(gone, fmt.Sprintf("%d %s", h.gone[why], why))
	}
	title := fmt.Sprintf("%s held %s %s at delivery count %d, acquired from node %d at %s (event %d), to %s: %s",
		h.member, tp, rng, h.count, h.node, roundDur(h.start), h.event, roundDur(h.end), strings.Join(gone, ", "))
	if h.count > 1 {
		title += fmt.Sprintf(" (a redelivery: delivery %d)", h.count)
	}
	attrs := fmt.Sprintf(`style="fill:%s" data-member="%s" data-first="%d" data-last="%d" data-count="%d" data-event="%d"`,
		fill, esc(h.member), h.first, h.last, h.count, h.event)
	out.span(cls, t.x(h.start), t.x(h.end), y+1, subLaneH-2, 1, attrs, title)
}

func (c *shareCounts) add(o shareCounts) {
	c.Acquired += o.Acquired
	c.Redelivered += o.Redelivered
	c.Accepted += o.Accepted
	c.Released += o.Released
	c.Rejected += o.Rejected
	c.Renewed += o.Renewed
	c.Lapsed += o.Lapsed
	c.Refused += o.Refused
	c.Unanswered += o.Unanswered
	c.Held += o.Held
	c.Archived += o.Archived
}

// shareSummary is the text under the timeline: the counts per partition.
type shareSummary struct {
	Limit                int16
	Rows                 []shareSummaryRow
	Total                shareCounts
	Drawn, NotDrawn      int
	Marks, MarksNotDrawn int
}

type shareSummaryRow struct {
	Partition string
	Members   int
	shareCounts
}

var shareTemplate = template.Must(template.New("share").Parse(`<h2 id="share">Share partitions</h2>
<style>
rect.share{stroke:#fff;stroke-width:.5}rect.share.redelivered{stroke:#000;stroke-width:1.5}
path.sarch{stroke:#000;stroke-width:1}path.sarch.limit{fill:#222}path.sarch.rejected{fill:#fff}
text.lane.sharemember{font-size:10px;fill:#555}
</style>
<p class="key"><span class="k"><svg width="26" height="12"><rect class="share" x="0" y="1" width="26" height="10" style="fill:#4e79a7"/></svg>a member held acquired records (one sub-lane per member under the partition's row)</span>
<span class="k"><svg width="26" height="12"><rect class="share redelivered" x="1" y="1" width="24" height="10" style="fill:#4e79a7"/></svg>a redelivery: records at delivery count 2 or more</span>
<span class="k"><svg width="12" height="12"><path class="sarch limit" transform="translate(6 6)" d="M0 -5L5 0L0 5L-5 0Z"/></svg>archived at the delivery count limit{{if .Limit}} ({{.Limit}}){{end}}</span>
<span class="k"><svg width="12" height="12"><path class="sarch rejected" transform="translate(6 6)" d="M0 -5L5 0L0 5L-5 0Z"/></svg>archived: rejected</span></p>
<table class="sharecounts"><tr><th>partition</th><th>members</th><th>acquired</th><th>redelivered</th><th>accepted</th><th>released</th><th>rejected</th><th>renewed</th><th>archived at the limit</th><th>lock lapsed</th><th>acks refused</th><th>acks unanswered</th><th>still held at the end</th></tr>
{{range .Rows}}<tr class="sharepart" data-tp="{{.Partition}}"><td>{{.Partition}}</td><td>{{.Members}}</td><td>{{.Acquired}}</td><td>{{.Redelivered}}</td><td>{{.Accepted}}</td><td>{{.Released}}</td><td>{{.Rejected}}</td><td>{{.Renewed}}</td><td>{{if $.Limit}}{{.Archived}}{{else}}?{{end}}</td><td>{{.Lapsed}}</td><td>{{.Refused}}</td><td>{{.Unanswered}}</td><td>{{.Held}}</td></tr>
{{end}}{{with .Total}}<tr class="sharetotal"><th>all</th><td></td><td>{{.Acquired}}</td><td>{{.Redelivered}}</td><td>{{.Accepted}}</td><td>{{.Released}}</td><td>{{.Rejected}}</td><td>{{.Renewed}}</td><td>{{if $.Limit}}{{.Archived}}{{else}}?{{end}}</td><td>{{.Lapsed}}</td><td>{{.Refused}}</td><td>{{.Unanswered}}</td><td>{{.Held}}</td></tr>{{end}}
</table>
<p class="howto">Records, each delivery counted once: <b>acquired</b> by a ShareFetch answer; <b>redelivered</b> of those, at a delivery count above 1; <b>accepted</b>, <b>released</b>, <b>rejected</b>, <b>renewed</b>: acknowledgements the broker answered without an error; <b>archived at the limit</b>: released, or whose lock lapsed or share session ended, at delivery count {{if .Limit}}{{.Limit}}, the plan's group.share.delivery.count.limit{{else}}limit (the plan records no limit, so these are not told apart){{end}}; <b>lock lapsed</b>: held past the lock's deadline (the fetch's send plus its lock timeout, moved by a renewal) with no acknowledgement sent by then; <b>acks refused</b>: acknowledgements answered with an error; <b>acks unanswered</b>: no answer came. A bar runs from the fetch's answer to when the member let the last of its records go: it sent their acknowledgement, their lock lapsed, its share session with the node ended, or the record was delivered again. The share checkers judge the same calls; these counts are what the members recorded, not a verdict.</p>
{{if .NotDrawn}}<p class="aggregated">{{.NotDrawn}} acquisitions are not drawn (the lanes draw at most {{.Drawn}}); the counts have them all.</p>
{{end}}{{if .MarksNotDrawn}}<p class="aggregated">{{.MarksNotDrawn}} archive marks are not drawn (the lanes draw at most {{.Marks}}); the counts have them all.</p>
{{end}}`))
