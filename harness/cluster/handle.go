package cluster

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/groupquake/groupquake/faults"
)

// Handle is a Kafka cluster the harness runs against: containers it
// started, or an external cluster it was pointed at. Both give every client
// its own links and take node faults.
type Handle interface {
	faults.Target
	// Bootstrap returns the brokers' client addresses.
	Bootstrap() []string
	// Links returns a client's own links to every broker.
	Links(client string) (*Links, error)
	// Admin returns a client straight to the brokers, bypassing every link,
	// for setup and observations.
	Admin() (*kadm.Client, error)
	// Close releases what the handle made (containers, proxies).
	Close(ctx context.Context) error
}
