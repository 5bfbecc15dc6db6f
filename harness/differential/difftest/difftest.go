// Package difftest starts what the differential tests of
// harness/differential and suites/conformance run the vectors against
// besides Kafka: franz-go's kfake, with the group settings of the release
// the vectors are compared as.
package difftest

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Kfake starts a one-broker kfake cluster with the consumer-group heartbeat
// interval and session timeout of settings (differential.Settings of the
// release) and session bounds wide enough for every vector, and returns its
// address. The cluster is closed when the test ends.
func Kfake(t testing.TB, settings map[string]string) string {
	t.Helper()
	fake, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.GroupMinSessionTimeout(time.Second),
		kfake.GroupMaxSessionTimeout(30*time.Minute),
		kfake.BrokerConfigs(map[string]string{
			"group.consumer.heartbeat.interval.ms": settings["group.consumer.heartbeat.interval.ms"],
			"group.consumer.session.timeout.ms":    settings["group.consumer.session.timeout.ms"],
		}),
	)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(fake.Close)
	return fake.ListenAddrs()[0]
}
