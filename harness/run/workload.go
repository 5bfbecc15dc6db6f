package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/harness/history"
)

// ledger keeps what quiesce waits for: the records producers had
// acknowledged and which of them some member consumed. The history holds the
// same facts; the ledger only saves reading it back during the run.
type ledger struct {
	mu       sync.Mutex
	acked    map[history.TP]map[int64]bool
	consumed map[history.TP]map[int64]bool
	missing  int // acknowledged, not yet consumed
}

func newLedger() *ledger {
	return &ledger{acked: map[history.TP]map[int64]bool{}, consumed: map[history.TP]map[int64]bool{}}
}

func (l *ledger) ack(tp history.TP, off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if mark(l.acked, tp, off) && !l.consumed[tp][off] {
		l.missing++
	}
}

func (l *ledger) consume(tp history.TP, off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if mark(l.consumed, tp, off) && l.acked[tp][off] {
		l.missing--
	}
}

// mark sets offset off of tp in set, and says whether it was not set before.
func mark(set map[history.TP]map[int64]bool, tp history.TP, off int64) bool {
	if set[tp] == nil {
		set[tp] = map[int64]bool{}
	}
	if set[tp][off] {
		return false
	}
	set[tp][off] = true
	return true
}

// Missing is the number of acknowledged records not consumed yet.
func (l *ledger) Missing() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.missing
}

// Acked is the number of acknowledged records.
func (l *ledger) Acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.acked {
		n += len(m)
	}
	return n
}

// recordValue is what a workload record carries: its sequence number, unique
// per topic for the run, so a consumed record is matched to its send even
// when the send's offset is unknown.
func recordValue(seq int64) []byte { return []byte("seq=" + strconv.FormatInt(seq, 10)) }

func parseSeq(v []byte) int64 {
	s, ok := strings.CutPrefix(string(v), "seq=")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// producer writes sequence-numbered records round-robin to every partition,
// one synchronous send at a time (a process has one open call), acks=all and
// idempotent, and records each send as an FProduce call.
type producer struct {
	plan   ProducerPlan
	cl     *kgo.Client
	rec    *history.Recorder
	led    *ledger
	topics []history.TopicPlan
	limit  int // records to write at most, 0 for no limit
	seq    map[string]int64
}

func newProducer(p ProducerPlan, opts []kgo.Opt, rec *history.Recorder, led *ledger, topics []history.TopicPlan, limit int) (*producer, error) {
	o := append([]kgo.Opt(nil), opts...)
	o = append(o,
		kgo.ClientID("groupquake-"+p.Name),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotence is kgo's default and needs acks=all
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	)
	cl, err := kgo.NewClient(o...)
	if err != nil {
		return nil, fmt.Errorf("producer %s: %w", p.Name, err)
	}
	return &producer{plan: p, cl: cl, rec: rec, led: led, topics: topics, limit: limit, seq: map[string]int64{}}, nil
}

// run produces until ctx (the workload phase) ends or the limit is
// reached; abort (the run's context) ends a send in flight at once.
func (p *producer) run(ctx, abort context.Context) error {
	var parts []history.TP
	for _, t := range p.topics {
		for i := int32(0); i < t.Partitions; i++ {
			if len(p.plan.Partitions) == 0 || slices.Contains(p.plan.Partitions, i) {
				parts = append(parts, history.TP{Topic: t.Name, Partition: i})
			}
		}
	}
	if len(parts) == 0 {
		return fmt.Errorf("producer %s: none of its partitions %v is a partition of the workload topics", p.plan.Name, p.plan.Partitions)
	}
	tick := time.NewTicker(time.Second / time.Duration(max(p.plan.Rate, 1)))
	defer tick.Stop()
	sent := 0
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if p.limit > 0 && sent >= p.limit {
			return nil
		}
		tp := parts[i%len(parts)]
		seq := p.seq[tp.Topic]
		p.seq[tp.Topic]++
		sent++
		if err := p.send(ctx, abort, tp, seq); err != nil {
			if errors.Is(err, errSendAbandoned) {
				return nil
			}
			return err
		}
	}
}

// sendGrace is how long a send in flight when the workload phase ends may
// still take to get its answer.
const sendGrace = 15 * time.Second

// errSendAbandoned ends a producer whose send was given up: the run was
// interrupted, or the workload ended sendGrace before the send had its
// answer (a broker stopped by a fault the heal has not restarted yet).
var errSendAbandoned = errors.New("send abandoned")

