// Package wiretest holds what the tests of a wire.Server share. It takes
// the server's address, not the server, so that wire's own tests can use
// it too.
package wiretest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Client is a franz-go client seeded with the server at addr, with opts
// after the seed; it is closed when the test ends.
func Client(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}
