package check

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/history"
)

// Share groups (KIP-932). A share member acquires records under a lock
// (group.share.record.lock.duration.ms) from the share-partition leader,
// each acquisition counting one delivery, and acknowledges them: accept
// and reject are final, release makes the record available again, and a
// record released or whose lock lapses at group.share.delivery.count.limit
// deliveries is archived (SharePartition, InFlightState.tryUpdateState).
// The share checkers judge the broker by what the members saw, the calls'
// send and answer times bracketing when the broker acted:
//
//   - ShareLockExclusive: a record is acquired by at most one member while
//     its acquisition lock is valid;
//   - ShareAckedNotRedelivered: a record whose accept or reject the broker
//     acknowledged is never delivered again, nor acknowledged again;
//   - ShareDeliveryCountBounded: a record's delivery count rises with every
//     delivery, never passes the limit, and a record delivered at the limit
//     is archived, not delivered again;
//   - ShareAcksOnlyAcquired: the broker acknowledges a member's
//     acknowledgement only of records that member acquired;
//   - ShareRecordsSettle: every acknowledged-produced record settles
//     (accepted, rejected, or archived at the limit) before the final
//     observation; none is lost or left acquired past its lock (the
//     harness's own stalls not charged to the broker: share_stall.go).
//
// What ends a lock early, so that another acquisition is no breach (each
// from the Kafka source of 4.2–4.4): the holder's own final
// acknowledgement; the end of its share session on that broker
// (SharePartitionManager.releaseSession on a lost connection, the final
// epoch -1, ShareSessionCache's disconnect listener), which the history
// shows as a call of that member to that broker without an answer, at
// epoch -1, or refused with SHARE_SESSION_NOT_FOUND or
// INVALID_SHARE_SESSION_EPOCH; a fault on a node (a new share-partition
// leader loads the persisted state, where acquisitions are not written,
// SharePartition.maybeInitialize); a fault that may close the holder's
// connections without its history showing it (its crash, restart or
// leave, a cut, reset or black-holed link); and leadership moving without
// a fault (the two acquisitions came from different brokers: a
// preferred-leader election after a node came back moves it too). The same
// leader changes are why a delivery count may fall: the new leader knows
// only the count last persisted.
//
// What does not end a lock: the holder leaving the group or being fenced
// by the group coordinator (only a share session's end releases a member's
// records: ShareGroupListener.onMemberLeave is called by the share session
// cache on a disconnect, never by the group coordinator), and the holder
// stalling or freezing, or its links slowing, while its connections stay
// open. A holder is one incarnation of a member (its member id): a member
// started again is a new member to the broker.

// shareLockMargin allows for the broker's timer firing up to a tick early
// and the clocks of two processes: a lock is taken as valid only until
// this long before its earliest possible end.
const shareLockMargin = 100 * time.Millisecond

// shareAcq is one acquired range.
type shareAcq struct {
	member   string
	id       string // the incarnation: its member id, or its name when none was recorded
	node     int32
	inv, ans int // positions of the fetch's invoke and completion
	lock     time.Duration
	rng      history.ShareAcquired
}

// shareAckOp is one acknowledged range of a call.
type shareAckOp struct {
	member   string
	id       string
	node     int32
	inv, ans int // ans < 0: no completion
	ack      history.ShareAck
	// outcome: "ok" (the broker acknowledged it), "refused" (a
	// per-partition error answered before any state write), "maybe" (a
	// per-partition error Kafka may answer after the state write landed,
	// version.ShareAckMayHaveApplied: the record may be settled, while the
	// leader rolled its own state back, so the lock holds), "failed" (a
	// top-level error: nothing applied), "unknown" (no answer).
	outcome string
	err     string
}

func (a shareAckOp) final() bool { return a.ack.Type != history.AckRenew }

// mayHaveApplied says whether the broker may have applied the
// acknowledgement: answered without an error, never answered, or answered
// with an error Kafka may give after the write landed.
func (a shareAckOp) mayHaveApplied() bool {
	return a.outcome == "ok" || a.outcome == "unknown" || a.outcome == "maybe"
}

// shareCall is one ShareFetch or ShareAcknowledge of a member to a node.
type shareCall struct {
	member       string
	id           string
	node         int32
	inv, ans     int
	typ          history.Type // of the completion; Invoke when none
	sessionEpoch int32
	err          string
	// drops are the partitions whose error in the answer says the broker
	// dropped, or may have dropped, its share-partition (shareDrop).
	drops []shareDrop
}

// shareDrop is a partition of a call's answer whose error means the
// broker dropped its share-partition from its cache (an acknowledgement's,
// version.ShareErrorDropsPartition: SharePartitionManager.acknowledge
// removes it) or may have (a fetch's, version.
// ShareFetchErrorMayDropPartition: a log read's error is passed on and the
// share-partition kept, ShareFetchUtils.processFetchResponse).
type shareDrop struct {
	tp    history.TP
	err   string
	fetch bool // a fetch's error: a possible drop only
}

// shareKept is a window (from, to) of positions in which node certainly
// kept one share-partition of tp: it applied an acknowledgement sent at to
// of a record its holder acquired from it at from, which a share-partition
// loaded again would refuse (it has no acquisition).
type shareKept struct {
	node     int32
	tp       history.TP
	from, to int
	acq      int // the acquisition's index in sf.acqs
	op       int // the acknowledgement's index in sf.acks
}

// shareBreak is a window in which a member's share session with a node
// may have ended: from the answer of its last answered call to the node
// before a call that went unanswered, was refused with a session error or
// closed the session, to that call's invoke.
type shareBreak struct {
	id       string
	node     int32
	from, to int // positions
	why      int // position of the call that shows it
}