func (p *producer) send(ctx, abort context.Context, tp history.TP, seq int64) error {
	v := history.Produce{Topic: tp.Topic, Partition: tp.Partition, Seq: seq, Offset: -1}
	if _, err := p.rec.Invoke(p.plan.Name, history.FProduce, v, ""); err != nil {
		return err
	}
	// The send outlives the phase's context by sendGrace, so a record in
	// flight when the workload ends gets its answer instead of an unknown
	// outcome. kgo does not give up a batch it has written and had no answer
	// for (an idempotent producer keeps it until it knows), whatever the
	// context says, so the wait for the answer is bounded here: by abort at
	// once, by the workload's end plus sendGrace; the client is closed at
	// teardown, which fails what it still holds.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sendGrace)
	defer cancel()
	type result struct {
		r   *kgo.Record
		err error
	}
	done := make(chan result, 1)
	p.cl.Produce(sctx, &kgo.Record{Topic: tp.Topic, Partition: tp.Partition, Value: recordValue(seq)}, func(r *kgo.Record, err error) {
		done <- result{r, err}
	})
	var res result
	var grace <-chan time.Time
	phaseEnd := ctx.Done()
wait:
	for {
		select {
		case res = <-done:
			break wait
		case <-phaseEnd:
			phaseEnd = nil
			t := time.NewTimer(sendGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			v.Error = fmt.Sprintf("no answer within %s of the workload's end", sendGrace)
			_, rerr := p.rec.Info(p.plan.Name, history.FProduce, v, "send given up: the record may still be written")
			return errors.Join(rerr, errSendAbandoned)
		case <-abort.Done():
			v.Error = "the run was interrupted before the answer came"
			if cause := context.Cause(abort); cause != nil {
				v.Error += " (" + cause.Error() + ")"
			}
			_, rerr := p.rec.Info(p.plan.Name, history.FProduce, v, "send given up: the record may still be written")
			return errors.Join(rerr, errSendAbandoned)
		}
	}
	r, err := res.r, res.err
	if err != nil {
		// Any failure after the send started may have written the record
		// (idempotent retries, a timeout after the broker appended it): unknown.
		var ke *kerr.Error
		v.Error = err.Error()
		if errors.As(err, &ke) {
			v.Error = ke.Message
		}
		_, rerr := p.rec.Info(p.plan.Name, history.FProduce, v, "send failed: "+err.Error())
		return rerr
	}
	v.Offset, v.Acked = r.Offset, true
	if _, err := p.rec.OK(p.plan.Name, v, ""); err != nil {
		return err
	}
	p.led.ack(tp, r.Offset)
	return nil
}

func (p *producer) close() { p.cl.Close() }

// driver runs one member: it polls, records every record it hands to the
// application as FConsume, and commits what it consumed every CommitEvery,
// only for partitions the member still owns (the member's Poll holds
// rebalances back until the next Poll, see clients/kgoref).
type driver struct {
	plan MemberPlan
	m    clients.Member
	h    *HookRecorder
	rec  *history.Recorder
	led  *ledger
	now  func() time.Time

	// stalled stops polling and committing (a member-stall or
	// member-freeze fault): the member's own heartbeats go on.
	stalled atomic.Bool
	// stopped: the member's Poll said it stopped for good
	// (clients.ErrStopped); recorded once as FStopped, then onStop (its
	// supervisor) is told.
	stopped atomic.Bool
	onStop  func(error) error

	mu      sync.Mutex
	hold    bool                       // stop committing (final observation ahead)
	flushed chan struct{}              // closed after a commit requested by flush
	flush   bool                       // commit at the next turn, whatever CommitEvery says
	pending map[string]map[int32]int64 // next offset to commit per partition, not yet committed
	epoch   int32                      // epoch of the last records returned
}

func newDriver(p MemberPlan, m clients.Member, h *HookRecorder, rec *history.Recorder, led *ledger, now func() time.Time) *driver {
	d := &driver{plan: p, m: m, h: h, rec: rec, led: led, now: now, pending: map[string]map[int32]int64{}}
	h.OnGiveUp(d.forget)
	return d
}

// forget drops what was consumed of partitions the member gave up (revoked
// or lost): that position belongs to an ownership that ended. Were the
// member given a partition back before the next commit, committing it
// would write an offset from before the group moved on (behind what the
// owner in between committed), as a KafkaConsumer never does: its
// positions start again from the committed offset on every assignment.
func (d *driver) forget(ps clients.Partitions) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for t, parts := range ps {
		for _, p := range parts {
			delete(d.pending[t], p)
		}
	}
}

