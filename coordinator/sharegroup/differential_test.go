package sharegroup

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/history"
)

// The differential check of the share-partition model against real runs:
// a run's history has every acquisition the brokers answered (ShareFetch)
// and every acknowledgement with its answer; observations.json has the
// records of __share_group_state the brokers wrote, read after every
// member closed. replayRun feeds the acquisitions and acknowledgements to
// one model leader per partition and compares what the model's share
// coordinator holds at the end with the replay of the brokers' records.
//
// Order: a broker handles a call's acknowledgements when it gets the call
// (a ShareFetch's first, before it waits for records) and answers an
// acquisition once it made it, so acknowledgements are applied at the
// call's sending and acquisitions at its answer.
//
// The history cannot tell everything, so the driver lets it decide what
// the clock and the lost answers did, and counts every such step:
//   - the model's locks lapse once the brokers' surely have: the record
//     lock after the answer, plus lockSlackMs;
//   - an acquisition that needs what another call does (an acknowledgement
//     of its offsets by their holder, or the acquisition of the new records
//     before them) has that call applied first when it was sent before the
//     acquisition was answered: the broker may have handled it first;
//   - otherwise, an acquisition of offsets the model still has acquired
//     means their lock lapsed or their holder's session ended first: they
//     are lapsed then; new records before it, or a delivery count above the
//     model's next, mean deliveries whose answers never came: the model
//     acquires them for an unknown member, held until their lock lapses;
//   - an acknowledgement the broker refused INVALID_RECORD_STATE of offsets
//     the model has acquired by that member means their lock had lapsed:
//     they are lapsed, and the model must then refuse it too;
//   - an acknowledgement answered with an error that may have landed
//     (version.ShareAckMayHaveApplied) or never answered is applied only
//     where it shows it landed (see landed); otherwise not;
//   - a partition whose acquisitions come from another broker has a new
//     leader, and so has one whose leader answered an acknowledgement with
//     an error that drops it (version.ShareErrorDropsPartition; a fetch's
//     error does not always: ShareFetchUtils.processFetchResponse passes a
//     read's NOT_LEADER_OR_FOLLOWER on and keeps the share-partition, as a
//     4.4.0 run showed): the model loads a new leader from what its share
//     coordinator holds (no locks, the persisted delivery counts);
//   - once the history ends every member's records are released (the
//     members closed), and offsets the brokers settled by deliveries
//     through calls never answered are settled (deliveredUnanswered).
//
// A partition agrees when the replayed start offset and every offset's
// state and delivery count are the brokers'; compareStates says when only
// the persisted start offset differs, by what the history cannot date.

// lockSlackMs is how much longer the model's locks last than the brokers'
// (see replayRun).
const lockSlackMs = 2000

// runPlan is what the driver reads of plan.json.
type runPlan struct {
	Seed    int64 `json:"seed"`
	Options struct {
		Kafka    string `json:"kafka"`
		Scenario string `json:"scenario"`
	} `json:"options"`
	Group  string `json:"group"`
	Topics []struct {
		Name       string `json:"name"`
		Partitions int32  `json:"partitions"`
	} `json:"topics"`
	Share struct {
		DeliveryCountLimit int16 `json:"delivery_count_limit"`
		RecordLockMs       int32 `json:"record_lock_ms"`
	} `json:"share"`
}

// partitionOutcome is the verdict on one partition of a run.
type partitionOutcome struct {
	TP    history.TP
	Agree bool
	// Lag: every offset agrees, and only the persisted start offsets differ,
	// by what the history cannot date (see compareStates).
	Lag bool
	// Steps counts what the driver had the history decide (above).
	Steps map[string]int
	// Diffs describe the disagreements; Unknown the offsets an
	// acknowledgement of unknown outcome covered.
	Diffs   []string
	Unknown map[int64]string
	// Model and Observed are the final states compared.
	Model, Observed *PartitionState
}

