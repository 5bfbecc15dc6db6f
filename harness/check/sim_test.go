package check

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// sim generates valid histories: a group of members on one topic, a producer, an observer and a
// nemesis that pauses one member long enough for its session to expire (the member becomes a
// zombie that still believes it owns its partitions, consumes from them and tries to commit, and
// is rejected). Every run ends with a heal, a rebalance, consumption of everything produced and a
// final commit, like a real run. All randomness comes from the seeded source.
type simConfig struct {
	seed       uint64
	protocol   string
	members    int
	partitions int32
	steps      int
}

type simMember struct {
	name, id string
	epoch    int32
	owned    map[int32]bool
	pos      map[int32]int64
	inGroup  bool // the coordinator's view
	zombie   bool // fenced by the coordinator without knowing it
}

type sim struct {
	t          testing.TB
	cfg        simConfig
	rng        *rand.Rand
	r          *history.Recorder
	now        time.Duration
	groupEpoch int32
	mem        []*simMember
	log        [][]int64 // per partition: seqs
	committed  []int64   // the coordinator's committed offsets, -1 for none
	seq        int64
	records    []history.Record
	checkpoint *history.Snapshot
	paused     *simMember
}

const simTopic = "t"

func newSim(t testing.TB, cfg simConfig) *sim {
	s := &sim{t: t, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 0x9e3779b97f4a7c15))}
	r, err := history.NewRecorder(io.Discard, func() time.Duration { return s.now }, history.Retain())
	if err != nil {
		t.Fatal(err)
	}
	s.r = r
	s.log = make([][]int64, cfg.partitions)
	s.committed = make([]int64, cfg.partitions)
	for i := range s.committed {
		s.committed[i] = -1
	}
	for i := 0; i < cfg.members; i++ {
		s.mem = append(s.mem, &simMember{name: fmt.Sprintf("m%d", i), id: fmt.Sprintf("id-m%d-0", i), owned: map[int32]bool{}, pos: map[int32]int64{}})
	}
	return s
}

func (s *sim) tick() { s.now += time.Duration(1+s.rng.IntN(20)) * time.Millisecond }

func (s *sim) rec(e history.Event, err error) history.Event {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
	return e
}

func (s *sim) info(proc, f string, v any, why string) {
	s.tick()
	s.rec(s.r.Info(proc, f, v, why))
}

func (s *sim) call(proc, f string, inv any, t history.Type, done any, why string) {
	s.tick()
	s.rec(s.r.Invoke(proc, f, inv, ""))
	s.tick()
	s.rec(s.r.Record(history.Event{Type: t, Process: proc, F: f, Value: done, Why: why}))
}

func (s *sim) plan() history.Plan {
	return history.Plan{Group: "g", Protocol: s.cfg.protocol, Topics: []history.TopicPlan{{Name: simTopic, Partitions: s.cfg.partitions}},
		SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second, RebalanceTimeout: 30 * time.Second, ConvergenceSlack: 5 * time.Second}
}

func (s *sim) inGroup() []*simMember {
	var out []*simMember
	for _, m := range s.mem {
		if m.inGroup {
			out = append(out, m)
		}
	}
	return out
}

func tpsOf(ps []int32) []history.TP {
	slices.Sort(ps)
	return history.TPs(simTopic, ps...)
}