type shareFacts struct {
	f        *facts
	acqs     []shareAcq
	byRecord map[shareKey][]int // acquisitions per record, in completion order
	acks     []shareAckOp
	calls    []shareCall
	breaks   []shareBreak
	final    int // position of the final phase, or len(ev)
	any      bool
	kept     []shareKept
	// dropUses counts, per checker and drop ("acknowledgement ERR",
	// "fetch ERR"), the later acquisitions a dropped share-partition
	// alone excused; refuted those a fetch's error would have excused had
	// its leader's later behaviour not shown that it kept the
	// share-partition.
	dropUses map[string]map[string]int
	refuted  map[string]int
}

type shareKey struct {
	tp  history.TP
	off int64
}

func (k shareKey) String() string { return fmt.Sprintf("%s@%d", k.tp, k.off) }

func (f *facts) shareFacts() *shareFacts {
	sf := &shareFacts{f: f, byRecord: map[shareKey][]int{}, final: len(f.ev)}
	if ps := f.phases[history.PhaseFinal]; len(ps) > 0 {
		sf.final = ps[0]
	}
	for i, e := range f.ev {
		switch e.F {
		case history.FShareHeartbeat:
			sf.any = true
		case history.FShareFetch, history.FShareAck:
			sf.any = true
			if e.Type == history.Invoke {
				continue
			}
			sf.call(i)
		}
	}
	// Calls never answered (the member was closed or the run killed).
	for i, e := range f.ev {
		if (e.F == history.FShareFetch || e.F == history.FShareAck) && e.Type == history.Invoke && f.partner[i] < 0 {
			sf.call(i)
		}
	}
	sort.SliceStable(sf.calls, func(a, b int) bool { return sf.calls[a].inv < sf.calls[b].inv })
	for r := range sf.byRecord {
		ids := sf.byRecord[r]
		sort.SliceStable(ids, func(a, b int) bool { return sf.acqs[ids[a]].ans < sf.acqs[ids[b]].ans })
	}
	sf.findBreaks()
	sf.findKept()
	return sf
}

// call reads one completed (or never completed) share call at position i.
func (sf *shareFacts) call(i int) {
	f := sf.f
	e := f.ev[i]
	inv, ans := f.partner[i], i
	if e.Type == history.Invoke {
		inv, ans = i, -1
	}
	if inv < 0 {
		return // a completion without its invoke: HistoryWellFormed says so
	}
	v, ok := f.vals[i].(history.ShareFetch)
	if !ok {
		return
	}
	typ := e.Type
	id := v.MemberID
	if id == "" {
		id = v.Member
	}
	c := shareCall{member: v.Member, id: id, node: v.Node, inv: inv, ans: ans, typ: typ, sessionEpoch: v.SessionEpoch, err: v.Error}
	if typ == history.OK {
		for _, pe := range v.AckErrors {
			if version.ShareErrorDropsPartition(pe.Error) {
				c.drops = append(c.drops, shareDrop{tp: history.TP{Topic: pe.Topic, Partition: pe.Partition}, err: pe.Error})
			}
		}
		for _, pe := range v.FetchErrors {
			if version.ShareFetchErrorMayDropPartition(pe.Error) {
				c.drops = append(c.drops, shareDrop{tp: history.TP{Topic: pe.Topic, Partition: pe.Partition}, err: pe.Error, fetch: true})
			}
		}
	}
	sf.calls = append(sf.calls, c)
	outcome := "unknown"
	switch typ {
	case history.OK:
		outcome = "ok"
	case history.Fail:
		outcome = "failed"
	}
	for _, a := range v.Acks {
		op := shareAckOp{member: v.Member, id: id, node: v.Node, inv: inv, ans: ans, ack: a, outcome: outcome}
		if typ == history.OK {
			if err := v.AckError(a.TP()); err != "" {
				op.outcome, op.err = "refused", err
				if version.ShareAckMayHaveApplied(err) {
					op.outcome = "maybe"
				}
			}
		}
		sf.acks = append(sf.acks, op)
	}
	if typ != history.OK {
		return
	}
	for _, r := range v.Acquired {
		n := len(sf.acqs)
		sf.acqs = append(sf.acqs, shareAcq{member: v.Member, id: id, node: v.Node, inv: inv, ans: ans,
			lock: time.Duration(v.LockTimeoutMs) * time.Millisecond, rng: r})
		for o := r.First; o <= r.Last; o++ {
			k := shareKey{r.TP(), o}
			sf.byRecord[k] = append(sf.byRecord[k], n)
		}
	}
}

// findBreaks finds, per incarnation and node, the windows in which its
// share session may have ended.
func (sf *shareFacts) findBreaks() {
	type mn struct {
		id string
		n  int32
	}
	lastOK := map[mn]int{}
	for _, c := range sf.calls {
		k := mn{c.id, c.node}
		broke := c.typ == history.Info || c.typ == history.Invoke || c.sessionEpoch < 0 ||
			(c.typ == history.Fail && (c.err == "SHARE_SESSION_NOT_FOUND" || c.err == "INVALID_SHARE_SESSION_EPOCH"))
		if broke {
			from, ok := lastOK[k]
			if !ok {
				from = 0
			}
			to := c.inv
			if c.typ == history.Fail && c.ans >= 0 {
				to = c.ans
			}
			sf.breaks = append(sf.breaks, shareBreak{id: c.id, node: c.node, from: from, to: to, why: c.inv})
		}
		if c.typ == history.OK && c.sessionEpoch >= 0 {
			lastOK[k] = c.ans
		}
	}
}

