package check

import (
	"fmt"
	"sort"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/history"
)

// facts is everything the checkers derive from one pass over the history: ownership intervals,
// (partition, epoch) owners, commits with their outcomes, consumptions. All builds it once and
// hands it to every checker; the exported checkers build it themselves. Positions are indexes into
// the event slice; messages cite Event.Index.
type facts struct {
	ev       []history.Event
	vals     []any // typed payloads, decoded once
	partner  []int
	pairErr  error
	problems []Violation

	tpIdx  map[history.TP]int
	tps    []history.TP
	memIdx map[string]int
	mems   []string
	proto  []string // last protocol each member reported

	intervals []interval
	byTP      [][]int // interval ids per partition, in start order

	pairs     map[pairKey]pairOwner
	conflicts []pairConflict
	// heirs are, per (partition, epoch) pair, the static members that took the pair over from its
	// owner, in order (a static handover, see findInstances); handovers counts them.
	heirs     map[pairKey][]pairOwner
	handovers int
	// instance is each member's group.instance.id, as its joins, heartbeats and commits say.
	instance map[string]string

	commits     []commitOp
	commitsByTP [][]int // commit ids per partition, in invoke order

	sessions [][]call // per member: successful heartbeat/join/sync calls, in invoke order

	consumes   [][]consumeRef // per partition, in history order
	produces   []int          // positions of produce completions (ok) and unknown outcomes (info)
	describes  []int          // positions of describe ok events
	phases     map[string][]int
	faultStops []int
	// faultSpans: from each fault's start (its invoke) to its stop (its completion), or to the end
	// of the history; a start answered fail (not applied) has none.
	faultSpans [][2]int
	// stalls are the harness's stalls (FStall), in history order: when the
	// harness process did not run (stall.go).
	stalls []stallAt

	incs     []incarnation // where the group's epochs start over, in history order
	incNotes []string      // what findIncarnations excused and what not

	kinds   map[string]string // member name → kind, as the plan says (history.Plan.Kinds)
	session time.Duration     // the plan's session timeout (0: not known)
	// rebalance is the plan's rebalance timeout (0: not known).
	rebalance time.Duration
	// obs and plan are the run's observations and plan, for the findings'
	// sightings that read them (share_finding.go).
	obs   *history.Observations
	plan  history.Plan
	snaps []placed   // the observations' snapshots, placed in the history (evidence.go)
	log   *commitLog // what __consumer_offsets says about the order of writes, nil if unread
	// drops are the partitions __consumer_offsets shows a downgrade and an
	// upgrade took from a classic member without a revocation
	// (reconvertDrops), read on first use; nil until then.
	drops []reconvertDrop
	// readmits are the member ids __consumer_offsets shows removed and
	// written again as new members (readmissions), and the position the
	// snapshot that showed them began after; nil until first read.
	readmits    []readmission
	readmitUpto int
}

type endKind uint8

const (
	endOpen endKind = iota
	endRevoked
	endLost
)

func (k endKind) String() string {
	switch k {
	case endRevoked:
		return "revoked"
	case endLost:
		return "lost"
	}
	return "still owned at the end"
}

// interval is one stretch during which a member owned a partition: [start, end) in positions.
type interval struct {
	member, tp int
	start, end int
	endKind    endKind
	epoch      int32 // epoch the member held when the ownership began
	inc        int   // incarnation of the group when the ownership began
	protocol   string
	// startPoll and endPoll are how many of the member's Polls had
	// returned when the ownership began and ended (history.Assignment's
	// AfterPoll), when the member said (startPolled, endPolled): a record
	// from Poll n was handed out under this ownership if
	// startPoll < n <= endPoll.
	startPoll, endPoll     uint64
	startPolled, endPolled bool
}

type pairKey struct {
	inc   int
	tp    int
	epoch int32
}

// pairOwner is who holds a (partition, epoch) pair, from which position. from is the earliest the
// member can have known the epoch: the invoke of the call whose answer gave it (the answer may be
// recorded after the member already used it), or pos itself for a fact.
type pairOwner struct{ member, pos, from int }

type pairConflict struct {
	inc           int
	tp            int
	epoch         int32
	first, second pairOwner
}

// call is where a call was invoked and where it completed.
type call struct{ inv, done int }

