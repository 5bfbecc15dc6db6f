package coordinator

import (
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleListGroups serves ListGroups (key 16): GMM.listGroups (4.4). State
// filters (v4+) match case-insensitively; type filters (v5+) name
// "classic", "consumer" or "share" (Group.GroupType.parse, also
// case-insensitive). A share group is listed with protocol type "share"
// (ShareGroup.PROTOCOL_TYPE).
// Groups are listed sorted by id; Kafka lists them in TimelineHashMap
// order, which no client relies on.
func (c *Coordinator) handleListGroups(req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrListGroupsResponse()
	states := map[string]bool{}
	for _, s := range req.StatesFilter {
		states[strings.TrimSpace(strings.ToLower(s))] = true
	}
	types := map[string]bool{}
	for _, t := range req.TypesFilter {
		types[strings.ToLower(strings.TrimSpace(t))] = true
	}
	keep := func(state, typ string) bool {
		return (len(req.StatesFilter) == 0 || states[strings.ToLower(state)]) &&
			(len(req.TypesFilter) == 0 || types[typ])
	}
	for _, id := range sortedKeys(c.classic) {
		g := c.classic[id]
		if !keep(g.state.String(), "classic") {
			continue
		}
		l := kmsg.NewListGroupsResponseGroup()
		l.Group = id
		if g.protocolType != nil {
			l.ProtocolType = *g.protocolType
		}
		l.GroupState = g.state.String()
		l.GroupType = "classic"
		resp.Groups = append(resp.Groups, l)
	}
	for _, id := range c.consumer.GroupIDs() {
		info, ok := c.consumer.Lookup(id)
		if !ok || !keep(info.State, "consumer") {
			continue
		}
		l := kmsg.NewListGroupsResponseGroup()
		l.Group = id
		l.ProtocolType = "consumer"
		l.GroupState = info.State
		l.GroupType = "consumer"
		resp.Groups = append(resp.Groups, l)
	}
	for _, id := range sortedKeys(c.share) {
		g := c.share[id]
		if !keep(g.state(), "share") {
			continue
		}
		l := kmsg.NewListGroupsResponseGroup()
		l.Group = id
		l.ProtocolType = "share"
		l.GroupState = g.state()
		l.GroupType = "share"
		resp.Groups = append(resp.Groups, l)
	}
	slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return resp, nil
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[V any](m map[string]V) []string {
	out := slices.Sorted(maps.Keys(m))
	return out
}