// lockEnded says why the lock of acquisition a may have ended before
// position before (the answer of a later acquisition), or "" when nothing
// in the history lets it end early: the holder's own final
// acknowledgement of the record sent before then, a break of its session
// with a.node reaching into [a's invoke, before], or a fault then on a
// node or one on a.member that may close its connections.
//
// check names the checker asking, to count what a dropped share-partition
// alone excused ("" counts nothing).
func (sf *shareFacts) lockEnded(aid int, k shareKey, before int, check string) string {
	a := sf.acqs[aid]
	f := sf.f
	for _, op := range sf.acks {
		if op.id != a.id || !op.final() || op.inv > before || op.inv < a.ans || !op.ack.Contains(k.tp, k.off) {
			continue
		}
		if op.outcome == "ok" || op.outcome == "unknown" {
			return fmt.Sprintf("%s sent %s of it (event %d, %s)", a.member, op.ack.Type, f.idx(op.inv), op.outcome)
		}
	}
	for _, b := range sf.breaks {
		if b.id == a.id && b.node == a.node && b.from <= before && b.to >= a.inv {
			return fmt.Sprintf("%s's share session with node %d may have ended (event %d)", a.member, a.node, f.idx(b.why))
		}
	}
	if why := sf.faultOn(a.member, a.inv, before); why != "" {
		return why
	}
	if why := sf.droppedOn(a.node, k.tp, aid, before, check); why != "" {
		return why
	}
	return ""
}

// droppedOn names an answer of node saying it dropped, after acquisition
// held was made and before position to, its share-partition of tp, or "":
// a share-partition loaded again knows no lock and only the persisted
// delivery counts. An acknowledgement's error is a drop
// (version.ShareErrorDropsPartition); a fetch's only may be one
// (version.ShareFetchErrorMayDropPartition), and none where the leader's
// later behaviour shows it kept the share-partition the whole time the
// drop could have happened (mayDrop). check, when set, names the checker
// whose excuse rests on the answer: the drop (or the disproved one) is
// counted for it.
func (sf *shareFacts) droppedOn(node int32, tp history.TP, held, to int, check string) string {
	from := sf.acqs[held].inv
	refuted := false
	for _, c := range sf.calls {
		if c.node != node || c.ans < from || c.inv > to {
			continue
		}
		for _, d := range c.drops {
			if d.tp != tp {
				continue
			}
			if d.fetch && !sf.mayDrop(node, tp, held, max(c.inv, from), min(c.ans, to)) {
				refuted = true
				continue
			}
			path := "acknowledgement"
			if d.fetch {
				path = "fetch"
			}
			if check != "" {
				if sf.dropUses == nil {
					sf.dropUses = map[string]map[string]int{}
				}
				if sf.dropUses[check] == nil {
					sf.dropUses[check] = map[string]int{}
				}
				sf.dropUses[check][path+" "+d.err]++
			}
			what := "dropping its share-partition"
			if d.fetch {
				what = "which may have dropped its share-partition, and nothing later shows it kept it"
			}
			return fmt.Sprintf("node %d answered %s's %s for %s %s, %s (event %d)", node, c.member, path, tp, d.err, what, sf.f.idx(c.ans))
		}
	}
	if refuted && check != "" {
		if sf.refuted == nil {
			sf.refuted = map[string]int{}
		}
		sf.refuted[check]++
	}
	return ""
}

// mayDrop says whether node may have dropped its share-partition of tp
// between positions lo and hi, after acquisition held was made: whether
// the kept windows leave part of [lo, hi] uncovered. A window shows that
// no drop came between its acquisition and its acknowledgement; the
// acquisition is made somewhere between its fetch's invoke and answer, so
// a window of held itself covers from that invoke on (a drop before held
// was made does not touch it), another from its acquisition's answer.
// held < 0 asks about the share-partition as a whole.
func (sf *shareFacts) mayDrop(node int32, tp history.TP, held, lo, hi int) bool {
	if hi <= lo {
		return true
	}
	type span struct{ from, to int }
	var spans []span
	for _, k := range sf.kept {
		if k.node != node || k.tp != tp {
			continue
		}
		from := k.from
		if k.acq == held {
			from = sf.acqs[held].inv
		}
		spans = append(spans, span{from, k.to})
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].from < spans[b].from })
	cur := lo
	for _, w := range spans {
		if w.from > cur {
			break
		}
		cur = max(cur, w.to)
		if cur >= hi {
			return false
		}
	}
	return true
}

// findKept finds the windows in which a leader certainly kept its
// share-partition: an acknowledgement (accept, release, reject or renew)
// the broker answered without an error, of a record whose last
// acquisition by the same member before the acknowledgement was sent came
// from that broker, with no fetch of that member to it between whose
// answer never came (it may have acquired the record again) and while the
// start offset cannot have passed the record (an acknowledgement below it
// is answered without an error and applies nothing, SharePartition.
// acknowledge). A share-partition loaded again (SharePartition.
// maybeInitialize) holds no acquisition and refuses such an
// acknowledgement INVALID_RECORD_STATE (SharePartition's
// validateAcknowledgementBatchMemberId and its acquired-state checks), so
// the one that applied it is the one that handed the record out.
func (sf *shareFacts) findKept() {
	var settledBy func(shareKey, int) bool
	for i, op := range sf.acks {
		if op.outcome != "ok" || op.ack.Type == "gap" {
			continue
		}
		if settledBy == nil {
			settledBy = sf.settledBy(sf.f.plan)
		}
		for o := op.ack.First; o <= op.ack.Last; o++ {
			k := shareKey{op.ack.TP(), o}
			last := -1
			for _, id := range sf.byRecord[k] {
				a := sf.acqs[id]
				if a.id == op.id && a.ans < op.inv && (last < 0 || a.ans > sf.acqs[last].ans) {
					last = id
				}
			}
			if last < 0 {
				continue
			}
			a := sf.acqs[last]
			if a.node != op.node || settledBy(k, op.inv) || sf.unansweredFetch(op.id, op.node, a.ans, op.inv) {
				continue
			}
			sf.kept = append(sf.kept, shareKept{node: op.node, tp: k.tp, from: a.ans, to: op.inv, acq: last, op: i})
		}
	}
}