type commitOp struct {
	member  int
	process string // the process that made the call
	// inv is the position of the invoke; 0 for an answer recorded without its invoke (a broken
	// pairing), which is only known to have been sent before its answer.
	inv     int
	done    int // -1 while open
	outcome history.Type
	c       history.Commit
	tps     []int   // partitions the request covered, without partition errors
	offs    []int64 // offsets, parallel to tps
}

// mayHaveBeenWritten reports whether an OffsetCommit partition error leaves
// open that the offset was written. Kafka's group coordinator appends the
// commit's record first and answers once it is replicated; when that wait
// times out or the leader moves, GroupCoordinatorService#normalizeException
// answers COORDINATOR_NOT_AVAILABLE (for REQUEST_TIMED_OUT and
// NOT_ENOUGH_REPLICAS) or NOT_COORDINATOR (for NOT_LEADER_OR_FOLLOWER), yet
// the record may stay in the log and a later coordinator replays it (seen
// in a broker-faults run on 4.4.0: a commit answered COORDINATOR_NOT_AVAILABLE
// while a follower was paused was read back afterwards).
func mayHaveBeenWritten(err string) bool { return version.GroupWriteMayHaveLanded(err) }

// faultDuring reports whether a fault was in force at some point between positions lo and hi.
func (f *facts) faultDuring(lo, hi int) bool {
	for _, s := range f.faultSpans {
		if s[0] <= hi && s[1] >= lo {
			return true
		}
	}
	return false
}

// accepted reports whether the coordinator certainly applied the commit.
func (c *commitOp) accepted() bool { return c.outcome == history.OK }

// maybe reports whether the commit may have been applied (accepted, unknown or still open).
func (c *commitOp) maybe() bool { return c.outcome != history.Fail }

func (c *commitOp) offsetOf(tp int) (int64, bool) {
	for i, t := range c.tps {
		if t == tp {
			return c.offs[i], true
		}
	}
	return 0, false
}

type consumeRef struct {
	pos      int
	member   int
	interval int // ownership interval the member had then, -1 if none
	off      int64
	seq      int64
	poll     uint64 // the member's Poll that handed it out (history.Consume.Poll), 0 if unknown
}

func (f *facts) idx(pos int) int64 {
	if pos < 0 || pos >= len(f.ev) {
		return -1
	}
	return f.ev[pos].Index
}

func (f *facts) tp(t history.TP) int {
	if i, ok := f.tpIdx[t]; ok {
		return i
	}
	i := len(f.tps)
	f.tpIdx[t] = i
	f.tps = append(f.tps, t)
	f.byTP = append(f.byTP, nil)
	f.commitsByTP = append(f.commitsByTP, nil)
	f.consumes = append(f.consumes, nil)
	return i
}

func (f *facts) member(name, process string) int {
	if name == "" {
		name = process
	}
	if i, ok := f.memIdx[name]; ok {
		return i
	}
	i := len(f.mems)
	f.memIdx[name] = i
	f.mems = append(f.mems, name)
	f.proto = append(f.proto, "")
	f.sessions = append(f.sessions, nil)
	return i
}

// posOfIndex returns the position of the first event with Index >= index.
func (f *facts) posOfIndex(index int64) int {
	return sort.Search(len(f.ev), func(i int) bool { return f.ev[i].Index >= index })
}

// pos is the position of the event with index idx, -1 if none.
func (f *facts) pos(idx int64) int {
	i := sort.Search(len(f.ev), func(i int) bool { return f.ev[i].Index >= idx })
	if i < len(f.ev) && f.ev[i].Index == idx {
		return i
	}
	return -1
}

// workloadStart is the time of the first workload phase marker, or of the
// first event.
func (f *facts) workloadStart() time.Duration {
	if ps := f.phases[history.PhaseWorkload]; len(ps) > 0 {
		return f.ev[ps[0]].Time
	}
	if len(f.ev) > 0 {
		return f.ev[0].Time
	}
	return 0
}

func (f *facts) lastPhase(name string) int {
	ps := f.phases[name]
	if len(ps) == 0 {
		return -1
	}
	return ps[len(ps)-1]
}

