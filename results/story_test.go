package results

import (
	"bytes"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// story writes synthetic histories through a real Recorder (history's builder, as the checkers'
// tests do); at moves its clock.
type story struct {
	t   testing.TB
	r   *history.Recorder
	now time.Duration
}

func newStory(t testing.TB) *story {
	s := &story{t: t}
	r, err := history.NewRecorder(&bytes.Buffer{}, func() time.Duration { return s.now }, history.Retain())
	if err != nil {
		t.Fatal(err)
	}
	s.r = r
	return s
}

func (s *story) at(d time.Duration) *story { s.now = d; return s }

func (s *story) must(e history.Event, err error) int64 {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
	return e.Index
}

func (s *story) phase(name string) int64 { return s.must(s.r.BeginPhase(name, "")) }

func (s *story) own(f, m string, epoch int32, ps ...int32) int64 {
	s.t.Helper()
	return s.must(s.r.Info(m, f, history.Assignment{Member: m, Protocol: history.ProtocolConsumer, Epoch: epoch, Partitions: history.TPs("t", ps...)}, ""))
}

func (s *story) membership(f, m string) int64 {
	s.t.Helper()
	return s.must(s.r.Info(m, f, history.Membership{Member: m, Protocol: history.ProtocolConsumer, Error: "FENCED_MEMBER_EPOCH"}, ""))
}

func (s *story) heartbeat(m string, epoch int32) int64 {
	s.t.Helper()
	hb := history.Heartbeat{Member: m, Protocol: history.ProtocolConsumer, Epoch: epoch, ResultEpoch: epoch}
	s.must(s.r.Invoke(m+"/hb", history.FHeartbeat, hb, ""))
	return s.must(s.r.OK(m+"/hb", hb, ""))
}

func (s *story) fault(proc, f, what string, target ...string) int64 {
	s.t.Helper()
	v := history.Fault{What: what, Target: target}
	s.must(s.r.Invoke(proc, f, v, ""))
	return s.must(s.r.OK(proc, v, ""))
}

// coordinator records member m's FindCoordinator answer naming node (as groupquake's members do).
func (s *story) coordinator(m string, node int32) int64 {
	s.t.Helper()
	return s.must(s.r.Info(m+"/hb", "found-coordinator", map[string]any{"member": m, "node": node}, "FindCoordinator answered"))
}

// notCoordinator records a heartbeat of m answered NOT_COORDINATOR.
func (s *story) notCoordinator(m string, epoch int32) int64 {
	s.t.Helper()
	hb := history.Heartbeat{Member: m, Protocol: history.ProtocolConsumer, Epoch: epoch}
	s.must(s.r.Invoke(m+"/hb", history.FHeartbeat, hb, ""))
	hb.Error = "NOT_COORDINATOR"
	return s.must(s.r.Fail(m+"/hb", hb, ""))
}

// describe records an observer's describe answered by node.
func (s *story) describe(node int32) int64 {
	s.t.Helper()
	s.must(s.r.Invoke("observer", history.FDescribe, history.Describe{}, ""))
	return s.must(s.r.OK("observer", history.Describe{Group: &history.GroupDescription{GroupID: "g", Protocol: history.ProtocolConsumer, State: "Stable", Coordinator: &node}}, ""))
}

func (s *story) events() []history.Event { return s.r.Events() }

var storyPlan = history.Plan{Group: "g", Protocol: history.ProtocolConsumer, Topics: []history.TopicPlan{{Name: "t", Partitions: 4}}}

var storyMembers = []MemberInfo{
	{Name: "a", Kind: "consumer", Protocol: history.ProtocolConsumer},
	{Name: "b", Kind: "kgo-consumer", Protocol: history.ProtocolConsumer},
	{Name: "c", Kind: "consumer", Protocol: history.ProtocolConsumer},
}

// failingStory is a run whose cluster took 40s to set up, then: a and b share the partitions (a
// finds node 1 the coordinator); a broker is paused (b's heartbeat is answered NOT_COORDINATOR and
// b finds node 2, which the observer's describe confirms later); a is fenced (its ownerships end
// there, not at the "lost" it reports later); c takes t-0, t-1 and then t-2 while b still owns t-2
// with a valid session: NoDoubleOwnership is violated. It returns the report and the indexes the tests look for.
func failingStory(t testing.TB) (Report, map[string]int64) {
	s := newStory(t)
	ix := map[string]int64{}
	s.at(0).phase(history.PhaseSetup)
	s.at(40 * time.Second).phase(history.PhaseWarmup)
	ix["coord-1"] = s.at(40500*time.Millisecond).coordinator("a", 1)
	ix["a-assigned"] = s.at(41*time.Second).own(history.FAssigned, "a", 1, 0, 1)
	ix["b-assigned"] = s.at(41500*time.Millisecond).own(history.FAssigned, "b", 1, 2, 3)
	s.at(42 * time.Second).phase(history.PhaseWorkload)
	s.at(43*time.Second).heartbeat("a", 1)
	s.at(43*time.Second).heartbeat("b", 1)
	ix["fault-start"] = s.at(44*time.Second).fault("nemesis/0", history.FFaultStart, "pause", "broker-1")
	ix["not-coord"] = s.at(44500*time.Millisecond).notCoordinator("b", 1)
	ix["coord-2"] = s.at(44600*time.Millisecond).coordinator("b", 2)
	ix["a-fenced"] = s.at(45*time.Second).membership(history.FFenced, "a")
	ix["c-assigned"] = s.at(46*time.Second).own(history.FAssigned, "c", 2, 0, 1)
	ix["a-lost"] = s.at(47*time.Second).own(history.FLost, "a", 1, 0, 1)
	ix["c-assigned-t2"] = s.at(48*time.Second).own(history.FAssigned, "c", 3, 2)
	s.at(49*time.Second).heartbeat("b", 1)
	ix["fault-stop"] = s.at(50*time.Second).fault("nemesis/0", history.FFaultStop, "pause", "broker-1")
	ix["describe-2"] = s.at(51 * time.Second).describe(2)
	s.at(52 * time.Second).phase(history.PhaseHeal)
	s.at(53 * time.Second).phase(history.PhaseQuiesce)
	s.at(55 * time.Second).phase(history.PhaseFinal)
	s.at(56 * time.Second).phase(history.PhaseTeardown)
	s.at(57*time.Second).membership(history.FLeft, "b")
	ix["c-left"] = s.at(58*time.Second).membership(history.FLeft, "c")
	evs := s.events()
	rep := check.Judge(evs, nil, storyPlan)
	return Report{
		Title:      "seed 42, scenario combined",
		Run:        RunInfo{Seed: 42, Scenario: "combined", Kafka: "4.4.0", Protocol: ProtocolMix(storyMembers), Members: storyMembers},
		Command:    "groupquake run --seed 42 --scenario combined",
		Events:     evs,
		Verdicts:   rep.Verdicts,
		Cost:       rep.RebalanceCost,
		Notes:      rep.Notes,
		Partitions: storyPlan.Partitions(),
	}, ix
}