// unansweredFetch says whether incarnation id sent node a fetch before
// position to whose answer never came or came after from.
func (sf *shareFacts) unansweredFetch(id string, node int32, from, to int) bool {
	for _, c := range sf.calls {
		if c.id != id || c.node != node || c.inv >= to || sf.f.ev[c.inv].F != history.FShareFetch {
			continue
		}
		if (c.typ == history.Info || c.typ == history.Invoke) && (c.ans < 0 || c.ans > from) {
			return true
		}
	}
	return false
}

// dropNote says what dropped share-partitions alone excused for check.
func (sf *shareFacts) dropNote(v *verdict, check string) {
	if uses := sf.dropUses[check]; len(uses) > 0 {
		var parts []string
		for k, n := range uses {
			parts = append(parts, fmt.Sprintf("%d after %s", n, k))
		}
		sort.Strings(parts)
		v.note("excused by nothing but the leader having dropped its share-partition: %s", strings.Join(parts, ", "))
	}
	if n := sf.refuted[check]; n > 0 {
		v.note("%d not excused by a fetch answered with an error, because the same leader later applied an acknowledgement of a record it had handed out before that fetch (it kept its share-partition: ShareFetchUtils.processFetchResponse passes a log read's error on)", n)
	}
}

// faultOn names a fault in force within [from, to] on a node, or on
// member (its process or its links) that may end its share sessions, or
// "".
func (sf *shareFacts) faultOn(member string, from, to int) string {
	f := sf.f
	for _, s := range f.faultSpans {
		if s[0] > to || s[1] < from {
			continue
		}
		fv, ok := f.vals[s[0]].(history.Fault)
		if !ok {
			continue
		}
		if strings.HasPrefix(fv.What, "node-") || (faults.EndsSessions(faults.Kind(fv.What)) && faultTargets(fv, member)) {
			return fmt.Sprintf("fault %s on %s (event %d)", fv.What, strings.Join(fv.Target, ","), f.idx(s[0]))
		}
	}
	return ""
}

// nodeFault names a fault on a node within [from, to], or "".
func (sf *shareFacts) nodeFault(from, to int) string {
	f := sf.f
	for _, s := range f.faultSpans {
		if s[0] > to || s[1] < from {
			continue
		}
		if fv, ok := f.vals[s[0]].(history.Fault); ok && strings.HasPrefix(fv.What, "node-") {
			return fmt.Sprintf("fault %s on %s (event %d)", fv.What, strings.Join(fv.Target, ","), f.idx(s[0]))
		}
	}
	return ""
}

func faultTargets(fv history.Fault, member string) bool {
	for _, t := range fv.Target {
		if t == member || strings.HasPrefix(t, member+"->") {
			return true
		}
	}
	return false
}

func (sf *shareFacts) at(pos int) time.Duration {
	if pos < 0 || pos >= len(sf.f.ev) {
		return sf.f.ev[len(sf.f.ev)-1].Time
	}
	return sf.f.ev[pos].Time
}

func (sf *shareFacts) describe(a shareAcq) string {
	return fmt.Sprintf("%s acquired it from node %d at delivery count %d (events %d–%d, lock %v)",
		a.member, a.node, a.rng.DeliveryCount, sf.f.idx(a.inv), sf.f.idx(a.ans), a.lock)
}

func sortedShareKeys(m map[shareKey][]int) []shareKey {
	keys := make([]shareKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].tp != keys[j].tp {
			if keys[i].tp.Topic != keys[j].tp.Topic {
				return keys[i].tp.Topic < keys[j].tp.Topic
			}
			return keys[i].tp.Partition < keys[j].tp.Partition
		}
		return keys[i].off < keys[j].off
	})
	return keys
}

// ShareVerdicts runs the share checkers alone (tests, offline tools).
func ShareVerdicts(events []history.Event, obs *history.Observations, plan history.Plan) []Verdict {
	f := build(events, obs)
	f.plan = plan
	sf := f.shareFacts()
	if !sf.any {
		return nil
	}
	in := &judging{f: f, sf: sf, obs: obs, plan: plan}
	var vs []Verdict
	for _, c := range Checkers {
		if c.Groups == ShareGroups {
			vs = append(vs, c.judge(in))
		}
	}
	return vs
}

const NameShareLockExclusive = "ShareLockExclusive"

var _ = register(Checker{Name: NameShareLockExclusive, Place: 200, Groups: ShareGroups,
	Asserts: "a record is acquired by at most one member while its lock is valid",
	judge:   func(in *judging) Verdict { return in.sf.lockExclusive() }})