// A static handover: Kafka lets a newcomer take the place of a static member under its
// group.instance.id, in either protocol, with the member's assignment and epoch
// (GroupMetadataManager.getOrMaybeSubscribeStaticConsumerGroupMember copies the member under the new
// member id, and replaceMember moves its partition epochs; a classic group's static rejoin keeps the
// generation). A rolling bounce of a static member into the other protocol is such a place taken
// over by another process (another member in the history): its (partition, epoch) pairs pass to the
// newcomer. A pair is taken as handed over, not shared, only when both members carried the same
// instance id and the first no longer owned the partition when the second began to.

// findInstances reads each member's instance id from its joins, heartbeats and commits.
func (f *facts) findInstances() {
	f.instance = map[string]string{}
	for i := range f.ev {
		var name, id string
		switch v := f.vals[i].(type) {
		case history.Join:
			name, id = v.Member, v.InstanceID
		case history.Heartbeat:
			name, id = v.Member, v.InstanceID
		case history.Commit:
			name, id = v.Member, v.InstanceID
		}
		if name != "" && id != "" && f.instance[name] == "" {
			f.instance[name] = id
		}
	}
}

// sameInstance reports whether members a and b are one static member's incarnations.
func (f *facts) sameInstance(a, b int) bool {
	id := f.instance[f.mems[a]]
	return id != "" && id == f.instance[f.mems[b]]
}

func (f *facts) problem(pos int, format string, args ...any) {
	if len(f.problems) < maxViolations {
		f.problems = append(f.problems, Violation{Message: fmt.Sprintf(format, args...), EventIndexes: []int64{f.idx(pos)}})
	}
}

func build(events []history.Event, obs *history.Observations) *facts {
	n := len(events)
	f := &facts{
		ev:     events,
		vals:   make([]any, n),
		tpIdx:  map[history.TP]int{},
		memIdx: map[string]int{},
		pairs:  map[pairKey]pairOwner{},
		heirs:  map[pairKey][]pairOwner{},
		phases: map[string][]int{},
	}
	f.obs = obs
	f.partner, f.pairErr = history.Pairs(events)
	b := &builder{f: f, n: n, decodeErr: make([]error, n), openFault: map[string]int{}, commitAt: map[int]int{}}
	for i := range events {
		f.vals[i], b.decodeErr[i] = history.TypedValue(events[i]) // nil value on error
	}
	f.findInstances()
	f.findIncarnations(obs)
	for i := range events {
		b.event(i)
	}
	for _, s := range b.openFault {
		f.faultSpans = append(f.faultSpans, [2]int{s, n})
	}
	f.placeByPoll()
	f.snaps = f.snapshots(obs)
	f.placeCommits()
	sort.Slice(f.conflicts, func(a, b int) bool { return f.conflicts[a].second.pos < f.conflicts[b].second.pos })
	f.buildLog(obs)
	return f
}

// builder walks the history once, in order, for build: what each member
// holds and at which epoch, where the group's incarnations start over, the
// faults in force and the commit calls open.
type builder struct {
	f         *facts
	n         int
	decodeErr []error
	inc       int            // incarnation of the group at the current position
	openFault map[string]int // per nemesis process: the invoke of its fault in force
	held      []map[int]int  // per member: partition → open interval id
	epoch     []int32        // per member: current epoch as far as the history shows
	// joined: per member, its epoch is a classic generation a JoinGroup answered, and what it
	// held before is not yet registered at it (confirm).
	joined   []bool
	commitAt map[int]int // a commit's invoke → its commitOp
}

// grow makes room for member m.
func (b *builder) grow(m int) {
	for len(b.held) <= m {
		b.held = append(b.held, map[int]int{})
		b.epoch = append(b.epoch, 0)
		b.joined = append(b.joined, false)
	}
}

// registerPair records m as an owner of (tp, epoch e) at pos: the first,
// the same instance's heir, or a conflict.
func (b *builder) registerPair(tp int, e int32, m, pos int) {
	if e <= 0 {
		return
	}
	f := b.f
	k := pairKey{b.inc, tp, e}
	o, ok := f.pairs[k]
	if !ok {
		f.pairs[k] = pairOwner{m, pos, f.sentAt(pos)}
		return
	}
	last := o
	if hs := f.heirs[k]; len(hs) > 0 {
		last = hs[len(hs)-1]
	}
	if o.member == m || last.member == m {
		return
	}
	if _, still := b.held[last.member][tp]; !still && f.sameInstance(last.member, m) {
		f.heirs[k] = append(f.heirs[k], pairOwner{m, pos, f.sentAt(pos)})
		f.handovers++
		return
	}
	f.conflicts = append(f.conflicts, pairConflict{b.inc, tp, e, o, pairOwner{m, pos, f.sentAt(pos)}})
}

