package run

import (
	"context"
	"fmt"
	"strings"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/process/python"
)

// PythonKinds are the member kinds of confluent-kafka, the Python client on
// librdkafka (clients/process/python: member.py speaking the member
// protocol, one process per member). Like the Java kinds they are never in
// DefaultRegistry, so a seed never draws them (a machine may have no
// confluent-kafka); WithPython adds the ones a user names.
func PythonKinds() []ProcessKind {
	return []ProcessKind{
		{Name: "confluent-python", Protocol: clients.Classic, Offers: []string{assignRange, assignRoundRobin},
			Doc: "confluent-kafka (Python, librdkafka), classic protocol with librdkafka's default assignors (range, roundrobin: EAGER rebalances)"},
		{Name: "confluent-python-cooperative", Protocol: clients.Classic, Assignor: "cooperative-sticky", Offers: []string{assignCoopSticky},
			Doc: "confluent-kafka (Python, librdkafka), classic protocol with the cooperative-sticky assignor (KIP-429 COOPERATIVE rebalances)"},
		{Name: "confluent-python-consumer", Protocol: clients.Consumer, Assignor: "uniform",
			Doc: "confluent-kafka (Python, librdkafka), group.protocol=consumer (KIP-848), server assignor uniform"},
	}
}

// IsPythonKind says whether kind is one of PythonKinds.
func IsPythonKind(kind string) bool {
	return isProcessKind(PythonKinds(), kind)
}

// WithPython returns r plus the Python kinds among named, each running
// member.py with the python3 on PATH. Naming one on a machine whose
// python3 cannot import confluent_kafka is an error that says what to
// install; naming none changes nothing.
func (r Registry) WithPython(ctx context.Context, named []string) (Registry, error) {
	want := namedKinds(named, IsPythonKind)
	if len(want) == 0 {
		return r, nil
	}
	cmd, _, err := python.Command(ctx)
	if err != nil {
		return nil, fmt.Errorf("member kinds %s: %w", strings.Join(want, ", "), err)
	}
	return r.withCommand(PythonKinds(), want, cmd), nil
}
