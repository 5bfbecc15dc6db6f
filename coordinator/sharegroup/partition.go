package sharegroup

import (
	"fmt"
	"slices"

	"github.com/groupquake/groupquake/coordinator/version"
)

// This file models a share-partition leader: Kafka's SharePartition
// (core/src/main/java/kafka/server/share/SharePartition.java with
// server/share/fetch/InFlightState.java and RecordState.java, 4.2 and 4.4
// branches) and the state it writes through the persister, and the part of
// the share coordinator that turns each write into a record of
// __share_group_state (ShareCoordinatorShard.generateShareStateRecord).
//
// The model keeps one state per offset from the start offset on, where
// Kafka keeps in-flight batches that it splits into offsets when a request
// covers part of one: the states, delivery counts and owners are the same,
// and so is what the share coordinator stores once it merged the writes
// (PersisterStateBatchCombiner). The persister's writes succeed at once: a
// write that fails, and the rollback that follows it, is not modelled.
// Time is the injected Clock: a lock lapses when an operation finds the
// clock at or past its deadline (Kafka's timer fires on its own thread; no
// operation of the model comes between a deadline and its lapse).

// StateAcquired is RecordState.ACQUIRED: a record handed to a member under
// an acquisition lock. It is never persisted (a new leader knows no lock).
const StateAcquired int8 = 1

// Error codes a share-partition leader answers an acknowledgement with
// before it writes anything (SharePartition.acknowledge).
const (
	CodeInvalidRecordState = "INVALID_RECORD_STATE"
	CodeInvalidRequest     = "INVALID_REQUEST"
)