type drivenPartition struct {
	p *Partition
	// dropped: the leader answered an error that means it dropped the
	// share-partition (version.ShareErrorDropsPartition); whoever serves
	// it next loads it from the persisted state.
	dropped bool
	// touched is when each offset was last acquired or acknowledged.
	touched  map[int64]int64
	observed PartitionState
	node     int32
	key      StateKey
	epoch    int32
	out      *partitionOutcome
	unknown  map[int64]string
}

const (
	stepLapse         = "lapsed (lock or session end not in the history)"
	stepRefusedLapse  = "lapsed (shown by an INVALID_RECORD_STATE answer)"
	stepUnseen        = "deliveries whose answer never came"
	stepUnknownAck    = "acknowledgements of unknown outcome (not applied)"
	stepUnknownLanded = "acknowledgements of unknown outcome applied (the brokers' final state has them settled, never delivered again)"
	stepLeader        = "leader changes"
	stepHoisted       = "calls applied before an earlier answer (sent before it)"
	stepUnseenEnd     = "deliveries by calls never answered, shown by the final state"
	stepAcked         = "acknowledgements applied"
	stepAcquired      = "acquisitions"
	stepRefused       = "refusals agreed"
)

// replayRun drives the model through the run in dir.
func replayRun(dir string) ([]*partitionOutcome, runPlan, error) {
	plan, err := readRun(dir, "plan.json", func(b []byte) (runPlan, error) {
		var p runPlan
		err := json.Unmarshal(b, &p)
		return p, err
	})
	if err != nil {
		return nil, plan, err
	}
	v, err := version.Parse(plan.Options.Kafka)
	if err != nil {
		return nil, plan, err
	}
	obs, err := readRun(dir, "observations.json", func(b []byte) (*history.Observations, error) {
		return history.ReadObservations(bytes.NewReader(b))
	})
	if err != nil {
		return nil, plan, err
	}
	if obs.ShareRecovery == nil || !obs.ShareRecovery.HasRecords {
		return nil, plan, fmt.Errorf("observations.json has no share-group state records")
	}
	rec := obs.ShareRecovery
	hist, err := readRun(dir, "history.jsonl", func(b []byte) (history.Loaded, error) {
		return history.Read(bytes.NewReader(b))
	})
	if err != nil {
		return nil, plan, err
	}
	// The brokers' state.
	observed := States{}
	for _, r := range rec.StateRecords {
		sr, err := DecodeStateRecord(r.Key, r.Value)
		if err != nil {
			return nil, plan, fmt.Errorf("__share_group_state-%d offset %d: %v", r.Partition, r.Offset, err)
		}
		if sr.Key.GroupID == plan.Group {
			observed.Replay(sr)
		}
	}
	ids := map[string][16]byte{}
	for name, s := range rec.TopicIDs {
		raw, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(raw) != 16 {
			return nil, plan, fmt.Errorf("topic id %q of %s is not a Uuid", s, name)
		}
		ids[name] = [16]byte(raw)
	}

	pc, cc := ConfigsFor(v.Profile())
	pc.DeliveryCountLimit = plan.Share.DeliveryCountLimit
	// A lock lapses on the broker at most RecordLockMs after the answer
	// that handed the record out (the broker acquired it before answering);
	// the model's lock lasts that plus lockSlackMs from the model's clock,
	// which is the answer's time for an acquisition and the sending's for
	// an acknowledgement, so it never lapses before the broker's. Earlier
	// lapses the history shows (above).
	pc.LockMs = int64(plan.Share.RecordLockMs) + lockSlackMs
	pc.MaxInFlight = 1 << 30
	var now int64
	coord := NewCoordinator(cc, func() int64 { return now })
	parts := map[history.TP]*drivenPartition{}
	for _, t := range plan.Topics {
		for i := int32(0); i < t.Partitions; i++ {
			tp := history.TP{Topic: t.Name, Partition: i}
			k := StateKey{GroupID: plan.Group, TopicID: ids[t.Name], Partition: i}
			coord.Initialize(k, 0)
			p, err := NewPartition(pc, coord, k, 0, 0, 0)
			if err != nil {
				return nil, plan, err
			}
			var seen PartitionState
			if o := observed[k]; o != nil {
				seen = *o
			}
			parts[tp] = &drivenPartition{p: p, key: k, unknown: map[int64]string{}, observed: seen, touched: map[int64]int64{},
				out: &partitionOutcome{TP: tp, Steps: map[string]int{}}}
		}
	}
	// lead makes node the leader of dp's partition.
	lead := func(dp *drivenPartition, node int32) error {
		if (dp.node == node && !dp.dropped) || node == 0 {
			return nil
		}
		if dp.node != 0 {
			dp.dropped = false
			dp.epoch++
			p, err := NewPartition(pc, coord, dp.key, dp.epoch, 0, dp.p.logEnd)
			if err != nil {
				return err
			}
			dp.p = p
			dp.out.Steps[stepLeader]++
		}
		dp.node = node
		return nil
	}
	// The calls, in the order their answers came, each with when it was
	// sent.
	var ops []*call
	sent := map[string]int64{}
	members := map[string]bool{}
	for _, e := range hist.Events {
		if e.F != history.FShareFetch && e.F != history.FShareAck {
			continue
		}
		if e.Type == history.Invoke {
			sent[e.Process] = int64(e.Time)
			continue
		}
		f, ok := e.Value.(history.ShareFetch)
		if !ok {
			return nil, plan, fmt.Errorf("event %d: %s payload %T", e.Index, e.F, e.Value)
		}
		c := &call{index: e.Index, typ: e.Type, sent: sent[e.Process], answered: int64(e.Time), process: e.Process, f: f,
			acks: map[history.TP][]Ack{}, acksDone: map[history.TP]bool{}, acquiredDone: make([]bool, len(f.Acquired))}
		for _, a := range f.Acks {
			c.acks[a.TP()] = append(c.acks[a.TP()], Ack{First: a.First, Last: a.Last, Type: ackType(a.Type)})
		}
		members[f.MemberID] = true
		ops = append(ops, c)
	}
	d := &driver{ops: ops, parts: parts, lead: lead, now: &now}
	// The broker handles a call's acknowledgements when it gets the call
	// (a ShareFetch's come first, then it waits for records) and answers
	// an acquisition once it made it: acknowledgements are applied at the
	// call's sending, acquisitions at its answer.
	type action struct {
		at      int64
		i, k    int // k: acquisition k, or -1 for the acknowledgements
		ordinal int
	}
	var acts []action
	for i, c := range ops {
		acts = append(acts, action{at: c.sent, i: i, k: -1, ordinal: len(acts)})
		if c.typ == history.OK && len(c.f.AckErrors) > 0 {
			acts = append(acts, action{at: c.answered, i: i, k: -2, ordinal: len(acts)})
		}
		if c.typ == history.OK {
			for k := range c.f.Acquired {
				acts = append(acts, action{at: c.answered, i: i, k: k, ordinal: len(acts)})
			}
		}
	}
	sort.SliceStable(acts, func(x, y int) bool { return acts[x].at < acts[y].at })
	var traceTP history.TP
	var traceOff int64 = -1
	var traced string
	if t := os.Getenv("GQ_TRACE"); t != "" {
		fmt.Sscanf(t, "%d:%d", &traceTP.Partition, &traceOff)
		traceTP.Topic = plan.Topics[0].Name
	}
	for _, a := range acts {
		if traceOff >= 0 {
			dp := parts[traceTP]
			r, in := dp.p.State(traceOff)
			now := fmt.Sprintf("start %d in %v %+v", dp.p.Start(), in, r)
			if now != traced {
				fmt.Printf("before event %d (k %d): %s\n", ops[a.i].index, a.k, now)
				traced = now
			}
		}
		now = max(now, a.at/1e6)
		c := ops[a.i]
		if a.k == -2 {
			for _, pe := range c.f.AckErrors {
				if dp := parts[history.TP{Topic: pe.Topic, Partition: pe.Partition}]; dp != nil && dp.node == c.f.Node && version.ShareErrorDropsPartition(pe.Error) {
					dp.dropped = true
				}
			}
			continue
		}
		if a.k >= 0 {
			if err := d.acquire(a.i, a.k, 0); err != nil {
				return nil, plan, err
			}
			continue
		}
		for _, tp := range sortedTPs(c.acks) {
			if err := d.acknowledge(a.i, tp); err != nil {
				return nil, plan, err
			}
		}
		if c.typ == history.OK && c.f.SessionEpoch == -1 {
			// A closed share session releases the member's records on that
			// broker.
			for _, dp := range parts {
				if dp.node == c.f.Node && !dp.dropped {
					dp.p.ReleaseAll(c.f.MemberID)
				}
			}
		}
	}
	// The members closed: their records were released.
	var all []string
	for m := range members {
		all = append(all, m)
	}
	sort.Strings(all)
	all = append(all, "?")
	var outs []*partitionOutcome
	for tp, dp := range parts {
		for _, m := range all {
			dp.p.ReleaseAll(m)
		}
		d.deliveredUnanswered(tp)
		dp.out.Model = coord.States[dp.key]
		dp.out.Observed = observed[dp.key]
		dp.out.Unknown = dp.unknown
		compareStates(dp.out)
		_ = tp
		outs = append(outs, dp.out)
	}
	sort.Slice(outs, func(i, j int) bool { return outs[i].TP.Partition < outs[j].TP.Partition })
	return outs, plan, nil
}

