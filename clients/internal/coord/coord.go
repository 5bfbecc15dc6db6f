// Package coord finds a group's coordinator as Java's consumers do: one
// FindCoordinator to one broker per attempt, no retry of its own, so that
// the member retries after its own backoff and sees each failure
// (AbstractCoordinator.ensureCoordinatorReady for the classic protocol,
// CoordinatorRequestManager for the consumer protocol). Both of
// groupquake's group members (clients/classic, clients/consumer) look
// their coordinator up here.
//
// Through kgo's Client.Request the lookup would be retried inside kgo,
// after kgo's own backoff (250 ms doubling to 5 s), unseen by the member
// and across up windows of a flapping link: a classic member was silent
// for 7.9 s that way, past its 6 s session (seed 2918632487381593263 on
// 4.4.0, three nodes).
package coord

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Find sends one FindCoordinator for group to one broker and returns the
// coordinator's node id, or the transport error or the error the broker
// answered (COORDINATOR_NOT_AVAILABLE, GROUP_AUTHORIZATION_FAILED, ...).
// The broker is drawn per attempt from the brokers cl knows (the seeds
// before its first metadata), so that a lookup after a failure can go
// elsewhere.
func Find(ctx context.Context, cl *kgo.Client, group string, attempt int) (int32, error) {
	bs := cl.DiscoveredBrokers()
	if len(bs) == 0 {
		bs = cl.SeedBrokers()
	}
	if len(bs) == 0 {
		return -1, fmt.Errorf("FindCoordinator: no broker known")
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = group
	req.CoordinatorKeys = []string{group}
	req.CoordinatorType = 0 // group
	resp, err := req.RequestWith(ctx, bs[attempt%len(bs)])
	if err != nil {
		return -1, err
	}
	code, node := resp.ErrorCode, resp.NodeID
	if len(resp.Coordinators) == 1 {
		code, node = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return -1, err
	}
	return node, nil
}