// run drives the member until ctx ends.
func (d *driver) run(ctx context.Context) error {
	defer d.abandonFlush()
	last := d.now()
	lastErr, repeats := "", 0
	for ctx.Err() == nil {
		if d.stalled.Load() {
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		recs, err := d.m.Poll(pctx)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, clients.ErrStopped) && !d.stopped.Load() {
			d.stopped.Store(true)
			v := history.Membership{Member: d.plan.Name, Protocol: d.plan.Protocol, Epoch: -1, Error: err.Error()}
			if _, rerr := d.rec.Info(d.plan.Name, history.FStopped, v, "the member stopped for good: its Poll says so (a KafkaConsumer throws from poll and must be closed)"); rerr != nil {
				return rerr
			}
			if d.onStop != nil {
				if rerr := d.onStop(err); rerr != nil {
					return rerr
				}
			}
		}
		if err != nil && ctx.Err() == nil {
			// A member in a fatal state returns the same error at once on
			// every poll: record it once (and how often it repeated when it
			// changes), and wait a poll's time before asking again, so a
			// stuck member neither spins nor floods the history.
			if msg := err.Error(); msg != lastErr {
				v := map[string]any{"member": d.plan.Name, "error": msg}
				if repeats > 0 {
					v["previous_error_repeats"] = repeats
				}
				if _, rerr := d.rec.Info(d.plan.Name, "error", v, "poll returned an error; the member keeps polling"); rerr != nil {
					return rerr
				}
				lastErr, repeats = msg, 0
			} else {
				repeats++
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		} else if err == nil {
			lastErr = ""
		}
		for _, r := range recs {
			epoch := r.Generation
			if d.plan.Protocol == history.ProtocolConsumer {
				epoch = r.MemberEpoch
			}
			c := history.Consume{Member: d.plan.Name, Protocol: d.plan.Protocol, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Seq: parseSeq(r.Value), Epoch: epoch, Poll: r.Poll}
			if _, err := d.rec.Consumed(d.plan.Name, c); err != nil {
				return err
			}
			d.led.consume(c.TP(), r.Offset)
			d.mu.Lock()
			if d.pending[r.Topic] == nil {
				d.pending[r.Topic] = map[int32]int64{}
			}
			d.pending[r.Topic][r.Partition] = r.Offset + 1
			d.epoch = epoch
			d.mu.Unlock()
		}
		d.mu.Lock()
		due := !d.hold && (d.flush || d.now().Sub(last) >= d.plan.CommitEvery)
		flushing := d.flush
		d.mu.Unlock()
		if due {
			last = d.now()
			if err := d.commit(ctx); err != nil {
				return err
			}
		}
		if flushing {
			d.mu.Lock()
			if d.flush { // not released meanwhile (a checkpoint that gave up)
				d.flush = false
				d.hold = true
				close(d.flushed)
			}
			d.mu.Unlock()
		}
	}
	return nil
}

// ownCommitter is a member whose client commits on its own (a process
// member whose ready says commits "own", a framework's listener container):
// the driver asks it for no commit, and its commits are recorded from the
// wire as the member's own.
type ownCommitter interface{ CommitsOnItsOwn() bool }

// commit sends what was consumed of the partitions the member owns.
func (d *driver) commit(ctx context.Context) error {
	if o, ok := d.m.(ownCommitter); ok && o.CommitsOnItsOwn() {
		d.mu.Lock()
		clear(d.pending)
		d.mu.Unlock()
		return nil
	}
	owned := d.m.Owned()
	d.mu.Lock()
	offs := map[string]map[int32]int64{}
	for t, ps := range d.pending {
		for p, o := range ps {
			if !ownedHas(owned, t, p) {
				delete(ps, p) // given up: the new owner commits from where it starts
				continue
			}
			if offs[t] == nil {
				offs[t] = map[int32]int64{}
			}
			offs[t][p] = o
		}
	}
	epoch := d.epoch
	d.mu.Unlock()
	if len(offs) == 0 {
		return nil
	}
	c := history.Commit{Member: d.plan.Name, Protocol: d.plan.Protocol, Epoch: epoch, Offsets: offsetList(offs)}
	if err := d.h.CommitInvoke(c, "commit what was consumed (epoch on the invoke is the last poll's; the outcome carries the one sent)"); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	perrs, err := d.m.Commit(cctx, offs)
	cancel()
	if rerr := d.h.CommitReturned(c, perrs, err); rerr != nil {
		return rerr
	}
	if err == nil {
		d.mu.Lock()
		for t, ps := range offs {
			for p, o := range ps {
				if perrs[t][p] == "" && d.pending[t][p] == o {
					delete(d.pending[t], p)
				}
			}
		}
		d.mu.Unlock()
	}
	return nil
}

func ownedHas(owned clients.Partitions, t string, p int32) bool {
	for _, q := range owned[t] {
		if q == p {
			return true
		}
	}
	return false
}

// abandonFlush lets whoever waits for a commit asked of the driver by
// flushAndHold go on once the driver has stopped (crashed, stopped for
// good and taken down by its supervisor): that commit will not come.
func (d *driver) abandonFlush() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.flush {
		d.flush = false
		d.hold = true
		close(d.flushed)
	}
}

// release lets a driver held by flushAndHold commit again (a checkpoint
// has been read).
func (d *driver) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hold, d.flush, d.flushed = false, false, nil
}

// flushAndHold makes the driver commit what it consumed once more and then
// stop committing, so that the final observation reads offsets no commit is
// still changing. It returns a channel closed once that commit is done.
func (d *driver) flushAndHold() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.flushed == nil {
		d.flushed = make(chan struct{})
		d.flush = true
	}
	return d.flushed
}