// readRun reads name in the run directory dir (or name.gz) and parses it;
// a parse error names the file.
func readRun[T any](dir, name string, parse func([]byte) (T, error)) (T, error) {
	b, err := readRunFile(dir, name)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(b)
	if err != nil {
		return v, fmt.Errorf("%s: %v", name, err)
	}
	return v, nil
}

// readRunFile reads name in the run directory dir, or name.gz.
func readRunFile(dir, name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	f, err := os.Open(filepath.Join(dir, name+".gz"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s.gz: %v", name, err)
	}
	return io.ReadAll(z)
}

func ackType(s string) int8 {
	switch s {
	case history.AckAccept:
		return version.AckAccept
	case history.AckRelease:
		return version.AckRelease
	case history.AckReject:
		return version.AckReject
	case history.AckRenew:
		return version.AckRenew
	}
	return -1
}

// compareStates sets o.Agree and o.Diffs from the final states.
func compareStates(o *partitionOutcome) {
	m, b := o.Model, o.Observed
	if m == nil || b == nil {
		o.Diffs = append(o.Diffs, fmt.Sprintf("state missing: model %v, brokers %v", m != nil, b != nil))
		return
	}
	before := len(o.Diffs)
	from := min(m.StartOffset, b.StartOffset)
	to := max(m.StartOffset, b.StartOffset)
	for _, s := range []*PartitionState{m, b} {
		if n := len(s.Batches); n > 0 {
			to = max(to, s.Batches[n-1].LastOffset)
		}
	}
	bad := 0
	for off := from; off <= to; off++ {
		x, xbelow, xok := m.StateOf(off)
		y, ybelow, yok := b.StateOf(off)
		if xbelow || ybelow {
			// Below a start offset: settled. Settled on both sides agrees.
			if (xbelow || (xok && terminal(x.DeliveryState))) && (ybelow || (yok && terminal(y.DeliveryState))) {
				continue
			}
		}
		if xbelow != ybelow || xok != yok || x.DeliveryState != y.DeliveryState || x.DeliveryCount != y.DeliveryCount {
			if bad < 5 {
				o.Diffs = append(o.Diffs, fmt.Sprintf("offset %d: model %s, brokers %s%s", off, batchState(x, xbelow, xok), batchState(y, ybelow, yok), unknownNote(o.Unknown, off)))
			}
			bad++
		}
	}
	if bad > 5 {
		o.Diffs = append(o.Diffs, fmt.Sprintf("... %d offsets differ in all", bad))
	}
	if m.StartOffset != b.StartOffset {
		// Every offset agrees: the persisted start offsets differ by
		// offsets settled on both sides. A write carries the leader's
		// start offset when it is sent, and the history does not say which
		// writes were in flight together or retried (a write sent before
		// an earlier one completed carries the older start offset), so a
		// persisted start offset behind the model's is a lag the history
		// cannot decide. The model's is behind when the driver placed at
		// the end what the history does not date (deliveries by calls never
		// answered).
		o.Lag = len(o.Diffs) == 0 && (m.StartOffset > b.StartOffset || o.Steps[stepUnseenEnd] > 0)
		o.Diffs = append(o.Diffs[:before], append([]string{fmt.Sprintf("start offset: model %d, brokers %d", m.StartOffset, b.StartOffset)}, o.Diffs[before:]...)...)
	}
	o.Agree = len(o.Diffs) == 0
}

func batchState(b StateBatch, below, ok bool) string {
	if below {
		return "below the start offset"
	}
	if !ok {
		return "none"
	}
	return fmt.Sprintf("%s at %d", StateName(b.DeliveryState), b.DeliveryCount)
}

func unknownNote(u map[int64]string, off int64) string {
	if s, ok := u[off]; ok {
		return " (acknowledged with an unknown outcome at " + s + ")"
	}
	return ""
}

// TestShareRunsDifferential replays every run directory under
// $GQ_SHARE_RUNS (share runs recorded on real brokers, e.g. a share hunt's
// output) through the model and reports how many partitions agree. It is
// skipped without the variable: the runs are not in the repository.
func TestShareRunsDifferential(t *testing.T) {
	root := os.Getenv("GQ_SHARE_RUNS")
	if root == "" {
		t.Skip("GQ_SHARE_RUNS names no directory of share runs")
	}
	var dirs []string
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && (d.Name() == "history.jsonl" || d.Name() == "history.jsonl.gz") {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if len(dirs) == 0 {
		t.Fatalf("no history.jsonl under %s", root)
	}
	agree, lag, disagree := 0, 0, 0
	total := map[string]int{}
	for _, dir := range dirs {
		outs, plan, err := replayRun(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		for _, o := range outs {
			var steps []string
			for k, n := range o.Steps {
				steps = append(steps, fmt.Sprintf("%s %d", k, n))
			}
			sort.Strings(steps)
			for k, n := range o.Steps {
				total[k] += n
			}
			verdict := "AGREE"
			switch {
			case o.Agree:
				agree++
			case o.Lag:
				lag++
				verdict = "AGREE-BUT-START-LAG"
			default:
				disagree++
				verdict = "DISAGREE"
			}
			line := fmt.Sprintf("%s %s %s seed %d partition %d: %s; %s", verdict, plan.Options.Kafka, plan.Options.Scenario, plan.Seed, o.TP.Partition, strings.Join(steps, ", "), strings.Join(o.Diffs, "; "))
			if verdict == "DISAGREE" {
				t.Error(line)
			} else {
				t.Log(line)
			}
		}
	}
	var all []string
	for k, n := range total {
		all = append(all, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(all)
	t.Logf("steps in all: %s", strings.Join(all, "; "))
	t.Logf("%d runs, %d partitions: %d agree, %d agree on every offset but not on the persisted start offset, %d disagree", len(dirs), agree+lag+disagree, agree, lag, disagree)
}

// call is one answered (or unanswered) ShareFetch or ShareAcknowledge.
type call struct {
	index          int64
	typ            history.Type
	sent, answered int64 // ns since the run started
	process        string
	f              history.ShareFetch
	acks           map[history.TP][]Ack
	acksDone       map[history.TP]bool
	acquiredDone   []bool
}

// driver applies the calls to the partitions' leaders.
type driver struct {
	ops   []*call
	parts map[history.TP]*drivenPartition
	lead  func(*drivenPartition, int32) error
	now   *int64
}

// acknowledge applies the acknowledgements of call i on tp once.
func (d *driver) acknowledge(i int, tp history.TP) error {
	c := d.ops[i]
	if c.acksDone[tp] {
		return nil
	}
	c.acksDone[tp] = true
	dp := d.parts[tp]
	if dp == nil {
		return nil
	}
	as, member := c.acks[tp], c.f.MemberID
	for _, a := range as {
		for o := a.First; o <= a.Last; o++ {
			dp.touched[o] = max(dp.touched[o], c.sent)
		}
	}
	answer := c.f.AckError(tp)
	switch {
	case c.typ != history.OK || c.f.Error != "" || version.ShareAckMayHaveApplied(answer):
		if d.landed(i, tp, as) {
			if err := d.lead(dp, c.f.Node); err != nil {
				return err
			}
			if err := dp.p.Acknowledge(member, as); err == nil {
				dp.out.Steps[stepUnknownLanded]++
				return nil
			}
		}
		for _, a := range as {
			for o := a.First; o <= a.Last; o++ {
				dp.unknown[o] = fmt.Sprintf("event %d (%s %s%s)", c.index, c.typ, answer, c.f.Error)
			}
		}
		dp.out.Steps[stepUnknownAck]++
	case answer == "":
		if err := d.lead(dp, c.f.Node); err != nil {
			return err
		}
		if err := dp.p.Acknowledge(member, as); err != nil {
			dp.out.Diffs = append(dp.out.Diffs, fmt.Sprintf("event %d: the broker applied %s's acknowledgements %v, the model refused: %v", c.index, member, as, err))
			return nil
		}
		dp.out.Steps[stepAcked]++
	case answer == CodeInvalidRecordState || answer == CodeInvalidRequest:
		for _, a := range as {
			for o := max(a.First, dp.p.Start()); o <= min(a.Last, dp.p.End()); o++ {
				if r, _ := dp.p.State(o); r.State == StateAcquired && r.Member == member {
					dp.p.Lapse(o, o)
					dp.out.Steps[stepRefusedLapse]++
				}
			}
		}
		if err := dp.p.Acknowledge(member, as); err == nil {
			dp.out.Diffs = append(dp.out.Diffs, fmt.Sprintf("event %d: the broker refused %s's acknowledgements %v (%s), the model applied them", c.index, member, as, answer))
		} else {
			dp.out.Steps[stepRefused]++
		}
	}
	return nil
}

// deliveredUnanswered settles, at the end, the offsets the model has
// available that the brokers' final state has settled, where enough
// ShareFetch calls to the partition's leader went unanswered after the
// offset's last answered call to have delivered it up to the delivery
// count limit (each delivery lapsed, the last archived it): what the
// history cannot show.
func (d *driver) deliveredUnanswered(tp history.TP) {
	dp := d.parts[tp]
	p := dp.p
	for o := p.Start(); o <= p.End(); o++ {
		r, _ := p.State(o)
		b, below, ok := dp.observed.StateOf(o)
		if r.State != StateAvailable || !(below || (ok && terminal(b.DeliveryState))) {
			continue
		}
		unanswered := 0
		for _, c := range d.ops {
			if c.typ == history.OK || c.sent <= dp.touched[o] || c.f.Node != dp.node || !slices.Contains(c.f.Fetch, tp) {
				continue
			}
			unanswered++
		}
		need := int(p.cfg.DeliveryCountLimit - r.DeliveryCount)
		if unanswered < need {
			continue
		}
		for range need {
			p.AcquireRange("?", o, o)
			p.Lapse(o, o)
			dp.out.Steps[stepUnseenEnd]++
		}
	}
}

// landed reports whether acknowledgements as of call i on tp, whose
// outcome the history does not give, landed. A leader applies one call's
// acknowledgements of a partition all or none, so they landed when one of
// them shows it: it settles its offset (an accept, a reject, or a release
// of a record on its last delivery), the brokers' final state has the
// offset settled, and no later answer hands it out again (had the call not
// landed, the record's lock would have lapsed and the record been
// delivered again); and none contradicts it: no offset an accept or reject
// settles is handed out again.
func (d *driver) landed(i int, tp history.TP, as []Ack) bool {
	dp := d.parts[tp]
	again := func(o int64) bool {
		for j := range d.ops {
			if d.ops[j].typ != history.OK || d.ops[j].answered <= d.ops[i].sent {
				continue
			}
			for _, q := range d.ops[j].f.Acquired {
				if q.TP() == tp && q.First <= o && o <= q.Last {
					return true
				}
			}
		}
		return false
	}
	shown := false
	for _, a := range as {
		for o := a.First; o <= a.Last; o++ {
			r, _ := dp.p.State(o)
			final := a.Type == version.AckAccept || a.Type == version.AckReject
			settles := final || (a.Type == version.AckRelease && r.DeliveryCount >= dp.p.cfg.DeliveryCountLimit)
			if !settles {
				continue
			}
			delivered := again(o)
			if final && delivered {
				return false
			}
			b, below, ok := dp.observed.StateOf(o)
			if !delivered && (below || (ok && terminal(b.DeliveryState))) {
				shown = true
			}
		}
	}
	return shown
}

// hoist applies, ahead of their answers, the calls sent before call i was
// answered (so the broker may have handled them first) that acknowledge
// offset o of tp as its holder, or acquire it at delivery count want (0:
// any); it reports whether it applied one.
func (d *driver) hoist(i int, tp history.TP, o int64, holder string, want int16, depth int) (bool, error) {
	if depth > 8 {
		return false, nil
	}
	for j, c := range d.ops {
		// Sent before call i was answered; a process sends one call at a
		// time.
		if j == i || c.sent >= d.ops[i].answered || c.process == d.ops[i].process && c.sent > d.ops[i].sent {
			continue
		}
		if holder != "" && c.f.MemberID == holder && !c.acksDone[tp] {
			for _, a := range c.acks[tp] {
				if a.First <= o && o <= a.Last {
					return true, d.acknowledge(j, tp)
				}
			}
		}
		if holder == "" && c.typ == history.OK {
			for k, a := range c.f.Acquired {
				if !c.acquiredDone[k] && a.TP() == tp && a.First <= o && o <= a.Last && (want == 0 || a.DeliveryCount == want) {
					return true, d.acquire(j, k, depth+1)
				}
			}
		}
	}
	return false, nil
}

// acquire applies acquisition k of call i once: first what the broker must
// have done before it (calls sent before its answer, hoisted; then lapses
// and unseen deliveries), then the acquisition, checking its delivery
// counts.
func (d *driver) acquire(i, k, depth int) error {
	c := d.ops[i]
	if c.acquiredDone[k] {
		return nil
	}
	c.acquiredDone[k] = true
	a := c.f.Acquired[k]
	dp := d.parts[a.TP()]
	if dp == nil {
		return nil
	}
	if err := d.lead(dp, c.f.Node); err != nil {
		return err
	}
	tp, member := a.TP(), c.f.MemberID
	for o := max(a.First, dp.p.Start()); o <= a.Last; o++ {
		if o > a.First && o > dp.p.End()+1 {
			break // the rest are new records this call acquires
		}
		for tries := 0; tries < 256; tries++ {
			p := dp.p
			r, in := p.State(o)
			var (
				hoisted bool
				err     error
			)
			switch {
			case o > p.End()+1:
				// An earlier new record not acquired yet: another call's.
				hoisted, err = d.hoist(i, tp, p.End()+1, "", 1, depth)
			case in && r.State == StateAcquired:
				hoisted, err = d.hoist(i, tp, o, r.Member, 0, depth)
			case r.DeliveryCount < a.DeliveryCount-1 && (in || o == p.End()+1) && r.State == StateAvailable:
				hoisted, err = d.hoist(i, tp, o, "", r.DeliveryCount+1, depth)
			default:
				tries = 256
				continue
			}
			if err != nil {
				return err
			}
			if hoisted {
				dp.out.Steps[stepHoisted]++
				continue
			}
			// Nothing sent before the answer explains it: what the clock or a
			// lost answer did.
			switch {
			case o > p.End()+1:
				// Acquired by a call whose answer never came: held until its
				// lock lapses or the leader changes.
				gap := p.End() + 1
				if _, err := p.AcquireRange("?", gap, gap); err == nil {
					dp.out.Steps[stepUnseen]++
				}
			case in && r.State == StateAcquired:
				p.Lapse(o, o)
				dp.out.Steps[stepLapse]++
			default:
				if _, err := p.AcquireRange("?", o, o); err == nil {
					dp.out.Steps[stepUnseen]++
				}
			}
		}
	}
	for o := a.First; o <= a.Last; o++ {
		dp.touched[o] = c.answered
	}
	got, err := dp.p.AcquireRange(member, a.First, a.Last)
	if err != nil {
		dp.out.Diffs = append(dp.out.Diffs, fmt.Sprintf("event %d: the broker handed %s %d-%d at delivery count %d, the model could not: %v", c.index, member, a.First, a.Last, a.DeliveryCount, err))
		return nil
	}
	dp.out.Steps[stepAcquired]++
	for _, g := range got {
		if g.DeliveryCount != a.DeliveryCount {
			dp.out.Diffs = append(dp.out.Diffs, fmt.Sprintf("event %d: the broker handed %s %d-%d at delivery count %d, the model at %d (%d-%d)", c.index, member, a.First, a.Last, a.DeliveryCount, g.DeliveryCount, g.First, g.Last))
		}
	}
	return nil
}

func sortedTPs(m map[history.TP][]Ack) []history.TP {
	var out []history.TP
	for tp := range m {
		out = append(out, tp)
	}
	history.SortTPs(out)
	return out
}

// TestPinnedShareRunAgrees replays the trimmed share run of testdata (Kafka
// 4.4.0, seed 3622665567661517767): partition 1 agrees exactly; on
// partition 0 every offset agrees, and the brokers persisted start offset
// 310 where the model's writes end at 311: the accepts of 310 and 311 were
// sent 2 ms apart, and their writes both carried 310 (a write carries the
// start offset when it is sent, before the other completed).
func TestPinnedShareRunAgrees(t *testing.T) {
	outs, plan, err := replayRun("testdata/share-run-4.4.0")
	if err != nil {
		t.Fatal(err)
	}
	if plan.Options.Kafka != "4.4.0" || len(outs) != 2 {
		t.Fatalf("kafka %s, %d partitions; want 4.4.0, 2", plan.Options.Kafka, len(outs))
	}
	for _, o := range outs {
		switch {
		case o.TP.Partition == 0:
			if !o.Lag || o.Model.StartOffset != 311 || o.Observed.StartOffset != 310 {
				t.Errorf("partition 0: lag %v, start offsets model %d brokers %d, diffs %v; want a lag of 311 against 310 and nothing else", o.Lag, o.Model.StartOffset, o.Observed.StartOffset, o.Diffs)
			}
		case !o.Agree:
			t.Errorf("partition %d disagrees: %v", o.TP.Partition, o.Diffs)
		}
		if o.Steps[stepAcquired] == 0 || o.Steps[stepAcked] == 0 {
			t.Errorf("partition %d: steps %v, want acquisitions and acknowledgements", o.TP.Partition, o.Steps)
		}
	}
}