// Error is a refusal of the share-partition leader: Code is Kafka's error
// name, Message the exception's message.
type Error struct {
	Code, Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func refuse(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Clock gives the time in milliseconds.
type Clock func() int64

// PartitionConfig is what a share-partition leader is configured with.
type PartitionConfig struct {
	// DeliveryCountLimit is group.share.delivery.count.limit: a record
	// released, or whose lock lapses, once it has been delivered that many
	// times is archived.
	DeliveryCountLimit int16
	// LockMs is group.share.record.lock.duration.ms.
	LockMs int64
	// MaxInFlight is group.share.partition.max.record.locks.
	MaxInFlight int
	// Renew: RENEW is served (ShareFetch/ShareAcknowledge v2, 4.2+; from
	// 4.3 also the group config share.renew.acknowledge.enable, default
	// true). Otherwise RENEW is refused INVALID_RECORD_STATE.
	Renew bool
}

// CoordinatorConfig is what the share coordinator's writes depend on.
type CoordinatorConfig struct {
	// SnapshotEvery is share.coordinator.snapshot.update.records.per.snapshot.
	SnapshotEvery int
	// StartOffsetNoRegress is version.Profile.ShareStartOffsetNoRegress.
	StartOffsetNoRegress bool
}

// ConfigsFor returns the broker defaults of p's release.
func ConfigsFor(p version.Profile) (PartitionConfig, CoordinatorConfig) {
	return PartitionConfig{
			DeliveryCountLimit: version.ShareDeliveryCountLimitDefault,
			LockMs:             version.ShareRecordLockDurationMsDefault,
			MaxInFlight:        version.SharePartitionMaxRecordLocksDefault,
			Renew:              p.ShareFetchV2,
		}, CoordinatorConfig{
			SnapshotEvery:        version.ShareSnapshotUpdateRecordsPerSnapshotDefault,
			StartOffsetNoRegress: p.ShareStartOffsetNoRegress,
		}
}

// Write is one WriteShareGroupState of a share-partition leader
// (SharePartition.writeShareGroupState): the start offset and delivery
// complete count as they are when the write is sent, before the write's
// own transitions move the start offset, and the batches it changed.
type Write struct {
	StateEpoch, LeaderEpoch int32
	StartOffset             int64
	DeliveryCompleteCount   int32
	Batches                 []StateBatch
}

// Coordinator is the share coordinator's side of the model: it turns each
// write into a ShareUpdate, or a ShareSnapshot once SnapshotEvery updates
// followed the last snapshot, and replays what it wrote.
type Coordinator struct {
	cfg     CoordinatorConfig
	clock   Clock
	States  States
	Records []StateRecord
	updates map[StateKey]int
}

// NewCoordinator returns a share coordinator with no state.
func NewCoordinator(cfg CoordinatorConfig, clock Clock) *Coordinator {
	return &Coordinator{cfg: cfg, clock: clock, States: States{}, updates: map[StateKey]int{}}
}

// Initialize writes the snapshot that InitializeShareGroupState writes for
// a share-partition the group coordinator adds (start offset -1: the
// leader picks it from share.auto.offset.reset).
func (c *Coordinator) Initialize(k StateKey, stateEpoch int32) {
	epoch := int32(0)
	if s := c.States[k]; s != nil {
		epoch = s.SnapshotEpoch + 1
	}
	now := c.clock()
	c.append(StateRecord{Type: TypeShareSnapshot, Key: k, Value: &SnapshotValue{SnapshotEpoch: epoch, StateEpoch: stateEpoch,
		LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1, CreateTimestamp: now, WriteTimestamp: now}})
	c.updates[k] = 0
}

// Write applies a leader's write of share-partition k. It refuses one for
// a share-partition that was never initialized (GROUP_ID_NOT_FOUND or
// UNKNOWN_TOPIC_OR_PARTITION in Kafka).
func (c *Coordinator) Write(k StateKey, w Write) error {
	cur := c.States[k]
	if cur == nil {
		return fmt.Errorf("share-partition %s/%x/%d has no state: it was never initialized", k.GroupID, k.TopicID, k.Partition)
	}
	start, dcc := w.StartOffset, w.DeliveryCompleteCount
	if c.cfg.StartOffsetNoRegress {
		start = max(w.StartOffset, cur.StartOffset)
		switch {
		case w.StartOffset == cur.StartOffset:
			dcc = max(w.DeliveryCompleteCount, cur.DeliveryCompleteCount)
		case w.StartOffset < cur.StartOffset:
			dcc = cur.DeliveryCompleteCount
		}
	} else if start == -1 {
		start = cur.StartOffset
	}
	leader := w.LeaderEpoch
	if leader == -1 {
		leader = cur.LeaderEpoch
	}
	if c.updates[k] >= c.cfg.SnapshotEvery {
		now := c.clock()
		c.append(StateRecord{Type: TypeShareSnapshot, Key: k, Value: &SnapshotValue{SnapshotEpoch: cur.SnapshotEpoch + 1,
			StateEpoch: cur.StateEpoch, LeaderEpoch: leader, StartOffset: start, DeliveryCompleteCount: dcc,
			CreateTimestamp: now, WriteTimestamp: now, StateBatches: Combine(cur.Batches, w.Batches, start)}})
		c.updates[k] = 0
		return nil
	}
	c.append(StateRecord{Type: TypeShareUpdate, Key: k, Value: &UpdateValue{SnapshotEpoch: cur.SnapshotEpoch,
		LeaderEpoch: leader, StartOffset: start, DeliveryCompleteCount: dcc, StateBatches: Combine(nil, w.Batches, start)}})
	c.updates[k]++
	return nil
}

func (c *Coordinator) append(r StateRecord) {
	c.Records = append(c.Records, r)
	c.States.Replay(r)
}

// InFlight is the state of one offset past the start offset.
type InFlight struct {
	State         int8
	DeliveryCount int16
	// Member holds the record while it is acquired ("" otherwise).
	Member string
	// Deadline is when the acquisition lock lapses (ms), while acquired.
	Deadline int64
	lock     int64 // the acquisition lock (Kafka's timer task) it is under
}

// Acquired is a range of offsets acquired at one delivery count.
type Acquired struct {
	First, Last   int64
	DeliveryCount int16
}

// Ack is an acknowledgement batch: offsets First to Last, of one type
// (version.AckGap, AckAccept, AckRelease, AckReject, AckRenew).
type Ack struct {
	First, Last int64
	Type        int8
}

// Partition is a share-partition leader.
type Partition struct {
	cfg                     PartitionConfig
	clock                   Clock
	coord                   *Coordinator
	key                     StateKey
	stateEpoch, leaderEpoch int32
	start                   int64
	recs                    []InFlight // offsets start, start+1, ...
	logEnd                  int64      // the log's next offset
	dcc                     int32
	locks                   int64
	// Writes are the leader's writes, in order.
	Writes []Write
}

// NewPartition is a leader taking share-partition k over from the share
// coordinator (SharePartition.maybeInitialize): the persisted start
// offset, or earliest when the state was never written (-1; the share run
// sets share.auto.offset.reset=earliest); the persisted batches with their
// delivery counts, and no lock; offsets between the start offset and the
// last batch that no batch covers are available at delivery count 0 (the
// read gap window). logEnd is the log's next offset.
func NewPartition(cfg PartitionConfig, coord *Coordinator, k StateKey, leaderEpoch int32, earliest, logEnd int64) (*Partition, error) {
	st := coord.States[k]
	if st == nil {
		return nil, fmt.Errorf("share-partition %s/%x/%d has no state: it was never initialized", k.GroupID, k.TopicID, k.Partition)
	}
	p := &Partition{cfg: cfg, clock: coord.clock, coord: coord, key: k, stateEpoch: st.StateEpoch, leaderEpoch: leaderEpoch,
		start: st.StartOffset, logEnd: logEnd}
	if p.start == -1 {
		p.start = earliest
	}
	next := p.start
	for _, b := range st.Batches {
		if b.FirstOffset < p.start || b.LastOffset < b.FirstOffset {
			return nil, fmt.Errorf("persisted batch %d-%d is below the start offset %d or empty: Kafka fails to initialize the share-partition", b.FirstOffset, b.LastOffset, p.start)
		}
		for ; next < b.FirstOffset; next++ {
			p.recs = append(p.recs, InFlight{State: StateAvailable})
		}
		for o := b.FirstOffset; o <= b.LastOffset; o++ {
			p.recs = append(p.recs, InFlight{State: b.DeliveryState, DeliveryCount: b.DeliveryCount})
			if terminal(b.DeliveryState) {
				p.dcc++
			}
		}
		next = b.LastOffset + 1
	}
	p.logEnd = max(p.logEnd, p.end()+1)
	p.advance()
	return p, nil
}

func terminal(s int8) bool { return s == StateAcknowledged || s == StateArchived }

// end is the last offset in flight (Kafka's endOffset), start-1 when none
// is.
func (p *Partition) end() int64 { return p.start + int64(len(p.recs)) - 1 }

// Start is the share-partition start offset.
func (p *Partition) Start() int64 { return p.start }

// End is the last offset in flight, Start()-1 when none is.
func (p *Partition) End() int64 { return p.end() }

// DeliveryCompleteCount is how many offsets past the start offset are
// acknowledged or archived.
func (p *Partition) DeliveryCompleteCount() int32 { return p.dcc }

// State returns offset o's state, false when o is not in flight.
func (p *Partition) State(o int64) (InFlight, bool) {
	if o < p.start || o > p.end() {
		return InFlight{}, false
	}
	return p.recs[o-p.start], true
}

// InFlightCount is numInFlightRecords: the offsets from the start offset
// to the last one acquired.
func (p *Partition) InFlightCount() int { return len(p.recs) }

// Append grows the log by n records.
func (p *Partition) Append(n int) { p.logEnd += int64(n) }

// GrowLog sets the log's next offset to end where end is past it: for a
// leader that reads the log end of a real log before each acquire.
func (p *Partition) GrowLog(end int64) { p.logEnd = max(p.logEnd, end) }

// write sends the leader's write of the changed offsets (ascending, one
// batch per offset, coalesced) with the start offset and count as they are.
func (p *Partition) write(changed []int64) {
	if len(changed) == 0 {
		return
	}
	slices.Sort(changed)
	var bs []StateBatch
	for _, o := range changed {
		r := p.recs[o-p.start]
		if n := len(bs); n > 0 && bs[n-1].LastOffset+1 == o && bs[n-1].DeliveryState == r.State && bs[n-1].DeliveryCount == r.DeliveryCount {
			bs[n-1].LastOffset = o
			continue
		}
		bs = append(bs, StateBatch{FirstOffset: o, LastOffset: o, DeliveryState: r.State, DeliveryCount: r.DeliveryCount})
	}
	w := Write{StateEpoch: p.stateEpoch, LeaderEpoch: p.leaderEpoch, StartOffset: p.start, DeliveryCompleteCount: p.dcc, Batches: bs}
	p.Writes = append(p.Writes, w)
	// The share coordinator has the state: the leader was built from it.
	_ = p.coord.Write(p.key, w)
}

// advance is maybeUpdateCachedStateAndOffsets: the start offset moves past
// the acknowledged and archived offsets it heads; when every offset in
// flight is settled they all leave.
func (p *Partition) advance() {
	n := 0
	for n < len(p.recs) && terminal(p.recs[n].State) {
		n++
	}
	if n == 0 {
		return
	}
	p.start += int64(n)
	p.recs = p.recs[n:]
	if len(p.recs) == 0 {
		p.recs = nil
		p.dcc = 0
		return
	}
	p.dcc -= int32(n)
}

// release is tryUpdateState(AVAILABLE, NO_OP): a record at the delivery
// count limit is archived instead.
func (p *Partition) release(r *InFlight) {
	r.State, r.Member, r.Deadline, r.lock = StateAvailable, "", 0, 0
	if r.DeliveryCount >= p.cfg.DeliveryCountLimit {
		r.State = StateArchived
		p.dcc++
	}
}

// Tick lapses every acquisition lock whose deadline has come
// (releaseAcquisitionLockOnTimeout), oldest first, one write per lock.
func (p *Partition) Tick() {
	now := p.clock()
	type due struct{ deadline, lock int64 }
	var ds []due
	seen := map[int64]bool{}
	for _, r := range p.recs {
		if r.State == StateAcquired && r.Deadline <= now && !seen[r.lock] {
			seen[r.lock] = true
			ds = append(ds, due{r.Deadline, r.lock})
		}
	}
	slices.SortFunc(ds, func(a, b due) int {
		if a.deadline != b.deadline {
			return int(a.deadline - b.deadline)
		}
		return int(a.lock - b.lock)
	})
	for _, d := range ds {
		var changed []int64
		for i := range p.recs {
			if r := &p.recs[i]; r.State == StateAcquired && r.lock == d.lock {
				p.release(r)
				changed = append(changed, p.start+int64(i))
			}
		}
		p.write(changed)
		p.advance()
	}
}

// Lapse lapses the locks of the acquired offsets of first..last now, as
// their timer would: for a driver that learns of a lapse from what
// happened next rather than from the clock. It returns how many offsets
// lapsed.
func (p *Partition) Lapse(first, last int64) int {
	var changed []int64
	for o := max(first, p.start); o <= min(last, p.end()); o++ {
		if r := &p.recs[o-p.start]; r.State == StateAcquired {
			p.release(r)
			changed = append(changed, o)
		}
	}
	p.write(changed)
	p.advance()
	return len(changed)
}

// nextFetchOffset is the first available offset in flight, or the offset
// after the last one in flight.
func (p *Partition) nextFetchOffset() int64 {
	for i, r := range p.recs {
		if r.State == StateAvailable {
			return p.start + int64(i)
		}
	}
	return p.end() + 1
}

func (p *Partition) newLock() (int64, int64) {
	p.locks++
	return p.locks, p.clock() + p.cfg.LockMs
}

// acquireAt acquires offset o for member under lock (INCREASE).
func (p *Partition) acquireAt(o int64, member string, lock, deadline int64) int16 {
	if o > p.end() {
		p.recs = append(p.recs, InFlight{State: StateAvailable})
	}
	r := &p.recs[o-p.start]
	r.State, r.Member, r.Deadline, r.lock = StateAcquired, member, deadline, lock
	r.DeliveryCount++
	return r.DeliveryCount
}

func appendAcquired(out []Acquired, o int64, count int16) []Acquired {
	if n := len(out); n > 0 && out[n-1].Last+1 == o && out[n-1].DeliveryCount == count {
		out[n-1].Last = o
		return out
	}
	return append(out, Acquired{First: o, Last: o, DeliveryCount: count})
}

// Acquire is a ShareFetch of member asking for at most maxRecords records
// (SharePartition.acquire, batch-optimized mode, the log read from the next
// fetch offset to its end): the available offsets from the next fetch
// offset on, then new records, within the room left under MaxInFlight (or,
// when none is left, only offsets already in flight); a record on its last
// delivery is delivered alone (acquireSubsetBatchRecords, a delivery count
// limit above 2). Kafka rounds new records up to the end of the producer's
// batch and halves what it acquires of records at or past half the limit
// (throttling); the model holds no producer batches and does neither.
func (p *Partition) Acquire(member string, maxRecords int) []Acquired {
	p.Tick()
	fetch := p.nextFetchOffset()
	last := p.logEnd - 1
	if last < fetch || maxRecords <= 0 {
		return nil
	}
	want := min(maxRecords, p.cfg.MaxInFlight-len(p.recs))
	if want <= 0 {
		if fetch > p.end() {
			return nil
		}
		want = min(maxRecords, int(p.end()-fetch+1))
		last = min(last, p.end())
	}
	lock, deadline := p.newLock()
	limit := p.cfg.DeliveryCountLimit
	var out []Acquired
	got := 0
	for o := fetch; o <= last && got < want; o++ {
		if o <= p.end() {
			r := p.recs[o-p.start]
			if r.State != StateAvailable {
				continue
			}
			if limit > 2 && r.DeliveryCount == limit-1 && got > 0 {
				break
			}
		}
		c := p.acquireAt(o, member, lock, deadline)
		out = appendAcquired(out, o, c)
		got++
		if limit > 2 && c == limit {
			break
		}
	}
	return out
}

// AcquireRange acquires exactly first..last for member, as a broker's
// answer recorded it: every offset must be available, or the next new
// record of the log (the log grows to hold it). It refuses, changing
// nothing, where the leader could not have acquired them.
func (p *Partition) AcquireRange(member string, first, last int64) ([]Acquired, error) {
	p.Tick()
	if first < p.start {
		return nil, fmt.Errorf("offsets %d-%d: below the start offset %d, which are never acquired", first, last, p.start)
	}
	if first > p.end()+1 {
		return nil, fmt.Errorf("offsets %d-%d: a gap after the last offset in flight %d", first, last, p.end())
	}
	for o := first; o <= min(last, p.end()); o++ {
		if r := p.recs[o-p.start]; r.State != StateAvailable {
			return nil, fmt.Errorf("offset %d is %s (delivery count %d, member %q), not available", o, StateName(r.State), r.DeliveryCount, r.Member)
		}
	}
	p.logEnd = max(p.logEnd, last+1)
	lock, deadline := p.newLock()
	var out []Acquired
	for o := first; o <= last; o++ {
		out = appendAcquired(out, o, p.acquireAt(o, member, lock, deadline))
	}
	return out, nil
}

// StateName names a record state as RecordState does.
func StateName(s int8) string {
	switch s {
	case StateAvailable:
		return "AVAILABLE"
	case StateAcquired:
		return "ACQUIRED"
	case StateAcknowledged:
		return "ACKNOWLEDGED"
	case 3:
		return "ARCHIVING"
	case StateArchived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("RecordState(%d)", s)
}

// Acknowledge applies member's acknowledgements (SharePartition.acknowledge)
// all or nothing: a batch wholly below the start offset is skipped (it is
// answered as if applied); otherwise each offset from the start offset on
// must be in flight, acquired, and held by member, or the whole request is
// refused with the error Kafka gives and nothing changes except RENEWs
// already applied (Kafka renews the timer at once and never rolls it
// back). ACCEPT acknowledges, REJECT and a gap archive, RELEASE makes the
// record available again, or archives it at the delivery count limit, and
// RENEW restarts the lock. One write carries the changed offsets, then the
// start offset advances.
func (p *Partition) Acknowledge(member string, acks []Ack) error {
	p.Tick()
	type undo struct {
		o int64
		r InFlight
	}
	var undos []undo
	var changed []int64
	dcc := p.dcc
	fail := func(e *Error) error {
		for i := len(undos) - 1; i >= 0; i-- {
			p.recs[undos[i].o-p.start] = undos[i].r
		}
		p.dcc = dcc
		return e
	}
	for _, a := range acks {
		if a.Type < version.AckGap || a.Type > version.AckRenew {
			return fail(refuse(CodeInvalidRequest, "Invalid acknowledge type: [%d]", a.Type))
		}
		if a.Last < p.start {
			continue
		}
		first := a.First
		if len(p.recs) == 0 || first > p.end() {
			if len(p.recs) == 0 && !(first < p.start && p.start <= a.Last) {
				return fail(refuse(CodeInvalidRecordState, "Batch record not found. The request batch offsets are not found in the cache."))
			}
			return fail(refuse(CodeInvalidRequest, "Batch record not found. The first offset in request is past acquired records."))
		}
		if a.Last > p.end() {
			return fail(refuse(CodeInvalidRequest, "Batch record not found. The last offset in request is past acquired records."))
		}
		first = max(first, p.start)
		for o := first; o <= a.Last; o++ {
			r := &p.recs[o-p.start]
			if r.State != StateAcquired {
				return fail(refuse(CodeInvalidRecordState, "The offset cannot be acknowledged. The offset is not acquired."))
			}
			if r.Member != member {
				return fail(refuse(CodeInvalidRecordState, "Member is not the owner of offset"))
			}
			if a.Type == version.AckRenew {
				if !p.cfg.Renew {
					return fail(refuse(CodeInvalidRecordState, "Renewing acquisition locks is not enabled for the group."))
				}
				r.lock, r.Deadline = p.newLock()
				continue
			}
			undos = append(undos, undo{o, *r})
			switch a.Type {
			case version.AckAccept:
				r.State, r.Member, r.Deadline, r.lock = StateAcknowledged, "", 0, 0
				p.dcc++
			case version.AckRelease:
				p.release(r)
			default: // reject, gap
				r.State, r.Member, r.Deadline, r.lock = StateArchived, "", 0, 0
				p.dcc++
			}
			changed = append(changed, o)
		}
	}
	p.write(changed)
	p.advance()
	return nil
}

// ReleaseAll releases every record member holds (releaseAcquiredRecords:
// the member left the group or closed its share session), archiving those
// at the delivery count limit, in one write.
func (p *Partition) ReleaseAll(member string) int {
	p.Tick()
	var changed []int64
	for i := range p.recs {
		if r := &p.recs[i]; r.State == StateAcquired && r.Member == member {
			p.release(r)
			changed = append(changed, p.start+int64(i))
		}
	}
	p.write(changed)
	p.advance()
	return len(changed)
}

// Holders returns the members holding records, sorted.
func (p *Partition) Holders() []string {
	var out []string
	for _, r := range p.recs {
		if r.State == StateAcquired && !slices.Contains(out, r.Member) {
			out = append(out, r.Member)
		}
	}
	slices.Sort(out)
	return out
}