// lockExclusive: no record is acquired while another acquisition's lock
// on it is certainly valid: the second fetch was sent after the first was
// answered, and answered before the first could have lapsed (its invoke
// plus its lock, less the margin), with nothing in between that ends the
// lock early (lockEnded).
func (sf *shareFacts) lockExclusive() Verdict {
	v := newVerdict(NameShareLockExclusive)
	// afterLapse: later acquisitions that came after the earlier lock may
	// have lapsed; lapsedOnly: those of them that nothing but the lapse
	// allows (no acknowledgement, session end, fault or leader change).
	checked, afterLapse, lapsedOnly, excused := 0, 0, 0, 0
	for _, k := range sortedShareKeys(sf.byRecord) {
		ids := sf.byRecord[k]
		for j := 1; j < len(ids); j++ {
			y := sf.acqs[ids[j]]
			for i := 0; i < j; i++ {
				x := sf.acqs[ids[i]]
				if y.inv < x.ans || x.lock <= 0 {
					continue // not certainly after x, or no lock known
				}
				checked++
				if sf.at(y.ans) >= sf.at(x.inv)+x.lock-shareLockMargin {
					afterLapse++
					if x.node == y.node && sf.lockEnded(ids[i], k, y.ans, "") == "" {
						lapsedOnly++
					}
					continue
				}
				if x.node != y.node || sf.lockEnded(ids[i], k, y.ans, v.Name) != "" {
					excused++ // leadership moved (the new leader knows no lock), or the lock ended early
					continue
				}
				v.fail([]int64{sf.f.idx(x.inv), sf.f.idx(x.ans), sf.f.idx(y.inv), sf.f.idx(y.ans)},
					"%s was acquired by %s while %s still held it: %s; %s acquired it again at delivery count %d, answered %v after the first fetch was sent, %v before its lock could have lapsed (the lock %v its fetch was answered with, less %v for the broker's timer, = %v), with no acknowledgement, session end or fault that ends a lock in between",
					k, y.member, x.member, sf.describe(x), y.member, y.rng.DeliveryCount, sf.at(y.ans)-sf.at(x.inv),
					sf.at(x.inv)+x.lock-shareLockMargin-sf.at(y.ans), x.lock, shareLockMargin, x.lock-shareLockMargin)
			}
		}
	}
	stallRule{stalls: sf.f.stalls}.noteLocks(v)
	v.note("%d records acquired, %d later acquisitions checked against earlier locks: %d came after the earlier lock may have lapsed (%d of them allowed by nothing but the lapse), %d within it excused by an acknowledgement, a session end, a fault, a leader change or a dropped share-partition", len(sf.byRecord), checked, afterLapse, lapsedOnly, excused)
	sf.dropNote(v, v.Name)
	return v.done()
}

const NameShareAckedNotRedelivered = "ShareAckedNotRedelivered"

var _ = register(Checker{Name: NameShareAckedNotRedelivered, Place: 210, Groups: ShareGroups,
	Asserts: "a record whose accept or reject the broker acknowledged is never delivered again",
	judge:   func(in *judging) Verdict { return in.sf.ackedNotRedelivered(in.plan) }})

// ackedNotRedelivered: after the broker answered an accept, reject or gap
// of a record without an error, no fetch sent later acquires it, and the
// broker acknowledges no other final acknowledgement of it (only the
// member holding a record may acknowledge it, and a record finally
// acknowledged is held by nobody again: acknowledging it twice means one
// of the two was applied to a record its sender did not hold).
//
// One exception, from the Kafka source (SharePartition.acknowledge, 4.2–
// 4.4): an acknowledgement of offsets below the share-partition's start
// offset is skipped as "already archived" and answered without an error,
// applying nothing. So a later final acknowledgement of a record already
// finally acknowledged is no breach when the start offset may have passed
// the record when it was sent: every offset of the partition up to the
// record may have been settled by then (finally acknowledged, even by a
// call whose answer never came, or delivered at the limit).
func (sf *shareFacts) ackedNotRedelivered(plan history.Plan) Verdict {
	v := newVerdict(NameShareAckedNotRedelivered)
	n, skipped := 0, 0
	final := map[shareKey]int{} // the first acknowledged final acknowledgement of each record
	order := make([]int, 0, len(sf.acks))
	for i := range sf.acks {
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool { return sf.acks[order[a]].ans < sf.acks[order[b]].ans })
	settledBy := sf.settledBy(plan)
	for _, i := range order {
		op := sf.acks[i]
		if op.outcome != "ok" || (op.ack.Type != history.AckAccept && op.ack.Type != history.AckReject && op.ack.Type != "gap") {
			continue
		}
		n++
		for o := op.ack.First; o <= op.ack.Last; o++ {
			k := shareKey{op.ack.TP(), o}
			if j, twice := final[k]; twice {
				prev := sf.acks[j]
				if prev.ans < op.inv && settledBy(k, op.inv) {
					skipped++ // below the start offset: skipped by the broker, applied nothing
					continue
				}
				v.fail([]int64{sf.f.idx(prev.inv), sf.f.idx(prev.ans), sf.f.idx(op.inv), sf.f.idx(op.ans)},
					"%s was finally acknowledged twice: the broker acknowledged %s's %s of it (events %d–%d) and then %s's %s (events %d–%d), while an offset before it was not settled (so the share-partition start offset had not passed it)",
					k, prev.member, prev.ack.Type, sf.f.idx(prev.inv), sf.f.idx(prev.ans), op.member, op.ack.Type, sf.f.idx(op.inv), sf.f.idx(op.ans))
				break
			}
			final[k] = i
			for _, id := range sf.byRecord[k] {
				y := sf.acqs[id]
				if y.inv <= op.ans {
					continue
				}
				v.fail([]int64{sf.f.idx(op.inv), sf.f.idx(op.ans), sf.f.idx(y.inv), sf.f.idx(y.ans)},
					"%s was delivered again after the broker acknowledged %s's %s of it (events %d–%d): %s",
					k, op.member, op.ack.Type, sf.f.idx(op.inv), sf.f.idx(op.ans), sf.describe(y))
				break
			}
		}
	}
	v.note("%d acknowledged accepts, rejects and gaps checked against later deliveries and acknowledgements", n)
	if skipped > 0 {
		v.note("%d later final acknowledgements of records another had finally acknowledged were answered without an error while the share-partition start offset may have passed them: Kafka skips acknowledgements below the start offset and answers them as done (SharePartition.acknowledge)", skipped)
	}
	return v.done()
}

