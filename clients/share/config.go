package share

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupResource is ConfigResource.Type.GROUP (KIP-848's group configs,
// which share groups use for share.auto.offset.reset).
const groupResource = 32

// StartFromEarliest sets the group config share.auto.offset.reset=earliest
// of group through IncrementalAlterConfigs: a share group starts at the
// latest offset by default (GroupConfig's share.auto.offset.reset, KIP-932),
// so records produced before its first fetch would never be delivered. Set
// it before the group's first member fetches.
func StartFromEarliest(ctx context.Context, cl *kgo.Client, group string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = groupResource, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = "share.auto.offset.reset", kmsg.StringPtr("earliest"), 0 // SET
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("set share.auto.offset.reset=earliest for share group %q: %w", group, err)
	}
	for _, res := range resp.Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			msg := ""
			if res.ErrorMessage != nil {
				msg = ": " + *res.ErrorMessage
			}
			return fmt.Errorf("set share.auto.offset.reset=earliest for share group %q: %w%s", group, err, msg)
		}
	}
	return nil
}