func sortedOwned(m *simMember) []int32 {
	var ps []int32
	for p := range m.owned {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

func (s *sim) applyCommit(m *simMember, offs []history.OffsetAt) {
	for _, o := range offs {
		s.committed[o.Partition] = o.Offset
		s.records = append(s.records, history.Record{Offset: int64(len(s.records)), KeyType: history.RecordOffsetCommit,
			Key: map[string]any{"group": "g", "topic": o.Topic, "partition": int64(o.Partition)}, Value: map[string]any{"offset": o.Offset}})
	}
}

// commit commits m's positions of ps. A member in good standing is accepted (sometimes the outcome
// is unknown, sometimes the coordinator is unavailable); a zombie is rejected as stale.
func (s *sim) commit(m *simMember, ps []int32, why string) {
	if len(ps) == 0 {
		return
	}
	c := s.commitOf(m, ps)
	offs := c.Offsets
	done := c
	switch {
	case m.zombie:
		done.Error = "STALE_MEMBER_EPOCH"
		if s.cfg.protocol == history.ProtocolClassic {
			done.Error = "ILLEGAL_GENERATION"
		}
		s.call(m.name, history.FCommit, c, history.Fail, done, why+"; the coordinator fenced this member")
	case s.rng.IntN(20) == 0:
		done.Error = "COORDINATOR_NOT_AVAILABLE"
		s.call(m.name, history.FCommit, c, history.Fail, done, why)
	case s.rng.IntN(20) == 0:
		applied := s.rng.IntN(2) == 0
		if applied {
			s.applyCommit(m, offs)
		}
		s.call(m.name, history.FCommit, c, history.Info, c, why+"; request timed out")
	default:
		s.applyCommit(m, offs)
		s.call(m.name, history.FCommit, c, history.OK, c, why)
	}
}

func (s *sim) heartbeat(m *simMember) {
	hb := history.Heartbeat{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: m.epoch}
	done := hb
	if s.cfg.protocol == history.ProtocolConsumer {
		done.ResultEpoch = m.epoch
	}
	s.call(m.name+"/hb", history.FHeartbeat, hb, history.OK, done, "")
}

// rebalance moves the group to a new epoch with a round-robin target over the members in the group.
func (s *sim) rebalance(why string) {
	s.groupEpoch++
	e := s.groupEpoch
	members := s.inGroup()
	target := map[*simMember]map[int32]bool{}
	for _, m := range members {
		target[m] = map[int32]bool{}
	}
	if len(members) > 0 {
		off := s.rng.IntN(len(members))
		for p := int32(0); p < s.cfg.partitions; p++ {
			target[members[(int(p)+off)%len(members)]][p] = true
		}
	}
	classic := s.cfg.protocol == history.ProtocolClassic
	// Revocations first: only after them may anyone else be assigned the partitions.
	for _, m := range members {
		var revoke []int32
		for _, p := range sortedOwned(m) {
			if classic || !target[m][p] {
				revoke = append(revoke, p)
			}
		}
		if len(revoke) > 0 {
			if s.rng.IntN(3) > 0 {
				s.commit(m, revoke, "commit before revoking")
			}
			s.info(m.name, history.FRevoked, history.Assignment{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: m.epoch, Partitions: tpsOf(revoke)}, why)
			for _, p := range revoke {
				delete(m.owned, p)
			}
		}
		if classic {
			s.call(m.name, history.FJoin, history.Join{Member: m.name, MemberID: m.id}, history.OK, history.Join{Member: m.name, MemberID: m.id, Generation: e, Leader: members[0].id}, why)
		} else {
			s.call(m.name+"/hb", history.FHeartbeat, history.Heartbeat{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: m.epoch},
				history.OK, history.Heartbeat{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: m.epoch, ResultEpoch: e}, "acknowledges revocation")
		}
		m.epoch = e
	}
	for _, m := range members {
		if classic {
			var all []int32
			for p := range target[m] {
				all = append(all, p)
			}
			s.call(m.name, history.FSync, history.Sync{Member: m.name, MemberID: m.id, Generation: e}, history.OK, history.Sync{Member: m.name, MemberID: m.id, Generation: e, Assignment: tpsOf(all)}, why)
		}
		var add []int32
		for p := range target[m] {
			if !m.owned[p] {
				add = append(add, p)
			}
		}
		slices.Sort(add)
		if len(add) == 0 {
			continue
		}
		for _, p := range add {
			m.owned[p] = true
			m.pos[p] = max(s.committed[p], 0)
		}
		s.info(m.name, history.FAssigned, history.Assignment{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: e, Partitions: tpsOf(add)}, why)
	}
	s.groupRecords(members)
}

// groupRecords appends the synthetic group-state records the test replay understands.
func (s *sim) groupRecords(members []*simMember) {
	add := func(kt int16, key, val map[string]any) {
		s.records = append(s.records, history.Record{Offset: int64(len(s.records)), KeyType: kt, Key: key, Value: val})
	}
	add(history.RecordConsumerGroupMetadata, map[string]any{"GroupId": "g"}, map[string]any{"Epoch": int64(s.groupEpoch)})
	add(history.RecordConsumerGroupTargetAssignmentMetadata, map[string]any{"GroupId": "g"}, map[string]any{"AssignmentEpoch": int64(s.groupEpoch)})
	for _, m := range s.mem {
		key := map[string]any{"GroupId": "g", "MemberId": m.id}
		if !m.inGroup {
			add(history.RecordConsumerGroupCurrentMemberAssignment, key, nil)
			continue
		}
		var ps []any
		for _, p := range sortedOwned(m) {
			ps = append(ps, int64(p))
		}
		add(history.RecordConsumerGroupCurrentMemberAssignment, key, map[string]any{"MemberEpoch": int64(m.epoch), "Topic": simTopic, "Partitions": ps})
	}
}

func (s *sim) describe() history.Describe {
	g := &history.GroupDescription{GroupID: "g", Protocol: s.cfg.protocol, State: "Stable", Members: []history.MemberDescription{}}
	if s.cfg.protocol == history.ProtocolConsumer {
		g.GroupEpoch, g.AssignmentEpoch = s.groupEpoch, s.groupEpoch
	} else {
		g.Generation = s.groupEpoch
	}
	for _, m := range s.inGroup() {
		md := history.MemberDescription{MemberID: m.id, Assignment: tpsOf(sortedOwned(m)), MemberType: s.cfg.protocol}
		if s.cfg.protocol == history.ProtocolConsumer {
			md.MemberEpoch = m.epoch
		}
		g.Members = append(g.Members, md)
	}
	if len(g.Members) == 0 {
		g.State = "Empty"
	}
	d := history.Describe{Group: g, HasCommitted: true}
	for p, c := range s.committed {
		if c >= 0 {
			d.Committed = append(d.Committed, history.OffsetAt{Topic: simTopic, Partition: int32(p), Offset: c})
		}
	}
	return d
}

func (s *sim) produce() {
	p := int32(s.rng.IntN(int(s.cfg.partitions)))
	s.seq++
	pr := history.Produce{Topic: simTopic, Partition: p, Seq: s.seq, Offset: -1}
	if s.rng.IntN(30) == 0 {
		if s.rng.IntN(2) == 0 {
			s.log[p] = append(s.log[p], s.seq)
		}
		s.call("p0", history.FProduce, pr, history.Info, pr, "produce timed out")
		return
	}
	done := pr
	done.Offset, done.Acked = int64(len(s.log[p])), true
	s.log[p] = append(s.log[p], s.seq)
	s.call("p0", history.FProduce, pr, history.OK, done, "")
}

func (s *sim) consume(m *simMember, p int32) bool {
	off := m.pos[p]
	if off >= int64(len(s.log[p])) {
		return false
	}
	s.info(m.name, history.FConsume, history.Consume{Member: m.name, Protocol: s.cfg.protocol, Topic: simTopic, Partition: p, Offset: off, Seq: s.log[p][off], Epoch: m.epoch}, "")
	m.pos[p] = off + 1
	return true
}

// fence: the member learns it was fenced, loses its partitions and rejoins.
func (s *sim) fenceAndRejoin(m *simMember) {
	errName := "FENCED_MEMBER_EPOCH"
	if s.cfg.protocol == history.ProtocolClassic {
		errName = "UNKNOWN_MEMBER_ID"
	}
	hb := history.Heartbeat{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: m.epoch}
	failed := hb
	failed.Error = errName
	s.call(m.name+"/hb", history.FHeartbeat, hb, history.Fail, failed, "session expired while paused")
	if owned := sortedOwned(m); len(owned) > 0 {
		s.info(m.name, history.FLost, history.Assignment{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: m.epoch, Partitions: tpsOf(owned)}, "fenced")
	}
	s.info(m.name, history.FFenced, history.Membership{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: m.epoch, Error: errName}, "heartbeat rejected")
	m.owned, m.pos, m.zombie = map[int32]bool{}, map[int32]int64{}, false
	m.inGroup = true
	s.rebalance(m.name + " rejoins after being fenced")
}

func (s *sim) run() ([]history.Event, *history.Observations, history.Plan) {
	s.info("harness", history.FPhase, history.Phase{Name: history.PhaseSetup}, "")
	s.info("harness", history.FPhase, history.Phase{Name: history.PhaseWarmup}, "")
	for _, m := range s.mem {
		m.inGroup = true
	}
	s.rebalance("initial join")
	s.info("harness", history.FPhase, history.Phase{Name: history.PhaseWorkload}, "")
	pausedSteps := 0
	for step := 0; step < s.cfg.steps; step++ {
		if step == s.cfg.steps/2 && s.checkpoint == nil {
			d := s.describe()
			s.checkpoint = &history.Snapshot{Label: "after restart of broker-1", Time: s.now, HistoryLen: s.r.Len(), Committed: d.Committed, HasCommitted: true}
		}
		if s.paused != nil {
			pausedSteps++
			if pausedSteps > 40 && s.rng.IntN(10) == 0 {
				z := s.paused
				s.paused = nil
				s.call("nemesis", history.FFaultStop, history.Fault{What: "pause", Target: []string{z.name}}, history.OK, history.Fault{What: "pause", Target: []string{z.name}}, "")
				s.fenceAndRejoin(z)
			}
		}
		switch k := s.rng.IntN(100); {
		case k < 30:
			s.produce()
		case k < 70:
			m := s.mem[s.rng.IntN(len(s.mem))]
			if ps := sortedOwned(m); len(ps) > 0 {
				s.consume(m, ps[s.rng.IntN(len(ps))])
			}
		case k < 80:
			m := s.mem[s.rng.IntN(len(s.mem))]
			if m.inGroup || m.zombie {
				s.commit(m, sortedOwned(m), "periodic commit")
			}
		case k < 90:
			m := s.mem[s.rng.IntN(len(s.mem))]
			if m.inGroup && !m.zombie {
				s.heartbeat(m)
			}
		case k < 93:
			m := s.mem[s.rng.IntN(len(s.mem))]
			switch {
			case m.zombie:
			case m.inGroup && len(s.inGroup()) > 1:
				s.commit(m, sortedOwned(m), "commit before leaving")
				s.call(m.name+"/hb", history.FLeave, history.Leave{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: -1}, history.OK, history.Leave{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: -1}, "")
				if owned := sortedOwned(m); len(owned) > 0 {
					s.info(m.name, history.FRevoked, history.Assignment{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: m.epoch, Partitions: tpsOf(owned)}, "leaving")
				}
				s.info(m.name, history.FLeft, history.Membership{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: m.epoch}, "scripted leave")
				m.inGroup, m.owned, m.pos = false, map[int32]bool{}, map[int32]int64{}
				s.rebalance(m.name + " left")
			case !m.inGroup:
				m.inGroup = true
				s.rebalance(m.name + " joins")
			}
		case k < 95:
			if s.paused != nil || len(s.inGroup()) < 2 {
				continue
			}
			var cands []*simMember
			for _, m := range s.inGroup() {
				if len(m.owned) > 0 {
					cands = append(cands, m)
				}
			}
			if len(cands) == 0 {
				continue
			}
			z := cands[s.rng.IntN(len(cands))]
			s.call("nemesis", history.FFaultStart, history.Fault{What: "pause", Target: []string{z.name}}, history.OK, history.Fault{What: "pause", Target: []string{z.name}}, "")
			z.inGroup, z.zombie = false, true
			s.paused, pausedSteps = z, 0
			s.rebalance("session of " + z.name + " expired")
			// The zombie still consumes what it had fetched and tries to commit: rejected.
			for _, p := range sortedOwned(z) {
				s.consume(z, p)
			}
			s.commit(z, sortedOwned(z), "zombie commit")
		default:
			s.call("observer", history.FDescribe, history.Describe{}, history.OK, s.describe(), "")
		}
	}
	s.info("harness", history.FPhase, history.Phase{Name: history.PhaseHeal}, "")
	if z := s.paused; z != nil {
		s.paused = nil
		s.call("nemesis", history.FFaultStop, history.Fault{What: "pause", Target: []string{z.name}}, history.OK, history.Fault{What: "pause", Target: []string{z.name}}, "final heal")
		s.fenceAndRejoin(z)
	}
	if len(s.inGroup()) == 0 {
		s.mem[0].inGroup = true
		s.rebalance("a member joins for the final reads")
	}
	// The observer polls while the group settles, before the consumers catch up.
	s.call("observer", history.FDescribe, history.Describe{}, history.OK, s.describe(), "")
	s.info("harness", history.FPhase, history.Phase{Name: history.PhaseQuiesce}, "")
	for _, m := range s.inGroup() {
		for _, p := range sortedOwned(m) {
			for s.consume(m, p) {
			}
		}
		s.applyCommitOK(m)
	}
	s.call("observer", history.FDescribe, history.Describe{}, history.OK, s.describe(), "")
	s.info("harness", history.FPhase, history.Phase{Name: history.PhaseFinal}, "")
	d := s.describe()
	obs := &history.Observations{Group: "g", Final: history.Snapshot{Label: "final", Time: s.now, HistoryLen: s.r.Len(), Group: d.Group, Committed: d.Committed, HasCommitted: true,
		Records: append([]history.Record(nil), s.records...), HasRecords: true}}
	if s.checkpoint != nil {
		obs.Checkpoints = []history.Snapshot{*s.checkpoint}
	}
	return s.r.Events(), obs, s.plan()
}

// applyCommitOK is the final commit of a quiesced member: always acknowledged.
func (s *sim) applyCommitOK(m *simMember) {
	ps := sortedOwned(m)
	if len(ps) == 0 {
		return
	}
	c := s.commitOf(m, ps)
	s.applyCommit(m, c.Offsets)
	s.call(m.name, history.FCommit, c, history.OK, c, "final commit")
}

// commitOf is m's commit of its positions of ps.
func (s *sim) commitOf(m *simMember, ps []int32) history.Commit {
	var offs []history.OffsetAt
	for _, p := range ps {
		offs = append(offs, history.OffsetAt{Topic: simTopic, Partition: p, Offset: m.pos[p]})
	}
	return history.Commit{Member: m.name, MemberID: m.id, Protocol: s.cfg.protocol, Epoch: m.epoch, Offsets: offs}
}

// simReplay is the test's stand-in for coordinator.Replay: it understands the records sim writes.
func simReplay(records []history.Record) (GroupState, error) {
	st := GroupState{Protocol: "", Members: map[string]MemberState{}, Offsets: map[history.TP]int64{}}
	for _, r := range records {
		switch r.KeyType {
		case history.RecordOffsetCommit:
			tp, ok := offsetCommitKey(r, "g")
			if !ok {
				return st, fmt.Errorf("bad offset commit key %v", r.Key)
			}
			off, _ := r.ValueInt("offset")
			st.Offsets[tp] = off
		case history.RecordConsumerGroupMetadata:
			e, _ := r.ValueInt("Epoch")
			st.GroupEpoch = int32(e)
		case history.RecordConsumerGroupTargetAssignmentMetadata:
			e, _ := r.ValueInt("AssignmentEpoch")
			st.AssignmentEpoch = int32(e)
		case history.RecordConsumerGroupCurrentMemberAssignment:
			id, _ := r.KeyString("MemberId")
			if r.Tombstone() {
				delete(st.Members, id)
				continue
			}
			e, _ := r.ValueInt("MemberEpoch")
			var tps []history.TP
			if ps, ok := r.Value["Partitions"].([]any); ok {
				for _, p := range ps {
					n, _ := (history.Record{Value: map[string]any{"p": p}}).ValueInt("p")
					tps = append(tps, history.TP{Topic: simTopic, Partition: int32(n)})
				}
			}
			st.Members[id] = MemberState{MemberEpoch: int32(e), Assignment: tps}
		}
	}
	return st, nil
}

// replayFor adapts simReplay to the protocol: classic descriptions carry a generation and no
// member epochs.
func replayFor(protocol string) ReplayFunc {
	return func(records []history.Record) (GroupState, error) {
		st, err := simReplay(records)
		if protocol == history.ProtocolClassic {
			st.Generation, st.GroupEpoch, st.AssignmentEpoch = st.GroupEpoch, 0, 0
			for id, m := range st.Members {
				m.MemberEpoch = 0
				st.Members[id] = m
			}
		}
		return st, err
	}
}

func genHistory(t testing.TB, cfg simConfig) ([]history.Event, *history.Observations, history.Plan) {
	return newSim(t, cfg).run()
}

func sortedIndexes(v Verdict) []int64 {
	var out []int64
	for _, x := range v.Violations {
		out = append(out, x.EventIndexes...)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}
