package clientstest

import (
	"fmt"
	"strconv"
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

// ArgPartitions are the partitions a script command lists as key=(0,1,…),
// none when it has no such argument; a value that is not a partition
// number fails the command.
func ArgPartitions(t *testing.T, d *datadriven.TestData, key string) []int32 {
	t.Helper()
	arg, _ := d.Arg(key)
	var out []int32
	for _, v := range arg.Vals {
		p, err := strconv.Atoi(v)
		if err != nil {
			d.Fatalf(t, "partition %q: %v", v, err)
		}
		out = append(out, int32(p))
	}
	return out
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