// setEpoch moves m to epoch e at pos, registering what it holds at it.
func (b *builder) setEpoch(m int, e int32, pos int) {
	if e <= 0 || e == b.epoch[m] {
		return
	}
	b.epoch[m], b.joined[m] = e, false
	b.registerHeld(m, e, pos)
}

// registerHeld registers what m holds at epoch e, at pos, in partition order.
func (b *builder) registerHeld(m int, e int32, pos int) {
	tps := make([]int, 0, len(b.held[m]))
	for tp := range b.held[m] {
		tps = append(tps, tp)
	}
	sort.Ints(tps)
	for _, tp := range tps {
		b.registerPair(tp, e, m, pos)
	}
}

// joinEpoch moves classic member m to the generation e its JoinGroup was answered, without
// registering what it holds at it: that waits for the generation to be confirmed (confirm). A
// generation is written to __consumer_offsets only with its assignment, at SyncGroup: a
// coordinator that fails over before loses it, and the next one gives the same number again to
// a rebalance of its own (4.1.2, seed 95072700681147714: m1 joined generation 2, its SyncGroup
// was answered ILLEGAL_GENERATION by the new coordinator, it lost its partitions, and the group's
// second generation 2 gave them to others). A cooperative member's partitions carried into a
// generation are the generation's only once it is confirmed to the member.
func (b *builder) joinEpoch(m int, e int32) {
	if e <= 0 || e == b.epoch[m] {
		return
	}
	b.epoch[m], b.joined[m] = e, true
}

// confirm registers what m holds at its joined generation e, once a SyncGroup or Heartbeat at e
// is answered, or an assignment of e reported (a loss reported at e confirms nothing: the member
// says its own generation, whatever the coordinator knew).
func (b *builder) confirm(m int, e int32, pos int) {
	if !b.joined[m] || e != b.epoch[m] {
		return
	}
	b.joined[m] = false
	b.registerHeld(m, e, pos)
}

// closeAll ends every interval m holds at pos.
func (b *builder) closeAll(m int, kind endKind, pos int) {
	for tp, id := range b.held[m] {
		b.f.intervals[id].end, b.f.intervals[id].endKind = pos, kind
		delete(b.held[m], tp)
	}
}

// session records a call at pos that proves m's session valid.
func (b *builder) session(m, pos int) {
	b.f.sessions[m] = append(b.f.sessions[m], call{b.f.sentAt(pos), pos})
}

// payload is event i's decoded value as a T, or a problem recorded.
func payload[T any](f *facts, i int, what string) (T, bool) {
	v, ok := f.vals[i].(T)
	if !ok {
		var want T
		f.problem(i, "event %d: %s payload is %T, want %T", f.ev[i].Index, what, f.vals[i], want)
	}
	return v, ok
}