// settledBy returns a test: whether every offset of k's partition up to k
// may have been settled before position before (so the start offset may
// have passed k): finally acknowledged by a call sent before then (answered
// without an error or never answered), or delivered at the delivery count
// limit by a fetch answered before then. Offsets start at 0: a run's
// topics are new.
func (sf *shareFacts) settledBy(plan history.Plan) func(shareKey, int) bool {
	limit := int16(0)
	if plan.Share != nil {
		limit = plan.Share.DeliveryCountLimit
	}
	at := map[shareKey]int{} // the earliest position each record may have been settled at
	mark := func(k shareKey, p int) {
		if q, ok := at[k]; !ok || p < q {
			at[k] = p
		}
	}
	for _, op := range sf.acks {
		if !op.mayHaveApplied() || !op.final() || op.ack.Type == history.AckRelease {
			continue
		}
		for o := op.ack.First; o <= op.ack.Last; o++ {
			mark(shareKey{op.ack.TP(), o}, op.inv)
		}
	}
	for k, ids := range sf.byRecord {
		for _, id := range ids {
			if a := sf.acqs[id]; limit > 0 && a.rng.DeliveryCount >= limit {
				mark(k, a.ans)
			}
		}
	}
	// prefix[tp][o]: the latest of the positions at which offsets 0..o
	// may have been settled (-1 when one of them never may have).
	prefix := map[history.TP][]int{}
	return func(k shareKey, before int) bool {
		pre, ok := prefix[k.tp]
		if !ok || int64(len(pre)) <= k.off {
			pre = pre[:0]
			latest := 0
			for o := int64(0); o <= k.off; o++ {
				p, ok := at[shareKey{k.tp, o}]
				if !ok || latest < 0 {
					latest = -1
				} else {
					latest = max(latest, p)
				}
				pre = append(pre, latest)
			}
			prefix[k.tp] = pre
		}
		return pre[k.off] >= 0 && pre[k.off] < before
	}
}

const NameShareDeliveryCountBounded = "ShareDeliveryCountBounded"

var _ = register(Checker{Name: NameShareDeliveryCountBounded, Place: 220, Groups: ShareGroups,
	Asserts: "a delivery count only rises and never passes the limit; a record at the limit is archived",
	judge:   func(in *judging) Verdict { return in.sf.deliveryCountBounded(in.plan) }})

// deliveryCountBounded: every delivery count is at least 1 and at most the
// limit; a record delivered after another delivery of it (sent after that
// one was answered) has a higher count, and none is delivered after a
// delivery at the limit, unless a node fault came between (the new leader
// knows only the persisted count).
func (sf *shareFacts) deliveryCountBounded(plan history.Plan) Verdict {
	v := newVerdict(NameShareDeliveryCountBounded)
	limit := int16(0)
	if plan.Share != nil {
		limit = plan.Share.DeliveryCountLimit
	}
	excused := 0
	for _, k := range sortedShareKeys(sf.byRecord) {
		ids := sf.byRecord[k]
		for j, id := range ids {
			y := sf.acqs[id]
			if y.rng.DeliveryCount < 1 || (limit > 0 && y.rng.DeliveryCount > limit) {
				v.fail([]int64{sf.f.idx(y.inv), sf.f.idx(y.ans)}, "%s delivered at count %d, %s: %s", k, y.rng.DeliveryCount, countExcess(y.rng.DeliveryCount, limit), sf.describe(y))
				continue
			}
			for i := 0; i < j; i++ {
				x := sf.acqs[ids[i]]
				if y.inv < x.ans {
					continue
				}
				atLimit := limit > 0 && x.rng.DeliveryCount >= limit
				if y.rng.DeliveryCount > x.rng.DeliveryCount && !atLimit {
					continue
				}
				if x.node != y.node || sf.nodeFault(x.inv, y.ans) != "" || sf.droppedOn(x.node, k.tp, ids[i], y.ans, v.Name) != "" {
					excused++ // a new leader, or the share-partition loaded again: it knows only the persisted count
					continue
				}
				what := fmt.Sprintf("its delivery count went from %d to %d", x.rng.DeliveryCount, y.rng.DeliveryCount)
				if atLimit {
					what = fmt.Sprintf("it was delivered again after a delivery at the limit %d, where it must be archived", limit)
				}
				v.fail([]int64{sf.f.idx(x.inv), sf.f.idx(x.ans), sf.f.idx(y.inv), sf.f.idx(y.ans)},
					"%s: %s with no node fault between: first %s; then %s", k, what, sf.describe(x), sf.describe(y))
				break
			}
		}
	}
	if limit == 0 {
		v.note("the run's plan gives no delivery count limit: only rising counts were checked")
	}
	v.note("%d records' deliveries checked, %d later deliveries excused by a node fault, a leader change or a dropped share-partition in between", len(sf.byRecord), excused)
	sf.dropNote(v, v.Name)
	return v.done()
}

