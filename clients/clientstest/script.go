package clientstest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/clients"
)

// KafkaError is the Kafka error a script names by its message
// (NOT_COORDINATOR); an unknown name fails the command.
func KafkaError(t *testing.T, d *datadriven.TestData, name string) *kerr.Error {
	t.Helper()
	for code := int16(-1); code < 200; code++ {
		if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && ke.Message == name {
			return ke
		}
	}
	d.Fatalf(t, "unknown Kafka error %s", name)
	return nil
}

// Parts prints partitions the way the machine scripts do:
// [a:[0 1] b:[2]], topics in order.
func Parts(p clients.Partitions) string {
	var parts []string
	for _, t := range p.Topics() {
		parts = append(parts, fmt.Sprintf("%s:%v", t, p[t]))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
