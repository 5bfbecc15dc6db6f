package kinds_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/harness/kinds"
)

// TestWithSpring: naming no Spring kind leaves the registry as it was;
// naming one with a kafka-clients older than any Spring Kafka release
// groupquake runs, or on a machine without a JDK and Maven, is an error
// naming the kind (and what to install); the kinds speak the protocols
// their names say, and a seed never draws them.
func TestWithSpring(t *testing.T) {
	reg := kinds.Default()
	tc := &java.Toolchain{}
	same, err := reg.WithSpring(context.Background(), []string{"classic", "consumer"}, tc, "4.4.0")
	if err != nil || len(same) != len(reg) {
		t.Fatalf("WithSpring naming no Spring kind = %d kinds, %v; want the %d of the registry", len(same), err, len(reg))
	}
	_, err = reg.WithSpring(context.Background(), []string{"spring-kafka"}, tc, "3.9.1")
	if err == nil || !strings.Contains(err.Error(), "spring-kafka") || !strings.Contains(err.Error(), "kafka-clients 4.1 or newer") {
		t.Fatalf("WithSpring on kafka-clients 3.9.1 = %v; want an error naming spring-kafka and the kafka-clients it needs", err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err = reg.WithSpring(context.Background(), []string{"classic", "spring-kafka-consumer"}, tc, "4.4.0")
	if !errors.Is(err, java.ErrNoJava) || !strings.Contains(err.Error(), "spring-kafka-consumer") {
		t.Fatalf("WithSpring without a JDK = %v; want ErrNoJava naming spring-kafka-consumer", err)
	}
	want := map[string]clients.Protocol{"spring-kafka": clients.Classic, "spring-kafka-consumer": clients.Consumer}
	wantProcessKinds(t, kinds.SpringKinds(), kinds.IsSpringKind, want, "a JDK")
}