const NameShareAcksOnlyAcquired = "ShareAcksOnlyAcquired"

var _ = register(Checker{Name: NameShareAcksOnlyAcquired, Place: 230, Groups: ShareGroups,
	Asserts: "a member acknowledges only records it holds",
	judge:   func(in *judging) Verdict { return in.sf.acksOnlyAcquired() }})

// acksOnlyAcquired: an acknowledgement the broker answered without an
// error covers only records the member had acquired (a fetch of it
// answered before the acknowledgement was sent).
func (sf *shareFacts) acksOnlyAcquired() Verdict {
	v := newVerdict(NameShareAcksOnlyAcquired)
	n := 0
	for _, op := range sf.acks {
		if op.outcome != "ok" {
			continue
		}
		n++
		for o := op.ack.First; o <= op.ack.Last; o++ {
			k := shareKey{op.ack.TP(), o}
			held := false
			for _, id := range sf.byRecord[k] {
				a := sf.acqs[id]
				if a.id == op.id && a.ans < op.inv {
					held = true
					break
				}
			}
			if !held {
				v.fail([]int64{sf.f.idx(op.inv), sf.f.idx(op.ans)},
					"the broker acknowledged %s's %s of %s, which %s never acquired", op.member, op.ack.Type, k, op.member)
				break
			}
		}
	}
	v.note("%d acknowledged ranges checked", n)
	return v.done()
}

const NameShareRecordsSettle = "ShareRecordsSettle"

var _ = register(Checker{Name: NameShareRecordsSettle, Place: 240, Groups: ShareGroups,
	Asserts: "every acknowledged record ends accepted, rejected or archived",
	judge:   func(in *judging) Verdict { return in.sf.recordsSettle(in.obs, in.plan) }})

// recordsSettle: every record a producer got acknowledged on the share
// group's topics settles before the final observation: accepted or
// rejected (the broker acknowledged it, the answer never came, or it came
// with an error Kafka may give after the state write landed), or
// delivered at the limit (then archived). A record never delivered, or
// whose last delivery's lock lapsed long enough before the final phase for
// it to be delivered again, is a violation; one still under a lock, or
// possibly taken to the limit by fetches whose answers never came, is
// noted. Long enough is a slack (2 s and two heartbeat intervals) of the
// members' running: the harness's stalls after the lapse are counted as
// share_stall.go says.
func (sf *shareFacts) recordsSettle(obs *history.Observations, plan history.Plan) Verdict {
	v := newVerdict(NameShareRecordsSettle)
	f := sf.f
	if len(sf.f.phases[history.PhaseFinal]) == 0 {
		return skipped(v.Name, "the run never reached its final phase: records may still be in flight")
	}
	limit := int16(0)
	if plan.Share != nil {
		limit = plan.Share.DeliveryCountLimit
	}
	topics := map[string]bool{}
	for _, t := range plan.Topics {
		topics[t.Name] = true
	}
	starts := finalShareStarts(obs)
	settled, maybeErrs := sf.settledByAcks()
	unknownFetch := sf.unansweredFetches()
	slack := settleSlack(plan)
	stalls := shareStallRule(f, plan)
	stalls.noteSettle(v, f)
	finalAt := sf.at(sf.final)
	produced, ok, inFlight, maybeArchived, stalled := 0, 0, 0, 0, 0
	unconfirmed := map[string]int{} // by how: "unknown", "maybe"
	answeredErr := 0
	for i, e := range f.ev {
		if e.F != history.FProduce || e.Type != history.OK {
			continue
		}
		p, isP := f.vals[i].(history.Produce)
		if !isP || !p.Acked || p.Offset < 0 || !topics[p.Topic] {
			continue
		}
		produced++
		k := shareKey{history.TP{Topic: p.Topic, Partition: p.Partition}, p.Offset}
		if how, ok2 := settled[k]; ok2 {
			ok++
			// Settled only by an acknowledgement whose answer never came:
			// the share-partition start offset confirms it when past it
			// (the persisted start offset lags the broker by its last
			// state write, SharePartition.writeShareGroupState sends
			// startOffset() before the write's transitions complete, so a
			// start offset at or below it proves nothing).
			if how == "maybe" {
				answeredErr++
			}
			if s, seen := starts[k.tp]; how != "ok" && (!seen || s.Error != "" || k.off >= s.StartOffset) {
				unconfirmed[how]++
			}
			continue
		}
		ids := sf.byRecord[k]
		if len(ids) > 0 {
			last := sf.acqs[ids[len(ids)-1]]
			for _, id := range ids {
				if a := sf.acqs[id]; a.rng.DeliveryCount > last.rng.DeliveryCount {
					last = a
				}
			}
			if limit > 0 && last.rng.DeliveryCount >= limit {
				ok++ // archived when released or when its lock lapsed
				continue
			}
			// The lock lapsed by lapse at the latest; from then a
			// member fetching the partition gets the record again, within
			// the slack of the members' running (the stalls, stall.go).
			lapse := sf.at(last.ans) + last.lock
			if lapse+slack.Limit > finalAt {
				inFlight++
				continue
			}
			over, m, from := stalls.lapseWait(v, f, k, lapse, finalAt, slack, &stalled)
			if over < 0 {
				continue
			}
			if limit > 0 && int(last.rng.DeliveryCount)+countAfter(unknownFetch[k.tp], last.ans) >= int(limit) {
				maybeArchived++
				continue
			}
			overrun := fmt.Sprintf("%s, %s over the slack for a delivery again (%s)", from, dur(over), m.bound.Reason)
			v.fail(append([]int64{f.idx(last.inv), f.idx(last.ans), e.Index}, m.cite...),
				"%s (produced at event %d) never settled: last %s; no accept or reject, not at the limit, and its lock lapsed %v before the final phase without another delivery%s%s",
				k, e.Index, sf.describe(last), finalAt-lapse, overrun, startNote(starts, k))
			continue
		}
		if limit > 0 && countAfter(unknownFetch[k.tp], i) >= int(limit) {
			maybeArchived++
			continue
		}
		v.fail([]int64{e.Index, f.idx(sf.final)}, "%s (produced at event %d) was never delivered to any share member before the final phase (event %d, %s after its produce was answered)%s", k, e.Index, f.idx(sf.final), dur(finalAt-sf.at(i)), startNote(starts, k))
	}
	v.note("%d acknowledged-produced records: %d settled (%d of them by an accept or reject whose answer never came, not confirmed by the share-partition start offset), %d still under a lock at the final phase, %d possibly archived by fetches whose answers never came", produced, ok, unconfirmed["unknown"], inFlight, maybeArchived)
	if stalled > 0 {
		v.note("%d records whose lock lapsed more than the slack (%s) before the final phase, with no delivery since, within it once the harness's stalls are counted: not judged unsettled", stalled, slack.Reason)
	}
	if answeredErr > 0 {
		v.note("%d records settled only by an accept or reject answered with an error Kafka may give after the state write landed (%s: a persister write retried after an attempt that landed; version.ShareAckMayHaveApplied), %d of them not confirmed by the share-partition start offset",
			answeredErr, strings.Join(slices.Sorted(maps.Keys(maybeErrs)), ", "), unconfirmed["maybe"])
	}
	if len(starts) == 0 {
		v.note("no share-partition start offsets were observed")
	}
	return v.done()
}