// event takes event i into the facts.
func (b *builder) event(i int) {
	f := b.f
	if b.inc < len(f.incs) && f.incs[b.inc].start == i {
		// Every membership had ended: the new incarnation's epochs start from nothing.
		b.inc++
		clear(b.epoch)
	}
	e := &f.ev[i]
	if err := b.decodeErr[i]; err != nil {
		f.problem(i, "event %d: %v", e.Index, err)
		return
	}
	switch e.F {
	case history.FAssigned, history.FRevoked, history.FLost:
		if a, ok := payload[history.Assignment](f, i, string(e.F)); ok {
			b.assignment(i, a)
		}
	case history.FFenced, history.FSessionExpired, history.FLeft:
		if mb, ok := payload[history.Membership](f, i, string(e.F)); ok && (e.Type == history.OK || e.Type == history.Info) {
			m := f.member(mb.Member, e.Process)
			b.grow(m)
			kind := endLost
			if e.F == history.FLeft {
				kind = endRevoked
			}
			b.closeAll(m, kind, i)
		}
	case history.FHeartbeat:
		if hb, ok := payload[history.Heartbeat](f, i, "heartbeat"); ok && e.Type == history.OK {
			b.heartbeat(i, hb)
		}
	case history.FJoin:
		if j, ok := payload[history.Join](f, i, "join"); ok && e.Type == history.OK {
			m := f.member(j.Member, e.Process)
			b.grow(m)
			f.proto[m] = history.ProtocolClassic
			b.joinEpoch(m, j.Generation)
			b.session(m, i)
		}
	case history.FSync:
		if s, ok := payload[history.Sync](f, i, "sync"); ok && e.Type == history.OK {
			m := f.member(s.Member, e.Process)
			b.grow(m)
			b.confirm(m, s.Generation, i)
			b.setEpoch(m, s.Generation, i)
			b.session(m, i)
		}
	case history.FCommit:
		if c, ok := payload[history.Commit](f, i, "commit"); ok {
			b.commit(i, c)
		}
	case history.FConsume:
		if c, ok := payload[history.Consume](f, i, "consume"); ok {
			m := f.member(c.Member, e.Process)
			b.grow(m)
			tp := f.tp(c.TP())
			iv := -1
			if id, own := b.held[m][tp]; own {
				iv = id
			}
			f.consumes[tp] = append(f.consumes[tp], consumeRef{pos: i, member: m, interval: iv, off: c.Offset, seq: c.Seq, poll: c.Poll})
		}
	case history.FProduce:
		if _, ok := payload[history.Produce](f, i, "produce"); ok && (e.Type == history.OK || (e.Type == history.Info && f.partner[i] >= 0)) {
			f.produces = append(f.produces, i)
		}
	case history.FDescribe:
		if _, ok := payload[history.Describe](f, i, "describe"); ok && (e.Type == history.OK || (e.Type == history.Info && f.partner[i] < 0)) {
			f.describes = append(f.describes, i)
		}
	case history.FPhase:
		if ph, ok := payload[history.Phase](f, i, "phase"); ok {
			f.phases[ph.Name] = append(f.phases[ph.Name], i)
		}
	case history.FFaultStart, history.FFaultStop:
		b.fault(i)
	case history.FStall:
		if st, ok := payload[history.Stall](f, i, "stall"); ok {
			b.stall(i, st)
		}
	}
}

// assignment takes an assigned, revoked or lost partition set.
func (b *builder) assignment(i int, a history.Assignment) {
	f, e := b.f, &b.f.ev[i]
	if e.Type != history.OK && e.Type != history.Info {
		return
	}
	m := f.member(a.Member, e.Process)
	b.grow(m)
	if a.Protocol != "" {
		f.proto[m] = a.Protocol
	}
	if e.F == history.FAssigned {
		b.confirm(m, a.Epoch, i)
		b.setEpoch(m, a.Epoch, i)
		for _, t := range a.Partitions {
			tp := f.tp(t)
			if _, own := b.held[m][tp]; own {
				continue
			}
			id := len(f.intervals)
			iv := interval{member: m, tp: tp, start: i, end: b.n, epoch: b.epoch[m], inc: b.inc, protocol: f.proto[m]}
			if a.AfterPoll != nil {
				iv.startPoll, iv.startPolled = *a.AfterPoll, true
			}
			f.intervals = append(f.intervals, iv)
			f.byTP[tp] = append(f.byTP[tp], id)
			b.held[m][tp] = id
			b.registerPair(tp, b.epoch[m], m, i)
		}
		return
	}
	kind := endRevoked
	if e.F == history.FLost {
		kind = endLost
	}
	for _, t := range a.Partitions {
		tp := f.tp(t)
		if id, own := b.held[m][tp]; own {
			f.intervals[id].end, f.intervals[id].endKind = i, kind
			if a.AfterPoll != nil {
				f.intervals[id].endPoll, f.intervals[id].endPolled = *a.AfterPoll, true
			}
			delete(b.held[m], tp)
		} else if id := b.lastEnded(m, tp); id >= 0 && !f.intervals[id].endPolled && a.AfterPoll != nil {
			// Ended already by a fact (fenced, session expired): the
			// member's own report of the loss says how many Polls it
			// had answered by then.
			f.intervals[id].endPoll, f.intervals[id].endPolled = *a.AfterPoll, true
		}
	}
}

// lastEnded is the id of member m's last ownership of tp if it has ended,
// -1 otherwise.
func (b *builder) lastEnded(m, tp int) int {
	ids := b.f.byTP[tp]
	for k := len(ids) - 1; k >= 0; k-- {
		if iv := &b.f.intervals[ids[k]]; iv.member == m {
			if iv.end < b.n {
				return ids[k]
			}
			return -1
		}
	}
	return -1
}

