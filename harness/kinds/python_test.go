package kinds_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/process/python"
	"github.com/groupquake/groupquake/harness/kinds"
)

// TestWithPython: naming no Python kind leaves the registry as it was;
// naming one on a machine without python3 is an error naming the kind and
// what to install; the kinds speak the protocols their names say.
func TestWithPython(t *testing.T) {
	reg := kinds.Default()
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
	wantProcessKinds(t, kinds.PythonKinds(), kinds.IsPythonKind, want, "confluent-kafka")
}

// wantProcessKinds checks that all are exactly want, each speaking the
// protocol want gives it and known to is, and that none is in
// Default (a seed would draw it on a machine without needs).
func wantProcessKinds(t *testing.T, all []kinds.ProcessKind, is func(string) bool, want map[string]clients.Protocol, needs string) {
	t.Helper()
	reg := kinds.Default()
	for _, k := range all {
		if want[k.Name] != k.Protocol || !is(k.Name) {
			t.Errorf("kind %s speaks %s; want %s", k.Name, k.Protocol, want[k.Name])
		}
		delete(want, k.Name)
		if _, ok := reg[k.Name]; ok {
			t.Errorf("kind %s is in Default: a seed would draw it on a machine without %s", k.Name, needs)
		}
	}
	if len(want) > 0 {
		t.Errorf("kinds missing: %v", want)
	}
}
