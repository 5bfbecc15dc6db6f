package check

import (
	"bytes"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

func simConfigs(n int) []simConfig {
	var out []simConfig
	for i := 0; i < n; i++ {
		for _, p := range []string{history.ProtocolConsumer, history.ProtocolClassic} {
			out = append(out, simConfig{seed: uint64(i + 1), protocol: p, members: 2 + i%3, partitions: int32(3 + i%4), steps: 1500})
		}
	}
	return out
}

func verdictNamed(vs []Verdict, name string) Verdict {
	for _, v := range vs {
		if v.Name == name {
			return v
		}
	}
	return Verdict{Name: name + " (missing)"}
}

// Every generated history is valid, so every checker must hold on it.
func TestGeneratedHistoriesHold(t *testing.T) {
	t.Parallel()
	for _, cfg := range simConfigs(8) {
		events, obs, plan := genHistory(t, cfg)
		vs := All(events, obs, plan, WithReplay(replayFor(cfg.protocol)))
		for _, v := range vs {
			if !v.Holds || v.Skipped != "" {
				t.Fatalf("seed %d %s: %s must hold on a valid history; violations %+v skipped %q notes %v", cfg.seed, cfg.protocol, v.Name, first(v.Violations, 3), v.Skipped, v.Notes)
			}
		}
	}
}

func first(vs []Violation, n int) []Violation {
	if len(vs) > n {
		return vs[:n]
	}
	return vs
}

// The checkers judge a history read back from JSONL exactly as they judge the in-memory one.
func TestVerdictsSurviveRoundTrip(t *testing.T) {
	t.Parallel()
	events, obs, plan := genHistory(t, simConfig{seed: 42, protocol: history.ProtocolConsumer, members: 3, partitions: 4, steps: 800})
	l := roundTrip(t, events, history.Write, history.Read)
	obs2 := roundTrip(t, obs, history.WriteObservations, history.ReadObservations)
	rep := Judge(events, obs, plan, WithReplay(replayFor(history.ProtocolConsumer)))
	if !rep.Holds || rep.RebalanceCost == nil || rep.RebalanceCost.Protocols[history.ProtocolConsumer].PartitionStops.Count == 0 {
		t.Fatalf("Judge on a valid history: holds %v, cost %+v", rep.Holds, rep.RebalanceCost)
	}
	a := All(events, obs, plan, WithReplay(replayFor(history.ProtocolConsumer)))
	b := All(l.Events, obs2, plan, WithReplay(replayFor(history.ProtocolConsumer)))
	for i := range a {
		if a[i].Holds != b[i].Holds || len(a[i].Violations) != len(b[i].Violations) || !slices.Equal(a[i].Notes, b[i].Notes) {
			t.Fatalf("%s differs after a round trip:\n%+v\n%+v", a[i].Name, a[i], b[i])
		}
	}
}

// roundTrip writes v with write and reads it back with read; an error fails the test.
func roundTrip[V, R any](t *testing.T, v V, write func(io.Writer, V) error, read func(io.Reader) (R, error)) R {
	t.Helper()
	var buf bytes.Buffer
	if err := write(&buf, v); err != nil {
		t.Fatal(err)
	}
	r, err := read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A mutation injects one violation into a valid history and says which checker must catch it and
// which event index (after the mutation) the violation must cite. ok is false when this history
// offers no place for it.
type mutation struct {
	name    string
	checker string
	apply   func(rng *rand.Rand, events []history.Event, obs *history.Observations) (out []history.Event, want int64, ok bool)
}

// insertAt inserts es before position pos and renumbers every event, as if they had been recorded
// there; it returns the index of the first inserted event.
func insertAt(events []history.Event, pos int, es ...history.Event) ([]history.Event, int64) {
	for i := range es {
		es[i].Time = events[max(pos-1, 0)].Time
	}
	out := slices.Concat(events[:pos:pos], es, events[pos:])
	for i := range out {
		out[i].Index = int64(i)
	}
	return out, int64(pos)
}

// insertable lists positions where an insertion splits no call.
func insertable(events []history.Event, lo, hi int) []int {
	var out []int
	for p := max(lo, 1); p < hi; p++ {
		if events[p-1].Type != history.Invoke {
			out = append(out, p)
		}
	}
	return out
}

// pickWhere picks with rng the index of one of the elements of xs that match accepts; false when
// none does.
func pickWhere[T any](rng *rand.Rand, xs []T, match func(T) bool) (int, bool) {
	var cands []int
	for i, x := range xs {
		if match(x) {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return 0, false
	}
	return cands[rng.IntN(len(cands))], true
}

func workloadSpan(events []history.Event) (int, int) {
	lo, hi := 0, len(events)
	for i, e := range events {
		if ph, ok := e.Value.(history.Phase); ok {
			switch ph.Name {
			case history.PhaseWorkload:
				lo = i
			case history.PhaseHeal:
				hi = i
			}
		}
	}
	return lo, hi
}

func mutations() []mutation {
	return []mutation{
		{"double owner", "NoDoubleOwnership", mutDoubleOwner},
		{"double owner of one epoch", "ValidPartitionEpoch", mutDoubleOwner},
		{"epoch goes back", "EpochMonotonic", mutEpochBack},
		{"zombie commit landed", "FencedCommitsRejected", mutZombieCommit},
		{"committed offset goes back", "CommittedOffsetMonotonic", mutOffsetBack},
		{"lost record", "NoLostRecords", mutLostRecord},
		{"unexplained duplicate", "BoundedDuplicates", mutDuplicate},
		{"never converges", "EventuallyConverges", mutNeverConverges},
		{"acknowledged commit missing", "DurableCommits", mutMissingCommit},
		{"replay disagrees", "RecoveredStateMatchesLog", mutReplayDisagrees},
	}
}

// mutDoubleOwner assigns a partition that a member owns (and will release cleanly) to another
// member at the same epoch, and gives that member a successful heartbeat.
func mutDoubleOwner(rng *rand.Rand, events []history.Event, _ *history.Observations) ([]history.Event, int64, bool) {
	f := build(events, nil)
	lo, hi := workloadSpan(events)
	id, ok := pickWhere(rng, f.intervals, func(iv interval) bool {
		return iv.endKind != endLost && iv.start > lo && iv.start < hi && iv.epoch > 0 && len(f.mems) > 1
	})
	if !ok {
		return nil, 0, false
	}
	iv := f.intervals[id]
	// The other member must not hold the partition already, or the assignment changes nothing.
	var others []int
	for m := range f.mems {
		holds := false
		for _, id := range f.byTP[iv.tp] {
			o := f.intervals[id]
			holds = holds || (o.member == m && o.start <= iv.start && o.end > iv.start)
		}
		if m != iv.member && !holds {
			others = append(others, m)
		}
	}
	if len(others) == 0 {
		return nil, 0, false
	}
	other := f.mems[others[rng.IntN(len(others))]]
	a := events[iv.start].Value.(history.Assignment)
	proto := a.Protocol
	hb := history.Heartbeat{Member: other, Protocol: proto, Epoch: iv.epoch, ResultEpoch: iv.epoch}
	out, want := insertAt(events, iv.start+1,
		history.Event{Type: history.Info, Process: other, F: history.FAssigned, Value: history.Assignment{Member: other, Protocol: proto, Epoch: iv.epoch, Partitions: []history.TP{f.tps[iv.tp]}}},
		history.Event{Type: history.Invoke, Process: "mutant/hb", F: history.FHeartbeat, Value: hb},
		history.Event{Type: history.OK, Process: "mutant/hb", F: history.FHeartbeat, Value: hb})
	return out, want, true
}

// mutEpochBack answers one member's heartbeat or join with an epoch lower than one it already had.
func mutEpochBack(rng *rand.Rand, events []history.Event, _ *history.Observations) ([]history.Event, int64, bool) {
	pos, ok := pickWhere(rng, events, func(e history.Event) bool {
		if e.Type != history.OK {
			return false
		}
		switch v := e.Value.(type) {
		case history.Heartbeat:
			return v.Protocol == history.ProtocolConsumer && v.ResultEpoch >= 2
		case history.Sync:
			// A generation a SyncGroup confirmed: Kafka has written it (one only answered to
			// JoinGroup may be forgotten by a failover, which EpochMonotonic excuses).
			return v.Generation >= 2
		}
		return false
	})
	if !ok {
		return nil, 0, false
	}
	var ins []history.Event
	switch v := events[pos].Value.(type) {
	case history.Heartbeat:
		v.ResultEpoch--
		ins = []history.Event{{Type: history.Invoke, Process: "mutant", F: history.FHeartbeat, Value: v}, {Type: history.OK, Process: "mutant", F: history.FHeartbeat, Value: v}}
	case history.Sync:
		v.Generation--
		ins = []history.Event{{Type: history.Invoke, Process: "mutant", F: history.FSync, Value: v}, {Type: history.OK, Process: "mutant", F: history.FSync, Value: v}}
	}
	out, at := insertAt(events, pos+1, ins...)
	return out, at + 1, true
}

// mutZombieCommit makes the coordinator accept a commit it rejected as stale.
func mutZombieCommit(rng *rand.Rand, events []history.Event, _ *history.Observations) ([]history.Event, int64, bool) {
	pos, ok := pickWhere(rng, events, func(e history.Event) bool {
		c, ok := e.Value.(history.Commit)
		return ok && e.Type == history.Fail && (c.Error == "STALE_MEMBER_EPOCH" || c.Error == "ILLEGAL_GENERATION")
	})
	if !ok {
		return nil, 0, false
	}
	out := slices.Clone(events)
	c := out[pos].Value.(history.Commit)
	c.Error = ""
	out[pos].Type, out[pos].Value = history.OK, c
	return out, int64(pos), true
}

// mutOffsetBack has a member commit, right after an acknowledged commit, a lower offset.
func mutOffsetBack(rng *rand.Rand, events []history.Event, _ *history.Observations) ([]history.Event, int64, bool) {
	pos, ok := pickWhere(rng, events, func(e history.Event) bool {
		c, ok := e.Value.(history.Commit)
		return ok && e.Type == history.OK && c.Epoch > 0 && c.Offsets[0].Offset >= 1
	})
	if !ok {
		return nil, 0, false
	}
	c := events[pos].Value.(history.Commit)
	lower := c
	lower.Offsets = []history.OffsetAt{c.Offsets[0]}
	lower.Offsets[0].Offset--
	out, at := insertAt(events, pos+1,
		history.Event{Type: history.Invoke, Process: "mutant", F: history.FCommit, Value: lower},
		history.Event{Type: history.OK, Process: "mutant", F: history.FCommit, Value: lower})
	return out, at + 1, true
}

// mutLostRecord removes every consumption of one acknowledged record.
func mutLostRecord(rng *rand.Rand, events []history.Event, _ *history.Observations) ([]history.Event, int64, bool) {
	pos, ok := pickWhere(rng, events, func(e history.Event) bool {
		p, ok := e.Value.(history.Produce)
		return ok && e.Type == history.OK && p.Offset >= 0
	})
	if !ok {
		return nil, 0, false
	}
	p := events[pos].Value.(history.Produce)
	var out []history.Event
	want := int64(-1)
	for i, e := range events {
		if c, ok := e.Value.(history.Consume); ok && c.Partition == p.Partition && c.Offset == p.Offset {
			continue
		}
		if i == pos {
			want = int64(len(out))
		}
		out = append(out, e)
	}
	for i := range out {
		out[i].Index = int64(i)
	}
	return out, want, true
}

// mutDuplicate hands one record to the application twice within one ownership.
func mutDuplicate(rng *rand.Rand, events []history.Event, _ *history.Observations) ([]history.Event, int64, bool) {
	pos, ok := pickWhere(rng, events, func(e history.Event) bool {
		_, ok := e.Value.(history.Consume)
		return ok
	})
	if !ok {
		return nil, 0, false
	}
	out, want := insertAt(events, pos+1, events[pos])
	return out, want, true
}

// mutNeverConverges has a final owner give up a partition after the heal, with nobody taking it.
func mutNeverConverges(rng *rand.Rand, events []history.Event, _ *history.Observations) ([]history.Event, int64, bool) {
	f := build(events, nil)
	final := f.lastPhase(history.PhaseFinal)
	var cands []interval
	for _, iv := range f.intervals {
		if iv.endKind == endOpen {
			cands = append(cands, iv)
		}
	}
	if final < 0 || len(cands) == 0 {
		return nil, 0, false
	}
	iv := cands[rng.IntN(len(cands))]
	out, want := insertAt(events, final, history.Event{Type: history.Info, Process: f.mems[iv.member], F: history.FRevoked,
		Value: history.Assignment{Member: f.mems[iv.member], Protocol: iv.protocol, Epoch: iv.epoch, Partitions: []history.TP{f.tps[iv.tp]}}})
	return out, want, true
}

// mutMissingCommit drops or rewrites, in the final observation, the offset of a partition with an
// acknowledged commit; the violation must cite the last acknowledged commit.
func mutMissingCommit(rng *rand.Rand, events []history.Event, obs *history.Observations) ([]history.Event, int64, bool) {
	f := build(events, nil)
	var tps []int
	for tp := range f.tps {
		if len(f.acceptedByTP(tp)) > 0 {
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 {
		return nil, 0, false
	}
	tp := tps[rng.IntN(len(tps))]
	acc := f.acceptedByTP(tp)
	want := f.idx(f.commits[acc[len(acc)-1]].done)
	var kept []history.OffsetAt
	for _, o := range obs.Final.Committed {
		if o.TP() == f.tps[tp] {
			if rng.IntN(2) == 0 {
				continue // lost entirely
			}
			o.Offset += 1_000_000 // a value no commit wrote
		}
		kept = append(kept, o)
	}
	obs.Final.Committed = kept
	return events, want, true
}

// mutReplayDisagrees drops a partition from a member in the final description, so the replayed
// records no longer match it.
func mutReplayDisagrees(rng *rand.Rand, events []history.Event, obs *history.Observations) ([]history.Event, int64, bool) {
	g := obs.Final.Group
	i, ok := pickWhere(rng, g.Members, func(m history.MemberDescription) bool { return len(m.Assignment) > 0 })
	if !ok {
		return nil, 0, false
	}
	m := &g.Members[i]
	m.Assignment = m.Assignment[:len(m.Assignment)-1]
	return events, obs.Final.HistoryLen - 1, true
}

// Every mutation must be caught by its checker, citing the mutated event.
func TestMutationsAreCaught(t *testing.T) {
	t.Parallel()
	type generated struct {
		cfg    simConfig
		events []history.Event
		obs    []byte // observations as JSON: each mutation gets its own copy
		plan   history.Plan
	}
	var gens []generated
	for _, cfg := range simConfigs(5) {
		events, obs, plan := genHistory(t, cfg)
		var buf bytes.Buffer
		if err := history.WriteObservations(&buf, obs); err != nil {
			t.Fatal(err)
		}
		gens = append(gens, generated{cfg, events, buf.Bytes(), plan})
	}
	for _, mu := range mutations() {
		t.Run(mu.name, func(t *testing.T) {
			t.Parallel()
			applied := 0
			for _, g := range gens {
				cfg, events, plan := g.cfg, g.events, g.plan
				obs, err := history.ReadObservations(bytes.NewReader(g.obs))
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(cfg.seed, 7))
				out, want, ok := mu.apply(rng, events, obs)
				if !ok {
					continue
				}
				applied++
				if _, err := history.Pairs(out); err != nil {
					t.Fatalf("seed %d %s: the mutation broke pairing: %v", cfg.seed, cfg.protocol, err)
				}
				v := verdictNamed(All(out, obs, plan, WithReplay(replayFor(cfg.protocol))), mu.checker)
				if v.Holds {
					t.Fatalf("seed %d %s: %s did not catch %q (want event %d cited); notes %v", cfg.seed, cfg.protocol, mu.checker, mu.name, want, v.Notes)
				}
				if !slices.Contains(sortedIndexes(v), want) {
					t.Fatalf("seed %d %s: %s caught %q but cites %v, not event %d: %+v", cfg.seed, cfg.protocol, mu.checker, mu.name, sortedIndexes(v), want, first(v.Violations, 3))
				}
			}
			if applied < 5 {
				t.Fatalf("mutation %q applied to only %d of %d generated histories: the generator no longer produces what it needs", mu.name, applied, len(gens))
			}
		})
	}
}

// A run killed mid-write leaves a truncated last line: Load keeps every complete event, and All
// judges them and says so.
func TestTruncatedHistoryIsJudged(t *testing.T) {
	t.Parallel()
	events, obs, plan := genHistory(t, simConfig{seed: 9, protocol: history.ProtocolClassic, members: 3, partitions: 3, steps: 400})
	var buf bytes.Buffer
	if err := history.Write(&buf, events); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	cut := data[:len(data)-7] // the last event loses its tail and its newline
	l, err := history.Read(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	if l.Truncated == nil || len(l.Events) != len(events)-1 {
		t.Fatalf("kept %d of %d events, truncation %+v", len(l.Events), len(events), l.Truncated)
	}
	vs := All(l.Events, obs, plan, WithTruncation(l.Truncated), WithReplay(replayFor(history.ProtocolClassic)))
	wf := verdictNamed(vs, "HistoryWellFormed")
	if !wf.Holds || !strings.Contains(strings.Join(wf.Notes, "\n"), "truncated line") {
		t.Fatalf("HistoryWellFormed = %+v", wf)
	}
}
