package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/process/python"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/run"
)

// TestWithPython: naming no Python kind leaves the registry as it was;
// naming one on a machine without python3 is an error naming the kind and
// what to install; the kinds speak the protocols their names say.
func TestWithPython(t *testing.T) {
	reg := run.DefaultRegistry()
	same, err := reg.WithPython(context.Background(), []string{"classic", "consumer"})
	if err != nil || len(same) != len(reg) {
		t.Fatalf("WithPython naming no Python kind = %d kinds, %v; want the %d of the registry", len(same), err, len(reg))
	}
	t.Setenv("PATH", t.TempDir())
	_, err = reg.WithPython(context.Background(), []string{"classic", "confluent-python-consumer"})
	if !errors.Is(err, python.ErrMissing) || !strings.Contains(err.Error(), "confluent-python-consumer") {
		t.Fatalf("WithPython without python3 = %v; want ErrMissing naming confluent-python-consumer", err)
	}
	want := map[string]clients.Protocol{"confluent-python": clients.Classic, "confluent-python-cooperative": clients.Classic, "confluent-python-consumer": clients.Consumer}
	wantProcessKinds(t, run.PythonKinds(), run.IsPythonKind, want, "confluent-kafka")
}

// wantProcessKinds checks that kinds are exactly want, each speaking the
// protocol want gives it and known to is, and that none is in
// DefaultRegistry (a seed would draw it on a machine without needs).
func wantProcessKinds(t *testing.T, kinds []run.ProcessKind, is func(string) bool, want map[string]clients.Protocol, needs string) {
	t.Helper()
	reg := run.DefaultRegistry()
	for _, k := range kinds {
		if want[k.Name] != k.Protocol || !is(k.Name) {
			t.Errorf("kind %s speaks %s; want %s", k.Name, k.Protocol, want[k.Name])
		}
		delete(want, k.Name)
		if _, ok := reg[k.Name]; ok {
			t.Errorf("kind %s is in DefaultRegistry: a seed would draw it on a machine without %s", k.Name, needs)
		}
	}
	if len(want) > 0 {
		t.Errorf("kinds missing: %v", want)
	}
}

// TestPythonMemberContract runs the clients contract suite
// (contract_test.go) on every confluent-kafka kind (clients/process/python)
// against the embedded cluster. It needs python3 with confluent_kafka, no
// Docker; it runs in the cluster tier (the unit tier's machines need not
// have confluent-kafka), and a machine without it fails it, saying what to
// install.
func TestPythonMemberContract(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the confluent-kafka kinds are tested in the cluster tier (they need python3 with confluent_kafka)")
	}
	var names []string
	for _, k := range run.PythonKinds() {
		names = append(names, k.Name)
	}
	reg, err := run.Registry{}.WithPython(context.Background(), names)
	if err != nil {
		t.Fatalf("the confluent-kafka member kinds cannot be tested on this machine: %v", err)
	}
	e := clustertest.Embedded(t, cluster.EmbeddedConfig{})
	clustertest.CreateTopic(t, e, "contract", 3)
	for _, kind := range names {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			contract(t, e, kind, reg[kind])
		})
	}
}