// placeByPoll puts each record a member numbered by its Poll under the
// ownership that Poll handed it out in. The workload writes a Poll's
// records after Poll returned, and the member may report an ownership
// change meanwhile (a fence's loss, from its heartbeat goroutine): the
// history then shows the record after the loss, though it was handed out
// before it. The poll counts say which came first: an ownership that
// began after startPoll Polls had returned and ended after endPoll covers
// the records of Polls startPoll+1 to endPoll.
//
// The other way round too: the member reports an assignment after it made
// it (its events are handed to the hooks after its ownership lock is
// released), and a Poll meanwhile may hand out a record of the new
// partition, which the workload writes before the assignment: the counts
// say the record's Poll returned after the assignment was made. Poll
// counts are a process's own, so a record is put under an ownership the
// history shows later only when no new process of the member started
// between them (memberIncarnations).
//
// Only what the counts prove is moved: a record the history places under
// no ownership, or under one that began after its Poll returned, goes to
// the member's ownership of the partition whose counts cover it (one still
// open at the end covers every later Poll); without such an ownership it
// stays where it is.
func (f *facts) placeByPoll() {
	var starts [][]int
	for tp, cs := range f.consumes {
		for k := range cs {
			c := &cs[k]
			if c.poll == 0 {
				continue
			}
			if c.interval >= 0 {
				if iv := &f.intervals[c.interval]; !iv.startPolled || iv.startPoll < c.poll {
					continue // placed under an ownership that may cover it
				}
			}
			for _, id := range f.byTP[tp] {
				iv := &f.intervals[id]
				covers := iv.member == c.member && iv.startPolled && iv.startPoll < c.poll &&
					(iv.endKind == endOpen || iv.endPolled && c.poll <= iv.endPoll)
				if !covers {
					continue
				}
				if iv.start > c.pos {
					if starts == nil {
						starts = f.memberIncarnations()
					}
					if incarnationStart(starts[c.member], c.pos) != incarnationStart(starts[c.member], iv.start) {
						continue
					}
				}
				c.interval = id
			}
		}
	}
}

// heartbeat takes an answered heartbeat: the member's epoch, its session.
func (b *builder) heartbeat(i int, hb history.Heartbeat) {
	f := b.f
	m := f.member(hb.Member, f.ev[i].Process)
	b.grow(m)
	if hb.Protocol != "" {
		f.proto[m] = hb.Protocol
	}
	if hb.Protocol == history.ProtocolConsumer {
		b.setEpoch(m, hb.ResultEpoch, i)
	} else {
		b.confirm(m, hb.Epoch, i)
		b.setEpoch(m, hb.Epoch, i)
	}
	b.session(m, i)
}

// commit takes a commit's invoke or completion into its commitOp.
func (b *builder) commit(i int, c history.Commit) {
	f, e := b.f, &b.f.ev[i]
	p := f.partner[i]
	if e.Type == history.Invoke {
		m := f.member(c.Member, e.Process)
		b.grow(m)
		b.commitAt[i] = len(f.commits)
		f.commits = append(f.commits, commitOp{member: m, process: e.Process, inv: i, done: -1, c: c})
		return
	}
	if id, ok := b.commitAt[p]; ok && p >= 0 {
		op := &f.commits[id]
		op.done, op.outcome = i, e.Type
		op.c = mergeCommit(op.c, c)
		if op.accepted() {
			// A classic coordinator accepts a commit only from a member of its current
			// generation (ClassicGroup.validateOffsetCommit), so the commit confirms the
			// generation its member joined, as a SyncGroup or Heartbeat answered at it does:
			// a cooperative member whose SyncGroup answer was lost commits the partitions it
			// carried into the generation (4.1.2, seed 6203843358561747071).
			b.confirm(op.member, op.c.Epoch, i)
		}
		return
	}
	// A completion without its invoke (already reported as a pairing problem) was sent at
	// some point before it; a standalone info is a call that started and ended here.
	m := f.member(c.Member, e.Process)
	b.grow(m)
	f.commits = append(f.commits, commitOp{member: m, process: e.Process, inv: f.sentAt(i), done: i, outcome: e.Type, c: c})
}