// countExcess says how a delivery count outside 1–limit misses it: below
// 1, where every count starts, or how far over the plan's limit.
func countExcess(count, limit int16) string {
	if count < 1 {
		return fmt.Sprintf("%d below 1, where a delivery count starts", 1-int(count))
	}
	return fmt.Sprintf("outside 1–%d: %d over the plan's limit %d (group.share.delivery.count.limit)", limit, int(count)-int(limit), limit)
}

// finalShareStarts is the share-partition start offsets the final
// observation holds, by partition.
func finalShareStarts(obs *history.Observations) map[history.TP]history.ShareStart {
	starts := map[history.TP]history.ShareStart{}
	if obs != nil {
		for _, s := range obs.Final.ShareStarts {
			starts[history.TP{Topic: s.Topic, Partition: s.Partition}] = s
		}
	}
	return starts
}

// unansweredFetches is, per partition, the ShareFetches whose answer never
// came: each may have acquired (and counted a delivery of) any record of it.
func (sf *shareFacts) unansweredFetches() map[history.TP][]int {
	f := sf.f
	out := map[history.TP][]int{}
	for _, c := range sf.calls {
		if c.typ != history.Info && c.typ != history.Invoke {
			continue
		}
		if v, ok := f.vals[c.inv].(history.ShareFetch); ok && f.ev[c.inv].F == history.FShareFetch {
			for _, t := range v.Fetch {
				out[t] = append(out[t], c.inv)
			}
		}
	}
	return out
}

// settleSlack is how long after a lock lapsed a member fetching the
// partition gets the record again: 2 s and two heartbeat intervals.
func settleSlack(plan history.Plan) Bound {
	slack := Bound{2 * time.Second, "2s"}
	if plan.HeartbeatInterval > 0 {
		slack.Limit += 2 * plan.HeartbeatInterval
		slack.Reason = fmt.Sprintf("2s + 2×heartbeat %s = %s", dur(plan.HeartbeatInterval), dur(slack.Limit))
	}
	return slack
}

// settledByAcks gives each record an accept or reject may have settled
// the best outcome among them ("ok", then "unknown", then "maybe"), and
// the errors of the "maybe" ones.
func (sf *shareFacts) settledByAcks() (map[shareKey]string, map[string]bool) {
	settled := map[shareKey]string{}
	maybeErrs := map[string]bool{}
	for _, op := range sf.acks {
		if !op.mayHaveApplied() || op.ack.Type == history.AckRelease || op.ack.Type == history.AckRenew {
			continue
		}
		if op.outcome == "maybe" {
			maybeErrs[op.err] = true
		}
		for o := op.ack.First; o <= op.ack.Last; o++ {
			k := shareKey{op.ack.TP(), o}
			if op.outcome == "ok" || settled[k] == "" || (op.outcome == "unknown" && settled[k] == "maybe") {
				settled[k] = op.outcome
			}
		}
	}
	return settled, maybeErrs
}

// countAfter counts the positions in ps after pos.
func countAfter(ps []int, pos int) int {
	n := 0
	for _, p := range ps {
		if p > pos {
			n++
		}
	}
	return n
}

func startNote(starts map[history.TP]history.ShareStart, k shareKey) string {
	s, ok := starts[k.tp]
	if !ok {
		return ""
	}
	if s.Error != "" {
		return fmt.Sprintf(" (the final DescribeShareGroupOffsets of %s failed: %s)", k.tp, s.Error)
	}
	if k.off < s.StartOffset {
		return fmt.Sprintf("; the broker's share-partition start offset %d is past it, so it counts it settled although no member accepted or rejected it", s.StartOffset)
	}
	return fmt.Sprintf("; the broker's share-partition start offset is %d (end %d)", s.StartOffset, s.End)
}
