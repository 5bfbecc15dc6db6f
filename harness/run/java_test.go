package run_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// TestJavaMemberContract runs the clients contract suite (contract_test.go)
// on every Java member kind: the official KafkaConsumer of the default
// Kafka version, in its own JVM, against the embedded cluster. It needs a
// JDK and Maven (kafka-clients is resolved once and cached), no Docker, so
// it belongs to the unit tier like the contract of the other kinds; a
// machine without them fails it and says what to install.
func TestJavaMemberContract(t *testing.T) {
	if err := java.CheckJava(); err != nil {
		t.Fatalf("the Java member kinds cannot be tested on this machine: %v", err)
	}
	e := clustertest.Embedded(t, cluster.EmbeddedConfig{})
	clustertest.CreateTopic(t, e, "contract", 3)
	tc := &java.Toolchain{Logf: t.Logf}
	reg := kinds.Java(tc)
	if _, err := tc.Prepare(context.Background(), cluster.DefaultKafkaVersion); err != nil {
		t.Fatal(err)
	}
	for _, kind := range reg.Names() {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := reg[kind]
			inner := f.New
			f.New = func(s kinds.MemberSpec) (clients.Member, error) {
				s.KafkaClients = cluster.DefaultKafkaVersion
				return inner(s)
			}
			contract(t, e, kind, f)
		})
	}
}

// TestSharedJVM runs four Java members, both protocols, hosted in one
// shared JVM (--java-jvms shared) against the embedded cluster, under the
// churn scenario with member crashes only: every checker must hold, none
// skipped; the first incarnation of every member must have run in the
// same JVM; and each crash must be seen in the history to stop only its
// member: no LeaveGroup (or leave heartbeat) from it and nothing consumed
// by it until it is brought back, while the other members go on
// consuming. Seed 3's schedule crashes members (asserted from the plan).
func TestSharedJVM(t *testing.T) {
	if err := java.CheckJava(); err != nil {
		t.Fatalf("the Java member kinds cannot be tested on this machine: %v", err)
	}
	named := []string{"java-consumer", "java-classic-cooperative"}
	reg, err := kinds.Default().WithJava(named, &java.Toolchain{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	pids := map[string]*java.Member{} // each member's first incarnation
	for _, k := range named {
		f := reg[k]
		inner := f.New
		f.New = func(s kinds.MemberSpec) (clients.Member, error) {
			m, err := inner(s)
			if jm, ok := m.(*java.Member); ok {
				mu.Lock()
				if pids[s.Name] == nil {
					pids[s.Name] = jm
				}
				mu.Unlock()
			}
			return m, err
		}
		reg[k] = f
	}
	const seed = 3
	p, err := run.NewPlan(seed, run.Options{
		Scenario: run.ScenarioChurn, Embedded: true, Kinds: named, Members: 4, JavaJVMs: kinds.JavaJVMsShared,
		Faults: []faults.Kind{faults.MemberCrash}, Intensity: "high", Partitions: 4, Rate: 30, Duration: 15 * time.Second,
	}, reg.Kinds())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Command(), "--java-jvms shared") {
		t.Errorf("the rerun command does not keep the shared JVM: %s", p.Command())
	}
	crashes := 0
	for _, f := range p.Faults {
		if f.Kind == faults.MemberCrash {
			crashes++
		}
	}
	if crashes == 0 {
		t.Fatalf("seed %d's plan crashes no member: pick a seed whose schedule does (%v)", seed, p.Faults)
	}
	t.Logf("rerun: %s", p.Command())
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := run.Run(ctx, run.Config{Plan: p, Dir: dir, Registry: reg, Logf: t.Logf})
	if err != nil {
		t.Fatalf("run: %v (notes: %v)", err, res.Notes)
	}
	requireHolds(t, res.Report)

	// A first incarnation crashed before its Start reached the JVM has no PID
	// (0); every other one must be in the same JVM.
	mu.Lock()
	shared := map[int][]string{}
	hosted := 0
	for name, m := range pids {
		if pid := m.PID(); pid != 0 {
			shared[pid] = append(shared[pid], name)
			hosted++
		}
	}
	mu.Unlock()
	if len(pids) != 4 || len(shared) != 1 || hosted < 2 {
		t.Errorf("want the first incarnations of the 4 members (those that reached a JVM, at least 2) in one JVM, got JVMs (pid → members) %v of %d", shared, len(pids))
	}

	h, err := history.Load(filepath.Join(dir, run.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	// A crash's links are cut at its start's invoke; its start's ok comes
	// once the member's driver has stopped (a command under way, such as a
	// commitSync against the cut links, runs out first), and the member is
	// dead from there until its stop.
	type span struct {
		member          string
		cut, from, till time.Duration
	}
	var spans []span
	open := map[string]span{} // by nemesis process
	for _, e := range h.Events {
		f, ok := e.Value.(history.Fault)
		if !ok || f.What != string(faults.MemberCrash) || len(f.Target) != 1 {
			continue
		}
		switch {
		case e.F == history.FFaultStart && e.Type == history.Invoke:
			open[e.Process] = span{member: f.Target[0], cut: e.Time}
		case e.F == history.FFaultStart && e.Type == history.OK:
			if s, ok := open[e.Process]; ok {
				s.from = e.Time
				open[e.Process] = s
			}
		case e.F == history.FFaultStop && e.Type == history.Invoke:
			if s, ok := open[e.Process]; ok && s.from > 0 {
				s.till = e.Time
				spans = append(spans, s)
			}
			delete(open, e.Process)
		}
	}
	if len(spans) == 0 {
		t.Fatalf("the history shows no member crash carried out and healed (the plan had %d)", crashes)
	}
	for _, s := range spans {
		others := map[string]int{}
		for _, e := range h.Events {
			if e.Time <= s.cut || e.Time >= s.till {
				continue
			}
			switch v := e.Value.(type) {
			case history.Consume:
				if v.Member != s.member {
					others[v.Member]++
				} else if e.Time > s.from {
					t.Errorf("%s consumed %s/%d@%d at %s, while crashed (%s to %s)", s.member, v.Topic, v.Partition, v.Offset, e.Time, s.from, s.till)
				}
			case history.Leave:
				if v.Member == s.member && e.Time > s.from {
					t.Errorf("%s sent a leave (event %d) while crashed: a crash must not leave the group", s.member, e.Index)
				}
			}
		}
		if len(others) == 0 {
			t.Errorf("while %s was crashed (cut at %s, dead %s to %s) no other member consumed anything: the crash stopped more than its member", s.member, s.cut, s.from, s.till)
		}
		t.Logf("%s crashed (cut at %s, dead %s to %s); the others consumed meanwhile: %v", s.member, s.cut, s.from, s.till, others)
	}
}
