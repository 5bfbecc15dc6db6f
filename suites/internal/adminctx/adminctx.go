// Package adminctx opens what most suite checks of a cluster start with:
// an admin client and a context bounding what is asked of it.
package adminctx

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Cluster is any cluster that hands out admin clients (cluster.Cluster,
// cluster.Embedded, cluster.External).
type Cluster interface {
	Admin() (*kadm.Client, error)
}

// Open returns an admin client of c and a context that ends after
// timeout; done cancels the context, then closes the client. A client that
// cannot be made fails the test.
func Open(t testing.TB, c Cluster, timeout time.Duration) (adm *kadm.Client, ctx context.Context, done func()) {
	t.Helper()
	adm, err := c.Admin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	return adm, ctx, func() {
		cancel()
		adm.Close()
	}
}
