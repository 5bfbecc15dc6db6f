package kafkagoref

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
)

// TestDialsOnlyThroughTheLinks: every connection kafka-go makes (its group and its partition readers), to the seed and to
// the brokers it learns, goes through the member's dialer, so link faults
// reach all of them (clientstest.DialsOnlyThroughTheLinks).
func TestDialsOnlyThroughTheLinks(t *testing.T) {
	clientstest.DialsOnlyThroughTheLinks(t, func(hooks clients.Hooks, links []kgo.Opt) (clients.Member, error) {
		return New("m1", "g", []string{"t"}, WithHooks(hooks), KgoOpts(links...), SessionTimeout(6*time.Second), HeartbeatInterval(200*time.Millisecond), RebalanceTimeout(10*time.Second))
	})
}