// fault takes a fault's start or stop: the spans faults were in force.
func (b *builder) fault(i int) {
	f, e := b.f, &b.f.ev[i]
	if e.F == history.FFaultStart {
		switch e.Type {
		case history.Invoke:
			b.openFault[e.Process] = i
		case history.Fail:
			delete(b.openFault, e.Process)
		}
		return
	}
	if e.Type == history.OK || e.Type == history.Info {
		f.faultStops = append(f.faultStops, i)
		if s, ok := b.openFault[e.Process]; ok {
			f.faultSpans = append(f.faultSpans, [2]int{s, i})
			delete(b.openFault, e.Process)
		}
	}
}

// placeCommits files every commit's offsets under their partitions, in
// the order the commits were sent; a commit's partitions whose error does
// not prove the offset unwritten become a commit of their own, with an
// unknown outcome.
func (f *facts) placeCommits() {
	for id, n := 0, len(f.commits); id < n; id++ {
		op := &f.commits[id]
		// A commit call a fault overlapped may have been sent more than once: the clients resend
		// a request whose connection broke or timed out, and the broker may apply an attempt whose
		// answer never arrived (seen on 4.4.0: a commit sent to a paused coordinator was applied
		// when the node resumed, while the member's resent request was answered
		// UNKNOWN_MEMBER_ID). Its error then proves nothing about the earlier attempt.
		resent := op.done > op.inv && f.faultDuring(op.inv, op.done)
		bad := map[history.TP]string{}
		for _, pe := range op.c.PartitionErrors {
			bad[history.TP{Topic: pe.Topic, Partition: pe.Partition}] = pe.Error
		}
		var unknown []history.OffsetAt
		for _, o := range op.c.Offsets {
			e, failed := bad[o.TP()]
			switch {
			case failed && !mayHaveBeenWritten(e) && !resent:
				continue // certainly not written
			case failed && op.outcome != history.Info:
				unknown = append(unknown, o) // judged apart, as an unknown outcome
				continue
			}
			tp := f.tp(o.TP())
			op.tps = append(op.tps, tp)
			op.offs = append(op.offs, o.Offset)
			f.commitsByTP[tp] = append(f.commitsByTP[tp], id)
		}
		if f.proto[op.member] == "" && op.c.Protocol != "" {
			f.proto[op.member] = op.c.Protocol
		}
		if len(unknown) > 0 {
			u := commitOp{member: op.member, process: op.process, inv: op.inv, done: op.done, outcome: history.Info, c: op.c}
			uid := len(f.commits)
			for _, o := range unknown {
				tp := f.tp(o.TP())
				u.tps = append(u.tps, tp)
				u.offs = append(u.offs, o.Offset)
				f.commitsByTP[tp] = append(f.commitsByTP[tp], uid)
			}
			f.commits = append(f.commits, u)
		}
	}
	for tp := range f.commitsByTP {
		ids := f.commitsByTP[tp]
		sort.SliceStable(ids, func(a, b int) bool { return f.commits[ids[a]].inv < f.commits[ids[b]].inv })
	}
}

// sentAt is the earliest position at which the call answered at pos can have been sent: its
// invoke; 0 for an answer (ok or fail) recorded without its invoke, which may have been sent at
// any time before; pos itself for a fact (a standalone info), which is a point.
func (f *facts) sentAt(pos int) int {
	if p := f.partner[pos]; p >= 0 && p < pos {
		return p
	}
	if t := f.ev[pos].Type; t == history.OK || t == history.Fail {
		return 0
	}
	return pos
}

// mergeCommit combines a commit's invoke payload with its completion's: identity and offsets from
// the invoke unless the completion restates them, outcome fields from the completion.
func mergeCommit(inv, done history.Commit) history.Commit {
	out := inv
	if len(done.Offsets) > 0 {
		out.Offsets = done.Offsets
	}
	if done.Member != "" {
		out.Member = done.Member
	}
	if done.MemberID != "" {
		out.MemberID = done.MemberID
	}
	if done.Protocol != "" {
		out.Protocol = done.Protocol
	}
	if done.Epoch != 0 {
		out.Epoch = done.Epoch
	}
	out.Reset = inv.Reset || done.Reset
	out.Error = done.Error
	out.PartitionErrors = done.PartitionErrors
	return out
}
